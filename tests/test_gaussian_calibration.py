"""One Gaussian release under an (epsilon, delta) budget: the exact delta of the discrete
Gaussian on k cells (``dpfast.zcdp.discrete_gaussian_delta``) and the smallest sigma
(``dpfast.zcdp.gaussian_sigma_for``).

The exact delta is checked against three independent computations: a brute-force sum in
50-digit arithmetic (mpmath) for small cases, a direct (non-FFT) convolution in float64 for
the Adult-sized case, and Google's ``dp_accounting`` (its exact one-dimensional discrete
Gaussian, and its optimistic and pessimistic privacy loss distributions composed k times,
which bracket the truth)."""
import math

import numpy as np
import pytest

from dpfast.mechanisms.gaussian import gaussian_sigma
from dpfast.zcdp import (delta_from_rho, discrete_gaussian_delta, epsilon_from_rho,
                         gaussian_sigma_for, rho_from_epsilon_delta, rho_gaussian)

mpmath = pytest.importorskip("mpmath", reason="mpmath (a dependency of sympy) not installed")


def exact_delta(sigma, k, epsilon, digits=50):
    """delta = sum over s < s* of P(S = s) (1 - exp(eps - (k - 2 s) / (2 sigma**2))), S the
    sum of k iid discrete Gaussians, by exact convolution in ``digits``-digit arithmetic. The
    discrete Gaussian is cut at 16 sigma + 2 (mass left out below 1e-55)."""
    with mpmath.workdps(digits):
        sig2 = mpmath.mpf(sigma) ** 2
        cut = int(16 * sigma) + 2
        weights = [mpmath.exp(-mpmath.mpf(z * z) / (2 * sig2)) for z in range(-cut, cut + 1)]
        norm = mpmath.fsum(weights)
        pmf = [w / norm for w in weights]
        dist, low = [mpmath.mpf(1)], 0                      # S = 0 with probability 1
        for _ in range(k):
            out = [mpmath.mpf(0)] * (len(dist) + len(pmf) - 1)
            for i, p in enumerate(dist):
                for j, q in enumerate(pmf):
                    out[i + j] += p * q
            dist, low = out, low - cut
        eps = mpmath.mpf(epsilon)
        total = mpmath.mpf(0)
        for i, p in enumerate(dist):
            loss = (k - 2 * (low + i)) / (2 * sig2)
            if loss > eps:
                total += p * (1 - mpmath.exp(eps - loss))
        return float(total)


def direct_delta(sigma, k, epsilon):
    """The same sum from a direct float64 convolution by repeated squaring (np.convolve of
    non-negative vectors: every entry within a relative 1e-12 here), no FFT and no tilt."""
    cut = int(14 * sigma) + 2
    z = np.arange(-cut, cut + 1, dtype=np.float64)
    pmf = np.exp(-z * z / (2 * sigma * sigma))
    pmf /= pmf.sum()
    result, low, base, base_low, m = np.ones(1), 0, pmf, -cut, k
    while m:
        if m & 1:
            result, low = np.convolve(result, base), low + base_low
        m >>= 1
        if m:
            base, base_low = np.convolve(base, base), 2 * base_low
    s = low + np.arange(result.size)
    loss = (k - 2.0 * s) / (2 * sigma * sigma)
    w = np.where(loss > epsilon, -np.expm1(np.minimum(epsilon - loss, 0.0)), 0.0)
    return float(np.dot(result, w))


# (sigma, k, epsilon): small sigma where the lattice matters most, several cells, epsilon 0.
SMALL = [(0.5, 1, 1.0), (1.0, 1, 1.0), (1.0, 2, 0.0), (2.0, 1, 0.5), (2.0, 3, 0.5),
         (3.0, 2, 2.0), (5.0, 4, 1.0), (0.8, 5, 0.3), (4.0, 3, 3.0)]


@pytest.mark.parametrize("sigma,k,epsilon", SMALL)
def test_never_below_the_exact_delta_and_tight(sigma, k, epsilon):
    exact = exact_delta(sigma, k, epsilon)
    ours = discrete_gaussian_delta(sigma, k, epsilon)
    assert ours >= exact
    assert ours <= exact * (1 + 1e-10) + 1e-25


@pytest.mark.parametrize("sigma,k,epsilon", [(29.1, 28, 1.0), (29.08, 28, 1.0), (40.0, 10, 0.2),
                                             (25.0, 20, 1.0), (12.0, 7, 1.0)])
