"""Randomness: the ChaCha20 generator, how ``rng=`` arguments are read, thread counts."""
from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING

import numpy as np

from . import validation as _v
from ._native import CHUNK, ChaCha20

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any, TypeAlias

    from numpy.typing import NDArray

    # Type-checking only (not defined at run time): what ``rng=`` arguments and seeds may be.
    RngLike: TypeAlias = (ChaCha20 | np.random.Generator | np.random.SeedSequence | int
                          | np.integer[Any] | None)
    SeedLike: TypeAlias = (int | np.integer[Any] | Sequence[int] | NDArray[np.integer[Any]]
                           | np.random.SeedSequence | None)

__all__ = ["ChaCha20", "default_rng", "default_threads", "resolve_rng", "resolve_threads"]


def default_rng(seed: SeedLike = None) -> np.random.Generator:
    """default_rng(seed=None)

    A ``numpy.random.Generator`` over :class:`ChaCha20`.

    ``seed=None`` keys it from ``os.urandom``; a seed makes it reproducible (tests only).
    Every ``rng=`` argument of dpfast accepts it, and its stream advances with each use.

    Parameters
    ----------
    seed : None, int, sequence of ints or numpy.random.SeedSequence, optional
        ``None`` (the default, for real releases): a key from the OS. Otherwise the key is
        derived from the seed through a ``SeedSequence``. A seed is for tests and research
        only: anyone who knows it can subtract the noise from a release.

    Returns
    -------
    numpy.random.Generator
        A Generator whose ``bit_generator`` is a :class:`ChaCha20`.

    Raises
    ------
    TypeError
        If ``seed`` is of another kind (a float or a string, for instance).
    ValueError
        If ``seed`` is a negative int or a sequence holding one. The message never shows
        the seed: it is a key.

    Examples
    --------
    >>> import dpfast as dp
    >>> g = dp.default_rng(7)              # a seed: reproducible, for tests only
    >>> g.integers(0, 10, size=3).shape
    (3,)
    >>> print(dp.default_rng(7).integers(0, 10, size=3))
    [5 0 3]
    >>> x = dp.laplace(1.0, 2, rng=g)      # a dpfast sampler drawing from it
    """
    exc: type[Exception]
    try:
        return np.random.Generator(ChaCha20(seed))
    except TypeError:
        exc = TypeError
    except ValueError:
        exc = ValueError
    # A seed is a key, which numpy's SeedSequence error prints: raised here, outside the
    # handler, so that no traceback carries that error as the context of this one.
    raise exc("The 'seed' parameter of default_rng must be None, a non-negative int, a "
              f"sequence of them or a numpy SeedSequence. Got {_v.describe(seed)} instead.")


_global: ChaCha20 | None = None
_global_lock = threading.Lock()


def _reset_global_after_fork() -> None:
    # A forked child must not replay its parent's keystream, nor inherit a lock that a
    # thread of the parent held at the fork.
    global _global, _global_lock
    _global = None
    _global_lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_global_after_fork)


def _global_rng() -> ChaCha20:
    global _global
    with _global_lock:
        if _global is None:
            _global = ChaCha20()
        return _global


def resolve_rng(rng: RngLike, func: str) -> ChaCha20:
    """The :class:`ChaCha20` that ``rng=`` designates.

    ``None``: a process-wide generator keyed from ``os.urandom`` (re-keyed in forked
    children). A ``ChaCha20`` or a ``numpy.random.Generator`` over one: that generator, whose
    stream advances. An int or a ``SeedSequence``: a new ``ChaCha20`` from
    that seed (reproducible). Anything else, including a Generator over a non-cryptographic
    bit generator, is a ``TypeError``.
    """
    if rng is None:
        return _global if _global is not None else _global_rng()
    if isinstance(rng, ChaCha20):
        return rng
    if isinstance(rng, np.random.Generator):
        bg = rng.bit_generator
        if isinstance(bg, ChaCha20):
            return bg
        raise TypeError(f"The 'rng' parameter of {func} must draw from dpfast.ChaCha20; got a "
                        f"Generator over {type(bg).__name__}, which is not cryptographically "
                        "secure. Use dpfast.default_rng(seed) or np.random.Generator("
                        "dpfast.ChaCha20(seed)).")
    if isinstance(rng, np.random.SeedSequence):
        return ChaCha20(rng)
    if isinstance(rng, (int, np.integer)) and not isinstance(rng, (bool, np.bool_)):
        if rng < 0:
            # A seed is a key: anyone who reads it can subtract the noise.
            raise ValueError(f"The 'rng' parameter of {func} must be a non-negative seed. "
                             "Got a negative int instead.")
        return ChaCha20(int(rng))
    raise TypeError(f"The 'rng' parameter of {func} must be None, a seed (int), a "
                    "dpfast.ChaCha20 or a numpy Generator over one. "
                    f"Got {_v.describe(rng)} instead.")


def default_threads() -> int:
    """Threads to use when ``threads=None``: ``OMP_NUM_THREADS`` if set, else usable CPUs."""
    env = os.environ.get("OMP_NUM_THREADS", "").split(",")[0].strip()
    if env.isascii() and env.isdigit() and int(env) >= 1:
        return min(int(env), _v.MAX_THREADS)
    try:
        n = len(os.sched_getaffinity(0))
    except AttributeError:
        n = os.cpu_count() or 1
    return max(1, min(n, _v.MAX_THREADS))


def resolve_threads(threads: int | None, func: str, size: int | None = None) -> int:
    """Validated thread count: ``threads`` if given, else :func:`default_threads`; 1 for a
    call on ``size`` <= CHUNK elements, which runs on the calling thread whatever the count."""
    t = _v.check_threads(threads, func)
    if size is not None and size <= CHUNK:
        return 1
    return default_threads() if t is None else t
