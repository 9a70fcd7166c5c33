"""Releasing many linear queries with correlated noise (Dwork & Roth, chapter 4):
workloads as operators, the tree mechanism, census hierarchies, marginals, MWEM, SmallDB."""
from . import workloads
from .hierarchy import HierarchyRelease, census_hierarchy
from .tree import TreeRelease, tree_mechanism

__all__ = ["workloads", "tree_mechanism", "TreeRelease", "census_hierarchy",
           "HierarchyRelease"]
