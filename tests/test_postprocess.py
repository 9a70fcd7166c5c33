"""Post-processing of noisy counts: clipping, simplex projection, sum-preserving rounding.

The projection is checked against its optimality (KKT) conditions and against an exact
rational-arithmetic reference; rounding against a direct transcription of "largest
remainder with a stable sort"; consistent_counts on integers is exact, so it must equal the
reference bit for bit.
"""
import doctest
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from dpfast.releases import postprocess as pp
from dpfast.releases import simplex
from dpfast.releases.postprocess import (
    apply,
    clip_nonnegative,
    consistent_counts,
    project_simplex,
    round_preserving_sum,
)

NAN = float("nan")
INF = float("inf")
EPS = np.finfo(np.float64).eps

small_floats = st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False)
float_vectors = hnp.arrays(np.float64, st.integers(1, 40), elements=small_floats)
int_vectors = hnp.arrays(np.int64, st.integers(1, 40), elements=st.integers(-1000, 1000))
# Subnormal totals are left out: half of 5e-324 is not a float, so no x can sum to it.
totals = st.floats(0, 1e6, allow_nan=False, allow_infinity=False, allow_subnormal=False)


# -- exact references ------------------------------------------------------------------
def exact_threshold(values, total):
    """tau with sum(max(v - tau, 0)) = total, in rational arithmetic (total > 0)."""
    u = sorted((Fraction(v) for v in values), reverse=True)
    total = Fraction(total)
    c, best = Fraction(0), None
    for j, uj in enumerate(u, start=1):
        c += uj
        if uj > (c - total) / j:
            best = (c - total) / j
    return best


def exact_projection(values, total):
    if total == 0:
        return [Fraction(0)] * len(values)
    tau = exact_threshold(values, total)
    return [max(Fraction(v) - tau, Fraction(0)) for v in values]


def reference_rounding(x, total):
    """Largest remainder exactly as specified: floors, then a stable descending sort of the
    fractional parts hands out the leftover units."""
    x = [Fraction(v) for v in x]
    floors = [math.floor(v) for v in x]
    frac = [v - f for v, f in zip(x, floors)]
    order = sorted(range(len(x)), key=lambda i: -frac[i])     # sorted() is stable
    out = list(floors)
    for i in order[:total - sum(floors)]:
        out[i] += 1
    return out


def reference_consistent(counts, total):
    return reference_rounding(exact_projection(counts, total), total)


def sum_tolerance(total, k):
    # The documented guarantee is "far below k ulps of total"; assert k ulps.
    return k * np.spacing(total)


# -- clip_nonnegative --------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64, np.uint16, np.float16,
                                   np.float32, np.float64])
def test_clip_keeps_dtype_and_shape(dtype):
    counts = np.array([[3, -2], [0, 5]]).astype(dtype)      # uint16 wraps -2 to 65534
    before = counts.copy()
    out = clip_nonnegative(counts)
    assert out.dtype == dtype and out.shape == (2, 2)
    np.testing.assert_array_equal(out, np.maximum(counts, 0))
    assert out is not counts
    np.testing.assert_array_equal(counts, before)             # input left alone


def test_clip_lists_scalars_and_empty():
    np.testing.assert_array_equal(clip_nonnegative([1, -1, 2]), [1, 0, 2])
    zero_d = clip_nonnegative(-4)
    assert isinstance(zero_d, np.ndarray) and zero_d.shape == () and zero_d == 0
    empty = clip_nonnegative(np.zeros((0, 3)))
    assert empty.shape == (0, 3) and empty.dtype == np.float64


def test_clip_negative_zero_becomes_positive_zero():
    out = clip_nonnegative(np.array([-0.0, -1e-300]))
    assert not np.signbit(out).any()


def test_clip_rejects_bad_data():
    with pytest.raises(ValueError,
                       match=r"'counts' parameter of clip_nonnegative.*"
                             r"an entry at index 1 is NaN"):
        clip_nonnegative([1.0, NAN])
    with pytest.raises(ValueError, match="'counts'.*index 0 is infinite"):
        clip_nonnegative(np.array([INF], dtype=np.float32))
    for bad in (["a", "b"], [True, False], np.array([1 + 2j])):
        with pytest.raises(TypeError, match="'counts' parameter of clip_nonnegative"):
            clip_nonnegative(bad)


