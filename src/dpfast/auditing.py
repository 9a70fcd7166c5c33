"""An empirical privacy auditor: a lower bound on the epsilon a mechanism actually spends.

:func:`audit` runs a mechanism many times on a pair of neighbouring inputs ``x`` and
``x'``, in the manner of StatDP (Ding et al., CCS 2018) and DP-Sniper (Bichsel et al.,
S&P 2021):

1. draws ``samples / 2`` outputs from each input to *choose* an output event ``E`` (a set
   of outputs) and a direction, the one whose frequencies make ``P[M(x) in E] / P[M(x')
   in E]`` look largest;
2. draws ``samples / 2`` fresh outputs from each to *test* it: with ``p`` and ``p'`` the
   Clopper-Pearson bounds (lower for ``p``, upper for ``p'``, each at level
   ``(1 - confidence) / 2``), every ``(epsilon, delta)``-DP mechanism has
   ``p - delta <= exp(epsilon) p'``, so ``epsilon >= ln((p - delta) / p')`` holds with
   probability at least ``confidence``.

The bound is valid whatever the search found (the event is chosen on samples the test does
not use); a search that finds a poor event only makes the bound weak. A mechanism whose
bound exceeds its claimed epsilon is shown not to be private at that epsilon, with that
confidence; a bound below it proves nothing either way, but a correct mechanism can only
fail with probability ``1 - confidence``.

Events searched. Integer or boolean outputs (one value, or a row of values per run, such
as the answers of a sparse-vector run) are outcomes: the events are the sets of the ``k``
outcomes with the largest frequency ratio, for every ``k``. Real outputs (one value per
run): the events ``{out >= t}`` and ``{out <= t}`` for ``thresholds`` quantiles ``t`` of
the pooled choosing samples.

The mechanism is a callable ``mechanism(input, n, rng)`` returning ``n`` outputs (an array
of ``n`` values, or ``n`` rows), drawing its randomness from ``rng`` (a
:class:`dpfast.ChaCha20`), vectorized where it can be: with dpfast's samplers 10^7 runs of
a Laplace mechanism take a few seconds here.

``CASES`` holds ready-made audits (:func:`run_case`, ``dpfast audit NAME``): dpfast's Laplace mechanism,
report noisy max, exponential mechanism and sparse vector objects, and three variants of
the sparse vector technique that Lyu, Su & Li (PVLDB 2017) showed are not private (no
threshold noise; no halting; query noise that ignores the cutoff). The broken variants are
here only to be audited: they are not mechanisms of dpfast.

Needs scipy (Clopper-Pearson bounds): ``pip install "dpfast[audit]"``.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from . import validation as _v
from ._native import ChaCha20
from .rng import resolve_rng

__all__ = ["audit", "AuditResult", "CASES", "Case", "run_case"]

Mechanism = Callable[[Any, int, ChaCha20], Any]


@dataclass(frozen=True)
class AuditResult:
    """What :func:`audit` found.

    Made by :func:`audit`, not by hand: each parameter below is a read-only attribute of the
    same name (a frozen dataclass), and :attr:`violated` says whether the bound contradicts
    the claim.

    Parameters
    ----------
    epsilon_lower_bound : float
        With probability at least ``confidence``, the mechanism is not ``(e, delta)``-DP for
        any ``e`` below this (0 when nothing was found).
    claimed : float or None
        The epsilon the mechanism claims, if given.
    event : str
        The event tested, and which input it favours.
    p, p_neighbour : float
        Its frequencies in the test samples, under the favoured input and the other.
    samples : int
        Outputs drawn in all (half to choose the event, half to test it).
    confidence, delta : float
        As given.

    Raises
    ------
    dataclasses.FrozenInstanceError
        On setting an attribute: a result is not edited after the audit. (The constructor
        checks nothing; :func:`audit` checks its own arguments.)

    Examples
    --------
    A Laplace mechanism of scale 1 claimed to be 0.5-DP (``rng=1``: a reproducible audit):

    >>> import dpfast as dp
    >>> lap = lambda x, n, rng: x + dp.laplace(1.0, n, rng=rng)
    >>> result = dp.audit(lap, 0.0, 1.0, samples=200_000, epsilon=0.5, rng=1)
    >>> result.violated, result.claimed, result.samples
    (True, 0.5, 200000)
    >>> print(result)
    epsilon >= 0.958 with confidence 0.99 against a claimed epsilon of 0.5: VIOLATED (event ...)
    """

    epsilon_lower_bound: float
    claimed: float | None
    event: str
    p: float
    p_neighbour: float
    samples: int
    confidence: float
    delta: float

    @property
    def violated(self) -> bool:
        """True if the bound exceeds the claimed epsilon (so the claim is false, with
        probability at least ``confidence``)."""
        return self.claimed is not None and self.epsilon_lower_bound > self.claimed

    def __str__(self) -> str:
        claim = "" if self.claimed is None else (
            f" against a claimed epsilon of {self.claimed:g}: "
            + ("VIOLATED" if self.violated else "not contradicted"))
        return (f"epsilon >= {self.epsilon_lower_bound:.3f} with confidence "
                f"{self.confidence:g}{claim} (event {self.event}: frequencies {self.p:.4g} "
                f"vs {self.p_neighbour:.4g}, {self.samples:,} samples)")


def audit(mechanism: Mechanism, data: Any, neighbour: Any, *, samples: int = 1_000_000,
          epsilon: float | None = None, delta: float = 0.0, confidence: float = 0.99,
          thresholds: int = 200, rng: Any = None) -> AuditResult:
    """audit(mechanism, data, neighbour, *, samples=1000000, epsilon=None, delta=0.0, confidence=0.99, thresholds=200, rng=None)

    A lower bound, at ``confidence``, on the epsilon ``mechanism`` spends on the
    neighbouring inputs ``data`` and ``neighbour`` (see the module).

    Parameters
    ----------
    mechanism : callable
        ``mechanism(input, n, rng)`` -> ``n`` outputs: an array of ``n`` numbers, or of ``n``
        rows of integers or booleans.
    data, neighbour
        The neighbouring inputs, passed to ``mechanism`` as they are.
    samples : int, optional
        Outputs drawn in all, at least 1000 (a quarter per input and phase).
    epsilon : float, optional
        The claimed epsilon, reported beside the bound.
    delta : float, optional
        The mechanism's delta, in [0, 1).
    confidence : float, optional
        In (0, 1); default 0.99.
    thresholds : int, optional
        Thresholds searched for real outputs (default 200).
    rng : None, int, ChaCha20 or numpy.random.Generator over ChaCha20, optional
        The generator handed to ``mechanism``; a seed makes the audit reproducible (an
        audit is a test: a seed is fine here, never for a real release).

    Returns
    -------
    AuditResult
        The bound, the event tested and its frequencies; ``.violated`` when the bound
        exceeds ``epsilon``. Nothing is charged to any accountant.

    Raises
    ------
    TypeError
        If ``mechanism`` is not callable; ``samples`` or ``thresholds`` is not an int (a
        bool included); ``epsilon``, ``delta`` or ``confidence`` is not a real number;
        ``rng`` is not one of the accepted kinds; or ``mechanism`` returns something other
        than numbers, or rows of real numbers.
    ValueError
        If ``samples`` is outside [1000, 2**62]; ``epsilon`` is NaN, infinite or <= 0;
        ``delta`` is not in [0, 1); ``confidence`` is not in (0, 1); ``thresholds`` < 1;
        ``rng`` is a negative seed; or ``mechanism`` returns other than ``n`` outputs (or
        more than 2-d), a NaN or infinite real output, or rows too wide to code in 62 bits.
    ImportError
        If scipy (the Clopper-Pearson bounds) is not installed: ``pip install
        "dpfast[audit]"``.

    Examples
    --------
    >>> import dpfast as dp
    >>> lap = lambda x, n, rng: x + dp.laplace(1.0, n, rng=rng)
    >>> result = dp.audit(lap, 0.0, 1.0, samples=400_000, epsilon=1.0, rng=1)
    >>> 0.5 < result.epsilon_lower_bound < 1.0, result.violated
    (True, False)
    >>> round(result.epsilon_lower_bound, 2)
    0.96
    """
    func = "audit"
    if not callable(mechanism):
        raise TypeError(f"The 'mechanism' parameter of {func} must be callable. Got "
                        f"{_v.describe(mechanism)} instead.")
    n = _v.check_positive_int(samples, "samples", func)
    if n < 1000:
        raise ValueError(f"The 'samples' parameter of {func} must be at least 1000. Got "
                         f"{samples!r} instead.")
    claimed = None if epsilon is None else _v.check_epsilon(epsilon, func)
    d = _v.check_real(delta, "delta", func, high=1.0, low_open=False)
    conf = _v.check_real(confidence, "confidence", func, high=1.0)
    n_thresholds = _v.check_positive_int(thresholds, "thresholds", func)
    beta = _beta_quantile()
    gen = resolve_rng(rng, func)
    quarter = n // 4
    choose = [_outputs(mechanism, x, quarter, gen, func) for x in (data, neighbour)]
    test = [_outputs(mechanism, x, quarter, gen, func) for x in (data, neighbour)]
    search: _Outcomes | _Thresholds = _Outcomes(choose[0], choose[1]) \
        if choose[0].dtype.kind in "iub" else _Thresholds(choose[0], choose[1], n_thresholds)
    event, favours = search.best(d)
    hits = event.count(test[favours]), event.count(test[1 - favours])
    alpha = (1.0 - conf) / 2.0
    low = float(beta(hits[0], quarter - hits[0] + 1, alpha)) if hits[0] > 0 else 0.0
    high = float(beta(hits[1] + 1, quarter - hits[1], 1.0 - alpha)) if hits[1] < quarter \
        else 1.0
    bound = math.log((low - d) / high) if low - d > 0.0 and high > 0.0 else 0.0
    which = "data" if favours == 0 else "neighbour"
    return AuditResult(max(bound, 0.0), claimed, f"{event.description}, favouring {which}",
                       hits[0] / quarter, hits[1] / quarter, 4 * quarter, conf, d)


def _beta_quantile() -> Callable[..., Any]:
    try:
        from scipy.special import betaincinv
    except ImportError:
        raise ImportError("dpfast.audit needs scipy for its Clopper-Pearson bounds: "
                          "pip install \"dpfast[audit]\"") from None
    quantile: Callable[..., Any] = betaincinv      # betaincinv(a, b, q): Beta(a, b)'s q-quantile
    return quantile


def _outputs(mechanism: Mechanism, x: Any, n: int, gen: ChaCha20, func: str) -> NDArray[Any]:
    """``n`` outputs as an array of one value per run, or as int64 codes of rows."""
    out = np.asarray(mechanism(x, n, gen))
    if out.shape[:1] != (n,) or out.ndim > 2:
        raise ValueError(f"The 'mechanism' parameter of {func} must return {n} outputs (an "
                         f"array of {n} values or {n} rows). Got shape {out.shape} instead.")
    if out.dtype.kind not in "iubf":
        raise TypeError(f"The 'mechanism' parameter of {func} must return numbers. Got dtype "
                        f"{out.dtype} instead.")
    if out.ndim == 2:
        if out.dtype.kind == "f":
            raise TypeError(f"The 'mechanism' parameter of {func} must return rows of integers "
                            f"or booleans (real outputs: one value per run). Got rows of "
                            f"{out.dtype} instead.")
        return _row_codes(out)
    if out.dtype.kind == "f" and not np.all(np.isfinite(out)):
        raise ValueError(f"The 'mechanism' parameter of {func} must return finite outputs. Got "
                         f"NaN or infinity instead.")
    return out.astype(np.int64) if out.dtype.kind in "ub" else out


def _row_codes(rows: NDArray[Any]) -> NDArray[np.int64]:
    """One int64 per row: the row's values as digits in one radix (the range of the values),
    refused when a row has too many digits for 62 bits."""
    r = rows.astype(np.int64)
    lo, hi = int(r.min()), int(r.max())
    radix = hi - lo + 1
    if r.shape[1] * math.log2(max(radix, 2)) < 62:
        weights = radix ** np.arange(r.shape[1] - 1, -1, -1, dtype=np.int64)
        return np.asarray((r - lo) @ weights, dtype=np.int64)
    raise ValueError("The 'mechanism' parameter of audit must return rows whose values fit "
                     f"62 bits as digits. Got {r.shape[1]} columns of range {radix} instead.")


@dataclass(frozen=True)
class _Event:
    """A set of outputs: which outputs of an array are in it, and how to say it."""

    description: str
    contains: Callable[[NDArray[Any]], NDArray[np.bool_]]

    def count(self, out: NDArray[Any]) -> int:
        return int(np.count_nonzero(self.contains(out)))


class _Outcomes:
    """Events of discrete outputs: the ``k`` outcomes of largest frequency ratio."""

    def __init__(self, a: NDArray[np.int64], b: NDArray[np.int64]):
        self.values, inverse = np.unique(np.concatenate((a, b)), return_inverse=True)
        inverse = inverse.reshape(-1)
        k = self.values.size
        self.counts = (np.bincount(inverse[:a.size], minlength=k),
                       np.bincount(inverse[a.size:], minlength=k))
        self.n = a.size

    def best(self, delta: float) -> tuple[_Event, int]:
        """The event and favoured input (0 or 1) with the largest score."""
        best: tuple[float, NDArray[np.int64], int] = (-math.inf, self.values[:0], 0)
        for favours in (0, 1):
            top, other = self.counts[favours], self.counts[1 - favours]
            order = np.argsort(-(top + 0.5) / (other + 0.5), kind="stable")
            p = np.cumsum(top[order]) / self.n
            q = np.cumsum(other[order]) / self.n
            score = _score(p, q, self.n, delta)
            i = int(np.argmax(score))
            if score[i] > best[0]:
                best = (float(score[i]), self.values[order[:i + 1]], favours)
        chosen = best[1]
        shown = ", ".join(str(int(v)) for v in chosen[:5])
        text = f"output in {{{shown}{', ...' if chosen.size > 5 else ''}}} ({chosen.size} outcomes)"
        return _Event(text, lambda out: np.isin(out, chosen)), best[2]


class _Thresholds:
    """Events of real outputs: ``{out >= t}`` or ``{out <= t}`` (encoded as (t, +1/-1))."""

    def __init__(self, a: NDArray[np.float64], b: NDArray[np.float64], n_thresholds: int):
        pooled = np.concatenate((a, b))
        self.t = np.unique(np.quantile(pooled, np.linspace(0.0, 1.0, n_thresholds + 2)[1:-1]))
        self.sorted = (np.sort(a), np.sort(b))
        self.n = a.size

    def best(self, delta: float) -> tuple[_Event, int]:
        """The event and favoured input (0 or 1) with the largest score."""
        best: tuple[float, tuple[float, int], int] = (-math.inf, (0.0, 1), 0)
        for side in (1, -1):
            freq = [self._freq(s, side) for s in self.sorted]
            for favours in (0, 1):
                score = _score(freq[favours], freq[1 - favours], self.n, delta)
                i = int(np.argmax(score))
                if score[i] > best[0]:
                    best = (float(score[i]), (float(self.t[i]), side), favours)
        t, side = best[1]
        if side == 1:
            return _Event(f"output >= {t:.6g}", lambda out: out >= t), best[2]
        return _Event(f"output <= {t:.6g}", lambda out: out <= t), best[2]

    def _freq(self, s: NDArray[np.float64], side: int) -> NDArray[np.float64]:
        if side == 1:                                           # out >= t
            return (s.size - np.searchsorted(s, self.t, side="left")) / s.size
        return np.searchsorted(s, self.t, side="right") / s.size  # out <= t



def _score(p: NDArray[np.float64], q: NDArray[np.float64], n: int,
           delta: float) -> NDArray[np.float64]:
    """How promising each event is for the test: ``ln((p - delta) / q)`` with each frequency
    moved two standard errors against the event (so rare events do not win by chance)."""
    p_low = p - 2.0 * np.sqrt(p * (1 - p) / n) - delta
    q_high = q + 2.0 * np.sqrt(np.maximum(q * (1 - q), 1.0 / n) / n)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(p_low > 0, np.log(np.maximum(p_low, 1e-300) / q_high), -np.inf)


# -- ready-made audits ------------------------------------------------------------------

@dataclass(frozen=True)
class Case:
    """A mechanism with a pair of neighbouring inputs and the epsilon it claims."""

    mechanism: Mechanism
    data: Any
    neighbour: Any
    epsilon: float
    about: str
    samples: int = 4_000_000        # the default of run_case: enough to flag the broken ones
    broken: bool = False


def _laplace(x: float, n: int, rng: ChaCha20) -> NDArray[np.float64]:
    """n releases of ``x`` by dpfast.laplace_mechanism at epsilon 1 (one vectorized call)."""
    from .accounting import Accountant
    from .mechanisms.laplace import laplace_mechanism
    out = laplace_mechanism(np.full(n, float(x)), sensitivity=1.0, epsilon=1.0,
                            accountant=Accountant(), rng=rng)
    return np.asarray(out, dtype=np.float64)


def _each(release: Callable[[Any, ChaCha20], int]) -> Callable[[Any, int, ChaCha20], Any]:
    """A mechanism of one output per call, run n times."""
    def run(x: Any, n: int, rng: ChaCha20) -> NDArray[np.int64]:
        return np.fromiter((release(x, rng) for _ in range(n)), dtype=np.int64, count=n)
    return run


def _noisy_max(scores: Any, rng: ChaCha20) -> int:
    from .accounting import Accountant
    from .mechanisms.selection import report_noisy_max
    return report_noisy_max(scores, epsilon=1.0, accountant=Accountant(), rng=rng)


def _exponential(scores: Any, rng: ChaCha20) -> int:
    from .accounting import Accountant
    from .mechanisms.selection import exponential_mechanism
    return int(exponential_mechanism(scores, epsilon=1.0, accountant=Accountant(), rng=rng))


def _sparse(cutoff: int) -> Mechanism:
    """n runs of dpfast.Sparse (cutoff c, epsilon 1, threshold 0) on the queries."""
    def run(q: Any, n: int, rng: ChaCha20) -> NDArray[np.int8]:
        from .mechanisms.sparse_vector import sample_runs
        return sample_runs(q, 0.0, epsilon=1.0, cutoff=cutoff, runs=n, rng=rng)
    return run


def _broken_svt(variant: str, cutoff: int) -> Mechanism:
    """A sparse-vector variant that is NOT private at the epsilon (1) it claims (Lyu et al.):
    "no threshold noise", "no halting" (answers every query), or "small query noise"
    (Lap(4 / epsilon), not scaled by the cutoff). Threshold 0; 1 above, 0 below, -1 not
    asked."""
    from .samplers import laplace

    def run(q: Any, n: int, rng: ChaCha20) -> NDArray[np.int8]:
        values = np.asarray(q, dtype=np.float64)
        m = values.size
        rho = np.zeros(n) if variant == "no threshold noise" else laplace(2.0, n, rng=rng)
        scale = 4.0 if variant == "small query noise" else 4.0 * cutoff
        nu = laplace(scale, (n, m), rng=rng)
        above = values[None, :] + nu >= rho[:, None]
        if variant == "no halting":
            return above.astype(np.int8)
        before: NDArray[np.intp] = np.cumsum(above, axis=1) - above
        return np.where(before < cutoff, above, -1).astype(np.int8)
    return run


#: Ready-made audits, by name (``dpfast audit NAME``).
CASES: dict[str, Case] = {
    "laplace": Case(_laplace, 0.0, 1.0, 1.0, "dpfast.laplace_mechanism, epsilon 1, "
                    "sensitivity 1, on 0 and 1"),
    "report_noisy_max": Case(_each(_noisy_max), np.array([1.0, 0.0, 0.0]),
                             np.array([0.0, 1.0, 1.0]), 1.0,
                             "dpfast.report_noisy_max (Laplace), epsilon 1, 3 scores",
                             samples=200_000),
    "exponential_mechanism": Case(_each(_exponential), np.array([1.0, 0.0, 0.0]),
                                  np.array([0.0, 1.0, 1.0]), 1.0,
                                  "dpfast.exponential_mechanism, epsilon 1, 3 utilities",
                                  samples=200_000),
    "above_threshold": Case(_sparse(1), np.array([1.0] * 5 + [0.0] * 5),
                            np.array([0.0] * 5 + [1.0] * 5), 1.0,
                            "dpfast.AboveThreshold, epsilon 1, threshold 0, 10 queries"),
    "sparse": Case(_sparse(5), np.array([0.0] * 5 + [1.0] * 5),
                   np.array([1.0] * 5 + [0.0] * 5), 1.0,
                   "dpfast.Sparse, cutoff 5, epsilon 1, threshold 0, 10 queries"),
    "svt_no_threshold_noise": Case(_broken_svt("no threshold noise", 1), np.zeros(10),
                                   np.ones(10), 1.0, "BROKEN sparse vector: threshold not "
                                   "noised (claims epsilon 1), 10 queries", broken=True),
    "svt_no_halting": Case(_broken_svt("no halting", 1), np.array([1.0] * 5 + [0.0] * 5),
                           np.array([0.0] * 5 + [1.0] * 5), 1.0,
                           "BROKEN sparse vector: does not halt after its cutoff of 1 "
                           "(claims epsilon 1), 10 queries", broken=True),
    "svt_small_query_noise": Case(_broken_svt("small query noise", 5),
                                  np.array([0.0] * 5 + [1.0] * 5),
                                  np.array([1.0] * 5 + [0.0] * 5), 1.0,
                                  "BROKEN sparse vector: query noise Lap(4/epsilon) with a "
                                  "cutoff of 5 (claims epsilon 1), 10 queries", broken=True),
}


def run_case(name: str, *, samples: int | None = None, confidence: float = 0.99,
             rng: Any = None) -> AuditResult:
    """:func:`audit` of ``CASES[name]`` at its claimed epsilon, with ``samples`` outputs
    (default: the case's own, 4 million for the vectorized ones)."""
    if name not in CASES:
        raise ValueError(f"The 'name' parameter of run_case must be one of "
                         f"{', '.join(CASES)}. Got {name!r} instead.")
    case = CASES[name]
    return audit(case.mechanism, case.data, case.neighbour,
                 samples=case.samples if samples is None else samples, epsilon=case.epsilon,
                 confidence=confidence, rng=rng)
