#!/usr/bin/env bash
# One call on the GPU machine for umapviz's viz, widget and notebook parts, with the wheels the image lacks.
#   first, here:  bash bench/device_wheels.sh          (fills .whl/, ~32 MiB)
#   device tool:  command `bash bench/device_extras.sh`, carry [".whl"]
# Steps, in this order (STEPS picks some, e.g. `STEPS="nb umap" bash bench/device_extras.sh`):
#   gputests  the portable-pow and on-device shading GPU tests (tests/test_gpu.py, tests/test_render_gpu.py)
#   fps1m  bench/explorer_fps.py on the GPU, blobs, 1,000,000 points, random init
#   nb     notebooks/05_millions_of_points.ipynb through nbclient (python3 kernel) -> $OUT/05_gpu.ipynb, 05_gpu.png
#   fpsbig bench/explorer_fps.py at LARGE_N points (default 10,000,000) of the mixture_gpu data (500 Zipf-sized
#          clusters far apart, exact kNN within each: ~1.4x the 5M/30-cluster kNN's work, which took 29 s),
#          random init (a spectral init is a host eigen-solve). Estimate: ~45 s kNN, ~15 s fuzzy graph and host
#          edge list (~265M edges), ~16 s optimizer set-up (the edge permutation), then the frames: ~2 min.
#   umap   bench/gpu_bench.py: umap-learn on 30,000 points beside the GPU pipeline on the same points
# Each step runs under `timeout`, cut to what is left of BUDGET_S (default 480 s), logs to $OUT/<step>.log,
# and a failure is reported (and summed up at the end) without stopping the next step.
set -uo pipefail
export PYTHONUNBUFFERED=1
OUT=${OUT:-bench/out}
mkdir -p "$OUT"
STEPS=${STEPS:-gputests fps1m nb fpsbig umap}
LARGE_N=${LARGE_N:-10000000}
DEADLINE=$((SECONDS + ${BUDGET_S:-480}))
SUMMARY=()

stamp() { echo "[$(date -u +%H:%M:%S) +${SECONDS}s] $*"; }

wanted() { [[ " $STEPS " == *" $1 "* ]]; }

# step NAME LIMIT_S COMMAND...: run COMMAND under timeout (cut to the time left), log to $OUT/NAME.log.
# The command sees its limit as $STEP_LIMIT.
step() {
  local name=$1 limit=$2 left rc
  shift 2
  left=$((DEADLINE - SECONDS))
  ((left < limit)) && limit=$left
  if ((limit < 20)); then
    stamp "== $name: SKIPPED (no time left in BUDGET_S)"
    SUMMARY+=("$name: skipped (no time left)")
    return
  fi
  stamp "== $name: start (limit ${limit}s): $*"
  STEP_LIMIT=$limit timeout -k 10 "$limit" "$@" 2>&1 | tee "$OUT/$name.log"
  rc=${PIPESTATUS[0]}
  if ((rc == 0)); then
    SUMMARY+=("$name: ok")
  elif ((rc == 124 || rc == 137)); then
    SUMMARY+=("$name: TIMED OUT after ${limit}s")
  else
    SUMMARY+=("$name: FAILED (exit $rc)")
  fi
  stamp "== $name: done, ${SUMMARY[-1]#*: }"
}

