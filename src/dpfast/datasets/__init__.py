"""Embedded demo data: the UCI Adult census extract (Becker & Kohavi, 1996; CC BY 4.0).

48,842 records of the 1994 US Current Population Survey: ``adult.data`` (32,561 records,
the training split) and ``adult.test`` (16,281), stored gzip-compressed in the package.
"""
import csv
import gzip
import io
from importlib import resources

import numpy as np

__all__ = ["load_adult", "ADULT_COLUMNS", "ADULT_NUMERIC"]

ADULT_COLUMNS = (
    "age", "workclass", "fnlwgt", "education", "education-num", "marital-status",
    "occupation", "relationship", "race", "sex", "capital-gain", "capital-loss",
    "hours-per-week", "native-country", "class",
)
ADULT_NUMERIC = ("age", "fnlwgt", "education-num", "capital-gain", "capital-loss",
                 "hours-per-week")
_FILES = {"train": ("adult.data.csv.gz",), "test": ("adult.test.csv.gz",),
          "all": ("adult.data.csv.gz", "adult.test.csv.gz")}


def _rows(name):
    raw = resources.files(__name__).joinpath(name).read_bytes()
    with io.TextIOWrapper(gzip.GzipFile(fileobj=io.BytesIO(raw)), encoding="utf-8") as f:
        reader = csv.reader(f)
        header = next(reader)
        if tuple(header) != ADULT_COLUMNS:
            raise RuntimeError(f"unexpected columns in embedded {name}: {header}")
        return [row for row in reader if row]


def load_adult(split="train"):
    """load_adult(split="train")

    The UCI Adult records as a dict of numpy columns.

    Parameters
    ----------
    split : {"train", "test", "all"}
        ``"train"`` is ``adult.data`` (32,561 records), ``"test"`` is ``adult.test``
        (16,281), ``"all"`` both (48,842), in that order.

    Returns
    -------
    dict of str -> ndarray
        Keys in :data:`ADULT_COLUMNS` order. Numeric columns (:data:`ADULT_NUMERIC`) are
        int64; the others are unicode strings, with ``"?"`` marking a missing value as in
        the source.

    Examples
    --------
    >>> from dpfast.datasets import load_adult
    >>> adult = load_adult()
    >>> int((adult["age"] > 50).sum())
    6460
    """
    if split not in _FILES:
        raise ValueError("The 'split' parameter of load_adult must be one of "
                         f"{sorted(_FILES)}. Got {split!r} instead.")
    rows = [r for name in _FILES[split] for r in _rows(name)]
    cols = list(zip(*rows))
    out = {}
    for name, values in zip(ADULT_COLUMNS, cols):
        out[name] = np.array(values, dtype=np.int64 if name in ADULT_NUMERIC else str)
    return out
