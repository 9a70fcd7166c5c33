"""Gaussian noise in census_hierarchy: a rho share per level (noise="gaussian" with rho=, or
with epsilon= and delta=).

What is proved here:
- bad privacy keywords (a table of combinations) and bad splits are refused with
  TypeError/ValueError, nothing charged and the generator not advanced;
- pinned known answers on fixed seeds (default and given splits); the same release for 1
  and 2 threads;
- the charged rho is the sum of the levels' exact costs ``1 / (2 sigma_l**2)`` (never
  below it, equal to float precision), a record changing one count per level by 1; under
  (epsilon, delta) the rho is the tight conversion's, payable by a zCDP accountant of that
  very budget;
- each level's noise has variance ``sigma_l**2`` and mean 0 (10^5 cells a level; 6.7
  standard errors: false alarm about 2e-11 per comparison);
- the consistent estimates are the dense generalised least squares (weights 1 / variance,
  the levels' variances unequal) and its variances, and over many releases the estimates
  are unbiased with those variances (6 standard errors);
- released counts are non-negative integers whose children sum exactly to their parent,
  under heavy noise and sparse counts too;
- the default split has a smaller split objective (the sum over levels of the mean
  least-squares variance) than the equal split and than random splits, the objective is
  the released variances' per-level means, and its gradient is exact.
"""
import math
from fractions import Fraction

import numpy as np
import pytest

import dpfast as dp
from dpfast import _native
from dpfast.linear import hierarchy as hi
from dpfast.linear.hierarchy_estimates import level_counts
from dpfast.linear.hierarchy_split import SplitObjective
from dpfast.zcdp import rho_from_epsilon_delta
from refusals import GAUSSIAN_BAD_KEYWORDS, spends_nothing

SMALL = np.array([5, 0, 3, 9, 1, 2])
SMALL_TREE = [np.zeros(2, np.int64), np.array([0, 0, 0, 1, 1, 1])]
G = "gaussian"


def geography(rng, sizes):
    """Parent arrays for levels of these sizes (top first), every unit with a child."""
    out = []
    for above, below in zip(sizes[:-1], sizes[1:]):
        extra = rng.integers(0, above, below - above)
        out.append(np.sort(np.concatenate([np.arange(above), extra])).astype(np.int64))
    return out


def check_consistent(rel):
    for level, p in enumerate(rel.parents):
        np.testing.assert_array_equal(np.bincount(p, weights=rel.counts[level + 1],
                                                  minlength=len(rel.counts[level])),
                                      rel.counts[level])
    assert all(c.dtype == np.int64 and c.min() >= 0 for c in rel.counts)


BAD = GAUSSIAN_BAD_KEYWORDS + [
    ({"noise": G, "rho": 1e-30}, ValueError),              # sigma beyond the sampler's range
    ({"noise": G, "rho": 0.5, "split": [0.5, 0.5]}, ValueError),
    ({"noise": G, "rho": 0.5, "split": [0.5, 0.6, -0.1]}, ValueError),
    ({"noise": G, "rho": 0.5, "split": "abc"}, TypeError),
]


def test_bad_keywords_are_refused_before_the_charge_and_the_draw():
    acct, rng = dp.Accountant(rho=10.0), dp.ChaCha20(3)
    for kwargs, error in BAD:
        with spends_nothing(acct, rng):
            with pytest.raises(error):
                dp.census_hierarchy(SMALL, SMALL_TREE, accountant=acct, rng=rng, **kwargs)
    basic = dp.Accountant(epsilon=5.0, delta=1e-6)
    with spends_nothing(basic, rng):
        with pytest.raises(ValueError, match="rho alone"):
            dp.census_hierarchy(SMALL, SMALL_TREE, noise=G, rho=0.5, accountant=basic, rng=rng)
    rel = dp.census_hierarchy(SMALL, SMALL_TREE, noise=G, rho=0.5, accountant=acct, rng=rng)
    assert acct.spent.rho == 0.5 and len(acct) == 1 and rel.rho == 0.5


