"""The tree (hierarchical) mechanism for range queries, 1-D and 2-D.

Noise goes on every node of a b-ary tree over the cells but the root: each record is counted
in one node per level, so with ``h`` measured levels the count vector of all nodes has l1
sensitivity ``h`` and l2 sensitivity ``sqrt(h)``. Laplace noise (the default): every node gets
scale ``h / epsilon`` (discrete Laplace for integer counts). Gaussian noise
(``noise="gaussian"``): every node gets one sigma, calibrated over the whole tree's l2
sensitivity ``sqrt(h)`` in one measure (:func:`dpfast.noise.measure`: ``sigma = sqrt(h) /
sqrt(2 rho)``, or the tightest sigma for this release at (epsilon, delta)); exact discrete
Gaussian noise for integer counts. The root (the grand total) is not measured: it would cost
a level of budget and tells little that its children do not. The least-squares estimate consistent with
the tree (each parent the sum of its children) comes from two linear passes (Hay et al.
2010, with per-level weights): bottom-up, each node's best estimate from its own subtree;
top-down, each parent's discrepancy shared among its children in proportion to their
variances. Consistency is post-processing: it costs no budget.

Exact variances. With per-level weights ``w_l`` (inverse noise variances, 0 for the root),
the estimate's covariance is ``M^-1`` with ``M = sum_l w_l J_l`` (``J_l`` block-diagonal
all-ones blocks of level ``l``'s node size ``s_l = b^l``). These matrices commute: on the
space ``E_k`` of vectors constant on level-k blocks and summing to zero on level-(k+1)
blocks, ``M`` is ``lambda_k = sum_{l <= k} w_l s_l``. So the variance of a query ``q`` is
``sum_k (T_k - T_{k+1}) / lambda_k`` with ``T_k = sum over level-k blocks B of
(q . 1_B)^2 / s_k``: ``O(height)`` per range (``range_variance``), and in closed form
summed over all ranges (:mod:`dpfast.linear.tree_variance`), which is how the branching
factor is chosen (``branching=None``: the integer height and branching with the least mean
variance over all ranges, after Qardaji, Yang & Li 2013; height 1 is the identity, chosen
when it is best). The node
variance grows with the height as ``h**2`` under Laplace noise and as ``h`` under Gaussian
noise (``sigma**2`` is proportional to the l2 sensitivity squared), so the two noises can
choose different shapes.

2-D counts get the Kronecker product of two such trees (each record in ``h0 * h1`` nodes:
l1 sensitivity ``h0 h1``, l2 ``sqrt(h0 h1)``):
the estimate is the 1-D estimate along each axis in turn and a rectangle's variance is the
product of its two ranges' 1-D factors.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import _native
from .. import validation as _v
from .._release import Release
from ..accounting import composes_in_zcdp
from ..noise import Gaussian, Laplace, Measure, measure
from ..samplers import MAX_DISCRETE_SCALE, MAX_DISCRETE_SIGMA
from .tree_variance import (level_lambdas, level_weights, mean_range_variance,
                            noise_variance, tree_shape)

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

    from ..accounting import AccountantLike
    from ..rng import RngLike

__all__ = ["tree_mechanism", "TreeRelease", "tree_shape", "mean_range_variance",
           "noise_variance"]

MAX_CELLS = 2**34


def _sum_groups(a: NDArray[np.float64], b: int,
                out: NDArray[np.float64] | None = None) -> NDArray[np.float64]:
    """Sums of consecutive groups of b along axis 0 (for 1-D arrays, one compiled pass)."""
    if a.ndim == 1 and a.flags.c_contiguous:
        dest = np.empty(a.size // b) if out is None else out
        _native.sum_groups(a, b, dest)
        return dest
    return np.add.reduce(a.reshape((-1, b) + a.shape[1:]), axis=1, out=out)


class _Tree1D:
    """One axis's tree: its shape, weights and the two consistency passes along axis 0."""

    def __init__(self, n: int, branching: int, height: int, node_variance: float):
        self.n, self.b, self.h = n, branching, height
        self.leaves = branching ** height
        self.weights = level_weights(branching, height, node_variance)
        self.lam = level_lambdas(branching, self.weights)

    def level_sizes(self) -> list[int]:
        return [self.leaves // self.b ** level for level in range(self.h)]

    def node_counts(self, leaves: NDArray[Any]) -> list[NDArray[Any]]:
        """Counts of every measured level (leaves padded with zeros), along axis 0."""
        pad = self.leaves - leaves.shape[0]
        level = np.concatenate((leaves, np.zeros((pad,) + leaves.shape[1:], leaves.dtype))) \
            if pad else leaves
        levels = [level]
        for _ in range(1, self.h):
            level = level.reshape((-1, self.b) + level.shape[1:]).sum(axis=1)
            levels.append(level)
        return levels

    def nodes(self, leaves: NDArray[Any],
              ) -> tuple[NDArray[np.float64], list[NDArray[np.float64]]]:
        """node_counts of a 1-D histogram written into one float64 array (no other copy),
        with a view of each level."""
        sizes = self.level_sizes()
        nodes = np.empty(sum(sizes))
        level = nodes[:self.leaves]
        level[:leaves.size] = leaves
        level[leaves.size:] = 0.0
        levels, start = [level], self.leaves
        for size in sizes[1:]:
            parent = nodes[start:start + size]
            _sum_groups(level, self.b, out=parent)
            levels.append(parent)
            level, start = parent, start + size
        return nodes, levels

    def consistent(self, noisy: list[NDArray[np.float64]]) -> NDArray[np.float64]:
        """Least-squares leaf estimates from the noisy measured levels (along axis 0; the
        levels are overwritten). Bottom-up, ``z`` is each node's estimate from its subtree
        (its measurement and its children's sum ``s``, weighted by inverse variances; a
        whole level shares one variance); top-down, each parent's gap to its children's
        sum is shared equally among them (they have equal variances)."""
        b = self.b
        z, sums = [noisy[0]], []
        var = 1.0 / self.weights[0]
        for level in range(1, self.h + 1):
            s = _sum_groups(z[-1], b)
            sums.append(s)
            vs = b * var
            w = self.weights[level]
            if w:
                mine = noisy[level]
                mine *= w / (w + 1.0 / vs)
                mine += s * ((1.0 / vs) / (w + 1.0 / vs))
                z.append(mine)
                var = 1.0 / (w + 1.0 / vs)
            else:
                z.append(s)
                var = vs
        est = z[self.h]                                    # the root
        for level in range(self.h - 1, -1, -1):
            gap = (est - sums[level]) / b
            if z[level].ndim == 1 and z[level].flags.c_contiguous:
                _native.add_to_groups(z[level], b, gap)
                est = z[level]
            else:
                child = z[level].reshape((-1, b) + z[level].shape[1:])
                child += gap[:, np.newaxis]
                est = child.reshape(z[level].shape)
        return est

    def variance_factor(self, lo: NDArray[np.int64], hi: NDArray[np.int64]) -> NDArray[Any]:
        """q^T M^-1 q for the ranges [lo, hi) (vectorized)."""
        length = (hi - lo).astype(np.float64)
        out = np.zeros(np.broadcast(lo, hi).shape)
        prev = None
        for k in range(self.h, -1, -1):                    # root first: T_{k+1} known
            s = self.b ** k
            first, last = lo // s, np.maximum(hi - 1, lo) // s
            left = np.minimum((first + 1) * s, hi) - lo
            right = hi - last * s
            full = np.maximum(last - first - 1, 0)
            sq = np.where(first == last, length ** 2,
                          left.astype(np.float64) ** 2 + right.astype(np.float64) ** 2
                          + full * float(s) ** 2)
            t_k = sq / s
            out += (t_k - (prev if prev is not None else 0.0)) / self.lam[k]
            prev = t_k
        return out


class TreeRelease:
    """The result of :func:`tree_mechanism`: consistent estimates of every cell, range sums
    and their exact variances. Everything here is post-processing of the noisy tree.

    Attributes
    ----------
    estimate : float64 array
        The least-squares estimate of every cell.
    epsilon, delta, rho : float or None
        The release's cost: epsilon (None for a release given in rho alone), delta, and the
        zCDP rho of Gaussian noise (None for Laplace noise).
    noise : str
        ``"laplace"`` or ``"gaussian"``.
    scale : float
        The noise scale of every measured node: Laplace's, or the Gaussian's sigma.
    node_variance : float
        The noise variance of every measured node (``sigma**2`` for Gaussian noise), from
        which every variance here is computed.
    """

    estimate: NDArray[np.float64]

    def __init__(self, estimate: NDArray[np.float64], trees: tuple[_Tree1D, ...],
                 epsilon: float | None, node_variance: float, *, delta: float = 0.0,
                 rho: float | None = None, noise: str = "laplace", scale: float = 0.0):
        self.estimate = estimate
        self._trees = trees
        self.epsilon = epsilon          # None for a release given in rho alone
        self.delta = delta
        self.rho = rho                  # the zCDP cost charged, for Gaussian noise
        self.noise = noise              # "laplace" or "gaussian", on every measured node
        self.scale = scale              # its scale: Laplace's, or the Gaussian's sigma
        self.node_variance = node_variance
        self._prefix: NDArray[np.float64] | None = None

    @property
    def branching(self) -> int | tuple[int, ...]:
        b = tuple(t.b for t in self._trees)
        return b[0] if len(b) == 1 else b

    @property
    def height(self) -> int | tuple[int, ...]:
        h = tuple(t.h for t in self._trees)
        return h[0] if len(h) == 1 else h

    def _bounds(self, lo: ArrayLike, hi: ArrayLike, axis: int, method: str,
                ) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        func = f"TreeRelease.{method}"
        n = self._trees[axis].n
        a = _v.as_array(lo, "lo", func)
        c = _v.as_array(hi, "hi", func)
        for name, v in (("lo", a), ("hi", c)):
            if v.dtype.kind not in "iu":
                raise TypeError(f"The {name!r} parameter of {func} must be integer. Got "
                                f"{_v.describe(v)} instead.")
        a, c = np.broadcast_arrays(a.astype(np.int64), c.astype(np.int64))
        bad = (a < 0) | (a > c) | (c > n)
        if bad.any():
            i = int(np.flatnonzero(bad.ravel())[0])
            raise ValueError(f"The 'lo' and 'hi' parameters of {func} must satisfy "
                             f"0 <= lo <= hi <= {n}. Got lo={a.ravel()[i]}, "
                             f"hi={c.ravel()[i]} instead.")
        return a, c

    def range_sums(self, lo: ArrayLike, hi: ArrayLike) -> NDArray[np.float64]:
        """Estimated counts of the cells in ``[lo, hi)`` (arrays broadcast together). For
        2-D releases, ``lo`` and ``hi`` are pairs of arrays: rows ``[lo[0], hi[0])`` by
        columns ``[lo[1], hi[1])``."""
        if len(self._trees) == 1:
            a, c = self._bounds(lo, hi, 0, "range_sums")
            if self._prefix is None:
                self._prefix = np.concatenate(([0.0], np.cumsum(self.estimate)))
            return self._prefix[c] - self._prefix[a]
        (a0, c0), (a1, c1) = (self._bounds(lo[ax], hi[ax], ax, "range_sums")  # type: ignore[index]
                              for ax in (0, 1))
        if self._prefix is None:
            p = np.zeros((self.estimate.shape[0] + 1, self.estimate.shape[1] + 1))
            p[1:, 1:] = self.estimate.cumsum(axis=0).cumsum(axis=1)
            self._prefix = p
        p = self._prefix
        return p[c0, c1] - p[a0, c1] - p[c0, a1] + p[a0, a1]

    def range_variance(self, lo: ArrayLike, hi: ArrayLike) -> NDArray[np.float64]:
        """Exact variance of :meth:`range_sums` for the same arguments (the estimate is
        unbiased: this is its mean squared error)."""
        if len(self._trees) == 1:
            a, c = self._bounds(lo, hi, 0, "range_variance")
            return np.asarray(self._trees[0].variance_factor(a, c), dtype=np.float64)
        (a0, c0), (a1, c1) = (self._bounds(lo[ax], hi[ax], ax, "range_variance")  # type: ignore[index]
                              for ax in (0, 1))
        f0 = self._trees[0].variance_factor(a0, c0)
        f1 = self._trees[1].variance_factor(a1, c1)
        # Kronecker: each factor is v q^T (A^T A)^-1 q; the product counts v twice.
        return np.asarray(f0 * f1 / self.node_variance, dtype=np.float64)

    def range_error_bound(self, lo: ArrayLike, hi: ArrayLike, beta: float = 0.05,
                          ) -> NDArray[np.float64]:
        """A bound on ``|range_sums - true|`` that each range exceeds with probability at
        most ``beta`` (Chebyshev: ``sqrt(variance / beta)``; it assumes nothing about the
        noise beyond its variance)."""
        b = _v.check_real(beta, "beta", "TreeRelease.range_error_bound", high=1.0)
        return np.sqrt(self.range_variance(lo, hi) / b)

    def __repr__(self) -> str:
        cost = (f"epsilon={self.epsilon!r}" if self.rho is None else
                f"rho={self.rho!r}" if self.epsilon is None else
                f"epsilon={self.epsilon!r}, delta={self.delta!r}")
        return (f"TreeRelease(cells={self.estimate.shape}, branching={self.branching}, "
                f"height={self.height}, {cost})")


def _check_branching(branching: object, ndim: int, func: str) -> tuple[int | None, ...]:
    if branching is None:
        return (None,) * ndim
    values: Any = branching if isinstance(branching, (tuple, list)) else (branching,) * ndim
    if len(values) != ndim:
        raise ValueError(f"The 'branching' parameter of {func} must be one integer or one "
                         f"per axis ({ndim}). Got {branching!r} instead.")
    for v in values:
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)) or v < 2:
            raise ValueError(f"The 'branching' parameter of {func} must be an integer >= 2 "
                             f"(or None: chosen for range queries). Got {branching!r} "
                             "instead.")
    return tuple(int(v) for v in values)


