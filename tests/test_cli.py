"""The command line: `dpfast histogram` on CSV and Parquet files, `dpfast demo` and its plot,
and the pandas form of the embedded data."""
import csv
import io
import re
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

import dpfast as dp
from dpfast import cli
from dpfast.datasets import load_adult

# At epsilon = 1e6 the noise scale is 1e-6, and |K| >= 1 would need U < exp(-1e6): beyond
# the sampler's deepest binade (2^-1099), so these releases are the exact counts.
EXACT = ["--epsilon", "1e6"]

PEOPLE = """\
name,age,status
ann,23,Married
bob,35,Never-married
cy,?,Married
dee,61,Widowed

eve, 47 ,Divorced
fay,17,Married
gus,,Never-married
hal,100,Married
"""
# Line numbers in PEOPLE (the header is line 1; line 6 is blank).
CY_LINE, GUS_LINE = 4, 9
# Ages present in PEOPLE; cy and gus have none.
AGES = [23, 35, 61, 47, 17, 100]


@pytest.fixture
def people(tmp_path):
    path = tmp_path / "people.csv"
    path.write_text(PEOPLE)
    return path


def run(argv, capsys):
    """(exit code, stdout, stderr) of one CLI call; usage errors give code 2 too."""
    try:
        code = cli.main([str(a) for a in argv])
    except SystemExit as exit_:
        code = exit_.code
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def rows(text):
    return list(csv.reader(io.StringIO(text)))


def fails(argv, capsys, *patterns):
    code, out, err = run(argv, capsys)
    assert code == 2, (out, err)
    assert out == "" and "Traceback" not in err
    for pattern in patterns:
        assert re.search(pattern, err), (pattern, err)
    return err


# -- dpfast histogram on CSV --------------------------------------------------------------
def test_bins_as_edges_give_exact_counts_at_huge_epsilon(people, capsys):
    code, out, err = run(["histogram", people, "--column", "age", "--bins",
                          "0,18,30,50,65,100", "--drop-missing", *EXACT], capsys)
    assert code == 0
    want = np.histogram(AGES, bins=[0, 18, 30, 50, 65, 100])[0]
    assert rows(out) == [["bin_low", "bin_high", "noisy_count"],
                         ["0", "18", str(want[0])], ["18", "30", str(want[1])],
                         ["30", "50", str(want[2])], ["50", "65", str(want[3])],
                         ["65", "100", str(want[4])]]
    assert want.tolist() == [1, 1, 2, 1, 1]      # 100 is in the last, closed bin


def test_bins_as_n_low_high(people, capsys):
    code, out, _ = run(["histogram", people, "--column", "age", "--bins", "4:0:100",
                        "--drop-missing", *EXACT], capsys)
    assert code == 0
    table = rows(out)[1:]
    assert [(r[0], r[1]) for r in table] == [("0", "25"), ("25", "50"), ("50", "75"),
                                             ("75", "100")]
    assert [int(r[2]) for r in table] == np.histogram(AGES, 4, range=(0, 100))[0].tolist()


def test_fractional_edges_are_written_exactly(people, capsys):
    code, out, _ = run(["histogram", people, "--column", "age", "--bins", "3:0:0.3",
                        "--drop-missing", *EXACT], capsys)
    assert code == 0
    edges = [float(r[0]) for r in rows(out)[1:]] + [float(rows(out)[-1][1])]
    assert edges == np.linspace(0, 0.3, 4).tolist()


def test_out_file_and_summary(people, tmp_path, capsys):
    dest = tmp_path / "release.csv"
    code, out, err = run(["histogram", people, "--column", "age", "--bins", "0,50,100",
                          "--drop-missing", "--epsilon", "0.5", "--out", dest], capsys)
    assert code == 0 and out == ""
    with open(dest, newline="") as f:
        table = list(csv.DictReader(f))
    assert [(r["bin_low"], r["bin_high"]) for r in table] == [("0", "50"), ("50", "100")]
    assert all(re.fullmatch(r"-?\d+", r["noisy_count"]) for r in table)
    # The summary: epsilon spent, number of cells, and the 95% bound for 2 cells at 0.5.
    from dpfast import max_error_bound
    assert "2 noisy counts" in err and "epsilon = 0.5 spent" in err
    assert f"within +/- {max_error_bound(2, epsilon=0.5)} " in err
    assert "probability 0.95" in err


