"""Histogram releases: exact counting, fused noise, accuracy, bad input, bounded memory."""
import numpy as np
import pytest
from scipy import stats

import dpfast as dp
from dpfast import _native
from dpfast.noise import real_laplace
from dpfast.releases import histograms
from refusals import rng_state, spends_nothing

# At epsilon = 1e6 the noise scale is 1e-6, and |K| >= 1 would need U < exp(-1e6): beyond
# the sampler's deepest binade (2^-1099), so these releases are the exact counts.
EXACT = dict(epsilon=1e6)


def acct():
    return dp.Accountant()


# -- counting is exact ---------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.int16, np.uint8, np.float64,
                                   np.float32])
@pytest.mark.parametrize("bins, rng_pair", [(10, (0, 100)), (7, (-3.5, 91.25)), (100, (0, 100)),
                                            ([0, 1, 5, 17.5, 60, 99], None)])
def test_counts_equal_numpy_histogram(dtype, bins, rng_pair):
    gen = np.random.default_rng(1)
    data = (gen.normal(50, 40, size=200_000)).astype(dtype)     # many values outside
    # dpfast's edges are float64 whatever the data (numpy uses float32 edges for float32
    # data); float32 values are compared exactly, as float64.
    ref = data.astype(np.float64) if data.dtype == np.float32 else data
    for threads in (1, 2):
        got, edges = dp.histogram(data, bins=bins, range=rng_pair, accountant=acct(),
                                  threads=threads, **EXACT)
        want, want_edges = np.histogram(ref, bins=bins, range=rng_pair)
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(edges, want_edges)


def test_edges_and_last_bin_rules_match_numpy():
    data = np.array([0.0, 0.1, 0.2, 0.3, 1.0, 1.0000001, -1e-300, 0.7, 0.9999999999999999])
    got, _ = dp.histogram(data, bins=10, range=(0, 1), accountant=acct(), **EXACT)
    np.testing.assert_array_equal(got, np.histogram(data, bins=10, range=(0, 1))[0])


def test_histogramdd_equals_numpy():
    gen = np.random.default_rng(2)
    sample = gen.normal(size=(300_000, 3))
    bins = [8, np.array([-3, -1, 0, 0.5, 4.0]), 5]
    ranges = [(-2, 2), None, (-1, 3)]
    got, edges = dp.histogramdd(sample, bins, range=ranges, accountant=acct(), **EXACT)
    want, want_edges = np.histogramdd(sample, bins=[8, bins[1], 5],
                                      range=[(-2, 2), (-3, 4), (-1, 3)])
    np.testing.assert_array_equal(got, want)
    for a, b in zip(edges, want_edges):
        np.testing.assert_array_equal(a, b)
    # A sequence of columns is accepted as in numpy.
    cols = [sample[:, 0], sample[:, 2]]
    got2, _ = dp.histogramdd(cols, [4, 4], range=[(-2, 2), (-1, 3)], accountant=acct(),
                             **EXACT)
    np.testing.assert_array_equal(got2, np.histogramdd(np.stack(cols, 1), bins=[4, 4],
                                                       range=[(-2, 2), (-1, 3)])[0])


def test_large_tables_use_shared_atomic_counts():
    gen = np.random.default_rng(3)
    codes = gen.integers(0, 3_000_000, size=2_000_000)
    assert 3_000_000 > _native.PRIVATE_CELLS
    got = _native.count_codes(codes, 3_000_000, 2)
    np.testing.assert_array_equal(got, np.bincount(codes, minlength=3_000_000))


@pytest.mark.parametrize("ncells", [1000, 3_000_000])        # private tables / shared atomic
def test_counts_do_not_depend_on_threads_or_blocks(ncells):
    # 1.1 M records: five blocks of uneven size, more blocks than threads and fewer.
    codes = np.random.default_rng(5).integers(0, ncells, size=1_100_000)
    want = np.bincount(codes, minlength=ncells)
    for threads in (1, 2, 3, 5, 8):
        np.testing.assert_array_equal(_native.count_codes(codes, ncells, threads), want)


