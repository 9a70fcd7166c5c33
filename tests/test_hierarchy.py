"""Census hierarchies: exact sums at every level, non-negative integers, unbiased
least-squares estimates with the stated variances (simulation; z-tests at 5 standard
errors, false alarm about 6e-7 each), sensitivity of the level counts, labelled output."""
import numpy as np
import pytest

import dpfast as dp
from dpfast.linear import hierarchy as hi
from dpfast.linear.hierarchy_estimates import level_counts
from dpfast.samplers import dlap_variance

pd = pytest.importorskip("pandas")

SMALL = np.array([5, 0, 3, 9, 1, 2])
SMALL_TREE = [np.zeros(2, np.int64), np.array([0, 0, 0, 1, 1, 1])]


def geography(rng, states=8, counties=200):
    state = np.sort(rng.integers(0, states, counties))
    state[:states] = np.arange(states)
    return [np.zeros(states, np.int64), np.sort(state)]


def check_consistent(rel):
    for level, p in enumerate(rel.parents):
        np.testing.assert_array_equal(np.bincount(p, weights=rel.counts[level + 1],
                                                  minlength=len(rel.counts[level])),
                                      rel.counts[level])
        np.testing.assert_allclose(np.bincount(p, weights=rel.estimates[level + 1]),
                                   rel.estimates[level], rtol=1e-9, atol=1e-6)
    assert all(c.dtype == np.int64 and c.min() >= 0 for c in rel.counts)


@pytest.mark.parametrize("seed", range(5))
def test_children_sum_to_parents_as_non_negative_integers(seed):
    rng = np.random.default_rng(seed)
    par = geography(rng)
    counts = rng.poisson(rng.choice([0.2, 3, 50]), par[1].size)     # sparse ones too
    rel = dp.census_hierarchy(counts, par, epsilon=0.5, rng=seed, accountant=dp.Accountant())
    check_consistent(rel)


def test_unsorted_parents_and_three_levels():
    rng = np.random.default_rng(9)
    county_state = rng.permutation(np.repeat(np.arange(5), 4))
    tract_county = rng.permutation(np.repeat(np.arange(20), 3))
    par = [np.zeros(5, np.int64), county_state, tract_county]
    rel = dp.census_hierarchy(rng.poisson(4, 60), par, epsilon=1.0, rng=1,
                              accountant=dp.Accountant())
    check_consistent(rel)
    assert [len(c) for c in rel.counts] == [1, 5, 20, 60]


def test_unbiased_with_the_stated_variances():
    runs = 1000          # the exact variances are checked by linear algebra below
    acct = dp.Accountant()
    est = [[], [], []]
    for s in range(runs):
        rel = dp.census_hierarchy(SMALL, SMALL_TREE, epsilon=1.0, split=[0.2, 0.3, 0.5],
                                  rng=s, accountant=acct)
        for level in range(3):
            est[level].append(rel.estimates[level])
    truth = [np.array([20]), np.array([8, 12]), SMALL]
    for level in range(3):
        e = np.array(est[level])
        var = rel.variances[level]
        assert np.abs((e.mean(axis=0) - truth[level]) / np.sqrt(var / runs)).max() < 5
        assert np.abs(e.var(axis=0) / var - 1).max() < 5 * np.sqrt(5 / runs)


def test_variances_match_linear_algebra():
    # GLS covariance (A^T D A)^-1 with A the unit-by-leaf incidence of every level.
    rel = dp.census_hierarchy(SMALL, SMALL_TREE, epsilon=1.0, split=[0.2, 0.3, 0.5], rng=0,
                              accountant=dp.Accountant())
    a = np.vstack([np.ones((1, 6)), np.kron(np.eye(2), np.ones(3)), np.eye(6)])
    w = np.concatenate([[1 / dlap_variance(1 / 0.2)], [1 / dlap_variance(1 / 0.3)] * 2,
                        [1 / dlap_variance(1 / 0.5)] * 6])
    cov = np.linalg.inv(a.T @ (w[:, None] * a))
    node_var = np.einsum("ij,jk,ik->i", a, cov, a)
    np.testing.assert_allclose(np.concatenate(rel.variances), node_var, rtol=1e-10)


def test_each_record_is_in_one_unit_per_level():
    par = geography(np.random.default_rng(3))
    x = np.random.default_rng(4).integers(0, 9, par[1].size)
    base = np.concatenate(level_counts(x, par))
    for leaf in [0, 17, x.size - 1]:
        y = x.copy()
        y[leaf] += 1
        moved = np.concatenate(level_counts(y, par)) - base
        assert np.abs(moved).sum() == len(par) + 1


