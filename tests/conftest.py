"""Shared test set-up: the ``impl`` fixture (each instruction set this CPU runs), and the
strict type check, started in the background as the session starts (it takes seconds and
needs no CPU the tests are waiting for); tests/test_typing.py collects its result at the end."""
import importlib.util
import pathlib
import subprocess
import sys

import pytest

from dpfast import _native
from simd import IMPLS

ROOT = pathlib.Path(__file__).resolve().parents[1]


def pytest_configure(config):
    config.dpfast_mypy = None
    if importlib.util.find_spec("mypy") is not None and (ROOT / "src" / "dpfast").is_dir():
        config.dpfast_mypy = subprocess.Popen(
            [sys.executable, "-m", "mypy", "--no-error-summary"], cwd=ROOT,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def pytest_unconfigure(config):
    proc = getattr(config, "dpfast_mypy", None)
    if proc is not None and proc.poll() is None:
        proc.kill()
        proc.wait()


@pytest.fixture(params=IMPLS)
def impl(request):
    assert _native.set_simd_impl(request.param)
    yield request.param
    _native.set_simd_impl("auto")
