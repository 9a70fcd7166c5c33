"""Releasing many linear queries with correlated noise (Dwork & Roth, chapter 4).

- ``workloads``: sets of linear queries as operators (ranges, marginals, conjunctions, ...);
- ``tree``: the tree mechanism for range queries (1-D and 2-D);
- ``hierarchy``: census hierarchies whose levels add up, as non-negative integers;
- ``contingency``: contingency tables and mutually consistent marginal tables;
- ``multiplicative_weights``: MWEM, a synthetic histogram for any workload;
- ``small_database``: SmallDB, the chapter's offline mechanism;
- ``online``: online private multiplicative weights, answering a stream of queries.
"""
from . import workloads
from .contingency import (MarginalRelease, crosstab, marginal_error_bound, marginal_variance,
                          marginals)
from .hierarchy import HierarchyRelease, census_hierarchy
from .multiplicative_weights import MWEMRelease, mwem, mwem_error_bound
from .online import PrivateMultiplicativeWeights
from .small_database import SmallDBRelease, smalldb, smalldb_error_bound, smalldb_size
from .tree import TreeRelease, tree_mechanism

__all__ = ["workloads", "tree_mechanism", "TreeRelease", "census_hierarchy",
           "HierarchyRelease", "crosstab", "marginals", "MarginalRelease",
           "marginal_variance", "marginal_error_bound", "mwem", "MWEMRelease",
           "mwem_error_bound", "smalldb", "SmallDBRelease", "smalldb_error_bound",
           "smalldb_size", "PrivateMultiplicativeWeights"]