def tree_mechanism(counts: ArrayLike, *, epsilon: float | None = None,
                   branching: int | None = None, noise: str = "laplace",
                   delta: float | None = None, rho: float | None = None,
                   accountant: AccountantLike | None = None, rng: RngLike = None,
                   threads: int | None = None) -> TreeRelease:
    """tree_mechanism(counts, *, epsilon=None, branching=None, noise="laplace", delta=None, rho=None, accountant=None, rng=None, threads=None)

    Release a histogram for range queries: noise on every node of a b-ary tree over the
    cells, then the least-squares estimate consistent with the tree (see the module).
    Error grows with the logarithm of a range's length instead of its length.

    Parameters
    ----------
    counts : array_like, 1-D or 2-D
        Counts of records per cell (each record in one cell: sensitivity 1). Integer counts
        get discrete Laplace (discrete Gaussian) noise, floating counts Laplace (Gaussian)
        noise on a grid.
    epsilon : float, optional
        Required with Laplace noise; with Gaussian noise, together with ``delta``.
    branching : int or pair of ints, optional
        The tree's branching factor (per axis in 2-D). Default: the shape with the least
        mean error over all ranges for this number of cells and this noise
        (:func:`tree_shape`).
    noise : {"laplace", "gaussian"}
        Laplace noise (pure epsilon-DP), or Gaussian noise over the tree's l2 sensitivity
        ``sqrt(height)`` (the product of the axes' heights in 2-D), given ``rho`` (zCDP) or
        ``epsilon`` and ``delta`` (the tightest sigma for this one release).
    delta : float, optional
        With Gaussian noise and ``epsilon``: in (0, 1).
    rho : float, optional
        With Gaussian noise: the release's zCDP cost (> 0), instead of epsilon and delta.
    accountant, rng, threads
        As for :func:`dpfast.laplace_mechanism`.

    Returns
    -------
    TreeRelease
        ``.estimate`` (float64, the shape of ``counts``), ``.range_sums(lo, hi)``,
        ``.range_variance(lo, hi)`` and ``.range_error_bound(lo, hi, beta)`` (from the
        noise's per-node variance, ``.node_variance``).

    Raises
    ------
    TypeError
        ``counts`` is not numeric data (strings, booleans, objects...); ``epsilon``,
        ``delta`` or ``rho`` is not a real number; ``noise`` is not a str; ``accountant``
        is not an accountant; ``rng`` is not one of the accepted kinds; ``threads`` is not
        an int.
    ValueError
        ``counts`` is not a non-empty 1-D or 2-D array, has more than ``2**34`` cells,
        holds NaN or infinite entries, or sums (in absolute value) beyond ``2**52`` steps of
        the noise's grid; ``branching`` is not an integer >= 2 (one, or one per axis);
        ``noise`` is neither ``"laplace"`` nor ``"gaussian"``; the privacy keywords do not
        fit the noise (Laplace: ``epsilon`` missing, ``rho`` or a ``delta`` > 0 given;
        Gaussian: neither ``rho`` nor both ``epsilon`` and ``delta``, or both); ``epsilon``
        or ``rho`` <= 0, ``delta`` outside (0, 1); the noise scale (``height / epsilon``)
        or the discrete Gaussian's sigma out of the sampler's range; ``threads`` outside
        [1, 1024]. The message gives the position of a bad entry, never its value.
    BudgetExceededError
        The accountant cannot afford the release. (Every refusal here comes before
        anything is charged or drawn.)

    Examples
    --------
    Ages of 10,000 people in 100 one-year cells (``rng=0`` makes the example
    reproducible: a seed is for tests and research only, never for a real release):

    >>> import numpy as np
    >>> import dpfast as dp
    >>> ages = np.random.default_rng(7).integers(0, 100, size=10_000)
    >>> counts = np.bincount(ages, minlength=100)
    >>> acct = dp.Accountant(epsilon=1.0)
    >>> rel = dp.tree_mechanism(counts, epsilon=1.0, accountant=acct, rng=0)
    >>> rel
    TreeRelease(cells=(100,), branching=10, height=2, epsilon=1.0)
    >>> int(counts[18:65].sum()), round(float(rel.range_sums(18, 65)), 1)
    (4725, 4745.2)
    >>> round(float(rel.range_error_bound(18, 65, beta=0.05)), 1)  # exceeded w.p. <= 5%
    35.4
    >>> rel.range_sums([0, 18, 65], [18, 65, 100]).round(1)
    array([1746.6, 4745.2, 3515.7])
    >>> tuple(acct.spent)
    (1.0, 0.0)

    Gaussian noise under a zCDP budget (its own shape: node variance grows as the height):

    >>> rel = dp.tree_mechanism(counts, noise="gaussian", rho=0.5, rng=0,
    ...                         accountant=dp.Accountant(rho=1.0))
    >>> rel.rho, rel.branching, rel.height
    (0.5, 5, 3)
    """
    func = "tree_mechanism"
    if isinstance(noise, str) and noise == "laplace" and epsilon is not None:
        _v.check_epsilon(epsilon, func)         # first, as before the noise keywords
    src = _v.as_array(counts, "counts", func)
    if src.ndim not in (1, 2) or src.size == 0:
        raise ValueError(f"The 'counts' parameter of {func} must be a non-empty 1-D or 2-D "
                         f"array of counts. Got {_v.describe(src)} instead.")
    if src.size > MAX_CELLS:
        raise ValueError(f"The 'counts' parameter of {func} must have at most {MAX_CELLS} "
                         f"cells. Got {_v.describe(src)} instead.")
    data, integer = _v.check_data(src, "counts", func)
    params = tree_params(data.shape, integer, epsilon, branching, func, noise=noise,
                         delta=delta, rho=rho, accountant=accountant)
    plan = tree_plan(data, params, func)
    cost = params.cost
    rel = Release(func, accountant, cost.epsilon, cost.delta, rng, threads, plan.nodes.size,
                  rho=cost.rho)
    return noisy_tree(plan, rel.charge(), rel.threads)