# -- fused noise ---------------------------------------------------------------------------
def test_release_is_counts_plus_discrete_laplace_and_thread_invariant():
    gen = np.random.default_rng(4)
    data = gen.integers(0, 1000, size=3_000_000)
    exact = np.bincount(data, minlength=1000)
    outs = [dp.histogram(data, bins=1000, range=(0, 1000), epsilon=0.5, accountant=acct(),
                         rng=9, threads=t)[0] for t in (1, 2, 3)]
    for o in outs[1:]:
        np.testing.assert_array_equal(o, outs[0])
    np.testing.assert_array_equal(outs[0], exact + dp.discrete_laplace(2.0, 1000, rng=9))


def test_accuracy_bound_holds_over_1000_releases():
    # 1,000 releases of a 10,000-cell histogram at epsilon = 1: the max error may exceed
    # max_error_bound(beta=0.05) in at most 5% of them. The exact exceedance probability of
    # the bound is 3.2% here, so a count above 50 has probability 2e-3 for a random seed
    # (binomial tail); this seed is fixed.
    k, eps, beta = 10_000, 1.0, 0.05
    bound = dp.max_error_bound(k, epsilon=eps, beta=beta)
    data = np.random.default_rng(5).integers(0, k, size=200_000)
    exact = np.bincount(data, minlength=k)
    g = dp.ChaCha20(6)
    noise = np.empty((1000, k), dtype=np.int64)
    for r in range(1000):
        noise[r] = dp.histogram(data, bins=k, range=(0, k), epsilon=eps, accountant=acct(),
                                rng=g)[0] - exact
    exceed = (np.abs(noise).max(axis=1) > bound).mean()
    assert exceed <= beta
    # The noise itself follows the discrete Laplace PMF: chi-square, false alarm 1e-4.
    a = np.exp(-eps)
    values, counts = np.unique(np.clip(noise, -12, 12), return_counts=True)
    pmf = (1 - a) / (1 + a) * a ** np.abs(np.arange(-12, 13))
    pmf[0] = pmf[-1] = a**12 / (1 + a)            # tails |K| >= 12 merged into the ends
    assert values.tolist() == list(range(-12, 13))
    expected = pmf / pmf.sum() * noise.size
    chi2 = ((counts - expected) ** 2 / expected).sum()
    assert chi2 < stats.chi2.ppf(1 - 1e-4, df=len(values) - 1)


def test_max_error_bound_values():
    assert dp.max_error_bound(10_000, epsilon=1.0) == 12
    assert dp.max_error_bound(1, epsilon=1e6) == 0
    assert abs(dp.max_error_bound(10_000, epsilon=1.0, discrete=False)
               - np.log(10_000 / 0.05)) < 1e-12
    # Exactness: the tail at the bound is <= beta and one less would exceed it.
    for k, eps, beta in [(1, 0.1, 0.05), (100, 0.5, 0.01), (10**6, 2.0, 0.2)]:
        j = dp.max_error_bound(k, epsilon=eps, beta=beta)
        a = np.exp(-eps)
        exceed = lambda m: 1 - (1 - 2 * a ** (m + 1) / (1 + a)) ** k
        assert exceed(j) <= beta < exceed(j - 1)
    with pytest.raises(ValueError, match="'k'"):
        dp.max_error_bound(0, epsilon=1.0)
    with pytest.raises(ValueError, match="'beta'"):
        dp.max_error_bound(5, epsilon=1.0, beta=1.0)


