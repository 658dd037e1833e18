#!/bin/bash
# session x, call 1 (tree main cc36cc6 + family_probe --events): DG build (its .so back), the tests not run on a GPU
# since session w's last changes, where the paged rows' events time goes, host cost per family call, SwiGLU re-timed,
# ncu of the paged B256 L8192 row (qgemm and DeepGEMM).
set -u
R0=$OUT; OUT=/tmp/r; mkdir -p $OUT
export QGEMM_CACHE_DIR=/tmp/qc PYTHONUNBUFFERED=1 DG_JIT_CACHE_DIR=/tmp/dgc
T0=$SECONDS
L=$OUT/logs; mkdir -p $L
left() { echo $((560 - (SECONDS - T0))); }
(make -j16 all > $L/build.log 2>&1 || tail -20 $L/build.log) &
(QGEMM_WERROR=1 python3 python/setup.py build_ext --inplace > $L/pybuild.log 2>&1 || tail -20 $L/pybuild.log) &
(bash .peers/build.sh > $L/dgbuild.log 2>&1; tail -3 $L/dgbuild.log; cd .peers/DeepGEMM/deep_gemm && tar czf $R0/dgso.tgz _C*.so) &
wait
echo "built t=$((SECONDS-T0))"; ls -la $R0
source .peers/env.sh
export PYTHONPATH=$PWD/python:$PWD/bench${PYTHONPATH:+:$PYTHONPATH}
c() { local p=$1 n=$2; shift 2; ( timeout $p env "$@" > $L/$n.log 2>&1; echo "$n rc=$? t=$((SECONDS-T0))" >> $L/$n.log ) & }
c 200 cT stdbuf -oL build/qgemm_tests gpu_hc_prenorm gpu_cast_sms_and_graph gpu_nk_fp8out
c 200 warm python3 bench/family_probe.py --host --calls 20 --out $OUT/warm
wait
echo "== phase 1 t=$((SECONDS-T0))"
echo "-- cT: $(grep -E "^\[ (PASS|FAIL)|passed, |rc=" $L/cT.log | tr '\n' ' ')"; grep -E "^    FAIL" $L/cT.log | head -5 | cut -c1-200
tail -2 $L/warm.log
P="kind=paged-mqa|bsz=256|next_n=1|h=32|avg_kv=8192|f32=False;kind=paged-mqa|bsz=256|next_n=2|h=64|avg_kv=8192|f32=False;kind=paged-mqa|bsz=256|next_n=1|h=64|avg_kv=8192|f32=True;kind=paged-mqa|bsz=4096|next_n=1|h=32|avg_kv=8192|f32=False;kind=hc|m=137|n=24|k=28672|splits=16;kind=einsum|expr=bmk,bnk->mn|b=129|m=128|n=384|k=128|f32=False"
timeout $(( $(left) - 330 )) python3 bench/family_probe.py --events --cases "$P" --out $OUT > $L/events.log 2>&1; echo "events rc=$?"
python3 - $OUT/family-events.json <<'PY'
import json,sys
for r in json.load(open(sys.argv[1]))["rows"]:
    c=r["case"]; s="|".join(f"{k}={v}" for k,v in c.items() if k!="kind")
    print(c["kind"], s)
    for lib in ("deepgemm","qgemm"):
        print("   %-8s kin %7.1f ev_l2 %7.1f ev_1g %7.1f graph %7.1f" % (lib, *(r.get(f"{lib}_{m}_us", float('nan')) for m in ("kineto","events_l2","events_1g","graph_l2"))))
PY
timeout $(( $(left) - 250 )) python3 bench/family_probe.py --host --out $OUT > $L/host.log 2>&1; echo "host rc=$?"
grep -E '^\{' $L/host.log | cut -c1-220
timeout $(( $(left) - 130 )) python3 bench/peers_fp8out.py --kind swiglu --out $OUT/swiglu.jsonl > $L/swiglu.log 2>&1; echo "swiglu rc=$?"
tail -8 $L/swiglu.log | cut -c1-250
for lib in qgemm deepgemm; do
  timeout 55 ncu --profile-from-start off --clock-control none --set full -o $OUT/ncu-pmqa-$lib \
    python3 bench/family_probe.py --ncu --lib $lib --cases "kind=paged-mqa|bsz=256|next_n=2|h=64|avg_kv=8192|f32=False" > $L/ncu-$lib.log 2>&1
  ncu --import $OUT/ncu-pmqa-$lib.ncu-rep --page details --csv > $OUT/ncu-pmqa-$lib.csv 2>/dev/null
  echo "ncu $lib rc=$? t=$((SECONDS-T0))"
done
echo "== end t=$((SECONDS-T0))"
tar czf $R0/r.tgz -C /tmp r 2>/dev/null; true
