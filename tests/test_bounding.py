"""The compiled kernels behind statistics of records: contribution bounding
(``_native.bound_contributions``), the radix sort of uint32 keys (``_native.sort_u32``) and
the exponential mechanism's log-weights over the gaps of sorted keys
(``_native.quantile_weights``), each against a plain numpy/pandas reference."""
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import dpfast as dp
from dpfast import _native, records
from dpfast._release import Keys

KEPT, KEPT_FIRST = _native.KEPT, _native.KEPT_FIRST
# False-alarm rate of every statistical test in this file.
ALPHA = 1e-4


def bound(person, group, prio, gprio, max_groups, max_rows, threads=1):
    return _native.bound_contributions(
        np.ascontiguousarray(person, dtype=np.int64), np.ascontiguousarray(group, dtype=np.int64),
        np.ascontiguousarray(prio, dtype=np.float64),
        np.ascontiguousarray(gprio, dtype=np.float64), max_groups, max_rows, threads)


def reference(person, group, prio, gprio, max_groups, max_rows):
    """Rows kept, in pandas: each person keeps the max_groups pairs of lowest pair priority
    (read at the pair's first row by position) and, in each, the max_rows rows of lowest
    row priority (priorities distinct, so no ties)."""
    df = pd.DataFrame({"person": person, "group": group, "prio": prio, "gprio": gprio,
                       "pos": np.arange(len(person))})
    first = df.sort_values("pos").groupby(["person", "group"], sort=False).first()
    first["pair_rank"] = first.groupby("person")["gprio"].rank(method="first")
    df = df.join(first["pair_rank"], on=["person", "group"])
    df["row_rank"] = df.groupby(["person", "group"])["prio"].rank(method="first")
    return ((df["pair_rank"] <= max_groups) & (df["row_rank"] <= max_rows)).to_numpy()


def random_table(seed, persons=2000, groups=5, id_kind="small"):
    """Persons with 1..30 rows each over a few groups, rows shuffled; distinct priorities."""
    gen = np.random.default_rng(seed)
    rows = gen.integers(1, 31, size=persons)
    if id_kind == "small":
        ids = np.arange(persons, dtype=np.int64)
    else:   # huge and negative int64 ids, the extremes included
        ids = gen.integers(np.iinfo(np.int64).min, np.iinfo(np.int64).max, size=persons,
                           dtype=np.int64, endpoint=True)
        ids[:3] = [np.iinfo(np.int64).min, np.iinfo(np.int64).max, -1]
        ids = np.unique(ids)
        rows = rows[:ids.size]
    person = np.repeat(ids, rows)
    group = gen.integers(0, groups, size=person.size)
    if id_kind != "small":
        group = group * -(2**61) + 7           # group values need not be small either
    order = gen.permutation(person.size)
    person, group = person[order], group[order]
    prio = gen.random(person.size)
    gprio = gen.random(person.size)
    return person, group, prio, gprio


def check_flags(flags, person, group, max_groups, max_rows):
    """The structural promises of the flags, whatever the priorities."""
    assert flags.dtype == np.uint8
    assert set(np.unique(flags)) <= {0, KEPT, KEPT | KEPT_FIRST}
    kept = (flags & KEPT) != 0
    df = pd.DataFrame({"person": person, "group": group, "kept": kept,
                       "first": (flags & KEPT_FIRST) != 0})
    pairs = df.groupby(["person", "group"]).agg(rows=("kept", "size"), kept=("kept", "sum"),
                                               first=("first", "sum"))
    # At most max_rows rows per pair; a pair with no more rows than that keeps all or none.
    assert (pairs["kept"] <= max_rows).all()
    small = pairs["rows"] <= max_rows
    assert ((pairs["kept"][small] == 0) | (pairs["kept"][small] == pairs["rows"][small])).all()
    # A pair chosen keeps min(rows, max_rows) rows; exactly one KEPT_FIRST per kept pair.
    chosen = pairs["kept"] > 0
    assert (pairs["kept"][chosen] == np.minimum(pairs["rows"][chosen], max_rows)).all()
    assert (pairs["first"] == chosen.astype(int)).all()
    # At most max_groups pairs per person, and min(pairs, max_groups) of them.
    per = chosen.groupby(level="person").agg(["sum", "size"])
    assert (per["sum"] == np.minimum(per["size"], max_groups)).all()
    return kept


