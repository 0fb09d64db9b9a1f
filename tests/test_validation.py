"""Input checks: each bad input is refused with a message naming the problem and the fix."""

import warnings

import numpy as np
import pytest
import scipy.sparse
from sklearn.datasets import make_blobs

import umapviz
from umapviz import _validation, datasets, metrics
from umapviz._validation import (
    SEED_LIMIT,
    check_data,
    check_finite,
    check_index,
    check_n_epochs,
    check_n_neighbors,
    check_random_state,
    check_range,
    is_integer,
    is_real,
    non_finite_rows,
)


def test_accepts_lists_and_arrays_as_float32_c_contiguous():
    out = check_data([[1, 2], [3, 4], [5, 6]])
    assert out.dtype == np.float32 and out.flags.c_contiguous and out.shape == (3, 2)
    fortran = np.asfortranarray(np.arange(12, dtype=np.float64).reshape(4, 3))
    out = check_data(fortran)
    assert out.flags.c_contiguous and np.array_equal(out, fortran)


def test_accepts_pandas_dataframe_and_numeric_objects():
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"a": [1.0, 2.0, 3.0], "b": [4, 5, 6]})
    assert np.array_equal(check_data(frame), [[1, 4], [2, 5], [3, 6]])
    assert check_data(np.array([[1, 2.5], [3, 4]], dtype=object)).dtype == np.float32


def test_duplicate_rows_are_fine():
    X = np.ones((20, 3))
    assert check_data(X, n_neighbors=15).shape == (20, 3)


def test_nan_and_inf_rows_are_counted_and_located():
    X = np.zeros((50, 3))
    X[[4, 9, 20, 30, 40, 45], 1] = np.nan
    X[7, 0] = np.inf
    with pytest.raises(
        ValueError, match=r"7 row\(s\) with NaN or infinite.*rows \[4, 7, 9, 20, 30, \.\.\.\].*[Dd]rop.*impute"
    ):
        check_data(X)


def test_rows_whose_sum_overflows_are_finite_and_accepted():
    """The NaN/inf scan sums each row first; rows near float32's largest value overflow that sum, yet are data."""

    X = np.random.default_rng(1).normal(size=(40, 8)).astype(np.float32)
    X[3] = 3e38  # sums to inf
    X[5, :2] = [3e38, -3e38]  # sums to 0 after an inf partial sum on some orders: finite either way
    X[11, 4] = np.nan
    X[12, :2] = [np.inf, -np.inf]  # sums to NaN
    assert non_finite_rows(X).tolist() == [11, 12]
    assert check_data(np.delete(X, [11, 12], axis=0), n_neighbors=15).shape == (38, 8)


def test_a_float32_cast_that_blurs_columns_is_warned_about():
    """GPS-like columns (values near 1e6 varying by a few units) kept ~16 float32 steps across their range, and
    the graph was built on that grid without a word."""
    rng = np.random.default_rng(0)
    X = np.column_stack([1e6 + rng.normal(size=300), rng.normal(size=300)])
    with pytest.warns(UserWarning, match=r"1 column\(s\).*column 0.*X - X.mean\(axis=0\)"):
        check_data(X)

    with pytest.warns(UserWarning, match="coarse grid") as record:  # also through the estimator, once
        umapviz.UMAP(n_neighbors=5, n_epochs=5, random_state=0, device="cpu").fit(X)
    assert sum("coarse grid" in str(w.message) for w in record) == 1


@pytest.mark.parametrize(
    "X",
    [
        np.random.default_rng(1).normal(size=(300, 4)),  # float64 near 0
        1e6 + np.arange(1200, dtype=np.float64).reshape(300, 4),  # far from 0 but exact in float32
        np.random.default_rng(2).integers(0, 256, size=(300, 8), dtype=np.uint8),  # pixels
        np.random.default_rng(3).normal(size=(300, 4)).astype(np.float32) + 1e6,  # float32 already: nothing to lose
        np.column_stack([np.full(300, 0.1), np.random.default_rng(4).normal(size=300)]),  # constant: stays constant
    ],
)
def test_casts_that_keep_the_data_are_not_warned_about(X):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_data(X)


def test_values_too_large_for_float32_are_reported():
    X = np.zeros((5, 2))
    X[3, 1] = 1e300
    with pytest.raises(ValueError, match=r"1 row\(s\).*too large for float32.*rows \[3\]"):
        check_data(X)


