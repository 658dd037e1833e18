set -euo pipefail
cd /tmp/cc2
export PATH=/usr/local/cuda/bin:$PATH
echo "==> build"; make -j2 WERROR=1 all > /tmp/cr-build.log 2>&1
echo "==> docs-check examples house-check"; make WERROR=1 docs-check examples house-check > /tmp/cr-misc.log 2>&1
echo "==> C tests except the compile sweeps"; build/qgemm_tests -compile_ 2>&1 | tail -3
build/qgemm_tests swiglu_argument_validation 2>&1 | tail -1
echo "==> cli"; bash tests/cli.sh build 2>&1 | tail -1
echo "==> install"; bash tests/install.sh 2>&1 | tail -1
echo "==> package"; bash tests/package.sh build 2>&1 | tail -1
echo "==> example"; examples/gemm --check-offline 2>&1 | tail -1
echo "==> python"; bash tests/python/run.sh build 2>&1 | tail -3
echo "==> sanitize"; make sanitize 2>&1 | tail -3
echo "==> fuzz"; make fuzz 2>&1 | tail -3
echo "==> REST PASSED"
