"""Zero-concentrated differential privacy (rho-zCDP) and its conversions to (epsilon, delta)-DP.

A mechanism is rho-zCDP (Bun & Steinke 2016) when its Renyi divergence of every order
``alpha > 1`` between neighbouring inputs is at most ``rho * alpha``. Costs in rho add under
composition, which is why releases are accounted in rho and converted to (epsilon, delta)
only when a guarantee in that form is wanted.

- :func:`rho_from_epsilon`: pure epsilon-DP implies ``epsilon**2 / 2``-zCDP.
- :func:`rho_gaussian`: Gaussian noise of ``sigma`` on l2 sensitivity ``D`` costs
  ``D**2 / (2 sigma**2)``, the continuous and the discrete Gaussian alike.
- :func:`epsilon_from_rho`, :func:`delta_from_rho`: the tight conversion of Canonne, Kamath &
  Steinke (2020), Proposition 12 applied to every order of a zCDP guarantee (their
  Corollary 13).
- :func:`rho_from_epsilon_delta`: the largest rho whose conversion at ``delta`` stays within
  ``epsilon``.
- :func:`discrete_gaussian_delta`: the exact delta (an upper bound, tight to rounding) of one
  release of discrete Gaussian noise on integer data whose neighbours differ by 1 in ``k``
  cells, from the exact distribution of its privacy loss.
- :func:`gaussian_sigma`: the analytic Gaussian calibration of continuous Gaussian noise
  (Balle & Wang 2018; ``dpfast.gaussian_sigma``).
- :func:`gaussian_sigma_for`: the smallest sigma of one Gaussian release under an
  (epsilon, delta) budget, continuous or discrete.

**Every figure errs on the safe side.** A cost (rho) is rounded up, never down; a converted
epsilon or delta is the bound at one order alpha (any order gives a valid guarantee), plus a
bound on the floating-point error of evaluating it, so it is never below the exact infimum
over alpha; a rho allowed by (epsilon, delta) is one whose computed epsilon is checked to be
within the budget.

**How the infimum is found.** Write ``t = alpha - 1 > 0`` and ``L = log(1/delta)``. The
epsilon of order alpha is ``f(t) = rho (1 + t) + (L - log(1 + t)) / t - log(1 + 1/t)`` and its
derivative is ``f'(t) = rho - (L - log(1 + t)) / t**2``: negative, then positive, crossing
zero once, where ``rho t**2 + log(1 + t) = L`` (the left side increases with t). So the
minimiser is the root of a monotone function, found by bisection on ``log t`` to the last
bit (no step size, no tolerance, no local minimum to get stuck in), between bounds that hold
for every rho and delta. Likewise for delta at a given epsilon: ``log delta(t) = t (rho (1 +
t) - epsilon - log(1 + 1/t)) - log(1 + t)`` is convex in t, with the increasing derivative
``rho (1 + 2 t) - epsilon - log(1 + 1/t)``. Bisection on ``log t`` keeps the search finite
where the optimum is near ``alpha = 1`` (huge rho, delta near 1) or far out (tiny rho).

The modules: :mod:`~dpfast.zcdp.conversions` (rho against epsilon and delta),
:mod:`~dpfast.zcdp.discrete` (the exact delta of discrete Gaussian noise),
:mod:`~dpfast.zcdp.calibration` (the sigma of one Gaussian release).
"""
from __future__ import annotations

from .calibration import gaussian_sigma, gaussian_sigma_for
from .conversions import (delta_from_rho, epsilon_from_rho, rho_from_epsilon,
                          rho_from_epsilon_delta, rho_gaussian)
from .discrete import discrete_gaussian_delta

__all__ = ["rho_from_epsilon", "rho_gaussian", "epsilon_from_rho", "delta_from_rho",
           "rho_from_epsilon_delta", "discrete_gaussian_delta", "gaussian_sigma",
           "gaussian_sigma_for"]
