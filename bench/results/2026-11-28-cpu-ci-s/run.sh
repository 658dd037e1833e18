#!/usr/bin/env bash
# The CI of a clean clone of main, as session s ran it (no GPU needed).
set -euo pipefail
rm -rf /tmp/cc /tmp/cc-home && mkdir -p /tmp/cc-home
git clone -q /work/main /tmp/cc
cd /tmp/cc && CI=true HOME=/tmp/cc-home PATH=/usr/local/bin:/usr/bin:/bin \
    QGEMM_TEST_VENV=/work/venv bash .ci/run > ci.log 2>&1
