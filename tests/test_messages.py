"""Error messages never show private values: every public name, fed bad input that hides a
marker, refuses with a ValueError/TypeError before anything is charged or drawn, and no
formatting of the marker appears in the message, the repr or anything chained to it.

The table is built from the ``__all__`` of dpfast and its public modules: a public name
without a case here (or a stated reason it takes no data) fails
:func:`test_every_public_name_has_a_case`, so a new function cannot ship without one.
Stateful objects (sparse vector, private multiplicative weights) get their bad input after
they are built, checked against the state they had.

The rule under test is stated once, in :mod:`dpfast.validation`.
"""
from __future__ import annotations

import importlib
import re
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import pytest

import dpfast as dp
import dpfast.linear
import dpfast.mechanisms
import dpfast.releases
from dpfast.linear import workloads as wl
from dpfast.releases import postprocess as pp

try:
    import dask
    import dask.array as da
    import dpfast.dask as dpd
except ImportError:         # dpfast.dask is optional (pip install dpfast[dask])
    dask = da = dpd = None

try:
    import pandas as pd
except ImportError:
    pd = None

try:
    import pyarrow as pa
except ImportError:
    pa = None

# -- markers --------------------------------------------------------------------------------
# Values hidden in the data of each case. Any of their usual formattings in a message is a
# leak: repr/str, %g, two decimals, thousands separators, scientific notation.
FLOAT = -41.2573
INT = 987654321
TEXT = "SECRET-MARKER-7"
BIG = INT * 10**10          # 9876543210000000000: beyond 2**62 (int64 noise limits)
HUGE = 2**64 + INT          # beyond uint64: a Python int numpy keeps as an object

NAN = float("nan")


def _forms(marker: object) -> set[str]:
    if isinstance(marker, str):
        return {marker, marker.lower(), "SECRET-MARKER", "MARKER-7"}
    x = marker
    out = {repr(x), str(x), f"{x:g}", f"{x:e}", f"{float(x):.4g}", f"{float(x):.5g}",
           f"{float(x):.6g}", f"{abs(float(x)):g}", f"{abs(float(x)):.2f}".rstrip("0")}
    if isinstance(x, int):
        out |= {f"{x:,}", f"{x:_}"}
    else:
        out |= {f"{x:.2f}", f"{x:.1f}", f"{abs(x):.3f}"}
    return {s.lstrip("-") for s in out if len(s.lstrip("-")) >= 4}


def _digits(marker: object) -> list[str]:
    """Significant digits of a numeric marker as they survive any formatting once
    separators are dropped (41257 of -41.2573, 98765 of 987654321 and 9.87654e+08)."""
    if isinstance(marker, str):
        return []
    s = f"{abs(float(marker)):.12e}".replace(".", "")
    return [s[:5], f"{float(f'{abs(float(marker)):.3e}'):e}".replace(".", "")[:4]]


MARKERS = (FLOAT, INT, TEXT, BIG, HUGE)
FORMS = {m: _forms(m) for m in (FLOAT, INT, TEXT, BIG, HUGE)}


def leaked(text: str, markers: tuple[object, ...] = MARKERS) -> list[str]:
    """The formattings of the markers found in ``text`` (empty when none)."""
    found = [f for m in markers for f in FORMS[m] if f in text]
    squeezed = re.sub(r"[,_. ]", "", text)
    found += [d for m in markers for d in _digits(m) if d in squeezed]
    return found


def texts(exc: BaseException) -> list[str]:
    """str() and repr() of an exception, its arguments and everything chained to it."""
    out, seen = [], set()
    e: BaseException | None = exc
    todo = [exc]
    while todo:
        e = todo.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        out += [str(e), repr(e)] + [repr(a) for a in e.args]
        todo += [e.__cause__, e.__context__]
    return out


# -- the table ------------------------------------------------------------------------------

@dataclass
class Case:
    """A bad call. ``call(acct, rng, obj)`` makes it; for a stateful object ``build(acct,
    rng)`` makes the object first (twice: once for the call, once as the untouched twin), and
    ``state(obj)`` is what must not change."""

    call: Callable[..., Any]
    build: Callable[..., Any] | None = None
    state: Callable[[Any], Any] | None = None
    exc: tuple[type[BaseException], ...] = (ValueError, TypeError)
    marks: tuple[Any, ...] = field(default_factory=tuple)


def _leaks(owner: str) -> Any:
    return pytest.mark.xfail(strict=True, reason=f"leaks: fixed by {owner}")


