"""Releases of real cells pay for rounding them to the noise's grid.

A real cell is released as ``(rint(x / g) + K) g``: neighbours whose cells differ by ``c_i``
can come out ``|c_i| + g`` apart in each cell a record changes. The grid is chosen from the
rounding budget (at most 2**-12 of the sensitivity over every cell a record may change), and
Gaussian noise is calibrated and charged for the sensitivity the rounding can reach. Each
test releases neighbouring inputs under the same seed, so the noise cancels and the
difference of the outputs is exactly the rounded change: its cost must be covered by what
was charged. The inputs put every cell just below a rounding boundary, so that the record's
change crosses it (the worst case).
"""
import math
from fractions import Fraction

import numpy as np
import pytest

import dpfast as dp
from dpfast.noise import ROUNDING_SHARE, eta, real_laplace
from dpfast.releases.cells import counting_measure


def _worst_pair(n, g, change):
    """Cells just below a half-step (rounding down), and the same cells moved by ``change``
    per cell, which carries each across it."""
    frac = (change / g) % 1.0
    x = np.full(n, (0.5 - frac / 2) * g + 1000 * g)
    return x, x + change


@pytest.mark.parametrize("n", [1, 10_000, 200_000])
def test_gaussian_real_cells_charge_the_rounded_change(n):
    # A record moves every cell by 1/sqrt(n): l2 sensitivity 1, spread over n cells.
    change = 1 / math.sqrt(n)
    m = counting_measure("noisy_counts", "gaussian", 0.1, 1e-9, None, 1.0, False, None, n)
    x, y = _worst_pair(n, m.noise.g, change)
    acct = dp.Accountant(epsilon=10.0, delta=0.5)
    a = dp.noisy_counts(x, noise="gaussian", epsilon=0.1, delta=1e-9, accountant=acct, rng=1)
    b = dp.noisy_counts(y, noise="gaussian", epsilon=0.1, delta=1e-9, accountant=acct, rng=1)
    moved = math.sqrt(float(np.sum((b - a) ** 2)))
    assert moved <= 1.0 + ROUNDING_SHARE * 1.0000001          # within the rounding budget
    sigma = m.noise.sigma
    assert Fraction(moved) ** 2 / (2 * Fraction(sigma) ** 2) <= Fraction(acct.ledger[0].rho)
    # and sigma is the analytic one for that reach, not for 1 alone
    assert sigma >= dp.gaussian_sigma(1.0, 0.1, 1e-9)


def test_gaussian_real_cells_with_a_huge_sigma_are_not_moved_by_a_whole_coarse_step():
    # rho 1e-14: sigma > 2**20, whose own grid step is 8. One cell moved by 1 used to come
    # out 8 apart (64 times the rho charged); now the grid is finer and the cost covers it.
    acct = dp.Accountant(rho=1.0)
    a = dp.noisy_counts(np.array([3.9]), noise="gaussian", rho=1e-14, accountant=acct, rng=5)
    b = dp.noisy_counts(np.array([4.9]), noise="gaussian", rho=1e-14, accountant=acct, rng=5)
    m = counting_measure("noisy_counts", "gaussian", None, None, 1e-14, 1.0, False, acct, 1)
    moved = float(abs(b - a)[0])
    assert moved <= 1.0 + m.noise.g
    assert moved ** 2 / (2 * m.noise.sigma ** 2) <= 1e-14 * (1 + 1e-12)
    assert acct.spent.rho == pytest.approx(2e-14, rel=1e-12)


@pytest.mark.parametrize("n, epsilon", [(1, 1.0), (10_000, 0.1), (1_000_000, 0.1)])
def test_laplace_real_cells_stay_within_their_certified_loss(n, epsilon):
    # l1 sensitivity 1 spread over n cells: the rounded change stays within 2**-12 of it,
    # and laplace_privacy_loss(cells=n) certifies it.
    scale = 1.0 / epsilon
    noise = real_laplace(scale, 1.0, n)
    x, y = _worst_pair(n, noise.g, 1.0 / n)
    acct = dp.Accountant()
    a = dp.noisy_counts(x, epsilon=epsilon, accountant=acct, rng=2)
    b = dp.noisy_counts(y, epsilon=epsilon, accountant=acct, rng=2)
    moved = float(np.sum(np.abs(b - a)))
    assert moved <= 1.0 * (1 + ROUNDING_SHARE) * (1 + 1e-12)
    certified = dp.laplace_privacy_loss(scale, 1.0, cells=n)
    # the rounding's share, and the floating-point term of the finer grid (eta grows with
    # t = scale / g: about 3e-4 at 10^6 cells and epsilon 0.1)
    assert moved / scale <= certified <= epsilon * (1 + ROUNDING_SHARE) + eta(noise.t)
    assert certified - epsilon < 4e-4
    # laplace_mechanism on a vector takes the same grid
    c = dp.laplace_mechanism(x, sensitivity=1.0, epsilon=epsilon, accountant=acct, rng=2)
    assert np.array_equal(c, a)


def test_the_default_grid_is_kept_where_the_budget_allows():
    # One cell, or few: the grid of the scale alone (outputs as before for such releases).
    for n in (1, 100, 4096):
        assert real_laplace(1.0, 1.0, n).g == dp.laplace_granularity(1.0)
    assert real_laplace(1.0, 1.0, 8193).g < dp.laplace_granularity(1.0)
