"""Array backend: NumPy on the CPU, CuPy on NVIDIA GPUs. CuPy is imported lazily."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

DEVICES = ("auto", "cpu", "gpu")


@functools.lru_cache(maxsize=1)
def _cupy_or_reason() -> tuple[Any, str]:
    """(cupy module, "") when a usable GPU exists, else (None, why not)."""
    try:
        import cupy as cp  # noqa: PLC0415 - lazy by design
    except Exception as exc:  # ImportError, or a broken CUDA install
        return None, f"CuPy is not importable ({exc.__class__.__name__}: {exc})"
    try:
        n = cp.cuda.runtime.getDeviceCount()
    except Exception as exc:
        return None, f"CuPy found no usable CUDA device ({exc})"
    if n < 1:
        return None, "CuPy found no CUDA device"
    return cp, ""


def gpu_memory() -> tuple[int, int]:
    """(free, total) bytes of the current GPU as CuPy's default pool can hand them out: the device's free memory
    plus what the pool holds unused (it is handed out first). Under a pool limit (``CUPY_GPU_MEMORY_LIMIT`` or
    ``cupy.get_default_memory_pool().set_limit``) the limit is the total, and free is at most the limit less what
    the pool holds after releasing its unused blocks: the pool counts every byte it holds against the limit, and
    unused pieces of a block partly in use cannot serve a large request, so a 24 GB limit plans 24 GB."""
    cp = cupy()
    pool = cp.get_default_memory_pool()
    limit = pool.get_limit()  # 0: no limit
    if limit:
        pool.free_all_blocks()
    free, total = cp.cuda.runtime.memGetInfo()
    if limit:
        return max(0, min(free, limit - pool.total_bytes())), min(total, limit)
    return free + pool.free_bytes(), total


def gpu_available() -> bool:
    """True when CuPy imports and sees at least one CUDA device."""
    return _cupy_or_reason()[0] is not None


def cupy():
    """The CuPy module, or a clear error saying why the GPU cannot be used."""
    cp, why = _cupy_or_reason()
    if cp is None:
        raise RuntimeError(
            f"device='gpu' was asked for, but no GPU is usable: {why}. "
            "Use device='cpu' (or 'auto'), or install CuPy for your CUDA version (pip install cupy-cuda12x)."
        )
    return cp


def resolve_device(device: str) -> str:
    """Map "auto" | "cpu" | "gpu" to "cpu" or "gpu", checking that a requested GPU exists."""
    if device not in DEVICES:
        raise ValueError(f"device={device!r} is not one of {DEVICES}.")
    if device == "auto":
        return "gpu" if gpu_available() else "cpu"
    if device == "gpu":
        cupy()  # raises with the reason
    return device


def is_cupy(x: Any) -> bool:
    """True for a CuPy array, without importing CuPy."""
    return type(x).__module__.split(".")[0] == "cupy"


def xp_of(x: Any):
    """The array module (numpy or cupy) that owns ``x``."""
    if is_cupy(x):
        import cupy as cp  # noqa: PLC0415

        return cp
    return np


def to_host(x: Any) -> np.ndarray:
    """A NumPy array from a NumPy or CuPy array (copies device memory to the host)."""
    if is_cupy(x):
        return x.get()
    return np.asarray(x)
