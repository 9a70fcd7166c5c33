"""Linear-query releases: error and time side by side, same run, same epsilon.

- All range queries of a 1-D histogram (n = 2^10, 2^16, 2^20 by default): the tree mechanism
  against independent Laplace noise on every cell and, when installed, OpenDP's consistent
  b-ary tree (its own branching factor, ``choose_branching_factor``). Error is the root mean
  squared error over all n(n+1)/2 ranges, measured over ``runs`` releases (exactly, in O(n)
  per release: see :func:`all_range_mse`); for dpfast the exact expectation is shown too.
- A tree release of 2^24 leaves on one thread (noise on every node and the consistent
  estimate), in ns per leaf.
- A census hierarchy of 10^7 leaf units (nation, 50 states, 10^5 counties, 10^7 blocks).
- All 2-way and 3-way marginals of the bundled Adult data: dp.marginals (independent and
  consistent) and dp.mwem against, when installed, smartnoise-synth's MWEM, MST and AIM
  (``pip install "dpfast[compare]"``), each fitted and sampled in a child process that is
  killed after ``PEER_TIMEOUT`` seconds.

Every case uses the same data and epsilon for all methods.

Modules: :mod:`~dpfast.benchmarks.linear.ranges` (range queries, tree and hierarchy speed),
:mod:`~dpfast.benchmarks.linear.marginals` (Adult's marginal tables beside smartnoise-synth),
:mod:`~dpfast.benchmarks.linear.models` (graphical models beside private-pgm),
:mod:`~dpfast.benchmarks.linear.report` (the whole run and its Markdown).
"""
from __future__ import annotations

from ..adult import adult_table  # (read from here by the Gaussian marginals' tests)
from .marginals import PEER_TIMEOUT, SMARTNOISE, marginal_tables, smartnoise
from .models import GRAPHICAL, graphical_tables, wide_table
from .ranges import all_range_mse, hierarchy_speed, ranges, tree_speed
from .report import graphical_markdown, run, to_markdown, wide_markdown

__all__ = ["all_range_mse", "ranges", "tree_speed", "hierarchy_speed", "run", "to_markdown",
           "SMARTNOISE", "PEER_TIMEOUT", "smartnoise", "marginal_tables", "GRAPHICAL",
           "graphical_tables", "wide_table", "graphical_markdown", "wide_markdown"]
