"""Cases of other differential privacy libraries, for ``dpfast bench`` and ``bench/`` scripts.

Install them with ``pip install dpfast[compare]`` (diffprivlib, OpenDP, PyDP). Each library
that imports contributes :class:`dpfast.benchmarks.Case` records with ``impl="library"`` and
``threads=1``; one that is missing, or whose API differs from the one used here, contributes
nothing (see :func:`notes` for what was skipped and why).

These libraries are much slower than numpy and dpfast, so every case is measured on at most
a fixed number of elements chosen so that one call takes well under a second, and its time is
reported **per element, extrapolated from that measured size** to the run's size
(``extrapolated=True`` whenever the measured ``n`` is below the requested size). Inputs are
built once, outside the timed call; converting them to the Python lists a library takes is
therefore not timed, but anything the library does with them (validation, FFI conversion,
a Python loop over values) is.

Paths used, each library's fastest documented way to do the job, with the parameters of the
dpfast cases of :mod:`dpfast.benchmarks.suite` (scale 1, sigma 100, epsilon 1, 1,000
histogram bins):

diffprivlib (``diffprivlib.mechanisms`` randomise one value per call; no vectorized API)
    - laplace: ``mechanisms.Laplace(epsilon=1, sensitivity=1).randomise(v)`` for each value
      (at most 2*10^4 values);
    - discrete_laplace: ``mechanisms.Geometric(epsilon=1, sensitivity=1).randomise(v)`` for
      each value (at most 2*10^4);
    - gaussian: ``mechanisms.GaussianAnalytic(epsilon=1, delta=1e-6, sensitivity=1)
      .randomise(v)`` for each value (at most 2*10^4);
    - discrete_gaussian: ``mechanisms.GaussianDiscrete(epsilon, delta=1e-6)`` with epsilon
      chosen for sigma close to 100, ``.randomise(v)`` for each value (at most 2*10^3);
    - histogram: ``tools.histogram(codes, epsilon=1, bins=1000, range=(0, 1000))``, vectorized
      (at most 10^7 records);
    - exponential_mechanism: ``mechanisms.Exponential(epsilon=1, sensitivity=1,
      utility=scores).randomise()`` per selection, construction included since the scores are
      the data (at most 2*10^5 candidates);
    - noisy_max: ``mechanisms.PermuteAndFlip(epsilon=1, sensitivity=1, utility=scores)
      .randomise()`` likewise (at most 10^5 candidates).

OpenDP (``opendp.prelude`` with ``dp.enable_features("contrib")``; vector measurements, one
FFI call per release)
    - laplace: ``(vector_domain(atom_domain(T=float, nan=False)), l1_distance(T=float)) >>
      then_laplace(scale=1.0)`` on a list of floats (at most 2*10^4);
    - discrete_laplace: the same on ``atom_domain(T=int)`` / ``l1_distance(T=int)``, which
      samples the discrete Laplace (at most 5*10^4);
    - gaussian: ``(vector_domain(atom_domain(T=float, nan=False)), l2_distance(T=float)) >>
      then_gaussian(scale=1.0)`` (at most 5*10^3);
    - discrete_gaussian: ``then_gaussian(scale=100.0)`` on ``atom_domain(T=int)`` /
      ``l2_distance(T=int)`` (at most 2*10^4);
    - noisy_max: ``(vector_domain(atom_domain(T=float, nan=False)), linf_distance(T=float))
      >> then_noisy_max(output_measure, scale=2.0)`` with ``zero_concentrated_divergence()``
      (Gumbel noise, the numpy baseline's mechanism) and with ``max_divergence()``
      (exponential noise), at most 2*10^5 candidates.

PyDP (``pydp.algorithms.numerical_mechanisms``; one value per call, no vectorized API)
    - laplace: ``LaplaceMechanism(epsilon=1.0, sensitivity=1.0).add_noise(v)`` for each value
      (at most 10^5);
    - gaussian: ``GaussianMechanism(epsilon=1.0, delta=1e-6, sensitivity=1.0).add_noise(v)``
      for each value (at most 10^5).

diffprivlib 0.6.6 imports scikit-learn models when imported, and fails with
scikit-learn >= 1.8 (``cannot import name 'DOUBLE' from 'sklearn.tree._tree'``); it is then
skipped, with that reason in :func:`notes`.
"""
import importlib
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from .core import BASELINES, Case

if TYPE_CHECKING:
    from types import ModuleType

