"""The tree mechanism: exact variances (against brute force and simulation), unbiased
estimates, the error against independent Laplace, sensitivity of the node counts, and
known answers.

False alarms: each simulation check below is a z-test at 5 standard errors (about 6e-7 per
check, two-sided, by the normal approximation) or a variance-ratio check at 5 standard
errors of a sample variance of sums of Laplace variables (kurtosis at most 6)."""
import numpy as np
import pytest

import dpfast as dp
from dpfast.linear import tree as tr


def test_closed_form_mean_variance_equals_the_mean_of_range_variances():
    for n, b in [(37, 3), (64, 4), (50, 7), (9, 9), (1, 2)]:
        rel = dp.tree_mechanism(np.zeros(n, int), epsilon=1.0, branching=b, rng=0,
                                accountant=dp.Accountant())
        lo, hi = np.triu_indices(n + 1, k=1)
        brute = rel.range_variance(lo, hi).mean()
        exact = tr.mean_range_variance(n, b, rel.height, rel.node_variance)
        assert exact == pytest.approx(brute, rel=1e-12)


def test_range_variance_is_exact_by_linear_algebra():
    # q^T (A^T D A)^-1 q with the node-incidence matrix A built explicitly.
    n, b = 20, 3
    rel = dp.tree_mechanism(np.zeros(n, int), epsilon=0.7, branching=b, rng=0,
                            accountant=dp.Accountant())
    size, h = b ** rel.height, rel.height
    rows = [np.kron(np.eye(size // b ** lv), np.ones(b ** lv)) for lv in range(h)]
    a = np.vstack(rows)
    cov = np.linalg.inv(a.T @ a) * rel.node_variance
    lo, hi = np.triu_indices(n + 1, k=1)
    q = (np.arange(size) >= lo[:, None]) & (np.arange(size) < hi[:, None])
    want = np.einsum("ij,jk,ik->i", q, cov, q)
    np.testing.assert_allclose(rel.range_variance(lo, hi), want, rtol=1e-10)


def test_identity_when_the_tree_does_not_help():
    # Small domains: height 1 (noise on the cells only), variance = length * var.
    for n in (1, 2, 5, 12):
        b, h = tr.tree_shape(n)
        assert h == 1 and b == max(n, 2)
    rel = dp.tree_mechanism(np.arange(5), epsilon=1.0, rng=1, accountant=dp.Accountant())
    np.testing.assert_allclose(rel.range_variance([0, 1], [5, 3]),
                               [5 * rel.node_variance, 2 * rel.node_variance])


@pytest.mark.parametrize("n, floor", [(1024, 1.9), (2**20, 20.0)])
def test_error_over_all_ranges_against_independent_laplace(n, floor):
    # Exact mean variances at the same epsilon (1): identity cells get scale 1/eps.
    b, h = tr.tree_shape(n)
    tree = tr.mean_range_variance(n, b, h, tr.noise_variance(True, float(h)))
    indep = tr.mean_range_variance(n, n, 1, tr.noise_variance(True, 1.0))
    assert (indep / tree) ** 0.5 >= floor
    # The b = 32 tree of the note: 2.04 times lower RMSE at n = 1024.
    if n == 1024:
        v32 = tr.mean_range_variance(n, 32, 2, 2.0 * 4)
        assert (tr.mean_range_variance(n, n, 1, 2.0) / v32) ** 0.5 == pytest.approx(2.04, abs=0.01)


def simulate(counts, runs, **kw):
    acct = dp.Accountant()
    return np.stack([dp.tree_mechanism(counts, epsilon=1.0, rng=s, accountant=acct, **kw)
                     .estimate for s in range(runs)])


def test_estimates_are_unbiased_with_the_stated_variance():
    x = np.random.default_rng(3).integers(0, 30, 40)
    runs = 1000          # exact variances: test_range_variance_is_exact_by_linear_algebra
    est = simulate(x, runs, branching=3)
    rel = dp.tree_mechanism(x, epsilon=1.0, branching=3, rng=0, accountant=dp.Accountant())
    lo = np.array([0, 0, 5, 13, 39, 20])
    hi = np.array([40, 1, 30, 14, 40, 27])
    c = np.concatenate((np.zeros((runs, 1)), np.cumsum(est, axis=1)), axis=1)
    sums = c[:, hi] - c[:, lo]
    truth = np.concatenate(([0], np.cumsum(x)))
    var = rel.range_variance(lo, hi)
    z = (sums.mean(axis=0) - (truth[hi] - truth[lo])) / np.sqrt(var / runs)
    assert np.abs(z).max() < 5
    ratio = sums.var(axis=0) / var
    assert np.abs(ratio - 1).max() < 5 * np.sqrt(5 / runs)


def test_2d_rectangles_unbiased_with_the_stated_variance():
    x = np.random.default_rng(4).integers(0, 10, (9, 12))
    runs = 1000
    est = simulate(x, runs, branching=(3, 2))
    rel = dp.tree_mechanism(x, epsilon=1.0, branching=(3, 2), rng=0,
                            accountant=dp.Accountant())
    boxes = [((0, 0), (9, 12)), ((2, 3), (7, 4)), ((0, 5), (1, 12)), ((4, 1), (9, 9))]
    for (a0, a1), (b0, b1) in boxes:
        sums = est[:, a0:b0, a1:b1].sum(axis=(1, 2))
        var = float(rel.range_variance(([a0], [a1]), ([b0], [b1]))[0])
        assert abs(sums.mean() - x[a0:b0, a1:b1].sum()) < 5 * np.sqrt(var / runs)
        assert abs(sums.var() / var - 1) < 5 * np.sqrt(5 / runs)
        got = rel.range_sums(([a0], [a1]), ([b0], [b1]))[0]
        assert got == pytest.approx(rel.estimate[a0:b0, a1:b1].sum())


def test_each_record_is_in_one_node_per_measured_level():
    # The sensitivity the noise scale assumes: a neighbour moves the node counts by exactly
    # `height` in l1 (product of heights in 2-D).
    for shape, branching in [((100,), 4), ((30,), 2), ((6, 10), (2, 3))]:
        x = np.random.default_rng(5).integers(0, 9, shape)
        trees = tuple(tr._Tree1D(n, *tr.tree_shape(n, b), 1.0) for n, b in
                      zip(shape, branching if isinstance(branching, tuple) else (branching,)))
        levels = int(np.prod([t.h for t in trees]))
        base = np.concatenate([b.ravel() for b in tr._node_blocks(x, trees)])
        for cell in [0, x.size // 2, x.size - 1]:
            y = x.copy().ravel()
            y[cell] += 1
            moved = np.concatenate([b.ravel() for b in
                                    tr._node_blocks(y.reshape(shape), trees)]) - base
            assert np.abs(moved).sum() == levels and moved.max() == 1


def test_same_seed_same_release_whatever_the_threads():
    x = np.random.default_rng(6).integers(0, 100, 300_000)
    a = dp.tree_mechanism(x, epsilon=0.5, rng=11, threads=1, accountant=dp.Accountant())
    b = dp.tree_mechanism(x, epsilon=0.5, rng=11, threads=2, accountant=dp.Accountant())
    c = dp.tree_mechanism(x, epsilon=0.5, rng=12, threads=2, accountant=dp.Accountant())
    np.testing.assert_array_equal(a.estimate, b.estimate)
    assert not np.array_equal(a.estimate, c.estimate)


def test_known_answer():
    rel = dp.tree_mechanism(np.array([5, 0, 3, 9, 1, 2, 8]), epsilon=1.0, branching=2, rng=42,
                            accountant=dp.Accountant())
    assert (rel.branching, rel.height) == (2, 3)
    np.testing.assert_allclose(rel.range_sums([0, 2], [7, 5]), KNOWN, rtol=1e-12)


KNOWN = [29.0, 34 / 3]          # recorded from this implementation


def test_one_charge_of_epsilon_and_float_counts():
    acct = dp.Accountant()
    rel = dp.tree_mechanism(np.linspace(0, 3, 50), epsilon=0.3, rng=1, accountant=acct)
    assert acct.spent == (0.3, 0.0) and len(acct) == 1
    assert rel.estimate.dtype == np.float64 and rel.estimate.shape == (50,)


def test_range_arguments_are_checked():
    rel = dp.tree_mechanism(np.arange(10), epsilon=1.0, rng=1, accountant=dp.Accountant())
    with pytest.raises(ValueError, match="0 <= lo <= hi <= 10"):
        rel.range_sums(3, 11)
    with pytest.raises(ValueError, match="0 <= lo <= hi <= 10"):
        rel.range_variance(5, 4)
    with pytest.raises(TypeError, match="'lo'"):
        rel.range_sums(1.5, 3)
    assert rel.range_sums(4, 4) == 0 and rel.range_variance(4, 4) == 0


def test_2d_variance_is_exact_by_linear_algebra():
    shape, b = (5, 4), (2, 3)
    rel = dp.tree_mechanism(np.zeros(shape, int), epsilon=1.0, branching=b, rng=0,
                            accountant=dp.Accountant())
    mats = []
    for bb, h in zip(b, rel.height):
        size = bb ** h
        mats.append(np.vstack([np.kron(np.eye(size // bb ** lv), np.ones(bb ** lv))
                               for lv in range(h)]))
    a = np.kron(mats[0], mats[1])
    cov = np.linalg.inv(a.T @ a) * rel.node_variance
    size1 = mats[1].shape[1]
    for (a0, a1), (b0, b1) in [((0, 0), (5, 4)), ((1, 2), (4, 3)), ((2, 0), (3, 1))]:
        q = np.zeros((mats[0].shape[1], size1))
        q[a0:b0, a1:b1] = 1
        want = q.ravel() @ cov @ q.ravel()
        got = rel.range_variance(([a0], [a1]), ([b0], [b1]))[0]
        assert got == pytest.approx(want, rel=1e-10)


def test_counts_too_large_to_sum_exactly_are_refused_without_their_values():
    acct = dp.Accountant()
    with pytest.raises(ValueError, match="not shown") as info:
        dp.tree_mechanism(np.full(8, 2**50 + 987_654_321, np.int64), epsilon=1.0,
                          accountant=acct, rng=1)
    assert "987" not in str(info.value) and acct.spent == (0.0, 0.0)