# Data with the markers hidden in them.
COUNTS_NEG = np.array([3.0, 7.0, FLOAT, 2.0])           # a negative count (the marker)
COUNTS_NAN = np.array([3.0, FLOAT, NAN, float(INT)])   # a NaN beside the markers
INTS_BIG = np.array([3, BIG, 5], dtype=np.uint64)      # fits uint64, not the noise limit
INTS_HUGE = [1, HUGE, 2]                               # beyond int64 and uint64


def _svt_state(obj: Any) -> Any:
    return {k: v for k, v in vars(obj).items() if isinstance(v, (int, float, bool, str))} \
        if hasattr(obj, "__dict__") else repr(obj)


def _pmw_state(obj: Any) -> Any:
    return (obj.answered, obj.updates_used, obj.halted, obj.synthetic.tobytes())


def _sv(cls: Any, **kw: Any) -> Callable[..., Any]:
    return lambda acct, rng: cls(100.0, epsilon=1.0, accountant=acct, rng=rng, **kw)


def _pmw(acct: Any, rng: Any) -> Any:
    return dp.PrivateMultiplicativeWeights(np.arange(8.0), epsilon=1.0, alpha=0.3,
                                           accountant=acct, rng=rng)


def _cases() -> dict[str, list[Case]]:
    cases: dict[str, list[Case]] = {
        "dpfast.noisy_counts": [
            Case(lambda a, g, o: dp.noisy_counts(COUNTS_NAN, epsilon=1.0, accountant=a, rng=g)),
            Case(lambda a, g, o: dp.noisy_counts(INTS_HUGE, epsilon=1.0, accountant=a, rng=g)),
            Case(lambda a, g, o: dp.noisy_counts([TEXT, "x"], epsilon=1.0, accountant=a,
                                                 rng=g)),
        ],
        "dpfast.histogram": [
            Case(lambda a, g, o: dp.histogram(COUNTS_NAN, 4, range=(0, 1), epsilon=1.0,
                                              accountant=a, rng=g)),
            Case(lambda a, g, o: dp.histogram([TEXT, "y"], 4, range=(0, 1), epsilon=1.0,
                                              accountant=a, rng=g)),
        ],
        "dpfast.histogramdd": [
            Case(lambda a, g, o: dp.histogramdd(COUNTS_NAN.reshape(2, 2), 2,
                                                range=[(0, 1), (0, 1)], epsilon=1.0,
                                                accountant=a, rng=g)),
        ],
        "dpfast.count_categories": [
            Case(lambda a, g, o: dp.count_categories(["a", TEXT], [TEXT, "a", TEXT],
                                                     epsilon=1.0, accountant=a, rng=g)),
            Case(lambda a, g, o: dp.count_categories(np.ma.masked_array([INT, 2], [0, 1]),
                                                     [1, 2], epsilon=1.0, accountant=a,
                                                     rng=g)),
        ],
        "dpfast.laplace_mechanism": [
            Case(lambda a, g, o: dp.laplace_mechanism(COUNTS_NAN, sensitivity=1.0,
                                                      epsilon=1.0, accountant=a, rng=g)),
            Case(lambda a, g, o: dp.laplace_mechanism(INTS_BIG, sensitivity=1.0,
                                                      epsilon=1.0, accountant=a, rng=g)),
            Case(lambda a, g, o: dp.laplace_mechanism([1.0, float(INT)], sensitivity=1.0,
                                                      epsilon=1.0, accountant=a, rng=g)),
            Case(lambda a, g, o: dp.laplace_mechanism(INTS_HUGE, sensitivity=1.0,
                                                      epsilon=1.0, accountant=a, rng=g)),
        ],
        "dpfast.gaussian_mechanism": [
            Case(lambda a, g, o: dp.gaussian_mechanism(COUNTS_NAN, sensitivity=1.0,
                                                       epsilon=1.0, delta=1e-6,
                                                       accountant=a, rng=g)),
            Case(lambda a, g, o: dp.gaussian_mechanism([1.0, float(BIG) * 1e200],
                                                       sensitivity=1.0, epsilon=1.0,
                                                       delta=1e-6, accountant=a, rng=g)),
        ],
        "dpfast.exponential_mechanism": [
            Case(lambda a, g, o: dp.exponential_mechanism([FLOAT, NAN], epsilon=1.0,
                                                          accountant=a, rng=g)),
            Case(lambda a, g, o: dp.exponential_mechanism([FLOAT, 1.0], epsilon=1.0,
                                                          candidates=INT, accountant=a,
                                                          rng=g)),
            Case(lambda a, g, o: dp.exponential_mechanism([FLOAT, 1.0], epsilon=1.0,
                                                          candidates=TEXT, accountant=a,
                                                          rng=g)),
        ],
        "dpfast.permute_and_flip": [
            Case(lambda a, g, o: dp.permute_and_flip([FLOAT, np.inf], epsilon=1.0,
                                                     accountant=a, rng=g)),
        ],
        "dpfast.report_noisy_max": [
            Case(lambda a, g, o: dp.report_noisy_max([FLOAT, float(INT), NAN], epsilon=1.0,
                                                     accountant=a, rng=g)),
        ],
        "dpfast.top_k": [
            Case(lambda a, g, o: dp.top_k([FLOAT, float(INT), NAN], 1, epsilon=1.0,
                                          accountant=a, rng=g)),
        ],
        "dpfast.randomized_response": [
            Case(lambda a, g, o: dp.randomized_response([0, 1, INT], epsilon=1.0,
                                                        accountant=a, rng=g)),
            Case(lambda a, g, o: dp.randomized_response([0, FLOAT], epsilon=1.0,
                                                        accountant=a, rng=g)),
        ],
        "dpfast.randomized_response_categorical": [
            Case(lambda a, g, o: dp.randomized_response_categorical(
                ["a", TEXT], ["a", "b"], epsilon=1.0, accountant=a, rng=g)),
            Case(lambda a, g, o: dp.randomized_response_categorical(
                ["a"], [TEXT, "a", TEXT], epsilon=1.0, accountant=a, rng=g)),
            Case(lambda a, g, o: dp.randomized_response_categorical(
                ["a"], [TEXT], epsilon=1.0, accountant=a, rng=g)),
            Case(lambda a, g, o: dp.randomized_response_categorical(
                ["a"], TEXT, epsilon=1.0, accountant=a, rng=g)),
            Case(lambda a, g, o: dp.randomized_response_categorical(
                [1.0], [FLOAT, NAN], epsilon=1.0, accountant=a, rng=g)),
            Case(lambda a, g, o: dp.randomized_response_categorical(
                [0, INT], 3, epsilon=1.0, accountant=a, rng=g)),
        ],
        "dpfast.rr_estimate_counts": [
            Case(lambda a, g, o: dp.rr_estimate_counts([0, INT], 3, epsilon=1.0)),
            Case(lambda a, g, o: dp.rr_estimate_counts([0, FLOAT], 3, epsilon=1.0)),
        ],
        "dpfast.rr_estimate_proportion": [
            Case(lambda a, g, o: dp.rr_estimate_proportion([0, INT], epsilon=1.0)),
        ],
        "dpfast.census_hierarchy": [
            Case(lambda a, g, o: dp.census_hierarchy(np.array([3, -INT, 2, 1]),
                                                     [np.zeros(4, int)],
                                                     epsilon=1.0, accountant=a, rng=g)),
            Case(lambda a, g, o: dp.census_hierarchy(COUNTS_NAN, [np.zeros(4, int)],
                                                     epsilon=1.0, accountant=a, rng=g)),
        ],
        "dpfast.tree_mechanism": [
            Case(lambda a, g, o: dp.tree_mechanism(COUNTS_NAN, epsilon=1.0, accountant=a,
                                                   rng=g)),
            Case(lambda a, g, o: dp.tree_mechanism(INTS_HUGE, epsilon=1.0, accountant=a,
                                                   rng=g)),
        ],
        "dpfast.crosstab": [
            Case(lambda a, g, o: dp.crosstab({"c": ["a", TEXT]}, "c", epsilon=1.0,
                                             keys={"c": [TEXT, "a", TEXT]}, accountant=a,
                                             rng=g)),
            Case(lambda a, g, o: dp.crosstab({"c": np.array([1.0, NAN, FLOAT])}, "c",
                                             epsilon=1.0, keys={"c": [1.0, 2.0]},
                                             accountant=a, rng=g)),
        ],
        "dpfast.marginals": [
            Case(lambda a, g, o: dp.marginals(np.array([[1.0, FLOAT], [2.0, 3.0]]),
                                              epsilon=1.0, k=1, accountant=a, rng=g)),
            Case(lambda a, g, o: dp.marginals(np.array([[1.0, float(INT)], [NAN, 3.0]]),
                                              epsilon=1.0, k=1, accountant=a, rng=g)),
        ],
        "dpfast.mwem": [
            Case(lambda a, g, o: dp.mwem(COUNTS_NEG, wl.Prefixes(4), epsilon=1.0, rounds=2,
                                         accountant=a, rng=g)),
            Case(lambda a, g, o: dp.mwem(COUNTS_NAN, wl.Prefixes(4), epsilon=1.0, rounds=2,
                                         accountant=a, rng=g)),
        ],
        "dpfast.smalldb": [
            Case(lambda a, g, o: dp.smalldb(COUNTS_NEG, wl.Prefixes(4), epsilon=1.0,
                                            alpha=0.5, accountant=a, rng=g)),
            Case(lambda a, g, o: dp.smalldb(np.array([3.0, 7.0, 2.5, float(INT)]),
                                            wl.Prefixes(4), epsilon=1.0, alpha=0.5,
                                            accountant=a, rng=g)),
            Case(lambda a, g, o: dp.smalldb(np.array([3, INT * 10**7, 2, 1]),
                                            wl.Prefixes(4), epsilon=1.0, alpha=0.5,
                                            accountant=a, rng=g)),
        ],
        "dpfast.PrivateMultiplicativeWeights": [
            Case(lambda a, g, o: dp.PrivateMultiplicativeWeights(
                COUNTS_NEG, epsilon=1.0, alpha=0.3, accountant=a, rng=g)),
            Case(lambda a, g, o: dp.PrivateMultiplicativeWeights(
                COUNTS_NAN, epsilon=1.0, alpha=0.3, accountant=a, rng=g)),
            # Built, then asked a workload over the wrong domain / a bad query index.
            Case(lambda a, g, o: o.answer(wl.Prefixes(5)), build=_pmw, state=_pmw_state),
            Case(lambda a, g, o: o.answer(wl.Explicit(np.array([[1.0] * 7 + [NAN]])),
                                          queries=[0]), build=_pmw, state=_pmw_state),
        ],
        "dpfast.AboveThreshold": [
            Case(lambda a, g, o: o.query(NAN), build=_sv(dp.AboveThreshold),
                 state=_svt_state),
            Case(lambda a, g, o: o.query(TEXT), build=_sv(dp.AboveThreshold),
                 state=_svt_state),
            Case(lambda a, g, o: o.query([FLOAT, NAN]), build=_sv(dp.AboveThreshold),
                 state=_svt_state),
        ],
        "dpfast.Sparse": [
            Case(lambda a, g, o: o.query([FLOAT, float(INT), NAN]), build=_sv(dp.Sparse),
                 state=_svt_state),
            Case(lambda a, g, o: o.query(INTS_HUGE), build=_sv(dp.Sparse, cutoff=2),
                 state=_svt_state),
        ],
        "dpfast.NumericSparse": [
            Case(lambda a, g, o: o.query([FLOAT, NAN]), build=_sv(dp.NumericSparse),
                 state=_svt_state),
            Case(lambda a, g, o: o.query([3, BIG]), build=_sv(dp.NumericSparse),
                 state=_svt_state),
        ],
        "dpfast.default_rng": [
            Case(lambda a, g, o: dp.default_rng(-INT)),
            Case(lambda a, g, o: dp.default_rng(TEXT)),
        ],
        "dpfast.ChaCha20": [
            Case(lambda a, g, o: dp.ChaCha20(-INT)),
            Case(lambda a, g, o: dp.ChaCha20(TEXT)),
        ],
        "dpfast.laplace": [
            Case(lambda a, g, o: dp.laplace(1.0, 3, rng=-INT)),
            Case(lambda a, g, o: dp.laplace(1.0, 3, rng=TEXT)),
        ],
        "dpfast.releases.postprocess.apply": [
            Case(lambda a, g, o: pp.apply(COUNTS_NAN, "consistent")),
            Case(lambda a, g, o: pp.apply(COUNTS_NAN, "clip")),
        ],
        "dpfast.releases.postprocess.clip_nonnegative": [
            Case(lambda a, g, o: pp.clip_nonnegative(COUNTS_NAN)),
        ],
        "dpfast.releases.postprocess.consistent_counts": [
            Case(lambda a, g, o: pp.consistent_counts(COUNTS_NAN)),
            Case(lambda a, g, o: pp.consistent_counts([float(INT) * 1e10, 1.0])),
        ],
        "dpfast.releases.postprocess.project_simplex": [
            Case(lambda a, g, o: pp.project_simplex(COUNTS_NAN, 1.0)),
        ],
        "dpfast.releases.postprocess.round_preserving_sum": [
            Case(lambda a, g, o: pp.round_preserving_sum(COUNTS_NEG, 10)),
            Case(lambda a, g, o: pp.round_preserving_sum([float(INT), 0.5], 10)),
            Case(lambda a, g, o: pp.round_preserving_sum([float(INT) * 1e10, 0.5], 10)),
        ],
        "dpfast.linear.workloads.Workload": [
            # answer() is how a workload reads a histogram (the data).
            Case(lambda a, g, o: wl.Prefixes(4).answer(COUNTS_NAN)),
            Case(lambda a, g, o: wl.Identity(4).answer([TEXT, "a", "b", "c"])),
            Case(lambda a, g, o: wl.Marginals([2, 2], 1).tables(COUNTS_NAN)),
        ],
    }
    if pd is not None:
        names = pd.Series([TEXT, "bob", "ann"], name="names")
        cases["dpfast.count_categories"].append(
            Case(lambda a, g, o: dp.count_categories(names, pd.Series([TEXT, TEXT]),
                                                     epsilon=1.0, accountant=a, rng=g)))
        cases["dpfast.randomized_response_categorical"].append(
            Case(lambda a, g, o: dp.randomized_response_categorical(
                names, ["bob", "ann"], epsilon=1.0, accountant=a, rng=g)))
        cases["dpfast.crosstab"].append(
            Case(lambda a, g, o: dp.crosstab(pd.DataFrame({"n": names}), "n",
                                             keys={"n": ["bob", "ann"]}, epsilon=1.0,
                                             accountant=a, rng=g)))
    if pa is not None:
        cases["dpfast.noisy_counts"].append(
            Case(lambda a, g, o: dp.noisy_counts(pa.array([3, None, INT]), epsilon=1.0,
                                                 accountant=a, rng=g)))
        cases["dpfast.noisy_counts"].append(
            Case(lambda a, g, o: dp.noisy_counts(pa.array([TEXT, "b"]), epsilon=1.0,
                                                 accountant=a, rng=g)))
        cases["dpfast.count_categories"].append(
            Case(lambda a, g, o: dp.count_categories(
                pa.array([TEXT, None, "b"]).dictionary_encode(), ["b"], epsilon=1.0,
                accountant=a, rng=g)))
    # Statistics of records: values, privacy units and keys are data.
    cases.update({
        "dpfast.sum": [
            Case(lambda a, g, o: dp.sum(COUNTS_NAN, bounds=(0.0, 1.0), epsilon=1.0,
                                        accountant=a, rng=g)),
            Case(lambda a, g, o: dp.sum([TEXT, "x"], bounds=(0.0, 1.0), epsilon=1.0,
                                        accountant=a, rng=g)),
        ],
        "dpfast.mean": [
            Case(lambda a, g, o: dp.mean([FLOAT, 2.0, 3.0], bounds=(0.0, 1.0), epsilon=1.0,
                                         privacy_unit=[TEXT, None, "b"], max_rows=2,
                                         accountant=a, rng=g)),
        ],
        "dpfast.variance": [
            Case(lambda a, g, o: dp.variance([FLOAT, 2.0], bounds=(0.0, 1.0), epsilon=1.0,
                                             privacy_unit=[INT, TEXT], max_rows=2,
                                             accountant=a, rng=g)),
        ],
        "dpfast.std": [
            Case(lambda a, g, o: dp.std([FLOAT, float("inf")], bounds=(0.0, 1.0),
                                        epsilon=1.0, accountant=a, rng=g)),
        ],
        "dpfast.quantiles": [
            Case(lambda a, g, o: dp.quantiles(COUNTS_NAN, [0.5], bounds=(0.0, 1.0),
                                              epsilon=1.0, accountant=a, rng=g)),
        ],
        "dpfast.median": [
            Case(lambda a, g, o: dp.median([FLOAT, 2.0], bounds=(0.0, 1.0), epsilon=1.0,
                                           privacy_unit=[INT], max_rows=2, accountant=a,
                                           rng=g)),
        ],
        "dpfast.group_by": [
            Case(lambda a, g, o: dp.group_by({"k": [TEXT, None], "v": [FLOAT, 2.0]}, "k")
                 .agg(n="count", epsilon=1.0, delta=1e-6, accountant=a, rng=g)),
            Case(lambda a, g, o: dp.group_by({"k": [TEXT, INT], "v": [FLOAT, 2.0]}, "k")
                 .agg(n="count", epsilon=1.0, delta=1e-6, accountant=a, rng=g)),
        ],
        "dpfast.GroupBy": [
            Case(lambda a, g, o: dp.GroupBy({"k": [INT, 2], "v": [FLOAT, NAN]}, "k",
                                            keys=[INT, 2])
                 .agg(m=("v", "mean"), bounds={"v": (0.0, 1.0)}, epsilon=1.0,
                      accountant=a, rng=g)),
        ],
    })
    if dpd is not None:
        def dask_counts(values: Any) -> Any:
            return da.from_array(np.asarray(values), chunks=2)
        cases.update({
            "dpfast.dask.noisy_counts": [
                Case(lambda a, g, o: dpd.noisy_counts(dask_counts(COUNTS_NAN), epsilon=1.0,
                                                      accountant=a, rng=g).compute()),
                Case(lambda a, g, o: dpd.noisy_counts(dask_counts([3, INT * 10, 1, 2]),
                                                      dtype=np.int32, epsilon=1.0,
                                                      accountant=a, rng=g).compute()),
            ],
            "dpfast.dask.histogram": [
                Case(lambda a, g, o: dpd.histogram(dask_counts(COUNTS_NAN), 4, range=(0, 1),
                                                   epsilon=1.0, accountant=a, rng=g)),
            ],
            "dpfast.dask.count_categories": [
                Case(lambda a, g, o: dpd.count_categories(
                    da.from_array(np.array(["a", TEXT]), chunks=1), [TEXT, "a", TEXT],
                    epsilon=1.0, accountant=a, rng=g)),
            ],
        })
        if pd is not None:
            import dask.dataframe as dd

            def frame(**cols: Any) -> Any:
                return dd.from_pandas(pd.DataFrame(cols), npartitions=1)
            cases.update({
                "dpfast.dask.histogramdd": [
                    Case(lambda a, g, o: dpd.histogramdd(
                        frame(x=COUNTS_NAN, y=COUNTS_NEG), 2, range=[(0, 1), (0, 1)],
                        epsilon=1.0, accountant=a, rng=g)),
                ],
                "dpfast.dask.crosstab": [
                    Case(lambda a, g, o: dpd.crosstab(
                        frame(c=["a", TEXT]), "c", keys={"c": [TEXT, "a", TEXT]},
                        epsilon=1.0, accountant=a, rng=g)),
                ],
                "dpfast.dask.census_hierarchy": [
                    Case(lambda a, g, o: dpd.census_hierarchy(
                        frame(leaf=[0, INT, 1, 2]), "leaf", [np.zeros(4, int)], epsilon=1.0,
                        accountant=a, rng=g).compute()),
                ],
                "dpfast.dask.tree_mechanism": [
                    Case(lambda a, g, o: dpd.tree_mechanism(
                        frame(leaf=[0, INT, 1, 2]), "leaf", 8, epsilon=1.0, accountant=a,
                        rng=g).compute()),
                ],
                "dpfast.dask.group_by": [
                    Case(lambda a, g, o: dpd.group_by(
                        frame(k=[INT, 2], v=[FLOAT, NAN]), "k", keys=[INT, 2])
                        .agg(m=("v", "mean"), bounds={"v": (0.0, 1.0)}, epsilon=1.0,
                             accountant=a, rng=g)),
                ],
                "dpfast.dask.GroupBy": [
                    Case(lambda a, g, o: dpd.GroupBy(
                        frame(k=[TEXT, "b"], u=[INT, 3], v=[FLOAT, NAN]), "k",
                        privacy_unit="u", max_rows=2, keys=[TEXT, "b"])
                        .agg(m=("v", "mean"), bounds={"v": (0.0, 1.0)}, epsilon=1.0,
                             accountant=a, rng=g)),
                ],
            })
    return cases