@pytest.mark.parametrize("max_groups, max_rows", [(1, 1), (2, 3), (3, 5), (5, 30), (1, 70)])
@pytest.mark.parametrize("id_kind", ["small", "huge"])
def test_flags_equal_the_pandas_reference(max_groups, max_rows, id_kind):
    person, group, prio, gprio = random_table(max_groups * 100 + max_rows, id_kind=id_kind)
    flags = bound(person, group, prio, gprio, max_groups, max_rows)
    kept = check_flags(flags, person, group, max_groups, max_rows)
    np.testing.assert_array_equal(kept, reference(person, group, prio, gprio, max_groups,
                                                  max_rows))


def test_large_pairs_use_every_path_of_the_kernel():
    """Pairs of up to max_rows rows (all kept), of up to 64 rows (the small-array path) and
    of more (the sorting path): each keeps exactly its max_rows lowest priorities."""
    gen = np.random.default_rng(3)
    rows = np.array([1, 3, 4, 10, 63, 64, 65, 100, 500, 3000])
    person = np.repeat(np.arange(rows.size) * 1_000_003 - 5_000_000, rows)
    person = person[gen.permutation(person.size)]
    group = np.zeros_like(person)
    prio, gprio = gen.random(person.size), gen.random(person.size)
    for max_rows in (1, 3, 64, 65):
        flags = bound(person, group, prio, gprio, 1, max_rows)
        kept = check_flags(flags, person, group, 1, max_rows)
        np.testing.assert_array_equal(kept, reference(person, group, prio, gprio, 1, max_rows))
        # The KEPT_FIRST mark sits on a kept row of each person.
        assert np.all(flags[(flags & KEPT_FIRST) != 0] & KEPT)


def test_same_flags_for_any_thread_count():
    # 2e5 rows: 16 partitions of the kernel, so threads really split the work.
    gen = np.random.default_rng(4)
    person = gen.integers(-2**62, 2**62, size=200_000)
    person = person[gen.integers(0, 40_000, size=person.size)]        # ~5 rows a person
    group = gen.integers(0, 4, size=person.size)
    prio, gprio = gen.random(person.size), gen.random(person.size)
    one = bound(person, group, prio, gprio, 2, 3, threads=1)
    check_flags(one, person, group, 2, 3)
    for threads in (2, 4):
        np.testing.assert_array_equal(bound(person, group, prio, gprio, 2, 3, threads), one)


def test_empty_and_single_row():
    empty = np.empty(0)
    flags = bound(empty, empty, empty, empty, 1, 1)
    assert flags.dtype == np.uint8 and flags.shape == (0,)
    flags = bound([42], [7], [0.9], [0.3], 1, 1)
    np.testing.assert_array_equal(flags, [KEPT | KEPT_FIRST])


def test_all_rows_one_person():
    n = 100_000
    gen = np.random.default_rng(5)
    person = np.full(n, -123456789012345, dtype=np.int64)
    prio = gen.random(n)
    flags = bound(person, np.zeros(n), prio, gen.random(n), 1, 7, threads=2)
    kept = (flags & KEPT) != 0
    assert kept.sum() == 7 and np.count_nonzero(flags & KEPT_FIRST) == 1
    np.testing.assert_array_equal(np.flatnonzero(kept), np.sort(np.argsort(prio)[:7]))
    # Split over 3 groups with max_groups 1: one pair kept, of 7 rows in one group.
    group = gen.integers(0, 3, size=n)
    flags = bound(person, group, prio, gen.random(n), 1, 7, threads=2)
    kept = check_flags(flags, person, group, 1, 7)
    assert kept.sum() == 7 and np.unique(group[kept]).size == 1


