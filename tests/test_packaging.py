"""``python -m build`` makes an sdist and a wheel; the wheel installs into a fresh venv and
passes the README's smoke test there (tests/packaging_check.py, run in the background from
the start of the session; see conftest.py)."""
import re

import dpfast
from conftest import background_result


def test_the_wheel_installs_in_a_fresh_venv_and_runs_the_demo():
    code, out = background_result("wheel")
    assert code == 0, out
    fields = dict(re.findall(r"^(sdist|wheel|version|imported from): (.*)$", out, re.M))
    sdist, wheel = fields["sdist"].split(), fields["wheel"].split()
    # The sdist holds what a build needs (the compiled core's sources), the tests with the data
    # they read (the pinned answers), and the docs' sources.
    for name in ("pyproject.toml", "setup.py", "LICENSE", "CHANGELOG.md", "README.md",
                 "src/dpfast/_native.pyx", "src/dpfast/_core/chacha20.c", "docs/conf.py",
                 "tests/known_answers.json", "tests/conftest.py",
                 "docs/plots/grouped_mean_error.py"):
        assert name in sdist, name
    # The wheel holds the compiled module, its stub, the typing marker and the bundled data.
    assert any(re.fullmatch(r"dpfast/_native\..*\.so", n) for n in wheel)
    for name in ("dpfast/_native.pyi", "dpfast/py.typed", "dpfast/__init__.py"):
        assert name in wheel, name
    assert any(n.startswith("dpfast/datasets/") and n.endswith(".csv.gz") for n in wheel)
    assert fields["version"] == f"dpfast {dpfast.__version__}"
    assert "/venv/lib/" in fields["imported from"]          # the installed copy, not src/
    demo = out.split("demo:\n", 1)[1]
    assert "epsilon" in demo.lower() and "age" in demo.lower(), demo
