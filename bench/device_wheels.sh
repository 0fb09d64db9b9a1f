#!/usr/bin/env bash
# Fills .whl/ (git-ignored) with the wheels the GPU machine lacks for umapviz's viz, widget and notebook parts
# and for umap-learn: CPython 3.12, manylinux x86_64, exact versions, no dependencies pulled in.
#   here (needs the package registry):   bash bench/device_wheels.sh
#   then, with the device tool: command `bash bench/device_run.sh STEP ...`, carry [".whl"]
#
# The list is the dependency closure of datashader, holoviews (+ bokeh, panel), ipywidgets, jupyter_bokeh, ipykernel, nbclient,
# nbformat, jupyter_client, umap-learn and pynndescent, minus what the GPU image already has (numpy, scipy, numba,
# pandas, scikit-learn, pillow, jinja2, pyyaml, requests, narwhals, markdown(-it-py), multipledispatch, toolz,
# xarray, tqdm, ...; /work/.library/device/KINDS.md). Left out on purpose, though declared as dependencies, since
# nothing here imports them and they would add 14 MB: jedi + parso (IPython's completer, optional), debugpy
# (ipykernel's debugger, optional), widgetsnbextension + jupyterlab-widgets (front-end JavaScript),
# panel-material-ui and nh3 (panel imports them lazily). datashader's and holoviews' wheels ship example data
# and tests (14 MB): the copies in .whl/ are rewritten without those folders. Checked with a Python 3.12 venv
# holding only the image's packages: umapviz.render/widgets, umap, notebook 05 through nbclient, explorer_fps.
set -euo pipefail
cd "$(dirname "$0")/.."
PIP=${PIP:-.venv/bin/pip}
DEST=.whl

WHEELS=(
  # rendering: datashader, holoviews with the bokeh backend (holoviews needs panel)
  datashader==0.19.1 colorcet==3.2.1 param==2.4.2 pyct==0.6.0
  holoviews==1.23.2 bokeh==3.10.2 xyzservices==2026.9.1 tornado==6.6.1
  panel==1.10.0 pyviz-comms==3.0.6 linkify-it-py==2.2.0 mdit-py-plugins==0.7.0
  # widgets and IPython
  ipywidgets==8.1.9 comm==0.2.3 traitlets==5.16.1 jupyter-bokeh==4.1.0
  ipython==9.18.1 ipython-pygments-lexers==1.1.1 prompt-toolkit==3.0.53 wcwidth==0.9.4 pexpect==4.9.0
  ptyprocess==0.7.0 stack-data==0.6.3 asttokens==3.0.2 executing==2.3.0 pure-eval==0.2.4 matplotlib-inline==0.2.2
  # kernel and notebook execution
  ipykernel==7.4.0 jupyter-client==8.10.0 jupyter-core==5.9.1 platformdirs==4.14.9 pyzmq==27.3.0
  nest-asyncio2==1.7.4 nbclient==0.11.0 nbformat==5.11.1 fastjsonschema==2.22.3 jsonschema==4.26.0
  jsonschema-specifications==2025.9.1 referencing==0.37.0 rpds-py==2026.9.1
  # umap-learn (wheels carry the dist-info metadata umap asks importlib.metadata for)
  umap-learn==0.5.12 pynndescent==0.7.0
)

mkdir -p "$DEST"
rm -f "$DEST"/*.whl  # exactly this set: two versions of one project would make the device's pip install fail
"$PIP" download --quiet --disable-pip-version-check --no-deps --only-binary=:all: --dest "$DEST" \
  --implementation cp --python-version 3.12 \
  --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux_2_28_x86_64 \
  "${WHEELS[@]}" 2> >(grep -v "is ignored: it is neither a file nor a directory" >&2)

# Drop example data and tests from the two wheels that ship them (never imported); RECORD loses their rows.
"${PYTHON:-.venv/bin/python}" - "$DEST" <<'PY'
import sys
import zipfile
from pathlib import Path

for wheel in sorted(Path(sys.argv[1]).glob("*.whl")):
    package = wheel.name.split("-")[0]
    if package not in ("datashader", "holoviews"):
        continue
    drop = (f"{package}/examples/", f"{package}/tests/")
    slim = wheel.with_suffix(".slim")
    with zipfile.ZipFile(wheel) as src, zipfile.ZipFile(slim, "w", zipfile.ZIP_DEFLATED) as dst:
        for item in src.infolist():
            if item.filename.startswith(drop):
                continue
            data = src.read(item)
            if item.filename.endswith(".dist-info/RECORD"):
                rows = data.decode().splitlines(keepends=True)
                data = "".join(r for r in rows if not r.startswith(drop)).encode()
            dst.writestr(item, data, compress_type=zipfile.ZIP_DEFLATED)
    before, after = wheel.stat().st_size, slim.stat().st_size
    slim.replace(wheel)
    print(f"slimmed {wheel.name}: {before / 2**20:.1f} -> {after / 2**20:.1f} MiB")
PY

count=$(ls "$DEST"/*.whl | wc -l)
bytes=$(cat "$DEST"/*.whl | wc -c)
echo "$count wheels in $DEST/: $(awk -v b="$bytes" 'BEGIN { printf "%.1f MiB", b / 2^20 }') (carry limit with the repo: 64 MiB)"
[ "$count" -eq "${#WHEELS[@]}" ] || { echo "expected ${#WHEELS[@]} wheels; some download failed" >&2; exit 1; }
