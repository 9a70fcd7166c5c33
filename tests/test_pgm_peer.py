"""The private-pgm peer (mbi's AIM and MST in a child process): what run() does around the
child. Stand-in mbi packages in a test-made directory play the peer here (a child that kills
itself, raises, or hangs); the real peer is far too slow for the suite and is only checked,
where installed apart in DEFAULT_TARGET, for the two names bridged between mbi 1.3 and 2.0."""
from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from dpfast.benchmarks import pgm_peer

MECHANISM_FILES = ("aim.py", "mst.py", "mechanism.py", "cdp2adp.py")


def stand_in_target(root: Path, behaviour: str) -> Path:
    """A package directory whose ``mbi`` records the child's pid, working directory and
    temporary directory in ``child.txt`` beside it, then does ``behaviour``."""
    target = root / "target"
    (target / "mbi").mkdir(parents=True)
    (target / "mechanisms").mkdir()
    for name in MECHANISM_FILES:
        (target / "mechanisms" / name).write_text("")
    record = target / "child.txt"
    (target / "mbi" / "__init__.py").write_text(textwrap.dedent(f"""
        import os, signal, tempfile, time
        with open({str(record)!r}, "w") as f:
            f.write(f"{{os.getpid()}}\\n{{os.getcwd()}}\\n{{tempfile.gettempdir()}}\\n")
        if {behaviour!r} == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        elif {behaviour!r} == "raise":
            raise RuntimeError("the peer broke")
        else:
            time.sleep(120)
        """))
    return target


def read_record(target: Path) -> tuple[int, str, str]:
    pid, cwd, tmp = (target / "child.txt").read_text().splitlines()
    return int(pid), cwd, tmp