class TreeParams:
    """What a tree release needs to know before it sees a count: the trees' shapes, the
    noise (``noise``, with its ``scale``, grid ``g`` and kernel parameter ``t``), the
    per-node variance, and the release's cost ``cost`` (a :class:`dpfast.noise.Measure`:
    pass ``cost.epsilon``, ``cost.delta`` and ``rho=cost.rho`` to the release). Public."""

    def __init__(self, shape: tuple[int, ...], integer: bool, cost: Measure,
                 trees: tuple[_Tree1D, ...]):
        noise = cost.noise
        self.shape, self.integer, self.cost = shape, integer, cost
        self.epsilon, self.delta, self.rho = cost.epsilon, cost.delta, cost.rho
        self.trees, self.noise = trees, noise
        self.scale, self.g = noise.scale, noise.g
        self.t = noise.t if isinstance(noise, Laplace) else noise.sigma / noise.g
        self.node_variance = noise.variance


def tree_params(shape: tuple[int, ...], integer: bool, epsilon: float | None,
                branching: object, func: str, *, noise: str = "laplace",
                delta: float | None = None, rho: float | None = None,
                accountant: object = None) -> TreeParams:
    """The checks of a tree release that read no count: the trees' shapes, then the noise
    and the cost from the privacy keywords (:func:`dpfast.noise.measure` over the l1
    sensitivity ``h`` and the l2 sensitivity ``sqrt(h)``, ``h`` the number of measured
    nodes counting each record: the product of the axes' heights)."""
    gaussian = isinstance(noise, str) and noise == "gaussian"
    shapes = [tree_shape(n, b, gaussian) for n, b in
              zip(shape, _check_branching(branching, len(shape), func))]
    per_record = math.prod(h for _, h in shapes)            # nodes counting each record
    if isinstance(noise, str) and noise == "laplace" and epsilon is not None and rho is None:
        # Laplace's scale range, checked (and worded) as it always was.
        _v.check_mechanism_scale(float(per_record), _v.check_epsilon(epsilon, func), func,
                                 high=MAX_DISCRETE_SCALE if integer else _v.MAX_SCALE)
    # l2 = sqrt(h) (measure raises a square root that rounded below h: the charged rho
    # covers h / (2 sigma**2) exactly).
    l2 = math.sqrt(per_record)
    # Real counts: a record changes the per_record nodes on its paths, each rounded to the
    # noise's grid.
    cost = measure(func, noise, epsilon, delta, rho, l1=float(per_record), l2=l2,
                   integer=integer, zcdp_accountant=composes_in_zcdp(accountant),
                   cells=per_record)
    if isinstance(cost.noise, Gaussian) and integer:
        check_sigma(cost.noise.sigma, func)
    trees = tuple(_Tree1D(n, b, h, cost.noise.variance) for n, (b, h) in zip(shape, shapes))
    return TreeParams(tuple(shape), integer, cost, trees)