def test_ties_still_bound_the_contribution():
    """Equal priorities (a degenerate input): the counts are still bounded and the choice is
    the same for any thread count."""
    person, group, _, _ = random_table(6)
    ones = np.full(person.size, 0.5)
    flags = bound(person, group, ones, ones, 2, 3)
    check_flags(flags, person, group, 2, 3)
    np.testing.assert_array_equal(bound(person, group, ones, ones, 2, 3, threads=2), flags)


def test_bad_bounds_and_arrays_refused():
    a = np.zeros(3)
    for mg, mr in ((0, 1), (1, 0), (-1, 5)):
        with pytest.raises(ValueError, match="max_groups and max_rows"):
            bound(a, a, a, a, mg, mr)
    with pytest.raises(ValueError, match="prio"):
        _native.bound_contributions(np.zeros(3, np.int64), np.zeros(3, np.int64),
                                    np.zeros(2), np.zeros(3), 1, 1, 1)
    with pytest.raises(ValueError, match="person"):
        _native.bound_contributions(np.zeros(3, np.int32), np.zeros(3, np.int64),
                                    np.zeros(3), np.zeros(3), 1, 1, 1)


# -- uniformity ----------------------------------------------------------------------------

def subset_chi2(kept_sets, k_total):
    """p-value of Pearson's chi-square of the kept subsets against the uniform law over the
    ``k_total`` subsets of their size (every subset must be possible)."""
    codes = np.asarray(kept_sets)
    counts = np.bincount(codes, minlength=k_total)
    assert counts.size == k_total
    return stats.chisquare(counts).pvalue


def rows_kept_uniform(flags, person, rows_each, keep):
    """Per person, the positions (0..rows_each-1, in row order) of its kept rows as the code
    of a subset: a bitmask ranked among the C(rows_each, keep) subsets."""
    kept = (flags & KEPT) != 0
    order = np.argsort(person, kind="stable")             # each person's rows in row order
    mask = kept[order].reshape(-1, rows_each)
    assert (mask.sum(axis=1) == keep).all()
    bits = (mask * (1 << np.arange(rows_each))).sum(axis=1)
    all_masks = sorted(sum(1 << i for i in c) for c in
                       __import__("itertools").combinations(range(rows_each), keep))
    return np.searchsorted(all_masks, bits), len(all_masks), mask


def test_rows_kept_uniformly():
    """One person with 10 rows and max_rows 3, over 24,000 independent priority draws (one
    person each, rows interleaved): every 3-subset of the rows is kept with probability
    1/120, so each row with probability 3/10."""
    gen = np.random.default_rng(7)
    persons, rows_each = 24_000, 10
    person = np.repeat(np.arange(persons), rows_each)[gen.permutation(persons * rows_each)]
    flags = bound(person, np.zeros(person.size), gen.random(person.size),
                  gen.random(person.size), 1, 3, threads=2)
    codes, total, mask = rows_kept_uniform(flags, person, rows_each, 3)
    assert subset_chi2(codes, total) > ALPHA
    # Each row's frequency: the indicators of a uniform 3-subset of 10 have covariance
    # p(1-p) N/(N-1) (I - J/N), so this sum is chi-square with N - 1 degrees of freedom.
    p, n_rows = 0.3, rows_each
    dev = mask.sum(axis=0) - persons * p
    stat = (dev**2).sum() / (persons * p * (1 - p) * n_rows / (n_rows - 1))
    assert stats.chi2.sf(stat, n_rows - 1) > ALPHA


