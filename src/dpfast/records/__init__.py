"""Statistics of records: bounded sums, means, variances and quantiles of a column.

Each function takes the values, public clamping ``bounds=(lo, hi)`` (values outside are
clamped; bounds computed from the data are refused, as histogram edges are: they are
published with the result), and the privacy keywords of the noise layer. Optionally a
``privacy_unit`` column names the person each row belongs to: each person then keeps at most
``max_rows`` of their rows, chosen uniformly at random under the release's key (never "the
first rows"), and every sensitivity is that of a person. Without one, each row is a person.

How a release is made (:class:`Statistic`):

1. check -- values (NaN or infinity refused, by position), bounds, privacy unit, keywords;
   the budget is split between the statistic's parts (:func:`split`) and the whole is asked
   of the accountant. Nothing is charged or drawn before everything is checked.
2. charge -- one charge for the whole statistic; its key stream decides the rows kept
   (:func:`bound`) and then draws each part's noise.
3. draw -- every sum is exact: values are clamped and rounded to whole multiples of a power
   of two (the noise's grid) *before* they are added up, as integers, so a floating-point
   sum's rounding can neither raise a person's influence past the sensitivity nor carry
   information the noise does not cover; the noise kernels then add noise on the same grid.

The mean and variance are post-processing of noisy counts and noisy sums of values centred
on the middle of the bounds (a centred sum has half the sensitivity of a raw one). Quantiles
use the exponential mechanism over the gaps between sorted values (Smith 2011), on the
integers of a fine grid, several at once by the recursive algorithm of Kaplan, Schnapp and
Stemmer (2022): the middle quantile first, then each half of the data for the quantiles on
its side, so each level of the recursion costs its share once (the halves are disjoint).

The package's modules, one concern each: :mod:`~dpfast.records.inputs` (the checks of
values, bounds, person ids, key columns and maxima), :mod:`~dpfast.records.parts` (the budget
split across a release's parts), :mod:`~dpfast.records.bounding` (contribution bounding),
:mod:`~dpfast.records.sums` (exact sums on a grid and their noise),
:mod:`~dpfast.records.moments` (sum, mean, variance, std),
:mod:`~dpfast.records.order_statistics` (quantiles, median) and
:mod:`~dpfast.records.error` (:func:`accuracy`). Every name is importable from the package.
"""
from __future__ import annotations

from .bounding import BOUND_ROWS, bound, kept
from .error import STATISTICS, accuracy
from .inputs import (Column, as_ids, check_bounds, check_keys_column,
                     check_max, check_squares, check_values, column, person_ids)
from .moments import mean, noisy_moments, std, sum, variance
from .order_statistics import (METHODS, levels, median, quantile_grid,
                               quantiles)
from .parts import Part, Plan, down, split
from .sums import (EXACT, exact_sums, noisy_count, noisy_sum, units,
                   value_grid)

__all__ = ["sum", "mean", "variance", "std", "quantiles", "median", "accuracy", "Part", "split",
           "check_bounds", "check_values", "person_ids", "bound"]

# Also imported from the package by the group-by, the tables, the pieces and the tests.
__all__ += ["Plan", "Column", "column", "as_ids", "check_keys_column",
            "check_max", "check_squares", "down", "BOUND_ROWS", "kept",
            "EXACT", "units", "value_grid", "exact_sums", "noisy_sum",
            "noisy_count", "noisy_moments", "METHODS",
            "quantile_grid", "levels", "STATISTICS"]
