"""Export: PNG of one frame; GIF, MP4 and a kernel-free HTML replay of a recorded run.

Every file is written to a temporary name in the target folder and moved into place (os.replace), so a
reader never sees half a file.
"""

from __future__ import annotations

import base64
import html
import importlib.util
import json
import math
import os
import struct
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from umapviz._files import atomic_write
from umapviz._validation import is_real
from umapviz.render._png import zlib_stream
from umapviz.render.figures import draw_caption
from umapviz.render.frame import image
from umapviz.render.record import Recording
from umapviz.render.shade.style import DEFAULT_STYLE, Style
from umapviz.render.view import View, ViewSpec, check_pixels, resolve_view, square_pixels, union

Frames = Recording | Sequence[np.ndarray]


# -- files ----------------------------------------------------------------------------------------------
def _check_rgba(rgba: np.ndarray) -> np.ndarray:
    rgba = np.asarray(rgba)
    if rgba.ndim != 3 or rgba.shape[2] not in (3, 4) or rgba.dtype != np.uint8:
        raise ValueError(f"expected an (H, W, 4) uint8 RGBA image; got {rgba.dtype} {tuple(rgba.shape)}.")
    return rgba


def _check_suffix(path: str | os.PathLike, suffix: str, instead: str) -> None:
    """ValueError unless ``path`` ends in ``suffix``: the file's format is fixed, and its name should say so."""
    if Path(path).suffix.lower() != suffix:
        raise ValueError(
            f"{Path(path).name!r} does not end in {suffix}, but this writes {suffix} data (it would be unreadable "
            f"under another suffix): name the file *{suffix}. {instead}"
        )


def encode_png(rgba: np.ndarray, compress_level: int = 1) -> bytes:
    """PNG bytes of an (H, W, 4) or (H, W, 3) uint8 image (level 1: fast, for live frames; 6+: smaller).

    Written directly (PNG signature, IHDR, one IDAT, IEND) with no per-row filter: Pillow tries filters on
    every row, which costs ~3x the time and, on these mostly-black images, gives larger files. The pixels are
    deflated in 8 strips on up to 8 threads (see _png): an 800 x 800 frame at level 1 in a few ms.
    Level 0 stores the pixels uncompressed: faster still (~2 ms), but ~8x the bytes to send.
    """
    rgba = _check_rgba(rgba)
    if not 0 <= compress_level <= 9:
        raise ValueError(f"compress_level must be 0 (none, fastest) to 9 (smallest); got {compress_level}.")
    if rgba.shape[0] == 0 or rgba.shape[1] == 0:
        raise ValueError(f"a PNG holds at least 1 x 1 pixels; got an image of shape {tuple(rgba.shape)}.")
    if rgba.shape[2] == 4 and (rgba[..., 3] == 255).all():
        rgba = rgba[..., :3]  # opaque (every umapviz image is): RGB is a quarter less to compress
    h, w, channels = rgba.shape
    colour_type = 2 if channels == 3 else 6  # truecolour, or truecolour with alpha
    header = struct.pack(">IIBBBBB", w, h, 8, colour_type, 0, 0, 0)  # 8 bits, deflate, no filter, no interlace
    return b"".join(
        [
            b"\x89PNG\r\n\x1a\n",
            _png_chunk(b"IHDR", header),
            _png_chunk(b"IDAT", zlib_stream(rgba, compress_level)),
            _png_chunk(b"IEND", b""),
        ]
    )


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def save_png(rgba: np.ndarray, path: str | os.PathLike) -> Path:
    """Write an (H, W, 4) uint8 image as PNG, atomically; returns the path."""
    _check_suffix(path, ".png", "For other formats use Pillow: PIL.Image.fromarray(rgba).save(path).")
    data = encode_png(rgba, compress_level=6)
    return atomic_write(path, lambda tmp: tmp.write_bytes(data))


