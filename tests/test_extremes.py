"""Exact at the extremes: calibration and privacy-loss functions over the whole range of
floats, refusals that name the argument the caller passed."""
import math
import sys

import mpmath
import numpy as np
import pytest

import dpfast as dp
from dpfast.samplers import eta
from refusals import spends_nothing

mpmath.mp.dps = 60


def exact_delta(sigma, eps):
    """Balle & Wang's delta of the Gaussian of ``sigma`` at l2 sensitivity 1, in 60 digits."""
    s, e = mpmath.mpf(sigma), mpmath.mpf(eps)
    a, b = 1 / (2 * s), e * s
    return mpmath.ncdf(a - b) - mpmath.exp(e) * mpmath.ncdf(-a - b)


@pytest.mark.parametrize("calibration, eps", [("analytic", 1.0), ("analytic", 0.01),
                                              ("classic", 0.5)])
def test_gaussian_sigma_is_linear_in_the_sensitivity_from_1e_300_to_1e300(calibration, eps):
    unit = dp.gaussian_sigma(1.0, eps, 1e-6, calibration=calibration)
    for sens in np.logspace(-300, 300, 121):
        sigma = dp.gaussian_sigma(float(sens), eps, 1e-6, calibration=calibration)
        assert math.isfinite(sigma) and sigma > 0
        assert abs(sigma / (sens * unit) - 1) <= 4 * sys.float_info.epsilon, sens


@pytest.mark.parametrize("sens", [1e-320, 5e-324, 1e-308])
def test_gaussian_sigma_refuses_a_subnormal_sensitivity_by_name(sens):
    with pytest.raises(ValueError, match="'sensitivity' parameter of gaussian_sigma"):
        dp.gaussian_sigma(sens, 1.0, 1e-6)


def test_gaussian_sigma_refuses_a_sigma_beyond_the_largest_float():
    with pytest.raises(ValueError, match="'sensitivity' parameter of gaussian_sigma"):
        dp.gaussian_sigma(1.7e308, 1.0, 1e-6)


@pytest.mark.parametrize("eps", [1e-9, 1e-6, 1e-3, 0.1, 1.0, 10.0, 100.0])
@pytest.mark.parametrize("delta", [0.3, 1e-6, 1e-12, 1e-100])
def test_analytic_sigma_is_safe_and_tight_or_refused(eps, delta):
    # Checked in 60-digit arithmetic: the returned sigma satisfies the condition (the
    # bisection counts delta's floating-point error bound against itself), and a slightly
    # smaller sigma would not. Where double precision cannot resolve delta (a difference of
    # two nearly equal probabilities, at tiny epsilon and delta) the calibration refuses,
    # naming the parameters.
    try:
        sigma = dp.gaussian_sigma(1.0, eps, delta)
    except ValueError as exc:
        assert "'epsilon' and 'delta' parameters of gaussian_sigma" in str(exc)
        assert eps <= 1e-9 and delta <= 1e-12
        return
    assert exact_delta(sigma, eps) <= delta
    tight = 1e-9 if eps >= 1e-3 else 1e-5
    assert exact_delta(sigma * (1 - tight), eps) > delta


def test_gaussian_mechanism_at_tiny_epsilon_and_delta_names_them():
    acct, rng = dp.Accountant(delta=1.0), dp.ChaCha20(1)
    with spends_nothing(acct, rng), pytest.raises(ValueError) as info:
        dp.gaussian_mechanism(1.0, sensitivity=1.0, epsilon=1e-15, delta=1e-14,
                              accountant=acct, rng=rng)
    message = str(info.value)
    assert "'epsilon' and 'delta' parameters of gaussian_mechanism" in message
    assert "delta=1e-14" in message and "scale" not in message


def test_gaussian_mechanism_out_of_range_sigma_names_the_parameters():
    acct, rng = dp.Accountant(delta=1.0), dp.ChaCha20(1)
    with spends_nothing(acct, rng), pytest.raises(ValueError) as info:
        dp.gaussian_mechanism(1.0, sensitivity=1e300, epsilon=1e-5, delta=1e-5,
                              accountant=acct, rng=rng)
    assert "gaussian_mechanism" in str(info.value) and "'scale'" not in str(info.value)


def test_laplace_privacy_loss_at_the_largest_sensitivity():
    assert dp.laplace_privacy_loss(1.0, 1.7976931348623157e308) == 1.7976931348623157e308
    assert dp.laplace_privacy_loss(1.0, 1.7976931348623157e308,
                                   discrete=True) == 1.7976931348623157e308
    with pytest.raises(ValueError, match="'sensitivity' and 'scale'"):
        dp.laplace_privacy_loss(1e-10, 1.7976931348623157e308)
    # Ordinary values unchanged: (floor(D/g) + 1) g/b + eta(b/g).
    g, t = dp.laplace_granularity(10.0), 10.0 / dp.laplace_granularity(10.0)
    assert dp.laplace_privacy_loss(10.0, 1.0) == (math.floor(1 / g) + 1) / t + eta(t)
