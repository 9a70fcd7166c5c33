"""Adaptive measurement of marginals under one zCDP budget: AIM (McKenna, Mullins, Sheldon &
Miklau 2022) and MST (McKenna, Miklau & Sheldon 2021), each ending in one graphical model
(:mod:`dpfast.linear.graphical`) that answers every table.

Privacy. The release is charged its whole budget ``rho`` once, before anything is drawn
(a (epsilon, delta) budget is spent as the largest rho whose tight conversion fits it), and
its rounds then spend exactly that ``rho`` in zCDP, each draw under the release's next key:

- a marginal on a set of attributes, a record in one cell: l2 sensitivity 1, measured with
  discrete Gaussian noise of sigma, costs ``1 / (2 sigma^2)``;
- a selection by the exponential mechanism at ``epsilon`` over scores of sensitivity
  ``Delta`` (probabilities proportional to ``exp(epsilon * score / (2 Delta))``) costs
  ``epsilon^2 / 8`` (bounded range: Cesar & Rogers 2021).

The scores are computed from the exact tables and the current model, which is
post-processing of earlier measurements: one record moves a table's l1 distance to the
model by at most 1, so a score ``w * l1`` has sensitivity ``w``.

AIM. The candidates are the workload's sets and all their subsets, each weighted by its
overlap with the workload (``w_r = sum over workload sets s of |r & s|``). Every one-way
marginal is measured first; each round then selects the candidate with the largest
noise-aware score ``w_r (||x_r - mu_r||_1 - sqrt(2/pi) sigma n_r)`` (``mu`` the model's
table, ``n_r`` its cells: the second term is the l1 error a measurement would bring) among
those whose model stays within the round's share of the size limit, measures it, and refits
from the last model. When a round's measurement moved the model less than its own expected
error, sigma halves and epsilon doubles (the budget is spent on fewer, finer rounds); the
round whose remaining budget cannot pay two more takes all of it. ``rounds = 16 d`` sets
the first rounds' share: sigma = sqrt(rounds / (2 * 0.9 * rho)), epsilon = sqrt(8 * 0.1 *
rho / rounds).

MST. A third of rho measures every one-way marginal; a third selects ``d - 1`` pairs forming
a maximum spanning tree by repeated exponential mechanisms (Kruskal: only pairs joining two
components), scored by the l1 distance between each pair's exact table and the product of
its one-way estimates; a third measures the chosen pairs. The model is a tree: the fastest
option.
"""
from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from .. import noise as _noise
from ..noise import Gaussian
from .graphical import MAX_CLIQUE_CELLS, GraphicalModel, Measurement, estimate, model_cells

if TYPE_CHECKING:
    from .._release import Keys

__all__ = ["aim", "mst", "candidates", "aim_scores", "largest_sigma", "mst_pairs"]

_Attrs = tuple[int, ...]
#: AIM's first rounds' share of the budget: ``ROUNDS_PER_ATTRIBUTE * d`` rounds.
ROUNDS_PER_ATTRIBUTE = 16
#: Steps of the fit after each round (warm start) and at the end. The rounds' fits run all
#: their steps (no stop at the noise's loss, graphical.DISCREPANCY): a round's test of how
#: far its measurement moved the model needs the model fitted to it; stopped there, the
#: rounds halved sigma sooner and 2-way error at epsilon = 1 rose from 0.037 to 0.043. The
#: final fit does stop there: at epsilon = 1 the last round's model is usually already past
#: it, and the final fit ends after one step; run for all its steps, its 2-way error was
#: 0.0375 against 0.0368 (two releases).
ROUND_STEPS = 40
FINAL_STEPS = 250


def _gaussian_cost(sigma: float) -> Fraction:
    """The exact zCDP cost of one l2-sensitivity-1 measurement with noise of ``sigma``."""
    return 1 / (2 * Fraction(sigma) ** 2)


def _selection_cost(epsilon: float) -> Fraction:
    """The exact zCDP cost of one exponential mechanism at ``epsilon``."""
    return Fraction(epsilon) ** 2 / 8


def _within(budget: Fraction, share: float) -> tuple[float, float]:
    """A round's (sigma, epsilon) spending ``share`` of ``budget`` on the measurement and
    the rest on the selection, rounded (sigma up, epsilon down) until the exact cost of the
    two is at most ``budget``."""
    b = float(budget)
    sigma = math.sqrt(1 / (2 * share * b))
    epsilon = math.sqrt(8 * (1 - share) * b)
    while _gaussian_cost(sigma) + _selection_cost(epsilon) > budget:
        sigma = math.nextafter(sigma, math.inf)
        epsilon = math.nextafter(epsilon, 0.0)
    return sigma, epsilon