# -- frames of a recording ------------------------------------------------------------------------------
def recording_frames(
    recording: Recording,
    width: int = 600,
    height: int = 600,
    view: ViewSpec = "shared",
    *,
    style: Style = DEFAULT_STYLE,
    captions: bool = True,
) -> list[np.ndarray]:
    """One RGBA image per recorded epoch.

    Parameters
    ----------
    recording : Recording
        The recorded epochs.
    width, height : int
        Each image's size in pixels.
    view : str or (xmin, xmax, ymin, ymax)
        "shared" (one view over every frame's robust range, so frames compare and the growth of the layout
        shows), "auto" or "robust" (each frame its own), or fixed.
    style : Style
        Colours and marks.
    captions : bool
        Write "epoch E · K outliers" in the top-left corner.
    """
    width, height = check_pixels(width, "width"), check_pixels(height, "height")
    if len(recording) == 0:
        raise ValueError("the recording has no frames.")
    if isinstance(view, str) and view == "shared":
        view = shared_view(recording, width, height)
    n_labels = int(recording.labels.max()) + 1 if recording.labels is not None and recording.n_points else None
    images = []
    for frame in recording:
        rgba = image(
            frame.embedding, recording.labels, frame.outliers, width, height, view, n_labels=n_labels, style=style
        )
        if captions:
            draw_caption(rgba, frame_caption(frame.epoch, frame.outliers))
        images.append(rgba)
    return images


def shared_view(recording: Recording, width: int, height: int) -> View:
    """The union of every frame's robust view (square pixels): one scale for the whole run."""
    return square_pixels(
        union([resolve_view(f.embedding, "robust", width, height) for f in recording]).bounds, width, height
    )


def frame_caption(epoch: int, outliers: np.ndarray | None) -> str:
    text = f"epoch {epoch}"
    if outliers is not None:
        text += f" · {int(outliers.sum())} outliers"
    return text


def _images(frames: Frames, frame_options: dict[str, Any]) -> list[np.ndarray]:
    if isinstance(frames, Recording):
        return recording_frames(frames, **frame_options)
    if frame_options:
        raise ValueError(f"{sorted(frame_options)} apply to a Recording, not to finished images.")
    if isinstance(frames, np.ndarray) and frames.ndim == 3:  # iterating it would hand out its rows as frames
        raise ValueError(f"frames is one {frames.shape} image; pass a list of images, e.g. [rgba], or a Recording.")
    images = [_check_rgba(f) for f in frames]
    if not images:
        raise ValueError("no frames to export.")
    if any(im.shape != images[0].shape for im in images):
        raise ValueError("all frames must have the same shape.")
    return images


# -- animations -----------------------------------------------------------------------------------------
def _check_fps(fps: Any) -> float:
    """Frames per second of an animation: a positive, finite number."""
    if not is_real(fps) or not 0 < fps < math.inf:
        raise ValueError(f"fps={fps!r} must be a positive number of frames per second (5 is the default).")
    return float(fps)


def save_gif(frames: Frames, path: str | os.PathLike, fps: float = 5, **frame_options: Any) -> Path:
    """An animated GIF (looping) of a Recording or of RGBA images; options go to ``recording_frames``."""
    from PIL import Image  # noqa: PLC0415

    _check_suffix(path, ".gif", "For a video use save_mp4(), for a web page save_html().")
    duration = max(20, round(1000 / _check_fps(fps)))
    images = [Image.fromarray(im[..., :3]) for im in _images(frames, frame_options)]

    def write(tmp: Path) -> None:
        images[0].save(tmp, format="GIF", save_all=True, append_images=images[1:], duration=duration, loop=0)

    return atomic_write(path, write)


def save_mp4(frames: Frames, path: str | os.PathLike, fps: float = 10, **frame_options: Any) -> Path:
    """An H.264 MP4 of a Recording or of RGBA images; needs the imageio-ffmpeg package."""
    _check_suffix(path, ".mp4", "For an animated image use save_gif(), for a web page save_html().")
    if importlib.util.find_spec("imageio_ffmpeg") is None:
        raise RuntimeError(
            "MP4 export needs the imageio-ffmpeg package (it ships an ffmpeg binary): "
            "pip install imageio-ffmpeg. Or use save_gif() or save_html(), which need nothing more."
        )
    import imageio.v2 as imageio  # noqa: PLC0415

    fps = _check_fps(fps)
    images = _images(frames, frame_options)
    h, w = images[0].shape[:2]
    ph, pw = h % 2, w % 2  # yuv420p halves the colour planes: sizes must be even, so pad with edge pixels

    def write(tmp: Path) -> None:
        with imageio.get_writer(
            tmp, format="FFMPEG", mode="I", fps=fps, codec="libx264", pixelformat="yuv420p", macro_block_size=2
        ) as writer:
            for im in images:
                writer.append_data(np.pad(im[..., :3], ((0, ph), (0, pw), (0, 0)), mode="edge"))

    return atomic_write(path, write)


