"""JointExp, built for the quantile comparison (dpfast.benchmarks.quantiles): its draws follow
the exponential mechanism's law exactly (chi-square against the enumeration of every tuple,
false-alarm rate 1e-4), and its utility's sensitivity is the one its scale assumes."""
import itertools
import math

import numpy as np
import pytest
from scipy import stats

import dpfast as dp
from dpfast.benchmarks import quantiles as Q

ALPHA = 1e-4


def exact_law(s, lo, hi, qs, epsilon):
    """Every nondecreasing tuple of integers in [lo, hi] and its probability."""
    a = epsilon / 4.0
    tuples = list(itertools.combinations_with_replacement(range(lo, hi + 1), len(qs)))
    logw = np.array([a * Q.utility(s, np.array(y), qs) for y in tuples])
    p = np.exp(logw - logw.max())
    return tuples, p / p.sum()


@pytest.mark.parametrize("s, qs", [
    ([2, 2, 5], [0.3, 0.7]),                  # a repeated value: an empty gap
    ([1, 6], [0.2, 0.5, 0.8]),                # three outputs can share a gap
    ([0, 3, 3, 7, 7], [0.1, 0.25, 0.9]),      # values on both bounds
])
def test_draws_follow_the_exponential_mechanism_exactly(s, qs):
    s, qs = np.array(s), np.array(qs)
    tuples, p = exact_law(s, 0, 7, qs, 1.0)
    draws = Q.joint_exp(s, 0, 7, qs, 1.0, 1, np.random.Generator(dp.ChaCha20(5)),
                        draws=15_000)
    assert (np.diff(draws, axis=1) >= 0).all() and draws.min() >= 0 and draws.max() <= 7
    index = {t: i for i, t in enumerate(tuples)}
    counts = np.bincount([index[tuple(d)] for d in draws.tolist()], minlength=len(tuples))
    expected = p * draws.shape[0]
    # Cells expected fewer than 5 times are pooled into one.
    small = expected < 5
    obs = np.r_[counts[~small], counts[small].sum()]
    exp = np.r_[expected[~small], expected[small].sum()]
    if exp[-1] == 0:
        obs, exp = obs[:-1], exp[:-1]
    assert stats.chisquare(obs, exp).pvalue > ALPHA


def test_utility_sensitivity_is_two_a_row():
    """A value added or removed anywhere changes every tuple's utility by at most 2 (the
    sensitivity the scale epsilon / 4 assumes), and by exactly 2 for some."""
    gen = np.random.default_rng(3)
    qs = np.array([0.2, 0.5, 0.9])
    worst = 0.0
    for _ in range(12):
        s = np.sort(gen.integers(0, 8, size=gen.integers(1, 7)))
        for y in itertools.combinations_with_replacement(range(8), 3):
            u = Q.utility(s, np.array(y), qs)
            for v in range(8):
                worst = max(worst, abs(Q.utility(np.sort(np.r_[s, v]), np.array(y), qs) - u))
            for i in range(s.size):
                worst = max(worst, abs(Q.utility(np.delete(s, i), np.array(y), qs) - u))
    assert math.isclose(worst, 2.0) or worst < 2.0
    assert worst > 1.5


def test_compare_reports_every_method():
    from dpfast.benchmarks.records import make_table
    table = make_table(rows=20_000, people=2_000, departments=10, seed=2)
    out = Q.compare(table, rows=300, m=9, repeats=2)
    assert [r["method"] for r in out] == ["joint", "recursive", "independent"]
    for r in out:
        assert 0.0 <= r["error"] <= r["worst"] < 1.0 and r["seconds"] > 0.0