#: Public names that take no private data: each with the reason.
NO_DATA = {
    "dpfast.Accountant": "a budget: epsilon, delta, rho, group size and a ledger path, all "
                         "public",
    "dpfast.Lease": "a slice of a budget (Accountant.lease): epsilon, delta, rho and labels, "
                    "all public",
    "dpfast.AuditResult": "a result record of audit, built by it",
    "dpfast.audit": "takes the caller's own test inputs and passes them to the caller's "
                    "mechanism unread; its own checks are on public parameters",
    "dpfast.default_accountant": "takes no arguments",
    "dpfast.discrete_gaussian": "a noise sampler: sigma, size, rng, threads (rng: "
                                "dpfast.laplace's case)",
    "dpfast.discrete_laplace": "a noise sampler, as dpfast.laplace",
    "dpfast.gaussian": "a noise sampler, as dpfast.laplace",
    "dpfast.uniform": "a noise sampler, as dpfast.laplace",
    "dpfast.gaussian_granularity": "a noise parameter (sigma) only",
    "dpfast.laplace_granularity": "a noise parameter (scale) only",
    "dpfast.gaussian_sigma": "privacy parameters only",
    "dpfast.laplace_privacy_loss": "privacy parameters only",
    "dpfast.max_error_bound": "privacy parameters and a count of queries only",
    "dpfast.exponential_mechanism_utility_gap": "privacy parameters and a count of "
                                                "candidates only",
    "dpfast.rr_epsilon": "a privacy parameter (p) only",
    "dpfast.rr_categorical_probabilities": "privacy parameters and k only",
    "dpfast.rr_response_probabilities": "privacy parameters only",
    "dpfast.rr_proportion_variance": "a released (noisy) proportion, n and privacy "
                                     "parameters",
    "dpfast.marginal_error_bound": "a public domain and privacy parameters",
    "dpfast.marginal_variance": "a public domain and privacy parameters",
    "dpfast.mwem_error_bound": "public sizes and privacy parameters",
    "dpfast.smalldb_error_bound": "public sizes and privacy parameters",
    "dpfast.linear.smalldb_size": "public sizes and alpha",
    "dpfast.postprocess": "a module: its public names have their own rows",
    "dpfast.workloads": "a module: its public names have their own rows",
    "dpfast.linear.TreeRelease": "a release's result, built by tree_mechanism; its methods "
                                 "take public query ranges",
    "dpfast.linear.HierarchyRelease": "a release's result (noisy values), built by "
                                      "census_hierarchy; its methods take levels and beta",
    "dpfast.linear.MarginalRelease": "a release's result, built by marginals",
    "dpfast.linear.MWEMRelease": "a release's result, built by mwem",
    "dpfast.linear.SmallDBRelease": "a release's result, built by smalldb",
    "dpfast.linear.workloads.Identity": "a public workload (shape); answer() is the "
                                        "Workload row",
    "dpfast.linear.workloads.Prefixes": "a public workload, as Identity",
    "dpfast.linear.workloads.Ranges": "a public workload, as Identity",
    "dpfast.linear.workloads.Rectangles": "a public workload, as Identity",
    "dpfast.linear.workloads.Marginals": "a public workload, as Identity",
    "dpfast.linear.workloads.Conjunctions": "a public workload, as Identity",
    "dpfast.linear.workloads.Explicit": "a public workload given by its (public) query "
                                        "matrix, as Identity",
    "dpfast.linear.workloads.MAX_ANSWERS": "a constant",
    "dpfast.linear.workloads.TRUSTED": "a constant",
    "dpfast.linear.workloads.check_trusted": "checks a public workload object",
    "dpfast.dask.from_npy": "a file path and a chunk size, no values",
}

