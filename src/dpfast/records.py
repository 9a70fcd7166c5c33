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
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from . import _native, noise, zcdp
from . import validation as _v
from ._release import Keys, Release
from .accounting import composes_in_zcdp, resolve_accountant

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from .accounting import AccountantLike
    from .rng import RngLike

__all__ = ["sum", "mean", "variance", "std", "quantiles", "median", "accuracy", "Part", "split",
           "check_bounds", "check_values", "person_ids", "bound"]

_builtin_sum = sum

#: The largest magnitude of an exact integer sum: sums of values in grid units stay below it.
EXACT = 2.0**52


# -- arguments ------------------------------------------------------------------------------

def _leak(func: str, detail: str) -> ValueError:
    return ValueError(
        f"{func} refuses data-dependent bounds: {detail} The bounds set the sensitivity and "
        "are public; bounds computed from the data (its minimum, maximum or quantiles) reveal "
        "it. Pass bounds=(low, high) chosen without looking at the data.")


def check_bounds(bounds: object, func: str, name: str = "bounds") -> tuple[float, float]:
    """Public clamping bounds ``(lo, hi)``: two finite reals with lo < hi."""
    if bounds is None:
        raise _leak(func, f"{name}=None would use the data's minimum and maximum.")
    if isinstance(bounds, str):
        raise _leak(func, f"{name}={bounds!r} chooses bounds from the data.")
    if (not isinstance(bounds, Sequence) and not isinstance(bounds, np.ndarray)) \
            or len(bounds) != 2:
        raise TypeError(f"The {name!r} parameter of {func} must be a pair (low, high) of "
                        f"real numbers. Got {_v.describe(bounds)} instead.")
    lo = _v.check_real(bounds[0], f"{name}[0]", func, low=-math.inf)
    hi = _v.check_real(bounds[1], f"{name}[1]", func, low=-math.inf)
    if not lo < hi:
        raise ValueError(f"The {name!r} parameter of {func} must have low < high. Got "
                         f"{bounds!r} instead.")
    if not math.isfinite(hi - lo) or max(abs(lo), abs(hi)) >= 2.0**960 or \
            (hi - lo) / 2.0 < 2.0**-1000:
        raise ValueError(f"The {name!r} parameter of {func} must be an interval of normal "
                         "floats, neither too wide (|low|, |high| below 2**960) nor too narrow "
                         f"(high - low at least 2**-999), so that sums and noise stay "
                         f"finite floats. Got {bounds!r} instead.")
    return lo, hi


def check_squares(lo: float, hi: float, func: str, name: str = "bounds") -> None:
    """A variance's bounds: the square of their half-width must be a normal float too."""
    half = (hi - lo) / 2.0
    if not (2.0**-500 <= half < 2.0**480):       # its square a normal float, with room
        raise ValueError(f"The {name!r} parameter of {func}: a variance needs the square of "
                         "the bounds' half-width to be a normal float (between 2**-1000 and "
                         f"2**960). Got {(lo, hi)!r} instead.")


def check_values(values: object, func: str, name: str = "values") -> NDArray[np.float64]:
    """A 1-D column of real numbers as float64 (NaN or infinity refused, by position)."""
    arr, _ = _v.check_data(values, name, func)
    if arr.ndim != 1:
        raise ValueError(f"The {name!r} parameter of {func} must be one-dimensional. Got "
                         f"{_v.describe(values)} instead.")
    return np.asarray(arr, dtype=np.float64)


def person_ids(unit: object, n: int, func: str,
               name: str = "privacy_unit") -> NDArray[np.int64]:
    """The privacy unit of each of ``n`` rows as int64 ids: integers as they are, anything
    else (strings, ...) by its code among the distinct values. Nulls and mixed types are
    refused."""
    arr = as_ids(unit, name, func)
    if arr.ndim != 1 or arr.shape[0] != n:
        raise ValueError(f"The {name!r} parameter of {func} must be one id per row ({n} "
                         f"rows). Got {_v.describe(unit)} instead.")
    if arr.dtype.kind in "iu":
        if arr.dtype.kind == "u" and arr.size and arr.max() > np.iinfo(np.int64).max:
            return _codes(arr, name, func)
        return np.ascontiguousarray(arr, dtype=np.int64)
    if arr.dtype.kind == "b":
        return np.ascontiguousarray(arr, dtype=np.int64)
    return _codes(arr, name, func)


def as_ids(values: object, name: str, func: str) -> NDArray[Any]:
    """A column of ids or keys as a numpy array. A list or tuple is read as objects first
    and refused if its values are of mixed types: numpy would read ``[1, "1"]`` as two
    equal strings, merging two people (or keys)."""
    if isinstance(values, (list, tuple)):
        objects = np.empty(len(values), dtype=object)
        objects[:] = values
        check_keys_column(objects, name, func)
        # numpy would read large ints as floats and drop strings' trailing NULs: ints are
        # kept in the int type that holds them all, anything else as objects.
        if objects.size and all(isinstance(v, (int, np.integer)) and
                                not isinstance(v, (bool, np.bool_)) for v in objects):
            ints = [int(v) for v in objects]
            if -2**63 <= min(ints) and max(ints) < 2**63:
                return np.array(ints, dtype=np.int64)
            if min(ints) >= 0 and max(ints) < 2**64:
                return np.array(ints, dtype=np.uint64)
        return objects
    return _v.as_array(values, name, func, categories=True)


def _codes(arr: NDArray[Any], name: str, func: str) -> NDArray[np.int64]:
    """Codes of the distinct values of a column (nulls and mixed types refused)."""
    check_keys_column(arr, name, func)
    try:
        import pandas as pd
    except ImportError:                                         # pragma: no cover
        _, inverse = np.unique(arr, return_inverse=True)
        return inverse.astype(np.int64)
    codes, _ = pd.factorize(arr, use_na_sentinel=True)
    return np.ascontiguousarray(codes, dtype=np.int64)


def check_keys_column(arr: NDArray[Any], name: str, func: str) -> None:
    """Refuse nulls (None, NaN) and values of mixed types in a column of ids or keys."""
    if arr.dtype.kind == "f":
        if not np.isfinite(arr).all():
            raise ValueError(f"The {name!r} parameter of {func} must not contain nulls or "
                             f"infinities. Got {_v.entry_at(~np.isfinite(arr), 'is null')} "
                             "instead.")
        return
    if arr.dtype.kind in "mM":
        if np.isnat(arr).any():
            raise ValueError(f"The {name!r} parameter of {func} must not contain nulls. Got "
                             f"{_v.entry_at(np.isnat(arr), 'is null (NaT)')} instead.")
        return
    if arr.dtype.kind != "O":
        return
    try:
        import pandas as pd
    except ImportError:                                         # pragma: no cover
        nulls = np.array([v is None or (isinstance(v, float) and math.isnan(v))
                          for v in arr], dtype=bool)
        kinds = {type(v) for v in arr}
        mixed = len(kinds) > 1
    else:
        nulls = np.asarray(pd.isna(arr), dtype=bool)            # None, NaN, pd.NA, NaT
        mixed = pd.api.types.infer_dtype(arr, skipna=True).startswith("mixed")
    if nulls.any():
        raise ValueError(f"The {name!r} parameter of {func} must not contain nulls. Got "
                         f"{_v.entry_at(nulls, 'is null')} instead.")
    if mixed:
        raise TypeError(f"The {name!r} parameter of {func} must hold values of one type "
                        "(all strings, or all integers, ...). Got values of mixed types.")