def test_beta_changes_the_reported_bound(people, capsys):
    from dpfast import max_error_bound
    _, _, err = run(["histogram", people, "--column", "age", "--bins", "10:0:100",
                     "--drop-missing", "--epsilon", "1", "--beta", "0.001"], capsys)
    assert f"probability 0.999, every noisy count is within " \
           f"+/- {max_error_bound(10, epsilon=1.0, beta=0.001)} " in err


def test_seed_reproduces_the_release_and_says_it_is_not_private(people, capsys):
    argv = ["histogram", people, "--column", "age", "--bins", "10:0:100", "--drop-missing",
            "--epsilon", "0.1", "--seed", "7"]
    _, first, err = run(argv, capsys)
    _, second, _ = run(argv, capsys)
    assert first == second and "seed 7" in err
    _, third, _ = run(argv[:-1] + ["8"], capsys)
    assert third != first


def test_postprocess(people, capsys):
    for option in ("clip", "consistent"):
        code, out, err = run(["histogram", people, "--column", "age", "--bins", "20:0:100",
                              "--drop-missing", "--epsilon", "0.05", "--seed", "1",
                              "--postprocess", option], capsys)
        assert code == 0 and f"--postprocess {option}" in err
        assert min(int(r[2]) for r in rows(out)[1:]) >= 0


def test_categories_exact(people, capsys):
    code, out, _ = run(["histogram", people, "--column", "status", "--categories",
                        "Married,Never-married,Divorced,Widowed,Separated", *EXACT], capsys)
    assert code == 0
    assert rows(out) == [["category", "noisy_count"], ["Married", "4"],
                         ["Never-married", "2"], ["Divorced", "1"], ["Widowed", "1"],
                         ["Separated", "0"]]


def test_categories_with_other(people, capsys):
    code, out, _ = run(["histogram", people, "--column", "status", "--categories",
                        "Married, Divorced", "--other", *EXACT], capsys)
    assert code == 0
    assert rows(out)[1:] == [["Married", "4"], ["Divorced", "1"], ["(other)", "3"]]


def test_unknown_category_is_an_error_naming_the_line_not_the_value(people, capsys):
    err = fails(["histogram", people, "--column", "status", "--categories",
                 "Married,Divorced", *EXACT], capsys,
                r"line 3: the value of column 'status' is not in --categories", "--other",
                "not shown")
    assert "Never-married" not in err


def test_missing_numeric_value_is_an_error_naming_the_line(people, capsys):
    fails(["histogram", people, "--column", "age", "--bins", "0,50,100", *EXACT], capsys,
          rf"people\.csv, line {CY_LINE}: missing value '\?' in column 'age'",
          "--drop-missing")
    # An empty value is missing too.
    path = people.parent / "people2.csv"
    path.write_text(PEOPLE.replace("cy,?,", "cy,30,"))
    fails(["histogram", path, "--column", "age", "--bins", "0,50,100", *EXACT], capsys,
          rf"line {GUS_LINE}: missing value \(empty\)")


def test_missing_categorical_value(tmp_path, capsys):
    path = tmp_path / "s.csv"
    path.write_text("status\nA\n?\nB\n\"\"\nA\n")
    fails(["histogram", path, "--column", "status", "--categories", "A,B", *EXACT], capsys,
          r"line 3: missing value '\?'")
    _, out, _ = run(["histogram", path, "--column", "status", "--categories", "A,B",
                     "--drop-missing", *EXACT], capsys)
    assert rows(out)[1:] == [["A", "2"], ["B", "1"]]
    # --other counts missing values in its row (as dp.count_categories does) ...
    _, out, _ = run(["histogram", path, "--column", "status", "--categories", "A,B",
                     "--other", *EXACT], capsys)
    assert rows(out)[1:] == [["A", "2"], ["B", "1"], ["(other)", "2"]]
    # ... and "?" listed as a category is a category.
    _, out, _ = run(["histogram", path, "--column", "status", "--categories", "A,B,?",
                     "--drop-missing", *EXACT], capsys)
    assert rows(out)[1:] == [["A", "2"], ["B", "1"], ["?", "1"]]


