import csv, sys, collections
def load(path):
    ks = {}; cur = None; hdr = None
    for row in csv.reader(open(path)):
        if not row: continue
        if row[0] == "Kernel Name": cur = "%d:%s" % (len(ks), row[1]); ks[cur] = []; hdr = None; continue
        if row[0] == "Address": hdr = row; continue
        if hdr: ks[cur].append(dict(zip(hdr, row)))
    return ks
ks = load(sys.argv[1])
top = int(sys.argv[2]) if len(sys.argv) > 2 else 25
for name, rows in ks.items():
    tot_i = sum(int(r["Instructions Executed"] or 0) for r in rows)
    tot_s = sum(int(r["Warp Stall Sampling (All Samples)"] or 0) for r in rows)
    print("=== %s: %d SASS lines, %d warp instr executed, %d stall samples" % (name[:90], len(rows), tot_i, tot_s))
    # stall reasons total
    agg = collections.Counter()
    for r in rows:
        for k, v in r.items():
            if k.startswith("stall_") and "Not Issued" not in k: agg[k] += int(v or 0)
    print("  stalls:", ", ".join("%s %.1f%%" % (k[6:], 100.0 * v / max(tot_s, 1)) for k, v in agg.most_common(8)))
    # opcode mix weighted by executions
    ops = collections.Counter()
    for r in rows:
        op = r["Source"].split()[0] if r["Source"].split() else "?"
        if op.startswith("@"): op = r["Source"].split()[1]
        ops[op.split(".")[0]] += int(r["Instructions Executed"] or 0)
    print("  ops:", ", ".join("%s %.1f%%" % (k, 100.0 * v / tot_i) for k, v in ops.most_common(14)))
    rs = sorted(rows, key=lambda r: -int(r["Warp Stall Sampling (All Samples)"] or 0))[:top]
    for r in rs:
        st = {k[6:]: int(v or 0) for k, v in r.items() if k.startswith("stall_") and "Not Issued" not in k and int(v or 0) > 0}
        big = sorted(st.items(), key=lambda kv: -kv[1])[:3]
        print("  %6s %10s %-60s %s" % (r["Warp Stall Sampling (All Samples)"], r["Instructions Executed"], r["Source"].strip()[:60], big))
