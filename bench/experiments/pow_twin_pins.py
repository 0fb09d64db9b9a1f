"""The int-seed fingerprints that tests/test_validation.py pins, computed twice: by the product, and by the CPU
engine with its power function taken from the GPU twin (engine_gpu.cu's pow_portable section compiled as host
code by g++ -ffp-contract=off and called through ctypes). Equal rows show that the pins follow from the GPU
twin's steps too, not only from the Python code under test.

    PYTHONPATH=$PWD .venv/bin/python bench/experiments/pow_twin_pins.py

Each computation runs in a child process with an empty Numba cache, so that the engines compile against the
power function that child installs.
"""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CASES = [{"init": "random", "strategy": "sequential"}, {"init": "random"}]


def child(use_gpu_twin: bool, lib: str) -> None:
    import numpy as np  # noqa: PLC0415 - the child's imports come after its environment is set
    from numba import njit  # noqa: PLC0415 - idem
    from sklearn.datasets import make_blobs  # noqa: PLC0415 - idem

    import umapviz  # noqa: PLC0415 - idem
    from umapviz import metrics  # noqa: PLC0415 - idem
    from umapviz.optimize import moves_cpu  # noqa: PLC0415 - idem

    if use_gpu_twin:  # before any engine compiles: they read moves_cpu.power when they do
        c_pow = ctypes.CDLL(lib).pow_portable_host
        c_pow.argtypes, c_pow.restype = [ctypes.c_float, ctypes.c_float], ctypes.c_float
        moves_cpu.power = njit(lambda x, y: c_pow(x, y))  # Numba calls a ctypes function directly
    X, _ = make_blobs(500, n_features=8, centers=3, random_state=1)
    X = X.astype(np.float32)
    prints = [
        metrics.fingerprint(
            umapviz.UMAP(n_neighbors=10, n_epochs=50, random_state=0, device="cpu", **kw).fit_transform(X)
        )
        for kw in CASES
    ]
    print(json.dumps(prints))


def main() -> None:
    if sys.argv[1:2] == ["--child"]:
        child(sys.argv[2] == "gpu", sys.argv[3])
        return
    sys.path.insert(0, str(ROOT / "tests"))
    from test_cuda_sources import _HOST_PRELUDE  # noqa: PLC0415 - the tests' host prelude, from tests/

    from umapviz.optimize import engine_gpu  # noqa: PLC0415 - the parent's only; children import after setup

    cu = engine_gpu.kernel_source()
    section = cu[cu.index("// ---- pow_portable") : cu.index("// ---- end of pow_portable")]
    with tempfile.TemporaryDirectory() as tmp:
        src, lib = Path(tmp, "pow.cpp"), Path(tmp, "pow.so")
        src.write_text(
            _HOST_PRELUDE + section + 'extern "C" float pow_portable_host(float x, float y) '
            "{ return pow_portable(x, y); }\n"
        )
        subprocess.run(
            ["g++", "-O2", "-std=c++17", "-ffp-contract=off", "-shared", "-fPIC", str(src), "-o", str(lib)], check=True
        )
        rows = {}
        for which in ("product", "gpu"):
            env = {**os.environ, "NUMBA_CACHE_DIR": str(Path(tmp, f"numba-{which}")), "PYTHONPATH": str(ROOT)}
            run = subprocess.run(
                [sys.executable, __file__, "--child", which, str(lib)], env=env, capture_output=True, text=True
            )
            if run.returncode:
                sys.exit(f"the {which} child failed:\n{run.stderr}")
            out = run.stdout
            rows[which] = json.loads(out.strip().splitlines()[-1])
    for case, a, b in zip(CASES, rows["product"], rows["gpu"], strict=True):
        print(f"{case}: product {a}, GPU twin's power {b}, equal: {a == b}")


if __name__ == "__main__":
    main()
