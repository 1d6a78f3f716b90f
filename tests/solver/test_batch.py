"""Batches of certify and verify (issue 18): many inputs and parameter grids in one process, a
summary, exit status the worst job's, stable output names, --resume, interruption."""

from __future__ import annotations

import argparse
import json
import math
from fractions import Fraction
from pathlib import Path

import pytest

from softhard.solver.certjson import diff, load_certificate
from softhard.constructions.parse import load_spec
from softhard.solver.cli import main
from softhard.solver.cli.handlers import certify as certify_handler
from softhard.solver.cli.handlers.jobs import job_name
from softhard.solver.replay import unchecked_fields

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
#: envelope fields that differ between any two runs (times, creation date, hashes over them)
ENVELOPE = ("created", "times", "hashes", "tool")


def _json_lines(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def same_certificate(a: dict, b: dict) -> list:
    """The differences between two certificates outside the measured fields and the envelope."""
    return diff({k: v for k, v in a.items() if k not in ENVELOPE}, {k: v for k, v in b.items() if k not in ENVELOPE},
                unchecked_fields(a["kind"]))


@pytest.fixture
def formulas(tmp_path):
    d = tmp_path / "in"
    d.mkdir()
    (d / "ya.ltl").write_text("alphabet: a b\nformula: Y a\n")
    (d / "asb.ltl").write_text("alphabet: a b\nformula: a S b\n")
    return d


def test_grid_batch_certify_then_verify(formulas, tmp_path, capsys, monkeypatch):
    """2 files x regime U x eta {1/4, 1/8}: four jobs, each a certificate whose 1/tau is the
    regime-U closed form ln(1/eta) (THEORY §4, computed here with math.log), written under a
    stable name; the batch certificate equals the single-input command's; verify of the directory
    accepts all four."""
    out = tmp_path / "certs"
    rc = main(["certify", str(formulas / "ya.ltl"), str(formulas / "asb.ltl"), "--regime", "U", "--eta", "1/4,1/8",
               "--n-max", "1e2", "--find-tau", "--no-numeric", "-o", str(out), "--json"])
    lines = _json_lines(capsys.readouterr().out)
    assert rc == 0
    rows, summary = lines[:-1], lines[-1]["summary"]
    assert summary == {"jobs": 4, "finished": 4, "interrupted": False, "exit": 0}
    assert [(Path(r["input"]).name, r["params"]["eta"]) for r in rows] == [
        ("ya.ltl", "1/4"), ("ya.ltl", "1/8"), ("asb.ltl", "1/4"), ("asb.ltl", "1/8")]
    names = sorted(p.name for p in out.iterdir())
    assert len(names) == 4 and all(n.startswith(("ya.U.", "asb.U.")) and n.endswith(".json") for n in names)
    for r in rows:
        cert = load_certificate(r["certificate"])
        eta = Fraction(r["params"]["eta"])
        assert cert["status"] == "proved" and cert["range"]["n_max"] == 100 and cert["construction"]["regime"] == "U"
        inv_tau = Fraction(cert["construction"]["inv_tau"])
        closed = math.log(1 / eta)  # regime U: delta < e^{-1/tau} <= eta  <=>  1/tau >= ln(1/eta)
        assert closed <= float(inv_tau) <= closed * (1 + 1e-6)
        assert r["inv_tau"] == cert["construction"]["inv_tau"]
    # the same job alone (the single-input path) gives the same certificate
    single = tmp_path / "single.json"
    assert main(["certify", str(formulas / "asb.ltl"), "--regime", "U", "--eta", "1/8", "--n-max", "100",
                 "--find-tau", "--no-numeric", "-o", str(single)]) == 0
    capsys.readouterr()
    batch = load_certificate(rows[3]["certificate"])
    assert same_certificate(batch, load_certificate(single)) == []
    # the names are stable: the same job in another batch has the same name
    out2 = tmp_path / "certs2"
    assert main(["certify", str(formulas / "asb.ltl"), "--regime", "U", "--eta", "1/8", "--n-max", "100",
                 "--find-tau", "--no-numeric", "-o", str(out2) + "/"]) == 0
    assert [p.name for p in out2.iterdir()] == [Path(rows[3]["certificate"]).name]
    capsys.readouterr()
    # verify: the directory, one process, a summary table; exit 0 (a terminal wide enough for the
    # table's paths: under pytest-xdist tmp_path is longer and rich would wrap the names)
    monkeypatch.setenv("COLUMNS", "400")
    assert main(["verify", str(out)]) == 0
    text = capsys.readouterr().out
    assert text.count("valid") >= 4 and "INVALID" not in text and all(n in text for n in names)


def test_worst_exit_and_errors_are_rows(formulas, tmp_path, capsys):
    """A missing input is its job's row (exit 2) and the other job still runs and is written; the
    batch exits with the worst status."""
    out = tmp_path / "o"
    rc = main(["certify", str(formulas / "ya.ltl"), str(tmp_path / "missing.ltl"), "--regime", "U", "--n-max", "50",
               "--tau", "1/10", "--no-numeric", "-o", str(out), "--json"])
    rows = _json_lines(capsys.readouterr().out)
    assert rc == 2 and rows[-1]["summary"]["exit"] == 2
    assert rows[0]["exit"] == 0 and rows[0]["status"] == "proved"  # regime U: 1/tau = 10 >= ln 4
    assert rows[1]["exit"] == 2 and "missing.ltl" in rows[1]["error"] and rows[1]["certificate"] is None
    assert len(list(out.iterdir())) == 1


def test_batch_lines_escape_control_characters(formulas, tmp_path, capsys):
    """Fuzz find: an input holding a line-breaking control character (U+001C splits a line for
    ``str.splitlines``) or rich markup is echoed escaped, so every job stays one line."""
    rc = main(["certify", "\x1c[red]a", str(formulas / "ya.ltl"), "--regime", "U", "--n-max", "50", "--tau", "1/10",
               "--no-numeric", "-o", str(tmp_path / "o")])
    cap = capsys.readouterr()
    lines = cap.err.strip().splitlines()
    assert rc == 2 and len(lines) == 2
    assert lines[0].startswith("[1/2] \\x1c[red]a: error (") and lines[1].startswith("[2/2] ")
    assert "\\x1c[red]a" in cap.out and "\x1c" not in cap.out


def test_resume_skips_valid_and_redoes_edited(formulas, tmp_path, capsys):
    out = tmp_path / "o"
    argv = ["certify", str(formulas), "--regime", "T,U", "--n-max", "40", "--find-tau", "--no-numeric", "-o", str(out),
            "--json"]
    assert main(argv) == 0
    first = _json_lines(capsys.readouterr().out)[:-1]
    assert len(first) == 4  # the directory's two .ltl files x two regimes
    # without --resume or --force an existing certificate is refused (exit 2) and kept
    assert main(argv) == 2
    assert all(r["exit"] == 2 and "--resume" in r["error"] for r in _json_lines(capsys.readouterr().out)[:-1])
    # edit one certificate: --resume keeps the three valid ones and makes the edited one again
    edited = Path(first[1]["certificate"])
    doc = json.loads(edited.read_text())
    doc["construction"]["inv_tau"] = "1"
    edited.write_text(json.dumps(doc))
    before = {p.name: p.stat().st_mtime_ns for p in out.iterdir()}
    assert main(argv + ["--resume"]) == 0
    rows = _json_lines(capsys.readouterr().out)[:-1]
    assert [r["resumed"] for r in rows] == [True, False, True, True]
    after = {p.name: p.stat().st_mtime_ns for p in out.iterdir()}
    assert {n for n in after if after[n] != before[n]} == {edited.name}
    assert load_certificate(edited)["construction"]["inv_tau"] == first[1]["inv_tau"]


def test_interrupted_batch_keeps_finished_certificates(formulas, tmp_path, capsys, monkeypatch):
    calls = []
    real = certify_handler.CERTIFY["formula"]
    real_make = certify_handler.kind_certify("formula")

    def interrupting(args):
        calls.append(args.formula)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real_make(args)

    monkeypatch.setitem(certify_handler.CERTIFY, "formula", (interrupting, *real[1:]))
    out = tmp_path / "o"
    rc = main(["certify", str(formulas / "ya.ltl"), str(formulas / "asb.ltl"), "--regime", "U", "--n-max", "30",
               "--find-tau", "--no-numeric", "-o", str(out)])
    cap = capsys.readouterr()
    assert rc == 130 and "interrupted: 1 of 2 jobs finished" in cap.err
    written = list(out.iterdir())
    assert [p.name.split(".")[0] for p in written] == ["ya"] and load_certificate(written[0])["status"] == "proved"


def test_verify_batch_names_the_invalid_file(formulas, tmp_path, capsys):
    out = tmp_path / "o"
    assert main(["certify", str(formulas), "--regime", "U", "--n-max", "20", "--tau", "1/2", "--no-numeric",
                 "-o", str(out)]) == 0
    capsys.readouterr()
    files = sorted(out.iterdir())
    doc = json.loads(files[0].read_text())
    doc["range"]["n_max"] = 21
    files[0].write_text(json.dumps(doc))
    assert main(["verify", str(out / "*.json"), "--json"]) == 2  # a glob the shell did not expand
    rows = _json_lines(capsys.readouterr().out)
    assert [r["valid"] for r in rows[:-1]] == [False, True] and rows[-1]["summary"]["exit"] == 2
    assert rows[0]["certificate"] == str(files[0]) and "21" in rows[0]["error"] and rows[1]["error"] is None


@pytest.mark.parametrize("argv,needle", [
    (["certify", "--model", str(EXAMPLES / "models" / "ab_subsequence.json"), "--regime", "T,U", "--epsilon", "1/4",
      "--tau", "1/10"], "--regime has several values"),
    (["certify", "Y a", "--regime", "T,X", "--tau", "1/10"], "invalid choice: 'X'"),
    (["certify", "Y a", "--n-max", "1e3,", "--tau", "1/10"], "empty value"),
    (["certify", "Y a", "--n-max", "2.5", "--tau", "1/10"], "--n-max"),
    (["verify", "x.json", "--scheduler", "localhost:1"], "tcp://HOST:PORT"),
    (["certify", str(EXAMPLES / "nothing-*.ltl"), "--tau", "1/10"], "no file matches"),
    # trial9: accepted silently before
    (["certify", "Y a", "--tau", "1/10", "--resume"], "--resume needs -o DIR"),
    (["certify", "Y a", "--tau", "1/10", "--resume", "--force", "-o", "d"], "give one of them"),
    (["certify", "--model", str(EXAMPLES / "models" / "ab_subsequence.json"), str(EXAMPLES / "models" / "ab_subsequence.json"),
      "--epsilon", "1/4"], "repeat --model before each file"),
])
def test_batch_usage_errors_one_line(argv, needle, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and needle in err, err


def test_n_max_in_decimal_notation_is_the_integer(capsys):
    assert main(["certify", "Y a", "--regime", "U", "--n-max", "2e1", "--tau", "1/2", "--no-numeric", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["range"]["n_max"] == 20


def test_verify_batch_table_shows_any_status_value(tmp_path, capsys):
    """Fuzz find: a tampered certificate whose ``status`` is a number (or whose kind holds rich
    markup) crashed the batch table (rich cannot render a float: exit 3).  Each is shown as its
    JSON text, and the batch exits 2 (invalid certificates)."""
    for i, (kind, status) in enumerate([("formula", 1.5), ("[red]x", ["proved"])]):
        (tmp_path / f"c{i}.json").write_text(json.dumps({"schema": "softhard-certificate", "version": 2,
                                                          "kind": kind, "status": status}))
    assert main(["verify", str(tmp_path)]) == 2
    out = capsys.readouterr().out
    assert "INVALID" in out and "Traceback" not in out


def test_progress_counts_jobs_refused_for_an_existing_file(tmp_path, capsys):
    """Found by a new-user trial: re-running a batch without --force/--resume printed "[3/2] Y a :
    error" — the refused jobs were counted twice.  Each job is counted once, 1..N."""
    out = str(tmp_path / "d") + "/"
    assert main(["certify", "Y a", "P a", "--alphabet", "ab", "--n-max", "100", "--no-numeric", "-o", out]) == 0
    capsys.readouterr()
    assert main(["certify", "Y a", "P a", "H a", "--alphabet", "ab", "--n-max", "100", "--no-numeric", "-o", out]) == 2
    err = capsys.readouterr().err
    counters = [line.split("]")[0] + "]" for line in err.splitlines() if line.startswith("[")]
    assert counters == ["[1/3]", "[2/3]", "[3/3]"], err


def test_a_bare_names_stable_name_follows_the_ltl_file_it_reads(tmp_path):
    """``certify DIR/f`` reads ``DIR/f.ltl`` (load_spec): --resume must not keep a certificate of
    that file's old text, so the stable name's hash follows its bytes."""
    bare = str(tmp_path / "f")
    names = []
    for example in ("tomita4", "aba"):
        (tmp_path / "f.ltl").write_text((EXAMPLES / f"{example}.ltl").read_text())
        assert load_spec(bare).name == example
        names.append(job_name("formula", argparse.Namespace(formula=bare, model=None, tracr=None, regime="U")))
    assert names[0] != names[1]
    # named after the file it reads (was ``inline-..._f``: an inline formula's stem)
    assert [n.split(".")[0] for n in names] == ["f", "f"]


def test_two_inline_formulas_in_a_batch_are_told_apart_by_name(tmp_path, capsys):
    """A trial: every inline formula's certificate was named ``inline.REGIME.HASH8.json``."""
    out = tmp_path / "certs"
    assert main(["certify", "Y a", "a S !b", "--alphabet", "ab", "--regime", "U", "--n-max", "10", "--no-numeric",
                 "-o", f"{out}/"]) == 0
    assert sorted(p.name.split(".")[0] for p in out.glob("*.json")) == ["inline-Y_a", "inline-a_S_b"]
    capsys.readouterr()


def test_a_repeated_job_runs_once_and_the_batch_finishes(tmp_path, capsys):
    """A trial: ``--n-max 1e2,100,200`` (or a glob repeating a named file) gave two jobs one
    certificate name; the second write stopped the batch at 'file exists' before the third job."""
    out = tmp_path / "certs"
    rc = main(["certify", "Y a", "--alphabet", "ab", "--regime", "U", "--n-max", "1e2,100,200", "--no-numeric",
               "-o", f"{out}/", "--json"])
    cap = capsys.readouterr()
    lines = _json_lines(cap.out)
    assert rc == 0 and lines[-1]["summary"] == {"jobs": 2, "finished": 2, "interrupted": False, "exit": 0}
    assert sorted(load_certificate(p)["range"]["n_max"] for p in out.glob("*.json")) == [100, 200]
    assert "1 job(s) repeated another (the same input and options) and run once" in cap.err


def test_a_jobs_name_follows_values_not_spellings(tmp_path):
    """A trial: ``--eta 0.25`` and ``--eta 1/4``, and no ``--tau`` and ``--find-tau`` (certify's
    default), certify the same job but were named apart (--resume made it again)."""
    def name(**kw):
        a = argparse.Namespace(formula="Y a", model=None, tracr=None, regime="T", eta="1/4", tau=None,
                               find_tau=False, n_max=100)
        vars(a).update(kw)
        return job_name("formula", a)
    assert name() == name(eta="0.25") == name(find_tau=True) == name(eta=Fraction(1, 4))
    assert len({name(), name(eta="1/8"), name(tau="1/100"), name(n_max=101)}) == 4


def test_a_batch_output_named_json_is_refused(tmp_path, capsys):
    """A trial: ``-o single.json --resume`` made a directory named single.json."""
    target = tmp_path / "single.json"
    rc = main(["certify", "Y a", "--alphabet", "ab", "--n-max", "50", "--no-numeric", "-o", str(target), "--resume"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and not target.exists()
    assert err[-1] == (f"softhard: error: {target}: a batch writes one certificate per job into a directory "
                       "(-o DIR/), and this names a .json file; give a directory")
