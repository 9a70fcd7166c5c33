"""Fitting a graphical model to noisy marginals: the measurements checked and combined, the
accelerated entropic mirror descent on the potentials (stopped at the noise's loss), and
iterative proportional fitting for exact tables."""
from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Sequence

import numpy as np

from ... import validation as _v
from .junction import Attrs, Measurement, Table
from .model import IMPOSSIBLE, GraphicalModel

__all__ = ["estimate", "accelerated", "fit_exact", "DISCREPANCY"]

#: Where :func:`estimate` stops by default: at this fraction of the loss the noise itself
#: has in expectation (half the measured cells, each residual in units of its sigma). The
#: path of mirror descent from the uniform model regularises; past this point it fits the
#: noise. All 2-way tables of Adult's 8 columns (2,002 cells), one release each, the 2-way
#: l1 error per record of the fit stopped at each fraction (1.0 / 0.85 / 0.7 / 0.6 / 0.5 /
#: 0.4): epsilon = 0.3: 0.0757 / 0.0689 / 0.0659 (the best) / 0.0751 / 0.0887 / 0.0923;
#: epsilon = 1: 0.0331 / 0.0310 / 0.0293 / 0.0289 (the best) / 0.0303 / 0.0338;
#: epsilon = 3: 0.0151 / 0.0142 / 0.0131 / 0.0127 / 0.0124 (the best) / 0.0127 (the same
#: at the other seeds tried, two or three per epsilon). The least-squares optimum lies far
#: below: a fit run to it has the lower loss and the larger error.
DISCREPANCY = 0.7


def _total(measurements: Sequence[Measurement]) -> float:
    """The measurements' estimate of the number of records: each table's sum, weighted by
    the inverse of its variance (cells x sigma^2; exact tables weighted alike)."""
    w = np.array([1.0 / (m.values.size * max(m.sigma, 1.0) ** 2) for m in measurements])
    s = np.array([float(np.sum(m.values)) for m in measurements])
    return max(float(np.sum(w * s) / np.sum(w)), 1.0)


def _checked(measurements: Sequence[Measurement], shape: Sequence[int]) -> list[Measurement]:
    """The measurements, each checked against the attributes' sizes ``shape`` (ValueError
    naming the measurement by position; no value is shown)."""
    d = len(shape)
    if d == 0 or any(isinstance(n, (bool, np.bool_)) or not isinstance(n, numbers.Integral)
                     or n < 1 for n in shape):
        raise ValueError("The 'shape' of estimate must be the attributes' sizes: positive "
                         f"ints, at least one; got {len(shape)} entries, not all so.")
    out = list(measurements)
    if not out:
        raise ValueError("estimate needs at least one measurement; got none.")
    for i, m in enumerate(out):
        c = tuple(int(a) for a in m.clique)
        values = np.asarray(m.values)
        if len(set(c)) != len(c) or not c or any(not 0 <= a < d for a in c):
            raise ValueError(f"Measurement {i} of estimate must name distinct attributes in "
                             f"0..{d - 1}; got {len(c)} attribute(s) outside or repeated.")
        if values.shape != tuple(shape[a] for a in c):
            raise ValueError(f"Measurement {i} of estimate must be a table of shape "
                             f"{tuple(shape[a] for a in c)} (its attributes' sizes); got "
                             f"shape {values.shape}.")
        if values.dtype.kind not in "iuf" or not np.isfinite(values).all():
            raise ValueError(f"Measurement {i} of estimate must hold finite real numbers.")
        sigma = m.sigma
        if isinstance(sigma, (bool, np.bool_)) or not isinstance(sigma, numbers.Real) or \
                not math.isfinite(sigma) or sigma < 0:
            raise ValueError(f"Measurement {i} of estimate must have a finite sigma >= 0 "
                             "(0: an exact table).")
    return out


def _sorted(m: Measurement) -> Measurement:
    order = np.argsort(m.clique)
    return Measurement(tuple(int(m.clique[i]) for i in order),
                       np.transpose(np.asarray(m.values, dtype=np.float64), order),
                       float(m.sigma))