#: Cases in files whose owners have not yet removed the leak: xfail(strict) so that the fix
#: turns them into failures until the mark goes. Keyed by (name, index in its list).
LEAKS: dict[tuple[str, int], str] = {
}


def _public() -> dict[str, Any]:
    """Every public name once (the first module that exports an object names it)."""
    modules = [dp, dpfast.linear, dpfast.releases, dpfast.mechanisms, pp, wl]
    if dpd is not None:
        modules.append(dpd)
    names: dict[str, Any] = {}
    seen: set[int] = set()
    for module in modules:
        for name in module.__all__:
            obj = getattr(module, name)
            if callable(obj) or isinstance(obj, type(dp)):
                if id(obj) in seen:
                    continue
                seen.add(id(obj))
            names[f"{module.__name__}.{name}"] = obj
    return names


def _exempt(obj: Any) -> bool:
    return isinstance(obj, type) and issubclass(obj, BaseException)


CASES = _cases()


def test_every_public_name_has_a_case():
    public = _public()
    missing = [n for n, obj in public.items()
               if n not in CASES and n not in NO_DATA and not _exempt(obj)]
    assert not missing, f"public names without a bad-input case or a reason: {missing}"
    stale = [n for n in list(CASES) + list(NO_DATA)
             if n not in public and not n.endswith(".Workload")]
    assert not stale, f"rows for names that are not public: {stale}"