def test_fewer_points_than_neighbours():
    with pytest.raises(ValueError, match=r"has 5 rows but n_neighbors=15.*at most 5"):
        check_data(np.zeros((5, 2)), n_neighbors=15)
    # One point: "lower n_neighbors to at most 1" pointed at a value n_neighbors refuses
    with pytest.raises(ValueError, match=r"has 1 row: a graph of neighbours needs at least 2 points"):
        check_data(np.zeros((1, 2)), n_neighbors=15)


def test_one_dimensional_input_suggests_reshape():
    with pytest.raises(ValueError, match=r"1-D.*reshape\(-1, 1\).*single sample.*reshape\(1, -1\)"):
        check_data(np.arange(10.0))


@pytest.mark.parametrize("X", [np.empty((0, 3)), np.array([]), []])
def test_empty_input(X):
    with pytest.raises(ValueError, match="empty"):
        check_data(X)


def test_no_columns_and_scalars_and_3d():
    with pytest.raises(ValueError, match="no features"):
        check_data(np.empty((4, 0)))
    with pytest.raises(ValueError, match="0-D"):
        check_data(3.0)
    with pytest.raises(ValueError, match=r"3-D.*reshape\(len\(X\), -1\)"):
        check_data(np.zeros((4, 2, 2)))


def test_non_numeric_data():
    with pytest.raises(TypeError, match="non-numeric"):
        check_data(np.array([["a", "b"], ["c", "d"]]))
    with pytest.raises(TypeError, match="non-numeric"):
        check_data(np.array([[1.0, "x"], [2.0, "y"]], dtype=object))
    with pytest.raises(TypeError, match="complex"):
        check_data(np.ones((3, 2), dtype=complex))


def test_dataframe_with_text_column_is_refused():
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"x": [1.0, 2.0], "label": ["cat", "dog"]})
    with pytest.raises(TypeError, match=r"non-numeric columns \('label'\).*encode"):
        check_data(frame)


def test_dataframe_missing_values_are_reported_as_nan_rows():
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"x": pd.array([1, None, 3, 4], dtype="Int64"), "y": [1.0, 2.0, np.nan, 4.0]})
    with pytest.raises(ValueError, match=r"2 row\(s\) with NaN.*rows \[1, 2\]"):
        check_data(frame)


def test_masked_entries_are_missing_values_and_none_is_named():
    """np.asarray dropped a masked array's mask, so the values under it were laid out as data; None was called
    "a single number (0-D)"."""
    X = np.ma.masked_array(np.arange(12.0).reshape(6, 2), mask=False)
    X[[1, 4], 0] = np.ma.masked
    with pytest.raises(ValueError, match=r"2 row\(s\) with NaN.*rows \[1, 4\]"):
        check_data(X)
    assert check_data(np.ma.masked_array(np.ones((3, 2)), mask=False)).shape == (3, 2)  # nothing masked: fine
    with pytest.raises(TypeError, match="X is None; pass a 2-D array"):
        check_data(None)


def test_sparse_input_is_its_dense_array_and_too_large_a_one_is_refused_with_the_fix(monkeypatch):
    S = scipy.sparse.random(30, 8, density=0.3, format="csr", random_state=0)
    assert np.array_equal(check_data(S), S.toarray().astype(np.float32))
    assert np.array_equal(check_data(S.tocoo()), check_data(S.toarray()))
    monkeypatch.setattr(_validation, "SPARSE_DENSE_MAX_BYTES", 100)
    with pytest.raises(ValueError, match=r"sparse.*TruncatedSVD.*precomputed_knn"):
        check_data(S)


def test_ragged_lists_are_refused():
    with pytest.raises(TypeError, match="2-D numeric array"):
        check_data([[1.0, 2.0], [3.0]])


def test_check_n_neighbors():
    assert check_n_neighbors(np.int64(7)) == 7
    with pytest.raises(ValueError, match="at least 2"):
        check_n_neighbors(1)
    with pytest.raises(TypeError, match="integer"):
        check_n_neighbors(2.5)
    with pytest.raises(TypeError, match="integer"):
        check_n_neighbors(True)


