"""Shared test set-up: the strict type check starts in the background as the session starts
(it takes seconds and needs no CPU the tests are waiting for), and tests/test_typing.py
collects its result at the end."""
import importlib.util
import pathlib
import subprocess
import sys

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
