"""The cluster benchmark's scratch directory: a run makes and removes a directory of its
own, never the directory it was given (which may be a checkout, or a home directory)."""
import os

from dpfast.benchmarks import cluster


def test_a_run_uses_a_new_directory_inside_the_scratch(tmp_path):
    (tmp_path / "precious.txt").write_text("keep me")
    where = cluster.scratch_directory(str(tmp_path))
    assert os.path.dirname(where) == str(tmp_path) and os.listdir(where) == []
    assert where != cluster.scratch_directory(str(tmp_path))        # new each time
    assert (tmp_path / "precious.txt").read_text() == "keep me"
