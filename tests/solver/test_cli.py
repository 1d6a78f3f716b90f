"""The `run`, `bound` and `confirm` commands (issue 2 item 8): outputs, JSON, exit codes, errors."""

from __future__ import annotations

import io
import json
import math
import re
import subprocess
import sys
import threading
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from rich.console import Console

from softhard.solver.cli import _parsers_for, build_parsers, main
from softhard.solver.cli.handlers.certificates import print_float64_premise
from softhard.solver.cli.options import attach_negative_values, value_options

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
T4 = str(EXAMPLES / "tomita4.ltl")


def run_json(capsys, *argv):
    rc = main([*argv, "--json"])
    out = capsys.readouterr().out
    return rc, json.loads(out)


def test_run_tomita4_regime_T(capsys):
    rc, r = run_json(capsys, "run", T4, "1101001", "--regime", "T")
    assert rc == 0
    assert r["n"] == 7 and r["judged_at"] == "last"
    # reference: 1101001 has no factor 000 → accepted, by all three
    assert r["accepted"] == {"reference": True, "hard": True, "soft": True}
    want = [0 if re.search("000", "1101001"[: p + 1]) else 1 for p in range(7)]
    assert [p["reference"] for p in r["positions"]] == want
    assert [round(p["hard"]) for p in r["positions"]] == want
    assert all(abs(p["soft"] - p["hard"]) < 1e-9 for p in r["positions"])
    # raw soft values before clean-up stay within η = 1/4 of the hard Boolean
    for p in r["positions"]:
        for v in p["raw"].values():
            assert min(v, 1 - v) <= 0.25
    for h in r["heads"].values():
        assert h["observed_leak"] <= h["bound"] * (1 + 1e-9) and h["within_eta"]
    # default temperature: the closed form at n = 7, Θ(n)
    assert r["tau_source"].startswith("closed form")
    rc, r2 = run_json(capsys, "run", T4, "11000", "--regime", "U")
    assert r2["accepted"] == {"reference": False, "hard": False, "soft": False}
    assert abs(r2["inv_tau"] - math.log(4) * (1 + 0)) < 0.01  # regime U: 1/τ ≈ ln(1/η), independent of n


def test_run_future_formula_judged_at_first(capsys):
    rc, r = run_json(capsys, "run", str(EXAMPLES / "a_then_b.ltl"), "abab", "--regime", "U")
    assert r["judged_at"] == "first" and r["accepted"]["soft"] is True
    rc, r = run_json(capsys, "run", str(EXAMPLES / "a_then_b.ltl"), "abba", "--regime", "T")
    assert r["accepted"] == {"reference": False, "hard": False, "soft": False}


def test_run_with_a_too_warm_temperature_says_so(capsys):
    rc, r = run_json(capsys, "run", "Y a", "b" * 40 + "a", "--tau", "1/3", "--alphabet", "ab")
    assert rc == 0
    assert not r["heads"]["Y a"]["within_eta"]


def test_run_exit_code_follows_the_verdict(capsys):
    """Exit 1 when the soft verdict differs from the hard one, in text and JSON mode alike."""
    w = "1100001"
    assert re.search("000", w)  # Tomita 4 rejects it
    rc, r = run_json(capsys, "run", T4, w, "--tau", "1/3")
    assert r["accepted"]["reference"] is False and r["accepted"]["hard"] is False
    assert rc == (0 if r["accepted"]["soft"] is False else 1) == 1
    assert main(["run", T4, w, "--tau", "1/3"]) == 1
    assert "soft verdict differs" in capsys.readouterr().out


