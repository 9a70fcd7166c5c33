"""``dpfast bench``: the throughput of every mechanism family next to numpy's nearest
equivalent, in one run.

From Python::

    import dpfast.benchmarks
    report = dpfast.benchmarks.run(size=10**6)
    print(report.to_text())

Inputs are prepared once, outside the timing; every call returns a fresh output array; each
case runs once as a warm-up (page faults, thread pools, SIMD dispatch), then the cases are
*interleaved* with their numpy baseline within each repeat so that machine noise (frequency
changes, other processes) hits them alike (:func:`dpfast.benchmarks.core.time_calls`); the
reported time is the median over repeats, with the min and max as spread. The ratio of a case
is ``baseline time / case time`` for the same number of elements, against a numpy baseline
measured in the same run ("x faster" when above 1). Other DP libraries, when installed, come
from :mod:`dpfast.benchmarks.libraries` and are measured after dpfast and numpy.
"""
import json
import math
import statistics
from typing import TYPE_CHECKING, Any, Callable, Collection, Iterable, Mapping, Sequence

import numpy as np

from . import libraries
from .core import (BASELINES, FAMILIES, Case, check_positive_int, fit_overhead, machine_info,
                   machine_line, time_calls)

if TYPE_CHECKING:
    import os

    from numpy.typing import NDArray

FLOOR_NAME = "floor (keystream + log + store)"
HISTOGRAM_BINS = 1000
QUICK_SIZE = 10**4
QUICK_REPEAT = 2
SCALING_SIZES = (10**3, 10**4, 10**5, 10**6, 10**7, 10**8)
QUICK_SCALING_SIZES = (10**3, 10**4, 10**5)
SCALING_FAMILIES = ("laplace", "exponential_mechanism")


def check_families(only: str | Iterable[str] | None) -> set[str] | None:
    """The benchmark families to run: ``None`` for all, else the set of names given.

    Parameters
    ----------
    only : str, iterable of str or None
        One family, several, or ``None`` for every family.

    Returns
    -------
    set of str or None
        The families named, or ``None`` when ``only`` is ``None``.

    Raises
    ------
    ValueError
        If a name is not one of :data:`~dpfast.benchmarks.core.FAMILIES`.
    """
    if only is None:
        return None
    only = [only] if isinstance(only, str) else list(only)
    unknown = [f for f in only if f not in FAMILIES]
    if unknown:
        raise ValueError(f"unknown benchmark family {unknown[0]!r}; choose from "
                         f"{', '.join(FAMILIES)}")
    return set(only)


def _thread_list(threads: int | Iterable[int] | None) -> list[int]:
    """``None`` -> [1, default threads] without duplicates, else the validated list."""
    from ..rng import default_threads
    if threads is None:
        threads = [1, default_threads()]
    elif isinstance(threads, (int, np.integer)):
        threads = [threads]
    out: list[int] = []
    for t in threads:
        t = check_positive_int(t, "threads")
        if t not in out:
            out.append(t)
    return out