def check_max(value: object, name: str, func: str) -> int:
    """A contribution bound: an int >= 1."""
    return _v.check_positive_int(value, name, func, high=2**31 - 1)


# -- the budget -----------------------------------------------------------------------------

class Part(NamedTuple):
    """One noisy measurement of a statistic: its l1 and l2 sensitivities (a person's
    influence on it), whether its cells are integers, and its share of the budget."""

    name: str
    l1: float
    l2: float
    integer: bool
    weight: float = 1.0
    #: "noise" (a noisy measurement) or "selection" (an exponential-mechanism draw, paid
    #: in pure epsilon: its share, or sqrt(8 rho) of a rho share, its zCDP cost being
    #: epsilon**2 / 8).
    kind: str = "noise"


class Plan(NamedTuple):
    """A statistic's measurements and the whole cost: ``measures[i]`` is the noise of
    ``parts[i]`` (the epsilon of its exponential mechanism, for a selection part);
    (``epsilon``, ``delta``) and ``rho`` are charged once for all of them."""

    parts: tuple[Part, ...]
    measures: tuple[noise.Measure | float, ...]
    epsilon: float | None
    delta: float
    rho: float | None

    def noisy(self) -> list[noise.Measure]:
        """The measures of the noise parts, in order."""
        return [m for m in self.measures if isinstance(m, noise.Measure)]

    def selections(self) -> list[float]:
        """The epsilons of the selection parts, in order."""
        return [m for m in self.measures if not isinstance(m, noise.Measure)]

    def describe(self) -> list[dict[str, object]]:
        """What each measurement costs and its noise's standard deviation."""
        rows: list[dict[str, object]] = []
        for p, m in zip(self.parts, self.measures):
            if isinstance(m, noise.Measure):
                rows.append({"measurement": p.name, "noise": type(m.noise).__name__.lower(),
                             "epsilon": m.epsilon, "rho": m.rho,
                             "std": math.sqrt(m.noise.variance)})
            else:
                rows.append({"measurement": p.name, "noise": "exponential mechanism",
                             "epsilon": m, "rho": m * m / 8.0})
        return rows


def _down(x: float) -> float:
    return math.nextafter(x, 0.0)


def split(func: str, noise_name: object, epsilon: object, delta: object, rho: object,
          parts: Sequence[Part], accountant: AccountantLike | None = None) -> Plan:
    """The noise of each part and the whole cost, from the release's privacy keywords.

    Laplace noise splits epsilon between the parts in proportion to their weights; Gaussian
    noise splits rho (given, or the largest rho whose tight conversion fits (epsilon, delta),
    which is what is charged then). A selection part gets an epsilon: its share of epsilon,
    or ``sqrt(8 r)`` of its share ``r`` of rho."""
    try:
        plan = _split(func, noise_name, epsilon, delta, rho, parts, accountant)
    except (OverflowError, ZeroDivisionError):
        raise ValueError(f"{func}: the privacy parameters (epsilon, delta, rho) and the "
                         "bounds give noise too large or too small to represent as floats. "
                         f"Got epsilon={epsilon!r}, delta={delta!r}, rho={rho!r}.") from None
    for p, m in zip(plan.parts, plan.measures):
        if isinstance(m, noise.Measure) and p.integer:
            _check_discrete(func, p, m, epsilon, rho)
    return plan


def _check_discrete(func: str, part: Part, m: noise.Measure, epsilon: object,
                    rho: object) -> None:
    """Refuse integer noise wider than its sampler is exact for (as every counting release
    does): discrete Laplace of scale past MAX_DISCRETE_SCALE, discrete Gaussian of sigma past
    MAX_DISCRETE_SIGMA. A count's scale is max_groups * max_rows over its epsilon."""
    big = (m.noise.scale > noise.MAX_DISCRETE_SCALE if isinstance(m.noise, noise.Laplace)
           else m.noise.sigma > noise.MAX_DISCRETE_SIGMA)
    if big:
        raise ValueError(f"{func}: the {part.name}'s noise would be wider than the discrete "
                         "samplers are exact for (scale 2**40, sigma 2**39): raise epsilon "
                         f"or rho, or lower max_groups and max_rows. Got epsilon={epsilon!r}, "
                         f"rho={rho!r} for a sensitivity of {part.l1:g}.")


def _split(func: str, noise_name: object, epsilon: object, delta: object, rho: object,
           parts: Sequence[Part], accountant: AccountantLike | None) -> Plan:
    # The keywords checked once, with the noise layer's own messages.
    whole = noise.measure(func, noise_name, epsilon, delta, rho, l1=1.0, l2=1.0,
                          integer=True, zcdp_accountant=composes_in_zcdp(
                              resolve_accountant(accountant, func)))
    total = _builtin_sum(p.weight for p in parts)
    measures: list[noise.Measure | float] = []
    if noise_name == "laplace":
        assert whole.epsilon is not None
        for p in parts:
            eps = _down(whole.epsilon * p.weight / total)
            measures.append(eps if p.kind == "selection" else
                            noise.measure(func, "laplace", eps, None, None, l1=p.l1,
                                          l2=p.l2, integer=p.integer))
        return Plan(tuple(parts), tuple(measures), whole.epsilon, 0.0, None)
    if whole.epsilon is None:                    # rho alone
        assert whole.rho is not None
        budget_rho = whole.rho
    else:
        budget_rho = _down(zcdp.rho_from_epsilon_delta(whole.epsilon, whole.delta))
    for p in parts:
        r = _down(budget_rho * p.weight / total)
        measures.append(_down(math.sqrt(8.0 * r)) if p.kind == "selection" else
                        noise.measure(func, "gaussian", None, None, r, l1=p.l1, l2=p.l2,
                                      integer=p.integer))
    return Plan(tuple(parts), tuple(measures), whole.epsilon, whole.delta, budget_rho)


# -- bounding -------------------------------------------------------------------------------

#: Rows bounded in one call of the kernel (its scratch is 32 bytes a row); a larger table is
#: bounded in passes, each over the people of one class of a hash of their id: every person's
#: rows in one pass, so the same rows are kept as in one call, with a pass's scratch.
BOUND_ROWS = 1 << 24
#: Ids hashed at a time by :func:`person_class` (its temporaries stay a block's).
_HASH_BLOCK = 1 << 22


def person_class(person: NDArray[np.int64], classes: int) -> NDArray[np.uint16]:
    """A class in [0, classes) (at most 2**16) of each person's id: splitmix64's finalizer
    mod classes, computed a block at a time (its temporaries stay a block's)."""
    out = np.empty(person.size, dtype=np.uint16)
    for a in range(0, person.size, _HASH_BLOCK):
        x = person[a:a + _HASH_BLOCK].view(np.uint64)
        with np.errstate(over="ignore"):
            x = (x ^ (x >> np.uint64(30))) * np.uint64(0xbf58476d1ce4e5b9)
            x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94d049bb133111eb)
            x ^= x >> np.uint64(31)
        out[a:a + _HASH_BLOCK] = x % np.uint64(classes)
    return out


