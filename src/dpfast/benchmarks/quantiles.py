"""Many quantiles at once: Gillenwater, Joseph & Kulesza's JointExp (2021) beside Kaplan,
Schnapp & Stemmer's recursion (2022, what ``dp.quantiles`` runs) and separate exponential
mechanisms, measured on one sample, to pick the method by its error.

JointExp is built here for the comparison only. It draws all ``m`` quantiles in one
exponential mechanism over the nondecreasing tuples of grid points ``y_1 <= ... <= y_m``,
with utility ``-sum_j |c_j - t_j|``: ``c_j`` the values between ``y_{j-1}`` and ``y_j``
(ranks: values strictly below), ``t_j = (q_j - q_{j-1}) n`` (``q_0 = 0``, ``q_{m+1} = 1``).
A row added or removed changes one ``c_j`` by one and the targets by one in all, so the
utility's sensitivity is ``2 max_rows``. The tuples are grouped by the gaps of the sorted
values (the integers with ``k`` values below them, ``G_k`` of them): a gap holding ``r``
outputs holds ``C(G_k + r - 1, r)`` nondecreasing tuples. The draw is exact dynamic
programming over (quantile, gap, outputs so far in the gap), then backward sampling, then a
uniform tuple inside the gaps drawn -- ``O(m n^2 + m^2 n)`` time, which limits it to samples
of a few thousand values (the paper's FFT form is ``O(m n log n + m^2 n)``; at the benchmark's
5 * 10^6 values that is still about 10^10 operations for 99 quantiles).
"""
from __future__ import annotations

import time
from typing import Any, Mapping

import numpy as np
from numpy.typing import NDArray

__all__ = ["joint_exp", "utility", "compare"]


def utility(s: NDArray[np.integer], y: NDArray[np.integer], qs: NDArray[np.float64]) -> float:
    """JointExp's utility of the nondecreasing tuple ``y`` for the sorted values ``s``:
    ``-sum_j |c_j - t_j|`` (what :func:`joint_exp` draws with weight ``exp(a u)``)."""
    n = len(s)
    ranks = np.r_[0, np.searchsorted(np.asarray(s), np.asarray(y), side="left"), n]
    t = np.diff(np.r_[0.0, np.asarray(qs, dtype=np.float64), 1.0]) * n
    return -float(np.sum(np.abs(np.diff(ranks) - t)))


def _lse(x: NDArray[np.float64], axis: int = -1) -> NDArray[np.float64]:
    """log(sum(exp(x))) along ``axis``, -inf where every term is."""
    top = np.max(x, axis=axis, keepdims=True)
    safe = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(divide="ignore"):
        out = np.log(np.sum(np.exp(x - safe), axis=axis, keepdims=True)) + safe
    squeezed: NDArray[np.float64] = np.squeeze(out, axis=axis)
    return squeezed


def _choice(gen: np.random.Generator, logw: NDArray[np.float64]) -> NDArray[np.int64]:
    """One index per row of ``logw`` (2-D), with probability proportional to exp(row)."""
    p = np.exp(logw - np.max(logw, axis=1, keepdims=True))
    c = np.cumsum(p, axis=1)
    u = np.asarray(gen.random(logw.shape[0]))[:, None] * c[:, -1:]
    picked: NDArray[np.int64] = np.minimum((c <= u).sum(axis=1),
                                           logw.shape[1] - 1).astype(np.int64)
    return picked