@pytest.fixture
def places(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """(the caller's working directory, the parent of the scratch directory), both empty."""
    caller, scratch_parent = tmp_path / "caller", tmp_path / "scratch"
    caller.mkdir()
    scratch_parent.mkdir()
    monkeypatch.chdir(caller)
    return caller, scratch_parent


def test_bad_arguments_refused_before_anything(tmp_path: Path) -> None:
    empty = str(tmp_path)
    bad = [dict(method="pgm"), dict(method=["aim"]), dict(epsilon=True), dict(epsilon=0.0),
           dict(epsilon=float("nan")),
           dict(delta=0.0), dict(delta=1.0), dict(seed=-1), dict(k=4), dict(k=True),
           dict(timeout=0.0)]
    for change in bad:
        kw = dict(method="mst", epsilon=1.0, delta=1e-9, seed=0, k=2, target=empty)
        kw.update(change)
        name = next(iter(change))
        with pytest.raises(ValueError, match=f"'{name}' parameter of pgm_peer.run"):
            pgm_peer.run(**kw)  # type: ignore[arg-type]
    assert list(tmp_path.iterdir()) == []


def test_missing_peer_starts_nothing(tmp_path: Path, places: tuple[Path, Path]) -> None:
    caller, scratch_parent = places
    no_mbi = tmp_path / "no-mbi"
    no_mbi.mkdir()
    no_mechanisms = tmp_path / "no-mechanisms"
    (no_mechanisms / "mbi").mkdir(parents=True)
    (no_mechanisms / "mbi" / "__init__.py").write_text("raise SystemExit('imported')\n")
    for target in (no_mbi, no_mechanisms, tmp_path / "absent"):
        assert not pgm_peer.available(str(target))
        for method in pgm_peer.METHODS:
            result = pgm_peer.run(method, 1.0, 1e-9, 0, 2, target=str(target),
                                  scratch_parent=str(scratch_parent))
            assert result == {"seconds": None, "l1_2way": None, "l1_3way": None,
                              "outcome": "missing", "version": None, "error": None}
    assert multiprocessing.active_children() == []
    assert list(scratch_parent.iterdir()) == [] and list(caller.iterdir()) == []


def test_child_killed_is_failed_and_its_scratch_removed(
        tmp_path: Path, places: tuple[Path, Path]) -> None:
    caller, scratch_parent = places
    target = stand_in_target(tmp_path, "kill")
    assert pgm_peer.available(str(target))
    result = pgm_peer.run("mst", 1.0, 1e-9, 0, 2, target=str(target), timeout=60.0,
                          scratch_parent=str(scratch_parent))
    assert result["outcome"] == "failed"
    assert result["error"] == "the child ended with code -9 and no result"
    assert result["l1_2way"] is None and result["l1_3way"] is None
    pid, cwd, tmp = read_record(target)
    assert pid != os.getpid()
    # The child worked in its own scratch directory, temporary files included, and that
    # directory is gone; nothing landed where the caller works.
    assert Path(cwd).parent == scratch_parent and tmp == cwd
    assert not Path(cwd).exists()
    assert list(scratch_parent.iterdir()) == [] and list(caller.iterdir()) == []
    assert Path.cwd() == caller


def test_child_exception_is_reported_as_failed(
        tmp_path: Path, places: tuple[Path, Path]) -> None:
    _, scratch_parent = places
    target = stand_in_target(tmp_path, "raise")
    result = pgm_peer.run("aim", 1.0, 1e-9, 0, 2, target=str(target), timeout=60.0,
                          scratch_parent=str(scratch_parent))
    assert result["outcome"] == "failed"
    assert result["error"] == "RuntimeError: the peer broke"
    assert list(scratch_parent.iterdir()) == []


def test_timeout_kills_the_child(tmp_path: Path, places: tuple[Path, Path]) -> None:
    _, scratch_parent = places
    target = stand_in_target(tmp_path, "hang")
    result = pgm_peer.run("aim", 1.0, 1e-9, 0, 2, target=str(target), timeout=1.5,
                          scratch_parent=str(scratch_parent))
    assert result["outcome"] == "timeout"
    assert result["l1_2way"] is None and result["l1_3way"] is None
    assert result["seconds"] is not None and result["seconds"] >= 1.5
    pid, cwd, _ = read_record(target)
    with pytest.raises(ProcessLookupError):          # killed and reaped
        os.kill(pid, 0)
    assert not Path(cwd).exists() and list(scratch_parent.iterdir()) == []
    assert multiprocessing.active_children() == []


@pytest.mark.skipif(not pgm_peer.available(pgm_peer.DEFAULT_TARGET),
                    reason=f"mbi and its mechanisms are not installed in "
                           f"{pgm_peer.DEFAULT_TARGET} (see dpfast.benchmarks.pgm_peer)")
def test_bridge_gives_installed_mbi_the_names_the_mechanisms_use() -> None:
    """In a fresh process (the bridge patches mbi's classes): with the installed mbi,
    ``potentials=`` is refused before the bridge if mbi is 2.x, and after it gives the same
    model as ``warm_start=``; ``Domain.attrs`` reads the attributes."""
    code = textwrap.dedent(f"""
        import sys, warnings
        sys.path.insert(0, {pgm_peer.DEFAULT_TARGET!r})
        warnings.simplefilter("ignore")
        import numpy as np, mbi
        from dpfast.benchmarks.pgm_peer import _bridge_mbi_2
        domain = mbi.Domain(("a", "b", "c"), (2, 3, 2))
        rng = np.random.default_rng(0)
        ms = [mbi.LinearMeasurement(rng.uniform(10, 20, 6), ("a", "b"), 1.0),
              mbi.LinearMeasurement(rng.uniform(10, 20, 6), ("b", "c"), 1.0)]
        fit = mbi.estimation.MirrorDescent()
        first = fit.estimate(domain, ms[:1], iters=20)
        if mbi.__file__.startswith({pgm_peer.DEFAULT_TARGET!r}) and not hasattr(domain, "attrs"):
            try:
                fit.estimate(domain, ms, iters=20, potentials=first.potentials)
                sys.exit("potentials= accepted before the bridge")
            except TypeError:
                pass
        _bridge_mbi_2(mbi)
        assert domain.attrs == ("a", "b", "c")
        joint = ("a", "b", "c")
        old = fit.estimate(domain, ms, iters=20, potentials=first.potentials)
        new = fit.estimate(domain, ms, iters=20, warm_start=first.potentials)
        gap = np.abs(np.asarray(old.project(joint).datavector())
                     - np.asarray(new.project(joint).datavector())).max()
        assert gap == 0.0, gap
        """)
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
