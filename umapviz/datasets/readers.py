"""A user's data files: ``.npy``, ``.npz``, ``.csv`` and ``.parquet`` read into (X, labels), with the label column
found by name or given, and every problem said with its fix."""

from __future__ import annotations

import csv
import os
import zipfile
from pathlib import Path

import numpy as np

from .._files import NPY_MAGIC, check_magic, load_npz
from .cells import _column_cells, _is_number, _labels_from_strings, _open_text, _refuse_bad_cells
from .checks import _check_label_column_type, _finish

FILE_SUFFIXES = (".npy", ".npz", ".csv", ".parquet")
# Column names (any case) read as the class labels of a CSV or Parquet file. Not "y": two-column x,y files are
# common. The keys of an .npz are explicit names, so there "y" counts too (NPZ_LABEL_KEYS, first found wins).
LABEL_COLUMNS = ("label", "labels", "target", "class")
NPZ_LABEL_KEYS = ("labels", "label", "target", "y")


def check_file(path: Path) -> None:
    """FileNotFoundError, in the command line's words, unless ``path`` is a file.

    Parameters
    ----------
    path : Path
        The data file's path.
    """
    if not path.is_file():
        what = "is a directory, not a file" if path.is_dir() else "does not exist"
        raise FileNotFoundError(f"Data file {path} {what}. Check the path (relative paths start at {Path.cwd()}).")


def read_file(path: str | os.PathLike, label_column: str | None = None) -> tuple[np.ndarray, np.ndarray | None]:
    """Read a user's data file (by suffix) into (X float32 (n, d), labels int64 (n,) or None).

    The labels are, in a CSV (with a header row) or Parquet file, the column that ``label_column`` names, or by
    default the one column named ``label``, ``labels``, ``target`` or ``class`` in any case (two such columns
    are an error: say which with ``label_column``); every other column is a feature. In an ``.npz`` they are the
    array ``label_column`` names, or by default the first of ``labels``, ``label``, ``target``, ``y`` beside
    ``X``. A ``.npy`` file holds no labels.
    """
    _check_label_column_type(label_column)
    path = Path(path).expanduser()
    check_file(path)
    suffix = path.suffix.lower()
    readers = {".npy": _read_npy, ".npz": _read_npz, ".csv": _read_csv, ".parquet": _read_parquet}
    if suffix not in readers:
        raise ValueError(f"Cannot read {path}: supported file types are {', '.join(FILE_SUFFIXES)}.")
    X, labels = readers[suffix](path, label_column)
    return _finish(X, labels, source=f"file {path}")


def _list_names(names: list[str], most: int = 20) -> str:
    """Column names for an error message: the first `most` of them, and how many there are in all."""
    shown = ", ".join(repr(n) for n in names[:most])
    return shown + (f", ... ({len(names)} in all)" if len(names) > most else "")


def _label_index(names: list[str], path: Path, label_column: str | None) -> int | None:
    """Index of the column that holds the classes: the one `label_column` names (exactly), or else the one
    named as in LABEL_COLUMNS (any case); None when there is none. Ambiguity is an error, not a guess."""
    if label_column is not None:
        hits = [i for i, name in enumerate(names) if name == label_column] if label_column else []
        if len(hits) == 1:
            return hits[0]
        if len(hits) > 1:
            raise ValueError(f"{path} has {len(hits)} columns named {label_column!r}. Rename all but the class column.")
        what = "is empty" if not label_column else "is not a column of this file"
        raise ValueError(
            f"label_column={label_column!r} {what}: {path} has the columns {_list_names(names)}. Give the name "
            "of the column that holds the classes (exactly as written), or label_column=None to find a column "
            f"named {', '.join(repr(n) for n in LABEL_COLUMNS)}."
        )
    hits = [i for i, name in enumerate(names) if name.lower() in LABEL_COLUMNS]
    if len(hits) > 1:
        raise ValueError(
            f"{path} has {len(hits)} columns that could hold the classes: {_list_names([names[i] for i in hits])}. "
            "Keep one of them (drop or rename the others), or pick one with "
            f"label_column={names[hits[0]]!r} (the others are then read as features)."
        )
    return hits[0] if hits else None