def test_known_answers():
    rel = dp.census_hierarchy(SMALL, SMALL_TREE, noise=G, rho=0.5, rng=3,
                              accountant=dp.Accountant(rho=1.0))
    assert [c.tolist() for c in rel.counts] == [[19], [8, 11], [4, 1, 3, 7, 1, 3]]
    np.testing.assert_allclose(rel.split, [0.2596398317, 0.3100823236, 0.4302778447],
                               atol=1e-9)
    rel = dp.census_hierarchy(SMALL, SMALL_TREE, noise=G, rho=0.5, split=[0.2, 0.3, 0.5],
                              rng=3, accountant=dp.Accountant(rho=1.0))
    assert [c.tolist() for c in rel.counts] == [[19], [8, 11], [4, 1, 3, 9, 1, 1]]
    assert list(rel.scales) == pytest.approx([math.sqrt(5), math.sqrt(10 / 3),
                                                           math.sqrt(2)], rel=1e-15)


def test_threads_give_the_same_release():
    rng = np.random.default_rng(4)
    par = geography(rng, [1, 20, 3000, 300_000])
    x = rng.poisson(3, 300_000)
    a = dp.census_hierarchy(x, par, noise=G, rho=0.2, rng=5, threads=1,
                            accountant=dp.Accountant(rho=1.0))
    b = dp.census_hierarchy(x, par, noise=G, rho=0.2, rng=5, threads=2,
                            accountant=dp.Accountant(rho=1.0))
    for ca, cb in zip(a.counts, b.counts):
        np.testing.assert_array_equal(ca, cb)
    check_consistent(a)


@pytest.mark.parametrize("split", [None, [0.1, 0.3, 0.6], [0.5, 0.25, 0.25]])
@pytest.mark.parametrize("rho", [0.5, 0.1, 3.7, 1e-3])
def test_the_charge_is_the_sum_of_the_levels_costs(split, rho):
    acct = dp.Accountant(rho=10.0)
    rel = dp.census_hierarchy(SMALL, SMALL_TREE, noise=G, rho=rho, split=split, rng=0,
                              accountant=acct)
    assert acct.spent.rho == rho and len(acct) == 1 and rel.epsilon is None
    # A record changes one count per level by 1: level l costs 1 / (2 sigma_l**2).
    exact = sum(1 / (2 * Fraction(s) ** 2) for s in rel.scales)
    assert exact <= Fraction(repr(rho)) and float(exact) == pytest.approx(rho, rel=1e-12)
    shares = [1 / (2 * s ** 2) / rho for s in rel.scales]
    np.testing.assert_allclose(shares, rel.split, rtol=1e-12)
    # The exact counts of two neighbours (a record more in one leaf) differ by 1 in one unit
    # of every level.
    params = hi.hierarchy_params(SMALL_TREE, 6, None, split, "c", noise=G, rho=rho)
    y = SMALL.copy()
    y[4] += 1
    a = hi.hierarchy_plan(SMALL, params, None, "c").exact
    b = hi.hierarchy_plan(y, params, None, "c").exact
    assert [int(np.abs(u - v).sum()) for u, v in zip(a, b)] == [1, 1, 1]
    assert params.cost == (None, 0.0, rho)


def test_epsilon_delta_takes_the_tight_conversions_rho():
    acct = dp.Accountant(epsilon=1.0, delta=1e-9, composition="zcdp")
    rel = dp.census_hierarchy(SMALL, SMALL_TREE, noise=G, epsilon=1.0, delta=1e-9, rng=0,
                              accountant=acct)
    want = math.nextafter(rho_from_epsilon_delta(1.0, 1e-9), 0.0)
    assert rel.rho == want and (rel.epsilon, rel.delta) == (1.0, 1e-9)
    assert acct.remaining.rho == 0.0                 # the whole budget, and no more
    exact = sum(1 / (2 * Fraction(s) ** 2) for s in rel.scales)
    assert exact <= Fraction(repr(want))
    basic = dp.Accountant(epsilon=1.0, delta=1e-9)
    dp.census_hierarchy(SMALL, SMALL_TREE, noise=G, epsilon=1.0, delta=1e-9, rng=0,
                        accountant=basic)
    assert basic.spent == (1.0, 1e-9)


