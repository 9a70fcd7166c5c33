"""Gaussian noise in tree_mechanism (noise="gaussian" with rho=, or with epsilon= and delta=).

What is proved here:
- bad privacy keywords (a table of combinations) are refused with TypeError/ValueError for
  1-D integer, 1-D float and 2-D trees, nothing charged and the generator not advanced;
- pinned known answers on fixed seeds; the same release for 1 and 2 threads;
- a record added to a cell changes exactly ``h`` measured nodes by 1 (the product of the
  axes' heights in 2-D): l2 sensitivity ``sqrt(h)``; the charged rho is exactly
  ``h / (2 sigma**2)`` for that sigma (a rho release), and under (epsilon, delta) sigma is
  the tight calibration over that l2 sensitivity (one measure, never per level);
- range sums' variance over many releases matches ``range_variance``, computed from
  ``sigma**2`` (a chi-square-scaled test at 6 standard errors: false alarm about 1e-9 per
  comparison), so the noise has variance sigma**2 and the least squares uses it;
- the default shape for Gaussian noise (node variance growing as ``h``) has a mean range
  variance no larger than the Laplace default's shape under Gaussian noise.
"""
import math
from fractions import Fraction

import numpy as np
import pytest

import dpfast as dp
from dpfast import _native
from dpfast.linear import tree as tr
from dpfast.noise import gaussian_sigma_for
from refusals import GAUSSIAN_BAD_KEYWORDS, refuses_all, spends_nothing

RELEASES = {
    "1-D int": lambda **kw: dp.tree_mechanism(np.arange(20) % 5, **kw),
    "1-D float": lambda **kw: dp.tree_mechanism(np.linspace(0, 3, 20), **kw),
    "2-D int": lambda **kw: dp.tree_mechanism(np.ones((6, 5), np.int64), **kw),
}

G = "gaussian"
BAD = GAUSSIAN_BAD_KEYWORDS + [
    ({"noise": G, "rho": 0.5, "branching": 1}, ValueError),
]


@pytest.mark.parametrize("name", RELEASES)
def test_bad_keywords_are_refused_before_the_charge_and_the_draw(name):
    release = RELEASES[name]
    acct, rng = dp.Accountant(rho=10.0), dp.ChaCha20(3)
    # Integer counts: a sigma beyond the discrete Gaussian sampler's range (2**39).
    integer_only = [({"noise": G, "rho": 1e-30}, ValueError)] if "float" not in name else []
    refuses_all(release, BAD + integer_only, acct, rng)
    # A cost in rho alone on an (epsilon, delta) accountant: refused at the charge, before
    # the key is drawn.
    basic = dp.Accountant(epsilon=5.0, delta=1e-6)
    with spends_nothing(basic, rng):
        with pytest.raises(ValueError, match="rho alone"):
            release(noise=G, rho=0.5, accountant=basic, rng=rng)
    # And the release goes through on the same objects afterwards.
    release(noise=G, rho=0.5, accountant=acct, rng=rng)
    assert acct.spent.rho == 0.5 and len(acct) == 1


def test_known_answers():
    x = np.array([5, 0, 3, 9, 1, 2, 8])
    rel = dp.tree_mechanism(x, noise=G, rho=0.5, branching=2, rng=42,
                            accountant=dp.Accountant(rho=1.0))
    np.testing.assert_allclose(rel.estimate, np.array([106, 85, 29, 176, 85, 22, 197]) / 21,
                               rtol=1e-12)
    assert rel.scale == pytest.approx(math.sqrt(3.0), rel=1e-15)
    rel = dp.tree_mechanism(x, noise=G, epsilon=1.0, delta=1e-6, branching=2, rng=42,
                            accountant=dp.Accountant(epsilon=1.0, delta=1e-6))
    np.testing.assert_allclose(rel.estimate, np.array([146, 356, -92, 139, 306, -51, 327]) / 21,
                               rtol=1e-12)
    rel = dp.tree_mechanism(np.array([0.5, 1.25, 3.0, 2.0]), noise=G, rho=2.0, branching=2,
                            rng=7, accountant=dp.Accountant(rho=2.0))
    np.testing.assert_allclose(rel.estimate,
                               [-0.52267392, 2.10901038, 3.70621077, 2.28842513], atol=1e-8)


@pytest.mark.parametrize("data", [np.random.default_rng(1).poisson(4, 300_000),
                                  np.random.default_rng(2).poisson(4, (700, 600)).astype(float)])
def test_threads_give_the_same_release(data):
    kw = dict(noise=G, rho=0.3, rng=11)
    a = dp.tree_mechanism(data, threads=1, accountant=dp.Accountant(rho=1.0), **kw)
    b = dp.tree_mechanism(data, threads=2, accountant=dp.Accountant(rho=1.0), **kw)
    np.testing.assert_array_equal(a.estimate, b.estimate)
    c = dp.tree_mechanism(data, threads=2, accountant=dp.Accountant(rho=1.0),
                          **{**kw, "rng": 12})
    assert not np.array_equal(a.estimate, c.estimate)


@pytest.mark.parametrize("shape, branching", [((100,), 3), ((50,), None), ((9, 20), (3, 4)),
                                              ((7, 30), None)])
