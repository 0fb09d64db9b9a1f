"""Files: atomic writing for caches, recordings and exports (a temporary file beside the target, then
os.replace), and NumPy files read without pickle, with a clear error for what is not one."""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np

NPY_MAGIC = b"\x93NUMPY"
NPZ_MAGIC = b"PK\x03\x04"  # an .npz archive is a zip file


def _mode_of(path: Path) -> int:
    """Permissions for the new file at ``path``: those of the file it replaces, else the usual ones for a new file
    (mkstemp creates files readable by the owner only)."""
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def atomic_write(path: str | os.PathLike, write: Callable[[Path], None]) -> Path:
    """Call ``write(tmp_path)`` on a temporary file next to ``path``, then move it onto ``path``.

    A reader sees either the old file or the complete new one, never half a file. A symlink at ``path`` stays a
    link (the file it points to is replaced), and a file that is replaced keeps its permissions.
    """
    path = Path(path).expanduser()  # "~/run.png" means the home folder, as in a shell
    if path.is_symlink():  # os.replace would put a plain file where the user's link was
        path = Path(os.path.realpath(path))
    _make_folder(path)
    if path.is_dir():  # os.replace would fail naming the temporary file
        raise IsADirectoryError(
            errno.EISDIR,
            f"{path} is a folder: give a file name inside it (e.g. {path.name}/run{path.suffix}) or another name",
            str(path),
        )
    # The real suffix stays last: some writers (ffmpeg) pick the format from it.
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}.tmp.", suffix=path.suffix, dir=path.parent)
    except OSError as exc:  # name the file the caller asked for, not the temporary one (read-only folder, full disk)
        raise type(exc)(exc.errno, exc.strerror, str(path)) from exc
    os.close(fd)
    try:
        write(Path(tmp))
        with open(tmp, "rb+") as f:  # on disk before the rename makes it visible
            os.fsync(f.fileno())
        os.chmod(tmp, _mode_of(path))
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def _make_folder(path: Path) -> None:
    """Make ``path``'s folder; a file where a folder should be is named as such ("File exists" blamed it)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError) as exc:
        blocker = next((p for p in (path.parent, *path.parent.parents) if p.exists() and not p.is_dir()), None)
        if blocker is None:
            raise
        raise NotADirectoryError(
            errno.ENOTDIR,
            f"{blocker} is a file, not a folder, so nothing can be saved under it: choose another folder or name",
            str(path),
        ) from exc


def check_magic(path: str | os.PathLike, magic: bytes, kind: str, fix: str) -> None:
    """ValueError unless the file starts with `magic` (NumPy blames "pickled data" for any other file)."""
    with open(path, "rb") as fh:
        head = fh.read(len(magic))
    if head != magic:
        raise ValueError(
            f"{path} is not a {kind} file (it does not start with a {kind} header): it is damaged, or another "
            f"format under a {kind} name. {fix}".rstrip()
        )


def load_npz(path: str | os.PathLike, fix: str = "Save it with numpy.savez(path, X=X).") -> dict[str, np.ndarray]:
    """Every array of an .npz archive, read without pickle; the file is closed even when it is damaged."""
    check_magic(path, NPZ_MAGIC, ".npz", fix)
    with open(path, "rb") as fh, np.load(fh, allow_pickle=False) as archive:
        return {name: archive[name] for name in archive.files}