def check_sigma(sigma: float, func: str) -> None:
    """A discrete Gaussian sigma the sampler draws exactly (at most ``MAX_DISCRETE_SIGMA``);
    the error names the privacy parameters that gave it."""
    if sigma > MAX_DISCRETE_SIGMA:
        raise ValueError(f"The 'rho' (or 'epsilon' and 'delta') parameters of {func} must "
                         f"give a discrete Gaussian sigma of at most {MAX_DISCRETE_SIGMA:g}. "
                         f"They give sigma {sigma:g}: use a larger rho (or epsilon).")


class TreePlan:
    """A checked tree release before its noise: every measured node's exact count in one
    float64 array, and where each level lies in it (offset and shape). No key, no budget:
    it may travel (a Dask task computes it where the counts are)."""

    def __init__(self, params: TreeParams, nodes: NDArray[np.float64],
                 layout: list[tuple[int, tuple[int, ...]]]):
        self.params, self.nodes, self.layout = params, nodes, layout

    def levels(self) -> list[NDArray[np.float64]]:
        """A view of each level in ``nodes``."""
        return [self.nodes[o:o + math.prod(s)].reshape(s) for o, s in self.layout]


def tree_plan(data: NDArray[Any], params: TreeParams, func: str) -> TreePlan:
    """The checks that read the counts (checked finite, of ``params.shape``), then every
    measured node's count."""
    # Node sums must stay within 2**52 steps of the noise grid (the integers for integer
    # counts): exact sums, and exact grid arithmetic in the kernel.
    limit = 2.0**52 * params.g
    lo, hi = _v.value_range(data)
    if max(abs(lo), abs(hi)) * data.size > limit and float(np.abs(data).sum()) > limit:
        raise ValueError(f"The 'counts' parameter of {func} must sum (in absolute value) to "
                         f"at most {limit:g} at this epsilon. Got {_v.describe(data)} "
                         "whose values sum to more (they are not shown).")
    nodes, levels = _nodes(data, params.trees)
    layout, offset = [], 0
    for lv in levels:
        layout.append((offset, lv.shape))
        offset += lv.size
    return TreePlan(params, nodes, layout)