def cases(size: int, threads: int | Iterable[int] | None,
          only: str | Iterable[str] | None = None) -> list[Case]:
    """The dpfast and numpy cases of a run.

    Parameters
    ----------
    size : int
        Elements per call: samples, records (histogram) or candidates (selection).
    threads : list of int
        Thread counts for the dpfast cases; numpy's samplers are single-threaded.
    only : iterable of str, optional
        Families to keep (see :data:`FAMILIES`); default all.

    Returns
    -------
    list of Case
        Inputs are built here, once, so that no timed call pays for them. dpfast calls use
        fixed-seed :class:`dpfast.ChaCha20` generators (reproducible, not for releases) and an
        unlimited :class:`dpfast.Accountant`.
    """
    import dpfast as dp

    n = check_positive_int(size, "size")
    threads = _thread_list(threads)
    keep = check_families(only)
    gen = np.random.Generator(np.random.PCG64(2))
    pcg = np.random.PCG64(1)
    cha = dp.ChaCha20(3)
    acct = dp.Accountant()
    out: list[Case] = []

    def add(family: str, name: str, impl: str, t: int, fn: Callable[[], object]) -> None:
        # A numpy baseline runs whenever a kept family is compared with it (numpy's laplace
        # serves discrete_laplace too, its normal discrete_gaussian).
        if (keep is None or family in keep
                or impl == "numpy" and any(BASELINES.get(f) == name for f in keep)):
            out.append(Case(name, family, impl, t, n, fn,
                            None if impl == "numpy" else BASELINES[family]))

    # make(t) builds the call on t threads; Callable[..., ...] because mypy cannot infer a
    # lambda with a default argument against Callable[[int], ...] (python/mypy#12557).
    def per_thread(family: str, name: str, make: Callable[..., Callable[[], object]]) -> None:
        for t in threads:
            add(family, name, "dpfast", t, make(t))

    # Samplers: numpy's nearest equivalents are its continuous samplers.
    add("laplace", BASELINES["laplace"], "numpy", 1, lambda: gen.laplace(0.0, 1.0, n))
    per_thread("laplace", "dp.laplace",
               lambda t: lambda: dp.laplace(1.0, n, rng=cha, threads=t))
    per_thread("discrete_laplace", "dp.discrete_laplace",
               lambda t: lambda: dp.discrete_laplace(1.0, n, rng=cha, threads=t))
    add("gaussian", BASELINES["gaussian"], "numpy", 1, lambda: gen.normal(0.0, 1.0, n))
    per_thread("gaussian", "dp.gaussian",
               lambda t: lambda: dp.gaussian(1.0, n, rng=cha, threads=t))
    per_thread("discrete_gaussian", "dp.discrete_gaussian",
               lambda t: lambda: dp.discrete_gaussian(100.0, n, rng=cha, threads=t))

    if keep is None or "histogram" in keep:
        codes = np.random.default_rng(7).integers(0, HISTOGRAM_BINS, size=n)
        add("histogram", BASELINES["histogram"], "numpy", 1,
            lambda: (np.bincount(codes, minlength=HISTOGRAM_BINS)
                     + gen.laplace(0.0, 1.0, HISTOGRAM_BINS)))
        per_thread("histogram", "dp.histogram (fused count + noise)",
                   lambda t: lambda: dp.histogram(codes, HISTOGRAM_BINS,
                                                  range=(0, HISTOGRAM_BINS), epsilon=1.0,
                                                  accountant=acct, rng=cha, threads=t))

    if keep is None or "noisy_counts" in keep:
        counts = np.random.default_rng(8).integers(0, 10**6, size=n)
        add("noisy_counts", BASELINES["noisy_counts"], "numpy", 1,
            lambda: counts + gen.laplace(0.0, 1.0, n))
        per_thread("noisy_counts", "dp.noisy_counts",
                   lambda t: lambda: dp.noisy_counts(counts, epsilon=1.0, accountant=acct,
                                                     rng=cha, threads=t))

    if keep is None or keep & {"exponential_mechanism", "noisy_max"}:
        u = np.random.default_rng(11).normal(size=n) * 3.0

        def naive_em() -> int:
            # exp / normalise / choice: what a numpy user writes for the exponential
            # mechanism.
            p = np.exp((u - u.max()) * 0.5)
            p /= p.sum()
            return gen.choice(n, p=p)

        add("exponential_mechanism", BASELINES["exponential_mechanism"], "numpy", 1,
            naive_em)
        per_thread("exponential_mechanism", "dp.exponential_mechanism",
                   lambda t: lambda: dp.exponential_mechanism(u, epsilon=1.0, accountant=acct,
                                                              rng=cha, threads=t))
        add("noisy_max", BASELINES["noisy_max"], "numpy", 1,
            lambda: np.argmax(u * 0.5 + gen.gumbel(size=n)))
        for noise in ("laplace", "exponential", "gumbel"):
            per_thread("noisy_max", f"dp.report_noisy_max {noise}",
                       lambda t, z=noise: lambda: dp.report_noisy_max(
                           u, epsilon=1.0, noise=z, accountant=acct, rng=cha, threads=t))
        per_thread("noisy_max", "dp.permute_and_flip",
                   lambda t: lambda: dp.permute_and_flip(u, epsilon=1.0, accountant=acct,
                                                         rng=cha, threads=t))

    if keep is None or "randomized_response" in keep:
        bits = (np.arange(n) % 3 == 0).astype(np.uint8)
        # p = 0.75 keeps a bit: the same scheme as epsilon = log 3 below.
        add("randomized_response", BASELINES["randomized_response"], "numpy", 1,
            lambda: np.where(gen.random(n) < 0.75, bits, 1 - bits))
        per_thread("randomized_response", "dp.randomized_response",
                   lambda t: lambda: dp.randomized_response(bits, epsilon=math.log(3),
                                                            accountant=acct, rng=cha,
                                                            threads=t))

    add("keystream", BASELINES["keystream"], "numpy", 1, lambda: pcg.random_raw(n))
    add("keystream", "dp.ChaCha20.random_raw", "dpfast", 1, lambda: cha.random_raw(n))

    if keep is None or "floor" in keep:
        # An estimate of the least any secure sampler here can cost per element: the
        # ChaCha20 words it consumes, one logarithm (every Laplace-type sampler takes one)
        # and one store. Timed on one thread, with its own generator so that it does not
        # change the others' streams.
        floor_rng = dp.ChaCha20(4)
        uniforms = np.random.default_rng(5).random(n) + 0.5
        logs = np.empty(n)

        def floor() -> None:
            floor_rng.random_raw(n)
            np.log(uniforms, out=logs)

        out.append(Case(FLOOR_NAME, "floor", "dpfast", 1, n, floor, None))
    return out


