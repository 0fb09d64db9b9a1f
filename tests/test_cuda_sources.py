"""CI checks of the GPU code that need no GPU: every .cu file compiles (nvcc, PTX for sm_90 and sm_80), and the GPU
modules import without CuPy."""

from __future__ import annotations

import ctypes
import importlib
import inspect
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from cuda_host import build_host_library
from numba import njit

from umapviz.optimize import engine_gpu, moves_cpu, vertex_index

ROOT = Path(__file__).resolve().parents[1] / "umapviz"
CU_FILES = sorted(ROOT.rglob("*.cu"))
# engine_gpu.cu is specialised by macros at load time (dimension, private_head, the vertex strategy's n_neg
# bytes; the benchmark's library powf): compile the default and the other branches too.
VARIANTS = {
    "engine_gpu.cu": [
        [],
        ["-DUMV_DIM=3", "-DUMV_PH=0", "-DVTX_NNEG_BYTES=4"],
        ["-DUMV_DIM=1", "-DUMV_LIBRARY_POW=1"],
        ["-arch=sm_80"],
    ],  # before Hopper: no vector atomics (the per-coordinate branches)
    "knn_gpu.cu": [[], ["-DSEL_STAGES=2"], ["-DSEL_STAGES=5"], ["-arch=sm_75"]],  # Turing: no cp.async
}


def test_there_are_cuda_sources():
    names = {p.name for p in CU_FILES}
    assert {"engine_gpu.cu", "knn_gpu.cu", "fuzzy_gpu.cu", "spectral_gpu.cu"} <= names


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH")
@pytest.mark.parametrize("source", CU_FILES, ids=lambda p: p.name)
def test_cuda_source_compiles_to_ptx_without_warnings(source, tmp_path):
    for defines in VARIANTS.get(source.name, [[]]):
        arch = [] if any(d.startswith("-arch=") for d in defines) else ["-arch=sm_90"]
        cmd = [
            "nvcc",
            "--ptx",
            *arch,
            "-fmad=false",
            "-std=c++17",
            "--Werror",
            "all-warnings",
            *defines,
            str(source),
            "-o",
            str(tmp_path / "out.ptx"),
        ]
        run = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        assert run.returncode == 0, f"{' '.join(cmd)} failed:\n{run.stdout}\n{run.stderr}"
        assert (tmp_path / "out.ptx").stat().st_size > 0


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH")
@pytest.mark.parametrize(
    "source, flags",
    [
        ("optimize/engine_gpu.cu", ["-arch=sm_90"]),
        ("graph/knn/knn_gpu.cu", ["-arch=sm_90"]),
        ("optimize/engine_gpu.cu", ["-arch=sm_75"]),
        ("graph/knn/knn_gpu.cu", ["-arch=sm_75"]),
    ],
    ids=["l2-hints", "async-copies", "layout-on-turing", "knn-on-turing"],
)
def test_inline_ptx_assembles(tmp_path, source, flags):
    """PTX output passes inline asm through unchecked; ptxas (a cubin) checks the instructions: the L2 hints of
    the layout kernels and the kNN selection's asynchronous copies, and that a Turing GPU (sm_75, e.g. a T4),
    which has neither, gets code without them (the default L2 hints once failed to assemble there)."""
    cmd = [
        "nvcc",
        "-cubin",
        *flags,
        "-fmad=false",
        "-std=c++17",
        "--Werror",
        "all-warnings",
        str(ROOT / source),
        "-o",
        str(tmp_path / "out.cubin"),
    ]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, f"{' '.join(cmd)} failed:\n{run.stdout}\n{run.stderr}"


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH")
def test_layout_kernels_use_only_correctly_rounded_float_operations(tmp_path):
    """The layout's arithmetic is the CPU's only if every float operation is correctly rounded: no FMA (fused,
    it rounds once where the CPU rounds twice) and no approximate instruction (ex2, lg2, rcp.approx, which a
    library powf is made of). The benchmark's library-powf build has both, which shows the check can see them."""

    def float_ops(*defines):
        ptx = tmp_path / "out.ptx"
        cmd = [
            "nvcc",
            "--ptx",
            "-arch=sm_90",
            *engine_gpu.NVRTC_OPTIONS,
            *defines,
            str(engine_gpu.KERNELS),
            "-o",
            str(ptx),
        ]
        run = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        assert run.returncode == 0, f"{' '.join(cmd)} failed:\n{run.stderr}"
        return set(re.findall(r"\b(fma\.\w+|\w+\.approx)\b", ptx.read_text()))

    assert float_ops() == set()
    assert {"fma.rn", "rcp.approx"} <= float_ops("-DUMV_LIBRARY_POW=1")