def test_one_record_moves_h_nodes_by_one_and_the_charge_is_its_exact_rho(shape, branching):
    x = np.random.default_rng(0).poisson(2, shape)
    params = tr.tree_params(x.shape, True, None, branching, "tree_mechanism", noise=G,
                            rho=0.25)
    h = math.prod(t.h for t in params.trees)
    for cell in [(0,) * len(shape), tuple(s - 1 for s in shape), tuple(s // 2 for s in shape)]:
        y = x.copy()
        y[cell] += 1
        diff = tr.tree_plan(y, params, "t").nodes - tr.tree_plan(x, params, "t").nodes
        assert np.count_nonzero(diff) == h and set(np.unique(diff)) == {0.0, 1.0}
    # The cost: rho = l2**2 / (2 sigma**2) with l2**2 = h, exactly (never understated).
    acct = dp.Accountant(rho=1.0)
    rel = dp.tree_mechanism(x, noise=G, rho=0.25, branching=branching, rng=0, accountant=acct)
    assert acct.spent.rho == 0.25 and len(acct) == 1 and rel.rho == 0.25
    exact = Fraction(h) / (2 * Fraction(rel.scale) ** 2)
    assert exact <= Fraction("0.25") and float(exact) == pytest.approx(0.25, rel=1e-14)
    assert params.cost.rho == 0.25 and params.cost.epsilon is None
    # Under (epsilon, delta): one sigma, the tight one over the whole l2 sensitivity.
    acct = dp.Accountant(epsilon=1.0, delta=1e-7)
    rel = dp.tree_mechanism(x, noise=G, epsilon=1.0, delta=1e-7, branching=branching, rng=0,
                            accountant=acct)
    assert rel.scale == gaussian_sigma_for(math.sqrt(h), 1.0, 1e-7, True)
    assert acct.spent == (1.0, 1e-7) and len(acct) == 1
    assert rel.node_variance == rel.scale ** 2


def _repeat(x, params, runs):
    out = []
    for seed in range(runs):
        plan = tr.tree_plan(x, params, "tree_mechanism")
        out.append(tr.noisy_tree(plan, _native.Key(dp.ChaCha20(seed)), 1))
    return out


def test_range_variance_matches_the_gaussian_noise():
    # 16 cells, b = 2 (h = 4): sigma**2 = 4 / (2 rho) = 8 at rho = 0.25.
    x = np.random.default_rng(5).poisson(3, 16)
    params = tr.tree_params(x.shape, True, None, 2, "tree_mechanism", noise=G, rho=0.25)
    assert params.node_variance == pytest.approx(8.0, rel=1e-14)
    runs = 3000
    rels = _repeat(x, params, runs)
    lo, hi = np.array([0, 3, 5, 0, 15]), np.array([1, 4, 12, 16, 16])
    sums = np.array([r.range_sums(lo, hi) for r in rels])
    want = rels[0].range_variance(lo, hi)
    true = np.array([x[a:b].sum() for a, b in zip(lo, hi)])
    # Unbiased, and variance within 6 standard errors of the sample variance (the ratio's
    # standard deviation is sqrt(2 / (runs - 1)) = 0.026).
    se = np.sqrt(want / runs)
    assert np.all(np.abs(sums.mean(axis=0) - true) < 6 * se)
    ratio = sums.var(axis=0, ddof=1) / want
    assert np.all(np.abs(ratio - 1) < 6 * math.sqrt(2 / (runs - 1))), ratio


def test_range_variance_matches_in_two_dimensions():
    x = np.random.default_rng(6).poisson(3, (4, 4))
    params = tr.tree_params(x.shape, True, None, (2, 2), "tree_mechanism", noise=G, rho=0.5)
    runs = 3000
    rels = _repeat(x, params, runs)
    lo, hi = (np.array([0, 1, 0]), np.array([0, 2, 0])), (np.array([1, 3, 4]), np.array([1, 4, 4]))
    sums = np.array([r.range_sums(lo, hi) for r in rels])
    ratio = sums.var(axis=0, ddof=1) / rels[0].range_variance(lo, hi)
    assert np.all(np.abs(ratio - 1) < 6 * math.sqrt(2 / (runs - 1))), ratio


@pytest.mark.parametrize("n", [10, 100, 1000, 5000, 65_536])
def test_the_gaussian_default_shape_is_the_best_for_gaussian_noise(n):
    b_g, h_g = tr.tree_shape(n, None, True)
    b_l, h_l = tr.tree_shape(n, None)
    # Under Gaussian noise the node variance is proportional to h.
    gauss = tr.mean_range_variance(n, b_g, h_g, h_g)
    assert gauss <= tr.mean_range_variance(n, b_l, h_l, h_l) * (1 + 1e-12)
    rel = dp.tree_mechanism(np.zeros(n, np.int64), noise=G, rho=1.0, rng=0,
                            accountant=dp.Accountant(rho=1.0))
    assert (rel.branching, rel.height) == (b_g, h_g)
    assert rel.node_variance == pytest.approx(h_g / 2.0, rel=1e-14)