def save_html(
    frames: Frames,
    path: str | os.PathLike,
    fps: float = 5,
    title: str = "umapviz replay",
    captions: Sequence[str] | None = None,
    **frame_options: Any,
) -> Path:
    """A self-contained HTML page that replays the frames with play/pause and a slider, without a kernel.

    Frames are embedded as base64 PNGs; the player is a few lines of plain JavaScript.
    """
    _check_suffix(path, ".html", "For an animated image use save_gif(), for a video save_mp4().")
    fps = _check_fps(fps)
    if isinstance(frames, Recording):
        if captions is None:
            captions = [frame_caption(f.epoch, f.outliers) for f in frames]
        frame_options.setdefault("captions", False)  # shown under the image instead
    images = _images(frames, frame_options)
    if captions is None:
        captions = [f"frame {i + 1}" for i in range(len(images))]
    if len(captions) != len(images):
        raise ValueError(f"{len(captions)} captions for {len(images)} frames.")
    pngs = [base64.b64encode(encode_png(im, compress_level=6)).decode("ascii") for im in images]
    page = _PLAYER.format(
        title=html.escape(title),
        width=images[0].shape[1],
        height=images[0].shape[0],
        last=len(images) - 1,
        fps=fps,
        frames=_script_json(pngs),
        captions=_script_json(list(captions)),
    )
    return atomic_write(path, lambda tmp: tmp.write_text(page, encoding="utf-8"))


def _script_json(value: Any) -> str:
    # Inside <script>, "</" could close the element early: escape it.
    return json.dumps(value).replace("</", "<\\/")


_PLAYER = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{title}</title>
<style>
  body {{ background: #111; color: #eee; font: 14px system-ui, sans-serif; margin: 16px; }}
  #controls {{ display: flex; gap: 12px; align-items: center; margin-top: 8px; width: {width}px; }}
  #slider {{ flex: 1; }}
  #caption {{ min-width: 14em; }}
  button {{ min-width: 5em; }}
  img {{ display: block; image-rendering: pixelated; }}
</style>
</head>
<body>
<h3>{title}</h3>
<img id="frame" width="{width}" height="{height}" alt="recorded frame">
<div id="controls">
  <button id="play" type="button">Pause</button>
  <input id="slider" type="range" min="0" max="{last}" value="0" step="1" aria-label="frame">
  <span id="caption"></span>
</div>
<script>
"use strict";
const FRAMES = {frames};
const CAPTIONS = {captions};
const FPS = {fps};
const img = document.getElementById("frame");
const slider = document.getElementById("slider");
const button = document.getElementById("play");
const caption = document.getElementById("caption");
const sources = FRAMES.map(b64 => "data:image/png;base64," + b64);
sources.forEach(src => {{ const pre = new Image(); pre.src = src; }});  // decode ahead: smooth playback
let index = 0;
let timer = null;
function show(i) {{
  index = i;
  img.src = sources[i];
  slider.value = i;
  caption.textContent = CAPTIONS[i] + "  (" + (i + 1) + "/" + FRAMES.length + ")";
  document.body.dataset.frame = i;
}}
function play() {{
  if (timer !== null) return;
  timer = setInterval(() => show((index + 1) % FRAMES.length), 1000 / FPS);
  button.textContent = "Pause";
}}
function pause() {{
  clearInterval(timer);
  timer = null;
  button.textContent = "Play";
}}
button.addEventListener("click", () => (timer === null ? play() : pause()));
slider.addEventListener("input", () => {{ pause(); show(Number(slider.value)); }});
show(0);
if (FRAMES.length > 1) play();
</script>
</body>
</html>
"""
