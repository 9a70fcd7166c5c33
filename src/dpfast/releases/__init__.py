"""Releases of whole tables: histograms, contingency tables and counts computed elsewhere, and
the post-processing of released counts (free under differential privacy).

Like the mechanisms, each release checks its arguments, counts records in one compiled pass
where there are records, and makes one call of :func:`dpfast._release.release`.
"""
from . import postprocess
from .histograms import noisy_counts
from .record_tables import count_categories, histogram, histogramdd

__all__ = ["count_categories", "histogram", "histogramdd", "noisy_counts", "postprocess"]
