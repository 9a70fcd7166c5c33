"""Embedded demo data: the UCI Adult census extract (Becker & Kohavi, 1996; CC BY 4.0).

48,842 records of the 1994 US Current Population Survey: ``adult.data`` (32,561 records,
the training split) and ``adult.test`` (16,281), stored gzip-compressed in the package.
"""
import csv
import functools
import gzip
import io
from importlib import resources
from typing import TYPE_CHECKING, Any, Literal, overload

import numpy as np

from .. import validation as _v

if TYPE_CHECKING:
    import pandas as pd
    from numpy.typing import NDArray

__all__ = ["load_adult", "ADULT_COLUMNS", "ADULT_NUMERIC", "ADULT_CATEGORIES"]

ADULT_COLUMNS = (
    "age", "workclass", "fnlwgt", "education", "education-num", "marital-status",
    "occupation", "relationship", "race", "sex", "capital-gain", "capital-loss",
    "hours-per-week", "native-country", "class",
)
ADULT_NUMERIC = ("age", "fnlwgt", "education-num", "capital-gain", "capital-loss",
                 "hours-per-week")
#: The categories of each categorical column as the dataset's documentation (adult.names)
#: lists them, "?" (missing) added: public, so usable as the keys of a release.
ADULT_CATEGORIES: "dict[str, tuple[str, ...]]" = {
    "workclass": ("Private", "Self-emp-not-inc", "Self-emp-inc", "Federal-gov", "Local-gov",
                  "State-gov", "Without-pay", "Never-worked", "?"),
    "education": ("Bachelors", "Some-college", "11th", "HS-grad", "Prof-school", "Assoc-acdm",
                  "Assoc-voc", "9th", "7th-8th", "12th", "Masters", "1st-4th", "10th",
                  "Doctorate", "5th-6th", "Preschool"),
    "marital-status": ("Married-civ-spouse", "Divorced", "Never-married", "Separated",
                       "Widowed", "Married-spouse-absent", "Married-AF-spouse"),
    "occupation": ("Tech-support", "Craft-repair", "Other-service", "Sales", "Exec-managerial",
                   "Prof-specialty", "Handlers-cleaners", "Machine-op-inspct", "Adm-clerical",
                   "Farming-fishing", "Transport-moving", "Priv-house-serv", "Protective-serv",
                   "Armed-Forces", "?"),
    "relationship": ("Wife", "Own-child", "Husband", "Not-in-family", "Other-relative",
                     "Unmarried"),
    "race": ("White", "Asian-Pac-Islander", "Amer-Indian-Eskimo", "Other", "Black"),
    "sex": ("Female", "Male"),
}
_FILES = {"train": ("adult.data.csv.gz",), "test": ("adult.test.csv.gz",),
          "all": ("adult.data.csv.gz", "adult.test.csv.gz")}


def _rows(name: str) -> list[list[str]]:
    raw = resources.files(__name__).joinpath(name).read_bytes()
    with io.TextIOWrapper(gzip.GzipFile(fileobj=io.BytesIO(raw)), encoding="utf-8") as f:
        reader = csv.reader(f)
        header = next(reader)
        if tuple(header) != ADULT_COLUMNS:
            raise RuntimeError(f"unexpected columns in embedded {name}: {header}")
        return [row for row in reader if row]


@functools.lru_cache(maxsize=2)
def _file_columns(name: str) -> "dict[str, NDArray[Any]]":
    """One embedded file's columns, parsed once and read-only (load_adult hands out copies;
    "all" joins the two files' columns, so each file is held once)."""
    out: dict[str, NDArray[Any]] = {}
    for column, values in zip(ADULT_COLUMNS, zip(*_rows(name))):
        out[column] = np.array(values, dtype=np.int64 if column in ADULT_NUMERIC else str)
        out[column].flags.writeable = False
    return out


@overload
def load_adult(split: Literal["train", "test", "all"] = ..., *,
               as_frame: Literal[False] = ...) -> "dict[str, NDArray[Any]]": ...
@overload
def load_adult(split: Literal["train", "test", "all"] = ..., *,
               as_frame: Literal[True]) -> "pd.DataFrame": ...
@overload
def load_adult(split: Literal["train", "test", "all"] = ..., *,
               as_frame: bool) -> "dict[str, NDArray[Any]] | pd.DataFrame": ...
def load_adult(split: Literal["train", "test", "all"] = "train", *,
               as_frame: bool = False) -> "dict[str, NDArray[Any]] | pd.DataFrame":
    """load_adult(split="train", *, as_frame=False)

    The UCI Adult records as a dict of numpy columns, or a pandas DataFrame.

    Parameters
    ----------
    split : {"train", "test", "all"}
        ``"train"`` is ``adult.data`` (32,561 records), ``"test"`` is ``adult.test``
        (16,281), ``"all"`` both (48,842), in that order.
    as_frame : bool, optional
        Return a ``pandas.DataFrame`` (needs pandas) instead of a dict.

    Returns
    -------
    dict of str -> ndarray, or pandas.DataFrame
        Columns in :data:`ADULT_COLUMNS` order. Numeric columns (:data:`ADULT_NUMERIC`) are
        int64; the others are unicode strings, with ``"?"`` marking a missing value as in
        the source. In a DataFrame (index ``0 .. n-1``) the string columns have pandas
        ``category`` dtype, same values, ``"?"`` included; the dtype's categories are the
        values that occur in the data, so they are not a public category list for a DP
        release (a category that only the data names would reveal that someone has it).

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
    as_frame = _v.check_bool(as_frame, "as_frame", "load_adult")
    if as_frame:
        try:
            import pandas as pd
        except ImportError:
            raise ImportError("load_adult(as_frame=True) needs pandas: pip install pandas. "
                              "Without it, load_adult() returns a dict of numpy columns."
                              ) from None
    # Each call returns arrays of its own (a caller may write into them); the parse of the
    # embedded files is done once per process.
    files = [_file_columns(name) for name in _FILES[split]]
    out = {name: np.concatenate([f[name] for f in files]) for name in ADULT_COLUMNS}
    if not as_frame:
        return out
    return pd.DataFrame({name: col if name in ADULT_NUMERIC else pd.Categorical(col)
                         for name, col in out.items()})