def _params() -> list[Any]:
    out = []
    for name, rows in CASES.items():
        for i, case in enumerate(rows):
            marks = list(case.marks)
            if (name, i) in LEAKS:
                marks.append(_leaks(LEAKS[(name, i)]))
            out.append(pytest.param(name, i, marks=marks, id=f"{name}-{i}"))
    return out


def _snapshot(rng: Any) -> Any:
    """A comparable copy of a ChaCha20's position (its key comes back as an array)."""
    s = rng.state
    return dict(s, state=dict(s["state"], key=tuple(int(k) for k in s["state"]["key"])))


def _draws(rng: Any) -> list[float]:
    return [float(x) for x in dp.uniform(4, rng=rng)]


@pytest.fixture(autouse=True, scope="module")
def _synchronous_dask():
    if dask is None:
        yield
        return
    with dask.config.set(scheduler="synchronous"):
        yield


@pytest.mark.parametrize("name, i", _params())
def test_bad_input_spends_nothing_draws_nothing_and_shows_no_value(name, i):
    case = CASES[name][i]
    acct, twin_acct = dp.Accountant(epsilon=100.0), dp.Accountant(epsilon=100.0)
    rng, twin = dp.ChaCha20(2024), dp.ChaCha20(2024)
    obj = case.build(acct, rng) if case.build else None
    if case.build:
        case.build(twin_acct, twin)
    spent, state = acct.spent, case.state(obj) if case.state else None
    with pytest.raises(case.exc) as info:
        case.call(acct, rng, obj)
    assert not isinstance(info.value, dp.BudgetExceededError), info.value
    assert acct.spent == spent == twin_acct.spent
    if not case.build:
        assert spent == (0.0, 0.0)
    else:
        assert case.state(obj) == state
    assert _snapshot(rng) == _snapshot(twin)
    assert _draws(rng) == _draws(twin)
    found = [f for t in texts(info.value) for f in leaked(t)]
    assert not found, f"{found} shown in: {texts(info.value)[0]}"


