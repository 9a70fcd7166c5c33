"""Sphinx configuration of dpfast's documentation site (built warning-free by the test suite:
tests/test_docs_site.py runs ``sphinx-build -W`` into a temporary directory)."""
from __future__ import annotations

import os
import sys

import dpfast

project = "dpfast"
author = "dpfast developers"
copyright = "dpfast developers"  # noqa: A001 -- the name Sphinx reads
version = release = dpfast.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.mathjax",
    "sphinx.ext.intersphinx",
    "numpydoc",
    "myst_parser",
    "matplotlib.sphinxext.plot_directive",
]
# Guides are Markdown (MyST) so that their Python blocks are the very code the tests run
# (tests/test_docs_site.py executes every ```python block of every page); the API reference
# is the docstrings, in numpydoc form.
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
myst_enable_extensions = ["dollarmath", "colon_fence"]
myst_heading_anchors = 3
exclude_patterns = ["_build", "**/_build"]

# numpydoc: sections rendered from the docstrings; no autosummary tables of every method
# (each public name has a page of its own under api/).
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
autodoc_typehints = "none"
autodoc_member_order = "bysource"
intersphinx_mapping: dict[str, tuple[str, str | None]] = {}

# Plots are drawn by the docs build from dpfast's own releases (docs/plots/*.py), small
# enough to take a few seconds in all.
plot_include_source = False
plot_html_show_source_link = False
plot_html_show_formats = False
plot_formats = [("png", 90)]
plot_basedir = os.path.join(os.path.dirname(__file__), "plots")
plot_rcparams = {"figure.figsize": (6.0, 3.6), "font.size": 9}

html_theme = "alabaster"
html_title = f"dpfast {release}"
html_theme_options = {"description": "Fast, floating-point-safe differential privacy",
                      "fixed_sidebar": True}
html_static_path: list[str] = []
# The site is read offline as often as online: no search index fetched from elsewhere.
html_copy_source = False
sys.dont_write_bytecode = True
