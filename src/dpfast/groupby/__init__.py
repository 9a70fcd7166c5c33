"""Grouped statistics of records: per-group counts, sums, means, variances, standard
deviations and quantiles, each person's contribution bounded, keys public or selected
privately.

>>> import dpfast as dp
>>> out = dp.group_by(frame, "dept", privacy_unit="user_id", max_groups=1, max_rows=5).agg(
...     n="count", total=("salary", "sum"), avg=("salary", "mean"),
...     bounds={"salary": (0, 300_000)}, epsilon=1.0, delta=1e-6)   # doctest: +SKIP

How a release is made (one charge for everything it publishes):

1. check -- the columns (a pandas or polars DataFrame, a pyarrow Table, or a dict of
   columns), the keys, bounds, contribution bounds and privacy keywords; the plan
   (:meth:`GroupBy.plan`: what each measurement costs and its noise) is made here.
2. charge -- the whole (epsilon, delta) or rho, once; its key stream then decides which rows
   each person keeps (:func:`dpfast.records.bound`: at most ``max_groups`` groups and
   ``max_rows`` rows in each, uniformly at random, in compiled code), selects the keys
   (private keys) and draws the noise.
3. draw -- per group, a noisy count of rows and noisy sums of the values centred on the
   middle of their bounds (and of their squares, for a variance), exact on the noise's grid
   (:func:`dpfast.records.units`); sums, means, variances and standard deviations are
   post-processing of these. Noise of group ``k`` is addressed by ``k``'s place among the
   keys in sorted order, so a release is the same for any thread count.

Private keys (``keys=None``): a key is released only if a random draw passes the optimal
partition-selection rule of Desfontaines, Voss, Gipson and Mandayam (2022) on the number of
people who kept rows in it -- the largest release probability ``pi(n)`` that is
(epsilon, delta)-DP for each key a person touches, a person touching at most ``max_groups``
keys (each key gets epsilon / max_groups and delta / max_groups). A key no record has is never
released. Public keys (``keys=[...]``): every key appears, zeros included; rows of other
keys are dropped before bounding.

The package's modules, one concern each: :mod:`~dpfast.groupby.grouping` (the grouping, its
checks, plan and release), :mod:`~dpfast.groupby.specs` (the statistics asked and the plan),
:mod:`~dpfast.groupby.selection` (the key selection's rules),
:mod:`~dpfast.groupby.statistics` (the exact statistics per key, which pieces of a table add
up) and :mod:`~dpfast.groupby.draw` (the draw from them). Every name is re-exported here.
"""
from .draw import finish as finish
from .grouping import GroupBy, group_by
from .selection import RULES as RULES
from .selection import WEIGHT_BITS as WEIGHT_BITS
from .selection import GaussianSelection as GaussianSelection
from .selection import gaussian_selection as gaussian_selection
from .selection import pair_weights as pair_weights
from .selection import per_key as per_key
from .selection import selection_probabilities
from .selection import selection_threshold as selection_threshold
from .specs import STATISTICS
from .specs import GroupPlan as GroupPlan
from .specs import Spec as Spec
from .specs import aggregation_specs as aggregation_specs
from .statistics import KEPT_PAIR as KEPT_PAIR
from .statistics import STATISTICS_BLOCK as STATISTICS_BLOCK
from .statistics import Grid as Grid
from .statistics import KeyStatistics as KeyStatistics
from .statistics import add_statistics as add_statistics
from .statistics import grids as grids
from .statistics import key_statistics as key_statistics
from .statistics import quantile_bounds as quantile_bounds

__all__ = ["group_by", "GroupBy", "selection_probabilities", "STATISTICS"]