def _float_literals(text: str) -> list[float]:
    """Every decimal literal with a point in `text` (a trailing f dropped), sorted."""
    return sorted(float(v.rstrip("f")) for v in re.findall(r"(?<![\w.])-?\d+\.\d+(?:e[-+]?\d+)?f?", text))


def test_pow_portable_twins_share_their_tables_and_constants():
    """The CPU and GPU pow_portable give the same bits only with the same constants: the three tables are equal
    entry for entry, and the two functions' bodies hold the same float literals."""
    cu = engine_gpu.kernel_source()
    for cpu_name, gpu_name in (
        ("_POW_INVC", "UMV_POW_INVC"),
        ("_POW_LOGC", "UMV_POW_LOGC"),
        ("_POW_EXP2_BITS", "UMV_POW_EXP2_BITS"),
    ):
        table = re.search(rf"{gpu_name}\[\d+\] = \{{(.*?)\}};", cu, re.S).group(1)
        values = [v.strip().removesuffix("ULL") for v in table.replace("\n", " ").split(",")]
        gpu = [int(v, 16) if v.startswith("0x") else float(v) for v in values]
        assert gpu == getattr(moves_cpu, cpu_name).tolist() and len(gpu) == 32, cpu_name
    gpu_body = re.search(r"float pow_portable\(float x, float y\) \{(.*?)\n\}", cu, re.S).group(1)
    cpu_body = inspect.getsource(moves_cpu.pow_portable.py_func).split('"""')[2]
    # zeros aside (the GPU writes 0.0f where the CPU writes F0)
    assert [v for v in _float_literals(gpu_body) if v != 0] == [v for v in _float_literals(cpu_body) if v != 0]


# Host definitions of the CUDA intrinsics pow_portable uses: each the same IEEE operation on the CPU, so that the
# device function compiled as host code (-ffp-contract=off: no FMA) follows the GPU's steps and roundings.
_HOST_PRELUDE = r"""
#include <cstring>
#define __device__
#define __forceinline__ inline
static inline float __int_as_float(int i) { float f; std::memcpy(&f, &i, 4); return f; }
static inline int __float_as_int(float f) { int i; std::memcpy(&i, &f, 4); return i; }
static inline double __longlong_as_double(long long i) { double d; std::memcpy(&d, &i, 8); return d; }
static inline long long __double_as_longlong(double d) { long long i; std::memcpy(&i, &d, 8); return i; }
static inline double __dmul_rn(double a, double b) { return a * b; }
static inline double __dadd_rn(double a, double b) { return a + b; }
static inline double __dsub_rn(double a, double b) { return a - b; }
static inline float __double2float_rn(double d) { return (float)d; }
"""
_HOST_ENTRY = r"""
extern "C" void pows(const float* x, float y, long n, float* out) {
    for (long i = 0; i < n; ++i) out[i] = pow_portable(x[i], y);
}
"""