# ---------------------------------------------------------------------------------------------------
# File readers.
# ---------------------------------------------------------------------------------------------------


def _read_npy(path: Path, label_column: str | None = None):
    if label_column is not None:
        raise ValueError(
            f"label_column={label_column!r} does not apply to {path}: a .npy file holds one array, with no named "
            "columns. Save the classes beside the data with numpy.savez(path, X=X, labels=labels) instead."
        )
    check_magic(path, NPY_MAGIC, ".npy", "Save the data with numpy.save(path, X).")
    try:
        with open(path, "rb") as fh:
            X = np.load(fh, allow_pickle=False)
    except ValueError as exc:  # object arrays need pickle, which we refuse
        raise ValueError(f"{path} does not hold a plain numeric array ({exc}). Save a float array instead.") from exc
    return X, None


def _read_npz(path: Path, label_column: str | None = None):
    try:
        arrays = load_npz(path, fix="Save the data with numpy.savez(path, X=X, labels=labels).")
    except (ValueError, OSError, zipfile.BadZipFile) as exc:
        raise ValueError(f"{path} is not a readable .npz archive: {exc}") from exc
    keys = list(arrays)
    if label_column is not None and (label_column not in keys or label_column == "X" or len(keys) == 1):
        raise ValueError(
            f"label_column={label_column!r} is not a label array of {path}: it holds the arrays "
            f"{_list_names(keys)}. Name the array of classes (not 'X'), or label_column=None to take "
            f"{', '.join(repr(k) for k in NPZ_LABEL_KEYS)} beside 'X'."
        )
    if "X" in keys:
        label_key = label_column or next((k for k in NPZ_LABEL_KEYS if k in keys), None)
        return arrays["X"], arrays[label_key] if label_key else None
    if len(keys) == 1:
        return arrays[keys[0]], None
    raise ValueError(
        f"{path} holds arrays {keys}; name the data 'X' (and optionally the classes 'labels'), "
        "e.g. np.savez(path, X=X, labels=labels), or save a single array."
    )


def _read_csv(path: Path, label_column: str | None = None):
    """Features and labels of a comma-separated file (quotes as in the csv module; no comment character)."""
    try:
        return _read_csv_text(path, label_column)
    except UnicodeDecodeError as exc:
        raise ValueError(
            f"{path} is not UTF-8 text ({exc.reason} at byte {exc.start}). Save it as UTF-8 "
            "(e.g. pandas: df.to_csv(path, index=False, encoding='utf-8'))."
        ) from exc


