"""One version: dpfast.__version__ (written once), the installed package's metadata, the
command line's --version and the newest release in CHANGELOG.md agree."""
import importlib.metadata
import pathlib
import re
import subprocess
import sys

import dpfast

CHANGELOG = pathlib.Path(__file__).resolve().parent.parent / "CHANGELOG.md"


def test_the_package_metadata_is_the_modules_version():
    assert re.fullmatch(r"\d+\.\d+\.\d+", dpfast.__version__)
    assert importlib.metadata.version("dpfast") == dpfast.__version__


def test_the_command_line_reports_the_same_version():
    out = subprocess.run([sys.executable, "-m", "dpfast", "--version"], capture_output=True,
                         text=True, timeout=60, check=True).stdout
    assert out.strip() == f"dpfast {dpfast.__version__}"


def test_the_changelogs_newest_release_is_this_version():
    text = CHANGELOG.read_text(encoding="utf-8")
    releases = re.findall(r"^## \[(\d+\.\d+\.\d+)\] - (\d{4}-\d{2}-\d{2})$", text, re.M)
    assert releases and releases[0][0] == dpfast.__version__
    assert "## [Unreleased]" in text.split(f"## [{releases[0][0]}]")[0]
    # Newest first, each release once.
    versions = [tuple(map(int, v.split("."))) for v, _ in releases]
    assert versions == sorted(set(versions), reverse=True)
