"""The other sampling kernels under a release's key: selection, uniforms, bounding.

Every function here (and every draw of a noise object) refuses anything but a
:class:`dpfast._native.Key` (:func:`require_key`), and follows the kernel convention of
:mod:`dpfast._release`, ``kernel(key, threads, *args)``.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, TypeVar, cast

import numpy as np

from .. import _native

if TYPE_CHECKING:
    from numpy.typing import NDArray

    _Source = _native.Key


def require_key(source: object) -> None:
    """Refuse anything but a release's key (a :class:`dpfast._native.Key`; see
    :mod:`dpfast.noise`)."""
    if type(source) is not _native.Key:
        raise TypeError("dpfast.noise draws only under a release's key (made after the "
                        f"release's charge), not a {type(source).__name__}.")


_F = TypeVar("_F", bound=Callable[..., Any])


def _keyed_kernel(kernel: _F) -> _F:
    """``kernel(key, threads, *args)``, refusing anything but a release's key (the kernel
    convention of :mod:`dpfast._release`, so it is passed to ``release`` as a kernel)."""
    def call(source: object, threads: int, *args: object) -> Any:
        require_key(source)
        return kernel(source, threads, *args)
    call.__name__ = call.__qualname__ = kernel.__name__
    call.__doc__ = (f"{kernel.__doc__}\n\n(dpfast._native.{kernel.__name__} under a release's "
                    "key: anything else is refused.)")
    return cast("_F", call)


#: Report noisy max / one-sided noisy argmax (:mod:`dpfast.mechanisms.selection`).
noisy_argmax = _keyed_kernel(_native.noisy_argmax)
#: The k largest noisy scores (Gumbel top-k).
noisy_top_k = _keyed_kernel(_native.noisy_top_k)
#: The exponential mechanism by inverse CDF over log-sum-exp (selection, MWEM).
exponential_mechanism = _keyed_kernel(_native.exponential_mechanism)
#: The largest noisy score of a block and its index (SmallDB's blocks).
noisy_max_score = _keyed_kernel(_native.noisy_max_score)
#: Full-precision uniforms into an array (randomized response's coins, dpfast.uniform).
uniforms = _keyed_kernel(_native.fill_uniform)


def bounded_rows(row_key: _Source, pair_key: _Source, threads: int,
                 person: NDArray[np.int64], group: NDArray[np.int64] | None,
                 positions: NDArray[np.int64] | None, total: int, max_groups: int,
                 max_rows: int) -> NDArray[np.uint8]:
    """Flags of the rows a contribution bound keeps (:func:`dpfast.records.bound`): the
    kernel draws each row's uniform priority under the release's two keys at the row's
    position and keeps the lowest (``dpfast._native.bound_keyed``; keys only)."""
    require_key(row_key)
    require_key(pair_key)
    flags: NDArray[np.uint8] = _native.bound_keyed(person, group, row_key, pair_key, positions,
                                                   total, max_groups, max_rows, threads)
    return flags
