"""dpfast: fast, floating-point-safe differential privacy noise.

All randomness comes from ChaCha20 (RFC 8439). Continuous noise lives on a power-of-two grid
and integer noise is exact discrete Laplace, so outputs do not leak inputs through low-order
bits. Mechanisms charge an :class:`Accountant` before drawing.
"""
from ._native import ChaCha20
from .accounting import (Accountant, BudgetExceededError, Lease, LedgerDamagedError, LedgerError,
                         default_accountant)
from .auditing import AuditResult, audit
from .linear import (
    census_hierarchy,
    crosstab,
    marginal_error_bound,
    marginal_variance,
    marginals,
    mwem,
    mwem_error_bound,
    PrivateMultiplicativeWeights,
    smalldb,
    smalldb_error_bound,
    tree_mechanism,
    workloads,
)
from .mechanisms import (
    AboveThreshold,
    NumericSparse,
    Sparse,
    SparseVectorHalted,
    exponential_mechanism,
    exponential_mechanism_utility_gap,
    gaussian_mechanism,
    gaussian_sigma,
    laplace_mechanism,
    laplace_privacy_loss,
    max_error_bound,
    permute_and_flip,
    randomized_response,
    randomized_response_categorical,
    report_noisy_max,
    rr_categorical_probabilities,
    rr_epsilon,
    rr_estimate_counts,
    rr_estimate_proportion,
    rr_proportion_variance,
    rr_response_probabilities,
    top_k,
)
from .releases import count_categories, histogram, histogramdd, noisy_counts, postprocess
from .groupby import GroupBy, group_by
from .records import mean, median, quantiles, std, sum, variance
from .rng import default_rng
from .samplers import (
    discrete_gaussian,
    discrete_laplace,
    gaussian,
    gaussian_granularity,
    laplace,
    laplace_granularity,
    uniform,
)

#: The package version (the one place it is written: pyproject.toml reads it, and
#: CHANGELOG.md's newest release names it).
__version__ = "0.2.0"

__all__ = [
    "GroupBy",
    "group_by",
    "sum",
    "mean",
    "variance",
    "std",
    "quantiles",
    "median",
    "AboveThreshold",
    "Accountant",
    "AuditResult",
    "NumericSparse",
    "PrivateMultiplicativeWeights",
    "Sparse",
    "SparseVectorHalted",
    "BudgetExceededError",
    "Lease",
    "LedgerDamagedError",
    "LedgerError",
    "ChaCha20",
    "audit",
    "census_hierarchy",
    "count_categories",
    "crosstab",
    "default_accountant",
    "default_rng",
    "exponential_mechanism",
    "exponential_mechanism_utility_gap",
    "discrete_gaussian",
    "discrete_laplace",
    "gaussian",
    "gaussian_granularity",
    "gaussian_mechanism",
    "gaussian_sigma",
    "histogram",
    "histogramdd",
    "laplace",
    "laplace_granularity",
    "laplace_mechanism",
    "laplace_privacy_loss",
    "marginal_error_bound",
    "marginal_variance",
    "marginals",
    "max_error_bound",
    "mwem",
    "mwem_error_bound",
    "noisy_counts",
    "permute_and_flip",
    "postprocess",
    "randomized_response",
    "randomized_response_categorical",
    "report_noisy_max",
    "rr_categorical_probabilities",
    "rr_epsilon",
    "rr_estimate_counts",
    "rr_estimate_proportion",
    "rr_proportion_variance",
    "rr_response_probabilities",
    "smalldb",
    "smalldb_error_bound",
    "top_k",
    "tree_mechanism",
    "uniform",
    "workloads",
]
