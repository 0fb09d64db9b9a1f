"""Checks of a CSV file's cells: which rows and columns hold missing, infinite or text values, said by file line,
and labels read from text cells."""

from __future__ import annotations

import csv
import gzip
from pathlib import Path

import numpy as np


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _open_text(path: Path):
    # utf-8-sig: Excel's "CSV UTF-8" starts with a byte-order mark, which would otherwise stick to the first cell.
    if path.name.lower().endswith(".gz"):
        return gzip.open(path, "rt", newline="", encoding="utf-8-sig")
    return open(path, newline="", encoding="utf-8-sig")  # returned to a with-block


MISSING_LABELS = ("", "na", "nan", "none", "null")


def _column_cells(path: Path, skip: int, width: int, column: int | None) -> tuple[list[str], list[int]]:
    """The cells of one column and the file line of each (none when column is None), checking that every row has
    `width` cells."""
    cells, lines = [], []
    with _open_text(path) as fh:
        reader = csv.reader(fh)
        for _ in range(skip):
            next(reader, None)
        for row in reader:
            if not row:  # blank line
                continue
            if len(row) != width:
                raise ValueError(
                    f"{path}, line {reader.line_num}: {len(row)} cells where the header has {width}. Every row "
                    "needs one value per column."
                )
            if column is not None:
                cells.append(row[column])
                lines.append(reader.line_num)
    return cells, lines


# A feature cell that is blank or a word for "no value" (MISSING_LABELS, any case, "nan" among them) is a missing
# value: a blank cell and a NaN are one problem to the user, so they get one message. Infinite cells are these:
INFINITE_CELLS = ("inf", "+inf", "-inf", "infinity", "+infinity", "-infinity")


def _line_list(lines: list[int], total: int, name: str, most: int = 5) -> str:
    """File lines for a message: "line 4 of d.csv", "lines 3, 5 and 9 of d.csv", "lines 3, 5, ... (12 in all)"."""
    shown = [str(n) for n in lines[:most]]
    if total == 1:
        return f"line {shown[0]} of {name}"
    if total <= most:
        return f"lines {', '.join(shown[:-1])} and {shown[-1]} of {name}"
    return f"lines {', '.join(shown)}, ... ({total:,} in all) of {name}"


def _refuse_bad_cells(path: Path, skip: int, columns: list[int], names: list[str], label_idx: int | None) -> None:
    """ValueError naming each feature column's cells that are not finite numbers, by kind (missing: blank or NaN;
    infinite; text) with their file lines, and what to do; nothing when every cell is a finite number."""
    missing: dict[int, list[int]] = {}
    infinite: dict[int, list[int]] = {}
    text: dict[int, list[tuple[int, str]]] = {}
    with _open_text(path) as fh:
        reader = csv.reader(fh)
        for _ in range(skip):
            next(reader, None)
        for row in reader:
            if not row:
                continue
            for i in columns:
                cell = row[i].strip() if i < len(row) else ""
                word = cell.lower()
                if word in MISSING_LABELS:
                    missing.setdefault(i, []).append(reader.line_num)
                elif word in INFINITE_CELLS:
                    infinite.setdefault(i, []).append(reader.line_num)
                elif not _is_number(cell):
                    text.setdefault(i, []).append((reader.line_num, cell))
    problems = []
    for i, lines in missing.items():
        problems.append(
            f"column {names[i]!r} has {len(lines):,} missing value(s) (empty or NaN cells) on "
            f"{_line_list(lines, len(lines), path.name)}. Fill them in (impute) or drop those rows."
        )
    for i, lines in infinite.items():
        problems.append(
            f"column {names[i]!r} has {len(lines):,} infinite value(s) on "
            f"{_line_list(lines, len(lines), path.name)}. Drop those rows or clip the values."
        )
    if text:
        cols = [names[i] for i in sorted(text)]
        examples = ", ".join(f"{text[i][0][1]!r} on line {text[i][0][0]}" for i in sorted(text))
        if label_idx is not None:
            what = (
                f"Drop them or turn them into numbers: the classes are read from column {names[label_idx]!r} already."
            )
        elif len(cols) == 1:
            what = f"Drop it, or if it holds the classes, pick it with label_column={cols[0]!r}."
        else:
            what = (
                "Drop them, or if one holds the classes, pick it with label_column (one of "
                f"{', '.join(repr(c) for c in cols)})."
            )
        problems.append(
            f"column(s) {', '.join(repr(c) for c in cols)} hold text, not numbers ({examples} of {path.name}). {what}"
        )
    if problems:
        raise ValueError(f"{path}: " + " ".join(problems))


def _refuse_missing_labels(missing: np.ndarray, source: object, lines: list[int] | None = None) -> None:
    """ValueError naming the rows whose label is missing (none: nothing to say): by file line where ``lines``
    gives each data row's line (a CSV file), else by data row counting from 0."""
    if missing.size:
        if lines is not None:
            where = _line_list([lines[r] for r in missing[:10]], missing.size, Path(str(source)).name, most=10)
        else:
            where = "data rows " + ", ".join(str(r) for r in missing[:10]) + (" ..." if missing.size > 10 else "")
            where += ", counting from 0"
        raise ValueError(
            f"{source}: {missing.size} label(s) missing ({where}). Give every row a class, or drop those rows."
        )


def _labels_from_strings(values: np.ndarray, source: object = "labels", lines: list[int] | None = None) -> np.ndarray:
    """Integer labels from text cells: whole numbers keep their values; any other text becomes codes in sorted
    order. Missing cells (empty, NA, NaN, None, null) are an error, not a class of their own, said by file line
    where ``lines`` gives each cell's."""
    missing = np.flatnonzero(np.isin(np.char.lower(values.astype(str)), MISSING_LABELS))
    _refuse_missing_labels(missing, source, lines)
    try:
        return np.array([int(v) for v in values], dtype=np.int64)  # exact, beyond float's 2**53
    except (ValueError, OverflowError):
        pass
    try:
        as_float = values.astype(np.float64)
    except ValueError:
        _, codes = np.unique(values, return_inverse=True)
        return codes
    return as_float
