"""The structure of a graphical model: the measurements it is fitted to, the junction tree of
the measured attribute sets, and the model's size in cells."""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray

__all__ = ["Measurement", "JunctionTree", "junction_tree", "model_cells", "count_cells",
           "MAX_CLIQUE_CELLS", "Attrs", "Table"]

#: The largest clique of the junction tree, in cells (2**24 float64 cells: 128 MiB per array,
#: a few arrays per clique during the fit); a larger one is refused with its size.
MAX_CLIQUE_CELLS = 1 << 24

#: A set of attributes (sorted attribute indices).
Attrs = tuple[int, ...]
#: A dense table of float64 cells, one axis per attribute.
Table = NDArray[np.float64]


class Measurement(NamedTuple):
    """A noisy marginal: ``values`` over the attributes ``clique`` (in that order: one axis
    each), with noise of standard deviation ``sigma`` on every cell."""

    clique: tuple[int, ...]
    values: NDArray[np.float64]
    sigma: float


class JunctionTree(NamedTuple):
    """Cliques (sorted attribute tuples) and the tree's edges as (parent, child), listed from
    the root (clique 0) down: every clique after the first has one parent listed before it."""

    cliques: tuple[tuple[int, ...], ...]
    edges: tuple[tuple[int, int], ...]


def count_cells(shape: Sequence[int], clique: Sequence[int] | set[int] | frozenset[int]) -> int:
    """The number of cells of a table over ``clique``, whose attributes have sizes
    ``shape``."""
    return math.prod(shape[a] for a in clique)


def junction_tree(shape: Sequence[int], cliques: Sequence[Sequence[int]],
                  limit: int = MAX_CLIQUE_CELLS) -> JunctionTree:
    """A junction tree covering every attribute and containing each given clique: the
    graph joining the attributes of each clique, triangulated by eliminating at each step
    the attribute whose elimination adds the fewest cells of fill (ties: the smallest
    clique), its maximal cliques joined by a maximum-weight spanning tree on the
    separators' sizes. A clique past ``limit`` cells is refused (ValueError)."""
    d = len(shape)
    nbrs: list[set[int]] = [set() for _ in range(d)]
    for c in cliques:
        for a in c:
            nbrs[a].update(b for b in c if b != a)
    left = set(range(d))
    found: list[frozenset[int]] = []
    while left:
        def cost(a: int) -> tuple[int, int]:
            group = nbrs[a] & left
            fill = sum(1 for u in group for v in group if u < v and v not in nbrs[u])
            return fill, count_cells(shape, group | {a})
        a = min(sorted(left), key=cost)
        group = (nbrs[a] & left) | {a}
        for u in group:
            nbrs[u].update(group - {u})
        found.append(frozenset(group))
        left.remove(a)
    maximal = [c for c in found if not any(c < o for o in found)]
    unique = sorted({tuple(sorted(c)) for c in maximal}, key=lambda c: (-len(c), c))
    for c in unique:
        if count_cells(shape, c) > limit:
            raise ValueError(f"The measured attributes need a clique of {count_cells(shape, c):,} "
                             f"cells (attributes {c}), more than {limit:,} (the limit: "
                             f"{MAX_CLIQUE_CELLS:,} cells, 128 MiB a table); measure "
                             "smaller or fewer overlapping sets.")
    # Prim's algorithm from clique 0, the heaviest separator first (ties: lowest index).
    inside = {0}
    edges: list[tuple[int, int]] = []
    while len(inside) < len(unique):
        _, neg, new = max((len(set(unique[p]) & set(unique[j])), -p, j)
                          for p in inside for j in range(len(unique)) if j not in inside)
        edges.append((-neg, new))
        inside.add(new)
    return JunctionTree(tuple(unique), tuple(edges))


def model_cells(shape: Sequence[int], cliques: Sequence[Sequence[int]]) -> int:
    """The cells of the junction tree of ``cliques`` (its size as a model), or a number past
    any limit when a clique is past :data:`MAX_CLIQUE_CELLS`."""
    try:
        tree = junction_tree(shape, cliques)
    except ValueError:
        return 1 << 62
    return sum(count_cells(shape, c) for c in tree.cliques)
