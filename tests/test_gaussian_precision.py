"""gaussian_mechanism at scale: the released noise's standard deviation against the analytic
sigma, and no refusal for the number of coordinates.

The calibration is checked directly (sigma over the analytic sigma, which the benchmark
bench/bench_gaussian.py measures on 10**7 and 10**8 released coordinates); releases here are
at most 10**6 coordinates so that each test takes well under a second.
"""
import math

import numpy as np
import pytest

import dpfast as dp
from dpfast.mechanisms.gaussian import _grid_sigma


def acct():
    return dp.Accountant(delta=0.5)


@pytest.mark.parametrize("dims, eps, delta", [
    (1, 1e-6, 1e-5),            # a scalar at tiny epsilon (was 1.07 in sigma)
    (10**7, 0.1, 1e-9),         # was 1.19
    (10**8, 0.1, 1e-9),
    (4 * 10**5, 1e-6, 1e-5),    # was refused
    (10**6, 1e-3, 1e-6),        # was refused
    (1, 1.0, 1e-5),
    (10**4, 5.0, 1e-12),
])
def test_sigma_within_1_001_of_analytic(dims, eps, delta):
    sigma, g = _grid_sigma(1.0, eps, delta, dims, "analytic", "gaussian_mechanism")
    analytic = dp.gaussian_sigma(1.0, eps, delta)
    assert analytic < sigma <= 1.001 * analytic
    # The grid: a power of two, its rounding cost g sqrt(d) within 2^-12 of the sensitivity,
    # at least 2^20 steps per sigma (the lattice margin), at most 2^39 (the sampler's range).
    assert g == 2.0 ** round(math.log2(g))
    assert g * math.sqrt(dims) <= 2.0**-12
    assert 2.0**20 <= sigma / g <= 2.0**39


def test_released_sigma_is_the_mechanisms_and_checks_its_arguments():
    from dpfast.mechanisms.gaussian import released_sigma
    for dims, eps, delta in [(1, 1e-6, 1e-5), (10**7, 0.1, 1e-9)]:
        want = _grid_sigma(1.0, eps, delta, dims, "analytic", "gaussian_mechanism")[0]
        assert released_sigma(1.0, eps, delta, dims) == want
    for bad in (0, -1, True, 1.5):
        with pytest.raises((TypeError, ValueError), match="size"):
            released_sigma(1.0, 0.1, 1e-9, bad)
    with pytest.raises(ValueError, match="epsilon"):
        released_sigma(1.0, 0.0, 1e-9)


def test_calibration_is_linear_in_the_sensitivity():
    s1, g1 = _grid_sigma(1.0, 0.1, 1e-9, 10**6, "analytic", "gaussian_mechanism")
    s8, g8 = _grid_sigma(8.0, 0.1, 1e-9, 10**6, "analytic", "gaussian_mechanism")
    assert g8 == 8 * g1 and s8 == pytest.approx(8 * s1, rel=1e-12)


def test_released_std_matches_sigma():
    # 10**6 coordinates at eps 0.1, delta 1e-9: the sample std of the noise estimates the
    # discrete Gaussian's (sigma to 1e-12 at 2^20+ steps per sigma) with relative standard
    # error 1/sqrt(2 * 10**6) = 7.1e-4; 4.5 standard errors: false alarm ~1e-5.
    n = 10**6
    x = np.linspace(-50.0, 50.0, n)
    a = acct()
    out = dp.gaussian_mechanism(x, sensitivity=1.0, epsilon=0.1, delta=1e-9, accountant=a,
                                rng=3)
    sigma, g = _grid_sigma(1.0, 0.1, 1e-9, n, "analytic", "gaussian_mechanism")
    noise = out - np.rint(x / g) * g
    assert (noise / g == np.round(noise / g)).all()
    assert abs(noise.std() / sigma - 1) < 4.5 / math.sqrt(2 * n)
    assert abs(noise.mean()) < 4.5 * sigma / math.sqrt(n)
    assert a.spent == (0.1, 1e-9)


def test_many_coordinates_at_tiny_epsilon_are_released():
    a = acct()
    out = dp.gaussian_mechanism(np.zeros(4 * 10**5), sensitivity=1.0, epsilon=1e-6,
                                delta=1e-5, accountant=a, rng=4)
    assert out.shape == (4 * 10**5,) and a.spent == (1e-6, 1e-5)
    analytic = dp.gaussian_sigma(1.0, 1e-6, 1e-5)
    # Relative standard error 1.1e-3; 4.5 of them.
    assert abs(out.std() / analytic - 1) < 0.001 + 4.5 / math.sqrt(8 * 10**5)


def test_scalar_at_tiny_epsilon():
    a = acct()
    x = dp.gaussian_mechanism(2.5, sensitivity=1.0, epsilon=1e-6, delta=1e-5, accountant=a,
                              rng=5)
    sigma, g = _grid_sigma(1.0, 1e-6, 1e-5, 1, "analytic", "gaussian_mechanism")
    assert isinstance(x, float) and (x / g) == round(x / g)
    assert a.spent == (1e-6, 1e-5)


def test_values_beyond_exact_grid_arithmetic_are_refused_before_the_charge():
    # 10**6 coordinates need the grid 2^-22 at sensitivity 1; |value| must stay below 2^51 g
    # = 2^29 for exact arithmetic, and the refusal names no data value.
    a = acct()
    x = np.zeros(10**6)
    x[17] = 2.0**30
    with pytest.raises(ValueError, match="exact grid arithmetic") as info:
        dp.gaussian_mechanism(x, sensitivity=1.0, epsilon=0.1, delta=1e-9, accountant=a,
                              rng=6)
    assert "1073741824" not in str(info.value) and "1.07374e+09" not in str(info.value)
    assert a.spent == (0.0, 0.0)
