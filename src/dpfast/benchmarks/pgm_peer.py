"""Private-PGM's AIM and MST as a peer for the Adult marginal-table benchmark.

The peer runs in a spawned child process, killed after a timeout, in a scratch directory of
its own, with a package directory *apart* from dpfast's environment put first on the
child's ``sys.path`` (dpfast never imports ``mbi`` itself).

Setting up the package directory (what was installed here, 2026-11-26, in ``/tmp/mbi-target``,
625 MB)::

    .venv/bin/python -m pip install --target /tmp/mbi-target mbi==2.0.0

installs mbi 2.0.0 (Private-PGM, McKenna, Sheldon & Miklau 2019; the newest on PyPI) with
jax 0.10.2, jaxlib 0.10.2 (CPU), chex 0.1.92, optax 0.2.8, ml_dtypes 0.6.0, opt_einsum 3.4.0,
networkx 3.6.1, attrs 26.1.0, absl-py 2.5.1, toolz 1.2.0, typing_extensions 4.16.0, numpy
2.4.6 and scipy 1.17.1 (numpy, the only one of them dpfast imports before the child reaches
the directory, is the same version in dpfast's environment). The mechanisms themselves are
not in the mbi package (neither its wheel nor its sdist): AIM (McKenna et al. 2022) and MST
live in the repository's ``mechanisms/`` folder. Unmodified copies of ``aim.py``, ``mst.py``,
``mechanism.py`` and ``cdp2adp.py`` from github.com/ryan112358/mbi at commit 361705d
(2026-07-22, the newest stored; its pyproject says 1.3.0) go in ``<target>/mechanisms/``;
the child loads ``aim.py`` or ``mst.py`` from there by path. They also import pandas and
matplotlib, taken from dpfast's environment.

Those files were written against mbi 1.3.0. Two names changed in 2.0.0, so the child, and
only the child, bridges them before loading a mechanism: ``Domain.attrs`` (used by MST) reads
``Domain.attributes``, and ``estimate(..., potentials=p)`` (AIM's warm start) is passed on as
``warm_start=p``, which expands the potentials to the measured cliques as 1.3.0 did. Nothing
else in the mechanisms is changed.

The run, per ``method``:

- ``"aim"``: ``AIM(epsilon, delta)`` with its defaults (``max_model_size=80`` MB,
  ``max_iters=1000`` mirror-descent steps per fit, ``16 * 8 = 128`` rounds at most), workload
  every k-way set of the 8 columns with weight 1. Errors from the fitted model's marginals
  (``model.project(cols).datavector()``).
- ``"mst"``: ``MST(data, epsilon, delta)``, which returns synthetic records only (its model
  lives on a compressed domain inside the function); errors from those records' tables.

Both turn (epsilon, delta) into a zCDP rho with ``cdp2adp.cdp_rho``: the smallest rho whose
conversion by Canonne, Kamath & Steinke (2020, Proposition 12, with a binary search over the
Renyi order) gives (epsilon, delta)-DP. Noise and sampling draw from numpy's global
generator, seeded with ``seed``; jax runs on its defaults (CPU, float32), its persistent
compilation cache off as mbi advises.

Figures: ``seconds`` is the mechanism's run (fitting, selection, and AIM's closing synthetic
sample) plus answering every k-way table, jax compilation included; loading the data and
importing mbi are not counted. ``l1_2way`` and ``l1_3way`` are the mean over all 28 two-way
and all 56 three-way tables of the l1 distance to the true table divided by the number of
records (32,561), as in ``dpfast bench --linear``.

Measured here once each (epsilon 1, delta 1e-9, seed 0, k 2; 2 shared cores, load about 1.5,
the child at nice 10): MST 16.1 s, 2-way 0.0843, 3-way 0.1868 (from its records); AIM
154.8 s, 2-way 0.0378, 3-way 0.0974 (from its model), 178 s wall for the whole child.
"""
from __future__ import annotations

import contextlib
import importlib.util
import inspect
import itertools
import multiprocessing
import os
import queue
import shutil
import sys
import tempfile
import time
import warnings
from typing import Any