def test_run_node_bounds_assume_clean_inputs(capsys):
    """At a too-warm temperature a node whose ancestor exceeds eta has no applicable bound: the run
    names the ancestor instead of comparing (the P node's leak may exceed its own bound there)."""
    w = "00000111010111100010"
    rc, r = run_json(capsys, "run", T4, w, "--tau", "1/100")
    h = r["heads"]
    assert not h["Y 0"]["within_eta"] and h["Y 0"]["premise"] is None and not h["Y 0"]["exceeded"]
    assert h["Y (Y 0)"]["premise"] == "Y 0"
    assert h["P ((0 & (Y 0)) & (Y (Y 0)))"]["premise"] == "Y 0"
    assert main(["run", T4, w, "--tau", "1/100"]) in (0, 1)
    out = capsys.readouterr().out
    assert "bound not applicable: node Y 0 exceeds eta" in out and "BOUND EXCEEDED" not in out
    # at the required temperature every comparison is made, and holds
    assert main(["run", T4, "1101001"]) == 0
    out = capsys.readouterr().out
    assert out.count("<= bound") == 3 and "not applicable" not in out


def test_confirm_at_a_too_warm_temperature_refutes_nothing(capsys):
    """Differing outputs at lengths where a bound exceeds eta are expected (exactness is not
    claimed there): they are reported as unguarded, with the premise failures, and refute nothing."""
    rc = main(["confirm", T4, "--tau", "1/100", "--n-max", "200", "--random", "100", "--exhaustive-len", "6",
               "--json"])
    r = json.loads(capsys.readouterr().out)
    assert rc == 0 and r["ok"]
    assert r["premise_failures"] > 0
    bad = [w for v in r["mismatches_unguarded"].values() for w, _ in v]
    assert bad and all(set(w) <= {"0", "1"} for w in bad)
    assert not any(r["mismatches"].values())
    for s in r["nodes"].values():
        assert s["violations"] == 0


def test_inline_formula_alphabet(capsys):
    rc, r = run_json(capsys, "run", "a S b", "cab", "--alphabet", "abc")
    assert r["alphabet"] == ["a", "b", "c"]
    assert main(["run", "a S b", "cab"]) == 2  # c is not in the default alphabet {a, b}
    assert "'c'" in capsys.readouterr().err


def test_bound_command(capsys):
    rc, r = run_json(capsys, "bound", T4, "--regime", "T", "--n-max", "1000000")
    assert rc == 0
    assert {x["node"] for x in r["nodes"]} == {"Y 0", "Y (Y 0)", "P ((0 & (Y 0)) & (Y (Y 0)))"}
    for x in r["nodes"]:
        assert "\\tau" in x["leak_bound_latex"]
        if x["node"].startswith("P"):  # H's inner P node is average-hard (THEORY §4b): Θ(log n)
            assert x["order"] == "Θ(log n)" and x["generic_order"] == "Θ(log n)"
            k = 1 / 3  # 1/tau* = -2 ln x*, x* = 2k/(1 + sqrt(1 + 4(n-2)k))
            want = -2 * math.log(2 * k / (1 + math.sqrt(1 + 4 * (10**6 - 2) * k)))
            assert abs(x["inv_tau_required"] / want - 1) < 1e-9
            assert x["inv_tau_required"] <= x["inv_tau_closed_form"] <= 1.05 * x["inv_tau_required"]
            continue
        assert x["order"] == "Θ(n)" and x["generic_order"] == "Θ(n log n)"
        assert x["inv_tau_required"] <= x["inv_tau_closed_form"] <= 1.001 * x["inv_tau_required"]
        assert 5.5e6 < x["inv_tau_required"] < 5.6e6  # ≈ (n/β)·ln(1/η) = 4e6·ln 4
        assert x["inv_tau_generic"] > 10 * x["inv_tau_required"]
    rc, r = run_json(capsys, "bound", T4, "--regime", "U", "--n-max", "1000000")
    for x in r["nodes"]:
        assert x["order"] == "Θ(1)" and abs(x["inv_tau_closed_form"] - math.log(4)) < 1e-12
        # H's inner P node is judged on its output (THEORY §4b): its key "000 ends here" is first
        # possible at position 3, so the supremum over n is q^3/(1 - q + q^3), q = e^{-1/tau}
        want = "exp(-3/tau)/(1 - exp(-1/tau) + exp(-3/tau))" if x["node"].startswith("P") else "exp(-1/tau)"
        assert x["all_n_bound"] == want
    assert main(["bound", T4, "--latex"]) == 0
    assert "\\frac" in capsys.readouterr().out