def test_fft_path_matches_a_direct_convolution(sigma, k, epsilon):
    """Adult-sized cases (delta 1e-7 to 1e-12), where the FFT's absolute error would swamp
    the tail without the tilt: ours is the direct sum to 1e-9 relative, never below it (the
    direct sum's own error is below 1e-11 relative)."""
    direct = direct_delta(sigma, k, epsilon)
    ours = discrete_gaussian_delta(sigma, k, epsilon)
    assert 1e-13 < direct < 1e-3
    assert ours >= direct * (1 - 1e-11)
    assert ours <= direct * (1 + 1e-9)


@pytest.mark.parametrize("sigma,epsilon", [(0.7, 0.5), (1.0, 1.0), (2.0, 0.5), (3.7, 1.0),
                                           (20.0, 0.2), (200.0, 0.02)])
def test_one_cell_equals_dp_accountings_exact_discrete_gaussian(sigma, epsilon):
    """``DiscreteGaussianPrivacyLoss.get_delta_for_epsilon`` is the exact hockey-stick
    divergence of the one-dimensional discrete Gaussian at sensitivity 1 (truncated at 11.6
    sigma, 1e-30 of mass): ours never below it (beyond its own rounding) and within 1e-9."""
    pytest.importorskip("dp_accounting", reason="dp_accounting not installed")
    from dp_accounting.pld import privacy_loss_mechanism as plm
    theirs = plm.DiscreteGaussianPrivacyLoss(sigma, sensitivity=1).get_delta_for_epsilon(epsilon)
    ours = discrete_gaussian_delta(sigma, 1, epsilon)
    assert ours >= theirs * (1 - 1e-12)
    assert ours <= theirs * (1 + 1e-9)


@pytest.mark.parametrize("sigma,k,epsilon", [(2.0, 3, 0.5), (5.0, 4, 1.0), (10.0, 8, 0.5),
                                             (29.1, 28, 1.0)])
def test_between_dp_accountings_optimistic_and_pessimistic_plds(sigma, k, epsilon):
    """dp_accounting's privacy loss distribution of the discrete Gaussian, composed k times,
    rounds losses up (pessimistic: delta never below the truth) or down (optimistic: never
    above it). The truth, and ours, lies between; theirs is within their discretisation
    (1e-4 in the loss) of ours."""
    pytest.importorskip("dp_accounting", reason="dp_accounting not installed")
    from dp_accounting.pld import privacy_loss_distribution as pld
    bounds = []
    for pessimistic in (False, True):
        one = pld.from_discrete_gaussian_mechanism(sigma, sensitivity=1,
                                                   pessimistic_estimate=pessimistic)
        bounds.append(one.self_compose(k).get_delta_for_epsilon(epsilon))
    optimistic, pessimistic = bounds
    ours = discrete_gaussian_delta(sigma, k, epsilon)
    assert optimistic * (1 - 1e-12) <= ours <= pessimistic * (1 + 1e-12)
    assert ours == pytest.approx(pessimistic, rel=0.05)


def test_beats_the_zcdp_conversion_and_falls_back_to_it():
    """The exact delta is far below the zCDP conversion of the same release (cost k/(2
    sigma**2)); where sigma sqrt(k) is too large for the FFT (above about 3.7e4) the zCDP
    conversion itself is returned, still a valid bound."""
    rho = rho_gaussian(math.sqrt(28), 29.1)
    assert discrete_gaussian_delta(29.1, 28, 1.0) < delta_from_rho(rho, 1.0) / 5
    big = 2.0e5
    assert discrete_gaussian_delta(big, 1, 2e-5) == delta_from_rho(rho_gaussian(1.0, big), 2e-5)


def test_delta_properties():
    # delta decreases in epsilon and in sigma, grows with k, and is at most 1.
    assert discrete_gaussian_delta(3.0, 4, 0.5) > discrete_gaussian_delta(3.0, 4, 1.0)
    assert discrete_gaussian_delta(3.0, 4, 1.0) > discrete_gaussian_delta(3.5, 4, 1.0)
    assert discrete_gaussian_delta(3.0, 4, 1.0) < discrete_gaussian_delta(3.0, 5, 1.0)
    assert discrete_gaussian_delta(0.05, 3, 0.0) <= 1.0
    # Far tails: a bound below 1e-25, never 0 unless the truth is.
    tiny = discrete_gaussian_delta(100.0, 1, 1.0)
    assert 0.0 < tiny < 1e-25