def noisy_tree(plan: TreePlan, key: _native.Key, threads: int) -> TreeRelease:
    """The release of a planned tree under ``key`` (the release's, handed out by its charge):
    every measured node's noise in one kernel call (integer counts get discrete Laplace
    noise: the grid kernel on the grid of the integers, step 1; or discrete Gaussian noise,
    drawn into int64 cells and added), then the least-squares estimate (post-processing)."""
    p = plan.params
    levels = plan.levels()
    if isinstance(p.noise, Gaussian) and p.integer:
        # The discrete Gaussian kernel writes integer cells: draw the noise alone there
        # (the same cells, cell-addressed) and add it to the node counts, exact below 2**52.
        # (int64 today; an int32 draw would do once the kernel takes it.)
        plan.nodes += p.noise.fill(key, threads, np.empty(plan.nodes.size, np.int64))
    else:
        p.noise.fill(key, threads, plan.nodes, plan.nodes)
    trees, shape = p.trees, p.shape
    # Post-processing: least squares along each axis in turn (a Kronecker product of trees).
    if len(trees) == 1:
        est = trees[0].consistent(levels)
        n = shape[0]
        return TreeRelease(est if est.size == n else est[:n].copy(), trees, p.epsilon,
                           p.node_variance, delta=p.delta, rho=p.rho, noise=_family(p.noise), scale=p.scale)
    t0, t1 = trees
    # levels[i0 * t1.h + i1]: level i0 of axis 0 by level i1 of axis 1.
    along1 = [t1.consistent([levels[i0 * t1.h + i1].T for i1 in range(t1.h)]).T
              for i0 in range(t0.h)]
    est = t0.consistent(along1)
    return TreeRelease(est[:shape[0], :shape[1]].copy(), trees, p.epsilon, p.node_variance,
                       delta=p.delta, rho=p.rho, noise=_family(p.noise), scale=p.scale)


