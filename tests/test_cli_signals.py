"""SIGTERM and SIGHUP end the command like Ctrl-C, in a real process: one line, the shell's
exit code (128 + the signal), no temporary file left; a second signal does not cut the
clean-up short; a signal the parent ignored stays ignored; main() puts the previous
handlers back. Each run is stopped (SIGSTOP) as soon as its temporary output exists, so the
signals arrive while it works, without waiting out the benchmark."""
import os
import signal
import stat
import subprocess
import sys
import time

import pytest

from dpfast import cli
from dpfast.cli.outputs import OutputFile

LONG_BENCH = ["bench", "--size", "10000000", "--repeat", "50", "--no-libraries"]


def start(tmp_path, preexec_fn=None):
    """A long `dpfast bench --json`, stopped once its temporary output exists."""
    out = tmp_path / "bench.json"
    proc = subprocess.Popen([sys.executable, "-m", "dpfast", *LONG_BENCH, "--json", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=preexec_fn)
    deadline = time.monotonic() + 60
    while not list(tmp_path.glob(".bench.json.*.tmp")):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "no temporary output appeared"
        time.sleep(0.005)
    proc.send_signal(signal.SIGSTOP)
    tmp = next(tmp_path.glob(".bench.json.*.tmp"))
    assert stat.S_IMODE(tmp.stat().st_mode) == 0o600       # created 0600
    return proc


def finish(proc, *signals):
    for s in signals:
        proc.send_signal(s)
    proc.send_signal(signal.SIGCONT)
    return proc.communicate(timeout=60)


@pytest.mark.parametrize("sig, code, word", [(signal.SIGTERM, 143, "terminated"),
                                             (signal.SIGINT, 130, "interrupted"),
                                             (signal.SIGHUP, 129, "hung up")])
def test_a_stop_signal_exits_with_its_code_and_leaves_no_temporary(tmp_path, sig, code, word):
    proc = start(tmp_path)
    stdout, stderr = finish(proc, sig)
    assert proc.returncode == code, (stdout, stderr)
    assert stderr == f"dpfast: {word}\n"
    assert list(tmp_path.iterdir()) == []


def test_a_second_signal_does_not_cut_the_clean_up_short(tmp_path):
    proc = start(tmp_path)
    stdout, stderr = finish(proc, signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
    assert proc.returncode in (129, 130, 143), (stdout, stderr)
    assert stderr.count("dpfast: ") == 1 and "Traceback" not in stderr
    assert list(tmp_path.iterdir()) == []


def test_a_signal_the_parent_ignored_stays_ignored(tmp_path):
    # As under nohup (SIGHUP) or `trap '' TERM`: the command keeps running through them.
    def ignore():
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
    proc = start(tmp_path, preexec_fn=ignore)
    proc.send_signal(signal.SIGTERM)
    proc.send_signal(signal.SIGHUP)
    proc.send_signal(signal.SIGCONT)
    # Still running (a stop would have ended it): stop it again and end it with Ctrl-C.
    proc.send_signal(signal.SIGSTOP)
    stdout, stderr = finish(proc, signal.SIGINT)
    assert proc.returncode == 130 and stderr == "dpfast: interrupted\n", (stdout, stderr)
    assert list(tmp_path.iterdir()) == []


def test_main_restores_the_previous_handlers(capsys):
    def mine(signum, frame):
        pass
    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        signal.signal(signal.SIGTERM, mine)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        assert cli.main(["info"]) == 0
        assert signal.getsignal(signal.SIGTERM) is mine
        assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
        assert signal.getsignal(signal.SIGINT) is before[signal.SIGINT]
        with pytest.raises(SystemExit):
            cli.main(["histogram", "/no/such.csv", "--column", "a", "--bins", "0,1",
                      "--epsilon", "1"])
        assert signal.getsignal(signal.SIGTERM) is mine
    finally:
        for s, h in before.items():
            signal.signal(s, h)
    capsys.readouterr()


def test_help_lists_the_exit_codes(capsys):
    with pytest.raises(SystemExit) as info:
        cli.main(["--help"])
    assert info.value.code == 0
    text = capsys.readouterr().out
    for needle in ("Exit status", "130", "143", "129", "SIGTERM"):
        assert needle in text


def test_temporary_outputs_are_recorded_created_exclusively_and_removed(tmp_path):
    outputs = []
    target = OutputFile(str(tmp_path / "r.csv"), "--out", False, outputs)
    assert outputs == [target]                      # recorded by the command
    st = os.lstat(target.tmp)
    assert stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600
    assert st.st_size == 0 and os.path.dirname(target.tmp) == str(tmp_path)
    target.discard()
    assert list(tmp_path.iterdir()) == []
