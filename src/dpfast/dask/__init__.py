"""dpfast's releases over Dask arrays and DataFrames (``pip install "dpfast[dask]"``).

Every function here makes the same release as its single-machine namesake, on data that
lives in a Dask collection (larger than memory, on disk, on a cluster):

- :func:`noisy_counts` on a Dask array of counts, any chunks (``from_npy`` reads a ``.npy``
  file larger than memory block by block, in the workers);
- :func:`histogram`, :func:`histogramdd`, :func:`count_categories`, :func:`crosstab`,
  :func:`census_hierarchy` and :func:`tree_mechanism` on Dask DataFrames (read from Parquet
  or CSV): each partition is counted on a worker by dpfast's compiled counting, the
  partition counts are summed on the workers, and the noise is added where the counts are,
  in one task; only the released table reaches the client, never a record;
- :func:`group_by` on a Dask DataFrame: ``.agg(...)`` releases per-key statistics of
  records (each person's rows bounded, keys public or selected privately) equal to
  :func:`dpfast.group_by` on the whole frame; the statistics per key are summed on the
  workers and the release is finished on the client from them (see :func:`group_by`).

Every release takes the noise keywords of its namesake: ``noise="laplace"`` (default) with
``epsilon=``, or ``noise="gaussian"`` with ``rho=`` (a zCDP cost) or ``epsilon=`` and
``delta=`` (the tightest sigma for the one release, over its whole l2 sensitivity).
Integer counts get exact discrete Gaussian noise, cell-addressed like the Laplace noise.
A release is one charge of its whole cost, on the client.

Release phases (:class:`dpfast._release.Release`). Check: everything that can be checked
without reading the data (types, parameters, public bins and categories, chunk sizes), the
accountant, the generator, and whether the budget can pay (if not, nothing is read). Read:
the data, once, before the charge -- the DataFrame releases count the records and keep the
counts on the workers, so a data error found only by reading (a value outside the public
categories, a NaN, a code out of range) is refused before anything is spent;
``noisy_counts`` takes a keyed digest of every block (and, with ``check``, its extreme
values). Charge: once, on the client, handing out the release's key. Draw: the key is
shipped to the tasks (never a seed; no accountant runs on a worker), which add the noise.

Cell-addressed noise (:mod:`dpfast.releases.cells`). The noise of cell ``i`` depends only
on the release's key and ``i``: the same seed gives bit-identical releases whatever the
chunks, the partitions, the number of workers, and a task retried or run twice after a
worker failure draws exactly the same noise again, so a failure costs no privacy. For
``noisy_counts`` the release equals ``dpfast.noisy_counts`` on the same counts with the same
seed; for the DataFrame releases it equals the single-machine function applied to the
summed counts with the same seed (``crosstab``, ``histogram``, ``histogramdd`` and
``count_categories``: the single-machine function on the same records).

The key travels in the task graph. It is drawn on the client (from the OS unless ``rng``
gives a seed, which is for tests only) and sent with the tasks: the scheduler, every worker,
and anyone who can read the graph (a dashboard's task views, logs or dumps of the graph,
spilled data) can read the key and subtract the noise. Run the cluster inside the data's
trust boundary, as the data itself must be: a Dask cluster is not a place to keep a secret
from its own operators.

One key, one input. ``noisy_counts`` returns a lazy array that can be computed again; its
key is bound to the input read before the charge: each block's task digests its block
again (a checksum under 32 bytes drawn from the OS for this release) and refuses a block that
changed since (nothing of that block is released). So computing again gives the identical
release of identical data, or a refusal -- never the same noise on other counts (which
would publish the change exactly). A result the cluster still holds is returned as it was.

The modules: :mod:`dpfast.dask.arrays` (``noisy_counts``, ``from_npy``),
:mod:`dpfast.dask.histograms` (``histogram``, ``histogramdd``, ``count_categories``),
:mod:`dpfast.dask.tables` (``crosstab``, ``census_hierarchy``, ``tree_mechanism``),
:mod:`dpfast.dask.groupby` (``group_by``, ``GroupBy``) and :mod:`dpfast.dask.graph` (the
task graph the counting releases share: counts summed on the workers, read before the
charge, noised under the charged key). Every name is imported from ``dpfast.dask``.
"""
from __future__ import annotations

# This package is named dask inside dpfast; every module of it imports the third-party
# Dask by absolute imports (``import dask.array as da``), never relative ones.
try:
    import dask  # noqa: F401
    import dask.array  # noqa: F401
    import dask.dataframe  # noqa: F401
except ImportError as exc:                                   # pragma: no cover
    raise ImportError('dpfast.dask needs Dask: pip install "dpfast[dask]"') from exc

from .arrays import NPY_BLOCK, from_npy, noisy_counts
from .groupby import GroupBy, group_by
from .histograms import count_categories, histogram, histogramdd
from .tables import census_hierarchy, crosstab, tree_mechanism

__all__ = ["noisy_counts", "from_npy", "histogram", "histogramdd", "count_categories",
           "crosstab", "census_hierarchy", "tree_mechanism", "group_by", "GroupBy"]
