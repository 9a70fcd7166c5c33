"""What every dpfast benchmark shares: the shape of a case, the families and their numpy
baselines, how calls are timed, and the machine they ran on.

``dpfast bench`` (:mod:`dpfast.benchmarks.suite`), the peer-library cases
(:mod:`dpfast.benchmarks.libraries`) and the scripts in ``bench/`` all time calls with
:func:`time_calls` and describe the machine with :func:`machine_line`, so their figures differ
only by what the machine does.
"""
import os
import platform
import time
from typing import TYPE_CHECKING, Any, Callable, Mapping, NamedTuple, Optional, Sequence

import numpy as np

if TYPE_CHECKING:
    from numpy.typing import NDArray


class Case(NamedTuple):
    """One benchmarked call.

    Attributes
    ----------
    name : str
        Label shown in the table, e.g. ``"dp.laplace"`` or ``"numpy Generator.laplace"``.
    family : str
        One of :data:`FAMILIES` (``--only`` selects on it).
    impl : {"dpfast", "numpy", "library"}
    threads : int
        Threads the call uses (1 for numpy and most libraries).
    n : int
        Elements one call handles: samples, records or candidates.
    fn : callable
        Takes no arguments; one timed call.
    baseline : str or None
        Name of the numpy case the ratio is taken against; ``None`` for the baselines
        themselves.
    extrapolated : bool
        True when ``n`` is smaller than the run's size (a slow library measured on fewer
        elements, its per-element numbers taken to hold at the full size).
    """
    name: str
    family: str
    impl: str
    threads: int
    n: int
    fn: Callable[[], object]
    baseline: Optional[str] = None
    extrapolated: bool = False


# Family names, in table order.
FAMILIES = ("laplace", "discrete_laplace", "gaussian", "discrete_gaussian", "histogram",
            "noisy_counts", "exponential_mechanism", "noisy_max", "randomized_response",
            "keystream", "floor")

# The numpy baseline of each family: the nearest thing a numpy user would write.
BASELINES = {
    "laplace": "numpy Generator.laplace",
    "discrete_laplace": "numpy Generator.laplace",
    "gaussian": "numpy Generator.normal",
    "discrete_gaussian": "numpy Generator.normal",
    "histogram": "numpy bincount + Generator.laplace",
    "noisy_counts": "numpy Generator.laplace + add",
    "exponential_mechanism": "numpy exp/normalise/choice",
    "noisy_max": "numpy argmax(u + gumbel)",
    "randomized_response": "numpy where(random < p)",
    "keystream": "numpy PCG64.random_raw",
}


def check_positive_int(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name} must be an integer >= 1. Got {value!r} instead.")
    return int(value)


def time_calls(fns: Sequence[Callable[[], object]], repeat: int) -> list[list[float]]:
    """Seconds per call of each function, measured the way every dpfast benchmark measures.

    Each function is called once as a warm-up (page faults, thread pools, SIMD dispatch);
    then, ``repeat`` times, each is called once in turn, so that machine noise (frequency
    changes, other processes) hits all of them alike. Every dpfast benchmark uses it.

    Parameters
    ----------
    fns : sequence of callable
        Each takes no arguments.
    repeat : int
        Timed rounds.

    Returns
    -------
    list of list of float
        ``repeat`` times in seconds for each function, in the order given.
    """
    repeat = check_positive_int(repeat, "repeat")
    times: list[list[float]] = [[] for _ in fns]
    for fn in fns:
        fn()
    for _ in range(repeat):
        for i, fn in enumerate(fns):
            t0 = time.perf_counter()
            fn()
            times[i].append(time.perf_counter() - t0)
    return times


def machine_info() -> dict[str, Any]:
    """CPU, cores, memory, numpy and its SIMD support, dpfast's kernels and threads.

    Returns
    -------
    dict
    """
    import dpfast as dp
    from .. import _native
    from ..rng import default_threads

    cpu = platform.processor() or platform.machine() or "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        with open("/proc/meminfo") as f:
            mem_gib = round(int(f.readline().split()[1]) / 2**20, 1)
    except (OSError, ValueError, IndexError):
        mem_gib = None
    return {"cpu": cpu, "cores": os.cpu_count(), "memory_gib": mem_gib,
            "python": platform.python_version(), "numpy": np.__version__,
            "numpy_simd": _numpy_simd(), "dpfast": dp.__version__,
            "simd": _native.simd_impl(), "threads_available": _native.have_threads(),
            "default_threads": default_threads()}


def _numpy_simd() -> str:
    """The SIMD extensions numpy dispatches to on this CPU; private modules, so guarded."""
    mod: Any = None
    for path in ("numpy._core._multiarray_umath", "numpy.core._multiarray_umath"):
        try:
            mod = __import__(path, fromlist=["_"])
            break
        except ImportError:
            continue
    try:
        found = mod.__cpu_features__
        listed = list(mod.__cpu_baseline__) + list(mod.__cpu_dispatch__)
        on = [f for f in listed if found.get(f)]
        return " ".join(on) if on else "none"
    except AttributeError:
        return "unknown"


def machine_line(m: Mapping[str, Any]) -> str:
    """One-line description of the dict from :func:`machine_info`."""
    mem = f"{m['memory_gib']:.0f} GiB" if m["memory_gib"] else "? GiB"
    return (f"{m['cpu']}, {m['cores']} cores, {mem}; Python {m['python']}, numpy "
            f"{m['numpy']} (SIMD: {m['numpy_simd']}), dpfast {m['dpfast']} (keystream and "
            f"samplers {m['simd']}, threads {'on' if m['threads_available'] else 'off'}, "
            f"default threads {m['default_threads']})")


def fit_overhead(sizes: "Sequence[float] | NDArray[Any]",
                 seconds: "Sequence[float] | NDArray[Any]") -> tuple[float, float]:
    """Least-squares ``seconds = overhead + n * per_element``, both non-negative.

    Residuals are relative (each divided by its time) so that the small sizes, which carry
    the overhead, are not drowned by the large ones, which carry the per-element cost.

    Parameters
    ----------
    sizes, seconds : sequence of float
        Elements per call and seconds per call.

    Returns
    -------
    (float, float)
        Fixed overhead per call in seconds and cost per element in seconds.
    """
    n = np.asarray(sizes, float)
    t = np.asarray(seconds, float)
    w = 1.0 / t
    a = np.column_stack([w, n * w])
    overhead, per = np.linalg.lstsq(a, np.ones_like(t), rcond=None)[0]
    # Measurement noise can push one coefficient below zero; the constrained optimum is then
    # on that boundary, a one-parameter fit of the other.
    if overhead < 0:
        overhead, per = 0.0, np.sum(n * w * w * t) / np.sum((n * w) ** 2)
    elif per < 0:
        overhead, per = np.sum(w * w * t) / np.sum(w * w), 0.0
    return max(float(overhead), 0.0), max(float(per), 0.0)
