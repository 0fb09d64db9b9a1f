"""CUDA sources built as host code, to compare their bits with the CPU twins without a GPU.

The GPU modules compile with ``--fmad=false``; the host build matches that with ``-ffp-contract=off`` (no fused
multiply-add the source does not spell out), so a device function run here takes the GPU's steps and roundings.
Used by the twin tests and by bench/graph_parity.py.
"""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from pathlib import Path

# Host definitions of the CUDA rounding intrinsics and launch indices fuzzy_gpu.cu uses: each intrinsic the same
# IEEE operation on the CPU; blockIdx/threadIdx set by the caller, one thread at a time.
FUZZY_KERNEL_SHIMS = r"""
#include <cmath>
#include <cstring>
struct Dim { unsigned int x; };
static Dim blockIdx, threadIdx, blockDim;
#define __global__
#define __restrict__
static inline double __dadd_rn(double a, double b) { return a + b; }
static inline double __dsub_rn(double a, double b) { return a - b; }
static inline double __dmul_rn(double a, double b) { return a * b; }
static inline double __ddiv_rn(double a, double b) { return a / b; }
static inline float __fsub_rn(float a, float b) { return a - b; }
static inline float __fadd_rn(float a, float b) { return a + b; }
static inline float __fmul_rn(float a, float b) { return a * b; }
static inline float __fdiv_rn(float a, float b) { return a / b; }
static inline double __longlong_as_double(long long u) { double x; std::memcpy(&x, &u, 8); return x; }
"""


def compiler() -> str | None:
    """The C++ compiler on PATH (g++, else c++), or None."""
    return shutil.which("g++") or shutil.which("c++")


def marked_section(text: str, name: str) -> str:
    """The lines of a .cu file between its ``// >>> name`` and ``// <<< name`` marker lines.

    Parameters
    ----------
    text : str
        The file's text.
    name : str
        The section's name, as the markers spell it.
    """
    return text.split(f"// >>> {name}", 1)[1].split("\n", 1)[1].split(f"// <<< {name}", 1)[0]


def build_host_library(source: str, folder: Path, include_dirs: tuple[Path, ...] = ()) -> ctypes.CDLL:
    """Compile C++ ``source`` into a shared library in ``folder`` without contraction, and load it.

    Parameters
    ----------
    source : str
        The C++ text (shims, the CUDA section, an ``extern "C"`` entry point).
    folder : pathlib.Path
        Where the source and the library are written.
    include_dirs : tuple of pathlib.Path
        Directories for ``#include`` (e.g. the .cu file's own).
    """
    cxx = compiler()
    if cxx is None:
        raise RuntimeError("no C++ compiler (g++ or c++) on PATH to build CUDA code as host code")
    src, lib = Path(folder) / "host.cpp", Path(folder) / "host.so"
    src.write_text(source)
    cmd = [
        cxx,
        "-std=c++17",
        "-O2",
        "-ffp-contract=off",
        "-fPIC",
        "-shared",
        *(f"-I{d}" for d in include_dirs),
        str(src),
        "-o",
        str(lib),
    ]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if run.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{run.stderr}")
    return ctypes.CDLL(str(lib))
