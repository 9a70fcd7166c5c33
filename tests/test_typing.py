"""The public API is typed: ``mypy --strict`` (configured in pyproject.toml) passes on
src/dpfast, the compiled module's stub included. The check runs in the background from the
start of the session (see conftest.py); this test waits for its result."""
from conftest import background_result


def test_mypy_strict_passes_on_the_package():
    code, out = background_result("mypy", timeout=600)
    assert code == 0, out