def estimate(measurements: Sequence[Measurement], shape: Sequence[int], *,
             iterations: int = 250, tol: float = 1e-9,
             warm: GraphicalModel | None = None,
             discrepancy: float | None = DISCREPANCY) -> GraphicalModel:
    """The model fitted to ``measurements`` over attributes of sizes ``shape``: accelerated
    entropic mirror descent on the potentials of the measured sets (see the module), from
    the uniform model or from ``warm``'s potentials on the sets they share, stopped after
    ``iterations`` steps, when five steps in a row decrease the loss by less than ``tol``
    (relative), or (unless ``discrepancy`` is None) when the loss falls to ``discrepancy``
    times the noise's own expected loss, half the measured cells: a fit past it fits the
    noise (:data:`DISCREPANCY`). Measurements of the same set are combined first
    (inverse-variance average: the same loss up to a constant)."""
    combined: dict[Attrs, tuple[Table, float]] = {}
    for m in map(_sorted, _checked(measurements, shape)):
        if m.clique in combined and 0.0 in (m.sigma, combined[m.clique][1]):
            if m.sigma == 0.0:
                combined[m.clique] = (m.values, 0.0)          # the exact table stands
        elif m.clique in combined:
            v, s = combined[m.clique]
            w1, w2 = 1.0 / s ** 2, 1.0 / m.sigma ** 2
            combined[m.clique] = ((w1 * v + w2 * m.values) / (w1 + w2),
                                  1.0 / math.sqrt(w1 + w2))
        else:
            combined[m.clique] = (m.values, m.sigma)
    if isinstance(iterations, bool) or not isinstance(iterations, numbers.Integral) or \
            iterations < 1:
        raise ValueError(f"The 'iterations' of estimate must be an int >= 1; got {iterations!r}.")
    if discrepancy is not None:
        discrepancy = _v.check_real(discrepancy, "discrepancy", "estimate", low_open=False)
    if warm is not None and warm.shape != tuple(int(n) for n in shape):
        raise ValueError("The 'warm' model of estimate must have the same attributes' sizes "
                         f"as 'shape': {warm.shape} against {tuple(shape)}.")
    ms = [Measurement(c, v, s) for c, (v, s) in combined.items()]
    exact = [m.sigma == 0 for m in ms]
    if any(exact):
        if not all(exact):
            raise ValueError("The measurements of estimate must all be exact (sigma 0) or all "
                             f"noisy (sigma > 0); got {sum(exact)} exact of {len(ms)}.")
        return fit_exact(ms, shape, iterations, tol)
    model = GraphicalModel(shape, [m.clique for m in ms], _total(ms), [m.sigma for m in ms])
    if warm is not None:
        old = dict(zip(warm.sets, warm.potentials))
        uniform = model.potentials
        model.set_potentials([old.get(s, np.zeros_like(t)).copy()
                              for s, t in zip(model.sets, model.potentials)])
        if not all(np.isfinite(t).all() for t in model.measured_marginals()):
            model.set_potentials(uniform)   # no model a float holds on this tree: start over
    scale = min(m.sigma ** 2 for m in ms) / model.total
    weights = [scale / m.sigma ** 2 for m in ms]

    def at(theta: list[Table]) -> tuple[float, list[Table]]:
        model.set_potentials(theta)
        loss, grad = 0.0, []
        for m, w, mu in zip(ms, weights, model.measured_marginals()):
            r = mu - m.values
            loss += 0.5 * float(np.sum(r * r)) / m.sigma ** 2
            grad.append(r * w)
        return loss, grad

    floor = 0.0 if discrepancy is None else \
        float(discrepancy) * sum(m.values.size for m in ms) / 2
    theta = accelerated(at, model.potentials, iterations, tol, floor)
    model.set_potentials(theta)
    return model