def test_groups_chosen_uniformly_whatever_their_sizes():
    """A person in 5 groups of 1, 2, 5, 10 and 30 rows with max_groups 2: each pair of groups
    is chosen with probability 1/10 (each group 2/5), the large groups no more often."""
    gen = np.random.default_rng(8)
    persons, sizes = 8_000, np.array([1, 2, 5, 10, 30])
    one_group = np.repeat(np.arange(sizes.size), sizes)
    group = np.tile(one_group, persons) * 1000 - 17
    person = np.repeat(np.arange(persons), sizes.sum())
    order = gen.permutation(person.size)
    person, group = person[order], group[order]
    flags = bound(person, group, gen.random(person.size), gen.random(person.size), 2, 30)
    kept = check_flags(flags, person, group, 2, 30)
    chosen = pd.DataFrame({"person": person, "g": (group + 17) // 1000, "kept": kept})
    chosen = chosen[chosen["kept"]].groupby("person")["g"].agg(
        lambda g: sum(1 << int(v) for v in np.unique(g)))
    assert chosen.size == persons
    masks = sorted((1 << a) | (1 << b) for a in range(5) for b in range(a + 1, 5))
    codes = np.searchsorted(masks, chosen.to_numpy())
    assert subset_chi2(codes, 10) > ALPHA


def test_rows_kept_uniformly_under_release_keys():
    """The public path's priorities (uniforms under the release's keys, by position): every
    3-subset of a person's 6 rows equally likely, and the same key gives the same rows for
    any thread count."""
    persons, rows_each = 4_000, 6
    person = np.repeat(np.arange(persons, dtype=np.int64), rows_each)
    flags = records.bound(Keys(dp.ChaCha20(11)), 1, person, None, 1, 3)
    same = records.bound(Keys(dp.ChaCha20(11)), 2, person, None, 1, 3)
    np.testing.assert_array_equal(flags, same)
    codes, total, _ = rows_kept_uniform(flags, person, rows_each, 3)
    assert subset_chi2(codes, total) > ALPHA
    assert not np.array_equal(records.bound(Keys(dp.ChaCha20(12)), 1, person, None, 1, 3),
                              flags)


def drawn(key_seed, n):
    """The uniforms noise.uniforms draws at positions 0..n under the key of a seed."""
    out = np.empty(n)
    dp.noise.uniforms(_native.Key(dp.ChaCha20(key_seed)), 1, out)
    return out


@pytest.mark.parametrize("grouped", [True, False])
@pytest.mark.parametrize("threads", [1, 2, 4])
def test_drawn_priorities_are_the_given_ones(grouped, threads):
    """The kernel's own priorities (drawn a 65,536-row chunk at a time as it reads the rows)
    are the uniforms of the release's keys at the rows' positions: the flags equal those of
    the same priorities given as arrays, for any thread count, across chunk boundaries."""
    person, group, _, _ = random_table(14, persons=20_000)
    assert person.size > 3 * 65_536
    prio, gprio = drawn(1, person.size), drawn(2, person.size)
    if not grouped:
        group = np.zeros(person.size, dtype=np.int64)
    expected = bound(person, group, prio, gprio, 2, 3)
    got = _native.bound_keyed(person, group if grouped else None,
                              _native.Key(dp.ChaCha20(1)), _native.Key(dp.ChaCha20(2)), None,
                              person.size, 2, 3, threads)
    np.testing.assert_array_equal(got, expected)


def test_drawn_priorities_of_a_subset_are_its_rows_positions():
    """Rows given with their positions in a larger table draw that table's priorities: the
    rows of some people, bounded alone, keep what they keep in the whole table."""
    person, group, _, _ = random_table(15, persons=20_000)
    n = person.size
    whole = _native.bound_keyed(person, group, _native.Key(dp.ChaCha20(3)),
                                _native.Key(dp.ChaCha20(4)), None, n, 2, 3, 2)
    rows = np.flatnonzero(person % 3 == 1)
    part = _native.bound_keyed(np.ascontiguousarray(person[rows]),
                               np.ascontiguousarray(group[rows]), _native.Key(dp.ChaCha20(3)),
                               _native.Key(dp.ChaCha20(4)), rows, n, 2, 3, 2)
    np.testing.assert_array_equal(part, whole[rows])
    key = _native.Key(dp.ChaCha20(3))
    for bad in (rows - rows[0] - 1, rows + n, rows[::-1].copy(),
                np.r_[rows[:-2], rows[-1], rows[-1]]):
        with pytest.raises(ValueError, match="positions"):
            _native.bound_keyed(np.ascontiguousarray(person[rows]), None, key, key,
                                np.ascontiguousarray(bad), n, 1, 1, 1)


def test_a_table_bounded_in_passes_keeps_the_same_rows(monkeypatch):
    """A table larger than BOUND_ROWS is bounded in passes over classes of people: the same
    flags as one call (here BOUND_ROWS made small so the test table takes 7 passes)."""
    person, group, _, _ = random_table(16, persons=5_000)
    one = records.bound(Keys(dp.ChaCha20(21)), 2, person, group, 2, 3)
    monkeypatch.setattr(records.bounding, "BOUND_ROWS", person.size // 7 + 1)
    passes = records.bound(Keys(dp.ChaCha20(21)), 2, person, group, 2, 3)
    np.testing.assert_array_equal(passes, one)
    check_flags(passes, person, group, 2, 3)
    ungrouped = records.bound(Keys(dp.ChaCha20(21)), 1, person, None, 1, 4)
    monkeypatch.setattr(records.bounding, "BOUND_ROWS", 1 << 24)
    np.testing.assert_array_equal(
        records.bound(Keys(dp.ChaCha20(21)), 1, person, None, 1, 4), ungrouped)


# -- the radix sort ------------------------------------------------------------------------

TOP = np.iinfo(np.uint32).max


@pytest.mark.parametrize("case", ["random", "small", "equal", "sorted", "reversed", "top",
                                  "empty", "one", "two_digits"])
def test_sort_u32_equals_np_sort(case):
    gen = np.random.default_rng(9)
    n = 50_001
    keys = {
        "random": lambda: gen.integers(0, TOP, size=n, endpoint=True, dtype=np.uint32),
        "small": lambda: gen.integers(0, 5, size=n, dtype=np.uint32),
        "equal": lambda: np.full(n, 123456789, dtype=np.uint32),
        "sorted": lambda: np.sort(gen.integers(0, TOP, size=n, dtype=np.uint32)),
        "reversed": lambda: np.sort(gen.integers(0, TOP, size=n, dtype=np.uint32))[::-1].copy(),
        "top": lambda: (TOP - gen.integers(0, 3000, size=n)).astype(np.uint32),
        "empty": lambda: np.empty(0, dtype=np.uint32),
        "one": lambda: np.array([TOP], dtype=np.uint32),
        # Only the middle digit differs: passes over the other digits are skipped.
        "two_digits": lambda: ((gen.integers(0, 2048, size=n) << 11) | 5).astype(np.uint32),
    }[case]()
    want = np.sort(keys)
    got = _native.sort_u32(keys)
    assert got is keys                                          # in place
    np.testing.assert_array_equal(got, want)


def test_sort_u32_refuses_other_arrays():
    for bad in (np.zeros(4, dtype=np.int32), np.zeros(4, dtype=np.uint64),
                np.zeros(8, dtype=np.uint32)[::2]):
        with pytest.raises(ValueError, match="keys"):
            _native.sort_u32(bad)
    ro = np.zeros(4, dtype=np.uint32)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="writeable"):
        _native.sort_u32(ro)


# -- the exponential mechanism's weights ---------------------------------------------------

def weights_reference(s, lo, hi, target, a):
    """w[j] = log(#{integers y in [lo, hi]: exactly j keys are below y}) - a |j - target|."""
    s = np.asarray(s, dtype=np.int64)
    below = np.concatenate(([lo - 1], s))
    top = np.concatenate((s, [hi]))
    count = top - below
    with np.errstate(divide="ignore"):
        return np.where(count > 0, np.log(np.maximum(count, 1)), -np.inf) \
            - a * np.abs(np.arange(s.size + 1) - target)


def test_quantile_weights_count_the_integers_of_each_gap():
    # Brute force on a small range: the integers y with j keys strictly below them.
    gen = np.random.default_rng(10)
    s = np.sort(gen.integers(3, 40, size=25)).astype(np.uint32)
    lo, hi, target, a = 3, 45, 11.5, 0.7
    w = _native.quantile_weights(s, lo, hi, target, a)
    ys = np.arange(lo, hi + 1)
    j_of_y = np.searchsorted(s, ys, side="left")            # keys < y
    count = np.bincount(j_of_y, minlength=s.size + 1)
    with np.errstate(divide="ignore"):
        want = np.log(count) - a * np.abs(np.arange(s.size + 1) - target)
    np.testing.assert_allclose(w, want, rtol=1e-15, atol=0)
    assert np.array_equal(np.isinf(w), count == 0)          # ties leave empty gaps


def test_quantile_weights_at_the_grid_extremes():
    gen = np.random.default_rng(11)
    s = np.sort(np.concatenate(([0, 0, TOP, TOP],
                                gen.integers(0, TOP, size=1000)))).astype(np.uint32)
    for target, a in ((0.0, 1.0), (502.0, 1e-3), (1004.0, 50.0)):
        w = _native.quantile_weights(s, 0, TOP, target, a)
        np.testing.assert_allclose(w, weights_reference(s, 0, TOP, target, a), rtol=1e-13)
    w = _native.quantile_weights(np.empty(0, dtype=np.uint32), 0, TOP, 0.0, 1.0)
    np.testing.assert_allclose(w, [math.log(2.0**32)])


# -- statistics per key ------------------------------------------------------------------------

@pytest.mark.parametrize("trial", range(8))
def test_key_sums_are_numpys_clamp_centre_and_rounding(trial):
    """The compiled pass per value column gives the integers numpy's operations give, in
    numpy's order: rows and people per key, and the exact sums of units (and of squares'
    units), values at the bounds and ties of the rounding included."""
    from dpfast import records
    rng = np.random.default_rng(100 + trial)
    n, nkeys = int(rng.integers(0, 20_000)), int(rng.integers(1, 40))
    code = rng.integers(0, nkeys, n)
    flags = rng.choice(np.array([0, 1, 3], dtype=np.uint8), n)
    lo, hi = sorted(rng.normal(0, 1000, 2))
    g1, g2 = 2.0 ** int(rng.integers(-20, 5)), 2.0 ** int(rng.integers(-10, 15))
    x = rng.normal((lo + hi) / 2, hi - lo, n)
    x[rng.random(n) < 0.02] = lo
    x[rng.random(n) < 0.02] = hi
    x[rng.random(n) < 0.05] = (lo + hi) / 2 + g1 * (rng.integers(-5, 5) + 0.5)   # ties
    rows, people, s1, s2 = _native.key_sums(code, flags, x, nkeys, lo, hi, g1,
                                            int(np.floor((hi - lo) / 2 / g1)), g2,
                                            int(np.floor(((hi - lo) / 2) ** 2 / g2)))
    kept = flags != 0
    xx = np.clip(x[kept], lo, hi)
    mid, half = (lo + hi) / 2, (hi - lo) / 2
    np.testing.assert_array_equal(rows, np.bincount(code[kept], minlength=nkeys))
    np.testing.assert_array_equal(people, np.bincount(code[flags == 3], minlength=nkeys))
    want1 = records.exact_sums(code[kept], records.units(xx, mid, half, g1),
                               int(np.floor(half / g1)), nkeys)
    want2 = records.exact_sums(code[kept], records.units((xx - mid) ** 2, 0.0, half * half, g2),
                               int(np.floor(half * half / g2)), nkeys)
    np.testing.assert_array_equal(s1, want1)
    np.testing.assert_array_equal(s2, want2)


def test_key_sums_refuses_codes_outside_the_keys():
    with pytest.raises(ValueError, match="codes"):
        _native.key_sums(np.array([0, 5]), np.ones(2, dtype=np.uint8), None, 3)
