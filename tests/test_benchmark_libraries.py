"""dpfast.benchmarks.libraries: the cases of other DP libraries, when installed."""
import importlib
import importlib.util
import sys
import warnings

import pytest

from dpfast.benchmarks import libraries
from dpfast.benchmarks.core import BASELINES, FAMILIES, Case

SIZE = 10**4

# import name of the library -> prefix of its case names
LIBRARIES = {"diffprivlib": "diffprivlib", "opendp": "OpenDP", "pydp": "PyDP"}


def _importable(name):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            importlib.import_module(name)
        return True
    except Exception:      # missing, or broken by its dependencies (diffprivlib/sklearn)
        return False


@pytest.fixture(scope="module")
def built():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return libraries.cases(SIZE)


def test_cases_are_valid_and_run(built):
    assert isinstance(built, list)
    for c in built:
        assert isinstance(c, Case)
        assert c.impl == "library" and c.threads == 1
        assert c.family in FAMILIES
        assert c.baseline == BASELINES[c.family]
        assert isinstance(c.n, int) and 1 <= c.n <= SIZE
        assert c.extrapolated == (c.n < SIZE)
        assert callable(c.fn)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            c.fn()
    names = [c.name for c in built]
    assert len(names) == len(set(names))
    assert isinstance(libraries.notes(), list)


def test_small_size_is_not_extrapolated():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        small = libraries.cases(50)
    for c in small:
        assert c.n == 50 and not c.extrapolated


@pytest.mark.parametrize("module, prefix", sorted(LIBRARIES.items()))
def test_installed_library_has_cases(built, module, prefix):
    if not _importable(module):
        pytest.skip(f"{module} not installed or not importable")
    mine = [c for c in built if c.name.startswith(prefix)]
    assert mine, libraries.notes()
    for c in mine:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            c.fn()


@pytest.mark.parametrize("module, prefix", sorted(LIBRARIES.items()))
def test_unavailable_library_contributes_nothing(monkeypatch, module, prefix):
    for name in list(sys.modules):
        if name == module or name.startswith(module + "."):
            monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, module, None)     # import now raises ImportError
    try:
        mod = importlib.reload(libraries)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = mod.cases(100)
        assert not [c for c in out if c.name.startswith(prefix)]
        assert all(isinstance(c, Case) and c.impl == "library" for c in out)
        assert any(n.startswith(module) for n in mod.notes())
    finally:
        monkeypatch.undo()
        importlib.reload(libraries)