def joint_exp(s: NDArray[np.integer], lo: int, hi: int, qs: NDArray[np.float64],
              epsilon: float, max_rows: int, gen: np.random.Generator,
              draws: int = 1) -> NDArray[np.int64]:
    """JointExp's quantiles of the sorted integers ``s`` (all in [lo, hi]) among the
    integers lo..hi, for the increasing levels ``qs``: ``draws`` independent releases,
    each an ``epsilon``-DP draw (rows of ``max_rows`` a person). Returns ``draws x m``."""
    s = np.asarray(s, dtype=np.int64)
    qs = np.asarray(qs, dtype=np.float64)
    n, m = s.size, qs.size
    a = epsilon / (4.0 * max_rows)                     # epsilon / (2 * sensitivity)
    t = np.diff(np.r_[0.0, qs, 1.0]) * n               # targets t_1..t_{m+1}
    edges = np.r_[lo - 1, s, hi]
    G = np.diff(edges).astype(np.float64)              # gap k: G[k] integers, k = 0..n
    with np.errstate(divide="ignore"):
        logG = np.log(G)
    k = np.arange(n + 1)
    d = k[:, None] - k[None, :]                        # k - k'
    below = d > 0
    # F1[j][k]: log weight of tuples y_1..y_{j+1} with y_{j+1} the first output in gap k;
    # H[j][k]: the same with y_{j+1} anywhere in gap k (any number of outputs there).
    F1 = np.empty((m, n + 1))
    H = np.empty((m, n + 1))
    # stay[r]: log weight of the r-th output in a gap after the first, for each gap.
    stay = [np.zeros(n + 1)] + [np.log(G + r - 1.0) - np.log(r) for r in range(2, m + 1)]

    def run_weights(j: int, kk: NDArray[np.int64]) -> NDArray[np.float64]:
        """Log weights, one row per gap of ``kk``, of output j being the r-th (r = 1..j+1)
        in its gap: the run's first output is F1[j-r+1], then r-1 more, each counting no
        values (|0 - t|)."""
        w = np.full((kk.size, j + 1), -np.inf)
        w[:, 0] = F1[j][kk]
        acc = np.zeros(kk.size)
        for r in range(2, j + 2):
            acc = acc + stay[r - 1][kk] - a * abs(t[j - r + 2])
            w[:, r - 1] = F1[j - r + 1][kk] + acc
        return w

    for j in range(m):
        if j == 0:
            F1[0] = logG - a * np.abs(k - t[0])
        else:
            terms = np.where(below, H[j - 1][None, :] - a * np.abs(d - t[j]), -np.inf)
            F1[j] = logG + _lse(terms, axis=1)
        H[j] = _lse(run_weights(j, k), axis=1)
    # Backward: the last output's gap and run, then each earlier one.
    out_gap = np.empty((draws, m), dtype=np.int64)

    last = H[m - 1] - a * np.abs(n - k - t[m])
    kk = _choice(gen, np.broadcast_to(last, (draws, n + 1)))
    run = _choice(gen, run_weights(m - 1, kk)) + 1
    for j in range(m - 1, -1, -1):
        out_gap[:, j] = kk
        if j == 0:
            break
        same = run > 1
        new_k = kk.copy()
        new_run = run - 1
        move = np.flatnonzero(~same)
        if move.size:
            w = np.where(k[None, :] < kk[move, None],
                         H[j - 1][None, :] - a * np.abs(kk[move, None] - k[None, :] - t[j]),
                         -np.inf)
            new_k[move] = _choice(gen, w)
            new_run[move] = _choice(gen, run_weights(j - 1, new_k[move])) + 1
        kk, run = new_k, new_run
    # A uniform nondecreasing tuple inside each gap: c outputs among G integers are c
    # distinct integers of G + c - 1, sorted, minus 0..c-1.
    out = np.empty((draws, m), dtype=np.int64)
    for i in range(draws):
        gaps, counts = np.unique(out_gap[i], return_counts=True)
        pos = 0
        for g, c in zip(gaps.tolist(), counts.tolist()):
            picks = np.sort(gen.choice(int(G[g]) + c - 1, size=c, replace=False))
            out[i, pos:pos + c] = edges[g] + 1 + picks - np.arange(c)
            pos += c
    return out


def compare(table: Mapping[str, NDArray[Any]], rows: int = 2000, m: int = 99,
            epsilon: float = 1.0, repeats: int = 5, lo: float = 0.0, hi: float = 300000.0,
            seed: int = 0) -> list[dict[str, Any]]:
    """JointExp, the recursion and separate mechanisms on ``rows`` salaries of ``table``
    drawn at random (each row a person), the ``m`` levels ``1/(m+1) .. m/(m+1)``: mean
    absolute relative error against the sample's own quantiles, mean over ``repeats``
    releases, and the median time of one release."""
    import dpfast as dp
    from dpfast import records
    gen = np.random.default_rng(seed)
    x = np.asarray(table["salary"])[gen.choice(len(table["salary"]), rows, replace=False)]
    levels = np.arange(1, m + 1) / (m + 1)
    true = np.quantile(x, levels)
    g, top = records.quantile_grid(lo, hi)
    s = np.sort(np.clip(np.floor((x - lo) / g), 0, top).astype(np.int64))
    out = []
    for method in ("joint", "recursive", "independent"):
        errors, times = [], []
        for r in range(repeats):
            t0 = time.perf_counter()
            if method == "joint":
                got = lo + joint_exp(s, 0, top, levels, epsilon, 1,
                                     np.random.Generator(dp.ChaCha20(seed + r)))[0] * g
            else:
                got = dp.quantiles(x, levels, bounds=(lo, hi), epsilon=epsilon,
                                   method=method, rng=seed + r)
            times.append(time.perf_counter() - t0)
            errors.append(float(np.mean(np.abs(got / true - 1.0))))
        out.append({"method": method, "error": float(np.mean(errors)),
                    "worst": float(np.max(errors)), "seconds": float(np.median(times)),
                    "rows": rows, "m": m, "repeats": repeats})
    return out
