"""The task graph of dpfast.dask's counting releases: counts summed on the workers, read
before the charge, noised under the charged key where the counts are.

Every DataFrame release of :mod:`dpfast.dask` (histograms, crosstabs, hierarchies, trees)
goes through :func:`released`: the budget checked before anything is read, the counts
computed and kept on the workers (a data error raised here, before the charge), one charge
on the client, and one task that draws the noise under the key the charge handed out (the
key travels in the graph as bytes; no accountant runs on a worker). The functions shipped
to the workers (:func:`noised`, :func:`noise_table`) are module-level, so they pickle by
reference to this module.
"""
from __future__ import annotations

from collections.abc import Hashable
from typing import TYPE_CHECKING, Any

import dask
import dask.array as da
import dask.dataframe as dd
import numpy as np

from .. import _native
from .. import validation as _v
from .._release import Release, refuse_unaffordable
from ..noise import Gaussian, Laplace
from ..releases import postprocess as _post
from ..releases.cells import counting_measure, noisy_cells
from ..releases.record_tables import check_postprocess

if TYPE_CHECKING:
    from typing import Protocol

    from ..accounting import AccountantLike
    from ..rng import RngLike

    class Cost(Protocol):
        """What a release charges: a :class:`dpfast.noise.Measure`, or the ``cost`` of a
        tree's or a hierarchy's params."""

        @property
        def epsilon(self) -> float | None: ...
        @property
        def delta(self) -> float: ...
        @property
        def rho(self) -> float | None: ...

__all__ = ["counted", "released_counts", "released", "read_before_charge", "noised",
           "noise_table"]


def counted(data: Any, columns: list[Hashable] | None, count: Any, *args: Any) -> Any:
    """A delayed sum of ``count(partition, *args)`` over the partitions (or blocks) of
    ``data``, summed pairwise on the workers."""
    if isinstance(data, (dd.DataFrame, dd.Series)):
        if columns is not None:
            data = data[list(columns)]
        parts = data.to_delayed()
    elif isinstance(data, da.Array):
        parts = list(data.to_delayed().reshape(-1))
    else:
        raise TypeError(f"The data must be a Dask DataFrame, Series or array. Got "
                        f"{_v.describe(data)} instead.")
    level = [dask.delayed(count)(p, *args) for p in parts]
    while len(level) > 1:
        level = [dask.delayed(np.add)(a, b) for a, b in zip(level[::2], level[1::2])] \
            + ([level[-1]] if len(level) % 2 else [])
    return level[0]


def released_counts(func: str, data: Any, columns: list[Hashable] | None, count: Any,
                    args: tuple[Any, ...], noise: object, epsilon: object, delta: object,
                    rho: object, accountant: AccountantLike | None, rng: RngLike,
                    postprocess: Any) -> Any:
    """The common path of the counting releases: the last checks (the noise and cost of a
    table of sensitivity 1), then :func:`released` of the counts summed on the workers,
    noised with discrete Laplace or discrete Gaussian noise."""
    check_postprocess(postprocess, func)
    m = counting_measure(func, noise, epsilon, delta, rho, accountant=accountant)
    total = counted(data, columns, count, *args)
    return released(func, total, m, accountant, rng, noise_table, m.noise, postprocess)


def released(func: str, counts: Any, cost: Cost, accountant: AccountantLike | None,
             rng: RngLike, noise: Any, *args: Any) -> Any:
    """The release phases of a DataFrame release whose arguments are checked. Check: the
    accountant, the generator, and whether the budget can pay (nothing read if not). Read:
    ``counts`` (a delayed count or plan, whose tasks refuse bad records) computed and kept
    on the workers, every data error raised here. Charge. Draw: ``noise(counts, key,
    threads, *args)`` in one task where the counts are; only its result reaches the
    client. ``cost``: the whole release's (epsilon, delta, rho), charged once."""
    rel = Release(func, accountant, cost.epsilon, cost.delta, rng, rho=cost.rho)
    refuse_unaffordable(rel, "dpfast.dask")
    counts = read_before_charge(counts)
    key = bytes(rel.charge())
    return dask.delayed(noised, pure=False)(noise, counts, key, *args).compute()


def read_before_charge(counts: Any) -> Any:
    """``counts`` persisted (on the workers, with distributed), raising the first error of
    its tasks."""
    (persisted,) = dask.persist(counts)
    try:
        from distributed import futures_of, wait
    except ImportError:                                      # pragma: no cover
        return persisted
    futures = futures_of(persisted)
    if futures:
        wait(futures)
        for f in futures:
            if f.status == "error":
                raise f.exception()
    return persisted


def noised(noise: Any, counts: Any, key: bytes, *args: Any) -> Any:
    """On a worker: the release under the key its charge handed out (no accountant here:
    the client paid)."""
    return noise(counts, _native.Key.from_bytes(key), 1, *args)


def noise_table(counts: np.ndarray, key: _native.Key, threads: int,
                noise: Laplace | Gaussian, postprocess: Any) -> Any:
    """Exact counts plus discrete Laplace or discrete Gaussian noise under ``key`` (as the
    single-machine kernel draws them), post-processed."""
    noisy = noisy_cells(key, 0, np.asarray(counts, dtype=np.int64), noise)
    return _post.apply(noisy, postprocess) if postprocess is not None else noisy
