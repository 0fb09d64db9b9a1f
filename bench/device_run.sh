#!/usr/bin/env bash
# Runs named sets of GPU tests and benchmarks on the GPU machine in one call, each under its own time limit.
#   here, once (needs the package registry):  bash bench/device_wheels.sh            (fills .whl/)
#   device tool:  command `bash bench/device_run.sh tests render`, carry [".whl"]    (figures come back in $OUT)
#
# Steps (arguments; none given: tests layout fit render):
#   tests        every GPU test: pytest -m gpu tests (TESTS="a -k expression" picks some)
#   layout       bench/gpu_bench.py at the sizes in SIZES (default 1000000,5000000): ms per epoch per strategy
#   parity       bench/parity_table.py: layout fingerprints per strategy on the CPU (1 and 2 threads) and the GPU,
#                20k and 200k mixture graphs, 100 epochs, one start: every row equal (exit 1 otherwise);
#                PARITY_SIZES and PARITY_RUNS (e.g. chunked:auto,vertex:1) pick some
#   graph_parity bench/graph_parity.py: build_graph on the CPU and the GPU (exact kNN) for clusters 20k and the 20k and
#                200k mixtures: rows whose kNN differ (TF32 and FP32 GEMM), the fuzzy set from the same kNN (sigma, rho,
#                memberships; CUDA's own exp beside it), the graphs' fingerprints (exit 1 if the fuzzy set differs, or
#                the graph with the same kNN)
#   spectral     bench/spectral_cost.py --device gpu: seconds of spectral_init at SPECTRAL_SIZES (default 1000000)
#                on the clusters graph, then its start layout's fingerprints on the CPU (1 and 2 threads) and the
#                GPU for 20k and 200k graphs: every row equal (exit 1 otherwise)
#   pow_cost     bench/gpu_bench.py --library-pow at SIZES: ms per epoch of hogwild, chunked("auto") and vertex with
#                pow_portable and, beside each, with CUDA's powf (what the portable power function costs);
#                STRATEGIES (e.g. hogwild,vertex) picks some
#   fit          bench/gpu_bench.py's end-to-end fit of 1M x 384 points, and UMAP().fit_transform of them
#   scale        bench/fit_scale.py --device gpu at SIZES (e.g. SIZES=1000000,10000000): per stage {kNN, graph, start,
#                layout, total} s, recall, trust, peak GPU memory of the partitioned kNN's fit (KNN, default approx;
#                KNN=exact for the exact-kNN fit to compare trust with), each size in a fresh process; UMAP_FIT=1
#                also times UMAP().fit_transform of the same data, HOST_DATA=1 keeps X on the host during the graph
#                build, DATA=text_like lays out text-like data instead of the benchmarks' 384-d mixture, KNN_REFINE
#                sets the partitioned search's refinement rounds (default auto: one where X is on the GPU), DIM the data's
#                columns (default 384), WARMUP=N first fits N points untimed in a fresh process (warm kernel caches),
#                FRAMES_EVERY=K renders a live view's frame every K epochs of the layout (frame_ms), FLING_CHECK=1
#                counts what chunked("auto") flung against hogwild's bounds from the same start
#   tf32_check   bench/tf32_check.py: the exact GPU kNN's TF32 check on TF32_CASES (default: 384-d text_like and mixture
#                at 500k, PCA-like 50 columns and 2-D planes in 16 and 64 features at 400k): its bound against the
#                error cuBLAS makes, seconds with FP32, TF32 unchecked and checked, rows searched again in FP32
#   knn_recall   bench/partitioned_recall.py --device gpu: recall@15 and seconds (plan, searches, merge, each refinement
#                round) of the partitioned kNN on RECALL_SETS (name:n[:rows[:overlaps[:rounds]]]; default
#                mixture_gpu and text_like_gpu at 1M and 10M, 8192 and 16384 rows per partition, overlap 2, 2 rounds)
#                -> $OUT/knn_recall.jsonl
#   knn_auto     bench/knn_auto.py: knn="auto" on the GPU (its escalation's steps, recall@15, seconds) at SIZES for
#                KINDS (default text_like,iso_lowdim,mixture,gaussian), the exact search beside it at EXACT_SIZES, the
#                fit at FIT_SIZES, under POOL_LIMIT bytes of CuPy's pool -> $OUT/knn_auto.jsonl
#   profile      bench/fit_profile.py: cProfile of that fit, stage by stage
#   umap         bench/gpu_bench.py: umap-learn on 30,000 points beside the GPU pipeline on the same points
#   render       bench/render_bench.py --device gpu: frame time at 1M, 10M and 30M points
#   explore      bench/explore_bench.py --device gpu: zoom re-render and hover at 10M, point_info at 1M
#   fps          bench/explorer_fps.py --device gpu: the Explorer's loop on 1M blobs, random init
#   fps_large    bench/explorer_fps.py --device gpu on LARGE_N (default 10,000,000) points of the mixture_gpu data
#   notebook     NOTEBOOK (default notebooks/05_millions_of_points.ipynb) through nbclient -> $OUT/05_gpu.ipynb
#                and its last image, 05_gpu.png
#   chunk_study  bench/chunk_study.py on the graphs in CELLS; $OUT/gpu.jsonl is bench/chunk_study/gpu.jsonl plus
#                this call's runs: copy it back and rerun bench/chunk_report.py
# A new benchmark is one more `case` line below.
# The wheels (.whl/) are installed first when carried; render, fps, notebook and umap need them (the machine's
# image lacks datashader, holoviews, ipywidgets, nbclient and umap-learn). Each step logs to $OUT/<step>.log,
# its limit is cut to what is left of BUDGET_S (default 570 s), and a failing step does not stop the next one.
set -uo pipefail
export PYTHONUNBUFFERED=1
OUT=${OUT:-bench/out}
BUDGET_S=${BUDGET_S:-570}
SIZES=${SIZES:-1000000,5000000}
LARGE_N=${LARGE_N:-10000000}
NOTEBOOK=${NOTEBOOK:-notebooks/05_millions_of_points.ipynb}
STUDY_DEVICE=${STUDY_DEVICE:-gpu}  # cpu tries the chunk_study step on a machine without a GPU
CELLS=${CELLS:-"mixture_gpu:5000000:1 mixture_gpu:2000000:1 mixture_gpu:2000000:2 gaussian:2000000:0"}
STEPS=("$@")
((${#STEPS[@]})) || STEPS=(tests layout fit render)
DEADLINE=$((SECONDS + BUDGET_S))
SUMMARY=()
mkdir -p "$OUT"

stamp() { echo "[$(date -u +%H:%M:%S) +${SECONDS}s] $*"; }

# step NAME LIMIT_S COMMAND...: run COMMAND under timeout (cut to the time left), log to $OUT/NAME.log.
# The command sees its limit as $STEP_LIMIT.
step() {
  local name=$1 limit=$2 left rc
  shift 2
  left=$((DEADLINE - SECONDS))
  ((left < limit)) && limit=$left
  if ((limit < 20)); then
    SUMMARY+=("$name: skipped (no time left in BUDGET_S)")
    stamp "== ${SUMMARY[-1]}"
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

run_notebook() {  # NOTEBOOK: execute it headless; save it and its last image even when a cell fails or times out
  python3 - "$1" "$OUT" <<'PY'
import base64
import os
import re
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

source, out = Path(sys.argv[1]), Path(sys.argv[2])
deadline = time.monotonic() + float(os.environ.get("STEP_LIMIT", 330)) - 25  # time to save before the kill
nb = nbformat.read(source, as_version=4)
client = NotebookClient(nb, kernel_name="python3", resources={"metadata": {"path": str(source.parent)}},
                        timeout_func=lambda cell: int(max(10, min(300, deadline - time.monotonic()))))
began = time.perf_counter()
try:
    client.execute()
    status = "all cells ran"
except Exception as exc:  # a failing or slow cell: keep what ran
    status = f"stopped: {type(exc).__name__}: {str(exc)[-1500:]}"
stem = source.stem.split("_")[0] + "_gpu"
nbformat.write(nb, out / f"{stem}.ipynb")
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
    (out / f"{stem}.png").write_bytes(base64.b64decode(png))
print(f"notebook: {status} in {time.perf_counter() - began:.1f} s -> {out / stem}.ipynb")
sys.exit(0 if status == "all cells ran" else 1)
PY
}

run_chunk_study() {  # the study's GPU graphs, appended to a copy of the repository's records
  cp bench/chunk_study/gpu.jsonl "$OUT/gpu.jsonl"
  local refs=/tmp/chunk_refs shm
  shm=$(df --output=avail -BG /dev/shm 2>/dev/null | tail -1 | tr -dc 0-9)
  [ "${shm:-0}" -ge 24 ] && refs=/dev/shm/chunk_refs  # layouts of 5M graphs are GBs: RAM when it has room
  # shellcheck disable=SC2086  # CELLS is a list of words
  python3 bench/chunk_study.py --device "$STUDY_DEVICE" --cells $CELLS --init-workers 4 --max-chunks 2048 \
    --budget $((STEP_LIMIT - 60)) --build-margin 90 --out "$OUT/gpu.jsonl" --refs "$refs"
}

stamp "on $(uname -n), $(nproc) cores: ${STEPS[*]}"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
if ls .whl/*.whl >/dev/null 2>&1; then
  rm -rf /tmp/site  # a warm machine may hold an older install
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl \
    || SUMMARY+=("install .whl/: FAILED")
  # The notebook's kernel: this python3 with this environment; Jupyter's and IPython's state in /tmp.
  export JUPYTER_PATH=/tmp/kp/share/jupyter JUPYTER_RUNTIME_DIR=/tmp/jupyter-runtime IPYTHONDIR=/tmp/ipython
  export JUPYTER_PLATFORM_DIRS=1 JUPYTER_CONFIG_DIR=/tmp/jupyter-config
  python3 -m ipykernel install --prefix /tmp/kp --name python3 >/dev/null 2>&1 || SUMMARY+=("kernelspec: FAILED")
  stamp "installed .whl/ into /tmp/site"
else
  stamp "no .whl/ carried: render, fps, notebook and umap need it (bash bench/device_wheels.sh here)"
fi
export PYTHONPATH=$PWD:/tmp/site  # absolute: the notebook's kernel runs in notebooks/
export OUT CELLS STUDY_DEVICE
export -f run_notebook run_chunk_study  # timeout runs programs, so these run in a child bash

for name in "${STEPS[@]}"; do
  case $name in
    tests) step tests 420 python3 -m pytest -q -p no:cacheprovider -rs -m gpu tests ${TESTS:+-k "$TESTS"} ;;
    layout) step layout 420 python3 bench/gpu_bench.py --sizes "$SIZES" --skip-fit --out "$OUT/layout" ;;
    parity) step parity 480 python3 bench/parity_table.py --sizes "${PARITY_SIZES:-20000,200000}" --epochs 100 \
      ${PARITY_RUNS:+--runs "$PARITY_RUNS"} ;;
    graph_parity) step graph_parity 540 python3 bench/graph_parity.py ;;
    spectral) step spectral 480 python3 bench/spectral_cost.py --device gpu --sizes "${SPECTRAL_SIZES:-1000000}" \
      --parity 20000,200000 ;;
    pow_cost) step pow_cost 480 python3 bench/gpu_bench.py --sizes "$SIZES" --skip-fit --skip-kernels --library-pow \
      --strategies "${STRATEGIES:-hogwild,chunked,vertex}" --strategies-large "${STRATEGIES:-hogwild,chunked,vertex}" \
      --out "$OUT/pow_cost" ;;
    fit) step fit 200 python3 bench/gpu_bench.py --sizes "" --out "$OUT/fit" ;;
    scale) step scale 560 python3 bench/fit_scale.py --device gpu --sizes "$SIZES" --knn "${KNN:-approx}" \
      ${UMAP_FIT:+--umap-fit} ${HOST_DATA:+--host-data} ${FLING_CHECK:+--fling-check} --data "${DATA:-mixture}" --refine "${KNN_REFINE:-auto}" \
      --dim "${DIM:-384}" --warmup "${WARMUP:-0}" --frames-every "${FRAMES_EVERY:-0}" --timeout 540 --out "$OUT/scale" ;;
    tf32_check) step tf32_check 400 python3 bench/tf32_check.py ${TF32_CASES:+--cases "$TF32_CASES"} ;;
    knn_recall) step knn_recall 400 python3 bench/partitioned_recall.py --device gpu --sets ${RECALL_SETS:-mixture_gpu:1000000 \
      text_like_gpu:1000000 text_like_gpu:10000000 mixture_gpu:10000000} --rows 8192,16384 --overlaps 2 --refine 2 \
      --out "$OUT/knn_recall.jsonl" ;;
    knn_auto) step knn_auto 540 python3 bench/knn_auto.py --sizes "$SIZES" --kinds "${KINDS:-text_like,iso_lowdim,mixture,gaussian}" \
      --exact "${EXACT_SIZES:-}" --fit "${FIT_SIZES:-}" --pool-limit "${POOL_LIMIT:-0}" --out "$OUT/knn_auto.jsonl" ;;
    profile) step profile 200 python3 bench/fit_profile.py ;;
    umap) step umap 200 python3 bench/gpu_bench.py --sizes "" --skip-fit --umap-learn 30000 --out "$OUT/umap" ;;
    render) step render 120 python3 bench/render_bench.py --device gpu --repeats 5 ;;
    explore) step explore 150 python3 bench/explore_bench.py --device gpu ;;
    fps) step fps 150 python3 bench/explorer_fps.py --device gpu --data blobs --n-samples 1000000 --init random \
      --out "$OUT" ;;
    fps_large) step fps_large 300 python3 bench/explorer_fps.py --device gpu --data mixture_gpu \
      --n-samples "$LARGE_N" --init random --out "$OUT" ;;
    notebook) step notebook 330 bash -c "run_notebook $NOTEBOOK" ;;
    chunk_study) step chunk_study 480 bash -c run_chunk_study ;;
    *) SUMMARY+=("$name: unknown step (see the top of bench/device_run.sh)") ;;
  esac
done

stamp "summary"
printf '  %s\n' "${SUMMARY[@]}"
