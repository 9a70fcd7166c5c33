"""Write the API reference's pages: one page per public name of ``dpfast`` and ``dpfast.dask``,
grouped by task on ``api/index.rst``. Run from the repository root after adding a public name
(``python docs/api_pages.py``); tests/test_docs_site.py checks that every name has its page."""
from __future__ import annotations

import importlib
import inspect
import pathlib
import types

import dpfast
import dpfast.dask

API = pathlib.Path(__file__).with_name("api")

# The reference's sections, in the order a reader meets them in the guides.
SECTIONS: list[tuple[str, list[str]]] = [
    ("Noise and randomness", [
        "laplace", "discrete_laplace", "gaussian", "discrete_gaussian", "uniform",
        "laplace_granularity", "gaussian_granularity", "ChaCha20", "default_rng"]),
    ("Mechanisms on numbers", [
        "laplace_mechanism", "gaussian_mechanism", "gaussian_sigma", "laplace_privacy_loss",
        "max_error_bound"]),
    ("Tables and histograms", [
        "noisy_counts", "histogram", "histogramdd", "count_categories", "crosstab",
        "postprocess"]),
    ("Many queries: hierarchies, ranges, marginals", [
        "census_hierarchy", "tree_mechanism", "marginals", "marginal_error_bound",
        "marginal_variance", "workloads", "mwem", "mwem_error_bound", "smalldb",
        "smalldb_error_bound"]),
    ("Statistics of records", [
        "sum", "mean", "variance", "std", "quantiles", "median", "group_by", "GroupBy"]),
    ("Selection", [
        "exponential_mechanism", "exponential_mechanism_utility_gap", "permute_and_flip",
        "report_noisy_max", "top_k"]),
    ("Streams of queries", [
        "AboveThreshold", "Sparse", "NumericSparse", "SparseVectorHalted",
        "PrivateMultiplicativeWeights"]),
    ("Randomized response", [
        "randomized_response", "randomized_response_categorical", "rr_epsilon",
        "rr_response_probabilities", "rr_categorical_probabilities", "rr_estimate_proportion",
        "rr_proportion_variance", "rr_estimate_counts"]),
    ("Budgets and ledgers", [
        "Accountant", "default_accountant", "Lease", "BudgetExceededError", "LedgerError",
        "LedgerDamagedError"]),
    ("Auditing", ["audit", "AuditResult"]),
]


# Names a reader meets through the public ones (the objects releases return, helpers the
# guides use), documented on pages of their own too.
EXTRA: list[tuple[str, list[str]]] = [
    ("What releases return", [
        "dpfast.linear.hierarchy_release.HierarchyRelease", "dpfast.linear.tree.TreeRelease",
        "dpfast.linear.marginal_release.MarginalRelease", "dpfast.linear.graphical.GraphicalModel",
        "dpfast.linear.multiplicative_weights.MWEMRelease",
        "dpfast.linear.small_database.SmallDBRelease"]),
    ("Helpers", ["dpfast.records.accuracy", "dpfast.datasets.load_adult"]),
]


def extra_names() -> list[str]:
    return [n for _, names in EXTRA for n in names]


def public_names() -> list[str]:
    """Every documented name, in full: ``dpfast.X`` and ``dpfast.dask.X``."""
    return ([f"dpfast.{n}" for n in dpfast.__all__]
            + [f"dpfast.dask.{n}" for n in dpfast.dask.__all__])


def resolve(full: str) -> object:
    module, _, name = full.rpartition(".")
    return getattr(importlib.import_module(module), name)


def directive(full: str) -> str:
    obj = resolve(full)
    if isinstance(obj, types.ModuleType):
        return f".. automodule:: {obj.__name__}\n   :members:\n"
    if inspect.isclass(obj) and issubclass(obj, BaseException):
        return f".. autoexception:: {full}\n"
    if inspect.isclass(obj):
        return f".. autoclass:: {full}\n   :members:\n"
    return f".. autofunction:: {full}\n"


def page(full: str) -> str:
    title = f"``{full}``"
    return f"{title}\n{'=' * len(title)}\n\n{directive(full)}"


def index() -> str:
    lines = ["API reference", "=============", "",
             "Every public name of ``dpfast`` and ``dpfast.dask``, each on a page of its own",
             "with an example that runs (the test suite runs them as doctests).", ""]
    listed = {n for _, names in SECTIONS for n in names}
    missing = sorted(set(dpfast.__all__) - listed)
    sections = SECTIONS + ([("Other", missing)] if missing else [])
    sections = sections + [("Past one machine: dpfast.dask", [
        f"dask.{n}" for n in dpfast.dask.__all__])]
    for heading, names in sections:
        lines += [heading, "-" * len(heading), "", ".. toctree::", "   :maxdepth: 1", ""]
        lines += [f"   dpfast.{n}" for n in names]
        lines.append("")
    for heading, names in EXTRA:
        lines += [heading, "-" * len(heading), "", ".. toctree::", "   :maxdepth: 1", ""]
        lines += [f"   {n}" for n in names]
        lines.append("")
    return "\n".join(lines)


def main() -> None:
    API.mkdir(exist_ok=True)
    for full in public_names() + extra_names():
        (API / f"{full}.rst").write_text(page(full))
    (API / "index.rst").write_text(index())


if __name__ == "__main__":
    main()