def accelerated(at: Callable[[list[Table]], tuple[float, list[Table]]],
                 theta: list[Table], steps: int, tol: float,
                 floor: float = 0.0) -> list[Table]:
    """Accelerated descent from ``theta`` along ``at``'s gradient, one evaluation a step:
    the step is taken from the extrapolated point ``y``; when the loss at ``y`` rises above
    the last one the momentum restarts from the best point (restart on the function value,
    O'Donoghue & Candes 2015). A rise within two steps of a restart is the step's own
    fault, not the momentum's: the step is halved. The step grows by a twentieth a step
    until the first such rise, then holds: a step that kept growing outgrew what the loss
    allows every fifteen steps or so, and each restart dropped the momentum (all 2-way
    tables of Adult at epsilon = 3: 300 steps to a loss of 1.21 times the noise's, where a
    held step reaches 0.87 in 100; the models' errors alike at equal loss). That first cut
    is to 0.4, not 0.5: gradient descent holds up to a step of 2/L (L the loss's largest
    curvature) but momentum only up to about 1/L, and a step that rose after growing was
    1.05 times one that held, so 0.4 of it is within 0.84/L (at 0.5 the momentum restarted
    every eleven steps on Adult). Stopped after ``steps`` steps, when five steps in a row
    gain less than ``tol`` (relative), or at a loss of ``floor`` or less. Returns the best
    potentials found."""
    best, (best_loss, best_grad) = theta, at(theta)
    if not math.isfinite(best_loss):        # no finite loss to descend from
        return best
    y, gy = theta, best_grad
    eta, growth, k, stalled, last = 1.0, 1.05, 0, 0, best_loss
    x_prev = theta
    for _ in range(steps):
        x = [a - eta * b for a, b in zip(y, gy)]
        k += 1
        beta = (k - 1) / (k + 2.0)
        y_new = [a + beta * (a - b) for a, b in zip(x, x_prev)]
        ln, gn = at(y_new)
        if not ln <= last:                  # a rise, or a non-finite loss: restart
            if k <= 2 or not math.isfinite(ln):
                eta *= 0.4 if growth > 1.0 else 0.5
                growth = 1.0
            k = 0
            y, gy, x_prev = best, best_grad, best
            last = best_loss
            stalled += 1
            if eta < 1e-12 or stalled >= 25:
                break
            continue
        stalled = stalled + 1 if best_loss - ln <= tol * best_loss else 0
        if ln < best_loss:
            best, best_loss, best_grad = y_new, ln, gn
        if stalled >= 5 or best_loss <= floor:
            break
        x_prev, y, gy, last = x, y_new, gn, ln
        eta *= growth
    return best


def fit_exact(ms: Sequence[Measurement], shape: Sequence[int], sweeps: int,
               tol: float) -> GraphicalModel:
    """The maximum-entropy model whose marginals on the measured sets are the exact tables
    ``ms`` (consistent and non-negative: the measurements at epsilon = infinity):
    iterative proportional fitting from the uniform model, each table's log-ratio to the
    model's marginal added to its potential in turn (zero cells made impossible), stopped
    when a sweep leaves every cell within ``tol`` (relative to the total) of its target, or
    after ``sweeps`` sweeps. Linear convergence: exact tables of Adult are matched to 1e-9
    of the total in tens of sweeps."""
    for m in ms:
        if not np.isfinite(m.values).all() or (m.values < 0).any():
            raise ValueError("The exact tables of estimate (sigma 0) must be finite and "
                             "non-negative.")
    model = GraphicalModel(shape, [m.clique for m in ms], _total(ms), [0.0] * len(ms))
    theta = [t.copy() for t in model.potentials]
    for _ in range(max(sweeps, 1)):
        for k, m in enumerate(ms):
            model.set_potentials(theta)
            mu = model.measured_marginals()[k]
            with np.errstate(divide="ignore", invalid="ignore"):
                ratio = np.where(m.values > 0, np.log(m.values) - np.log(mu), 0.0)
            theta[k] = np.where(m.values > 0, theta[k] + np.nan_to_num(ratio), IMPOSSIBLE)
        model.set_potentials(theta)
        worst = max(float(np.max(np.abs(mu - m.values)))
                    for mu, m in zip(model.measured_marginals(), ms))
        if worst <= tol * model.total:
            break
    return model