def _family(noise: Laplace | Gaussian) -> str:
    return "gaussian" if isinstance(noise, Gaussian) else "laplace"


def _nodes(data: NDArray[Any], trees: tuple[_Tree1D, ...],
           ) -> tuple[NDArray[np.float64], list[NDArray[np.float64]]]:
    """All measured node counts in one float64 array, and a view of each level in it."""
    if len(trees) == 1:
        return trees[0].nodes(data)
    blocks = _node_blocks(data, trees)
    nodes = np.concatenate([blk.ravel() for blk in blocks]).astype(np.float64)
    offsets = np.cumsum([0] + [blk.size for blk in blocks])
    return nodes, [nodes[offsets[i]:offsets[i + 1]].reshape(blk.shape)
                   for i, blk in enumerate(blocks)]


def _node_blocks(data: NDArray[Any], trees: tuple[_Tree1D, ...]) -> list[NDArray[Any]]:
    """The measured node counts: the levels of the tree (1-D), or every pair of levels of
    the two axes' trees (2-D, level of axis 0 major)."""
    if len(trees) == 1:
        return trees[0].node_counts(data)
    t0, t1 = trees
    out: list[NDArray[Any]] = []
    for level0 in t0.node_counts(data):
        out.extend(lv.T for lv in t1.node_counts(level0.T))
    return [np.ascontiguousarray(blk) for blk in out]