def _library_cases(size: int, only: str | Iterable[str] | None,
                   notes: list[str]) -> list[Case]:
    keep = check_families(only)
    try:
        raw = libraries.cases(size)
    except Exception as exc:   # a broken optional library must not stop the benchmark
        notes.append(f"library comparisons skipped: {type(exc).__name__}: {exc}")
        return []
    return [c for c in raw if keep is None or c.family in keep]


def _measure(todo: Sequence[Case], repeat: int) -> list[list[float]]:
    """Seconds per call of every case, each interleaved with its baseline only.

    Cases are grouped by the numpy baseline they are compared with (a baseline with its
    cases; the floor alone), and the groups are timed one after another. A round then lasts
    well under a second, so that a ratio compares calls made close together; rounds of every
    case at once last several seconds at 10**7 elements, long enough for a virtual machine
    that returns freed memory to its host (free page reporting) to make every fresh array
    fault its pages in again - seen here to triple numpy's exponential mechanism.
    """
    groups: dict[str, list[int]] = {}
    for i, c in enumerate(todo):
        groups.setdefault(c.baseline or c.name, []).append(i)
    times: list[Any] = [None] * len(todo)      # every entry is set below
    for idx in groups.values():
        for i, ts in zip(idx, time_calls([todo[i].fn for i in idx], repeat)):
            times[i] = ts
    return times