def test_each_levels_noise_has_variance_sigma_squared():
    n = 100_000
    par = [np.zeros(10, np.int64), np.repeat(np.arange(10), 1000),
           np.repeat(np.arange(10_000), 10)]
    params = hi.hierarchy_params(par, n, None, [0.05, 0.15, 0.3, 0.5], "c", noise=G, rho=0.02)
    # Level 0 has one cell: take its noise from a level of 10^5 cells of the same sigma.
    sigmas = [g.sigma for g in params.noises]
    levels = [np.zeros(n, np.int64) for _ in sigmas]
    hi._noise_levels(_native.Key(dp.ChaCha20(9)), 2, levels, params.noises)
    for s, noise in zip(sigmas, levels):
        var = noise.var(dtype=np.float64)
        assert abs(var / s ** 2 - 1) < 6.7 * math.sqrt(2 / n), (var, s ** 2)
        assert abs(noise.mean()) < 6.7 * s / math.sqrt(n)
    # The levels are independent: distinct cells of the key.
    assert abs(np.corrcoef(levels[2], levels[3])[0, 1]) < 6.7 / math.sqrt(n)


def _dense(parents, n_leaves):
    """The matrix of every unit's leaves, top level first."""
    rows, member = [], np.arange(n_leaves)
    units = [member]
    for p in parents[::-1]:
        member = p[member]
        units.append(member)
    for level in units[::-1]:
        a = np.zeros((level.max() + 1, n_leaves))
        a[level, np.arange(n_leaves)] = 1.0
        rows.append(a)
    return rows


def test_estimates_are_the_generalised_least_squares_with_unequal_variances():
    rng = np.random.default_rng(8)
    par = geography(rng, [1, 3, 9, 40])
    x = rng.poisson(5, 40)
    params = hi.hierarchy_params(par, 40, None, [0.05, 0.15, 0.3, 0.5], "c", noise=G, rho=0.3)
    plan = hi.hierarchy_plan(x, params, None, "c")
    rel = hi.noisy_hierarchy(plan, _native.Key(dp.ChaCha20(1)), 1)
    noisy = [c.copy() for c in plan.exact]            # the noisy counts (overwritten plan)
    a = np.vstack(_dense(par, 40))
    w = np.concatenate([np.full(len(c), 1 / g.variance) for c, g in zip(noisy, params.noises)])
    gram = a.T @ (a * w[:, None])
    leaves = np.linalg.solve(gram, a.T @ (w * np.concatenate(noisy)))
    np.testing.assert_allclose(rel.estimates[-1], leaves, rtol=1e-9, atol=1e-9)
    cov = a @ np.linalg.solve(gram, a.T)
    np.testing.assert_allclose(np.concatenate(rel.variances), np.diag(cov), rtol=1e-9)


def test_estimates_are_unbiased_with_the_stated_variances():
    rng = np.random.default_rng(10)
    par = geography(rng, [1, 4, 12, 30])
    x = rng.poisson(6, 30)
    params = hi.hierarchy_params(par, 30, None, None, "c", noise=G, rho=0.1)
    runs = 3000
    est = []
    for seed in range(runs):
        plan = hi.hierarchy_plan(x, params, None, "c")
        rel = hi.noisy_hierarchy(plan, _native.Key(dp.ChaCha20(seed)), 1)
        est.append(np.concatenate(rel.estimates))
    est = np.array(est)
    want = np.concatenate(rel.variances)
    true = np.concatenate(level_counts(x.astype(np.int64), params.parents))
    assert np.all(np.abs(est.mean(axis=0) - true) < 6 * np.sqrt(want / runs))
    ratio = est.var(axis=0, ddof=1) / want
    assert np.all(np.abs(ratio - 1) < 6 * math.sqrt(2 / (runs - 1))), ratio


