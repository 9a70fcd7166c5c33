"""The budget of a release split across its parts.

Each noisy measurement's noise and the whole cost, from the release's privacy keywords
(:class:`Part`, :class:`Plan`, :func:`split`).
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

from .. import noise, zcdp
from ..accounting import composes_in_zcdp, resolve_accountant

if TYPE_CHECKING:
    from ..accounting import AccountantLike


class Part(NamedTuple):
    """One noisy measurement of a statistic: its l1 and l2 sensitivities (a person's
    influence on it), whether its cells are integers, and its share of the budget."""

    name: str
    l1: float
    l2: float
    integer: bool
    weight: float = 1.0
    #: "noise" (a noisy measurement) or "selection" (an exponential-mechanism draw, paid
    #: in pure epsilon: its share, or sqrt(8 rho) of a rho share, its zCDP cost being
    #: epsilon**2 / 8).
    kind: str = "noise"


class Plan(NamedTuple):
    """A statistic's measurements and the whole cost: ``measures[i]`` is the noise of
    ``parts[i]`` (the epsilon of its exponential mechanism, for a selection part);
    (``epsilon``, ``delta``) and ``rho`` are charged once for all of them."""

    parts: tuple[Part, ...]
    measures: tuple[noise.Measure | float, ...]
    epsilon: float | None
    delta: float
    rho: float | None

    def noisy(self) -> list[noise.Measure]:
        """The measures of the noise parts, in order."""
        return [m for m in self.measures if isinstance(m, noise.Measure)]

    def selections(self) -> list[float]:
        """The epsilons of the selection parts, in order."""
        return [m for m in self.measures if not isinstance(m, noise.Measure)]

    def describe(self) -> list[dict[str, object]]:
        """What each measurement costs and its noise's standard deviation."""
        rows: list[dict[str, object]] = []
        for p, m in zip(self.parts, self.measures):
            if isinstance(m, noise.Measure):
                rows.append({"measurement": p.name, "noise": type(m.noise).__name__.lower(),
                             "epsilon": m.epsilon, "rho": m.rho,
                             "std": math.sqrt(m.noise.variance)})
            else:
                rows.append({"measurement": p.name, "noise": "exponential mechanism",
                             "epsilon": m, "rho": m * m / 8.0})
        return rows


def down(x: float) -> float:
    """The float next to ``x`` towards zero: a share of a budget rounded down, so that the
    shares never add up to more than the whole."""
    return math.nextafter(x, 0.0)


def split(func: str, noise_name: object, epsilon: object, delta: object, rho: object,
          parts: Sequence[Part], accountant: AccountantLike | None = None) -> Plan:
    """The noise of each part and the whole cost, from the release's privacy keywords.

    Laplace noise splits epsilon between the parts in proportion to their weights; Gaussian
    noise splits rho (given, or the largest rho whose tight conversion fits (epsilon, delta),
    which is what is charged then). A selection part gets an epsilon: its share of epsilon,
    or ``sqrt(8 r)`` of its share ``r`` of rho."""
    try:
        plan = _split(func, noise_name, epsilon, delta, rho, parts, accountant)
    except (OverflowError, ZeroDivisionError):
        raise ValueError(f"{func}: the privacy parameters (epsilon, delta, rho) and the "
                         "bounds give noise too large or too small to represent as floats. "
                         f"Got epsilon={epsilon!r}, delta={delta!r}, rho={rho!r}.") from None
    for p, m in zip(plan.parts, plan.measures):
        if isinstance(m, noise.Measure) and p.integer:
            _check_discrete(func, p, m, epsilon, rho)
    return plan


def _check_discrete(func: str, part: Part, m: noise.Measure, epsilon: object,
                    rho: object) -> None:
    """Refuse integer noise wider than its sampler is exact for (as every counting release
    does): discrete Laplace of scale past MAX_DISCRETE_SCALE, discrete Gaussian of sigma past
    MAX_DISCRETE_SIGMA. A count's scale is max_groups * max_rows over its epsilon."""
    big = (m.noise.scale > noise.MAX_DISCRETE_SCALE if isinstance(m.noise, noise.Laplace)
           else m.noise.sigma > noise.MAX_DISCRETE_SIGMA)
    if big:
        raise ValueError(f"{func}: the {part.name}'s noise would be wider than the discrete "
                         "samplers are exact for (scale 2**40, sigma 2**39): raise epsilon "
                         f"or rho, or lower max_groups and max_rows. Got epsilon={epsilon!r}, "
                         f"rho={rho!r} for a sensitivity of {part.l1:g}.")


def _split(func: str, noise_name: object, epsilon: object, delta: object, rho: object,
           parts: Sequence[Part], accountant: AccountantLike | None) -> Plan:
    # The keywords checked once, with the noise layer's own messages.
    whole = noise.measure(func, noise_name, epsilon, delta, rho, l1=1.0, l2=1.0,
                          integer=True, zcdp_accountant=composes_in_zcdp(
                              resolve_accountant(accountant, func)))
    total = sum(p.weight for p in parts)
    measures: list[noise.Measure | float] = []
    if noise_name == "laplace":
        assert whole.epsilon is not None
        for p in parts:
            eps = down(whole.epsilon * p.weight / total)
            measures.append(eps if p.kind == "selection" else
                            noise.measure(func, "laplace", eps, None, None, l1=p.l1,
                                          l2=p.l2, integer=p.integer))
        return Plan(tuple(parts), tuple(measures), whole.epsilon, 0.0, None)
    if whole.epsilon is None:                    # rho alone
        assert whole.rho is not None
        budget_rho = whole.rho
    else:
        budget_rho = down(zcdp.rho_from_epsilon_delta(whole.epsilon, whole.delta))
    for p in parts:
        r = down(budget_rho * p.weight / total)
        measures.append(down(math.sqrt(8.0 * r)) if p.kind == "selection" else
                        noise.measure(func, "gaussian", None, None, r, l1=p.l1, l2=p.l2,
                                      integer=p.integer))
    return Plan(tuple(parts), tuple(measures), whole.epsilon, whole.delta, budget_rho)
