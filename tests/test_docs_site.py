"""The documentation site (docs/): every public name of ``dpfast`` and ``dpfast.dask`` has a
page and a numpydoc docstring with Parameters, Returns, Raises and an example that runs (as
a doctest of its module, tests/test_docs_cli.py); every Python block of the guides runs; the
site builds with ``sphinx-build -W`` (a warning is an error)."""
from __future__ import annotations

import doctest
import inspect
import pathlib
import re
import sys
import types

import pytest

import dpfast
import dpfast.dask
from conftest import background_result
from test_docs_cli import MODULES as DOCTEST_MODULES

ROOT = pathlib.Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
NAMES = ([f"dpfast.{n}" for n in dpfast.__all__]
         + [f"dpfast.dask.{n}" for n in dpfast.dask.__all__])
GUIDES = sorted(p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")
                if "_build" not in p.parts)


def _api_pages() -> types.ModuleType:
    """docs/api_pages.py, which writes the API pages: the names, and how each resolves."""
    sys.path.insert(0, str(DOCS))
    try:
        import api_pages
    finally:
        sys.path.remove(str(DOCS))
    return api_pages


api_pages = _api_pages()
resolve = api_pages.resolve


def sections(obj: object) -> dict[str, object]:
    from numpydoc.docscrape import ClassDoc, FunctionDoc, NumpyDocString

    if isinstance(obj, types.ModuleType):
        return dict(NumpyDocString(obj.__doc__ or ""))
    if inspect.isclass(obj):
        return dict(ClassDoc(obj, config={"show_class_members": False}))
    return dict(FunctionDoc(obj))


def test_every_public_name_has_a_page_of_its_own():
    assert api_pages.public_names() == NAMES
    documented = set(NAMES) | set(api_pages.extra_names())
    pages = {p.stem for p in (DOCS / "api").glob("dpfast.*.rst")}
    assert not documented - pages, "no page: run python docs/api_pages.py"
    assert not pages - documented, "a page of a name that is no longer public"
    index = (DOCS / "api" / "index.rst").read_text()
    for full in NAMES:
        text = (DOCS / "api" / f"{full}.rst").read_text()
        assert re.search(rf"^\.\. auto\w+:: {re.escape(full)}$", text, re.M) or (
            isinstance(resolve(full), types.ModuleType)), full
        assert f"   {full}\n" in index, f"{full} is not in the API index"


@pytest.mark.parametrize("full", NAMES)
def test_docstring_has_the_numpydoc_sections(full):
    obj = resolve(full)
    doc = sections(obj)
    wanted = ["Examples"]
    is_error = inspect.isclass(obj) and issubclass(obj, BaseException)
    if callable(obj) and not is_error:
        target = obj.__init__ if inspect.isclass(obj) else obj
        try:
            params = [p for p in inspect.signature(target).parameters if p != "self"]
        except (TypeError, ValueError):           # a compiled class: its docstring says
            params = ["?"]
        if params:
            wanted.append("Parameters")
        if not inspect.isclass(obj):
            wanted.append("Returns")
        wanted.append("Raises")
    missing = [s for s in wanted if not doc.get(s)]
    assert not missing, f"{full}: no {', '.join(missing)} section"


@pytest.mark.parametrize("full", NAMES)
def test_docstring_example_is_run_as_a_doctest(full):
    """The name's examples are among those tests/test_docs_cli.py::test_docstring_examples
    runs for its module (every module of the package, examples of methods included), so
    each example runs once in the suite."""
    obj = resolve(full)
    if isinstance(obj, types.ModuleType):
        module, test_name = obj, obj.__name__
    else:
        module = sys.modules[obj.__module__]
        test_name = f"{module.__name__}.{obj.__qualname__}"
    assert module.__name__ in DOCTEST_MODULES, f"{module.__name__}'s examples are not run"
    found = {t.name for t in doctest.DocTestFinder().find(module) if t.examples}
    assert test_name in found, f"{full} has no example"


def python_blocks(text: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", text, flags=re.S | re.M)


@pytest.mark.parametrize("page", GUIDES)
def test_every_python_block_of_a_page_runs(page, tmp_path, monkeypatch):
    """A page's blocks run in order, in one namespace, in an empty working directory (as a
    reader would paste them)."""
    blocks = python_blocks((DOCS / page).read_text())
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": "__docs__"}
    for i, block in enumerate(blocks):
        exec(compile(block, f"{page} block {i + 1}", "exec"), namespace)


def test_site_builds_without_a_warning():
    """tests/docs_build.py runs ``sphinx-build -W`` in the background from the start of the
    session (conftest.py); every page is built, the plots drawn."""
    code, out = background_result("sphinx")
    assert code == 0, out[-6000:]
    pages = set(re.search(r"^pages: (.*)$", out, re.M).group(1).split())
    images = re.search(r"^images: (.*)$", out, re.M).group(1).split()
    wanted = {f"api/{full}.html" for full in NAMES} | {"index.html", "security.html",
                                                       "getting-started.html"}
    assert not wanted - pages, sorted(wanted - pages)[:5]
    plots = list((DOCS / "plots").glob("*.py"))
    assert len(images) >= len(plots) >= 3


def test_every_test_the_docs_cite_exists():
    """The security model and the guides point each claim at the test that checks it
    (``tests/test_x.py::test_name``): every one must exist."""
    cited = set()
    for page in [*GUIDES, "../README.md"]:
        cited |= set(re.findall(r"tests/(test_\w+\.py)::(\w+)", (DOCS / page).read_text()))
    assert len(cited) > 50
    missing = [f"{f}::{name}" for f, name in sorted(cited)
               if not re.search(rf"^(async )?def {name}\(", (ROOT / "tests" / f).read_text()
                                if (ROOT / "tests" / f).exists() else "", re.M)]
    assert not missing, missing


@pytest.mark.parametrize("page", GUIDES)
def test_python_shown_but_not_run_is_valid_and_names_what_exists(page):
    """Python the pages show without running it (a cluster's, Spark's) compiles, and every
    ``dp.X`` and ``dpd.X`` it names exists."""
    import dpfast.dask as dpd
    text = (DOCS / page).read_text()
    for block in re.findall(r"^```\{code-block\} python\n(.*?)^```", text, flags=re.S | re.M):
        compile(block, page, "exec")
        for module, name in re.findall(r"\b(dpd?)\.([A-Za-z_]\w*)", block):
            assert hasattr(dpd if module == "dpd" else dpfast, name), (page, module, name)