def test_check_n_epochs():
    assert check_n_epochs(None) is None
    assert check_n_epochs(np.int32(200)) == 200
    with pytest.raises(ValueError, match=r"n_epochs=-5.*positive"):
        check_n_epochs(-5)
    with pytest.raises(ValueError, match="positive"):
        check_n_epochs(0)
    with pytest.raises(TypeError, match="positive integer"):
        check_n_epochs(1.5)


@pytest.mark.parametrize(
    "bad, error, message",
    [
        (-1, ValueError, "out of range"),
        (2**32, ValueError, "out of range"),
        (2**63, ValueError, "out of range"),
        (1.5, TypeError, "integer"),
        ("7", TypeError, "integer"),
        (True, TypeError, "integer"),
        (np.random.SeedSequence(0), TypeError, "Generator / RandomState"),
    ],
)
def test_every_entry_point_checks_random_state_alike(bad, error, message):
    """One range everywhere ([0, 2**32)): a seed the graph stage takes, the layout takes too, and two seeds
    never collide (a 63-bit mask made 2**63 the seed 0)."""

    X = np.random.default_rng(0).normal(size=(60, 4)).astype(np.float32)
    graph = umapviz.build_graph(X, n_neighbors=5, cache=False)
    calls = [
        lambda: datasets.load("mixture", n_samples=100, random_state=bad),
        lambda: umapviz.build_graph(X, n_neighbors=5, cache=False, random_state=bad),
        lambda: umapviz.LayoutOptimizer(graph, random_state=bad),
        lambda: umapviz.UMAP(n_neighbors=5, random_state=bad).fit_transform(X),
        lambda: metrics.trustworthiness(X, X[:, :2], sample=10, random_state=bad),
    ]
    for call in calls:
        with pytest.raises(error, match=message):
            call()


def test_the_largest_seed_is_taken_and_differs_from_zero():
    X = np.random.default_rng(0).normal(size=(60, 4)).astype(np.float32)
    graph = umapviz.build_graph(X, n_neighbors=5, cache=False)
    top = umapviz.LayoutOptimizer(graph, random_state=2**32 - 1, init="random").run().embedding
    zero = umapviz.LayoutOptimizer(graph, random_state=0, init="random").run().embedding
    assert not np.array_equal(top, zero)


# --- NumPy generators as random_state (scikit-learn's convention) ----------------------------------------------


def _drawn(rng) -> int:
    """The seed check_random_state draws from a fresh copy of ``rng``'s kind (a documented rule, pinned here)."""
    return int(
        rng.randint(0, SEED_LIMIT, dtype=np.uint32)
        if isinstance(rng, np.random.RandomState)
        else rng.integers(0, SEED_LIMIT, dtype=np.uint32)
    )


@pytest.mark.parametrize("make", [np.random.RandomState, np.random.default_rng])
def test_a_generator_gives_one_drawn_seed_per_call(make):
    assert check_random_state(make(0)) == check_random_state(make(0)) == _drawn(make(0))  # fresh: same seed
    shared = make(0)
    first, second = check_random_state(shared), check_random_state(shared)
    assert first != second  # a shared generator advances
    assert all(type(s) is int and 0 <= s < SEED_LIMIT for s in (first, second))
    assert check_random_state(np.int64(7)) == 7 and check_random_state(None) is None  # ints and None as before


def _blobs(n=400, d=6, seed=0):
    X, _ = make_blobs(n, n_features=d, centers=3, random_state=seed)
    return X.astype(np.float32)


@pytest.mark.parametrize("make", [np.random.RandomState, np.random.default_rng])
def test_umap_takes_a_generator_drawing_one_seed_per_fit_for_both_stages(make):
    X = _blobs()

    def fit(random_state):
        return umapviz.UMAP(n_neighbors=10, n_epochs=30, init="random", random_state=random_state, device="cpu").fit(X)

    first, again = fit(make(0)), fit(make(0))
    assert first.embedding_.tobytes() == again.embedding_.tobytes()  # a fresh generator repeats its bytes
    seed = _drawn(make(0))
    assert first.optimizer_.seed == first.fuzzy_graph_.params["random_state"] == seed  # one draw, both stages
    assert fit(seed).embedding_.tobytes() == first.embedding_.tobytes()  # the same as passing that int
    shared = make(0)
    est = umapviz.UMAP(n_neighbors=10, n_epochs=30, init="random", random_state=shared, device="cpu")
    one = est.fit(X).embedding_
    two = est.fit(X).embedding_
    assert one.tobytes() != two.tobytes() and est.optimizer_.seed != seed  # a shared generator: a new draw per fit
    assert est.get_params()["random_state"] is shared  # the parameter itself is left as given