# Largest element counts measured per call (per-value Python loops are ~5-30 us/element).
CAP_PER_VALUE = 2 * 10**4
CAP_PER_VALUE_FAST = 10**5       # PyDP's add_noise (~4 us/element)
CAP_OPENDP_INT_LAPLACE = 5 * 10**4
CAP_DGAUSS_DIFFPRIVLIB = 2 * 10**3    # ~250 us/element at sigma 100
CAP_OPENDP_GAUSSIAN = 5 * 10**3       # ~50 us/element
CAP_PERMUTE_AND_FLIP = 10**5
CAP_SELECTION = 2 * 10**5
CAP_HISTOGRAM = 10**7
HISTOGRAM_BINS = 1000
DELTA = 1e-6

_notes: list[str] = []


def notes() -> list[str]:
    """Why libraries or cases were left out of the last :func:`cases` call.

    Returns
    -------
    list of str
    """
    return list(_notes)


def _import(name: str) -> "ModuleType | None":
    try:
        return importlib.import_module(name)
    except Exception as exc:          # missing, or broken by its own dependencies
        _notes.append(f"{name.split('.')[0]}: not available ({type(exc).__name__}: {exc})")
        return None


def cases(size: int) -> list[Case]:
    """Library cases for a run of ``size`` elements.

    Parameters
    ----------
    size : int
        Elements per call of the run (samples, records or candidates).

    Returns
    -------
    list of dpfast.benchmarks.Case
        One per available library and family; possibly empty.
    """
    size = int(size)
    if size < 1:
        raise ValueError(f"size must be an integer >= 1. Got {size!r} instead.")
    del _notes[:]
    out: list[Case] = []

    def add(lib: str, family: str, name: str, cap: int,
            build: Callable[[int], Callable[[], object]]) -> None:
        """``build(m)`` prepares inputs for ``m`` elements and returns the timed callable."""
        m = min(size, cap)
        try:
            build(min(m, 8))()        # a tiny trial call: fail here, not in the runner
            fn = build(m)
        except Exception as exc:
            _notes.append(f"{lib} {family}: skipped ({type(exc).__name__}: {exc})")
            return
        out.append(Case(name=name, family=family, impl="library", threads=1, n=m, fn=fn,
                        baseline=BASELINES.get(family), extrapolated=m < size))

    rng = np.random.default_rng(13)

    def floats(m: int) -> Any:
        return rng.normal(size=m).tolist()

    def ints(m: int) -> Any:
        return rng.integers(0, 1000, size=m).tolist()

    def scores(m: int) -> Any:
        # Same distribution as dpfast bench's selection scores.
        return (rng.normal(size=m) * 3.0).tolist()

    def per_value(mech: Any, values: list[Any]) -> Callable[[], list[Any]]:
        randomise = mech.randomise
        return lambda: [randomise(v) for v in values]

    # --- diffprivlib -------------------------------------------------------------------
    mechs = _import("diffprivlib.mechanisms")
    tools = _import("diffprivlib.tools") if mechs is not None else None
    if mechs is not None:
        add("diffprivlib", "laplace", "diffprivlib mechanisms.Laplace (per value)",
            CAP_PER_VALUE,
            lambda m: per_value(mechs.Laplace(epsilon=1.0, sensitivity=1.0), floats(m)))
        add("diffprivlib", "discrete_laplace", "diffprivlib mechanisms.Geometric (per value)",
            CAP_PER_VALUE,
            lambda m: per_value(mechs.Geometric(epsilon=1.0, sensitivity=1), ints(m)))
        add("diffprivlib", "gaussian", "diffprivlib mechanisms.GaussianAnalytic (per value)",
            CAP_PER_VALUE,
            lambda m: per_value(mechs.GaussianAnalytic(epsilon=1.0, delta=DELTA,
                                                       sensitivity=1.0), floats(m)))
        # epsilon 0.035 with delta 1e-6 gives sigma ~ 100, the dpfast case's sigma.
        add("diffprivlib", "discrete_gaussian",
            "diffprivlib mechanisms.GaussianDiscrete (per value)", CAP_DGAUSS_DIFFPRIVLIB,
            lambda m: per_value(mechs.GaussianDiscrete(epsilon=0.035, delta=DELTA), ints(m)))

        def dpl_selection(cls: Any) -> Callable[[int], Callable[[], object]]:
            def build(m: int) -> Callable[[], object]:
                u = scores(m)
                return lambda: cls(epsilon=1.0, sensitivity=1.0, utility=u).randomise()
            return build

        add("diffprivlib", "exponential_mechanism",
            "diffprivlib mechanisms.Exponential (build + randomise)", CAP_SELECTION,
            dpl_selection(mechs.Exponential))
        add("diffprivlib", "noisy_max",
            "diffprivlib mechanisms.PermuteAndFlip (build + randomise)", CAP_PERMUTE_AND_FLIP,
            dpl_selection(mechs.PermuteAndFlip))
    if tools is not None:
        def dpl_histogram(m: int) -> Callable[[], object]:
            import warnings
            codes = np.random.default_rng(7).integers(0, HISTOGRAM_BINS, size=m)

            def run() -> object:
                with warnings.catch_warnings():   # no accountant/bounds warnings per call
                    warnings.simplefilter("ignore")
                    return tools.histogram(codes, epsilon=1.0, bins=HISTOGRAM_BINS,
                                           range=(0, HISTOGRAM_BINS))
            return run

        add("diffprivlib", "histogram", "diffprivlib tools.histogram", CAP_HISTOGRAM,
            dpl_histogram)

    # --- OpenDP ------------------------------------------------------------------------
    odp = _import("opendp.prelude")
    if odp is not None:
        try:
            odp.enable_features("contrib")
        except Exception as exc:
            _notes.append(f"opendp: enable_features failed ({type(exc).__name__}: {exc})")
            odp = None
    if odp is not None:
        def odp_vector(T: type, metric: Callable[..., Any], then: Callable[[], Any],
                       data: Callable[[int], Any]) -> Callable[[int], Callable[[], object]]:
            def build(m: int) -> Callable[[], object]:
                space = (odp.vector_domain(odp.atom_domain(T=T, **({"nan": False}
                                                                    if T is float else {}))),
                         metric(T=T))
                meas = space >> then()
                x = data(m)
                return lambda: meas(x)
            return build

        add("opendp", "laplace", "OpenDP then_laplace (vector)", CAP_PER_VALUE,
            odp_vector(float, odp.l1_distance, lambda: odp.m.then_laplace(scale=1.0), floats))
        add("opendp", "discrete_laplace", "OpenDP then_laplace (vector of int)",
            CAP_OPENDP_INT_LAPLACE,
            odp_vector(int, odp.l1_distance, lambda: odp.m.then_laplace(scale=1.0), ints))
        add("opendp", "gaussian", "OpenDP then_gaussian (vector)", CAP_OPENDP_GAUSSIAN,
            odp_vector(float, odp.l2_distance, lambda: odp.m.then_gaussian(scale=1.0),
                       floats))
        add("opendp", "discrete_gaussian", "OpenDP then_gaussian (vector of int)",
            CAP_PER_VALUE,
            odp_vector(int, odp.l2_distance, lambda: odp.m.then_gaussian(scale=100.0), ints))
        # scale 2 = the baseline's argmax(u / 2 + gumbel) at epsilon 1, sensitivity 1.
        add("opendp", "noisy_max", "OpenDP then_noisy_max (zCDP, Gumbel)", CAP_SELECTION,
            odp_vector(float, odp.linf_distance,
                       lambda: odp.m.then_noisy_max(odp.zero_concentrated_divergence(),
                                                    scale=2.0), scores))
        add("opendp", "noisy_max", "OpenDP then_noisy_max (pure DP, exponential)",
            CAP_SELECTION,
            odp_vector(float, odp.linf_distance,
                       lambda: odp.m.then_noisy_max(odp.max_divergence(), scale=2.0),
                       scores))

    # --- PyDP --------------------------------------------------------------------------
    nm = _import("pydp.algorithms.numerical_mechanisms")
    if nm is not None:
        def pydp_per_value(make: Callable[[], Any]) -> Callable[[int], Callable[[], object]]:
            def build(m: int) -> Callable[[], object]:
                add_noise = make().add_noise
                x = floats(m)
                return lambda: [add_noise(v) for v in x]
            return build

        add("pydp", "laplace", "PyDP LaplaceMechanism.add_noise (per value)",
            CAP_PER_VALUE_FAST,
            pydp_per_value(lambda: nm.LaplaceMechanism(1.0, 1.0)))
        add("pydp", "gaussian", "PyDP GaussianMechanism.add_noise (per value)",
            CAP_PER_VALUE_FAST,
            pydp_per_value(lambda: nm.GaussianMechanism(1.0, DELTA, 1.0)))
    return out