def test_confirm_command(capsys):
    rc = main(["confirm", str(EXAMPLES / "aba.ltl"), "--regime", "T", "--n-max", "300", "--random", "50",
               "--exhaustive-len", "8", "--json"])
    r = json.loads(capsys.readouterr().out)
    assert rc == 0 and r["ok"]
    for s in r["nodes"].values():
        assert s["violations"] == 0
        assert s["max_ratio_by_family"]["adversarial-key"] >= 0.9  # the head attains its bound
    # the key "aba ends here" is never 1 at consecutive positions (spacing 2): its bound sums r^2,
    # r^4, … and is attained by words too (ababa…), not only by the head on key patterns
    fam = {k: v["max_ratio_by_family"]["adversarial"] for k, v in r["nodes"].items()}
    assert min(fam.values()) >= 0.9


BAD = [
    (["run", "Y (a", "ab"], "1:5"),            # malformed formula: line:col
    (["run", "a & Y", "ab"], "1:6"),
    (["run", "Y a", "abz", "--alphabet", "ab"], "'z'"),  # symbol not in the alphabet
    (["run", "Y a", "ab"], "'b'"),              # an inline formula's alphabet: the symbols it mentions
    (["run", "Y a", "ab", "--tau", "0"], "tau"),
    (["run", "Y a", "ab", "--tau", "-1"], "tau"),
    (["run", "Y a", "ab", "--tau", "nan"], "nan"),
    (["run", "Y a", "ab", "--eta", "1/2"], "eta"),
    (["run", "Y a", "ab", "--eta", "0"], "eta"),
    (["run", "Y a", "ab", "--beta", "1/2"], "beta"),
    (["run", "Y a", ""], "n < 1"),
    (["bound", "Y a", "--n-max", "0"], "n-max"),
    (["bound", "Y a", "--regime", "X"], "regime"),
    (["run", "missing.ltl", "ab"], "no such file"),
    (["run", "Y a", "ab", "--tau", "1e-400"], "1e-300"),   # 1/tau beyond float64 (found by review)
    (["certify", "Y a", "--tau", "1/10", "--timeout", "nan"], "--timeout"),
    (["certify", "Y a", "--tau", "1/10", "--timeout", "inf"], "--timeout"),
    (["certify", "Y a", "--tau", "1/10", "--timeout", "0"], "--timeout"),
    (["verify", "x.json", "--timeout", "nan"], "--timeout"),
]