class Measurer:
    """The rounds' draws under one charged release (tables of a few cells each: one thread):
    the keys, and the rho spent so far, kept exactly (a Fraction): a round that would pass
    the charged ``rho`` by any amount is refused (an error of the planning, never reached)."""

    def __init__(self, keys: Keys, rho: float) -> None:
        self.keys, self.rho = keys, rho
        self.spent = Fraction(0)

    @property
    def left(self) -> Fraction:
        return Fraction(self.rho) - self.spent

    def _pay(self, cost: Fraction) -> None:
        if self.spent + cost > Fraction(self.rho):
            raise AssertionError("adaptive rounds planned past their budget")
        self.spent += cost

    def measure(self, exact: NDArray[np.int64], sigma: float) -> NDArray[np.float64]:
        """The table with discrete Gaussian noise of ``sigma`` (cost 1 / (2 sigma^2))."""
        self._pay(_gaussian_cost(sigma))
        flat = np.ascontiguousarray(exact.reshape(-1), dtype=np.int64).copy()
        Gaussian(sigma, integer=True).fill(self.keys.next(), 1, flat, flat)
        out: NDArray[np.float64] = flat.reshape(exact.shape).astype(np.float64)
        return out

    def select(self, scores: NDArray[np.float64], epsilon: float, sensitivity: float) -> int:
        """The exponential mechanism at ``epsilon`` (cost epsilon^2 / 8)."""
        self._pay(_selection_cost(epsilon))
        u = np.ascontiguousarray(scores, dtype=np.float64)
        return int(_noise.exponential_mechanism(self.keys.next(), 1, u, float(u.max()),
                                                epsilon / (2.0 * sensitivity)))


def largest_sigma(method: str, sizes: Sequence[int], rho: float) -> float:
    """The largest noise any round of ``method`` can draw at budget ``rho`` over attributes
    of ``sizes``, checked against the kernel's range before the charge: AIM's first
    rounds' times sqrt(1 / 0.9) (later rounds halve it, and the last round spends what is
    left, at least one earlier round's cost, 0.9 of it on its measurement); MST's one-way
    and pair tables' (the pairs of a spanning forest of :func:`mst_pairs`)."""
    d = len(sizes)
    if method == "aim":
        return math.sqrt(ROUNDS_PER_ATTRIBUTE * d / (2 * 0.9 * 0.9 * rho))
    edges = _edges(d, mst_pairs(sizes))
    third = rho / 3 if edges else rho
    return math.sqrt(max(d, edges or 0) / (2 * third))


def candidates(workload: Sequence[_Attrs]) -> dict[_Attrs, float]:
    """Every non-empty subset of the workload's sets, with its weight: its overlap with the
    workload, ``sum over s of |r & s|``."""
    found = {r for s in workload for k in range(1, len(s) + 1)
             for r in itertools.combinations(sorted(s), k)}
    return {r: float(sum(len(set(r) & set(s)) for s in workload)) for r in sorted(found)}


def aim(exact: dict[_Attrs, NDArray[np.int64]], shape: Sequence[int],
        workload: Sequence[_Attrs], measurer: Measurer,
        max_cells: int = MAX_CLIQUE_CELLS) -> tuple[GraphicalModel, list[Measurement]]:
    """AIM's rounds (see the module) on the exact tables ``exact`` of every candidate;
    returns the final model and the measurements, in order."""
    rho = measurer.rho
    d = len(shape)
    cands = candidates(workload)
    sensitivity = max(cands.values())
    rounds = ROUNDS_PER_ATTRIBUTE * d
    sigma, epsilon = _within(Fraction(rho) / rounds, 0.9)
    ones = [(a,) for a in range(d)]     # d of the 16 d rounds' shares: always affordable
    ms = [Measurement(r, measurer.measure(exact[r], sigma), sigma) for r in ones]
    model = estimate(ms, shape, iterations=ROUND_STEPS, discrepancy=None)
    names = list(cands)
    weights = np.array([cands[r] for r in names])
    final = False
    while not final:
        if measurer.left < 2 * (_gaussian_cost(sigma) + _selection_cost(epsilon)):
            sigma, epsilon = _within(measurer.left, 0.9)       # the last round: all of it
            final = True
        used = float(measurer.spent + _gaussian_cost(sigma) + _selection_cost(epsilon))
        measured = [m.clique for m in ms]
        # Candidates whose model stays within the round's share of the size limit, and
        # those that do not grow the model at all (one-way sets, sets inside a clique).
        limit = max(max_cells * used / rho, model.cells)
        ok = np.array([model_cells(shape, measured + [r]) <= limit for r in names])
        scores = aim_scores(exact, model, names, weights, sigma)
        pick = names[_select_among(measurer, scores, ok, epsilon, sensitivity)]
        before = model.marginal(pick)
        ms.append(Measurement(pick, measurer.measure(exact[pick], sigma), sigma))
        model = estimate(ms, shape, iterations=ROUND_STEPS, warm=model,
                         discrepancy=None)
        moved = float(np.abs(model.marginal(pick) - before).sum())
        if moved <= math.sqrt(2 / math.pi) * sigma * math.prod(shape[a] for a in pick):
            sigma, epsilon = sigma / 2, epsilon * 2
    model = estimate(ms, shape, iterations=FINAL_STEPS, warm=model)
    return model, ms