def test_float_values(tmp_path, capsys):
    path = tmp_path / "f.csv"
    path.write_text("x\n0.5\n1.25\n1e1\n-3\n")
    # "=" keeps argparse from reading a first edge "-5" as an option.
    _, out, _ = run(["histogram", path, "--column", "x", "--bins=-5,0,1,2,20", *EXACT],
                    capsys)
    assert [int(r[2]) for r in rows(out)[1:]] == [1, 1, 1, 1]


@pytest.mark.parametrize("argv, pattern", [
    (["--column", "age", "--bins", "5:3"], r"--bins must be .* Got '5:3'"),
    (["--column", "age", "--bins", "0:0:10"], r"N >= 1 .* Got '0:0:10'"),
    (["--column", "age", "--bins", "3:10:0"], r"LOW < HIGH. Got '3:10:0'"),
    (["--column", "age", "--bins", "0,50,20"], r"strictly increasing. Got '0,50,20'"),
    (["--column", "age", "--bins", "10"], r"at least two edges.* Got '10'"),
    (["--column", "age", "--bins", "0,x"], r"Got '0,x'"),
    (["--column", "age", "--bins", "0,nan,3"], r"Got '0,nan,3'"),
    (["--column", "age", "--bins", "0,50", "--other"], r"--other only applies"),
    (["--column", "status", "--categories", "A,,B"], r"non-empty names. Got 'A,,B'"),
    (["--column", "status", "--categories", "A,B,A"], r"names 'A' more than once"),
    (["--column", "status", "--categories", "A,(other)", "--other"], r"'\(other\)'"),
    (["--column", "nope", "--bins", "0,50"],
     r"--column 'nope' is not a column of .*people\.csv \(its header row, line 1, has 3 "
     r"column\(s\); .*not shown"),
    (["--column", "name", "--bins", "0,50"], r"line 2: the value in column 'name' is not "
                                             r"a number"),
    (["--column", "age", "--bins", "0,50", "--epsilon", "1e-13"], r"--epsilon must be in"),
    (["--column", "age", "--bins", "0,50", "--out", "/no/such/dir/x.csv"],
     r"--out '/no/such/dir/x.csv': the directory '/no/such/dir' does not exist"),
])
def test_bad_arguments_give_a_message(people, capsys, argv, pattern):
    if "--epsilon" not in argv:
        argv = argv + ["--epsilon", "1"]
    err = fails(["histogram", people, *argv], capsys, pattern)
    assert err.startswith("dpfast: error: ")


@pytest.mark.parametrize("argv, pattern", [
    (["--column", "age", "--bins", "0,50", "--epsilon", "-1"], r"argument --epsilon"),
    (["--column", "age", "--bins", "0,50", "--epsilon", "1", "--beta", "1"],
     r"argument --beta: beta must be in \(0, 1\)"),
    (["--column", "age", "--epsilon", "1"], r"one of the arguments --bins --categories"),
    (["--column", "age", "--bins", "0,1", "--categories", "a", "--epsilon", "1"],
     r"not allowed with"),
])
def test_usage_errors(people, capsys, argv, pattern):
    fails(["histogram", people, *argv], capsys, pattern)


def test_unreadable_input(tmp_path, capsys):
    fails(["histogram", tmp_path / "absent.csv", "--column", "a", "--bins", "0,1", *EXACT],
          capsys, r"FILE '.*absent\.csv' is not a file")
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    fails(["histogram", empty, "--column", "a", "--bins", "0,1", *EXACT], capsys,
          r"is empty: a CSV file needs a header row")
    short = tmp_path / "short.csv"
    short.write_text("a,b\n1,2\n3\n")
    fails(["histogram", short, "--column", "b", "--bins", "0,5", *EXACT], capsys,
          r"line 3: 1 field\(s\), so no value for --column 'b'")
    binary = tmp_path / "bin.csv"
    binary.write_bytes(b"a\n\xff\xfe\n")
    fails(["histogram", binary, "--column", "a", "--bins", "0,5", *EXACT], capsys, "utf-8")