@pytest.mark.parametrize("argv,needle", BAD)
def test_bad_input_one_line_exit_2(argv, needle, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err
    assert needle in err, err


def test_non_utf8_formula_file(tmp_path, capsys):
    f = tmp_path / "bad.ltl"
    f.write_bytes(b"\xff\xfe garbage")
    assert main(["run", str(f), "ab"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err and "not a UTF-8 text file" in err and "bad.ltl" in err


#: third-party packages the pipeline's stages load; building the parser loads none of them
STAGE_PACKAGES = {"numpy", "sympy", "z3", "mpmath", "flint", "networkx", "lark", "rich", "jsonschema"}


def _console_script_loading_no_stage(argv, returncode):
    """Run the installed console script ``softhard ARGV`` with PYTHONPROFILEIMPORTTIME (it then lists
    every module it imports on stderr); assert its exit status and that it imported no stage package
    and no command handler; its stdout."""
    import os
    import shutil
    exe = shutil.which("softhard", path=str(Path(sys.executable).parent))
    assert exe, "the console script 'softhard' is installed next to the interpreter"
    out = subprocess.run([exe, *argv], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPROFILEIMPORTTIME": "1"})
    assert out.returncode == returncode, (argv, out.stderr[-2000:])
    imported = {line.rsplit("|", 1)[-1].strip() for line in out.stderr.splitlines() if line.startswith("import time:")}
    assert "softhard.solver.cli.options" in imported  # the listing works
    assert not {m.split(".")[0] for m in imported} & STAGE_PACKAGES, argv
    assert not {m for m in imported if m.startswith("softhard.solver.cli.handlers")}, argv
    return out.stdout


def test_help_and_console_script():
    """``softhard --help`` and every command's help, through the installed console script: each
    returns 0 without importing NumPy, SymPy or Z3 (the commands' handlers are imported only to run
    them; solver/cli/__init__.py)."""
    out = _console_script_loading_no_stage(["--help"], 0)
    assert "certify" in out and "verify" in out
    for cmd in ("run", "bound", "confirm", "certify", "verify", "gap", "hahn"):
        assert "--json" in _console_script_loading_no_stage([cmd, "--help"], 0), cmd


def test_usage_errors_load_no_stage():
    """A usage error returns (exit 2) without importing NumPy, SymPy or Z3 (``--help`` and a
    command's help: the test above)."""
    _console_script_loading_no_stage(["run", "Y a", "ab", "--tau", "0"], 2)


@pytest.mark.parametrize("src", [[str(EXAMPLES / "tomita4.ltl")], [], ["Y a", "--alphabet", "ab"],
                                 ["--model", str(EXAMPLES / "models" / "ab_subsequence.json")]])
def test_an_existing_output_file_is_refused_before_any_stage_loads(tmp_path, src):
    """``certify -o FILE`` with FILE present (no --force) exits 2 with one line before the handler
    (and NumPy, SymPy, Z3) is imported; the file is untouched.  (A missing input file still reported
    first and a batch's output: the next test.)"""
    import os
    import shutil
    exe = shutil.which("softhard", path=str(Path(sys.executable).parent))
    out_file = tmp_path / "cert.json"
    out_file.write_text("mine")
    env = {**os.environ, "PYTHONPROFILEIMPORTTIME": "1"}
    out = subprocess.run([exe, "certify", *src, "-o", str(out_file)], capture_output=True, text=True, env=env)
    assert out.returncode == 2
    lines = [x for x in out.stderr.splitlines() if not x.startswith("import time:")]
    assert lines == [f"softhard: error: {out_file}: file exists; use --force to overwrite it"]
    imported = {x.rsplit("|", 1)[-1].strip() for x in out.stderr.splitlines() if x.startswith("import time:")}
    assert "softhard.solver.cli.options" in imported  # the listing works
    assert not {m.split(".")[0] for m in imported} & STAGE_PACKAGES
    assert out_file.read_text() == "mine"


def test_an_existing_output_file_comes_after_the_input_and_the_batch_checks(tmp_path, capsys):
    """With ``-o FILE`` present, the input is still reported first (a missing file), and a batch's
    output is still the handler's to check.  In process: these are the messages and exit statuses
    (what the process imports is the test above; once each, not once per source of the test above)."""
    out_file = tmp_path / "cert.json"
    out_file.write_text("mine")
    assert main(["certify", str(tmp_path / "nope.ltl"), "-o", str(out_file)]) == 2
    err = capsys.readouterr().err
    assert "no such file" in err and "exists" not in err
    for first in (str(EXAMPLES / "tomita4.ltl"), "Y a"):
        # two different jobs (the same one twice runs once, and is no batch: tests/solver/test_batch.py)
        assert main(["certify", first, "P a", "-o", str(out_file)]) == 2
        assert "is a file; a batch writes one certificate per job" in capsys.readouterr().err
    assert out_file.read_text() == "mine"


def test_a_formula_certify_and_verify_load_no_model_or_tracr_code(tmp_path):
    """The certify kinds (handlers/certify.py ``CERTIFY``) and the verify registry
    (solver/kinds.py ``KINDS``) import a kind's modules only when that kind is used; every name in
    them resolves to one of our modules."""
    out = tmp_path / "t.json"
    code = ("import sys, softhard.solver.cli as c\n"
            f"assert c.main(['certify', 'Y a', '--alphabet', 'ab', '--n-max', '50', '--no-numeric', '-o', {str(out)!r}]) == 0\n"
            f"assert c.main(['verify', {str(out)!r}]) == 0\n"
            "print(sorted(m for m in sys.modules if m.startswith('softhard.')))")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-2000:]
    loaded = set(eval(run.stdout.strip().splitlines()[-1]))
    assert {"softhard.solver.certificate", "softhard.solver.cli.handlers.certify", "softhard.solver.kinds"} <= loaded
    lazy = {"softhard.solver.models", "softhard.solver.tracr", "softhard.constructions.modelfile",
            "softhard.constructions.tracr_load", "softhard.solver.cli.handlers.certify_model",
            "softhard.solver.cli.handlers.certify_tracr"}
    assert not lazy & loaded, lazy & loaded
    from softhard.solver.cli.handlers import certify as handler
    from softhard.solver.kinds import KIND_MODULES, KINDS
    assert {k: handler.kind_certify(k).__name__ for k in handler.CERTIFY} == {
        "formula": "certify_formula", "model": "certify_model_file", "tracr": "certify_tracr_export"}
    assert sorted(KINDS) == sorted(KIND_MODULES) == ["formula", "model", "tracr"]
    assert all(KINDS[k].name == k for k in KINDS)


def test_building_the_parser_loads_no_stage():
    code = ("import sys, contextlib, io; import softhard.solver.cli as c\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    assert c.main(['--help']) == 0 and c.main(['certify', '--help']) == 0\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in %r))" % (STAGE_PACKAGES,))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]", out.stdout


def test_a_command_loads_only_its_handler():
    """The driver imports the chosen command's handler by name (its COMMANDS table)."""
    code = ("import sys, softhard.solver.cli as c\n"
            "assert c.main(['bound', 'Y a', '--json']) == 0\n"
            "print(sorted(m for m in sys.modules if m.startswith('softhard.solver.cli.handlers.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    loaded = eval(out.stdout.strip().splitlines()[-1])
    assert "softhard.solver.cli.handlers.bound" in loaded
    assert not {"softhard.solver.cli.handlers.certify", "softhard.solver.cli.handlers.run"} & set(loaded)


@pytest.mark.parametrize("argv,where", [
    (["certify", "Y a", "--tau", "0", "--json"], "--tau"),
    (["certify", "Y a", "--tau", "nan", "--json"], "--tau"),
    (["bound", "a S b", "--regime", "X", "--json"], "--regime"),
    (["gap", "--model", str(EXAMPLES / "models" / "ab_subsequence.json"), "--json"], "--n-max"),
])
def test_usage_errors_with_json_print_one_json_object(capsys, argv, where):
    """With --json, option errors (argparse's own) also print one JSON object on stdout; stderr
    keeps its one line."""
    assert main(argv) == 2
    cap = capsys.readouterr()
    obj = json.loads(cap.out)
    assert obj["exit"] == 2 and obj["kind"] == "UsageError" and where in obj["error"]
    assert cap.err.count("\n") == 1 and cap.err.startswith("softhard: error:")
    assert main([a for a in argv if a != "--json"]) == 2
    assert capsys.readouterr().out == ""  # without --json: nothing on stdout


def test_an_internal_error_is_one_line_and_exit_3(monkeypatch, capsys):
    """A bug (any exception that is not a SofthardError) is exit 3 with one line; --debug re-raises."""
    import pytest

    import softhard.solver.cli.handlers.bound as handler
    from softhard.solver.cli import main

    def boom(args):
        raise RuntimeError("simulated bug")

    monkeypatch.setattr(handler, "handle", boom)
    assert main(["bound", "Y a"]) == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "internal error: RuntimeError: simulated bug" in err and "--debug" in err
    assert main(["bound", "Y a", "--json"]) == 3
    assert json.loads(capsys.readouterr().out)["exit"] == 3
    with pytest.raises(RuntimeError, match="simulated bug"):
        main(["--debug", "bound", "Y a"])


@pytest.mark.parametrize("argv", [
    ["run", "Y a", "--tau", "1/100", "--alphabet", "ab", "ab"],
    ["run", "--tau", "1/100", "Y a", "--alphabet", "ab", "ab"],
    ["run", "Y a", "--alphabet", "ab", "ab", "--tau", "1/100"],
])
def test_options_may_stand_between_positional_arguments(capsys, argv):
    """Found by a new-user trial: ``softhard run FORMULA --tau T WORD`` was refused
    ("unrecognized arguments: WORD").  Every command parser without sub-commands parses options
    anywhere (argparse's intermixed parsing); the result is the options-last command's."""
    rc, r = run_json(capsys, *argv)
    rc0, r0 = run_json(capsys, "run", "Y a", "ab", "--alphabet", "ab", "--tau", "1/100")
    assert rc == rc0 == 0 and r == r0
    assert r["word"] == ["a", "b"] and r["inv_tau"] == 100 and r["tau_source"] == "--tau"
    # 'Y a' at the last position of "ab" reads position 1 = 'a': the word is accepted
    assert r["accepted"] == {"reference": True, "hard": True, "soft": True}


def test_every_command_without_subcommands_parses_intermixed():
    from softhard.solver.cli import build_parsers

    _, parsers = build_parsers()
    assert {n for n, p in parsers.items() if p.intermixed} == set(parsers) - {"tracr"}
    assert main(["bound", "Y a", "--json", "--n-max", "10"]) == 0
    assert main(["certify", "--tau", "1/200", "Y a", "--n-max", "5", "--no-numeric"]) == 0


def test_confirm_budget_counts_the_dense_path_at_a_too_warm_tau(capsys):
    """A new-user trial: at --tau 1/1000 and --n-max 10^4, tomita4's later heads run on the dense
    O(n²) path (their keys are not Boolean where the bounds exceed eta) for minutes, under the
    positions budget.  The estimate counts that work now and refuses in one line; a cold --tau
    over the same words passes the budget."""
    assert main(["confirm", T4, "--tau", "1/1000", "--n-max", "10000"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "dense attention path" in err and "raise --max-positions" in err
    assert main(["confirm", T4, "--tau", "1/1000000", "--n-max", "10000", "--random", "5", "--json"]) == 0


@pytest.mark.parametrize("n_max", ["9223372036854775808", "1e30", "1e400"])
def test_confirm_refuses_a_length_beyond_the_budget_before_drawing_words(capsys, n_max):
    """A new-user trial: ``confirm --n-max 2^63`` stopped with an internal error (NumPy draws the
    random lengths as int64) before the budget was estimated.  One adversarial word of length
    --n-max alone is more than --max-positions (at most 10^18 < 2^63): refused in one line first."""
    assert main(["confirm", "Y a", "--n-max", n_max]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "one adversarial word of length --n-max" in err and "internal" not in err


def test_integer_options_take_exact_decimal_notation(capsys):
    """A new-user trial: ``--n-max 1e3`` worked in certify (a grid option) but not in bound,
    confirm or run, and ``--max-positions 1e9`` (the help prints its default as 1e+08) was
    refused.  Every integer option reads exact decimals now: the same output as the plain
    integer; a non-integer or an out-of-range value is still refused in one line."""
    assert main(["bound", "Y a", "--json", "--n-max", "1e3"]) == 0
    sci = capsys.readouterr().out
    assert main(["bound", "Y a", "--json", "--n-max", "1000"]) == 0
    assert capsys.readouterr().out == sci and json.loads(sci)
    assert main(["confirm", "Y a", "--n-max", "2e1", "--random", "3", "--max-positions", "1e9", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)
    for argv, msg in ((["--n-max", "1.25e1"], "--n-max must be an integer, got '1.25e1'"),
                      (["--max-positions", "1e19"], "--max-positions must be <= 1000000000000000000"),
                      (["--max-positions", "0"], "--max-positions must be >= 1, got 0 (see")):
        assert main(["confirm", "Y a", *argv]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and msg in err, err


@pytest.mark.parametrize("reasons,line", [
    ([], "float64 premise: holds on the searched rows (the status below is for exact arithmetic;"),
    (["head h: gap 0.1"], "float64 premise: fails — head h: gap 0.1 (the status below is for exact arithmetic;"),
])
def test_float64_premise_line_without_reasons_has_no_dash(reasons, line):
    """New-user trial: a premise that holds only on the searched rows printed "— (the status ...)"
    with nothing after the dash."""
    con = Console(width=400, record=True, file=io.StringIO())
    status = "fails" if reasons else "holds on the searched rows"
    print_float64_premise(con, {"precision": {"float64_premise": {"status": status, "reasons": reasons}}})
    assert con.export_text().startswith(line)


#: command lines that end in the parser (help, version, usage errors), for the one-command parser
PARSE_ONLY = [[], ["--help"], ["--version"], ["nosuch"], ["verify"], ["verify", "--bogus", "x.json"],
              ["--json", "verify"], ["certify", "--eta", "-1/4", "--tau"], ["verify", "--timeout", "-1", "x.json"],
              ["-", "verify"], ["--debug", "--", "verify"], ["run", "Y a", "--tau"], ["tracr", "compile", "--help"],
              *([cmd, "--help"] for cmd in ("run", "bound", "confirm", "certify", "verify", "gap", "hahn", "plot",
                                            "tracr", "import-torch", "export"))]


@pytest.mark.parametrize("argv", PARSE_ONLY, ids=" ".join)
def test_the_named_commands_parser_alone_prints_what_every_parser_prints(argv):
    """main builds only the named command's parser (ISSUE 16); every help, version and usage error
    is what the parse with every command's parser (build_parsers(), as main built it before) prints."""
    def printed(run):
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            try:
                rc = run()
            except SystemExit as e:
                rc = int(e.code or 0)
        return rc, out.getvalue(), err.getvalue()

    def every_parser():
        ap, parsers = build_parsers()
        args = attach_negative_values(value_options([ap, *parsers.values()]), list(argv))
        ap.usage_errors.json = "--json" in args
        ap.parse_args(args)
        return None  # (not reached: each of these command lines ends in the parser)

    want = printed(every_parser)
    assert want[0] in (0, 2) and (want[1] or want[2])
    assert printed(lambda: main(list(argv))) == want


def test_parsers_are_reused_per_thread_and_parse_as_fresh_ones():
    """main() builds its parsers once per command and thread (solver/cli ``_parsers_for``); a reused
    parser parses as a fresh one after other parses (benchmarks/cli_parse_identity.py does so on
    the fuzz strategy's command lines), and another thread builds its own."""
    argv = ["tracr", "compile", "p.py:f", "--vocab", "a", "--max-seq-len", "4", "-o", "x"]
    first = _parsers_for(argv)
    other_argv = ["tracr", "compile", "q.py:g", "--vocab", "b", "--max-seq-len", "5", "-o", "y", "--args", "1"]
    assert _parsers_for(other_argv) is first
    assert vars(first[0].parse_args(other_argv))["args"] == ["1"]
    again = vars(first[0].parse_args(argv))
    assert again == vars(build_parsers(only="tracr")[0].parse_args(argv)) and again["args"] == []
    other = []
    t = threading.Thread(target=lambda: other.append(_parsers_for(argv)))
    t.start()
    t.join()
    assert other[0] is not first