# -- project_simplex -----------------------------------------------------------------------
def assert_kkt(values, x, total):
    """x = max(values - tau, 0) for one tau: the optimality conditions of the projection."""
    values = np.asarray(values, dtype=np.float64).ravel()
    x = x.ravel()
    scale = max(float(np.abs(values).max()), total, 1.0)
    tol = 64 * EPS * scale
    active = x > 0
    assert active.any()
    tau = float(np.mean((values - x)[active]))
    np.testing.assert_allclose((values - x)[active], tau, rtol=0, atol=tol)
    assert np.all(values[~active] - tau <= tol)


@settings(max_examples=200, deadline=None)
@given(float_vectors, totals)
def test_projection_is_feasible_and_optimal(values, total):
    x = project_simplex(values, total)
    assert x.dtype == np.float64 and x.shape == values.shape
    assert np.all(x >= 0)
    assert abs(float(np.sum(x)) - total) <= sum_tolerance(total, values.size)
    if total > 0:
        assert_kkt(values, x, total)
        exact = np.array([float(v) for v in exact_projection(values.tolist(), total)])
        scale = max(float(np.abs(values).max()), total, 1.0)
        np.testing.assert_allclose(x, exact, rtol=0, atol=64 * EPS * scale)


@settings(max_examples=100, deadline=None)
@given(hnp.arrays(np.float64, st.integers(1, 40), elements=st.floats(0, 1e6)))
def test_projection_of_a_point_in_the_simplex_is_that_point(x):
    total = float(np.sum(x))
    assume(total > 0)
    np.testing.assert_allclose(project_simplex(x, total), x, rtol=0,
                               atol=8 * x.size * np.spacing(total))


# Far from the subnormal range, so that scaling by 2^-30 stays exact.
normal_floats = small_floats.filter(lambda v: v == 0 or abs(v) > 1e-200)


@settings(max_examples=100, deadline=None)
@given(hnp.arrays(np.float64, st.integers(1, 40), elements=normal_floats),
       normal_floats.map(abs), st.integers(-30, 30))
def test_projection_commutes_with_power_of_two_scaling(values, total, e):
    # Every step (sums, divisions by counts, subtractions) scales exactly by 2^e.
    scaled = project_simplex(values * 2.0**e, total * 2.0**e)
    np.testing.assert_array_equal(scaled, project_simplex(values, total) * 2.0**e)


@settings(max_examples=100, deadline=None)
@given(float_vectors, totals.filter(lambda t: t > 0), small_floats)
def test_projection_ignores_a_common_shift(values, total, shift):
    x = project_simplex(values, total)
    y = project_simplex(values + shift, total)
    scale = max(float(np.abs(values).max()), abs(shift), total, 1.0)
    np.testing.assert_allclose(y, x, rtol=0, atol=64 * EPS * scale)


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 30).flatmap(
    lambda k: st.tuples(*[hnp.arrays(np.float64, k, elements=small_floats)] * 2)), totals)
def test_projection_is_non_expansive(pair, total):
    a, b = pair
    pa, pb = project_simplex(a, total), project_simplex(b, total)
    scale = max(float(np.abs(a).max()), float(np.abs(b).max()), total, 1.0)
    bound = float(np.linalg.norm(a - b)) + 64 * EPS * scale * math.sqrt(a.size)
    assert float(np.linalg.norm(pa - pb)) <= bound


def test_projection_examples():
    np.testing.assert_array_equal(project_simplex([3.0, -1.0, 2.0], 3), [2.0, 0.0, 1.0])
    np.testing.assert_array_equal(project_simplex([5, 5, 5, 5], 2), [0.5] * 4)
    np.testing.assert_array_equal(project_simplex([-7.0], 4.5), [4.5])
    np.testing.assert_array_equal(project_simplex([1.0, 2.0], 0), [0.0, 0.0])
    np.testing.assert_array_equal(project_simplex(np.array(-3.0), 2.0), np.array(2.0))


def test_projection_shapes_and_empty():
    values = np.arange(12.0).reshape(3, 4) - 5
    x = project_simplex(values, 10)
    assert x.shape == (3, 4)
    assert_kkt(values, x, 10)
    empty = project_simplex(np.zeros((0, 2)), 0)
    assert empty.shape == (0, 2) and empty.dtype == np.float64
    with pytest.raises(ValueError, match="'total' parameter of project_simplex must be 0"):
        project_simplex([], 1.0)