# ---------------------------------------------------------------------------------------------
# gaussian_sigma_for
# ---------------------------------------------------------------------------------------------

def test_adult_28_marginals():
    """28 two-way tables at epsilon 1, delta 1e-9: the exact discrete calibration (29.0783)
    is within 1e-5 of the continuous analytic one (29.0782), 5% below the zCDP route
    (30.578); its delta is within the budget, and 2e-6 less sigma is not."""
    l2 = math.sqrt(28)
    sigma = gaussian_sigma_for(l2, 1.0, 1e-9, integer=True)
    assert 29.07 < sigma < 29.09
    assert discrete_gaussian_delta(sigma, 28, 1.0) <= 1e-9
    assert discrete_gaussian_delta(sigma * (1 - 2e-6), 28, 1.0) > 1e-9
    route = l2 / math.sqrt(2 * rho_from_epsilon_delta(1.0, 1e-9))
    assert route == pytest.approx(30.578, abs=1e-3)
    assert sigma < 0.952 * route
    assert gaussian_sigma_for(l2, 1.0, 1e-9, integer=False) == gaussian_sigma(l2, 1.0, 1e-9)
    assert gaussian_sigma_for(l2, 1.0, 1e-9, integer=False) == pytest.approx(29.08, abs=5e-3)


@pytest.mark.parametrize("l2,epsilon,delta", [(1.0, 1.0, 1e-5), (1.0, 0.1, 1e-6),
                                              (math.sqrt(3), 2.0, 1e-3), (1.0, 5.0, 1e-5)])
def test_discrete_calibration_checked_exactly(l2, epsilon, delta):
    """The sigma returned meets delta by the brute-force sum too, and is the smallest to
    1e-6: the exact delta at 2e-6 less exceeds the budget."""
    k = round(l2 * l2)
    sigma = gaussian_sigma_for(l2, epsilon, delta, integer=True)
    if sigma < 15:
        assert exact_delta(sigma, k, epsilon) <= delta
        assert exact_delta(sigma * (1 - 2e-6), k, epsilon) > delta
    else:
        assert direct_delta(sigma, k, epsilon) <= delta
        assert direct_delta(sigma * (1 - 2e-6), k, epsilon) > delta


@pytest.mark.parametrize("l2", [1.0, math.sqrt(2), math.sqrt(28), 1.5, 0.3, 7.0])
@pytest.mark.parametrize("epsilon,delta", [(1.0, 1e-9), (0.1, 1e-5)])
def test_never_worse_than_the_zcdp_route(l2, epsilon, delta):
    """Integer noise: where l2**2 is not an integer (1.5, 0.3) the zCDP route, whose cost
    converts within the budget; where it is (k cells), the exact calibration, which meets
    delta exactly and is at least 4% below the route here."""
    rho = rho_from_epsilon_delta(epsilon, delta)
    zcdp = l2 / math.sqrt(2 * rho)
    sigma = gaussian_sigma_for(l2, epsilon, delta, integer=True)
    k = round(l2 * l2)
    if abs(l2 * l2 - k) > 1e-9:
        assert sigma == pytest.approx(zcdp, rel=1e-12)
        assert rho_gaussian(l2, sigma) <= rho
        assert epsilon_from_rho(rho_gaussian(l2, sigma), delta) <= epsilon
    else:
        assert sigma < 0.96 * zcdp
        assert discrete_gaussian_delta(sigma, k, epsilon) <= delta


def one_cell_delta(sigma, c, epsilon):
    """Exact delta (float, direct sum) when a neighbour changes one cell by c: loss (c**2 -
    2 c Z) / (2 sigma**2)."""
    cut = int(16 * sigma) + 2 * c + 2
    z = np.arange(-cut, cut + 1, dtype=np.float64)
    pmf = np.exp(-z * z / (2 * sigma * sigma))
    pmf /= pmf.sum()
    loss = (c * c - 2.0 * c * z) / (2 * sigma * sigma)
    w = np.where(loss > epsilon, -np.expm1(np.minimum(epsilon - loss, 0.0)), 0.0)
    return float(np.dot(pmf, w))


