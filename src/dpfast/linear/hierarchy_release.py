"""The result of a census hierarchy release: each level's integer counts, least-squares
estimates and their exact variances, and the error bounds those variances give.

:class:`HierarchyRelease` is what :func:`dpfast.census_hierarchy` (and
:func:`dpfast.dask.census_hierarchy`) return; reading it is post-processing and costs no
budget.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .. import validation as _v

if TYPE_CHECKING:
    from numpy.typing import NDArray

__all__ = ["HierarchyRelease"]


class HierarchyRelease:
    """The result of :func:`census_hierarchy`, levels ordered from the top (the nation, one
    unit) to the leaves.

    Attributes
    ----------
    counts : list of int64 arrays
        Non-negative integer counts per unit of each level; every parent equals the sum of
        its children, exactly.
    estimates : list of float64 arrays
        The least-squares consistent estimates (unbiased, possibly negative or fractional).
    variances : list of float64 arrays
        The exact variance of each unit's least-squares estimate.
    parents : list of int64 arrays
        ``parents[l][i]``: the unit of level ``l`` above unit ``i`` of level ``l + 1``.
    labels : list or None
        Per level, the unit labels (pandas Index) when the hierarchy came from a frame.
    epsilon, delta, rho : float or None
        The release's cost: epsilon (None for a release given in rho alone), delta, and the
        zCDP rho of Gaussian noise (None for Laplace noise).
    split : tuple of float
        Each level's share of epsilon (Laplace) or of rho (Gaussian), top first.
    noise : str
        ``"laplace"`` or ``"gaussian"``.
    scales : tuple of float
        Each level's noise scale, top first: the discrete Laplace scale, or the discrete
        Gaussian's sigma (``1 / sqrt(2 split[l] rho)``).
    """

    def __init__(self, counts: list[NDArray[np.int64]], estimates: list[NDArray[np.float64]],
                 variances: list[NDArray[np.float64]], parents: list[NDArray[np.int64]],
                 epsilon: float | None, split: tuple[float, ...],
                 labels: list[Any] | None = None, *, delta: float = 0.0,
                 rho: float | None = None, noise: str = "laplace",
                 scales: tuple[float, ...] = ()):
        self.counts = counts
        self.estimates = estimates
        self.variances = variances
        self.parents = parents
        self.epsilon = epsilon          # None for a release given in rho alone
        self.delta = delta
        self.rho = rho                  # the zCDP cost charged, for Gaussian noise
        self.split = split              # each level's share of epsilon (Laplace) or rho
        self.noise = noise              # "laplace" or "gaussian"
        self.scales = scales            # each level's Laplace scale or sigma, top first
        self.labels = labels

    def error_bound(self, level: int, beta: float = 0.05) -> NDArray[np.float64]:
        """Per unit of ``level``, a bound on the least-squares estimate's error exceeded with
        probability at most ``beta`` (Chebyshev: ``sqrt(variance / beta)``)."""
        b = _v.check_real(beta, "beta", "HierarchyRelease.error_bound", high=1.0)
        return np.sqrt(self.variances[level] / b)

    def to_pandas(self) -> list[Any]:
        """The integer counts of each level as labelled pandas Series (needs pandas)."""
        import pandas as pd
        labels = self.labels or [pd.RangeIndex(len(c)) for c in self.counts]
        return [pd.Series(c, index=ix, name="count") for c, ix in zip(self.counts, labels)]

    def __repr__(self) -> str:
        sizes = [len(c) for c in self.counts]
        cost = (f"epsilon={self.epsilon!r}" if self.rho is None else
                f"rho={self.rho!r}" if self.epsilon is None else
                f"epsilon={self.epsilon!r}, delta={self.delta!r}")
        return f"HierarchyRelease(units per level={sizes}, {cost})"