def test_projection_when_values_dwarf_the_total():
    # Naive v - tau would lose everything below the ulp (2.0) of 1e16.
    values = 1e16 + np.array([0.0, 2.0, 4.0, -8.0])
    x = project_simplex(values, 3.0)
    np.testing.assert_array_equal(x, [0.0, 0.5, 2.5, 0.0])
    x = project_simplex(np.array([1.0, 1.0]), 1e-300)
    np.testing.assert_array_equal(x, [5e-301, 5e-301])


def test_projection_large_heavy_tailed_input_uses_the_sort(monkeypatch):
    # Concave spreads make each pruning pass drop only a few cells, so after the allowed
    # passes the sort has to settle the threshold.
    calls = []
    real = simplex._sorted_threshold
    monkeypatch.setattr(simplex, "_sorted_threshold", lambda *a: calls.append(1) or real(*a))
    rng = np.random.default_rng(3)
    for values, total in [(-np.arange(2000.0) ** 2, 1e5), (np.sqrt(np.arange(2000.0)), 100.0)]:
        values = rng.permutation(values)
        calls.clear()
        x = project_simplex(values, total)
        assert calls
        assert abs(float(np.sum(x)) - total) <= sum_tolerance(total, values.size)
        assert_kkt(values, x, total)
        exact = np.array([float(v) for v in exact_projection(values.tolist(), total)])
        np.testing.assert_allclose(x, exact, rtol=0, atol=64 * EPS * 4e6)


def test_projection_of_a_big_noisy_histogram():
    rng = np.random.default_rng(7)
    truth = rng.poisson(rng.choice([0.0, 2.0, 40.0], size=200_000))
    noisy = truth + rng.laplace(scale=3.0, size=truth.size)
    total = float(truth.sum())
    x = project_simplex(noisy, total)
    assert np.all(x >= 0)
    assert abs(float(np.sum(x)) - total) <= 16 * math.log2(x.size) * EPS * total
    assert_kkt(noisy, x, total)


@pytest.mark.parametrize("total, exc", [(-1.0, ValueError), (NAN, ValueError),
                                        (INF, ValueError), ("3", TypeError),
                                        (True, TypeError), (None, TypeError)])
def test_projection_rejects_bad_total(total, exc):
    with pytest.raises(exc, match=r"The 'total' parameter of project_simplex must be a "
                                  r"float in \[0, inf\)\. Got .* instead\."):
        project_simplex([1.0, 2.0], total)


def test_projection_rejects_bad_values():
    with pytest.raises(ValueError, match=r"'values' parameter of project_simplex.*"
                                         r"an entry at index \(0, 1\) is NaN"):
        project_simplex([[1.0, NAN]], 1.0)
    with pytest.raises(TypeError, match="'values' parameter of project_simplex"):
        project_simplex(["x"], 1.0)


# -- round_preserving_sum ----------------------------------------------------------------
nonneg_vectors = hnp.arrays(np.float64, st.integers(1, 40),
                            elements=st.floats(0, 1e6, allow_nan=False, allow_infinity=False))


@settings(max_examples=200, deadline=None)
@given(nonneg_vectors, st.data())
def test_rounding_matches_the_largest_remainder_reference(x, data):
    low = int(np.floor(x).sum())
    total = data.draw(st.integers(low, low + x.size))
    y = round_preserving_sum(x, total)
    assert y.dtype == np.int64 and y.shape == x.shape
    assert int(y.sum()) == total
    assert np.all((y == np.floor(x)) | (y == np.floor(x) + 1))
    assert np.all(np.abs(y - x) <= 1)      # 1 only for an integer that gets a unit
    assert y.tolist() == reference_rounding(x.tolist(), total)


def test_rounding_ties_go_to_the_lower_index():
    np.testing.assert_array_equal(round_preserving_sum([0.5] * 4, 2), [1, 1, 0, 0])
    x = np.array([[2.25, 1.75], [0.75, 3.25]])
    y = round_preserving_sum(x, 8)          # floors sum to 6; the two 0.75s win
    np.testing.assert_array_equal(y, [[2, 2], [1, 3]])
    many = np.full(1000, 0.5)
    first = round_preserving_sum(many, 300)
    np.testing.assert_array_equal(first, (np.arange(1000) < 300).astype(np.int64))
    np.testing.assert_array_equal(round_preserving_sum(many, 300), first)