def _read_csv_text(path: Path, label_column: str | None):
    with _open_text(path) as fh:
        reader = csv.reader(fh)
        header = next(reader, None)
        blank_only = header == [] and not any(reader)
    if header is None or blank_only:
        raise ValueError(f"{path} is empty: expected a header row of column names and rows of numbers.")
    if not header:  # csv reads a blank first line as a row of no cells: it has no column names to give
        raise ValueError(
            f"{path} starts with a blank line, where its header row of column names (or first row of numbers) "
            "should be. Delete the blank line(s) at the top of the file."
        )
    header = [h.strip() for h in header]
    if len(header) == 1 and (";" in header[0] or "\t" in header[0]):
        sep = "';'" if ";" in header[0] else "a tab"
        raise ValueError(
            f"{path} separates its columns with {sep}; umapviz reads comma-separated files. Save it with commas "
            "(e.g. pandas: df.to_csv(path, index=False)), with '.' as the decimal point."
        )
    # pandas writes its default column names 0, 1, ..., d-1 as a header row: names, not a row of data.
    pandas_names = header == [str(i) for i in range(len(header))] and len(header) > 1
    has_header = pandas_names or not all(_is_number(h) for h in header)
    names = header if has_header else [f"column {i}" for i in range(len(header))]
    if not has_header and label_column is not None:
        raise ValueError(
            f"label_column={label_column!r}: {path} has no header row (its first row is numbers), so its columns "
            "have no names. Add a header row of column names."
        )
    label_idx = _label_index(names, path, label_column) if has_header else None
    feature_idx = [i for i in range(len(names)) if i != label_idx]
    if not feature_idx:  # the one column is the label column
        raise ValueError(f"{path} has no data columns besides {names[label_idx or 0]!r}.")

    skip = 1 if has_header else 0
    try:
        # Without usecols, loadtxt itself refuses rows longer or shorter than the first (with it, it would drop
        # extra cells); a file with a label column has its rows checked by the pass that reads the labels.
        X = np.loadtxt(
            path,
            delimiter=",",
            skiprows=skip,
            usecols=None if label_idx is None else feature_idx,
            dtype=np.float64,
            ndmin=2,
            quotechar='"',
            comments=None,
            encoding="utf-8-sig",
        )
    except ValueError as exc:
        _column_cells(path, skip, len(names), None)  # a row of the wrong length: say which
        _refuse_bad_cells(path, skip, feature_idx, names, label_idx)
        raise ValueError(f"{path} could not be read as CSV numbers: {exc}") from exc
    if X.size == 0:  # no data rows: loadtxt cannot tell the width without usecols
        X = X.reshape(0, len(feature_idx))
    if not np.isfinite(X).all():  # "nan" and "inf" cells are numbers to loadtxt: said as the blank cells are
        _refuse_bad_cells(path, skip, feature_idx, names, label_idx)
    labels = None
    if label_idx is not None:
        cells, lines = _column_cells(path, skip, len(names), label_idx)  # also refuses rows of the wrong length
        labels = _labels_from_strings(np.array([c.strip() for c in cells]), path, lines=lines)
    # pandas' df.to_csv(path) writes the row index first, under an empty name: not a feature.
    if (
        has_header
        and names[0] in ("", "Unnamed: 0")
        and len(X)
        and label_idx != 0
        and np.array_equal(X[:, 0], np.arange(len(X)))
    ):
        X = X[:, 1:]
        if X.shape[1] == 0:
            raise ValueError(f"{path} holds only a row index; it has no data columns.")
    return X, labels


def _read_parquet(path: Path, label_column: str | None = None):
    try:
        import pyarrow as pa  # noqa: PLC0415 - optional dependency
        import pyarrow.parquet as pq  # noqa: PLC0415
    except ImportError as exc:
        raise ImportError(
            f"Reading {path} needs pyarrow, which is not installed. Install it with `pip install pyarrow` "
            "(or `pip install umapviz[files]`), or save the data as .npy/.npz/.csv."
        ) from exc
    try:
        table = pq.read_table(path)
    except (pa.ArrowException, OSError) as exc:
        raise ValueError(
            f"{path} is not a readable Parquet file ({exc}). Check the file, or save the data as .npy/.npz/.csv."
        ) from exc
    label_idx = _label_index(table.column_names, path, label_column)
    label_name = None if label_idx is None else table.column_names[label_idx]
    # pandas' df.to_parquet(path) stores a non-default row index as __index_level_0__: not a feature.
    features = [c for c in table.column_names if c != label_name and not c.startswith("__index_level_")]
    bad = [
        c
        for c in features
        if not (
            pa.types.is_integer(table.schema.field(c).type)
            or pa.types.is_floating(table.schema.field(c).type)
            or pa.types.is_boolean(table.schema.field(c).type)
        )
    ]
    if bad:
        raise ValueError(
            f"{path}: column(s) {bad} are not numeric. Drop them; if one holds the classes, name it 'label' "
            f"or pick it with label_column={bad[0]!r}."
        )
    if not features:
        raise ValueError(f"{path} has no numeric data columns.")
    if any(table.column(c).null_count for c in features):
        missing = [c for c in features if table.column(c).null_count]
        raise ValueError(f"{path}: column(s) {missing} have missing values. Fill or drop those rows first.")
    X = np.column_stack([table.column(c).to_numpy(zero_copy_only=False).astype(np.float64) for c in features])
    labels = None
    if label_name is not None:
        col = table.column(label_name)
        if pa.types.is_integer(col.type) or pa.types.is_floating(col.type):
            labels = col.to_numpy(zero_copy_only=False)
        else:
            labels = _labels_from_strings(np.asarray(["" if v is None else str(v) for v in col.to_pylist()]), path)
    return X, labels
