"""Every read error of the command line names the file and, where known, the line (or the
Parquet row), and never the bad value: CSV parse errors, a missing column (not even the
header's names: in a file without a header they are a record), a bad value, an undecodable
byte, a file that cannot be read or is a directory, a corrupt Parquet file, a ledger that
cannot be opened; an error without a message shows its name."""
import os
import shutil
import subprocess
import sys
import tempfile

import pytest

from dpfast import cli
from dpfast.cli.errors import message

SECRET = "SECRET-4177"
EXACT = ["--epsilon", "1e6"]


def fails(argv, capsys, *needles):
    try:
        code = cli.main([str(a) for a in argv])
    except SystemExit as exit_:
        code = exit_.code
    captured = capsys.readouterr()
    err = captured.err
    assert code == 2 and captured.out == "" and "Traceback" not in err, err
    for needle in needles:
        assert needle in err, (needle, err)
    assert SECRET not in err and "4177" not in err, err
    return err


def test_csv_parse_errors_name_the_file_and_line(tmp_path, capsys):
    path = tmp_path / "big.csv"
    path.write_text(f"a,b\n1,2\n3,{SECRET}{'x' * 200_000}\n")   # beyond csv's field limit
    fails(["histogram", path, "--column", "a", "--bins", "0,5", *EXACT], capsys,
          f"{path}, line 3: not valid CSV: field larger than field limit")


def test_a_missing_column_never_shows_the_header(tmp_path, capsys):
    # No header row: the first line is a record, and the message must not show it.
    path = tmp_path / "headerless.csv"
    path.write_text(f"{SECRET},41\nbob,35\n")
    err = fails(["histogram", path, "--column", "age", "--bins", "0,50", *EXACT], capsys,
                f"--column 'age' is not a column of {path}", "line 1", "2 column(s)")
    assert "41" not in err.replace(str(path), "")     # (pytest's temporary path may hold 41)


def test_a_bad_value_names_its_line_and_column(tmp_path, capsys):
    path = tmp_path / "v.csv"
    path.write_text(f"age\n23\n{SECRET}\n")
    fails(["histogram", path, "--column", "age", "--bins", "0,50", *EXACT], capsys,
          f"{path}, line 3: the value in column 'age' is not a number")


def test_an_undecodable_byte_is_named_by_its_position(tmp_path, capsys):
    path = tmp_path / "enc.csv"
    path.write_bytes(b"city\nab\xfez\n")
    err = fails(["histogram", path, "--column", "city", "--categories", "ab", *EXACT], capsys,
                f"{path}, line 2: the byte at offset 7 of the file (byte 3 of the line)")
    assert "0xfe" not in err and "\\xfe" not in err


def test_a_directory_or_a_dangling_link_is_named(tmp_path, capsys):
    fails(["histogram", tmp_path, "--column", "a", "--bins", "0,1", *EXACT], capsys,
          f"FILE '{tmp_path}' is not a file (it is a directory)")
    (tmp_path / "gone.csv").symlink_to(tmp_path / "nothing.csv")
    fails(["histogram", tmp_path / "gone.csv", "--column", "a", "--bins", "0,1", *EXACT],
          capsys, "is not a file (a symbolic link to nothing)")


def test_a_corrupt_parquet_file_is_named(tmp_path, capsys):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"PAR1" + SECRET.encode() * 10 + b"PAR1")
    fails(["histogram", bad, "--column", "a", "--bins", "0,1", *EXACT], capsys,
          f"FILE '{bad}' is not a readable Parquet file")
    good = tmp_path / "t.parquet"
    pq.write_table(pa.table({"age": pa.array([23, 35, 61] * 50)}), good,
                   compression="none")
    raw = bytearray(good.read_bytes())
    raw[8:200] = b"\xff" * 192                     # the column chunk's data, not the footer
    (tmp_path / "torn.parquet").write_bytes(bytes(raw))
    err = fails(["histogram", tmp_path / "torn.parquet", "--column", "age", "--bins", "0,50",
                 *EXACT], capsys, "torn.parquet", "Parquet")
    assert "\\x" not in repr(err)[1:-1].replace("\\n", "")     # no raw bytes quoted


def test_a_ledger_that_cannot_be_opened_is_named(tmp_path, capsys):
    people = tmp_path / "people.csv"
    people.write_text("age\n23\n")
    (tmp_path / "dir.ledger").mkdir()
    fails(["histogram", people, "--column", "age", "--bins", "0,50", *EXACT, "--ledger",
           tmp_path / "dir.ledger"], capsys, f"--ledger '{tmp_path / 'dir.ledger'}'")
    junk = tmp_path / "junk.ledger"
    junk.write_bytes(SECRET.encode() * 4)
    fails(["histogram", people, "--column", "age", "--bins", "0,50", *EXACT, "--ledger",
           junk], capsys, "junk.ledger")


@pytest.mark.skipif(os.geteuid() != 0, reason="reads the files as another uid (setuid)")
def test_files_another_user_cannot_read_are_named():
    base = tempfile.mkdtemp(dir="/tmp")
    try:
        os.chmod(base, 0o755)
        secret, ledger = os.path.join(base, "people.csv"), os.path.join(base, "b.ledger")
        with open(secret, "w") as f:
            f.write(f"age\n{SECRET}\n")
        os.chmod(secret, 0o600)                      # root's, unreadable by uid 4242
        with open(ledger, "wb"):
            pass
        os.chmod(ledger, 0o600)
        for argv, needle in (
                ([secret], f"FILE '{secret}' cannot be read: Permission denied"),
                ([os.path.join(base, "ok.csv"), "--ledger", ledger],
                 f"--ledger '{ledger}' cannot be opened: Permission denied")):
            if not os.path.exists(os.path.join(base, "ok.csv")):
                with open(os.path.join(base, "ok.csv"), "w") as f:
                    f.write("age\n1\n")
            proc = subprocess.run(
                ["setpriv", "--reuid=4242", "--regid=4242", "--clear-groups", sys.executable,
                 "-m", "dpfast", "histogram", *argv, "--column", "age", "--bins", "0,50",
                 "--epsilon", "1"], capture_output=True, text=True, cwd="/")
            assert proc.returncode == 2 and needle in proc.stderr, proc.stderr
            assert SECRET not in proc.stderr and "Traceback" not in proc.stderr
    finally:
        shutil.rmtree(base)


def test_an_error_without_a_message_shows_its_name():
    assert message(MemoryError()) == "MemoryError"
    assert message(ValueError("bad")) == "bad"