stamp "install .whl/ -> /tmp/site"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
if ! ls .whl/*.whl >/dev/null 2>&1; then
  echo "no wheels in .whl/: run bash bench/device_wheels.sh on the workstation and carry [\".whl\"]"
  exit 1
fi
rm -rf /tmp/site  # a warm machine may hold an older install
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl \
  || SUMMARY+=("install: FAILED")
# Absolute paths: the notebook's kernel runs in notebooks/. Jupyter's and IPython's state go to /tmp.
export PYTHONPATH=$PWD:/tmp/site
export JUPYTER_PATH=/tmp/kp/share/jupyter JUPYTER_RUNTIME_DIR=/tmp/jupyter-runtime IPYTHONDIR=/tmp/ipython
export JUPYTER_PLATFORM_DIRS=1 JUPYTER_CONFIG_DIR=/tmp/jupyter-config
# The "python3" kernel nbclient asks for: this python3, with the environment (PYTHONPATH) of this script.
python3 -m ipykernel install --prefix /tmp/kp --name python3 >/dev/null || SUMMARY+=("kernelspec: FAILED")
python3 - <<'PY' || SUMMARY+=("imports: FAILED")
import importlib
import importlib.metadata as md

from jupyter_client.kernelspec import KernelSpecManager

print("kernel python3:", KernelSpecManager().get_kernel_spec("python3").argv)
names = ["numpy", "numba", "cupy-cuda13x", "scipy", "pandas", "scikit-learn", "narwhals", "markdown-it-py",
         "datashader", "holoviews", "bokeh", "panel", "ipywidgets", "ipykernel", "nbclient", "umap-learn",
         "pynndescent"]


def version(name: str) -> str:
    try:
        return md.version(name)
    except md.PackageNotFoundError:
        return "missing"


print(" ".join(f"{n}={version(n)}" for n in names))
for module in ("umapviz.render", "umapviz.widgets", "holoviews.plotting.bokeh"):  # umap: in its step (JIT)
    importlib.import_module(module)
print("imports ok: umapviz.render, umapviz.widgets, holoviews.plotting.bokeh")
PY
stamp "installed"

if wanted gputests; then
  step gputests 150 python3 -m pytest -q -p no:cacheprovider -rs tests/test_render_gpu.py tests/test_gpu.py \
    -k "portable or shades_on_the_device"
fi

if wanted fps1m; then
  step fps1m 150 python3 bench/explorer_fps.py --device gpu --data blobs --n-samples 1000000 --init random \
    --out "$OUT"
fi

if wanted nb; then
  step nb 330 python3 - "$OUT" <<'PY'
"""Execute notebook 05 headless; save it and its last image even when a cell fails or times out."""
import base64
import os
import re
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

out = Path(sys.argv[1])
deadline = time.monotonic() + float(os.environ.get("STEP_LIMIT", 330)) - 25  # time to save before the kill
nb = nbformat.read("notebooks/05_millions_of_points.ipynb", as_version=4)
client = NotebookClient(nb, kernel_name="python3", resources={"metadata": {"path": "notebooks"}},
                        timeout_func=lambda cell: int(max(10, min(300, deadline - time.monotonic()))))
began = time.perf_counter()
try:
    client.execute()
    status = "all cells ran"
except Exception as exc:  # a failing or slow cell: keep what ran
    status = f"stopped: {type(exc).__name__}: {str(exc)[-1500:]}"
nbformat.write(nb, out / "05_gpu.ipynb")
ansi = re.compile(r"\x1b\[[0-9;]*m")
png = None
for i, cell in enumerate(nb.cells):
    if cell.cell_type != "code":
        continue
    meta = cell.get("metadata", {}).get("execution", {})
    print(f"--- cell {i} (execution count {cell.get('execution_count')}) "
          f"{meta.get('iopub.execute_input', '')} -> {meta.get('shell.execute_reply', '')}")
    for o in cell.get("outputs", []):
        if o.output_type == "stream":
            print(o.text, end="")
        elif o.output_type == "error":
            print(ansi.sub("", "\n".join(o.traceback)))
        else:
            data = o.get("data", {})
            print(f"[{o.output_type}: {', '.join(data)}]", str(data.get("text/plain", ""))[:300])
            png = data.get("image/png", png)
if png:
    (out / "05_gpu.png").write_bytes(base64.b64decode(png))
    print("last image ->", out / "05_gpu.png")
print(f"notebook: {status} in {time.perf_counter() - began:.1f} s -> {out / '05_gpu.ipynb'}")
sys.exit(0 if status == "all cells ran" else 1)
PY
fi

if wanted fpsbig; then
  step fpsbig 300 python3 bench/explorer_fps.py --device gpu --data mixture_gpu --n-samples "$LARGE_N" \
    --init random --out "$OUT"
fi

if wanted umap; then
  step umap 200 python3 bench/gpu_bench.py --sizes "" --skip-fit --umap-learn 30000 --out "$OUT/gpu_bench"
fi

stamp "summary"
printf '  %s\n' "${SUMMARY[@]}"
