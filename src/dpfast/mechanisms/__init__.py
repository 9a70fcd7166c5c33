"""Mechanisms, one module per family.

Each mechanism reads top to bottom the same way: check every argument, make one call of
:func:`dpfast._release.release` (which charges the accountant and then draws from a kernel),
post-process. A new mechanism goes into the module of its family, or a new one beside them:

- :mod:`~dpfast.mechanisms.laplace`: the Laplace mechanism, its accuracy and its certified
  privacy loss;
- :mod:`~dpfast.mechanisms.gaussian`: the Gaussian mechanism and its calibration;
- :mod:`~dpfast.mechanisms.selection`: report noisy max, the exponential mechanism,
  permute-and-flip, top-k;
- :mod:`~dpfast.mechanisms.randomized_response`: local DP for yes/no and categorical answers;
- :mod:`~dpfast.mechanisms.sparse_vector`: the sparse vector technique (AboveThreshold,
  Sparse, NumericSparse), objects charged once and queried until they halt.

Releases of whole tables (histograms, contingency tables, post-processing) are in
:mod:`dpfast.releases`; raw noise without a budget in :mod:`dpfast.samplers`.
"""
from .gaussian import gaussian_mechanism, gaussian_sigma
from .laplace import laplace_mechanism, laplace_privacy_loss, max_error_bound
from .randomized_response import (
    randomized_response,
    randomized_response_categorical,
    rr_categorical_probabilities,
    rr_epsilon,
    rr_estimate_counts,
    rr_estimate_proportion,
    rr_proportion_variance,
    rr_response_probabilities,
)
from .selection import (
    exponential_mechanism,
    exponential_mechanism_utility_gap,
    permute_and_flip,
    report_noisy_max,
    top_k,
)
from .sparse_vector import AboveThreshold, NumericSparse, Sparse, SparseVectorHalted

__all__ = [
    "AboveThreshold",
    "NumericSparse",
    "Sparse",
    "SparseVectorHalted",
    "exponential_mechanism",
    "exponential_mechanism_utility_gap",
    "gaussian_mechanism",
    "gaussian_sigma",
    "laplace_mechanism",
    "laplace_privacy_loss",
    "max_error_bound",
    "permute_and_flip",
    "randomized_response",
    "randomized_response_categorical",
    "report_noisy_max",
    "rr_categorical_probabilities",
    "rr_epsilon",
    "rr_estimate_counts",
    "rr_estimate_proportion",
    "rr_proportion_variance",
    "rr_response_probabilities",
    "top_k",
]