def test_layout_optimizer_takes_a_generator_and_keeps_its_seed_on_reset(small_graph):
    opt = umapviz.LayoutOptimizer(small_graph, init="random", random_state=np.random.default_rng(3))
    assert opt.seed == _drawn(np.random.default_rng(3))
    first = opt.run().embedding
    opt.reset()
    assert opt.run().embedding.tobytes() == first.tobytes()
    same = umapviz.LayoutOptimizer(small_graph, init="random", random_state=opt.seed).run().embedding
    assert same.tobytes() == first.tobytes()


@pytest.mark.parametrize(
    "kwargs, expected",
    [
        ({"init": "random", "strategy": "sequential"}, "bbc0ef79809b4042"),
        ({"init": "random"}, "8db35a04629fef39"),  # chunked, n_chunks="auto" (its rule is part of the pin)
    ],
)
def test_int_seeds_keep_their_pinned_bytes(kwargs, expected):
    """A regression pin: these fingerprints are what the layout arithmetic of docs/optimizer.md (pow_portable, no
    contraction) gives for int seeds, the same on every CPU, thread count and GPU (random init keeps the
    eigen-solver out: these bytes depend on the layout code and, for the default strategy, the n_chunks rule). A
    change here changes every seeded result. bench/experiments/pow_twin_pins.py recomputes both with the GPU twin's
    power function compiled as host code."""

    X = _blobs(500, 8, seed=1)
    emb = umapviz.UMAP(n_neighbors=10, n_epochs=50, random_state=0, device="cpu", **kwargs).fit_transform(X)
    assert metrics.fingerprint(emb) == expected


def test_integers_and_reals_are_python_or_numpy_numbers_but_never_bools():
    assert all(is_integer(v) for v in (0, -3, np.int64(5), np.uint8(2)))
    assert not any(is_integer(v) for v in (True, np.bool_(True), 1.0, "1", None, np.float32(2)))
    assert all(is_real(v) for v in (0, 2.5, np.float32(1.5), np.int16(3)))
    assert not any(is_real(v) for v in (False, "2.5", None, 1j))


def test_check_index_counts_from_the_end_and_refuses_the_rest():
    assert [check_index(i, 5) for i in (0, 4, -1, -5, np.int64(2))] == [0, 4, 4, 0, 2]
    for bad in (5, -6):
        with pytest.raises(IndexError, match=rf"index={bad} is out of range: the layout has 5 points \(0 to 4\)"):
            check_index(bad, 5)
    for bad in (True, 1.0, "1", None):
        with pytest.raises(TypeError, match="must be an integer"):
            check_index(bad, 5)
    with pytest.raises(IndexError, match="point=0 is out of range"):
        check_index(0, 0, name="point")


def test_check_range_takes_an_ordered_pair_and_refuses_a_reversed_one():
    """One rule for every (low, high) of the package: a pair given high first is refused (not swapped)."""
    assert check_range("x_range", (-1, 2.5)) == (-1.0, 2.5)
    assert check_range("x_range", np.array([0.0, 1.0])) == (0.0, 1.0)
    assert check_range("x_range", (1, 1), allow_empty=True) == (1.0, 1.0)
    for bad, words in (
        ((2, 1), "x_range=.*low < high"),
        ((1, 1), "x_range=.*low < high"),
        ((0, np.inf), "x_range=.*finite"),
        ((np.nan, 1), "x_range=.*finite"),
        ((-1e308, 1e308), "x_range=.*finite interval"),  # its width overflows
        ((0, True), "x_range=.*pair"),
        (("0", "1"), "x_range=.*pair"),
        ((0,), "x_range=.*pair"),
        ("wide", "x_range=.*pair"),
        (None, "x_range=.*pair"),
    ):
        with pytest.raises(ValueError, match=words):
            check_range("x_range", bad)
    with pytest.raises(ValueError, match=r"y_range=\(2, 1\).*low <= high"):
        check_range("y_range", (2, 1), allow_empty=True)


def test_check_finite():
    assert check_finite("x", np.float32(0.5)) == 0.5
    for bad in (np.nan, np.inf, True, "1", None):
        with pytest.raises(ValueError, match="x must be a finite number"):
            check_finite("x", bad)
