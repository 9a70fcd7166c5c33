"""Build the documentation site as a reader would (``sphinx-build -W``: any warning is an
error) into a temporary directory; print what was built. Run in the background by the test
session (conftest.py); tests/test_docs_site.py reads the result."""
import pathlib
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]

with tempfile.TemporaryDirectory(prefix="dpfast-docs-") as out:
    built = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
         "-d", f"{out}/doctrees", str(ROOT / "docs"), f"{out}/html"])
    html = pathlib.Path(out, "html")
    pages = sorted(p.relative_to(html).as_posix() for p in html.rglob("*.html"))
    images = sorted(p.name for p in html.rglob("*.png"))
    print("pages:", " ".join(pages))
    print("images:", " ".join(images))
    sys.exit(built.returncode)