def test_millions_of_leaves():
    # Size only (the time of 10^7 leaves is measured in bench/): sums kept at this scale.
    n = 2 * 10**6
    par = [np.zeros(50, np.int64), np.repeat(np.arange(50), 400),
           np.repeat(np.arange(20_000), n // 20_000)]
    counts = np.random.default_rng(0).poisson(0.5, n)
    rel = dp.census_hierarchy(counts, par, epsilon=1.0, rng=0, accountant=dp.Accountant())
    assert rel.counts[0][0] == rel.counts[3].sum() == rel.counts[1].sum()
    assert rel.counts[3].min() >= 0


def test_records_and_geography_frames_give_labelled_levels():
    geo = pd.DataFrame({"state": ["A", "A", "B", "B", "B"],
                        "county": ["a1", "a2", "b1", "b2", "b3"]})
    rng = np.random.default_rng(5)
    pick = rng.integers(0, 5, 400)
    records = geo.iloc[pick].reset_index(drop=True)
    rel = dp.census_hierarchy(records, geo, epsilon=1.0, rng=2, accountant=dp.Accountant())
    check_consistent(rel)
    total, states, counties = rel.to_pandas()
    assert list(states.index) == ["A", "B"]
    assert list(counties.index) == list(zip(geo.state, geo.county))
    assert states["A"] == counties.loc["A"].sum()
    # Same release as the counts form.
    leaf_counts = np.bincount(pick, minlength=5)
    rel2 = dp.census_hierarchy(leaf_counts, [np.zeros(2, np.int64), np.array([0, 0, 1, 1, 1])],
                               epsilon=1.0, rng=2, accountant=dp.Accountant())
    np.testing.assert_array_equal(rel2.counts[2], rel.counts[2])


def test_records_outside_the_geography_are_refused_without_their_values():
    geo = pd.DataFrame({"state": ["A", "B"], "county": ["a1", "b1"]})
    records = pd.DataFrame({"state": ["A", "Z"], "county": ["a1", "secret-county"]})
    acct, gen = dp.Accountant(), dp.ChaCha20(1)
    with pytest.raises(ValueError, match="the first at record 1") as info:
        dp.census_hierarchy(records, geo, epsilon=1.0, accountant=acct, rng=gen)
    assert "secret" not in str(info.value) and acct.spent == (0.0, 0.0)


def test_bad_counts_are_described_by_position_not_value():
    acct = dp.Accountant()
    with pytest.raises(ValueError, match="index 4 is negative") as info:
        dp.census_hierarchy(np.array([5, 0, 3, 9, -987654321, 2]), SMALL_TREE, epsilon=1.0,
                            accountant=acct, rng=1)
    assert "987654321" not in str(info.value) and acct.spent == (0.0, 0.0)


def test_every_level_is_drawn_under_the_one_key_on_its_own_chunks():
    # Level l's noise is cells [c_l * CHUNK, ...) of the release's key, c_l the chunks the
    # levels above it take: the levels of 70,000 leaves start at chunks 0, 1 and 2.
    from dpfast import _native
    from dpfast.releases.cells import noisy_cells
    par = [np.zeros(3, np.int64), np.repeat(np.arange(3), [20_000, 20_000, 30_000])]
    counts = np.random.default_rng(3).poisson(2, 70_000)
    params = hi.hierarchy_params(par, counts.size, 1.0, [0.2, 0.3, 0.5], "census_hierarchy")
    plan = hi.hierarchy_plan(counts, params, None, "census_hierarchy")
    exact = [c.copy() for c in plan.exact]
    key = bytes(_native.Key(dp.ChaCha20(11)))
    hi._noise_levels(_native.Key.from_bytes(key), 2, plan.exact, params.noises)
    for level, chunk in enumerate((0, 1, 2)):
        want = noisy_cells(key, chunk * _native.CHUNK, exact[level], params.scales[level])
        np.testing.assert_array_equal(plan.exact[level], want)


def test_split_and_threads():
    par = geography(np.random.default_rng(6), counties=300_000)
    x = np.random.default_rng(7).poisson(3, 300_000)
    a = dp.census_hierarchy(x, par, epsilon=1.0, rng=5, threads=1, accountant=dp.Accountant())
    b = dp.census_hierarchy(x, par, epsilon=1.0, rng=5, threads=2, accountant=dp.Accountant())
    np.testing.assert_array_equal(a.counts[2], b.counts[2])
    acct = dp.Accountant()
    dp.census_hierarchy(x, par, epsilon=0.4, split=[0.1, 0.1, 0.8], rng=5, accountant=acct)
    assert acct.spent == (0.4, 0.0) and len(acct) == 1
