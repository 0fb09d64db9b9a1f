"""The graph's CPU/GPU parity: the fuzzy set's exp twins (fuzzy_gpu.cu, compiled here as host code) against the C
library the CPU calls, the exact kNN's fixed-order distance recompute, and (GPU) build_graph's bytes per device."""

from __future__ import annotations

import ctypes
import platform
import shutil
import subprocess

import numba
import numpy as np
import pytest

from umapviz.graph import build_graph, fuzzy_gpu, knn_cpu

_HARNESS = """
extern "C" void expf_many(const float* x, float* y, long n) { for (long i = 0; i < n; ++i) y[i] = expf_libm(x[i]); }
extern "C" void exp_many(const double* x, double* y, long n) { for (long i = 0; i < n; ++i) y[i] = exp_libm(x[i]); }
"""


def libm_twins_section() -> str:
    """The host-compilable section of fuzzy_gpu.cu (between its ">>> libm twins" and "<<< libm twins" lines)."""
    text = fuzzy_gpu.KERNELS.read_text()
    return text.split("// >>> libm twins", 1)[1].split("\n", 1)[1].split("// <<< libm twins", 1)[0]


@pytest.fixture(scope="module")
def twins(tmp_path_factory):
    """fuzzy_gpu.cu's exp_libm and expf_libm built as host code (no contraction: as the GPU module's --fmad=false)."""
    compiler = shutil.which("g++") or shutil.which("c++")
    if compiler is None:
        pytest.skip("no C++ compiler on PATH to build fuzzy_gpu.cu's exp twins as host code")
    folder = tmp_path_factory.mktemp("twins")
    (folder / "twins.cpp").write_text("typedef long long i64;\n" + libm_twins_section() + _HARNESS)
    cmd = [compiler, "-std=c++17", "-O2", "-ffp-contract=off", "-fPIC", "-shared", str(folder / "twins.cpp"), "-o",
           str(folder / "twins.so")]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, f"{' '.join(cmd)} failed:\n{run.stderr}"
    lib = ctypes.CDLL(str(folder / "twins.so"))
    for name in ("expf_many", "exp_many"):
        getattr(lib, name).restype = None

    def call(name, x):
        y = np.empty_like(x)
        getattr(lib, name)(x.ctypes.data_as(ctypes.c_void_p), y.ctypes.data_as(ctypes.c_void_p), ctypes.c_long(x.size))
        return y

    return call


@numba.njit(cache=True)
def _numba_exp(x):
    """np.exp element by element in Numba, as fuzzy_cpu.py calls it: expf for float32, exp for float64."""
    y = np.empty_like(x)
    for i in range(x.size):
        y[i] = np.exp(x[i])
    return y


_GLIBC = platform.libc_ver()[0] == "glibc" and platform.machine() in ("x86_64", "aarch64")


@pytest.mark.skipif(not _GLIBC, reason="the twins follow glibc's exp and expf; this C library is another")
def test_expf_twin_equals_the_c_librarys_expf_the_memberships_call(twins):
    x = -np.random.default_rng(0).uniform(0, 30, 4_000_000).astype(np.float32)
    x = np.concatenate([x, np.float32([-0.0, -1e-30, -87.5, -88.7, -103.3, -103.97, -104.0, -200.0, -np.inf])])
    ours, libm = twins("expf_many", x), _numba_exp(x)
    assert np.array_equal(ours.view(np.uint32), libm.view(np.uint32))
    # The check has teeth: the correctly rounded exp (what CUDA's float64 exp rounded to float32 gives) differs
    # from the C library's expf on some of these inputs.
    assert np.count_nonzero(np.exp(x.astype(np.float64)).astype(np.float32) != libm) > 50


@pytest.mark.skipif(not _GLIBC, reason="the twins follow glibc's exp and expf; this C library is another")
def test_exp_twin_equals_the_c_librarys_exp_the_bisection_calls(twins):
    rng = np.random.default_rng(1)
    x = np.concatenate([-rng.uniform(0, 40, 2_000_000), -rng.uniform(0, 760, 1_000_000),
                        -rng.uniform(0, 1, 500_000) * 2.0 ** -rng.integers(0, 60, 500_000),
                        [-0.0, -1e-300, -511.9, -512.0, -708.5, -745.0, -745.2, -800.0, -np.inf]])
    assert np.array_equal(twins("exp_many", x).view(np.uint64), _numba_exp(x).view(np.uint64))
