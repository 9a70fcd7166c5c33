"""The command line's files: an output (--out, --plot, --json) never names the ledger, the
ledger's key file, the input or another output, and the ledger never names the input, however
the path is spelled; what the final rename needs is checked before the charge, as another user
would meet it (a sticky directory, a directory the user cannot write, a read-only file
system, a mount point)."""
import os
import shutil
import stat
import subprocess
import sys
import tempfile

import pytest

from dpfast import cli
from test_cli import run

PEOPLE = "name,age\nann,23\nbob,35\ncy,61\n"
HIST = ["histogram", "--column", "age", "--bins", "0,50,100", "--epsilon", "1"]
ROOT = os.geteuid() == 0
needs_root = pytest.mark.skipif(not ROOT, reason="runs the command as another uid (setuid)")
USER, OTHER = 4242, 65534


@pytest.fixture
def setup(tmp_path):
    """people.csv and a ledger of budget 5 that has already paid for one release."""
    people = tmp_path / "people.csv"
    people.write_text(PEOPLE)
    ledger = tmp_path / "budget.ledger"
    assert cli.main([*HIST[:1], str(people), *HIST[1:], "--ledger", str(ledger),
                     "--budget", "5"], out=open(os.devnull, "w"), err=open(os.devnull, "w")) == 0
    return tmp_path, people, ledger


def snapshot(directory):
    return {p.name: p.read_bytes() for p in directory.iterdir() if p.is_file()}


def refused(argv, capsys, pattern, directory):
    before = snapshot(directory)
    code, out, err = run(argv, capsys)
    assert code == 2 and out == "" and "Traceback" not in err, err
    assert pattern in err, err
    assert snapshot(directory) == before          # nothing created, written or charged
    return err


def test_out_never_names_the_ledger_however_spelled(setup, capsys, monkeypatch):
    tmp, people, ledger = setup
    (tmp / "link").symlink_to(ledger)
    os.link(ledger, tmp / "hard")
    (tmp / "sub").mkdir()
    (tmp / "dirlink").symlink_to(tmp)
    monkeypatch.chdir(tmp / "sub")
    for spelling in (ledger, tmp / "link", tmp / "hard", "../budget.ledger",
                     "./../sub/../budget.ledger", tmp / "dirlink" / "budget.ledger"):
        refused([HIST[0], people, *HIST[1:], "--ledger", ledger, "--out", spelling,
                 "--force"], capsys, "is the --ledger file", tmp)
    # The ledger named through a link, the output by its own name.
    refused([HIST[0], people, *HIST[1:], "--ledger", tmp / "link", "--out", ledger,
             "--force"], capsys, "is the --ledger file", tmp)


def test_out_never_names_the_ledgers_key_file(setup, capsys):
    tmp, people, ledger = setup
    key = str(ledger) + ".dpfast-key"
    (tmp / "keylink").symlink_to(key)              # dangling or not: the same name
    for spelling in (key, tmp / "keylink"):
        refused([HIST[0], people, *HIST[1:], "--ledger", ledger, "--out", spelling,
                 "--force"], capsys, "key file", tmp)


def test_a_dangling_symlink_to_a_new_ledger_is_caught_before_the_ledger_exists(tmp_path,
                                                                                capsys):
    people = tmp_path / "people.csv"
    people.write_text(PEOPLE)
    ledger = tmp_path / "new.ledger"
    (tmp_path / "out.csv").symlink_to(ledger)      # dangling: the ledger is not there yet
    refused([HIST[0], people, *HIST[1:], "--ledger", ledger, "--budget", "2", "--out",
             tmp_path / "out.csv", "--force"], capsys, "is the --ledger file", tmp_path)
    assert not ledger.exists()


def test_the_ledger_never_names_the_input(setup, capsys):
    tmp, people, ledger = setup
    os.link(people, tmp / "people-hard.csv")
    for spelling in (people, tmp / "people-hard.csv"):
        refused([HIST[0], people, *HIST[1:], "--ledger", spelling, "--budget", "5"], capsys,
                "--ledger", tmp)
    err = refused([HIST[0], people, *HIST[1:], "--ledger", people], capsys,
                  "is the input file", tmp)
    assert "ann" not in err


def test_plot_and_json_never_name_the_ledger_or_each_other(setup, capsys):
    pytest.importorskip("matplotlib")
    tmp, _, ledger = setup
    (tmp / "l.png").symlink_to(ledger)
    refused(["demo", "--ledger", ledger, "--plot", tmp / "l.png", "--force"], capsys,
            "--plot", tmp)
    refused(["bench", "--quick", "--only", "laplace", "--no-libraries", "--json",
             tmp / "r.png", "--plot", tmp / "r.png"], capsys, "the command writes both", tmp)


def test_out_never_names_the_input_through_a_symlinked_directory(setup, capsys):
    tmp, people, ledger = setup
    (tmp / "alias").symlink_to(tmp)
    refused([HIST[0], people, *HIST[1:], "--out", tmp / "alias" / "people.csv", "--force"],
            capsys, "is the input file", tmp)