def _results(todo: Sequence[Case], times: Sequence[Sequence[float]]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for c, ts in zip(todo, times):
        per = [t / c.n * 1e9 for t in ts]
        ns = statistics.median(per)
        rows.append({"name": c.name, "family": c.family, "impl": c.impl,
                     "threads": c.threads, "n": c.n, "median_ns_per_element": ns,
                     "spread_ns_per_element": [min(per), max(per)],
                     "elements_per_s": 1e9 / ns, "baseline": c.baseline,
                     "ratio_vs_baseline": None, "extrapolated": bool(c.extrapolated),
                     "seconds_per_call": statistics.median(ts)})
    base = {r["name"]: r["median_ns_per_element"] for r in rows if r["impl"] == "numpy"}
    for r in rows:
        if r["baseline"] in base:
            r["ratio_vs_baseline"] = base[r["baseline"]] / r["median_ns_per_element"]
    order = {f: i for i, f in enumerate(FAMILIES)}
    impl_order = {"numpy": 0, "dpfast": 1, "library": 2}
    rows.sort(key=lambda r: (order.get(r["family"], len(order)),
                             impl_order.get(r["impl"], 3), r["name"], r["threads"]))
    return rows


def scaling(sizes: Iterable[int] = SCALING_SIZES,
            threads: int | Iterable[int] | None = (1, 2),
            families: Sequence[str] = SCALING_FAMILIES,
            repeat: int = 5) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Time per call against size and threads, and the fixed-overhead / per-element fit.

    Parameters
    ----------
    sizes : sequence of int
        Elements per call; 10**8 needs about 2 GB of memory for the exponential mechanism.
    threads : sequence of int
    families : sequence of {"laplace", "exponential_mechanism"}
    repeat : int
        Interleaved repeats per size (median reported), after one warm-up.

    Returns
    -------
    (list of dict, list of dict)
        Rows ``family, threads, size, seconds_per_call, ns_per_element`` and fits
        ``family, threads, overhead_s, per_element_ns``.
    """
    import dpfast as dp

    repeat = check_positive_int(repeat, "repeat")
    threads = _thread_list(threads)
    for f in families:
        if f not in SCALING_FAMILIES:
            raise ValueError(f"scaling covers {', '.join(SCALING_FAMILIES)}; got {f!r}")
    cha = dp.ChaCha20(31)
    acct = dp.Accountant()
    rows: list[dict[str, Any]] = []
    for size in sizes:
        size = check_positive_int(size, "sizes")
        todo: list[Case] = []
        u: NDArray[np.float64] | None = None
        for f in families:
            if f == "exponential_mechanism" and u is None:
                u = np.random.default_rng(32).normal(size=size) * 3.0
            for t in threads:
                if f == "laplace":
                    fn = (lambda t=t, s=size: dp.laplace(1.0, s, rng=cha, threads=t))
                else:
                    fn = (lambda t=t, u=u: dp.exponential_mechanism(
                        u, epsilon=1.0, accountant=acct, rng=cha, threads=t))
                todo.append(Case(f, f, "dpfast", t, size, fn))
        for c, ts in zip(todo, _measure(todo, repeat)):
            sec = statistics.median(ts)
            rows.append({"family": c.family, "threads": c.threads, "size": size,
                         "seconds_per_call": sec, "ns_per_element": sec / size * 1e9})
        del u, todo
    fits: list[dict[str, Any]] = []
    for f in families:
        for t in threads:
            pts = [r for r in rows if r["family"] == f and r["threads"] == t]
            overhead, per = fit_overhead([r["size"] for r in pts],
                                         [r["seconds_per_call"] for r in pts])
            fits.append({"family": f, "threads": t, "overhead_s": overhead,
                         "per_element_ns": per * 1e9})
    return rows, fits


class Report:
    """The outcome of :func:`run`.

    Attributes
    ----------
    machine : dict
        See :func:`machine_info`.
    results : list of dict
        One per case, sorted by family: ``name, family, impl, threads, n,
        median_ns_per_element, spread_ns_per_element`` (min, max over repeats),
        ``elements_per_s, baseline, ratio_vs_baseline`` (baseline time / case time; ``None``
        for the baselines), ``extrapolated, seconds_per_call``.
    scaling, fits : list of dict
        From :func:`scaling`; empty unless asked for.
    settings : dict
        ``size, threads, repeat, quick``.
    notes : list of str
    """

    def __init__(self, machine: dict[str, Any], results: Iterable[dict[str, Any]],
                 settings: Mapping[str, Any], scaling: Iterable[dict[str, Any]] = (),
                 fits: Iterable[dict[str, Any]] = (), notes: Iterable[str] = ()) -> None:
        self.machine = machine
        self.results = list(results)
        self.settings = dict(settings)
        self.scaling = list(scaling)
        self.fits = list(fits)
        self.notes = list(notes)

    def to_dict(self) -> dict[str, Any]:
        """Everything, JSON-ready."""
        return {"machine": self.machine, "settings": self.settings, "results": self.results,
                "scaling": self.scaling, "fits": self.fits, "notes": self.notes}

    def to_json(self, path: "str | os.PathLike[str]") -> None:
        """Write :meth:`to_dict` to ``path``."""
        with open(path, "w") as f:
            json.dump(self.to_dict(), f, indent=2)
            f.write("\n")

    def _header(self) -> str:
        s = self.settings
        return (f"n = {s['size']:,} elements per call (records for the histogram, candidates "
                f"for selection), median of {s['repeat']} interleaved repeats after a warm-up")

    @staticmethod
    def _rel(r: Mapping[str, Any]) -> str:
        if r["ratio_vs_baseline"] is None:
            return "(baseline)" if r["impl"] == "numpy" else ""
        ratio = r["ratio_vs_baseline"]
        if ratio >= 1:
            return f"{ratio:.2f}x faster than {r['baseline']}"
        return f"{1 / ratio:.2f}x slower than {r['baseline']}"

    def to_text(self) -> str:
        """The plain-text table, machine line and notes."""
        lines = [f"Machine: {machine_line(self.machine)}", self._header(), ""]
        w = max([len(r["name"]) + (1 if r["extrapolated"] else 0) for r in self.results]
                + [4]) + 2
        ns = [f"{r['median_ns_per_element']:.2f}" for r in self.results]
        span = ["{:.2f}..{:.2f}".format(*r["spread_ns_per_element"]) for r in self.results]
        wn = max([len(x) for x in ns] + [7]) + 2
        ws = max([len(x) for x in span] + [8]) + 2
        lines.append(f"{'case':<{w}}{'threads':>7}{'ns/elem':>{wn}}{'min..max':>{ws}}"
                     f"{'M elem/s':>10}   vs baseline")
        family = None
        for r, n_s, sp in zip(self.results, ns, span):
            if family is not None and r["family"] != family:
                lines.append("")
            family = r["family"]
            name = r["name"] + ("*" if r["extrapolated"] else "")
            lines.append(f"{name:<{w}}{r['threads']:>7}{n_s:>{wn}}{sp:>{ws}}"
                         f"{r['elements_per_s'] / 1e6:>10.1f}   {self._rel(r)}")
        lines += self._footer()
        return "\n".join(lines)

    def _footer(self) -> list[str]:
        out: list[str] = []
        if any(r["extrapolated"] for r in self.results):
            out.append("* measured on fewer elements per call (see n in --json) and "
                       "taken per element")
        if any(r["family"] == "floor" for r in self.results):
            out.append(f"{FLOOR_NAME}: ChaCha20 words + one log + one store per element on "
                       "one thread, an estimate of the least any secure sampler here costs.")
        if self.scaling:
            out += ["", "Scaling (seconds per call and ns per element against size):"]
            for f in self.fits:
                pts = [r for r in self.scaling
                       if r["family"] == f["family"] and r["threads"] == f["threads"]]
                out.append(f"  {f['family']}, {f['threads']} thread(s): " + ", ".join(
                    f"n={r['size']:.0e} {r['seconds_per_call'] * 1e3:.3g} ms "
                    f"({r['ns_per_element']:.3g} ns/elem)" for r in pts))
                out.append(f"    fixed overhead per call {f['overhead_s'] * 1e6:.1f} us, "
                           f"cost per element {f['per_element_ns']:.2f} ns")
        out += [f"note: {n}" for n in self.notes]
        return [""] + out if out else []

    def to_markdown(self) -> str:
        """The README table: machine line, then one Markdown row per case."""
        lines = [f"Machine: {machine_line(self.machine)}", "", self._header(), "",
                 "| case | threads | ns/element | M elements/s | vs numpy |",
                 "|---|---:|---:|---:|---|"]
        for r in self.results:
            name = r["name"] + (" *" if r["extrapolated"] else "")
            lines.append(f"| {name} | {r['threads']} | {r['median_ns_per_element']:.2f} | "
                         f"{r['elements_per_s'] / 1e6:.1f} | {self._rel(r)} |")
        lines += self._footer()
        return "\n".join(lines)

    def plot(self, path: "str | os.PathLike[str]") -> None:
        """Horizontal bars of the ratio vs baseline per case, to a PNG at ``path``.

        Needs matplotlib (ImportError otherwise).
        """
        import matplotlib                      # noqa: F401  (ImportError when missing)
        # Object-oriented API on the Agg canvas: no display, and no pyplot backend switched
        # under a caller working in a notebook.
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure

        rows = [r for r in self.results if r["ratio_vs_baseline"] is not None]
        labels = [f"{r['name']} ({r['threads']} thr)" for r in rows]
        ratios = [r["ratio_vs_baseline"] for r in rows]
        fig = Figure(figsize=(9, 1.5 + 0.3 * max(len(rows), 1)), layout="constrained")
        FigureCanvasAgg(fig)
        ax = fig.subplots()
        y = np.arange(len(rows))[::-1]
        colors = ["tab:blue" if r["impl"] == "dpfast" else "tab:orange" for r in rows]
        ax.barh(y, ratios, color=colors)
        ax.set_yticks(y, labels)
        ax.axvline(1.0, color="0.3", lw=1)
        if ratios and max(ratios) / min(ratios) > 20:
            ax.set_xscale("log")
        ax.set_xlabel("numpy baseline time / case time (> 1: faster than numpy)")
        ax.set_title(f"dpfast bench, n = {self.settings['size']:,}: "
                     f"{self.machine['cpu']}", fontsize=9)
        fig.savefig(path, format="png", dpi=100)


def run(size: int = 10**7, threads: int | Iterable[int] | None = None, repeat: int = 7,
        only: str | Collection[str] | None = None, quick: bool = False,
        include_libraries: bool = True, scaling_too: bool = False) -> Report:
    """Benchmark every mechanism family against numpy in one run.

    Parameters
    ----------
    size : int, optional
        Elements per call (samples, records, candidates); ``quick`` makes it 10**4.
    threads : int or list of int, optional
        Thread counts of the dpfast cases; default ``[1, default threads]``.
    repeat : int, optional
        Timed repeats after one warm-up (median reported); ``quick`` makes it 2.
    only : str or iterable of str, optional
        Families to run (see :data:`FAMILIES`).
    quick : bool, optional
        A smoke run of seconds: size 10**4, 2 repeats, scaling on 10**3..10**5 only.
    include_libraries : bool, optional
        Add the cases of the other DP libraries that are installed
        (:mod:`dpfast.benchmarks.libraries`).
    scaling_too : bool, optional
        Also run :func:`scaling` (off by default: the large sizes take time and memory).

    Returns
    -------
    Report
    """
    if quick:
        size, repeat = QUICK_SIZE, QUICK_REPEAT
    size = check_positive_int(size, "size")
    repeat = check_positive_int(repeat, "repeat")
    threads = _thread_list(threads)
    notes: list[str] = []
    only = None if only is None else [only] if isinstance(only, str) else list(only)
    todo = cases(size, threads, only)
    times = _measure(todo, repeat)
    if include_libraries:
        # Measured afterwards, not interleaved: importing and running some of these
        # libraries leaves thread pools behind that slow down multi-threaded cases measured
        # after them (seen here with diffprivlib's scikit-learn stack and OpenDP).
        lib = _library_cases(size, only, notes)
        todo, times = todo + lib, times + _measure(lib, repeat)
    results = _results(todo, times)
    rows: list[dict[str, Any]]
    fits: list[dict[str, Any]]
    rows, fits = [], []
    if scaling_too:
        rows, fits = scaling(QUICK_SCALING_SIZES if quick else SCALING_SIZES,
                             threads=threads, repeat=repeat)
    return Report(machine_info(), results,
                  {"size": size, "threads": threads, "repeat": repeat, "quick": quick},
                  rows, fits, notes)