def test_rounding_edges():
    np.testing.assert_array_equal(round_preserving_sum([0.0, 0.0], 0), [0, 0])
    np.testing.assert_array_equal(round_preserving_sum([0.0, 0.0], 2), [1, 1])
    np.testing.assert_array_equal(round_preserving_sum([2.0, 3.0], 5.0), [2, 3])
    assert round_preserving_sum(np.zeros((0, 4)), 0).shape == (0, 4)
    # Integers round exactly even where float64 cannot hold them.
    big = 2**60 + 1
    np.testing.assert_array_equal(round_preserving_sum([big, 3], big + 4), [big + 1, 3])


@pytest.mark.parametrize("x, total, exc, pattern", [
    # Messages name the bad entry by position and the side of the reachable totals a total
    # falls on, never an entry or the data's sum.
    ([0.5, -0.25], 0, ValueError, r"'x' parameter of round_preserving_sum must be "
                                  r"non-negative\. Got an entry at index 1 is negative"),
    ([1.0, NAN], 1, ValueError, r"'x' parameter of round_preserving_sum.*index 1 is NaN"),
    ([1.5, 2.5], 6, ValueError, r"'total' parameter of round_preserving_sum must be between "
                                r"sum\(floor\(x\)\) and sum\(floor\(x\)\) \+ x\.size "
                                r"\(x\.size = 2\)\. Got total=6, above sum\(floor\(x\)\) "
                                r"\+ x\.size, instead\."),
    ([1.5, 2.5], 2, ValueError, r"'total'.*between.*Got total=2, below sum"),
    ([4, 5], 8, ValueError, r"'total'.*between.*Got total=8, below sum\(floor\(x\)\),"),
    ([], 1, ValueError, r"'total'.*between.*x\.size = 0\)\. Got total=1, above"),
    ([1.5], 2.5, ValueError, r"'total' parameter of round_preserving_sum must be a "
                             r"non-negative integer\. Got 2\.5 instead\."),
    ([1.5], -1, ValueError, r"non-negative integer\. Got -1 instead"),
    ([1.5], True, TypeError, r"'total'.*Got True instead"),
    ([1.5], "2", TypeError, r"'total'.*Got '2' instead"),
    ([1e300, 1e300], 0, ValueError, r"'x'.*below 2\^62"),
])
def test_rounding_rejects(x, total, exc, pattern):
    with pytest.raises(exc, match=pattern):
        round_preserving_sum(x, total)


def test_rounding_repair_path_for_out_of_reach_sums():
    # consistent_counts repairs a float projection whose sum drifted by whole units; the
    # public function refuses such input instead.
    y = simplex.largest_remainder(np.array([2.0, 3.0, 0.5]), 3, "f", repair=True)
    assert y.sum() == 3 and np.all(y >= 0)
    np.testing.assert_array_equal(y, [1, 2, 0])  # the zero fractions give first, lowest first
    y = simplex.largest_remainder(np.array([0.2, 0.3]), 5, "f", repair=True)
    np.testing.assert_array_equal(y, [2, 3])


# -- consistent_counts -------------------------------------------------------------------
@settings(max_examples=200, deadline=None)
@given(int_vectors, st.data())
def test_consistent_integer_counts_are_exact(counts, data):
    total = data.draw(st.integers(0, int(np.abs(counts).sum()) + 50))
    y = consistent_counts(counts, total)
    assert y.dtype == np.int64 and y.shape == counts.shape
    assert int(y.sum()) == total and np.all(y >= 0)
    assert y.tolist() == reference_consistent(counts.tolist(), total)


@settings(max_examples=50, deadline=None)
@given(hnp.arrays(np.int64, st.integers(1, 12),
                  elements=st.integers(-2**61, 2**61)), st.integers(1, 2**53))
def test_consistent_integer_counts_exact_at_huge_magnitudes(counts, total):
    # |counts| * size passes 2^63 here, so sums go through the overflow-free split.
    y = consistent_counts(counts, total)
    assert y.tolist() == reference_consistent(counts.tolist(), total)


@settings(max_examples=200, deadline=None)
@given(float_vectors, st.integers(0, 10**6))
def test_consistent_float_counts_round_the_projection(counts, total):
    y = consistent_counts(counts, total)
    assert y.dtype == np.int64 and int(y.sum()) == total and np.all(y >= 0)
    exact = np.array([float(v) for v in exact_projection(counts.tolist(), total)])
    scale = max(float(np.abs(counts).max()), total, 1.0)
    assert np.all(np.abs(y - exact) < 1 + 64 * EPS * scale)


