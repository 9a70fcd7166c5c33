"""The release path: how every mechanism and sampler reaches a kernel.

A mechanism checks all of its arguments (the data, its privacy parameters, any ``out=``
array: dtype, byte order, shape, writability), allocates its output, and hands one kernel
call to :func:`release`. That resolves the accountant, the generator and the thread count
(checking each), charges the accountant, and makes the call. The charge is the last step
before the kernel draws, and a kernel is only ever given checked arguments, so a call that
fails for bad input costs neither budget nor randomness; a call refused by the budget draws
nothing. Raw samplers, which charge nothing, use :func:`draw`, the same path without the
charge.

A kernel is called as ``kernel(generator, threads, *args)``: a ``dpfast._native`` function
(which draws the call's key from the generator and hands its chunks to the one driver), or,
for a release made of several kernel calls, a Python function with the same signature.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ._native import CHUNK, ChaCha20
from .accounting import Accountant, AccountantLike, resolve_accountant
from .rng import resolve_rng, resolve_threads

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import TypeVar

    from .rng import RngLike

    _T = TypeVar("_T")

__all__ = ["draw", "release"]


def draw(func: str, rng: RngLike, threads: int | None, size: int,
         kernel: Callable[..., _T], *args: object) -> _T:
    """``kernel(generator, threads, *args)`` for a sampler named ``func`` drawing ``size``
    elements: ``rng`` and ``threads`` resolved and checked first."""
    gen = resolve_rng(rng, func)
    return kernel(gen, resolve_threads(threads, func, size), *args)


def release(func: str, accountant: AccountantLike | None, epsilon: float, delta: float,
            rng: RngLike, threads: int | None, size: int, kernel: Callable[..., _T],
            *args: object) -> _T:
    """Charge (``epsilon``, ``delta``) to ``accountant`` (None: the default one), then return
    ``kernel(generator, threads, *args)``.

    Every argument of the mechanism ``func`` must already be checked and its output
    allocated: after the charge nothing may fail for bad input. ``size`` is the number of
    elements drawn (calls of at most one chunk run on the calling thread).
    """
    # The resolve_* functions, with the common cases decided inline: this is on every
    # release's path, and small releases are dominated by such overheads.
    acct = accountant if type(accountant) is Accountant else \
        resolve_accountant(accountant, func)
    gen = rng if type(rng) is ChaCha20 else resolve_rng(rng, func)
    nthreads = 1 if threads is None and size <= CHUNK else resolve_threads(threads, func, size)
    acct.spend(epsilon, delta, label=func)
    return kernel(gen, nthreads, *args)