def test_unit_changes_false_covers_a_cell_changing_by_two():
    """At l2 = 2 the exact calibration assumes four cells changing by 1; one cell changing
    by 2 (the same l2) then exceeds delta, which is why unit_changes=False exists: it gives
    the zCDP route, which holds for that shape too."""
    unit = gaussian_sigma_for(2.0, 0.5, 1e-5, integer=True)
    assert discrete_gaussian_delta(unit, 4, 0.5) <= 1e-5
    assert one_cell_delta(unit, 2, 0.5) > 1.003e-5
    any_shape = gaussian_sigma_for(2.0, 0.5, 1e-5, integer=True, unit_changes=False)
    assert any_shape == pytest.approx(2.0 / math.sqrt(2 * rho_from_epsilon_delta(0.5, 1e-5)),
                                      rel=1e-12)
    assert one_cell_delta(any_shape, 2, 0.5) <= 1e-5
    assert discrete_gaussian_delta(any_shape, 4, 0.5) <= 1e-5
    # Continuous noise does not depend on the shape: the flag changes nothing there.
    assert (gaussian_sigma_for(2.0, 0.5, 1e-5, integer=False, unit_changes=False)
            == gaussian_sigma(2.0, 0.5, 1e-5))


def test_cached_and_fast_to_repeat():
    from dpfast import zcdp
    gaussian_sigma_for(math.sqrt(6), 0.7, 1e-7, integer=True)
    hits = zcdp.calibration.gaussian_sigma_for_checked.cache_info().hits
    again = gaussian_sigma_for(math.sqrt(6), 0.7, 1e-7, integer=True)
    assert zcdp.calibration.gaussian_sigma_for_checked.cache_info().hits == hits + 1
    assert again == gaussian_sigma_for(math.sqrt(6), 0.7, 1e-7, integer=True)


BAD = [(discrete_gaussian_delta, (0.0, 1, 1.0), {}, "sigma", ValueError),
       (discrete_gaussian_delta, (math.inf, 1, 1.0), {}, "sigma", ValueError),
       (discrete_gaussian_delta, ("1", 1, 1.0), {}, "sigma", TypeError),
       (discrete_gaussian_delta, (1.0, 0, 1.0), {}, "k", ValueError),
       (discrete_gaussian_delta, (1.0, 2.0, 1.0), {}, "k", TypeError),
       (discrete_gaussian_delta, (1.0, True, 1.0), {}, "k", TypeError),
       (discrete_gaussian_delta, (1.0, 1, -0.1), {}, "epsilon", ValueError),
       (discrete_gaussian_delta, (1.0, 1, math.nan), {}, "epsilon", ValueError),
       (gaussian_sigma_for, (0.0, 1.0, 1e-5), {"integer": True}, "l2", ValueError),
       (gaussian_sigma_for, (1e-310, 1.0, 1e-5), {"integer": False}, "l2", ValueError),
       (gaussian_sigma_for, (1e200, 1.0, 1e-5), {"integer": True}, "l2", ValueError),
       (gaussian_sigma_for, (math.nan, 1.0, 1e-5), {"integer": True}, "l2", ValueError),
       (gaussian_sigma_for, (1.0, 0.0, 1e-5), {"integer": True}, "epsilon", ValueError),
       (gaussian_sigma_for, (1.0, 1.0, 0.0), {"integer": True}, "delta", ValueError),
       (gaussian_sigma_for, (1.0, 1.0, 1.0), {"integer": False}, "delta", ValueError),
       (gaussian_sigma_for, (1.0, 1.0, 1e-5), {"integer": 1}, "integer", TypeError),
       (gaussian_sigma_for, (1.0, 1.0, 1e-5), {"integer": True, "unit_changes": None},
        "unit_changes", TypeError),
       (gaussian_sigma_for, ([1.0], 1.0, 1e-5), {"integer": True}, "l2", TypeError),
       (gaussian_sigma_for, (1.0, 1e-12, 1e-15), {"integer": False},
        "l2', 'epsilon' and 'delta", ValueError)]


@pytest.mark.parametrize("func,args,kwargs,name,exc", BAD,
                         ids=[f"{f.__name__}-{n}-{i}" for i, (f, _, _, n, _) in enumerate(BAD)])
def test_bad_arguments_name_the_argument(func, args, kwargs, name, exc):
    with pytest.raises(exc, match=rf"The '{name}' parameters? of {func.__name__}"):
        func(*args, **kwargs)


def test_integer_is_keyword_only():
    with pytest.raises(TypeError):
        gaussian_sigma_for(1.0, 1.0, 1e-5, True)  # type: ignore[misc]
