#!/usr/bin/env bash
# One call on the GPU machine: every GPU test, the render benchmark on CuPy, and an end-to-end GPU fit.
#   (device tool) run: bash bench/device_check.sh      carry: [".whl"]
# .whl/ holds pure-Python wheels the GPU image lacks (datashader, colorcet, param, pyct); see bench/RESULTS.md.
set -uo pipefail
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=.:/tmp/site
OUT=${OUT:-bench/out}
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
timeout 200 python3 -m pytest -q -p no:cacheprovider \
  tests/test_gpu.py tests/test_render_gpu.py tests/test_cuda_sources.py 2>&1 | tee "$OUT/gpu_tests.log" | tail -25
timeout 100 python3 bench/render_bench.py --device gpu --repeats 5 2>&1 | tee "$OUT/render_gpu.log" | tail -20
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