# -- the helpers of the rule ----------------------------------------------------------------

def test_leak_detector_finds_every_usual_formatting():
    for text in ("Got -41.2573", "got 41.26 at", "value -41.3", "4.12573e+01", "987654321",
                 "987,654,321", "9.87654e+08", "9.877e+08", "SECRET-MARKER-7",
                 "np.float64(-41.2573)", "9876543210000000000", "9.87654e+18",
                 str(HUGE)):
        assert leaked(text), text
    assert not leaked("an entry at index (1, 0) is NaN; epsilon=1.0, k=3")


@pytest.mark.parametrize("value, text", [
    (np.zeros((3, 2)), "an array of dtype float64 and shape (3, 2)"),
    (np.ma.masked_array([1, 2]), "a masked array of dtype int64 and shape (2,)"),
    ([1, 2, 3], "a list of 3 items"),
    ((1,), "a tuple of 1 items"),
    ({"a": 1, "b": 2}, "a dict of 2 entries"),
    (TEXT, "a str of 15 characters"),
    (FLOAT, "a float"),
    (NAN, "a NaN"),
    (float("inf"), "an infinity"),
    (True, "a bool"),
    (INT, "an int"),
    (np.float32(FLOAT), "a numpy float"),
    (None, "None"),
])
def test_describe_shows_kind_dtype_and_shape_only(value, text):
    assert dp.validation.describe(value) == text
    assert not leaked(dp.validation.describe(value))


