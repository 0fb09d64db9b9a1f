"""Input checks shared by the engine: each bad input gets an error that names the problem and the fix."""

from __future__ import annotations

import numbers
import warnings
from typing import Any

import numpy as np

from ._backend import is_cupy, xp_of
from ._host_data import row_blocks


class InvalidParameterError(ValueError, TypeError):
    """A parameter of the wrong type: a ValueError by scikit-learn's convention for bad parameter values (its own
    InvalidParameterError has the same two bases), and a TypeError as Python reports a wrong type."""


def is_integer(value: Any) -> bool:
    """Whether ``value`` is an integer (Python's or NumPy's) and not a bool: ``True`` is a mistake, not a count."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def is_real(value: Any) -> bool:
    """Whether ``value`` is a real number (int or float, Python's or NumPy's) and not a bool."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def check_finite(name: str, value: Any) -> float:
    """``value`` as a finite Python float; a bool, a string, NaN or an infinity is refused (ValueError)."""
    if not is_real(value) or not np.isfinite(float(value)):
        raise ValueError(f"{name} must be a finite number, got {value!r}.")
    return float(value)


def check_index(value: Any, n: int, name: str = "index") -> int:
    """``value`` as a row of ``n`` points, in ``[0, n)`` (a negative index counts from the end, as in Python).

    Parameters
    ----------
    value : int
        The index; a bool, a float or a string is refused (TypeError), one outside ``[-n, n)`` too (IndexError).
    n : int
        Points there are.
    name : str
        The argument's name, for the messages.
    """
    if not is_integer(value):
        raise TypeError(f"{name}={value!r} must be an integer, a point's row ({type(value).__name__} given).")
    if not -n <= value < n:
        raise IndexError(f"{name}={int(value)} is out of range: the layout has {n:,} points (0 to {n - 1:,}).")
    return int(value) % n


def check_range(name: str, value: Any, allow_empty: bool = False) -> tuple[float, float]:
    """``value`` as a ``(low, high)`` pair of finite floats with ``low < high`` (``low <= high`` with
    ``allow_empty``: a box of no width may select the points on its line). One rule everywhere: a pair given
    high first is refused, not swapped, since it is more often a mistake than a wish.

    Parameters
    ----------
    name : str
        The argument's name, for the messages.
    value : pair of float
        The interval.
    allow_empty : bool
        Accept ``low == high``.
    """
    try:
        low, high = value
    except (TypeError, ValueError):
        raise ValueError(f"{name}={value!r} must be a pair (low, high) of finite numbers.") from None
    if not (is_real(low) and is_real(high)) or not all(np.isfinite([float(low), float(high)])):
        raise ValueError(f"{name}={value!r} must be a pair (low, high) of finite numbers.")
    low, high = float(low), float(high)
    if low > high or (low == high and not allow_empty) or not np.isfinite(high - low):
        order = "low <= high" if allow_empty else "low < high"
        raise ValueError(f"{name}={value!r} must be a finite interval with {order} (give the low end first).")
    return low, high


def renamed(old: str, new: str, old_value: Any, new_value: Any, unset: Any = None) -> Any:
    """The value of a keyword argument renamed from ``old`` to ``new``: ``new_value``, or ``old_value`` with a
    DeprecationWarning where only the old name was given (``unset``: what an argument left out holds). Both given
    is a TypeError. Old names stay for one release (CHANGELOG.md lists them).

    Parameters
    ----------
    old, new : str
        The old and the new name.
    old_value, new_value : object
        What the caller passed under each.
    unset : object
        The default both take when left out.
    """
    if old_value is unset:
        return new_value
    if new_value is not unset:
        raise TypeError(f"{old}= and {new}= name one argument; pass {new}= only ({old}= is its deprecated name).")
    warnings.warn(
        f"{old}= is deprecated and will be removed in the next release; use {new}= instead.",
        DeprecationWarning,
        stacklevel=3,
    )
    return old_value