import numpy as np

__all__ = ["METHODS", "DEFAULT_TARGET", "available", "run", "run_child"]

#: The peer's methods and the mechanism file each loads from ``<target>/mechanisms``.
METHODS = {"aim": "aim.py", "mst": "mst.py"}
#: Where the package directory was made here (see the module docstring).
DEFAULT_TARGET = "/tmp/mbi-target"
#: Every file a run needs under ``target``.
_NEEDED = ("mbi/__init__.py", "mechanisms/aim.py", "mechanisms/mst.py",
           "mechanisms/mechanism.py", "mechanisms/cdp2adp.py")


def available(target: str = DEFAULT_TARGET) -> bool:
    """Whether ``target`` holds mbi and the AIM and MST mechanism files (nothing imported).

    Parameters
    ----------
    target : str
        The package directory made apart from dpfast's environment.

    Returns
    -------
    bool
    """
    return all(os.path.isfile(os.path.join(target, f)) for f in _NEEDED)


def _result(outcome: str, seconds: float | None = None, l1_2way: float | None = None,
            l1_3way: float | None = None, version: str | None = None,
            error: str | None = None) -> dict[str, Any]:
    return {"seconds": seconds, "l1_2way": l1_2way, "l1_3way": l1_3way,
            "outcome": outcome, "version": version, "error": error}


def _check(method: str, epsilon: float, delta: float, seed: int, k: int) -> None:
    if not isinstance(method, str) or method not in METHODS:
        raise ValueError(f"The 'method' parameter of pgm_peer.run must be one of "
                         f"{sorted(METHODS)}. Got {method!r} instead.")
    if isinstance(epsilon, bool) or not (isinstance(epsilon, (int, float))
                                         and 0 < epsilon < float("inf")):
        raise ValueError(f"The 'epsilon' parameter of pgm_peer.run must be a float in "
                         f"(0, inf). Got {epsilon!r} instead.")
    if not (isinstance(delta, (int, float)) and 0 < delta < 1):
        raise ValueError(f"The 'delta' parameter of pgm_peer.run must be a float in (0, 1) "
                         f"(the mechanisms need delta > 0). Got {delta!r} instead.")
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**32:
        raise ValueError(f"The 'seed' parameter of pgm_peer.run must be an int in "
                         f"[0, 2**32). Got {seed!r} instead.")
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= 3:
        raise ValueError(f"The 'k' parameter of pgm_peer.run must be 1, 2 or 3. "
                         f"Got {k!r} instead.")


def _bridge_mbi_2(mbi: Any) -> None:
    """Give mbi 2.x the two 1.3 names the repository's mechanisms use (see the module
    docstring); a no-op where mbi still has them."""
    if not hasattr(mbi.Domain, "attrs"):
        mbi.Domain.attrs = property(lambda self: self.attributes)
    estimate = mbi.estimation.Estimator.estimate
    if "potentials" in inspect.signature(estimate).parameters:
        return

    def estimate_with_potentials(self: Any, *args: Any, potentials: Any = None,
                                 **kwargs: Any) -> Any:
        if potentials is not None:
            kwargs["warm_start"] = potentials
        return estimate(self, *args, **kwargs)
    mbi.estimation.Estimator.estimate = estimate_with_potentials


