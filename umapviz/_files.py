"""Atomic file writing for caches, recordings and exports: a temporary file beside the target, then os.replace."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path


def _default_mode() -> int:
    # mkstemp creates files readable by the owner only; give the result the usual permissions instead.
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def atomic_write(path: str | os.PathLike, write: Callable[[Path], None]) -> Path:
    """Call ``write(tmp_path)`` on a temporary file next to ``path``, then move it onto ``path``.

    A reader sees either the old file or the complete new one, never half a file.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    # The real suffix stays last: some writers (ffmpeg) pick the format from it.
    fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}.tmp.", suffix=path.suffix, dir=path.parent)
    os.close(fd)
    try:
        write(Path(tmp))
        with open(tmp, "rb+") as f:  # on disk before the rename makes it visible
            os.fsync(f.fileno())
        os.chmod(tmp, _default_mode())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