def aim_scores(exact: dict[_Attrs, NDArray[np.int64]], model: GraphicalModel,
               names: Sequence[_Attrs], weights: NDArray[np.float64],
               sigma: float) -> NDArray[np.float64]:
    """AIM's noise-aware scores: ``w_r (||x_r - mu_r||_1 - sqrt(2/pi) sigma n_r)`` for each
    candidate ``r`` (``mu`` the model's table; the second term is the expected l1 error of
    measuring ``r`` with noise of ``sigma``)."""
    errors = np.array([float(np.abs(exact[r] - model.marginal(r)).sum()) for r in names])
    cells = np.array([math.prod(model.shape[a] for a in r) for r in names], dtype=np.float64)
    out: NDArray[np.float64] = weights * (errors - math.sqrt(2 / math.pi) * sigma * cells)
    return out


def _select_among(measurer: Measurer, scores: NDArray[np.float64], ok: NDArray[np.bool_],
                  epsilon: float, sensitivity: float) -> int:
    """The exponential mechanism over the allowed candidates only, as an index of all."""
    allowed = np.flatnonzero(ok)
    return int(allowed[measurer.select(scores[allowed], epsilon, sensitivity)])


def _rounded_up(sigma: float, fits: Callable[[float], bool]) -> float:
    """``sigma`` raised by ulps until ``fits(sigma)``."""
    while not fits(sigma):
        sigma = math.nextafter(sigma, math.inf)
    return sigma


class _Forest:
    """The connected components of ``d`` attributes as pairs join them (union-find)."""

    def __init__(self, d: int) -> None:
        self.root = list(range(d))

    def find(self, a: int) -> int:
        while self.root[a] != a:
            a = self.root[a]
        return a

    def join(self, a: int, b: int) -> None:
        self.root[self.find(a)] = self.find(b)


def _edges(d: int, pairs: Sequence[_Attrs]) -> int:
    """The edges of a spanning forest of the graph on ``d`` attributes joined by ``pairs``
    (``d - 1`` when they join every attribute)."""
    forest = _Forest(d)
    for a, b in pairs:
        forest.join(a, b)
    return d - len({forest.find(a) for a in range(d)})


def mst_pairs(sizes: Sequence[int]) -> list[_Attrs]:
    """The pairs of attributes MST may measure: those whose table fits a model's clique
    (public: the sizes decide it)."""
    return [p for p in itertools.combinations(range(len(sizes)), 2)
            if sizes[p[0]] * sizes[p[1]] <= MAX_CLIQUE_CELLS]


def mst(exact: dict[_Attrs, NDArray[np.int64]], shape: Sequence[int],
        measurer: Measurer) -> tuple[GraphicalModel, list[Measurement]]:
    """MST (see the module) on the exact one- and two-way tables ``exact``."""
    rho = measurer.rho
    d = len(shape)
    pairs = [q for q in mst_pairs(shape) if q in exact]
    edges = _edges(d, pairs)
    third = Fraction(rho) / 3 if edges else Fraction(rho)
    sigma1 = _rounded_up(math.sqrt(d / (2 * float(third))), lambda s: d * _gaussian_cost(s)
                         <= third)
    ms = [Measurement((a,), measurer.measure(exact[(a,)], sigma1), sigma1) for a in range(d)]
    if not edges:
        return estimate(ms, shape, iterations=FINAL_STEPS), ms
    sigma2 = _rounded_up(math.sqrt(edges / (2 * float(third))),
                         lambda s: edges * _gaussian_cost(s) <= third)
    epsilon = math.sqrt(8 * float(third) / edges)
    while edges * _selection_cost(epsilon) > measurer.left - edges * _gaussian_cost(sigma2):
        epsilon = math.nextafter(epsilon, 0.0)
    p = [np.clip(m.values, 0, None) / max(float(np.clip(m.values, 0, None).sum()), 1.0)
         for m in ms]
    total = max(float(np.mean([m.values.sum() for m in ms])), 1.0)
    score = np.array([float(np.abs(exact[(a, b)] - total * np.outer(p[a], p[b])).sum())
                      for a, b in pairs])
    forest = _Forest(d)
    chosen = []
    for _ in range(edges):
        ok = np.array([forest.find(a) != forest.find(b) for a, b in pairs], dtype=bool)
        k = _select_among(measurer, score, ok, epsilon, 1.0)
        a, b = pairs[k]
        forest.join(a, b)
        chosen.append(pairs[k])
    ms += [Measurement(c, measurer.measure(exact[c], sigma2), sigma2) for c in chosen]
    return estimate(ms, shape, iterations=FINAL_STEPS), ms