@pytest.mark.parametrize("seed", range(6))
def test_children_sum_to_parents_as_non_negative_integers(seed):
    rng = np.random.default_rng(seed)
    par = geography(rng, [1, 5, 40, 500])
    x = rng.poisson(rng.choice([0.05, 1, 40]), 500)           # sparse ones too
    rho = [1e-4, 0.01, 1.0][seed % 3]                          # heavy noise too
    rel = dp.census_hierarchy(x, par, noise=G, rho=rho, rng=seed,
                              accountant=dp.Accountant(rho=10.0))
    check_consistent(rel)
    assert [len(c) for c in rel.counts] == [1, 5, 40, 500]


@pytest.mark.parametrize("sizes", [[1, 2, 6], [1, 3, 10, 40], [1, 51, 400, 3000, 20_000],
                                   [1, 2, 4, 8, 16, 32, 64, 128], [1, 100, 101]])
def test_the_default_split_beats_the_equal_split(sizes):
    rng = np.random.default_rng(len(sizes))
    par = geography(rng, sizes)
    n, levels = sizes[-1], len(sizes)
    best = hi.default_split(par, n)
    assert len(best) == levels and abs(sum(best) - 1) < 1e-12 and min(best) > 0
    f_best = hi.split_objective(par, n, best)
    assert f_best < hi.split_objective(par, n, [1 / levels] * levels)
    # Certified: no split is more than 1e-4 better (convexity and homogeneity: any w* has
    # f(w*) >= 2 f(w) - max(-grad f(w))).
    value, grad = SplitObjective(par, n).value_and_gradient(np.array(best))
    assert value == pytest.approx(f_best, rel=1e-12)
    assert 2 * value - (-grad).max() >= f_best * (1 - 1.0001e-4)
    for _ in range(20):                                      # and any other split
        other = rng.dirichlet(np.ones(levels))
        assert f_best <= hi.split_objective(par, n, other) * (1 + 1e-4)
    # The objective is the release's: per level, the mean of the estimates' variances
    # (at rho, every variance is the objective's divided by 2 rho).
    rel = dp.census_hierarchy(rng.poisson(2, n), par, noise=G, rho=0.7, rng=0,
                              accountant=dp.Accountant(rho=1.0))
    assert rel.split == best
    assert sum(v.mean() for v in rel.variances) * 1.4 == pytest.approx(f_best, rel=1e-9)


def test_the_objectives_gradient_is_exact():
    rng = np.random.default_rng(2)
    for sizes in ([1, 2, 5], [1, 3, 10, 40], [1, 7], [1, 20, 300, 2000]):
        par = geography(rng, sizes)
        f = SplitObjective(par, sizes[-1])
        w = rng.random(len(sizes)) + 0.1
        value, grad = f.value_and_gradient(w)
        assert value == pytest.approx(hi.split_objective(par, sizes[-1], w), rel=1e-12)
        h = 1e-6
        num = [(f(w + h * e) - f(w - h * e)) / (2 * h) for e in np.eye(len(w))]
        np.testing.assert_allclose(grad, num, rtol=1e-6)


def test_laplace_is_unchanged_by_the_keywords():
    kw = dict(rng=4, accountant=dp.Accountant())
    a = dp.census_hierarchy(SMALL, SMALL_TREE, epsilon=1.0, **kw)
    b = dp.census_hierarchy(SMALL, SMALL_TREE, epsilon=1.0, noise="laplace", delta=0.0,
                            rng=4, accountant=dp.Accountant())
    assert [c.tolist() for c in a.counts] == [c.tolist() for c in b.counts]
    assert a.split == (1 / 3,) * 3 and a.rho is None