# -- post-processing option ----------------------------------------------------------------
def test_postprocess_options():
    data = np.repeat(np.arange(50), np.arange(50) % 3)         # many tiny and empty cells
    clipped, _ = dp.histogram(data, bins=50, range=(0, 50), epsilon=0.2, accountant=acct(),
                              rng=1, postprocess="clip")
    raw, _ = dp.histogram(data, bins=50, range=(0, 50), epsilon=0.2, accountant=acct(), rng=1)
    np.testing.assert_array_equal(clipped, np.maximum(raw, 0))
    cons, _ = dp.histogram(data, bins=50, range=(0, 50), epsilon=0.2, accountant=acct(),
                           rng=1, postprocess="consistent", total=data.size)
    assert (cons >= 0).all() and cons.sum() == data.size and cons.dtype == np.int64


# -- noisy_counts ---------------------------------------------------------------------------
def test_noisy_counts_blockwise_equals_one_shot(monkeypatch, tmp_path):
    monkeypatch.setattr(histograms, "BLOCK", 1 << 17)           # several blocks, quickly
    table = np.random.default_rng(7).integers(-5, 10**6, size=(700, 1000))
    one_shot = dp.noisy_counts(table, epsilon=0.3, accountant=acct(), rng=11)
    monkeypatch.setattr(histograms, "BLOCK", 1 << 16)
    mm = np.lib.format.open_memmap(tmp_path / "t.npy", mode="w+", dtype=np.int32,
                                   shape=table.shape)
    mm[:] = table
    res = dp.noisy_counts(mm, epsilon=0.3, out=mm, accountant=acct(), rng=11)
    assert res is mm
    np.testing.assert_array_equal(np.asarray(mm), one_shot)
    in_place = table.copy()
    dp.noisy_counts(in_place, epsilon=0.3, out=in_place, accountant=acct(), rng=11)
    np.testing.assert_array_equal(in_place, one_shot)
    np.testing.assert_array_equal(one_shot, table + dp.discrete_laplace(1 / 0.3, table.shape,
                                                                        rng=11))


def test_noisy_counts_float_and_thread_invariance():
    table = np.linspace(0, 1000, 300_000).reshape(300, 1000)
    outs = [dp.noisy_counts(table, epsilon=0.5, sensitivity=2.0, accountant=acct(), rng=3,
                            threads=t) for t in (1, 2)]
    np.testing.assert_array_equal(outs[0], outs[1])
    # Every cell may change (sensitivity is the whole table's): the grid keeps the rounding
    # of all 300,000 cells within 2**-12 of the sensitivity, finer than the scale's own.
    g = real_laplace(4.0, 2.0, table.size).g
    assert g < dp.laplace_granularity(4.0)
    assert outs[0].dtype == np.float64 and (outs[0] / g == np.round(outs[0] / g)).all()


def test_noisy_counts_allows_negative_and_rejects_nan_without_spending():
    a = acct()
    g = dp.ChaCha20(1)
    dp.noisy_counts(np.array([-3, 0, 7]), epsilon=1.0, accountant=a, rng=g)
    spent, state = a.spent, rng_state(g)
    for bad in (np.array([1.0, np.nan]), np.array([np.inf]), np.array(["a"]),
                np.array([2**63 - 1])):
        with pytest.raises((ValueError, TypeError)):
            dp.noisy_counts(bad, epsilon=1.0, accountant=a, rng=g)
    out32 = np.zeros(2, dtype=np.int32)
    with pytest.raises(ValueError, match="int32"):
        dp.noisy_counts(np.array([2**31 - 10, 0]), epsilon=1.0, out=out32, accountant=a, rng=g)
    with pytest.raises(ValueError, match="'out'"):
        dp.noisy_counts(np.array([1, 2]), epsilon=1.0, out=np.zeros(3, dtype=np.int64),
                        accountant=a, rng=g)
    with pytest.raises(ValueError, match="'postprocess'"):
        dp.noisy_counts(np.array([1, 2]), epsilon=1.0, out=np.zeros(2, dtype=np.int64),
                        postprocess="consistent", accountant=a, rng=g)
    assert a.spent == spent and rng_state(g) == state


