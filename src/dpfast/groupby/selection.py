"""Private selection of the keys of a grouped release (partition selection): the optimal
rule's release probabilities, the weighted Gaussian rule, and a budget's share per key.

Private keys (``keys=None``): a key is released only if a random draw passes the optimal
partition-selection rule of Desfontaines, Voss, Gipson and Mandayam (2022) on the number of
people who kept rows in it -- the largest release probability ``pi(n)`` that is
(epsilon, delta)-DP for each key a person touches, a person touching at most ``max_groups``
keys (each key gets epsilon / max_groups and delta / max_groups) -- or, for a person who
may touch several keys, the weighted Gaussian rule (:class:`GaussianSelection`), or the
count rule (a threshold on the released count: :meth:`dpfast.GroupBy.agg`). Nothing here
draws noise or reads records: these are the rules' public parameters.
"""
from __future__ import annotations

import functools
import math
from fractions import Fraction
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from .. import noise

if TYPE_CHECKING:
    from numpy.typing import NDArray

__all__ = ["selection_probabilities", "per_key", "selection_threshold", "RULES", "uses_count_rule",
           "WEIGHT_BITS", "GaussianSelection", "gaussian_selection", "pair_weights"]

@functools.lru_cache(maxsize=64)
def selection_probabilities(epsilon: float, delta: float) -> NDArray[np.float64]:
    """``pi[n]``: the probability of releasing a key that ``n`` people kept rows in, under
    the optimal (epsilon, delta) rule (Desfontaines et al. 2022, Theorem 1): ``pi[0] = 0``,
    ``pi[n] = min(exp(eps) pi[n-1] + delta, 1 - exp(-eps) (1 - pi[n-1] - delta), 1)``, up to
    the first ``n`` where it reaches 1 (``pi[n] = 1`` beyond the array).

    Each step is computed in floats, then lowered until the two DP inequalities between
    ``n - 1`` and ``n`` hold in exact arithmetic with a certified lower bound of
    ``exp(eps)``: ``pi[n] <= E pi[n-1] + delta`` and ``1 - pi[n-1] <= E (1 - pi[n]) +
    delta``. (epsilon above 700 is taken as 700: a rule private at a smaller epsilon is
    private at a larger one, and exp(700) is a float.)"""
    eps = min(epsilon, 700.0)
    e_up = math.nextafter(math.nextafter(math.exp(eps), 0.0), 0.0)     # <= exp(eps)
    e_down = math.nextafter(math.nextafter(math.exp(-eps), 1.0), 1.0)  # >= exp(-eps)
    exact_e, exact_d = Fraction(e_up), Fraction(delta)
    pi = [0.0]
    while pi[-1] < 1.0 and len(pi) < 10**7:
        p = pi[-1]
        nxt = min(e_up * p + delta, 1.0 - e_down * (1.0 - p - delta), 1.0)
        if nxt < 1.0:
            nxt *= 1.0 - 2.0**-48             # below the bound by far more than rounding
        # Clear of both bounds by more than the floats' rounding: no exact check needed.
        clear = (nxt <= (e_up * p + delta) * (1.0 - 2.0**-49) and
                 1.0 - p <= (e_up * (1.0 - nxt) + delta) * (1.0 - 2.0**-49))
        if not clear:
            prev = Fraction(p)
            while nxt > 0.0 and not (Fraction(nxt) <= exact_e * prev + exact_d and
                                     1 - prev <= exact_e * (1 - Fraction(nxt)) + exact_d):
                nxt = math.nextafter(nxt, 0.0)
        if nxt <= p:                  # no progress is possible in floats: stop below 1
            break
        pi.append(nxt)
    return np.array(pi)


def per_key(total: float, max_groups: int) -> float:
    """The largest float ``q`` with ``max_groups * q`` at most ``total`` exactly: a share of
    a budget for each of a person's keys."""
    q = total / max_groups
    while Fraction(q) * max_groups > Fraction(total):
        q = math.nextafter(q, 0.0)
    return q


def selection_threshold(epsilon: float, delta: float, probability: float = 0.5) -> int:
    """The least number of people at which a key is released with at least ``probability``."""
    pi = selection_probabilities(epsilon, delta)
    return int(np.searchsorted(pi, probability, side="left"))


#: Key selection rules: "count" (a key is released when its noisy count of rows, the one
#: released, passes a threshold: the selection costs delta only), "optimal" (Desfontaines et
#: al.), "gaussian" (weighted Gaussian thresholding), "auto" (the count rule when a count is
#: measured with Laplace noise, else the optimal rule for max_groups = 1 and the weighted
#: Gaussian above: measured on the benchmark's keys, the weighted Gaussian keeps more keys
#: as soon as a person may touch two, and fewer at one).
RULES = ("auto", "count", "optimal", "gaussian")


def uses_count_rule(rule: object, noise: object, laplace_count: bool) -> bool:
    """Whether private keys are selected by the count rule: asked for, or ``"auto"`` with a
    count measured under Laplace noise (``laplace_count``: the release measures a count and
    its noise is Laplace). That rule thresholds the released count and spends no epsilon on
    the selection."""
    return rule == "count" or (rule == "auto" and noise == "laplace" and laplace_count)

#: Weights of the weighted Gaussian rule are whole multiples of 2**-WEIGHT_BITS (rounded
#: down, so a person's weights still have l2 norm at most 1), so their sums are exact.
WEIGHT_BITS = 30


class GaussianSelection(NamedTuple):
    """The weighted Gaussian rule (Gopi et al. 2020; Swanberg, Desfontaines and Haney 2023):
    each person spreads weight ``1/sqrt(k)`` over the ``k`` keys they kept (l2 norm 1), a
    key is released if its weight plus Gaussian noise (``measure``: sigma for l2 1 at
    (epsilon, delta_gauss), rounding of the weights to its grid included) exceeds ``tau =
    max over t <= max_groups of 1/sqrt(t) + g + sigma z(delta_threshold / t)``: a key only
    one person has is then released with probability at most delta_threshold in all."""

    measure: noise.Measure
    tau: float


def gaussian_selection(epsilon: float, delta: float, max_groups: int,
                       func: str) -> GaussianSelection:
    """The weighted Gaussian rule at (epsilon, delta), delta split between the noise and the
    threshold where the threshold is lowest (a public choice: no data is read)."""
    from statistics import NormalDist
    z = NormalDist()
    best: GaussianSelection | None = None
    for share in np.linspace(0.05, 0.95, 19):
        m = noise.measure(func, "gaussian", epsilon, delta * share, None, l1=1.0, l2=1.0,
                          integer=False, cells=max_groups)
        sigma, g = m.noise.sigma, m.noise.g          # type: ignore[union-attr]
        dt = math.nextafter(delta - m.delta, 0.0)           # the threshold's part of delta
        tau = max(1.0 / math.sqrt(t) + g - sigma * z.inv_cdf(dt / t)
                  for t in range(1, max_groups + 1))
        if best is None or tau < best.tau:
            best = GaussianSelection(m, tau)
    assert best is not None
    return best


def pair_weights(person_of_pair: NDArray[np.int64]) -> NDArray[np.int64]:
    """The weighted Gaussian rule's weight of each (person, key) pair kept, in units of
    ``2**-WEIGHT_BITS``: ``floor(2**WEIGHT_BITS / sqrt(k))``, ``k`` the pairs of its person."""
    _, inverse, counts = np.unique(person_of_pair, return_inverse=True, return_counts=True)
    return np.floor(2.0**WEIGHT_BITS / np.sqrt(counts[inverse])).astype(np.int64)