# -- the final rename, as another user meets it ---------------------------------------------
@pytest.fixture
def shared():
    """/tmp-like directories another uid can reach: base (0755, root's) holding people.csv
    (0644), sticky/ (1777) and mine/ (the command's user's)."""
    base = tempfile.mkdtemp(dir="/tmp")
    try:
        os.chmod(base, 0o755)
        with open(os.path.join(base, "people.csv"), "w") as f:
            f.write(PEOPLE)
        os.chmod(os.path.join(base, "people.csv"), 0o644)
        os.mkdir(os.path.join(base, "sticky"))
        os.chmod(os.path.join(base, "sticky"), 0o1777)
        os.mkdir(os.path.join(base, "mine"))
        if ROOT:
            os.chown(os.path.join(base, "mine"), USER, USER)
        yield base
    finally:
        shutil.rmtree(base)


def as_user(argv, uid=USER, wrap=()):
    """The command run as ``uid`` (a real process): (code, stdout, stderr)."""
    cmd = [*wrap, "setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups",
           sys.executable, "-m", "dpfast", *map(str, argv)]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd="/",
                          env={**os.environ, "HOME": "/"})
    return proc.returncode, proc.stdout, proc.stderr


def hist(base, *extra):
    return [HIST[0], os.path.join(base, "people.csv"), *HIST[1:],
            "--ledger", os.path.join(base, "mine", "b.ledger"), "--budget", "1", *extra]


@needs_root
def test_another_users_file_in_a_sticky_directory_is_refused_before_the_charge(shared):
    planted = os.path.join(shared, "sticky", "out.csv")
    with open(planted, "w") as f:
        f.write("theirs\n")
    os.chown(planted, OTHER, OTHER)
    code, out, err = as_user(hist(shared, "--out", planted, "--force"))
    assert code == 2 and "belongs to another user" in err, err
    assert not os.path.exists(os.path.join(shared, "mine", "b.ledger"))     # not charged
    assert open(planted).read() == "theirs\n"
    assert os.listdir(os.path.join(shared, "sticky")) == ["out.csv"]


@needs_root
def test_a_new_name_in_a_sticky_directory_is_reserved_and_released_on_failure(shared):
    sticky = os.path.join(shared, "sticky")
    target = os.path.join(sticky, "new.csv")
    # Refused by the budget (2 > 1) after the output was checked: the reservation goes.
    code, _, err = as_user(hist(shared, "--out", target)[:-2] + ["--budget", "1",
                                                                 "--epsilon", "2"])
    assert code == 2 and "budget" in err, err
    assert os.listdir(sticky) == []
    code, _, err = as_user(hist(shared, "--out", target))
    assert code == 0, err
    st = os.stat(target)
    assert st.st_uid == USER and stat.S_IMODE(st.st_mode) == 0o600
    assert open(target).read().startswith("bin_low,bin_high,noisy_count")
    assert os.listdir(sticky) == ["new.csv"]


@needs_root
def test_a_directory_the_user_cannot_write_is_refused_before_the_charge(shared):
    code, _, err = as_user(hist(shared, "--out", os.path.join(shared, "x.csv")))
    assert code == 2 and "cannot write to the directory" in err, err
    assert not os.path.exists(os.path.join(shared, "mine", "b.ledger"))


def in_namespace(script):
    """A private mount namespace running ``script`` (sh), or skip."""
    probe = subprocess.run(["unshare", "-m", "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip("needs a private mount namespace (unshare -m) to mount a file system")
    return ["unshare", "-m", "sh", "-c", script, "sh"]


@needs_root
def test_a_read_only_file_system_is_refused_before_the_charge(shared):
    ro = os.path.join(shared, "ro")
    os.mkdir(ro)
    wrap = in_namespace(f"mount -t tmpfs -o ro none {ro} && exec \"$@\"")
    code, _, err = as_user(hist(shared, "--out", os.path.join(ro, "x.csv")), wrap=wrap)
    assert code == 2 and "read-only file system" in err, err
    assert not os.path.exists(os.path.join(shared, "mine", "b.ledger"))


@needs_root
def test_a_mount_point_is_refused_before_the_charge(shared):
    mine = os.path.join(shared, "mine")
    target, source = os.path.join(mine, "out.csv"), os.path.join(mine, "src.csv")
    for path in (target, source):
        with open(path, "w") as f:
            f.write("old\n")
        os.chown(path, USER, USER)
    wrap = in_namespace(f"mount --bind {source} {target} && exec \"$@\"")
    code, _, err = as_user(hist(shared, "--out", target, "--force"), wrap=wrap)
    assert code == 2 and "mount point" in err, err
    assert sorted(os.listdir(mine)) == ["out.csv", "src.csv"]      # no ledger, no temporary