def test_consistent_default_total():
    np.testing.assert_array_equal(consistent_counts([12, -3, 5, 1]), [11, 0, 4, 0])
    assert consistent_counts([2.4, 2.4]).sum() == 5      # round(4.8)
    assert consistent_counts([2.25, 0.0]).sum() == 2     # round(2.25)
    np.testing.assert_array_equal(consistent_counts([-5, 3]), [0, 0])  # max(0, -2)
    assert consistent_counts([0.5, 0.5, 0.5, 0.5]).sum() == 2   # round(2.0)


def test_consistent_ties_go_to_the_lowest_active_index():
    # tau = -2/3: all active cells share the fraction 2/3; two units are left over.
    np.testing.assert_array_equal(consistent_counts([12, -3, 5, 1], 20), [13, 0, 6, 1])
    np.testing.assert_array_equal(consistent_counts([1, 1, 1], 5), [2, 2, 1])
    np.testing.assert_array_equal(consistent_counts([[0, 0], [0, 0]], 2), [[1, 1], [0, 0]])


def test_consistent_shapes_and_empty():
    counts = np.array([[5, -1, 3], [0, 7, -2]])
    y = consistent_counts(counts, 10)
    assert y.shape == (2, 3) and y.sum() == 10
    assert y.tolist() == np.reshape(reference_consistent(counts.ravel().tolist(), 10),
                                    (2, 3)).tolist()
    assert consistent_counts(np.zeros((0, 3), dtype=np.int64)).shape == (0, 3)
    assert consistent_counts([], 0).dtype == np.int64
    with pytest.raises(ValueError, match=r"'total' parameter of consistent_counts must be 0 "
                                         r"when 'counts' is empty\. Got 4 instead\."):
        consistent_counts([], 4)
    zero_d = consistent_counts(np.int64(-3), 2)
    assert zero_d.shape == () and zero_d == 2


def test_consistent_counts_beyond_the_exact_range_use_floats():
    y = consistent_counts(np.array([2**62, -2**62, 5]), 10)
    np.testing.assert_array_equal(y, [10, 0, 0])


def test_consistent_integer_path_jumps_when_pruning_is_slow(monkeypatch):
    calls = []
    real = simplex._sorted_threshold
    monkeypatch.setattr(simplex, "_sorted_threshold", lambda *a: calls.append(1) or real(*a))
    rng = np.random.default_rng(5)
    counts = rng.permutation(-np.arange(3000, dtype=np.int64) ** 2)
    total = 10**5 + 7
    y = consistent_counts(counts, total)
    assert calls
    assert y.tolist() == reference_consistent(counts.tolist(), total)


def test_consistent_is_closer_to_the_truth_on_a_fixed_noisy_histogram():
    """What is asserted, and why.

    With ``total`` the true total, the truth lies in the convex set
    {x >= 0, sum(x) = total}, and projection onto a closed convex set never increases the
    distance to a point of the set: ||P(noisy) - truth|| <= ||noisy - truth|| always. The
    rounding then moves each cell by less than 1, so ||consistent - truth|| <=
    ||P(noisy) - truth|| + sqrt(k) always. That the rounded result also beats the raw noisy
    counts and the clipped counts is an empirical fact about this fixed, seeded example
    (sparse truth, scale-2 noise), asserted as a regression check, not a theorem.
    """
    rng = np.random.default_rng(2024)
    k = 5000
    truth = rng.poisson(rng.choice([0.0, 1.0, 30.0], size=k, p=[0.6, 0.3, 0.1]))
    noise = (rng.geometric(1 - math.exp(-0.5), size=k)
             - rng.geometric(1 - math.exp(-0.5), size=k))    # discrete Laplace, scale 2
    noisy = truth + noise
    total = int(truth.sum())

    def dist(a):
        return float(np.linalg.norm(np.asarray(a, dtype=np.float64) - truth))

    projected = project_simplex(noisy, total)
    consistent = consistent_counts(noisy, total)
    assert dist(projected) <= dist(noisy)
    assert dist(consistent) <= dist(projected) + math.sqrt(k)
    assert dist(consistent) <= dist(noisy)
    assert dist(consistent) <= dist(clip_nonnegative(noisy))