def test_describe_pandas_and_arrow_without_values():
    if pd is not None:
        s = pd.Series([TEXT, "bob"], name=TEXT)
        assert dp.validation.describe(s) == "a pandas Series of dtype object and shape (2,)" \
            or dp.validation.describe(s).startswith("a pandas Series of dtype ")
        assert not leaked(dp.validation.describe(s))
        df = pd.DataFrame({"x": [FLOAT, 1.0]})
        assert "shape (2, 1)" in dp.validation.describe(df)
    if pa is not None:
        arr = pa.array([FLOAT, 1.0])
        assert dp.validation.describe(arr) == \
            "a pyarrow DoubleArray of type double and length 2"
        chunked = pa.chunked_array([[INT], [1]])
        assert dp.validation.describe(chunked).endswith("in 2 chunks")
        assert not leaked(dp.validation.describe(chunked))


def test_position_and_entry_at():
    v = dp.validation
    assert v.position(3) == "index 3"
    assert v.position((3, 1)) == "index (3, 1)"
    assert v.position((4,)) == "index 4"
    mask = np.array([[False, False], [True, False]])
    assert v.entry_at(mask, "is NaN") == "an entry at index (1, 0) is NaN"
    assert v.entry_at(np.array(True), "is NaN") == "a value that is NaN"
    err = v.fail_data(ValueError, "counts", "f", "finite", np.array([FLOAT]))
    assert str(err) == ("The 'counts' parameter of f must be finite. Got an array of dtype "
                        "float64 and shape (1,) instead.")


def test_the_rule_is_stated_in_the_validation_module():
    doc = importlib.import_module("dpfast.validation").__doc__
    assert "never by value" in doc and "kind and position" in doc