# -- refusals: data-dependent edges, bad data, unknown categories -------------------------
BAD_CALLS = [
    (lambda a, g: dp.histogram([1.0, np.nan], bins=2, range=(0, 2), epsilon=1.0, accountant=a,
                               rng=g), ValueError, "'data'"),
    (lambda a, g: dp.histogram([1.0, 2.0], bins="auto", epsilon=1.0, accountant=a, rng=g),
     ValueError, "data-dependent"),
    (lambda a, g: dp.histogram([1.0, 2.0], bins=5, epsilon=1.0, accountant=a, rng=g),
     ValueError, "range"),
    (lambda a, g: dp.histogram([1, 2], bins=5, epsilon=1.0, accountant=a, rng=g),
     ValueError, "range"),
    (lambda a, g: dp.histogram([1, 2], bins=[0, 2, 1], epsilon=1.0, accountant=a, rng=g),
     ValueError, "increasing"),
    (lambda a, g: dp.histogram([1, 2], bins=2, range=(3, 3), epsilon=1.0, accountant=a,
                               rng=g), ValueError, "low < high"),
    (lambda a, g: dp.histogram([1, 2], bins=2, range=(0, 3), epsilon=0.0, accountant=a,
                               rng=g), ValueError, "'epsilon'"),
    (lambda a, g: dp.histogram(["x"], bins=2, range=(0, 3), epsilon=1.0, accountant=a, rng=g),
     TypeError, "'data'"),
    (lambda a, g: dp.histogram([1, 2], bins=2, range=(0, 3), epsilon=1.0, accountant=a, rng=g,
                               postprocess="round"), ValueError, "'postprocess'"),
    (lambda a, g: dp.histogramdd(np.zeros((3, 2)), 4, epsilon=1.0, accountant=a, rng=g),
     ValueError, "range"),
    (lambda a, g: dp.histogramdd(np.zeros((3, 2)), [4, 4, 4], range=[(0, 1)] * 3, epsilon=1.0,
                                 accountant=a, rng=g), ValueError, "'bins'"),
    (lambda a, g: dp.histogramdd(np.array([[0.0, np.nan]]), 4, range=[(0, 1)] * 2,
                                 epsilon=1.0, accountant=a, rng=g), ValueError, "'sample'"),
    (lambda a, g: dp.count_categories(["a", "zz"], ["a", "b"], epsilon=1.0, accountant=a,
                                      rng=g), ValueError, "record 1"),
    (lambda a, g: dp.count_categories(["a"], ["a", "a"], epsilon=1.0, accountant=a, rng=g),
     ValueError, "repeat"),
    (lambda a, g: dp.count_categories(["a"], "ab", epsilon=1.0, accountant=a, rng=g),
     TypeError, "'categories'"),
]


@pytest.mark.parametrize("call, exc, text", BAD_CALLS)
def test_bad_input_raises_before_anything_is_spent(call, exc, text):
    a = acct()
    a.spend(0.25)
    g = dp.ChaCha20(2)
    with spends_nothing(a, g), pytest.raises(exc, match=text):
        call(a, g)


def test_categories_other_cell_and_pandas():
    vals = ["a", "b", "zz", "a", None]
    got = dp.count_categories(vals, ["a", "b"], other=True, accountant=acct(), **EXACT)
    assert got.tolist() == [2, 1, 2]
    pd = pytest.importorskip("pandas")
    ser = pd.Series(["x", "y", "x", "w"], dtype="category")
    got = dp.count_categories(ser, ["y", "x", "q"], other=True, accountant=acct(), **EXACT)
    assert got.tolist() == [1, 2, 0, 1]


