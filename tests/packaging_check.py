"""The release artefacts work on a machine that has never seen the source tree: build the
sdist and, from it, the wheel (``python -m build``), install the wheel into a fresh venv and
run the README's smoke test there (``dpfast demo``, ``dpfast --version``). Run in the
background by the test session (conftest.py); tests/test_packaging.py reads the result.

The build runs without build isolation: the test extras install its requirements (setuptools,
Cython, numpy), so the check needs no network for the build itself; the fresh venv takes
numpy from pip's usual index, as a user's would."""
import os
import pathlib
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile

ROOT = pathlib.Path(__file__).resolve().parents[1]


def run(*argv: str, env_extra: dict[str, str] | None = None, **kw: object) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(env_extra or {})
    done = subprocess.run(argv, capture_output=True, text=True, env=env, **kw)
    if done.returncode:
        print(f"FAILED ({done.returncode}): {' '.join(argv)}\n{done.stdout[-3000:]}\n"
              f"{done.stderr[-3000:]}")
        sys.exit(1)
    return done.stdout


# What a build writes beside the sources, and what is not the project's: not copied.
NOT_SOURCES = shutil.ignore_patterns(".git", ".venv", "build", "dist", "*.egg-info", "_build",
                                     "__pycache__", ".*cache", ".hypothesis", "*.so",
                                     "_native.c")

with tempfile.TemporaryDirectory(prefix="dpfast-wheel-") as tmp:
    dist, venv = pathlib.Path(tmp, "dist"), pathlib.Path(tmp, "venv")
    # The sdist is built from a copy of the tree: setup.py cythonizes and writes egg-info
    # where it runs, and this build must leave the developer's tree (its _native.c above
    # all) as it found it, whatever runs beside it.
    tree = pathlib.Path(tmp, "tree")
    shutil.copytree(ROOT, tree, ignore=NOT_SOURCES, symlinks=True)
    # DPFAST_DEBUG=1 (setup.py): -O0 with Cython's bounds checks, a build in 7 s of a core
    # instead of 24 s at -O3. This check is of what the artefacts hold and that they install
    # and run (the demo then runs with bounds checks on); the optimised build is the one the
    # rest of the suite tests.
    run(sys.executable, "-m", "build", "--no-isolation", "--outdir", str(dist), str(tree),
        env_extra={"DPFAST_DEBUG": "1"})
    (sdist,) = dist.glob("dpfast-*.tar.gz")
    (wheel,) = dist.glob("dpfast-*.whl")
    with tarfile.open(sdist) as t:
        print("sdist:", " ".join(sorted(n.split("/", 1)[1] for n in t.getnames() if "/" in n)))
    with zipfile.ZipFile(wheel) as z:
        print("wheel:", " ".join(sorted(z.namelist())))
    # A fresh venv without pip of its own (ensurepip costs seconds); this interpreter's pip
    # installs into it.
    run(sys.executable, "-m", "venv", "--without-pip", str(venv))
    run(sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "-q",
        "--disable-pip-version-check", str(wheel))
    print("version:", run(str(venv / "bin" / "dpfast"), "--version", cwd=tmp).strip())
    print("imported from:", run(str(venv / "bin" / "python"), "-c",
                                "import dpfast; print(dpfast.__file__)", cwd=tmp).strip())
    print("demo:")
    print(run(str(venv / "bin" / "dpfast"), "demo", cwd=tmp))