@settings(max_examples=100, deadline=None)
@given(hnp.arrays(np.int64, st.integers(1, 30), elements=st.integers(0, 50)), st.data())
def test_projection_never_moves_away_from_a_truth_with_the_same_total(truth, data):
    noise = data.draw(hnp.arrays(np.int64, truth.size, elements=st.integers(-20, 20)))
    total = int(truth.sum())
    assume(total > 0)
    noisy = truth + noise
    projected = project_simplex(noisy, total)
    slack = 64 * EPS * (total + 70) * math.sqrt(truth.size)
    assert np.linalg.norm(projected - truth) <= np.linalg.norm(noisy - truth) + slack


@pytest.mark.parametrize("total, exc, pattern", [
    (-3, ValueError, r"^The 'total' parameter of consistent_counts must be a non-negative "
                     r"integer\. Got -3 instead\.$"),
    (2.5, ValueError, r"non-negative integer\. Got 2\.5 instead"),
    (NAN, ValueError, r"non-negative integer\. Got nan instead"),
    (INF, ValueError, r"non-negative integer\. Got inf instead"),
    (True, TypeError, r"'total'.*Got True instead"),
    ("5", TypeError, r"'total'.*Got '5' instead"),
    (2**53 + 1, ValueError, r"non-negative integer at most 9007199254740992\. "
                            r"Got 9007199254740993 instead"),
])
def test_consistent_rejects_bad_total(total, exc, pattern):
    with pytest.raises(exc, match=pattern):
        consistent_counts([1, 2, 3], total)


@pytest.mark.parametrize("total", [6, 6.0, np.int32(6), np.uint64(6), np.float32(6.0)])
def test_consistent_accepts_integral_totals(total):
    np.testing.assert_array_equal(consistent_counts([1, 2, 3], total), [1, 2, 3])


def test_consistent_rejects_bad_counts():
    with pytest.raises(ValueError, match=r"'counts' parameter of consistent_counts must not "
                                         r"contain NaN or infinity\. "
                                         r"Got an entry at index 2 is NaN"):
        consistent_counts([1.0, 2.0, NAN])
    with pytest.raises(ValueError, match=r"'counts'.*at index \(0, 1\) is infinite"):
        consistent_counts([[1.0, -INF]], 3)
    for bad in (["1", "2"], [True, False], np.array([object(), 1])):
        with pytest.raises(TypeError, match="'counts' parameter of consistent_counts"):
            consistent_counts(bad)
    with pytest.raises(ValueError, match=r"'counts' parameter of consistent_counts must sum "
                                         r"to at most 2\^53"):
        consistent_counts([1e300, 1e300])


# -- apply ---------------------------------------------------------------------------------
def test_apply_dispatches():
    counts = np.array([3, -1, 4])
    assert apply(counts, None) is counts
    np.testing.assert_array_equal(apply(counts, "clip"), [3, 0, 4])
    np.testing.assert_array_equal(apply(counts, "consistent"), [3, 0, 3])   # total 6
    np.testing.assert_array_equal(apply(counts, "consistent", total=6), [3, 0, 3])
    np.testing.assert_array_equal(apply(counts, "clip", total=99), [3, 0, 4])
    assert apply(counts, lambda c: int(c.sum())) == 6
    assert counts.tolist() == [3, -1, 4]


@pytest.mark.parametrize("bad", ["Clip", "round", "", 3, ["clip"]])
def test_apply_rejects_unknown_postprocess(bad):
    with pytest.raises(ValueError, match=r"The 'postprocess' parameter of apply must be None, "
                                         r"'clip', 'consistent' or a callable\. "
                                         r"Got .* instead"):
        apply([1, 2], bad)


def test_apply_passes_errors_through():
    with pytest.raises(ValueError, match="'total' parameter of consistent_counts"):
        apply([1, 2], "consistent", total=-1)


# -- module --------------------------------------------------------------------------------
def test_docstring_examples_run():
    result = doctest.testmod(pp, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0 and result.attempted > 0


def test_public_names():
    assert sorted(pp.__all__) == ["apply", "clip_nonnegative", "consistent_counts",
                                  "project_simplex", "round_preserving_sum"]
    for name in pp.__all__:
        assert len(getattr(pp, name).__doc__) > 200
