#!/usr/bin/env bash
# Issue 3's layout kernels on the GPU machine in one call: their GPU tests, then bench/gpu_bench.py.
#   (device tool) run: bash bench/device_layout.sh          (carry nothing; results under $OUT)
# TESTS: a pytest -k expression for tests/test_gpu.py + tests/test_cuda_sources.py ("" for all, "none" to
# skip); ARGS: gpu_bench.py's arguments (default: 1M and 5M, the persistent mode, every knob at 1M, a hub-free
# 1M graph); TEST_S and BENCH_S: the steps' time limits.
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH=.
OUT=${OUT:-bench/out}
TESTS=${TESTS-}
ARGS=${ARGS:---sizes 1000000,5000000 --modes persistent --skip-fit --variants all --probe 1000000 \
--strategies hogwild,chunked,buffered,vertex --strategies-large hogwild,chunked,buffered,vertex}
mkdir -p "$OUT"
stamp() { echo "[$(date -u +%H:%M:%S)] $*"; }
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
if [ "$TESTS" != none ]; then
    stamp "GPU tests ${TESTS:-(all)}"
    timeout "${TEST_S:-300}" python3 -m pytest -q -p no:cacheprovider -rs tests/test_gpu.py tests/test_cuda_sources.py \
        ${TESTS:+-k "$TESTS"} 2>&1 | tee "$OUT/gpu_tests.log" | tail -25
fi
stamp "gpu_bench $ARGS"
# shellcheck disable=SC2086  # ARGS is a list of words
timeout "${BENCH_S:-420}" python3 bench/gpu_bench.py $ARGS --out "$OUT/gpu_bench" 2>&1 | tee "$OUT/gpu_bench.log" \
    | grep -v "^|" | tail -70
stamp "done"