def check_int(name: str, value: Any, minimum: int | None = None) -> int:
    """``value`` as a Python int (>= ``minimum`` when given): 5.7, "5" or True is a mistake to report, not a count
    to round or convert."""
    if not is_integer(value):
        raise InvalidParameterError(f"{name} must be an integer, got {value!r} ({type(value).__name__}).")
    if minimum is not None and value < minimum:
        raise ValueError(f"{name}={value} is out of range: it must be >= {minimum}.")
    return int(value)


def check_n_neighbors(n_neighbors: Any) -> int:
    """``n_neighbors`` as a Python int >= 2 (the count includes the point itself)."""
    if not is_integer(n_neighbors):
        raise InvalidParameterError(
            f"n_neighbors must be an integer, got {n_neighbors!r} ({type(n_neighbors).__name__}). "
            "Pass a whole number such as n_neighbors=15."
        )
    n_neighbors = int(n_neighbors)
    if n_neighbors < 2:
        raise ValueError(
            f"n_neighbors={n_neighbors} is too small: it counts the point itself, so at least 2 are needed "
            "for any edge. Use n_neighbors >= 2 (15 is the usual default)."
        )
    return n_neighbors


def check_n_epochs(n_epochs: Any) -> int | None:
    """``n_epochs`` as a positive int, or None (meaning: choose by data size)."""
    if n_epochs is None:
        return None
    if not is_integer(n_epochs):
        raise InvalidParameterError(
            f"n_epochs must be a positive integer or None, got {n_epochs!r} ({type(n_epochs).__name__})."
        )
    if n_epochs < 1:
        raise ValueError(
            f"n_epochs={int(n_epochs)} is not allowed: it must be a positive integer. "
            "Pass n_epochs >= 1, or n_epochs=None for the default (500 up to 10,000 points, else 200)."
        )
    return int(n_epochs)


