"""Shared test set-up: the ``impl`` fixture (each instruction set this CPU runs), and the
strict type check, started in the background as the session starts (it takes seconds and
needs no CPU the tests are waiting for); tests/test_typing.py collects its result.

With pytest-xdist (``-n auto``, as the README runs the tests), the check is started once, by
the controlling process, and writes its output and exit code to files that the worker which
runs tests/test_typing.py reads."""
import importlib.util
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import tempfile

import pytest

from dpfast import _native
from simd import IMPLS

ROOT = pathlib.Path(__file__).resolve().parents[1]
MYPY_DIR = "DPFAST_TEST_MYPY_DIR"
# Runs mypy and then writes its exit code, so that a reader knows the output is complete.
RUNNER = ("import pathlib, subprocess, sys; d = pathlib.Path(sys.argv[1]); "
          "r = subprocess.run([sys.executable, '-m', 'mypy', '--no-error-summary'], "
          "stdout=(d / 'out').open('w'), stderr=subprocess.STDOUT); "
          "(d / 'code.tmp').write_text(str(r.returncode)); (d / 'code.tmp').rename(d / 'code')")


def pytest_configure(config):
    config.dpfast_mypy = config.dpfast_mypy_dir = None
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return                                   # the controller started it
    if importlib.util.find_spec("mypy") is None or not (ROOT / "src" / "dpfast").is_dir():
        os.environ.pop(MYPY_DIR, None)
        return
    where = tempfile.mkdtemp(prefix="dpfast-mypy-")
    os.environ[MYPY_DIR] = config.dpfast_mypy_dir = where   # inherited by xdist workers
    config.dpfast_mypy = subprocess.Popen([sys.executable, "-c", RUNNER, where], cwd=ROOT,
                                          start_new_session=True)


def pytest_unconfigure(config):
    proc = getattr(config, "dpfast_mypy", None)
    if proc is not None and proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)      # the runner and mypy under it
        proc.wait()
    if getattr(config, "dpfast_mypy_dir", None):
        shutil.rmtree(config.dpfast_mypy_dir, ignore_errors=True)


@pytest.fixture(params=IMPLS)
def impl(request):
    assert _native.set_simd_impl(request.param)
    yield request.param
    _native.set_simd_impl("auto")


@pytest.fixture(scope="module")
def clusters():
    """One distributed.LocalCluster of worker processes (one thread each) per worker count,
    started on first use, closed at the end of the module (not shared past it: a cluster's
    threads left running would hang the tests that later fork this process without
    Python's fork hooks)."""
    distributed = pytest.importorskip("distributed")
    made = {}

    def get(n):
        if n not in made:
            cluster = distributed.LocalCluster(n_workers=n, threads_per_worker=1,
                                               processes=True, dashboard_address=None,
                                               silence_logs=40)
            made[n] = (cluster, distributed.Client(cluster, set_as_default=False))
        return made[n][1]
    yield get
    for cluster, client in made.values():
        client.close()
        cluster.close()