def _load_mechanism(target: str, method: str) -> Any:
    """The mechanism file as a module, loaded by path (it puts its own folder on sys.path
    for ``mechanism`` and ``cdp2adp``)."""
    path = os.path.join(target, "mechanisms", METHODS[method])
    spec = importlib.util.spec_from_file_location(f"_pgm_peer_{method}", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _counts(codes: dict[str, np.ndarray], cols: tuple[str, ...],
            sizes: dict[str, int]) -> np.ndarray:
    """The table of ``cols`` (axes in that order) from per-column codes."""
    shape = tuple(sizes[c] for c in cols)
    flat = np.ravel_multi_index(tuple(np.asarray(codes[c], dtype=np.int64) for c in cols),
                                shape)
    return np.bincount(flat, minlength=int(np.prod(shape))).reshape(shape).astype(np.float64)


def _model_table(model: Any, cols: tuple[str, ...]) -> np.ndarray:
    """The model's table of ``cols``, axes put in the order of ``cols`` whatever order mbi
    returns them in."""
    factor = model.project(cols)
    axes = tuple(factor.domain.attributes)
    table = np.asarray(factor.datavector(flatten=False), dtype=np.float64)
    return np.transpose(table, [axes.index(c) for c in cols])


def run_child(method: str, epsilon: float, delta: float, seed: int, k: int,
              target: str, wide: bool = False) -> dict[str, Any]:
    """Run mbi's AIM or MST on the Adult table; meant for a child process (see :func:`run`).

    It puts ``target`` first on ``sys.path`` and imports jax and mbi from there, patching
    mbi's classes in this process: call it directly only in a process you can throw away.

    Parameters
    ----------
    method : {"aim", "mst"}
    epsilon, delta : float
        The (epsilon, delta)-DP budget of the whole run (mbi's ``cdp_rho`` turns it into rho).
    seed : int
        Seeds numpy's global generator, which the mechanisms and mbi's sampling draw from.
    k : int
        AIM's workload is every k-way set of columns (weight 1); the timed answers are the
        k-way tables for both methods.
    target : str
        The package directory holding mbi and ``mechanisms/``.
    wide : bool
        The wide table instead (:func:`dpfast.benchmarks.adult.adult_wide`: 14 columns);
        ``l1_3way`` is then None.

    Returns
    -------
    dict
        ``seconds``, ``l1_2way``, ``l1_3way`` (floats), ``outcome`` ("ok"), ``version``
        (mbi's and jax's) and ``error`` (None).
    """
    from .adult import ADULT_COLUMNS, adult_table, adult_wide
    from ..tables import category_codes

    sys.path.insert(0, target)
    os.environ.setdefault("JAX_PLATFORMS", "cpu")     # no probing for accelerators
    os.environ.setdefault("MPLBACKEND", "Agg")        # cdp2adp imports matplotlib.pyplot
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")               # mbi's float32 and cache notices
        mbi = importlib.import_module("mbi")
    jax = importlib.import_module("jax")
    jax.config.update("jax_enable_compilation_cache", False)   # read when compiling
    from importlib.metadata import version as dist_version
    version = f"mbi {dist_version('mbi')}, jax {jax.__version__}"
    _bridge_mbi_2(mbi)
    mechanism = _load_mechanism(target, method)

    cols, keys = adult_wide() if wide else adult_table()
    names = tuple(keys) if wide else tuple(ADULT_COLUMNS)
    sizes = {c: len(keys[c]) for c in names}
    codes = {c: category_codes(cols[c], keys[c], "pgm_peer") for c in names}
    for c in names:
        if (codes[c] < 0).any():
            raise ValueError(f"the Adult column {c!r} has a value outside its categories")
    n = len(codes[names[0]])
    domain = mbi.Domain(names, tuple(sizes[c] for c in names))
    data = mbi.Dataset(codes, domain)
    workload = list(itertools.combinations(names, k))

    np.random.seed(seed)
    with open(os.devnull, "w") as quiet, contextlib.redirect_stdout(quiet), \
            warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        if method == "aim":
            model, _ = mechanism.AIM(epsilon, delta).run(data, [(w, 1.0) for w in workload])

            def table(w: tuple[str, ...]) -> np.ndarray:
                return _model_table(model, w)
        else:
            synth = mechanism.MST(data, epsilon, delta).to_dict()

            def table(w: tuple[str, ...]) -> np.ndarray:
                return _counts(synth, w, sizes)
        answers = {w: table(w) for w in workload}
        seconds = time.perf_counter() - t0

        def mean_l1(width: int) -> float:
            errors = []
            for w in itertools.combinations(names, width):
                est = answers[w] if w in answers else table(w)
                errors.append(float(np.abs(est - _counts(codes, w, sizes)).sum()) / n)
            return float(np.mean(errors))
        l1_2way, l1_3way = mean_l1(2), None if wide else mean_l1(3)
    return _result("ok", seconds, l1_2way, l1_3way, version)


def _child_main(method: str, epsilon: float, delta: float, seed: int, k: int, target: str,
                scratch: str, out: Any, wide: bool = False) -> None:
    """Spawned child: work inside ``scratch``, run, put the result dict on ``out``."""
    os.chdir(scratch)
    os.environ["TMPDIR"] = scratch                    # the peer's temporary files too
    tempfile.tempdir = scratch
    try:
        result = run_child(method, epsilon, delta, seed, k, target, wide)
    except Exception as exc:                          # reported, not raised: the parent waits
        result = _result("failed", error=f"{type(exc).__name__}: {str(exc)[:300]}")
    out.put(result)


def run(method: str, epsilon: float, delta: float, seed: int, k: int,
        target: str = DEFAULT_TARGET, timeout: float = 900.0,
        scratch_parent: str | None = None, wide: bool = False) -> dict[str, Any]:
    """One run of mbi's AIM or MST on the Adult table in a spawned child process.

    Parameters
    ----------
    method : {"aim", "mst"}
    epsilon, delta : float
        The run's (epsilon, delta) budget; delta > 0.
    seed : int
        Seed of numpy's global generator in the child.
    k : int
        Width of AIM's workload and of the timed answers (1, 2 or 3).
    target : str
        The package directory with mbi and its mechanisms (see the module docstring).
    timeout : float
        Seconds the child may take, import of jax and mbi included, before it is killed.
    scratch_parent : str or None
        Where the child's scratch directory is made (``tempfile.mkdtemp``; the system's
        temporary directory by default). The child works there, and the directory is
        removed when the run ends, however it ends.
    wide : bool
        The wide table instead of the 8 columns (see :func:`run_child`).

    Returns
    -------
    dict
        ``seconds``, ``l1_2way``, ``l1_3way``, ``outcome``, ``version``, ``error``.
        ``outcome`` is "ok"; "missing" if ``target`` lacks mbi or a mechanism file (no
        process started); "timeout" if the child was killed after ``timeout`` seconds; or
        "failed" if it raised (``error`` says what) or died without a result. The errors
        are None unless "ok"; on a timeout ``seconds`` is the time waited.

    Raises
    ------
    ValueError
        On a bad argument, before anything starts.
    """
    _check(method, epsilon, delta, seed, k)
    if not (isinstance(timeout, (int, float)) and 0 < timeout < float("inf")):
        raise ValueError(f"The 'timeout' parameter of pgm_peer.run must be a float in "
                         f"(0, inf). Got {timeout!r} instead.")
    if not available(target):
        return _result("missing")
    scratch = tempfile.mkdtemp(prefix="dpfast-pgm-peer-", dir=scratch_parent)
    try:
        return _supervise(method, float(epsilon), float(delta), seed, k,
                          os.path.abspath(target), scratch, float(timeout), bool(wide))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)    # only the directory made above


def _supervise(method: str, epsilon: float, delta: float, seed: int, k: int, target: str,
               scratch: str, timeout: float, wide: bool = False) -> dict[str, Any]:
    """Start the child, wait for its result up to ``timeout`` seconds, kill it past that."""
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    child = ctx.Process(target=_child_main,
                        args=(method, epsilon, delta, seed, k, target, scratch, out, wide))
    t0 = time.perf_counter()
    child.start()
    result = _result("timeout")
    while time.perf_counter() - t0 < timeout:
        try:
            left = timeout - (time.perf_counter() - t0)
            result = out.get(timeout=min(0.2, max(left, 0.01)))     # a dead child seen soon
            break
        except queue.Empty:
            if not child.is_alive() and out.empty():
                result = _result("failed", error=f"the child ended with code {child.exitcode}"
                                                 " and no result")
                break
    if result["outcome"] == "ok":
        child.join(timeout=30.0)                      # let it exit on its own first
    if child.is_alive():
        child.kill()
    child.join()
    out.close()
    if result["outcome"] == "timeout":
        result["seconds"] = time.perf_counter() - t0
    return result