@njit
def _cpu_pows(xs, y, out):
    for i in range(xs.shape[0]):
        out[i] = moves_cpu.pow_portable(xs[i], y)


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not on PATH (the host compiler of this check)")
def test_pow_portable_gpu_twin_compiled_as_host_code_gives_the_cpu_twins_bits(tmp_path):
    """The engine source's pow_portable section (in kernels/helpers.cuh), compiled by g++ with host versions of
    its intrinsics, against moves_cpu.pow_portable on 10^7 inputs: random bit patterns over every float (zeros,
    subnormals, inf, NaN, negatives included) and the layout's range of squared distances, at the layout's
    exponents and others. The same bits everywhere: the twins take the same steps (the GPU tests check the
    device itself)."""
    cu = engine_gpu.kernel_source()
    section = cu[cu.index("// ---- pow_portable") : cu.index("// ---- end of pow_portable")]
    host = build_host_library(_HOST_PRELUDE + section + _HOST_ENTRY, tmp_path)
    host.pows.argtypes = [ctypes.c_void_p, ctypes.c_float, ctypes.c_long, ctypes.c_void_p]
    rng = np.random.default_rng(0)
    every = rng.integers(0, 2**32, 4 * 10**6, dtype=np.uint64).astype(np.uint32).view(np.float32)
    layout = (10.0 ** rng.uniform(-8, 4, 10**6)).astype(np.float32)  # squared distances
    for y, xs in [
        (0.8956, every),
        (0.8956, layout),
        (1.929, layout),
        (0.5, every),
        (2.0, every),
        (-1.5, every),
        (37.0, layout),
        (1.0, layout),
    ]:
        y = np.float32(y)
        gpu_twin, cpu_twin = np.empty_like(xs), np.empty_like(xs)
        host.pows(xs.ctypes.data, y, xs.size, gpu_twin.ctypes.data)
        _cpu_pows(xs, y, cpu_twin)
        differ = gpu_twin.view(np.uint32) != cpu_twin.view(np.uint32)
        assert not differ.any(), f"y = {y}: {int(differ.sum())} differ, e.g. x = {xs[differ][:3]}"


@pytest.mark.parametrize(
    "module",
    [
        "umapviz.optimize.engine_gpu",
        "umapviz.graph.knn.knn_gpu",
        "umapviz.graph.fuzzy.fuzzy_gpu",
        "umapviz.graph.start.spectral_gpu",
    ],
)
def test_gpu_modules_import_without_touching_cupy(module):
    mod = importlib.import_module(module)
    assert mod.KERNELS.is_file()


def test_engine_source_inlines_every_kernel_part_once():
    """engine_gpu.cu includes its parts from kernels/; the engine compiles kernel_source(), which must inline each
    part file exactly once and leave no include of a local file behind (NVRTC, given the text alone, would not
    find it)."""
    source = engine_gpu.kernel_source()
    parts = sorted((ROOT / "optimize" / "kernels").glob("*.cuh"))
    assert len(parts) >= 2
    head = engine_gpu.KERNELS.read_text()
    for part in parts:
        assert head.count(f'#include "kernels/{part.name}"\n') == 1, part.name
        assert source.count(part.read_text()) == 1, part.name
    assert '#include "' not in source


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH")
def test_nvcc_and_the_engine_compile_the_same_kernel_source(tmp_path):
    """The CI checks above hand engine_gpu.cu to nvcc, which resolves its includes itself; the engine hands
    kernel_source() to NVRTC. Both must be one program: the same PTX."""
    inlined = tmp_path / "inlined.cu"
    inlined.write_text(engine_gpu.kernel_source())
    ptx = []
    for source in (engine_gpu.KERNELS, inlined):
        out = tmp_path / f"{source.stem}.ptx"
        cmd = ["nvcc", "--ptx", "-arch=sm_90", *engine_gpu.NVRTC_OPTIONS, str(source), "-o", str(out)]
        run = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        assert run.returncode == 0, f"{' '.join(cmd)} failed:\n{run.stderr}"
        ptx.append(out.read_bytes())
    assert ptx[0] == ptx[1]


@pytest.mark.parametrize(
    "macro, attr",
    [
        ("SCHED_BLOCK", "_SCHED_BLOCK"),
        ("SCHED_WMAX", "_SCHED_WMAX"),
        ("VTX_WARPS", "_VERTEX_WARPS"),
        ("VTX_WIDE", "_VERTEX_WIDE"),
        ("VTX_TILE", "_VERTEX_TILE"),
        ("PERSIST_THREADS", "PERSIST_THREADS"),
    ],
)
def test_launch_constants_match_the_kernel_source(macro, attr):
    """The host sizes launches from these; a mismatch would silently skip or repeat work."""
    found = re.search(rf"^#define {macro} (\d+)", engine_gpu.kernel_source(), re.M)
    assert found, f"#define {macro} not found in engine_gpu.kernel_source()"
    assert int(found.group(1)) == getattr(engine_gpu, attr)


def test_vertex_groups_are_as_wide_as_the_gpus():
    """The CPU engine folds a vertex's moves in groups as wide as the GPU kernel's warp (its wide groups: the
    GPU engine takes VERTEX_WIDE_GROUP, which the test above ties to VTX_WIDE)."""
    assert vertex_index.VERTEX_GROUP == 32
