#!/usr/bin/env bash
# Issue 7's large graphs (1M to 5M points) on the GPU machine, in one device call of about 8 minutes:
#   (device tool) run: bash bench/device_study.sh          (carry nothing; $OUT is the folder that comes back)
# $OUT/gpu.jsonl is the repository's bench/chunk_study/gpu.jsonl plus this call's runs, so on the dev machine:
#   cp <files_at>/gpu.jsonl bench/chunk_study/gpu.jsonl
#   .venv/bin/python bench/chunk_report.py bench/chunk_study/cpu.jsonl bench/chunk_study/gpu.jsonl
# (records are keyed: a key written twice counts once, the later line winning). Log: $OUT/device_study.log.
#
# Graphs, in priority order (bench/chunk_study.py orders the runs inside each: reference, the "auto" and
# "shipped" picks, the ladder 1, 2, 4, ... until two clean rungs in a row, the "degree" pick, then the rest
# of the ladder when time is left). The default is what bench/CHUNK_STUDY.md lists as not yet run:
#   mixture_gpu 5M seeds 1, 2       more seeds for issue 3's largest benchmark graph (one per call: ~3 min
#                                   of graph and spectral init each)
#   mixture_gpu 2M seeds 1, 2       the ladder fill, to pin the neighbours-clean count
#   gaussian 2M seed 0              its degree pick
# The graphs done so far: gaussian 1M/2M, mixture 1M, mixture_gpu 1M/2M (seeds 0-2), mixture_gpu 5M (seed 0).
# Spectral inits run on 4 CPU processes while the GPU builds or lays out other graphs (the 5M one takes
# minutes on the host). No run starts after $BUDGET seconds and no graph build after $BUDGET - 90 s;
# $LIMIT is the hard stop; tests/test_clusterwise.py runs last (<= 45 s).
# DEVICE=cpu PYTHON=.venv/bin/python CELLS="mixture_gpu:3000:0" BUDGET=150 tries the script on a CPU machine.
set -uo pipefail
export PYTHONPATH=. PYTHONUNBUFFERED=1
PYTHON=${PYTHON:-python3}
DEVICE=${DEVICE:-gpu}
OUT=${OUT:-bench/out/device_study}
BUDGET=${BUDGET:-420}
LIMIT=${LIMIT:-480}
CELLS=${CELLS:-"mixture_gpu:5000000:1 mixture_gpu:2000000:1 mixture_gpu:2000000:2 gaussian:2000000:0 \
mixture_gpu:5000000:2"}

stamp() { echo "[$(date -u +%H:%M:%S)] $*"; }
mkdir -p "$OUT"
stamp "device study on $(uname -n), $(nproc) cores"
nvidia-smi --query-gpu=name,memory.used,memory.total,driver_version --format=csv,noheader 2>/dev/null
cp bench/chunk_study/gpu.jsonl "$OUT/gpu.jsonl"
before=$(wc -l < "$OUT/gpu.jsonl")
# Reference and initial layouts, and the graphs handed to the init processes (GBs at 5M): RAM when it has room.
REFS=/tmp/chunk_refs
shm=$(df --output=avail -BG /dev/shm 2>/dev/null | tail -1 | tr -dc 0-9)
if [ "${shm:-0}" -ge 24 ]; then REFS=/dev/shm/chunk_refs; fi
stamp "budget ${BUDGET} s, hard stop ${LIMIT} s, layouts in $REFS"
# shellcheck disable=SC2086  # CELLS is a list of words
timeout -s INT -k 20 "$LIMIT" "$PYTHON" bench/chunk_study.py --device "$DEVICE" --cells $CELLS \
    --init-workers 4 --max-chunks 2048 --budget "$BUDGET" --build-margin 90 \
    --out "$OUT/gpu.jsonl" --refs "$REFS" 2>&1 | tee "$OUT/device_study.log"
rc=${PIPESTATUS[0]}
after=$(wc -l < "$OUT/gpu.jsonl")
stamp "chunk_study exited with $rc; $((after - before)) new records, $after lines in $OUT/gpu.jsonl" \
    | tee -a "$OUT/device_study.log"
# The GPU half of the new kNN-within-groups tests (CPU vs GPU, brute force), while the machine is here.
timeout 45 "$PYTHON" -m pytest -q -p no:cacheprovider tests/test_clusterwise.py 2>&1 | tail -5 \
    | tee "$OUT/test_clusterwise.log"
stamp "done"
