#!/usr/bin/env bash
# One call on the GPU machine: every GPU test (those marked gpu, ~300 s on an H200), the render benchmark on
# CuPy, an end-to-end GPU fit, and the layout benchmark (bench/gpu_bench.py) at the sizes in $SIZES.
#   (device tool) run: bash bench/device_check.sh      carry: [".whl"]      (bench/device_wheels.sh fills .whl/)
# Each step runs under its own time limit so that one slow or failing step still leaves the others' results.
set -uo pipefail
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD:/tmp/site
OUT=${OUT:-bench/out}
SIZES=${SIZES:-1000000,5000000}
stamp() { echo "[$(date +%H:%M:%S)] $*"; }
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
stamp "GPU tests"
timeout ${TESTS_S:-420} python3 -m pytest -q -p no:cacheprovider -rs -m gpu tests 2>&1 | tee "$OUT/gpu_tests.log" | tail -30
stamp "render bench"
timeout 100 python3 bench/render_bench.py --device gpu --repeats 5 2>&1 | tee "$OUT/render_gpu.log" | tail -20
stamp "fit"
timeout 60 python3 - <<'PY' 2>&1 | tee "$OUT/fit_gpu.log"
import time
import umapviz
from umapviz import datasets, metrics
X, _ = datasets.load("mixture", n_samples=20000)
for run in range(2):
    t = time.perf_counter()
    est = umapviz.UMAP(device="gpu", random_state=0, init="random")
    emb = est.fit_transform(X)
    print(f"fit {run}: {time.perf_counter() - t:.2f}s graph={est.graph_} fp={metrics.fingerprint(emb)}")
try:
    umapviz.LayoutOptimizer(est.graph_, device="gpu", n_chunks=10**9)
except ValueError as exc:
    print("bad n_chunks ->", exc)
PY
stamp "layout bench $SIZES"
timeout ${BENCH_S:-300} python3 bench/gpu_bench.py --sizes "$SIZES" --modes persistent,graph --out "$OUT/gpu_bench" 2>&1 \
  | tee "$OUT/gpu_bench.log" | tail -45
stamp "done"