def check_positive_float(name: str, value: Any, usual: str = "", allow_zero: bool = False) -> float:
    """``value`` as a finite Python float > 0 (>= 0 with ``allow_zero``). Strings, bools and None are refused
    rather than converted, as for the integer parameters: ``"1"`` or ``True`` is a mistake, not a number."""
    hint = f" ({usual})" if usual else ""
    if not is_real(value):
        raise InvalidParameterError(
            f"{name} must be a number, got {value!r} ({type(value).__name__}). Pass a finite number{hint}."
        )
    v = float(value)
    if not np.isfinite(v) or v < 0 or (v == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{name}={value!r} is out of range: it must be a finite number {bound}{hint}.")
    return v


SEED_LIMIT = 2**32  # seeds are < 2**32, as NumPy's legacy seeding, scikit-learn and pynndescent require

# What a ``random_state`` may be: a seed, None, or a NumPy generator to draw a seed from (scikit-learn's convention).
RandomStateLike = int | np.integer | np.random.RandomState | np.random.Generator | None


def check_random_state(random_state: Any) -> int | None:
    """``random_state`` as a Python int in [0, 2**32), or None (a fresh seed each run). One range everywhere, so a
    seed that builds the graph also lays it out, and two different seeds never collide.

    A ``numpy.random.RandomState`` or ``numpy.random.Generator`` gives one seed drawn from it (a uniform 32-bit
    integer), so each call advances it: a freshly made ``RandomState(0)`` gives the same seed every time, a shared
    generator a new one per call, as in scikit-learn. An int is returned as it is, so its results never change.
    """
    if random_state is None:
        return None
    if isinstance(random_state, np.random.Generator):
        return int(random_state.integers(0, SEED_LIMIT, dtype=np.uint32))
    if isinstance(random_state, np.random.RandomState):
        return int(random_state.randint(0, SEED_LIMIT, dtype=np.uint32))
    if not is_integer(random_state):
        raise InvalidParameterError(
            f"random_state must be an int, None, or a numpy.random.Generator / RandomState, got {random_state!r} "
            f"({type(random_state).__name__}). Pass an integer such as random_state=0 for a reproducible run."
        )
    if not 0 <= random_state < SEED_LIMIT:
        raise ValueError(f"random_state={int(random_state)} is out of range: use an integer from 0 to 2**32 - 1.")
    return int(random_state)


def describe_rows(rows: Any, limit: int = 5) -> str:
    """The first few row indices of ``rows`` as "[3, 7, ...]", for error messages."""
    shown = ", ".join(str(int(r)) for r in rows[:limit])
    return f"[{shown}{', ...' if rows.size > limit else ''}]"


def non_finite_rows(X: Any) -> Any:
    """Indices of rows holding NaN or +-inf (X is a 2-D float array, NumPy or CuPy; the result lives beside it)."""
    xp = xp_of(X)
    # Each row's sum, by BLAS (threaded, no cast or mask of X): a row with NaN or inf sums to NaN or inf. A row
    # of large finite values can overflow too, so only the rows whose sum is not finite are checked entry by entry.
    with np.errstate(over="ignore", invalid="ignore"):
        sums = X @ xp.ones(X.shape[1], dtype=X.dtype)
    suspects = xp.flatnonzero(~xp.isfinite(sums))
    return suspects[~xp.isfinite(X[suspects]).all(axis=1)]


def check_data(
    X: Any, *, n_neighbors: int | None = None, name: str = "X", reference: np.ndarray | None = None
) -> np.ndarray:
    """Validate a data matrix and return it as float32, C-contiguous, shape (n_samples, n_features).

    Accepts anything ``np.asarray`` takes (NumPy arrays, nested lists, pandas DataFrames) and CuPy arrays
    (copied to the host). Duplicate rows are fine. Raises with a message naming the problem and the fix for
    sparse, non-numeric, complex, 0-/1-/3-D or empty input, NaN/inf rows, and fewer rows than ``n_neighbors``.
    ``reference`` marks X as new data for a fitted model (one row is then enough) and, holding the fit's data,
    gives the column ranges the float32-loss warning measures against; by default X's own.

    A float32, C-ordered memory map (``np.load(path, mmap_mode="r")``) is returned as it is, checked a block of
    rows at a time (:func:`umapviz._host_data.row_blocks`), so the file is not loaded into memory; another dtype
    or order is converted to a float32 array in memory.
    """
    if X is None:  # np.asarray(None) is a 0-D object array, reported as "a single number"
        raise TypeError(f"{name} is None; pass a 2-D array of shape (n_samples, n_features).")
    if np.ma.isMaskedArray(X) and np.ma.getmaskarray(X).any() and X.dtype.kind in "biuf":
        # np.asarray drops the mask and keeps the values under it: masked entries are missing values, so they are
        # reported as NaN rows, as pandas' NA is.
        X = X.astype(np.float64).filled(np.nan)
    if hasattr(X, "tocsr") and hasattr(X, "nnz"):
        X = dense_from_sparse(X, name)
    if is_cupy(X):
        X = X.get()
    if hasattr(X, "dtypes") and hasattr(X, "columns"):  # a pandas DataFrame
        try:
            # Nullable columns (pd.NA) become NaN here, so they are reported as missing values below.
            X = X.to_numpy(dtype=np.float64, na_value=np.nan)
        except (TypeError, ValueError) as exc:
            text = [str(col) for col, dt in X.dtypes.items() if getattr(dt, "kind", "O") not in "biuf"]
            shown = ", ".join(map(repr, text[:5])) + (", ..." if len(text) > 5 else "")
            raise TypeError(
                f"{name} has non-numeric columns ({shown}). Pass numbers only: drop those columns, or encode "
                "categories as numbers (e.g. one-hot) and convert with .astype(float)."
            ) from exc
    try:
        arr = np.asarray(X)
    except Exception as exc:  # ragged lists and the like
        raise TypeError(
            f"{name} could not be read as a 2-D numeric array ({exc.__class__.__name__}: {exc}). "
            "Pass a NumPy array, a list of equal-length rows, or a pandas DataFrame of numbers."
        ) from exc

    kind = arr.dtype.kind
    if kind in "USV":
        raise TypeError(
            f"{name} holds non-numeric data (dtype {arr.dtype}). Pass numbers only: drop text columns, or "
            "encode categories as numbers (e.g. one-hot) and convert with .astype(float)."
        )
    if kind == "c":
        raise TypeError(
            f"{name} holds complex numbers (dtype {arr.dtype}); distances need real values. "
            f"Pass e.g. np.abs({name}) or np.hstack([{name}.real, {name}.imag])."
        )
    if kind in "mM":
        raise TypeError(
            f"{name} holds dates or time spans (dtype {arr.dtype}). Convert them to numbers first, "
            "e.g. seconds with .astype('int64') or features such as day of year."
        )
    if kind == "O":
        try:
            arr = arr.astype(np.float64)
        except (TypeError, ValueError) as exc:
            raise TypeError(
                f"{name} holds non-numeric values (dtype object: {exc}). Pass numbers only: drop text "
                "columns, or encode categories as numbers and convert with .astype(float)."
            ) from exc

    if arr.ndim == 0:
        raise ValueError(f"{name} is a single number (0-D); pass a 2-D array of shape (n_samples, n_features).")
    at_least = "at least n_neighbors rows" if reference is None else "at least one row"
    if arr.ndim == 1:
        if arr.size == 0:
            raise ValueError(f"{name} is empty (shape {arr.shape}); pass {at_least} of data.")
        raise ValueError(
            f"{name} is 1-D (shape {arr.shape}); a 2-D array (n_samples, n_features) is needed. "
            f"If each value is one sample of one feature, use {name}.reshape(-1, 1); if it is a single sample, "
            f"{name}.reshape(1, -1)."
        )
    if arr.ndim > 2:
        raise ValueError(
            f"{name} is {arr.ndim}-D (shape {arr.shape}); a 2-D array (n_samples, n_features) is needed. "
            f"Flatten each sample, e.g. {name}.reshape(len({name}), -1)."
        )
    n_samples, n_features = arr.shape
    if n_samples == 0:
        raise ValueError(f"{name} is empty (shape {arr.shape}, no rows); pass {at_least} of data.")
    if n_features == 0:
        raise ValueError(f"{name} has no features (shape {arr.shape}, no columns); pass at least one column.")

    if isinstance(X, np.memmap) and X.dtype == np.float32 and X.flags.c_contiguous:
        out = X  # host data stays a memory map: its checks read a block of rows at a time, not the whole file
    else:
        with np.errstate(over="ignore"):  # overflow to inf is reported just below, by row
            out = np.ascontiguousarray(arr, dtype=np.float32)

    # A block of rows at a time: a memory-mapped file's pages are released as the check passes (row_blocks).
    bad = np.concatenate([non_finite_rows(block) + start for start, block in row_blocks(out)])
    if bad.size:
        overflow = np.isfinite(np.asarray(arr[bad[:1]], dtype=np.float64)).all()
        why = " (values too large for float32)" if overflow else ""
        stage = "building the graph" if reference is None else "transform"
        raise ValueError(
            f"{name} has {bad.size} row(s) with NaN or infinite values{why}, e.g. rows {describe_rows(bad)} "
            "(counting from 0). "
            f"Drop them (e.g. {name}[np.isfinite({name}).all(axis=1)]) or impute them "
            f"(e.g. sklearn.impute.SimpleImputer) before {stage}."
        )

    if arr.dtype != np.float32:
        warn_float32_loss(arr, out, name, reference=reference)
    if n_neighbors is not None:
        n_neighbors = check_n_neighbors(n_neighbors)
        if n_samples < 2:  # n_neighbors >= 2, so "lower n_neighbors" would be no way out
            raise ValueError(f"{name} has {n_samples} row: a graph of neighbours needs at least 2 points.")
        if n_samples < n_neighbors:
            raise ValueError(
                f"{name} has {n_samples} rows but n_neighbors={n_neighbors} (which counts the point itself) "
                f"needs at least that many. Lower n_neighbors to at most {n_samples}, or pass more data."
            )
    return out


FLOAT32_LOSS_SHARE = 1e-3  # warn when the float32 cast moves values by more than this share of a column's range
_FLOAT32_LOSS_ROWS = 20_000  # rows the check looks at (the first ones): enough to see an offset, cheap at any n


# A sparse matrix is searched as the dense array it stands for up to this many float32 bytes: the searches then give
# the dense array's graph, bit for bit.
SPARSE_DENSE_MAX_BYTES = 2**30


def dense_from_sparse(X: Any, name: str = "X") -> np.ndarray:
    """A scipy.sparse matrix (CSR, CSC, COO, ...) as the dense array it stands for, when that takes at most
    SPARSE_DENSE_MAX_BYTES as float32; a ValueError naming the fix beyond.

    Parameters
    ----------
    X : scipy.sparse matrix or array
        The sparse data.
    name : str
        Its name in messages.
    """
    n, d = X.shape
    if 4 * n * d > SPARSE_DENSE_MAX_BYTES:
        raise ValueError(
            f"{name} is a sparse {n:,} x {d:,} matrix, {4 * n * d / 2**30:.1f} GiB as dense float32: more than the "
            f"{SPARSE_DENSE_MAX_BYTES / 2**30:.0f} GiB the kit searches densely. Reduce its dimension first (e.g. "
            "sklearn.decomposition.TruncatedSVD(100).fit_transform(X)), or compute the kNN yourself (pynndescent "
            "takes sparse input) and pass precomputed_knn."
        )
    return np.asarray(X.toarray())


def warn_float32_loss(arr: np.ndarray, out: np.ndarray, name: str = "X", reference: np.ndarray | None = None) -> None:
    """Warn when casting ``arr`` to float32 (``out``) blurs a column: values far from zero that vary little (GPS
    coordinates, timestamps) keep only a few float32 steps across their range, and the kNN graph then sees a
    coarse grid instead of the data. Checked on the first rows; the fix is to centre the columns first.

    A column's range is that of its first rows, or of ``reference``'s when it has the same columns (the fitted
    data, for new points: a single new row has no range of its own). A constant column is never blurred: it stays
    constant, and distances do not change.
    """
    rows = slice(0, min(len(arr), _FLOAT32_LOSS_ROWS))
    original = np.asarray(arr[rows], dtype=np.float64)
    error = np.abs(out[rows].astype(np.float64) - original).max(axis=0)
    ranged = original
    if reference is not None and reference.ndim == 2 and reference.shape[1] == original.shape[1]:
        ranged = np.asarray(reference[:_FLOAT32_LOSS_ROWS], dtype=np.float64)
    span = ranged.max(axis=0) - ranged.min(axis=0)
    blurred = np.flatnonzero((error > FLOAT32_LOSS_SHARE * span) & (span > 0))
    if blurred.size:
        j = int(blurred[0])
        warnings.warn(
            f"{name}: umapviz computes in float32, and the cast moves values in {blurred.size} column(s) by more "
            f"than {FLOAT32_LOSS_SHARE:.1%} of their range (e.g. column {j}: values near "
            f"{float(np.abs(original[:, j]).max()):.7g} spanning only {float(span[j]):.3g}), so the neighbours "
            "are found on a coarse grid. Centre the columns first, e.g. X - X.mean(axis=0) (euclidean distances "
            "stay the same).",
            UserWarning,
            stacklevel=3,
        )
