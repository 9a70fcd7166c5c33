"""Shared test set-up: the ``impl`` fixture (each instruction set this CPU runs), and the
checks that run whole programs (the strict type check, the documentation site's build, and
the sdist and wheel installed in a fresh venv). Each is started in the background as the
session starts, when the run's paths take in the test that reports it (it takes seconds of
a core the tests are not waiting for); those tests (tests/test_typing.py,
tests/test_docs_site.py, tests/test_packaging.py) collect the results with
:func:`background_result`.

With pytest-xdist (``-n auto``, as the README runs the tests), the checks are started once,
by the controlling process; each writes its output and exit code to files in a directory
named by an environment variable that the workers inherit."""
import importlib.util
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import pytest

from dpfast import _native
from simd import IMPLS

ROOT = pathlib.Path(__file__).resolve().parents[1]
BACKGROUND_DIR = "DPFAST_TEST_BACKGROUND_DIR"
# Runs a command and then writes its exit code, so that a reader knows the output is complete.
RUNNER = ("import pathlib, subprocess, sys; d = pathlib.Path(sys.argv[1]); "
          "r = subprocess.run(sys.argv[2:], stdout=(d / 'out').open('w'), "
          "stderr=subprocess.STDOUT); "
          "(d / 'code.tmp').write_text(str(r.returncode)); (d / 'code.tmp').rename(d / 'code')")


def background_checks() -> dict[str, tuple[str, list[str]]]:
    """The programs to start, by name: the test file that reports each, and its command. A
    check whose tool is not installed is left out (its test then skips, saying so)."""
    tests = ROOT / "tests"
    checks = {}
    if have("mypy"):
        checks["mypy"] = ("test_typing.py", [sys.executable, "-m", "mypy", "--no-error-summary"])
    if have("sphinx", "numpydoc", "myst_parser", "matplotlib"):
        checks["sphinx"] = ("test_docs_site.py", [sys.executable, str(tests / "docs_build.py")])
    if have("build", "setuptools", "Cython"):
        checks["wheel"] = ("test_packaging.py",
                           [sys.executable, str(tests / "packaging_check.py")])
    return checks


def have(*modules: str) -> bool:
    """Whether every module is installed (a directory of the tree that happens to share a
    name, such as build/, is a namespace package without an origin: not the tool)."""
    for name in modules:
        spec = importlib.util.find_spec(name)
        if spec is None or spec.origin is None:
            return False
    return True


def asked_for(config, test_file: str) -> bool:
    """Whether the run's paths take in ``tests/<test_file>`` (the whole suite, the tests
    directory or that file): a run of other files starts none of these programs."""
    target = (ROOT / "tests" / test_file).resolve()
    paths = [arg.split("::")[0] for arg in config.args] or [str(ROOT / "tests")]
    for arg in paths:
        path = pathlib.Path(config.invocation_params.dir, arg).resolve()
        if path == target or path in target.parents:
            return True
    return False


def pytest_configure(config):
    config.dpfast_background = []
    config.dpfast_background_dir = None
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return                                   # the controller started them
    if not (ROOT / "src" / "dpfast").is_dir():
        os.environ.pop(BACKGROUND_DIR, None)     # an installed copy: no source tree to check
        return
    where = tempfile.mkdtemp(prefix="dpfast-checks-")
    os.environ[BACKGROUND_DIR] = config.dpfast_background_dir = where   # inherited by workers
    for name, (test_file, argv) in background_checks().items():
        if not asked_for(config, test_file):
            continue
        # Each check's temporary files under its own directory, removed with it at the end
        # even when the check is killed there (tempfile, build and pip honour TMPDIR).
        os.makedirs(os.path.join(where, name, "tmp"))
        env = {**os.environ, "TMPDIR": os.path.join(where, name, "tmp")}
        config.dpfast_background.append(subprocess.Popen(
            [sys.executable, "-c", RUNNER, os.path.join(where, name), *argv], cwd=ROOT,
            env=env, start_new_session=True))


def pytest_unconfigure(config):
    for proc in getattr(config, "dpfast_background", []):
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)  # the runner and the program under it
            proc.wait()
    if getattr(config, "dpfast_background_dir", None):
        shutil.rmtree(config.dpfast_background_dir, ignore_errors=True)
        os.environ.pop(BACKGROUND_DIR, None)


def background_result(name: str, timeout: float = 900) -> tuple[int, str]:
    """Wait for the background check ``name``; its exit code and output. Skips where the
    check was not started (its tool is not installed, there is no source tree, or the run
    did not ask for its test)."""
    where = os.environ.get(BACKGROUND_DIR)
    if where is None or not os.path.isdir(os.path.join(where, name)):
        pytest.skip(f"the {name} check was not started (its tool is not installed, the "
                    "source tree is not here, or the run's paths did not take in its test)")
    code = pathlib.Path(where, name, "code")
    deadline = time.monotonic() + timeout
    while not code.exists():
        assert time.monotonic() < deadline, f"the {name} check did not finish in {timeout} s"
        time.sleep(0.2)
    return int(code.read_text()), pathlib.Path(where, name, "out").read_text()


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