def test_header_only_file_releases_noise_only(tmp_path, capsys):
    path = tmp_path / "h.csv"
    path.write_text("\ufeffage\n")                # a byte-order mark is not part of the name
    code, out, _ = run(["histogram", path, "--column", "age", "--bins", "0,50", *EXACT],
                       capsys)
    assert code == 0 and rows(out)[1:] == [["0", "50", "0"]]


def test_command_line_process_exit_code(people):
    proc = subprocess.run([sys.executable, "-m", "dpfast", "histogram", str(people),
                           "--column", "age", "--bins", "0,50,100", "--epsilon", "1"],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith("dpfast: error: ") and "Traceback" not in proc.stderr


# -- Parquet ------------------------------------------------------------------------------
def test_parquet_round_trip(tmp_path, capsys):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    path = tmp_path / "people.parquet"
    pq.write_table(pa.table({
        "age": pa.array([23, 35, None, 61, 47, 17]),
        "status": pa.array(["M", "S", "M", None, "D", "M"]).dictionary_encode(),
    }), path)
    fails(["histogram", path, "--column", "age", "--bins", "0,50,100", *EXACT], capsys,
          r"people\.parquet, row 3: missing value \(null\) in column 'age'")
    code, out, _ = run(["histogram", path, "--column", "age", "--bins", "0,50,100",
                        "--drop-missing", *EXACT], capsys)
    assert code == 0 and rows(out)[1:] == [["0", "50", "4"], ["50", "100", "1"]]
    _, out, _ = run(["histogram", path, "--column", "status", "--categories", "M,S,D",
                     "--other", *EXACT], capsys)
    assert rows(out)[1:] == [["M", "3"], ["S", "1"], ["D", "1"], ["(other)", "1"]]
    fails(["histogram", path, "--column", "x", "--bins", "0,1", *EXACT], capsys,
          r"--column 'x' is not a column of .*people\.parquet")


def test_parquet_without_pyarrow(tmp_path, capsys, monkeypatch):
    path = tmp_path / "t.parquet"
    path.write_bytes(b"PAR1")
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    fails(["histogram", path, "--column", "a", "--bins", "0,1", *EXACT], capsys,
          r"Parquet file needs pyarrow, which is not installed: pip install pyarrow")


# -- dpfast demo --------------------------------------------------------------------------
MARITAL = {"Married-civ-spouse": 22_379, "Never-married": 16_117, "Divorced": 6_633,
           "Separated": 1_530, "Widowed": 1_518, "Married-spouse-absent": 628,
           "Married-AF-spouse": 37}


def demo_rows(out, labels):
    """label -> (true, noisy, noisy - true) for the table rows that start with a label."""
    found = {}
    for line in out.splitlines():
        m = re.match(r"   (\S.*?)\s+([\d,]+)\s+(-?[\d,]+)\s+([+-][\d,]+)$", line)
        if m and m.group(1) in labels:
            found[m.group(1)] = tuple(int(g.replace(",", "")) for g in m.groups()[1:])
    return found


def test_demo_structure(capsys):
    code, out, _ = run(["demo", "--seed", "5"], capsys)
    assert code == 0
    lines = out.splitlines()
    assert len(lines) <= 60 and max(map(len, lines)) <= 100
    assert out.count("DEMO ONLY - a real release never shows true counts") == 3
    assert "epsilon = 3 in total" in out and "Budget spent: epsilon = 3 of 3" in out
    # Count, age histogram, marital table: true vs noisy, consistent differences.
    over_50 = demo_rows(out, ["people over 50"])["people over 50"]
    assert over_50[0] == 6_460
    ages = [f"[{lo}, {lo + 10})" for lo in range(15, 85, 10)] + ["[85, 95]"]
    age_rows = demo_rows(out, ages)
    assert list(age_rows) == ages
    train = load_adult("train")["age"]
    assert [r[0] for r in age_rows.values()] == np.histogram(train, 8, range=(15, 95))[0].tolist()
    marital = demo_rows(out, list(MARITAL))
    assert {k: v[0] for k, v in marital.items()} == MARITAL
    for true, noisy, diff in [over_50, *age_rows.values(), *marital.values()]:
        assert noisy - true == diff
    # The 95% bounds at epsilon 1: one count, then 8 and 7 cells simultaneously.
    from dpfast import max_error_bound
    assert f"within +/- {max_error_bound(1, epsilon=1.0)} of the true count" in out
    assert f"all 8 noisy counts are within +/- {max_error_bound(8, epsilon=1.0)} " in out
    assert f"all 7 noisy counts are within +/- {max_error_bound(7, epsilon=1.0)} " in out
    assert "seed 5" in out


def test_demo_epsilon_sets_each_release(capsys):
    from dpfast import max_error_bound
    _, out, _ = run(["demo", "--epsilon", "0.1", "--seed", "1"], capsys)
    assert "3 releases at epsilon = 0.1 each" in out
    assert "Budget spent: epsilon = 0.3 of 0.3" in out      # exact decimal accounting
    assert f"+/- {max_error_bound(8, epsilon=0.1)} of the truth" in out


def test_demo_without_seed_says_nothing_about_seeds(capsys):
    _, out, _ = run(["demo"], capsys)
    assert "seed" not in out


def test_demo_plot_writes_a_png(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    path = tmp_path / "demo.png"
    code, out, _ = run(["demo", "--seed", "2", "--plot", path], capsys)
    assert code == 0 and f"written to {path}" in out
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(data) > 20_000                        # two panels of bars, labels and legends


def test_demo_plot_without_matplotlib(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    path = tmp_path / "demo.png"
    fails(["demo", "--plot", path], capsys, r"--plot needs matplotlib.*pip install matplotlib")
    assert not path.exists()


def test_demo_plot_needs_a_png_name_in_a_directory(tmp_path, capsys):
    fails(["demo", "--plot", tmp_path / "demo.jpg"], capsys, r"ending in \.png")
    fails(["demo", "--plot", tmp_path / "no" / "demo.png"], capsys,
          r"--plot '.*demo\.png': the directory '.*no' does not exist")


@pytest.mark.parametrize("eps", ["1e-13", "1e308"])
def test_demo_epsilon_out_of_range(eps, capsys):
    fails(["demo", "--epsilon", eps], capsys, rf"--epsilon must be in .* Got {eps[:2]}")


# -- record values stay out of messages ---------------------------------------------------
def test_no_error_message_shows_a_record(tmp_path, capsys):
    path = tmp_path / "secrets.csv"
    path.write_text("income,city\n41000,Springfield\nSECRET-41,Shelbyville\n5,inf\n")
    for argv in (["--column", "income", "--bins", "0,1e6"],
                 ["--column", "city", "--categories", "Springfield"],
                 ["--column", "city", "--bins", "0,1"]):
        err = fails(["histogram", path, *argv, *EXACT], capsys, r"line \d")
        for secret in ("SECRET-41", "Shelbyville", "Springfield'"):
            assert secret not in err, err


# -- output files ----------------------------------------------------------------------------
def test_out_refuses_to_replace_a_file_without_force(people, tmp_path, capsys):
    out = tmp_path / "ages.csv"
    out.write_text("keep me\n")
    args = ["histogram", people, "--column", "age", "--bins", "0,50,100", "--drop-missing", *EXACT,
            "--out", out]
    fails(args, capsys, r"--out '.*ages\.csv' exists: pass --force")
    assert out.read_text() == "keep me\n"
    code, _, _ = run(args + ["--force"], capsys)
    assert code == 0 and rows(out.read_text())[0] == ["bin_low", "bin_high", "noisy_count"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ages.csv", "people.csv"]


def test_out_never_replaces_the_input(people, capsys):
    before = people.read_text()
    for extra in ([], ["--force"]):
        fails(["histogram", people, "--column", "age", "--bins", "0,50,100", "--drop-missing", *EXACT,
               "--out", people, *extra], capsys, "is the input file")
    assert people.read_text() == before


def test_a_failed_release_leaves_the_old_file_and_no_temporary(people, tmp_path, capsys):
    out = tmp_path / "ages.csv"
    out.write_text("old release\n")
    ledger = tmp_path / "b.ledger"
    fails(["histogram", people, "--column", "age", "--bins", "0,50,100", "--drop-missing", "--epsilon", "2",
           "--ledger", ledger, "--budget", "1", "--out", out, "--force"], capsys,
          "budget")
    assert out.read_text() == "old release\n"
    # (the ledger's key file, <ledger>.dpfast-key, may sit beside it)
    assert sorted(p.name for p in tmp_path.iterdir()
                  if not p.name.endswith(".dpfast-key")) == ["ages.csv", "b.ledger",
                                                             "people.csv"]


# -- durable budgets -------------------------------------------------------------------------
def test_ledger_budget_is_shared_across_runs(people, tmp_path, capsys):
    ledger = tmp_path / "budget.ledger"
    args = ["histogram", people, "--column", "age", "--bins", "0,50,100", "--drop-missing", "--epsilon",
            "0.6", "--ledger", ledger]
    fails(args, capsys, r"does not exist: pass --budget")
    code, out, err = run(args + ["--budget", "1"], capsys)
    assert code == 0 and "epsilon = 0.6 spent of 1, 0.4 left" in err
    fails(args, capsys, r"budget")                      # a second run would need 1.2
    assert dp.Accountant.from_ledger(str(ledger)).spent == (0.6, 0.0)
    fails(args + ["--budget", "2"], capsys, r"holds a budget of epsilon = 1, not --budget 2")
    fails(["histogram", people, "--column", "age", "--bins", "0,50", "--epsilon", "1",
           "--budget", "1"], capsys, r"--budget sets the budget of a new --ledger")


def test_demo_charges_its_ledger(tmp_path, capsys):
    ledger = tmp_path / "demo.ledger"
    code, out, _ = run(["demo", "--ledger", ledger, "--seed", "1"], capsys)
    assert code == 0 and f"ledger {ledger}: epsilon = 3 spent of 3, 0 left" in out
    fails(["demo", "--ledger", ledger], capsys, r"cannot cover the demo's 3 releases")
    assert len(dp.Accountant.from_ledger(str(ledger))) == 3


# -- text encodings, Ctrl-C, tiny epsilon ----------------------------------------------------
def test_a_file_in_another_encoding_names_the_line_and_offers_encoding(tmp_path, capsys):
    path = tmp_path / "latin.csv"
    path.write_bytes("city\nLyon\nSão Paulo\nLyon\n".encode("latin-1"))
    err = fails(["histogram", path, "--column", "city", "--categories", "Lyon,São Paulo",
                 *EXACT], capsys, r"latin\.csv, line 3: the byte at offset 11 of the file "
                r"\(byte 2 of the line\) "
                r"is not valid utf-8 text",
                "--encoding")
    assert "Traceback" not in err
    code, out, _ = run(["histogram", path, "--column", "city", "--categories",
                        "Lyon,São Paulo", "--encoding", "latin-1", *EXACT], capsys)
    assert code == 0 and rows(out)[1:] == [["Lyon", "2"], ["São Paulo", "1"]]
    fails(["histogram", path, "--column", "city", "--categories", "Lyon", "--encoding",
           "klingon", *EXACT], capsys, r"unknown text encoding 'klingon'")


def test_ctrl_c_exits_130_with_one_line(tmp_path):
    out = tmp_path / "bench.json"
    proc = subprocess.Popen([sys.executable, "-m", "dpfast", "bench", "--size", "10000000",
                             "--repeat", "50", "--no-libraries", "--json", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60          # until the command is at work (its temporary)
    while not list(tmp_path.glob(".bench.json.*.tmp")) and time.monotonic() < deadline:
        assert proc.poll() is None
        time.sleep(0.005)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, (stdout, stderr)
    assert stderr == "dpfast: interrupted\n"
    assert list(tmp_path.iterdir()) == []               # no partial or temporary file


def test_demo_columns_stay_apart_at_a_tiny_epsilon(capsys):
    code, out, _ = run(["demo", "--epsilon", "1e-9", "--seed", "2"], capsys)
    assert code == 0
    table_rows = [line for line in out.splitlines()
                  if line.startswith("   ") and re.search(r"\d\s*$", line)
                  and "DEMO ONLY" not in line and "+/-" not in line]
    assert len(table_rows) == 1 + 8 + 7
    for line in table_rows:
        fields = re.split(r"\s{2,}", line.strip())
        assert len(fields) == 4, line
        assert abs(int(fields[2].replace(",", ""))) > 10**6     # noise of scale 1e9
