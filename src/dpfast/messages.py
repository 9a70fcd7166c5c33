"""How error messages show arguments: a public parameter as received, a data argument only by
kind and position.

Messages end up in logs, tracebacks and bug reports that are not protected by the privacy
guarantee. :func:`fail` builds the error for a *public parameter* (epsilon, delta,
sensitivity, a shape or a size: shown as received); :func:`fail_data` the error for a *data
argument*, described by kind, dtype and shape (:func:`describe`), never shown; and
:func:`entry_at` and :func:`position` say where an offending entry is ("an entry at index
(1, 0) is NaN") without its value. The checks that use them are in
:mod:`dpfast.validation`, which exports them too.
"""
from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any, TypeVar

    from numpy.typing import NDArray

    _E = TypeVar("_E", bound=Exception)

__all__ = ["fail", "fail_data", "describe", "position", "first_index", "entry_at",
           "top_module"]


def fail(exc: type[_E], name: str, func: str, rule: str, value: object) -> _E:
    """An error for a *public parameter* (shown as received); see :func:`fail_data`."""
    return exc(f"The {name!r} parameter of {func} must be {rule}. Got {value!r} instead.")


def fail_data(exc: type[_E], name: str, func: str, rule: str, value: object) -> _E:
    """An error for a *data argument*: as :func:`fail`, with the value described by kind,
    dtype and shape (:func:`describe`), never shown."""
    return exc(f"The {name!r} parameter of {func} must be {rule}. Got {describe(value)} "
               "instead.")


def _article(text: str) -> str:
    return f"an {text}" if text[:1].lower() in "aeio" else f"a {text}"


def top_module(value: object) -> str:
    """The top-level package of a value's type ("numpy", "pandas", "pyarrow", ...)."""
    return type(value).__module__.partition(".")[0]


def describe(value: object) -> str:
    """A data argument in an error message by kind, dtype and shape only, never its values:
    "an array of dtype float64 and shape (3, 2)", "a pandas Series of dtype object and
    length 4", "a list of 3 items", "a str of 12 characters", "a float", "a NaN"."""
    if isinstance(value, np.ndarray):
        kind = "masked array" if isinstance(value, np.ma.MaskedArray) else "array"
        return f"{_article(kind)} of dtype {value.dtype} and shape {value.shape}"
    if value is None:
        return "None"
    if isinstance(value, (bool, np.bool_)):
        return "a bool"
    if isinstance(value, numbers.Real):
        if isinstance(value, numbers.Integral):
            return "a numpy integer" if isinstance(value, np.generic) else "an int"
        x = float(value)
        if math.isnan(x):
            return "a NaN"
        if math.isinf(x):
            return "an infinity"
        return "a numpy float" if isinstance(value, np.generic) else "a float"
    if isinstance(value, numbers.Complex):
        return "a complex number"
    if isinstance(value, str):
        return f"a str of {len(value)} characters"
    if isinstance(value, (bytes, bytearray)):
        return f"{_article(type(value).__name__)} of {len(value)} bytes"
    module, name = top_module(value), type(value).__name__
    if module == "pyarrow" and hasattr(value, "type") and hasattr(value, "null_count"):
        chunks = getattr(value, "num_chunks", None)
        where = f" in {chunks} chunks" if chunks is not None else ""
        arrow: Any = value
        return f"a pyarrow {name} of type {arrow.type} and length {len(arrow)}{where}"
    if module in ("pandas", "dask", "xarray", "cupy", "polars"):
        dtype = getattr(value, "dtype", None)
        shape = getattr(value, "shape", None)
        parts = [f"dtype {dtype}"] if dtype is not None else []
        if shape is not None:
            parts.append(f"shape {tuple(shape)}")
        return f"a {module} {name}" + (f" of {' and '.join(parts)}" if parts else "")
    if isinstance(value, (list, tuple, set, frozenset, range)):
        return f"{_article(name)} of {len(value)} items"
    if isinstance(value, Mapping):
        return f"{_article(name)} of {len(value)} entries"
    if isinstance(value, type):
        return f"the class {value.__qualname__}"
    if callable(value):
        return f"a callable ({name})"
    if hasattr(value, "dtype") and hasattr(value, "shape"):
        return f"{_article(name)} of dtype {value.dtype} and shape {value.shape}"
    if hasattr(value, "__len__"):
        try:
            return f"{_article(name)} of length {len(value)}"
        except Exception:       # a __len__ that fails says nothing about the values either
            pass
    return _article(name)


def position(index: int | Sequence[int]) -> str:
    """Where an entry is, for a message: "index 3", "index (3, 1)"."""
    if isinstance(index, (int, np.integer)):
        return f"index {int(index)}"
    idx = tuple(int(i) for i in index)
    return f"index {idx[0]}" if len(idx) == 1 else f"index {idx}"


def first_index(mask: NDArray[np.bool_]) -> tuple[int, ...]:
    """Index (a tuple, one int per axis) of the first True entry of a non-empty mask."""
    return tuple(int(i) for i in np.unravel_index(int(np.argmax(mask)), mask.shape))


def entry_at(mask: NDArray[np.bool_], what: str) -> str:
    """The first entry the mask marks, by position: "an entry at index (1, 0) is NaN"
    ("a value that is NaN" for a 0-d array: a scalar has no position)."""
    if mask.ndim == 0:
        return f"a value that {what}"
    return f"an entry at {position(first_index(mask))} {what}"