def bound(keys: Keys, threads: int, person: NDArray[np.int64],
          group: NDArray[np.int64] | None, max_groups: int,
          max_rows: int) -> NDArray[np.uint8]:
    """Flags of the rows kept when each person keeps at most ``max_groups`` groups and
    ``max_rows`` rows in each, chosen uniformly at random: independent uniform priorities
    under the release's next two keys, one per row, addressed by the row's position (so
    the same key and data give the same rows for any thread count), the lowest kept. The
    kernel draws the priorities as it reads the rows; none is held. Tables of more than
    :data:`BOUND_ROWS` rows go in passes (the same flags)."""
    n = person.shape[0]
    row_key, pair_key = keys.next(), keys.next()
    if n <= BOUND_ROWS:
        return noise.bounded_rows(row_key, pair_key, threads, person, group, None, n,
                                  max_groups, max_rows)
    passes = -(-n // BOUND_ROWS)
    cls = person_class(person, passes)
    flags = np.zeros(n, dtype=np.uint8)
    for c in range(passes):
        rows = np.flatnonzero(cls == c)
        flags[rows] = noise.bounded_rows(
            row_key, pair_key, threads, np.ascontiguousarray(person[rows]),
            None if group is None else np.ascontiguousarray(group[rows]),
            rows, n, max_groups, max_rows)
    return flags


# -- exact sums on a grid -------------------------------------------------------------------

#: The largest exact sum, in grid units: a table whose rows could reach it is refused.
EXACT = 2**62


def units(x: NDArray[np.float64], centre: float, half: float, g: float) -> NDArray[np.int64]:
    """``x - centre`` in whole units of ``g`` (a power of two: the grid of the sum's noise),
    rounded, within ``+-floor(half / g)``: each value's contribution is at most ``half`` in
    magnitude. Sums of units are exact integers (:func:`exact_sums`)."""
    k = math.floor(half / g)
    u = np.rint((x - centre) / g)
    np.clip(u, -k, k, out=u)
    return u.astype(np.int64)


#: A value is at most 2**UNIT_BITS units of its sum's grid.
UNIT_BITS = 30


def value_grid(m: noise.Measure, half: float, rows: int, func: str) -> float:
    """The grid of a sum: its noise's grid, or the power of two that keeps a value within
    ``2**UNIT_BITS`` units if that is coarser -- from the budget and the bounds only, never
    the data. A table of ``rows`` rows whose sum could pass :data:`EXACT` units is refused
    (more than 2**32 rows; the refusal reads the table's length)."""
    g = max(m.noise.g, 2.0 ** (math.ceil(math.log2(half)) - UNIT_BITS))
    if rows * math.floor(half / g) >= EXACT:
        raise ValueError(f"{func}: {rows:,} rows at this budget and these bounds could pass "
                         f"2**62 units of the sum's grid ({g!r}); split the table.")
    return g


def exact_sums(code: NDArray[np.int64], u: NDArray[np.int64], k: int,
               nkeys: int) -> NDArray[np.int64]:
    """Sums of the integers ``u`` (each in [-k, k], below 2**62 with k) per code, exact in
    int64: ``u + k`` in three parts of 21 bits, each part's sums exact in float64 (below
    2**32 rows a key). numpy's way to the sums :func:`dpfast._native.key_sums` makes in
    one pass (the weighted rule's weights use it; the tests check the kernel against it)."""
    shifted = u + k
    total = np.zeros(nkeys, dtype=np.int64)
    for shift in (42, 21, 0):
        part = (shifted >> shift) & 0x1FFFFF
        total += np.bincount(code, weights=part, minlength=nkeys).astype(np.int64) << shift
    return total - k * np.bincount(code, minlength=nkeys).astype(np.int64)


def _unit_noise(m: noise.Measure, g: float) -> noise.Laplace | noise.Gaussian:
    """The measurement's noise in whole units of the grid ``g`` (a power of two at least
    its own): discrete Laplace of parameter ``scale / g``, or discrete Gaussian of
    ``sigma / g`` -- on integer sums whose sensitivity in units is the measurement's divided
    by ``g`` (exactly: values are clamped to whole units), the same privacy."""
    if isinstance(m.noise, noise.Laplace):
        return noise.Laplace(m.noise.scale / g, True)
    return noise.Gaussian(m.noise.sigma / g, True)


def noisy_sum(m: noise.Measure, key: _native.Key, total_units: NDArray[np.int64],
              g: float) -> NDArray[np.float64]:
    """``(total_units + K) * g``: integer noise ``K`` in units of the grid added to the exact
    integer sums, then scaled (a float's rounding of the released integer is
    post-processing)."""
    out = np.array(total_units, dtype=np.int64)
    _unit_noise(m, g).fill(key, 1, out, out)
    scaled: NDArray[np.float64] = out.astype(np.float64) * g
    return scaled


def noisy_count(m: noise.Measure, key: _native.Key,
                counts: NDArray[np.int64]) -> NDArray[np.int64]:
    out: NDArray[np.int64] = np.array(counts, dtype=np.int64)
    m.noise.fill(key, 1, out, out)
    return out


# -- the ungrouped statistics ---------------------------------------------------------------

class _Column(NamedTuple):
    x: NDArray[np.float64]
    lo: float
    hi: float
    person: NDArray[np.int64] | None
    max_rows: int


def _column(func: str, values: object, bounds: object, privacy_unit: object,
            max_rows: object) -> _Column:
    x = check_values(values, func)
    lo, hi = check_bounds(bounds, func)
    rows = check_max(max_rows, "max_rows", func)
    if privacy_unit is None:
        if rows != 1:
            raise ValueError(f"The 'max_rows' parameter of {func} bounds the rows of each "
                             "person and needs privacy_unit=; without one each row is a "
                             f"person. Got max_rows={max_rows!r} without a privacy_unit.")
        return _Column(x, lo, hi, None, 1)
    check_aligned(values, privacy_unit, "privacy_unit", func)
    return _Column(x, lo, hi, person_ids(privacy_unit, x.size, func), rows)


def check_aligned(values: object, other: object, name: str, func: str) -> None:
    """Refuse two pandas Series whose indexes differ: they are paired by position here, and
    a sorted or filtered Series would pair its values with other people's ids."""
    index, other_index = getattr(values, "index", None), getattr(other, "index", None)
    if index is not None and other_index is not None and hasattr(index, "equals") and \
            not index.equals(other_index):
        raise ValueError(f"The {name!r} parameter of {func} is a pandas Series whose index "
                         "differs from the values': rows are paired by position, not by "
                         "index. Align them first (e.g. reindex, or pass .to_numpy() of "
                         "both in one order).")


def _kept(col: _Column, keys: Keys, threads: int) -> NDArray[np.float64]:
    """The values each person keeps (all of them without a privacy unit), clamped."""
    x = col.x
    if col.person is not None:
        x = x[bound(keys, threads, col.person, None, 1, col.max_rows) != 0]
    return np.clip(x, col.lo, col.hi)


def _moments(func: str, values: object, bounds: object, privacy_unit: object,
             max_rows: object, order: int, noise_name: object, epsilon: object,
             delta: object, rho: object, accountant: AccountantLike | None, rng: RngLike,
             threads: int | None) -> tuple[_Column, NDArray[np.float64]]:
    """Noisy count, centred sum and (order 2) centred sum of squares of a column, each a
    part of the budget: ``[count, sum of (x - mid)]`` or ``[..., sum of (x - mid)**2]``."""
    col = _column(func, values, bounds, privacy_unit, max_rows)
    if order == 2:
        check_squares(col.lo, col.hi, func)
    half = (col.hi - col.lo) / 2.0
    r = float(col.max_rows)
    parts = [Part("count", r, r, True),
             Part("centred sum", r * half, r * half, False)]
    if order == 2:
        parts.append(Part("centred sum of squares", r * half * half, r * half * half, False))
    plan = split(func, noise_name, epsilon, delta, rho, parts, accountant)
    g = value_grid(plan.noisy()[1], half, col.x.size, func)
    g2 = value_grid(plan.noisy()[2], half * half, col.x.size, func) if order == 2 else 0.0
    rel = Release(func, accountant, plan.epsilon, plan.delta, rng, threads, col.x.size,
                  rho=plan.rho)
    keys = rel.charge_keys()
    x = _kept(col, keys, rel.threads)
    mid = (col.lo + col.hi) / 2.0
    out = [float(noisy_count(plan.noisy()[0], keys.next(),
                             np.array([x.size], dtype=np.int64))[0])]
    out.append(_noisy_total(plan.noisy()[1], keys, units(x, mid, half, g), g))
    if order == 2:
        out.append(_noisy_total(plan.noisy()[2], keys,
                                units((x - mid) ** 2, 0.0, half * half, g2), g2))
    return col, np.array(out)


def _noisy_total(m: noise.Measure, keys: Keys, u: NDArray[np.int64], g: float) -> float:
    """The noisy sum of the units ``u`` (exact int64 sum: |u| below 2**62 / rows)."""
    return float(noisy_sum(m, keys.next(), np.array([int(u.sum())], dtype=np.int64), g)[0])


def sum(values: object, *, bounds: object, epsilon: object = None, delta: object = None,
        rho: object = None, noise: object = "laplace", privacy_unit: object = None,
        max_rows: object = 1, accountant: AccountantLike | None = None,
        rng: RngLike = None, threads: int | None = None) -> float:
    """Differentially private sum of a column, each value clamped to ``bounds``.

    Parameters
    ----------
    values : array_like
        One-dimensional real values (NaN or infinity refused).
    bounds : (float, float)
        Public clamping bounds (low < high); bounds from the data are refused.
    epsilon, delta, rho, noise
        Privacy keywords, as for :func:`dpfast.noisy_counts`: Laplace noise (``epsilon``)
        or Gaussian noise (``rho``, or ``epsilon`` and ``delta``).
    privacy_unit : array_like, optional
        The person of each row; each keeps at most ``max_rows`` rows, chosen uniformly at
        random. Without it, each row is a person.
    max_rows : int
        Rows kept per person (with ``privacy_unit``).
    accountant, rng, threads
        As for every release (an int seed for ``rng`` is for tests and research only).

    Returns
    -------
    float
        The noisy sum. Sensitivity ``max_rows * max(|low|, |high|)`` (l1 and l2).

    Raises
    ------
    TypeError
        If ``values`` is not numeric data (booleans, strings, objects, dates, a masked
        array); ``bounds`` is not a pair or holds a non-real; ``epsilon``, ``delta`` or
        ``rho`` is not a real number or ``noise`` not a string; ``max_rows`` is not an int;
        ``privacy_unit`` holds values of mixed types; ``accountant`` is not an accountant;
        ``rng`` is not one of the accepted kinds; or ``threads`` is not an int.
    ValueError
        If ``values`` is not one-dimensional or holds a NaN or infinity (the message gives
        its position, never a value); ``bounds`` is None or a string (bounds from the data),
        has low >= high, or is too wide (beyond 2**960) or too narrow; ``noise`` is neither
        ``"laplace"`` nor ``"gaussian"``; the privacy keywords do not fit the noise
        (Laplace: ``epsilon`` > 0 required, no ``rho``, ``delta`` None or 0; Gaussian:
        ``rho`` > 0 alone, or ``epsilon`` > 0 with ``delta`` in (0, 1)) or give noise too
        large or too small for floats; ``max_rows`` is outside [1, 2**31 - 1], or not 1
        without ``privacy_unit``; ``privacy_unit`` has not one id per row, holds a null, or
        is a pandas Series indexed otherwise than ``values``; the rows could overflow the
        exact sum's grid; ``threads`` is outside [1, 1024]; or ``rng`` is a negative seed.
    BudgetExceededError
        If the accountant cannot afford the release. All of the above are raised before
        anything is charged or drawn.

    Examples
    --------
    The sum of 1,000 ages (true sum 54,652) at epsilon = 0.5, with Laplace noise of scale
    200 (``rng=1``: reproducible, for tests only):

    >>> import numpy as np
    >>> import dpfast as dp
    >>> ages = np.random.default_rng(0).integers(18, 90, size=1000)   # made-up data
    >>> acct = dp.Accountant(epsilon=1.0)
    >>> round(dp.sum(ages, bounds=(0, 100), epsilon=0.5, accountant=acct, rng=1))
    54932
    >>> acct.spent
    (0.5, 0.0)
    """
    func = "sum"
    col = _column(func, values, bounds, privacy_unit, max_rows)
    reach = max(abs(col.lo), abs(col.hi))
    r = float(col.max_rows)
    plan = split(func, noise, epsilon, delta, rho, [Part("sum", r * reach, r * reach, False)],
                 accountant)
    g = value_grid(plan.noisy()[0], reach, col.x.size, func)
    rel = Release(func, accountant, plan.epsilon, plan.delta, rng, threads, col.x.size,
                  rho=plan.rho)
    keys = rel.charge_keys()
    x = _kept(col, keys, rel.threads)
    return _noisy_total(plan.noisy()[0], keys, units(x, 0.0, reach, g), g)


def mean(values: object, *, bounds: object, epsilon: object = None, delta: object = None,
         rho: object = None, noise: object = "laplace", privacy_unit: object = None,
         max_rows: object = 1, accountant: AccountantLike | None = None,
         rng: RngLike = None, threads: int | None = None) -> float:
    """Differentially private mean of a column clamped to ``bounds``: a noisy count and a
    noisy sum of the values centred on the middle of the bounds, the budget split equally
    (the split that minimises the worst-case variance of the ratio, whose two terms have the
    same sensitivity per unit of budget), and ``mid + sum / max(count, 1)`` clamped to the
    bounds.

    Parameters
    ----------
    values : array_like
        One-dimensional real values (NaN or infinity refused).
    bounds : (float, float)
        Public clamping bounds (low < high); bounds from the data are refused.
    epsilon, delta, rho, noise
        Privacy keywords, as for :func:`dpfast.noisy_counts`: Laplace noise (``epsilon``)
        or Gaussian noise (``rho``, or ``epsilon`` and ``delta``).
    privacy_unit : array_like, optional
        The person of each row; each keeps at most ``max_rows`` rows, chosen uniformly at
        random. Without it, each row is a person.
    max_rows : int
        Rows kept per person (with ``privacy_unit``).
    accountant, rng, threads
        As for every release (an int seed for ``rng`` is for tests and research only).

    Returns
    -------
    float
        The noisy mean, within ``bounds``.

    Raises
    ------
    TypeError
        If ``values`` is not numeric data (booleans, strings, objects, dates, a masked
        array); ``bounds`` is not a pair or holds a non-real; ``epsilon``, ``delta`` or
        ``rho`` is not a real number or ``noise`` not a string; ``max_rows`` is not an int;
        ``privacy_unit`` holds values of mixed types; ``accountant`` is not an accountant;
        ``rng`` is not one of the accepted kinds; or ``threads`` is not an int.
    ValueError
        If ``values`` is not one-dimensional or holds a NaN or infinity (the message gives
        its position, never a value); ``bounds`` is None or a string (bounds from the data),
        has low >= high, or is too wide (beyond 2**960) or too narrow; ``noise`` is neither
        ``"laplace"`` nor ``"gaussian"``; the privacy keywords do not fit the noise
        (Laplace: ``epsilon`` > 0 required, no ``rho``, ``delta`` None or 0; Gaussian:
        ``rho`` > 0 alone, or ``epsilon`` > 0 with ``delta`` in (0, 1)) or give noise too
        large or too small for floats; ``max_rows`` is outside [1, 2**31 - 1], or not 1
        without ``privacy_unit``; ``privacy_unit`` has not one id per row, holds a null, or
        is a pandas Series indexed otherwise than ``values``; the rows could overflow the
        exact sum's grid; ``threads`` is outside [1, 1024]; or ``rng`` is a negative seed.
    BudgetExceededError
        If the accountant cannot afford the release. All of the above are raised before
        anything is charged or drawn.

    Examples
    --------
    The mean of 1,000 ages (true mean 54.652), and again with each person owning two rows
    (``rng=1``: reproducible, for tests only):

    >>> import numpy as np
    >>> import dpfast as dp
    >>> ages = np.random.default_rng(0).integers(18, 90, size=1000)   # made-up data
    >>> acct = dp.Accountant(epsilon=1.0)
    >>> round(dp.mean(ages, bounds=(0, 100), epsilon=0.5, accountant=acct, rng=1), 2)
    54.66
    >>> person = np.repeat(np.arange(500), 2)
    >>> m = dp.mean(ages, bounds=(0, 100), epsilon=0.5, privacy_unit=person, max_rows=2,
    ...             accountant=acct, rng=1)
    >>> 0 <= m <= 100, acct.spent
    (True, (1.0, 0.0))
    """
    col, (n, s) = _moments("mean", values, bounds, privacy_unit, max_rows, 1, noise,
                           epsilon, delta, rho, accountant, rng, threads)
    mid = (col.lo + col.hi) / 2.0
    return float(np.clip(mid + s / max(n, 1.0), col.lo, col.hi))


def variance(values: object, *, bounds: object, epsilon: object = None,
             delta: object = None, rho: object = None, noise: object = "laplace",
             privacy_unit: object = None, max_rows: object = 1,
             accountant: AccountantLike | None = None, rng: RngLike = None,
             threads: int | None = None, ddof: int = 0) -> float:
    """Differentially private variance of a column clamped to ``bounds``: noisy count, sum
    and sum of squares of the centred values (the budget in three equal parts), combined as
    ``(sumsq - sum**2 / n) / (n - ddof)``, clamped to ``[0, ((high - low) / 2)**2]``.

    Parameters
    ----------
    values : array_like
        One-dimensional real values (NaN or infinity refused).
    bounds : (float, float)
        Public clamping bounds (low < high); bounds from the data are refused.
    epsilon, delta, rho, noise
        Privacy keywords, as for :func:`dpfast.noisy_counts`: Laplace noise (``epsilon``)
        or Gaussian noise (``rho``, or ``epsilon`` and ``delta``).
    privacy_unit : array_like, optional
        The person of each row; each keeps at most ``max_rows`` rows, chosen uniformly at
        random. Without it, each row is a person.
    max_rows : int
        Rows kept per person (with ``privacy_unit``).
    accountant, rng, threads
        As for every release (an int seed for ``rng`` is for tests and research only).
    ddof : int, optional
        Delta degrees of freedom, >= 0, as numpy's (default 0).

    Returns
    -------
    float
        The noisy variance, in ``[0, ((high - low) / 2)**2]``.

    Raises
    ------
    TypeError
        If ``values`` is not numeric data (booleans, strings, objects, dates, a masked
        array); ``bounds`` is not a pair or holds a non-real; ``epsilon``, ``delta`` or
        ``rho`` is not a real number or ``noise`` not a string; ``max_rows`` or ``ddof`` is
        not an int; ``privacy_unit`` holds values of mixed types; ``accountant`` is not an
        accountant; ``rng`` is not one of the accepted kinds; or ``threads`` is not an int.
    ValueError
        If ``values`` is not one-dimensional or holds a NaN or infinity (the message gives
        its position, never a value); ``bounds`` is None or a string (bounds from the data),
        has low >= high, or is too wide (beyond 2**960) or too narrow; the square of the
        bounds' half-width is not a normal float; ``ddof`` < 0; ``noise`` is neither
        ``"laplace"`` nor ``"gaussian"``; the privacy keywords do not fit the noise
        (Laplace: ``epsilon`` > 0 required, no ``rho``, ``delta`` None or 0; Gaussian:
        ``rho`` > 0 alone, or ``epsilon`` > 0 with ``delta`` in (0, 1)) or give noise too
        large or too small for floats; ``max_rows`` is outside [1, 2**31 - 1], or not 1
        without ``privacy_unit``; ``privacy_unit`` has not one id per row, holds a null, or
        is a pandas Series indexed otherwise than ``values``; the rows could overflow the
        exact sum's grid; ``threads`` is outside [1, 1024]; or ``rng`` is a negative seed.
    BudgetExceededError
        If the accountant cannot afford the release. All of the above are raised before
        anything is charged or drawn.

    Examples
    --------
    The variance of 1,000 ages (true variance 429.74; ``rng=1``: reproducible, for tests
    only):

    >>> import numpy as np
    >>> import dpfast as dp
    >>> ages = np.random.default_rng(0).integers(18, 90, size=1000)   # made-up data
    >>> acct = dp.Accountant(epsilon=1.0)
    >>> round(dp.variance(ages, bounds=(0, 100), epsilon=1.0, accountant=acct, rng=1), 1)
    430.0
    >>> acct.spent
    (1.0, 0.0)
    """
    return _variance("variance", values, bounds, epsilon, delta, rho, noise, privacy_unit,
                     max_rows, accountant, rng, threads, ddof)


def std(values: object, *, bounds: object, epsilon: object = None, delta: object = None,
        rho: object = None, noise: object = "laplace", privacy_unit: object = None,
        max_rows: object = 1, accountant: AccountantLike | None = None,
        rng: RngLike = None, threads: int | None = None, ddof: int = 0) -> float:
    """The square root of :func:`variance` (the same release, at the same cost).

    Parameters
    ----------
    values : array_like
        One-dimensional real values (NaN or infinity refused).
    bounds : (float, float)
        Public clamping bounds (low < high); bounds from the data are refused.
    epsilon, delta, rho, noise
        Privacy keywords, as for :func:`dpfast.noisy_counts`: Laplace noise (``epsilon``)
        or Gaussian noise (``rho``, or ``epsilon`` and ``delta``).
    privacy_unit : array_like, optional
        The person of each row; each keeps at most ``max_rows`` rows, chosen uniformly at
        random. Without it, each row is a person.
    max_rows : int
        Rows kept per person (with ``privacy_unit``).
    accountant, rng, threads
        As for every release (an int seed for ``rng`` is for tests and research only).
    ddof : int, optional
        Delta degrees of freedom, >= 0, as numpy's (default 0).

    Returns
    -------
    float
        The noisy standard deviation, in ``[0, (high - low) / 2]``.

    Raises
    ------
    TypeError
        If ``values`` is not numeric data (booleans, strings, objects, dates, a masked
        array); ``bounds`` is not a pair or holds a non-real; ``epsilon``, ``delta`` or
        ``rho`` is not a real number or ``noise`` not a string; ``max_rows`` or ``ddof`` is
        not an int; ``privacy_unit`` holds values of mixed types; ``accountant`` is not an
        accountant; ``rng`` is not one of the accepted kinds; or ``threads`` is not an int.
    ValueError
        If ``values`` is not one-dimensional or holds a NaN or infinity (the message gives
        its position, never a value); ``bounds`` is None or a string (bounds from the data),
        has low >= high, or is too wide (beyond 2**960) or too narrow; the square of the
        bounds' half-width is not a normal float; ``ddof`` < 0; ``noise`` is neither
        ``"laplace"`` nor ``"gaussian"``; the privacy keywords do not fit the noise
        (Laplace: ``epsilon`` > 0 required, no ``rho``, ``delta`` None or 0; Gaussian:
        ``rho`` > 0 alone, or ``epsilon`` > 0 with ``delta`` in (0, 1)) or give noise too
        large or too small for floats; ``max_rows`` is outside [1, 2**31 - 1], or not 1
        without ``privacy_unit``; ``privacy_unit`` has not one id per row, holds a null, or
        is a pandas Series indexed otherwise than ``values``; the rows could overflow the
        exact sum's grid; ``threads`` is outside [1, 1024]; or ``rng`` is a negative seed.
    BudgetExceededError
        If the accountant cannot afford the release. All of the above are raised before
        anything is charged or drawn.

    Examples
    --------
    The standard deviation of 1,000 ages (true 20.73; ``rng=1``: reproducible, for tests
    only):

    >>> import numpy as np
    >>> import dpfast as dp
    >>> ages = np.random.default_rng(0).integers(18, 90, size=1000)   # made-up data
    >>> acct = dp.Accountant(epsilon=1.0)
    >>> round(dp.std(ages, bounds=(0, 100), epsilon=1.0, accountant=acct, rng=1), 2)
    20.74
    """
    return math.sqrt(_variance("std", values, bounds, epsilon, delta, rho, noise,
                               privacy_unit, max_rows, accountant, rng, threads, ddof))


def _variance(func: str, values: object, bounds: object, epsilon: object, delta: object,
              rho: object, noise: object, privacy_unit: object, max_rows: object,
              accountant: AccountantLike | None, rng: RngLike, threads: int | None,
              ddof: object) -> float:
    if isinstance(ddof, (bool, np.bool_)) or not isinstance(ddof, (int, np.integer)):
        raise TypeError(f"The 'ddof' parameter of {func} must be an int >= 0. Got "
                        f"{_v.describe(ddof)} instead.")
    if ddof < 0:
        raise ValueError(f"The 'ddof' parameter of {func} must be an int >= 0. Got {ddof!r} "
                         "instead.")
    col, (n, s, s2) = _moments(func, values, bounds, privacy_unit, max_rows, 2, noise,
                               epsilon, delta, rho, accountant, rng, threads)
    n = max(n, 1.0)
    var = (s2 - s * s / n) / max(n - int(ddof), 1.0)
    return float(np.clip(var, 0.0, ((col.hi - col.lo) / 2.0) ** 2))


# -- quantiles ------------------------------------------------------------------------------

#: Integers of the quantile grid: at most 2**32 grid points over the bounds.
GRID_POINTS = 2**32


def quantile_grid(lo: float, hi: float) -> tuple[float, int]:
    """(g, top): the power-of-two step and the last index of the grid ``lo + k g``,
    ``k = 0..top``, over ``[lo, hi]`` with at most :data:`GRID_POINTS` points. Outputs are
    grid points: their set does not depend on the data."""
    width = hi - lo
    # 2**-32 of the width's binade, up; at least the least float (a subnormal width).
    g = max(math.ldexp(1.0, math.frexp(width)[1] - 32), math.ulp(0.0))
    while width / g > GRID_POINTS - 1:
        g *= 2.0
    return g, int(math.floor(width / g))


def check_q(q: object, func: str) -> NDArray[np.float64]:
    """Quantile levels: a float or a 1-D sequence of floats in [0, 1]."""
    try:
        arr = np.asarray(q, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"The 'q' parameter of {func} must be a float or a sequence of "
                        f"floats in [0, 1]. Got {q!r} instead.") from None
    if arr.ndim > 1 or arr.size == 0 or not np.isfinite(arr).all() or \
            (arr < 0).any() or (arr > 1).any():
        raise ValueError(f"The 'q' parameter of {func} must be a float or a non-empty "
                         f"sequence of floats in [0, 1]. Got {q!r} instead.")
    return arr


METHODS = ("recursive", "independent")


def _pick(keys: Keys, threads: int, s: NDArray[np.uint32], lo: int, hi: int, q: float,
          eps: float, max_rows: int) -> int:
    """One exponential-mechanism draw of the q-quantile of the sorted keys ``s`` (all in
    [lo, hi]) among the integers lo..hi: utility ``-|rank - q len(s)|``, whose change when a
    person's ``max_rows`` rows come or go is at most ``max_rows max(q, 1 - q)``."""
    sens = max_rows * max(q, 1.0 - q)
    w = _native.quantile_weights(s, lo, hi, q * s.size, eps / (2.0 * sens))
    j = int(noise.exponential_mechanism(keys.next(), threads, w, float(w.max()), 1.0))
    start = lo if j == 0 else int(s[j - 1]) + 1
    stop = hi if j == s.size else int(s[j])
    # Uniform among the integers of the chosen gap: exact (numpy's bounded integers).
    return start + int(np.random.Generator(keys.coins()).integers(0, stop - start + 1))


def _recursive(keys: Keys, threads: int, s: NDArray[np.uint32], top: int,
               qs: NDArray[np.float64], eps: float, max_rows: int) -> NDArray[np.int64]:
    """Kaplan, Schnapp and Stemmer's recursion: the middle quantile of each sub-problem,
    then its two sides (the data below the released point, and the rest) for the quantiles
    on each side, relative to the side. A level's sub-problems hold disjoint rows, so a
    level costs ``eps`` once; there are ``ceil(log2(m + 1))`` levels."""
    out = np.empty(qs.size, dtype=np.int64)
    # (first, last) quantile indices, slice [a, b) of s, grid range [lo, hi], and the
    # quantile levels qlo < (those of the problem) < qhi the slice stands for.
    level = [(0, qs.size, 0, s.size, 0, top, 0.0, 1.0)]
    while level:
        nxt = []
        for i0, i1, a, b, lo, hi, qlo, qhi in level:
            mid = (i0 + i1) // 2
            rel_q = min(max((qs[mid] - qlo) / (qhi - qlo), 0.0), 1.0) if qhi > qlo else 0.5
            y = _pick(keys, threads, s[a:b], lo, hi, rel_q, eps, max_rows)
            out[mid] = y
            cut = a + int(np.searchsorted(s[a:b], y, side="left"))
            if mid > i0:
                nxt.append((i0, mid, a, cut, lo, y, qlo, qs[mid]))
            if i1 > mid + 1:
                nxt.append((mid + 1, i1, cut, b, y, hi, qs[mid], qhi))
        level = nxt
    return out


def levels(m: int) -> int:
    """Levels of the recursion for m quantiles."""
    return max(1, math.ceil(math.log2(m + 1)))


def quantiles(values: object, q: object, *, bounds: object, epsilon: object,
              privacy_unit: object = None, max_rows: object = 1,
              method: str = "recursive", accountant: AccountantLike | None = None,
              rng: RngLike = None, threads: int | None = None) -> NDArray[np.float64]:
    """Differentially private quantiles of a column clamped to ``bounds``, no candidate list.

    The values are placed on a grid of at most 2**32 points over the bounds (a power-of-two
    step), sorted (a radix sort), and each quantile drawn by the exponential mechanism over
    the grid points, weighted by the gaps of the sorted data: a point with ``j`` values
    below it has utility ``-|j - q n|``.

    Parameters
    ----------
    values : array_like
        One-dimensional real values (NaN or infinity refused).
    q : float or sequence of float
        Quantile levels in [0, 1].
    bounds : (float, float)
        Public clamping bounds.
    epsilon : float
        The whole budget (pure DP; the exponential mechanism's zCDP cost, ``epsilon**2 / 8``
        per draw, is stated to the accountant).
    privacy_unit, max_rows
        As for :func:`sum`.
    method : {"recursive", "independent"}
        ``"recursive"`` (default): Kaplan et al.'s recursion, ``epsilon / levels`` per draw,
        ``levels = ceil(log2(len(q) + 1))``. ``"independent"``: each quantile on all the
        data with ``epsilon / len(q)``. (Gillenwater et al.'s JointExp, measured beside
        them by ``dpfast bench --records``, has the lower error for a few quantiles of a
        small sample but the higher for 99, and its cost grows as ``len(q) n**2``: not
        offered.)
    accountant, rng, threads
        As for every release (an int seed for ``rng`` is for tests and research only).

    Returns
    -------
    ndarray of float64
        The quantiles in the order of ``q`` (a 0-d array for a scalar ``q``), grid points
        ``low + k g``.

    Raises
    ------
    TypeError
        If ``values`` is not numeric data (booleans, strings, objects, dates, a masked
        array); ``q`` is not a float or a sequence of them; ``bounds`` is not a pair or
        holds a non-real; ``epsilon`` is not a real number (None included); ``max_rows`` is
        not an int; ``privacy_unit`` holds values of mixed types; ``accountant`` is not an
        accountant; ``rng`` is not one of the accepted kinds; or ``threads`` is not an int.
    ValueError
        If ``q`` is empty, more than 1-d, or has a level outside [0, 1]; ``values`` is not
        one-dimensional or holds a NaN or infinity (the message gives its position, never a
        value); ``bounds`` is None or a string (bounds from the data), has low >= high, or
        is too wide (beyond 2**960) or too narrow; ``epsilon`` is NaN, infinite or <= 0;
        ``method`` is not one of the two names; ``max_rows`` is outside [1, 2**31 - 1], or
        not 1 without ``privacy_unit``; ``privacy_unit`` has not one id per row, holds a
        null, or is a pandas Series indexed otherwise than ``values``; ``threads`` is
        outside [1, 1024]; or ``rng`` is a negative seed.
    BudgetExceededError
        If the accountant cannot afford ``epsilon``. All of the above are raised before
        anything is charged or drawn.

    Examples
    --------
    The quartiles of 1,000 ages (true 37, 56 and 72.25; ``rng=1``: reproducible, for tests
    only):

    >>> import numpy as np
    >>> import dpfast as dp
    >>> ages = np.random.default_rng(0).integers(18, 90, size=1000)   # made-up data
    >>> acct = dp.Accountant(epsilon=1.0)
    >>> q = dp.quantiles(ages, [0.25, 0.5, 0.75], bounds=(0, 100), epsilon=1.0,
    ...                  accountant=acct, rng=1)
    >>> print(np.round(q, 2))
    [36.69 55.38 72.35]
    >>> acct.spent
    (1.0, 0.0)
    """
    return _quantiles("quantiles", values, q, bounds, epsilon, privacy_unit, max_rows, method,
                      accountant, rng, threads)


def _quantiles(func: str, values: object, q: object, bounds: object, epsilon: object,
               privacy_unit: object, max_rows: object, method: str,
               accountant: AccountantLike | None, rng: RngLike,
               threads: int | None) -> NDArray[np.float64]:
    qs = check_q(q, func)
    col = _column(func, values, bounds, privacy_unit, max_rows)
    eps = _v.check_epsilon(epsilon, func)
    if method not in METHODS:
        raise ValueError(f"The 'method' parameter of {func} must be one of {METHODS}. Got "
                         f"{method!r} instead.")
    g, top = quantile_grid(col.lo, col.hi)
    flat = np.atleast_1d(qs)
    order = np.argsort(flat, kind="stable")
    draws = levels(flat.size) if method == "recursive" else flat.size
    per_draw = _down(eps / draws)
    # The zCDP cost stated (the exponential mechanism's epsilon**2 / 8 a draw), when it is a
    # positive float; else none is stated and a zCDP accountant charges epsilon**2 / 2.
    stated = draws * per_draw * per_draw / 8.0
    rel = Release(func, accountant, eps, 0.0, rng, threads, col.x.size,
                  rho=stated if 0.0 < stated < math.inf else None)
    keys = rel.charge_keys()
    x = _kept(col, keys, rel.threads)
    s = np.floor((x - col.lo) / g)
    np.clip(s, 0, top, out=s)
    s32 = _native.sort_u32(s.astype(np.uint32))
    if method == "recursive":
        picked = _recursive(keys, rel.threads, s32, top, flat[order], per_draw,
                            col.max_rows)
        ks = np.empty_like(picked)
        ks[order] = picked
    else:
        ks = np.array([_pick(keys, rel.threads, s32, 0, top, float(v), per_draw,
                             col.max_rows) for v in flat], dtype=np.int64)
    out: NDArray[np.float64] = np.minimum(col.lo + ks * g, col.hi).reshape(qs.shape)
    return out


def median(values: object, *, bounds: object, epsilon: object, privacy_unit: object = None,
           max_rows: object = 1, accountant: AccountantLike | None = None,
           rng: RngLike = None, threads: int | None = None) -> float:
    """The differentially private median: :func:`quantiles` at 0.5 (one draw, sensitivity
    ``max_rows / 2`` of the rank utility).

    Parameters
    ----------
    values : array_like
        One-dimensional real values (NaN or infinity refused).
    bounds : (float, float)
        Public clamping bounds (low < high); bounds from the data are refused.
    epsilon : float
        The whole budget (pure DP), > 0.
    privacy_unit, max_rows
        As for :func:`sum`.
    accountant, rng, threads
        As for every release (an int seed for ``rng`` is for tests and research only).

    Returns
    -------
    float
        The noisy median: a point of the grid ``low + k g`` over the bounds.

    Raises
    ------
    TypeError
        If ``values`` is not numeric data (booleans, strings, objects, dates, a masked
        array); ``bounds`` is not a pair or holds a non-real; ``epsilon`` is not a real
        number (None included); ``max_rows`` is not an int; ``privacy_unit`` holds values of
        mixed types; ``accountant`` is not an accountant; ``rng`` is not one of the accepted
        kinds; or ``threads`` is not an int.
    ValueError
        If ``values`` is not one-dimensional or holds a NaN or infinity (the message gives
        its position, never a value); ``bounds`` is None or a string (bounds from the data),
        has low >= high, or is too wide (beyond 2**960) or too narrow; ``epsilon`` is NaN,
        infinite or <= 0; ``max_rows`` is outside [1, 2**31 - 1], or not 1 without
        ``privacy_unit``; ``privacy_unit`` has not one id per row, holds a null, or is a
        pandas Series indexed otherwise than ``values``; ``threads`` is outside [1, 1024];
        or ``rng`` is a negative seed.
    BudgetExceededError
        If the accountant cannot afford ``epsilon``. All of the above are raised before
        anything is charged or drawn.

    Examples
    --------
    The median of 1,000 ages (true median 56; ``rng=1``: reproducible, for tests only):

    >>> import numpy as np
    >>> import dpfast as dp
    >>> ages = np.random.default_rng(0).integers(18, 90, size=1000)   # made-up data
    >>> acct = dp.Accountant(epsilon=1.0)
    >>> round(dp.median(ages, bounds=(0, 100), epsilon=1.0, accountant=acct, rng=1), 2)
    55.38
    """
    return float(_quantiles("median", values, 0.5, bounds, epsilon, privacy_unit, max_rows,
                            "recursive", accountant, rng, threads))



# -- accuracy -------------------------------------------------------------------------------

STATISTICS = ("sum", "mean", "variance", "median", "quantiles")


def accuracy(statistic: str, *, bounds: object, rows: object, epsilon: object = None,
             delta: object = None, rho: object = None, noise: object = "laplace",
             max_rows: object = 1, q: object = 0.5, method: str = "recursive",
             beta: object = 0.05) -> dict[str, object]:
    """The error of a statistic before it is released (nothing is charged or drawn).

    Parameters
    ----------
    statistic : {"sum", "mean", "variance", "median", "quantiles"}
    bounds, epsilon, delta, rho, noise, max_rows, q, method
        As the release would take them.
    rows : int
        How many rows the release is expected to keep (its error depends on it; it is not
        read from any data).
    beta : float
        The failure probability of the bound.

    Returns
    -------
    dict
        ``parts``: each measurement's cost and noise standard deviation (the plan);
        ``std``: the statistic's standard deviation from its noise (sum exactly; mean and
        variance to first order, for data at a bound, their worst case); ``bound``: an error
        exceeded with probability at most ``beta`` (sum: exactly, from the noise's tail;
        mean, variance: ``std * sqrt(1 / beta)`` by Chebyshev); for quantiles
        ``rank_bound``: ranks from the target exceeded with probability at most ``beta``
        for each quantile (the exponential mechanism's utility guarantee,
        ``2 sensitivity / epsilon_draw * (ln(grid points) + ln(1 / beta))``).
    """
    func = "accuracy"
    if statistic not in STATISTICS:
        raise ValueError(f"The 'statistic' parameter of {func} must be one of {STATISTICS}. "
                         f"Got {statistic!r} instead.")
    lo, hi = check_bounds(bounds, func)
    n = float(_v.check_positive_int(rows, "rows", func))
    r = float(check_max(max_rows, "max_rows", func))
    b = _v.check_real(beta, "beta", func, high=1.0)
    half = (hi - lo) / 2.0
    if statistic in ("median", "quantiles"):
        qs = np.atleast_1d(check_q(q, func))
        eps = _v.check_epsilon(epsilon, func)
        if method not in METHODS:
            raise ValueError(f"The 'method' parameter of {func} must be one of {METHODS}. "
                             f"Got {method!r} instead.")
        draws = levels(qs.size) if method == "recursive" else qs.size
        _, top = quantile_grid(lo, hi)
        sens = r * float(np.max(np.maximum(qs, 1.0 - qs)))
        per = eps / draws
        return {"parts": [{"measurement": f"{qs.size} quantile(s), {draws} draw(s)",
                           "noise": "exponential mechanism", "epsilon": per}],
                "rank_bound": 2.0 * sens / per * (math.log(top + 1.0) + math.log(1.0 / b))}
    if statistic == "sum":
        reach = max(abs(lo), abs(hi))
        plan = split(func, noise, epsilon, delta, rho, [Part("sum", r * reach, r * reach,
                                                             False)])
        m = plan.noisy()[0].noise
        return {"parts": plan.describe(), "std": math.sqrt(m.variance),
                "bound": m.tail_bound(b)}
    parts = [Part("count", r, r, True), Part("centred sum", r * half, r * half, False)]
    if statistic == "variance":
        parts.append(Part("centred sum of squares", r * half * half, r * half * half, False))
    plan = split(func, noise, epsilon, delta, rho, parts)
    var = [m.noise.variance for m in plan.noisy()]
    if statistic == "mean":          # (S + e_S) / (n + e_N), S at most n half in magnitude
        std = math.sqrt(var[1] + half * half * var[0]) / n
    else:                            # (S2 + e2) / n - ((S + e1) / n)**2, first order
        std = math.sqrt(var[2] + (2.0 * half) ** 2 * var[1] + half ** 4 * var[0]) / n
    return {"parts": plan.describe(), "std": std, "bound": std * math.sqrt(1.0 / b)}
