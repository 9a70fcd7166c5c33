"""The Adult tables of the marginal-table benchmarks (``dpfast bench --linear``) and of
their peer runs (:mod:`dpfast.benchmarks.pgm_peer`): the 8 columns with age by decade, and
the wide table of 14 columns, each with public categories."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..tables import category_codes

__all__ = ["ADULT_COLUMNS", "adult_table", "adult_wide", "full_counts", "WIDE_BINS",
           "NATIVE_COUNTRIES"]


ADULT_COLUMNS = ("age", "workclass", "education", "marital-status", "occupation",
                 "relationship", "race", "sex")


def adult_table() -> tuple[dict[str, np.ndarray], dict[str, list[Any]]]:
    """The bundled Adult records (train split) with age by decade, and every column's public
    categories (the dataset's documented schema; decades 10..90)."""
    from ..datasets import ADULT_CATEGORIES, load_adult
    adult = load_adult()
    cols = {c: np.asarray(adult[c]) for c in ADULT_COLUMNS}
    cols["age"] = cols["age"] // 10 * 10
    keys: dict[str, list[Any]] = {"age": list(range(10, 100, 10))}
    keys.update({c: list(ADULT_CATEGORIES[c]) for c in ADULT_COLUMNS[1:]})
    return cols, keys


#: The wide table: every Adult column but fnlwgt, numeric ones in public bins (edges from
#: the dataset's documented ranges, at most 16 bins each), native-country and class with
#: their documented categories ('?' the missing value, as in the loader).
WIDE_BINS: dict[str, tuple[float, ...]] = {
    "age": tuple(range(15, 100, 5)),
    "education-num": tuple(x + 0.5 for x in range(0, 17)),
    "capital-gain": (0, 1, 1000, 2000, 3000, 4000, 5000, 6000, 7000, 8000, 10000, 15000,
                     20000, 30000, 50000, 100000),
    "capital-loss": (0, 1, 500, 1000, 1500, 1700, 1800, 1900, 2000, 2200, 2500, 3000,
                     3500, 4000, 5000),
    "hours-per-week": (0, 10, 20, 25, 30, 35, 40, 41, 45, 50, 55, 60, 70, 80, 100),
}
NATIVE_COUNTRIES = (
    "United-States", "Cambodia", "England", "Puerto-Rico", "Canada", "Germany",
    "Outlying-US(Guam-USVI-etc)", "India", "Japan", "Greece", "South", "China", "Cuba", "Iran",
    "Honduras", "Philippines", "Italy", "Poland", "Jamaica", "Vietnam", "Mexico", "Portugal",
    "Ireland", "France", "Dominican-Republic", "Laos", "Ecuador", "Taiwan", "Haiti",
    "Columbia", "Hungary", "Guatemala", "Nicaragua", "Scotland", "Thailand", "Yugoslavia",
    "El-Salvador", "Trinadad&Tobago", "Peru", "Hong", "Holand-Netherlands", "?")


def adult_wide() -> tuple[dict[str, np.ndarray], dict[str, list[Any]]]:
    """The 14 columns of the wide table (all but fnlwgt), as codes of public categories:
    numeric columns binned by :data:`WIDE_BINS` (a bin is labelled by its lower edge)."""
    from ..datasets import ADULT_CATEGORIES, ADULT_COLUMNS as ALL, load_adult
    adult = load_adult()
    cols: dict[str, np.ndarray] = {}
    keys: dict[str, list[Any]] = {}
    for c in ALL:
        if c == "fnlwgt":
            continue
        if c in WIDE_BINS:
            edges = np.asarray(WIDE_BINS[c], dtype=np.float64)
            x = np.asarray(adult[c], dtype=np.float64)
            cols[c] = np.clip(np.searchsorted(edges, x, side="right") - 1, 0, len(edges) - 2)
            keys[c] = list(range(len(edges) - 1))
        else:
            cats = NATIVE_COUNTRIES if c == "native-country" else \
                ("<=50K", ">50K") if c == "class" else ADULT_CATEGORIES[c]
            cols[c] = np.asarray(adult[c])
            keys[c] = list(cats)
    return cols, keys


def full_counts(cols: dict[str, np.ndarray], keys: dict[str, list[Any]]) -> np.ndarray:
    """The histogram over the product of the columns' categories."""
    codes = [category_codes(cols[c], keys[c], "adult_table") for c in ADULT_COLUMNS]
    shape = tuple(len(keys[c]) for c in ADULT_COLUMNS)
    flat = np.ravel_multi_index(tuple(codes), shape)
    return np.bincount(flat, minlength=int(np.prod(shape))).reshape(shape)