def test_progress_bar_is_optional(monkeypatch, capsys):
    table = np.arange(10, dtype=np.int64)
    pytest.importorskip("tqdm")
    dp.noisy_counts(table, epsilon=1.0, accountant=acct(), rng=1, progress=True)
    assert "cell" in capsys.readouterr().err           # the bar was drawn on stderr
    monkeypatch.setitem(__import__("sys").modules, "tqdm", None)
    a = acct()
    with pytest.raises(ImportError, match="tqdm"):
        dp.noisy_counts(table, epsilon=1.0, accountant=a, rng=1, progress=True)
    assert a.spent == (0.0, 0.0)
    # Without tqdm and without asking, the release simply runs without a bar.
    dp.noisy_counts(table, epsilon=1.0, accountant=acct(), rng=1)


# -- regressions from review -----------------------------------------------------------------
@pytest.mark.parametrize("total", [-1, "abc", 2**60, 1.5])
def test_bad_total_is_refused_before_the_charge(total):
    a = acct()
    with pytest.raises((ValueError, TypeError), match="'total'"):
        dp.histogram([1, 2, 3], bins=3, range=(0, 3), epsilon=1.0, accountant=a, rng=1,
                     postprocess="consistent", total=total)
    with pytest.raises(ValueError, match="'total'"):
        dp.histogram([1, 2, 3], bins=3, range=(0, 3), epsilon=1.0, accountant=a, rng=1,
                     total=3)                        # total without a consistent release
    assert a.spent == (0.0, 0.0)


def test_extreme_ranges_and_subnormal_edges():
    a = acct()
    with pytest.raises(ValueError, match="finite"):
        dp.histogram([0.0], bins=4, range=(-1e308, 1e308), epsilon=1.0, accountant=a, rng=1)
    assert a.spent == (0.0, 0.0)
    data = np.array([0.0] * 1000 + [5e-324] * 2000)
    got, _ = dp.histogram(data, bins=[0, 5e-324, 1e-323], accountant=a, **EXACT)
    np.testing.assert_array_equal(got, np.histogram(data, bins=[0, 5e-324, 1e-323])[0])


def test_overlapping_out_is_refused_and_separate_mappings_work(tmp_path):
    buf = np.arange(1000, dtype=np.int64)
    a = acct()
    with pytest.raises(ValueError, match="overlaps"):
        dp.noisy_counts(buf[:-1], epsilon=1.0, out=buf[1:], accountant=a, rng=1)
    assert a.spent == (0.0, 0.0)
    # Two mappings of one file (read and write): the same cells, so a correct release.
    path = tmp_path / "c.npy"
    np.save(path, np.arange(200_000, dtype=np.int64))
    src = np.load(path, mmap_mode="r")
    dst = np.load(path, mmap_mode="r+")
    want = np.arange(200_000) + dp.discrete_laplace(1.0, 200_000, rng=5)
    dp.noisy_counts(src, epsilon=1.0, out=dst, accountant=a, rng=5)
    np.testing.assert_array_equal(np.load(path), want)


def test_object_integer_counts_get_integer_noise():
    got = dp.noisy_counts(np.array([1, 2], dtype=object), epsilon=1.0, accountant=acct(), rng=1)
    assert got.dtype == np.int64


def test_unordered_categories_and_large_scale_int32_out_are_refused():
    with pytest.raises(TypeError, match="ordered"):
        dp.count_categories(["a"], {"a", "b"}, epsilon=1.0, accountant=acct(), rng=1)
    with pytest.raises(ValueError, match="int32"):
        dp.noisy_counts(np.array([1], dtype=np.int32), epsilon=1e-7,
                        out=np.zeros(1, dtype=np.int32), accountant=acct(), rng=1)


def test_histogramdd_one_dimensional_sample_and_range_message():
    x = np.random.default_rng(3).normal(size=1000)
    got, _ = dp.histogramdd(x, 5, range=[(-2, 2)], accountant=acct(), **EXACT)
    np.testing.assert_array_equal(got, np.histogramdd(x, 5, range=[(-2, 2)])[0])
    with pytest.raises(ValueError, match="per dimension"):
        dp.histogramdd(np.zeros((3, 2)), 2, range=(0, 4), epsilon=1.0, accountant=acct())
