"""The public API is typed: ``mypy --strict`` (configured in pyproject.toml) passes on
src/dpfast, the compiled module's stub included. The check runs in the background from the
start of the session (see conftest.py)."""
import pytest


def test_mypy_strict_passes_on_the_package(request):
    proc = request.config.dpfast_mypy
    if proc is None:
        pytest.skip("mypy is not installed, or the source tree is not here")
    out, _ = proc.communicate(timeout=600)
    assert proc.returncode == 0, out
