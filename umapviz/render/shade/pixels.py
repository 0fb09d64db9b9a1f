"""Packed pixels: an image being drawn is (H, W) uint32, one RGBA pixel a word, on NumPy or CuPy; and straight
alpha composited over an opaque background."""

from __future__ import annotations

from typing import Any

import numpy as np

from umapviz._backend import xp_of
from umapviz.render.shade.style import hex_to_rgb


# Images being drawn are (H, W) uint32, one packed RGBA pixel each (bytes R, G, B, A in memory, as datashader
# packs them): moving, gathering and scattering one 4-byte word per pixel is several times faster than four
# bytes, on NumPy and CuPy alike. ``unpack`` views the finished image as (H, W, 4) uint8 on the host.
def pack(rgba: np.ndarray) -> np.ndarray:
    """(..., 4) uint8 NumPy RGBA -> (...) uint32 packed pixels (a view when ``rgba`` is C-contiguous)."""
    return np.ascontiguousarray(rgba, dtype=np.uint8).view(np.uint32)[..., 0]


def unpack(image: np.ndarray) -> np.ndarray:
    """(H, W) uint32 packed NumPy image -> (H, W, 4) uint8 RGBA (a view)."""
    return np.ascontiguousarray(image).view(np.uint8).reshape(*image.shape, 4)


def packed_color(color: str, alpha: int = 255) -> int:
    """'#RRGGBB' -> one packed uint32 pixel value."""
    return int(pack(np.array([*hex_to_rgb(color), alpha], dtype=np.uint8)))


def composite_packed(rgb: Any, alpha: Any, background: str) -> Any:
    """(M, 3) colours with (M,) alphas over an opaque background -> (M,) uint32 packed opaque pixels.

    The arithmetic of ``composite`` (which it equals), in uint32 on the colours' device (NumPy or CuPy),
    packed with R in the lowest byte: bytes R, G, B, A in memory on little-endian machines (x86, ARM, GPUs).
    """
    xp = xp_of(rgb)
    a = alpha.astype(np.uint32)[:, None]
    bg = xp.asarray(np.array(hex_to_rgb(background), dtype=np.uint32))
    mixed = (rgb.astype(np.uint32) * a + bg * (255 - a) + 127) // 255  # at most 65,152: as exact as uint16
    return mixed[:, 0] | (mixed[:, 1] << 8) | (mixed[:, 2] << 16) | np.uint32(0xFF000000)


def flat_pixels(image: Any) -> Any:
    """(H * W, ...) view of a C-contiguous (H, W) or (H, W, 4) image: one flat index per pixel."""
    if not image.flags.c_contiguous:
        raise ValueError("the image must be C-contiguous to be drawn on in place; pass np.ascontiguousarray(image).")
    return image.reshape(image.shape[0] * image.shape[1], *image.shape[2:])


def composite(rgba: Any, background: str) -> Any:
    """Straight-alpha RGBA over an opaque background colour -> opaque RGBA (a new array, NumPy or CuPy)."""
    xp = xp_of(rgba)
    alpha = rgba[..., 3:4].astype(np.uint16)
    bg = xp.asarray(np.array(hex_to_rgb(background), dtype=np.uint16))
    rgb = (rgba[..., :3].astype(np.uint16) * alpha + bg * (255 - alpha) + 127) // 255
    out = xp.empty(rgba.shape, dtype=np.uint8)
    out[..., :3] = rgb
    out[..., 3] = 255
    return out
