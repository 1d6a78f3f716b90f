"""Command-line bugs a new-user trial found (issue cli6): each bad input ends as one line, exit 2 —
never a traceback, an internal error (exit 3) or an unbounded run."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from softhard.constructions.ast import nesting_depth
from softhard.constructions.errors import ParameterError
from softhard.constructions.parse import parse_formula
from softhard.constructions.tracr_compile import rasp_outputs
from softhard.solver.cli import main
from softhard.solver.cli.handlers.console import elided

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
MODEL = str(EXAMPLES / "models" / "ab_subsequence.json")


def one_line_error(capsys) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and "internal error" not in err, err
    return err


def test_gap_refuses_an_exhaustive_limit_beyond_the_verify_maximum(capsys):
    """``gap --n-max 40 --exhaustive-limit 1e13`` (2^41 - 2 words under the limit) built 2.7e8 tasks
    up front (MemoryError); 1e400 grew to 24 GB.  Refused before the model is even read."""
    for limit, shown in (("1e13", "10000000000000"), ("1e400", "about 1e+400")):
        assert main(["gap", "--model", MODEL, "--n-max", "40", "--exhaustive-limit", limit]) == 2
        err = one_line_error(capsys)
        assert f"--exhaustive-limit {shown} exceeds 1000000, the most words an exhaustive gap analysis" in err
        assert "verify" not in err  # not the wording of certify --model's refusal
    # the maximum itself is accepted (auto: 30 words, exhaustive)
    assert main(["gap", "--model", MODEL, "--n-max", "4", "--exhaustive-limit", "1000000", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["report"]["words"] == 2 + 4 + 8 + 16


def test_certify_model_names_a_huge_exhaustive_limit_by_its_magnitude(capsys):
    assert main(["certify", "--model", MODEL, "--n-max", "4", "--exhaustive-limit", "1e400"]) == 2
    err = one_line_error(capsys)
    assert "--exhaustive-limit about 1e+400 exceeds 1000000" in err and "0" * 30 not in err


def test_regime_U_certifies_lengths_beyond_every_float(capsys, tmp_path):
    """``certify --regime U --n-max 1e400`` (and 1e310) died in the precision section forming
    ``float(2(n+1))``; beyond 2^52 no float64 scale is formed: the premise fails, naming why."""
    for n_max in ("1e310", "1e400"):
        rc = main(["certify", "Y a", "--alphabet", "ab", "--regime", "U", "--n-max", n_max, "--no-numeric", "--json"])
        cert = json.loads(capsys.readouterr().out)
        assert rc == 0 and cert["status"] == "proved"
        f64 = cert["precision"]["float64_at_n_max"]
        assert f64["n"] == 10 ** int(n_max[2:]) and f64["rounding_allowance_rel"] is None
        premise = cert["precision"]["float64_premise"]
        assert premise["status"] == "fails"
        assert premise["reasons"] == [f"float64 separates adjacent positions only up to n = {2**52}, below "
                                      f"n_max = {10 ** int(n_max[2:])}"]
    # the replay re-derives the same section
    out = tmp_path / "u.json"
    assert main(["certify", "Y a", "--alphabet", "ab", "--regime", "U", "--n-max", "1e400", "--no-numeric",
                 "-o", str(out)]) == 0
    assert main(["verify", str(out)]) == 0


def test_an_inline_formula_longer_than_a_file_name_is_a_formula(capsys, tmp_path):
    """A 317-character inline formula made the "is it a file?" probe raise ENAMETOOLONG (OSError);
    run and bound accepted it.  Every probe now takes an OSError as "not a file"."""
    formula = " | ".join(["a"] * 80)
    assert len(formula) > 255
    rc = main(["certify", formula, "--alphabet", "ab", "--n-max", "10", "--no-numeric", "--json"])
    assert rc == 0 and json.loads(capsys.readouterr().out)["status"] == "proved"
    out = tmp_path / "c.json"  # with -o (the output precheck probes the input too) and the batch runner's name
    assert main(["certify", formula, "--alphabet", "ab", "--n-max", "10", "--no-numeric", "-o", str(out)]) == 0
    assert json.loads(out.read_text())["status"] == "proved"
    assert main(["certify", formula, "--alphabet", "ab", "--n-max", "10", "--no-numeric", "-o", str(tmp_path) + "/"]) == 0
    assert [p.name.split(".")[0] for p in tmp_path.glob("inline-*.json")] == ["inline-a" + "_a" * 16]  # 40 characters
    capsys.readouterr()
    # and the word 'a' is accepted by the formula (a | a | ... is a)
    assert main(["run", formula, "ab", "--alphabet", "ab", "--json"]) == 0


def test_an_empty_formula_is_not_the_current_directory(capsys, tmp_path, monkeypatch):
    """``certify ""`` in a directory with .ltl files ran a batch over them (Path('') is '.')."""
    (tmp_path / "x.ltl").write_text((EXAMPLES / "tomita4.ltl").read_text())
    monkeypatch.chdir(tmp_path)
    for argv in (["certify", "", "--alphabet", "ab", "--no-numeric"], ["run", "", "ab", "--alphabet", "ab"]):
        assert main(argv) == 2
        assert "expected a formula, found end of input" in one_line_error(capsys)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.ltl"]


def _mixed(levels: int) -> str:
    """``levels`` levels of !, & and | around ``a`` (bound derives these quickly)."""
    f = "a"
    for i in range(levels - 1):
        f = f"(b & {f})" if i % 3 == 0 else (f"!{f}" if i % 3 == 1 else f"({f} | a)")
    return f


def test_formula_nesting_limit_holds_in_every_stage(capsys):
    """``run "Y Y ... Y a"`` (400 levels) parsed but overflowed the stack printing the formula; the
    limit is now MAX_NESTING = 100 levels, checked at parsing, and run, bound and certify handle it."""
    assert nesting_depth(parse_formula("Y " * 99 + "a")) == 100 and nesting_depth(parse_formula(_mixed(100))) == 100
    at_limit = {"run": ["run", "Y " * 99 + "a", "ab", "--alphabet", "ab", "--json"],
                "bound": ["bound", _mixed(100), "--alphabet", "ab", "--json"],
                "certify": ["certify", "Y " * 99 + "a", "--alphabet", "ab", "--n-max", "10", "--no-numeric", "--json"]}
    for cmd, argv in at_limit.items():
        assert main(argv) == 0, cmd
        json.loads(capsys.readouterr().out)
    for deeper in ("Y " * 100 + "a", _mixed(101), "Y " * 400 + "a", "Y " * 5000 + "a"):
        for cmd, argv in at_limit.items():
            argv = [deeper if a in ("Y " * 99 + "a", _mixed(100)) else a for a in argv]
            assert main(argv) == 2, cmd
            assert "formula is nested too deeply (more than 100 levels)" in one_line_error(capsys)


def test_tracr_compile_without_the_extra_names_it(capsys, tmp_path, monkeypatch):
    """Without tracr installed, ``tracr compile`` said "internal error: ModuleNotFoundError".  The
    missing module is simulated (CI installs the extra): None in sys.modules makes its import fail."""
    monkeypatch.setitem(sys.modules, "tracr.compiler.compiling", None)
    argv = ["tracr", "compile", "tracr.compiler.lib:make_length", "--vocab", "a,b", "--max-seq-len", "3",
            "-o", str(tmp_path)]
    assert main(argv) == 2
    err = one_line_error(capsys)
    assert "tracr compile needs Tracr (pip install 'softhard[tracr]')" in err and "tracr.compiler.compiling" in err
    assert list(tmp_path.iterdir()) == []
    monkeypatch.setitem(sys.modules, "tracr.rasp.rasp", None)
    with pytest.raises(ParameterError, match=r"needs Tracr \(pip install 'softhard\[tracr\]'\)"):
        rasp_outputs(object(), [("a",)])


def test_a_broken_npz_is_one_line_naming_the_file(capsys, tmp_path):
    """``certify --tracr DIR`` with a truncated ``.npz``: "internal error: BadZipFile"; a non-zip
    ``.npz`` was said to hold "pickled (object) data".  Both: not a valid .npz archive."""
    good = (EXAMPLES / "tracr" / "hist.npz").read_bytes()
    (tmp_path / "hist.json").write_bytes((EXAMPLES / "tracr" / "hist.json").read_bytes())
    cases = {good[: len(good) // 2]: "not a valid .npz archive (truncated or corrupt",
             good[:-30]: "not a valid .npz archive (truncated or corrupt",
             b"garbage\n": "not a valid .npz archive (not a zip file)",
             b"": "not a valid .npz archive (not a zip file)"}
    for data, why in cases.items():
        (tmp_path / "hist.npz").write_bytes(data)
        for argv in (["certify", "--tracr", str(tmp_path)], ["certify", "--tracr", str(tmp_path / "hist")]):
            assert main(argv) == 2
            err = one_line_error(capsys)
            assert f"{tmp_path / 'hist.npz'}: {why}" in err and "pickled" not in err
    # a model file's arrays: the same reasons; an object array is refused unpickled, by name
    doc = json.loads(Path(MODEL).read_text())
    doc["arrays"] = "m.npz"
    (tmp_path / "m.json").write_text(json.dumps(doc))
    np.savez(tmp_path / "m.npz", w=np.array([{"x": 1}], dtype=object))
    for data, why in [(good[: len(good) // 2], "not a valid .npz archive (truncated or corrupt"),
                      (b"garbage\n", "not a valid .npz archive (not a zip file)"),
                      ((tmp_path / "m.npz").read_bytes(), "array 'w' is not a plain numeric array")]:
        (tmp_path / "m.npz").write_bytes(data)
        assert main(["gap", "--model", str(tmp_path / "m.json"), "--n-max", "3"]) == 2
        assert f"m.json: arrays: {tmp_path / 'm.npz'}: {why}" in one_line_error(capsys)


def test_wording_of_three_usage_errors(capsys):
    """``--workers 0`` gave a length's reason; ``tracr compile`` pointed at 'softhard compile --help';
    ``certify "odd(#a)"`` named the compiled head 'even(#a)' instead of what was written."""
    assert main(["certify", "a", "--alphabet", "ab", "--workers", "0"]) == 2
    err = one_line_error(capsys)
    assert "--workers must be >= 1, got 0" in err and "length" not in err
    assert main(["run", "a", "ab", "--n-max", "0"]) == 2  # a length still says why
    assert "--n-max must be >= 1 (n < 1 is not a length), got 0" in one_line_error(capsys)
    assert main(["tracr", "compile", "foo:bar"]) == 2
    assert "(see 'softhard tracr compile --help')" in one_line_error(capsys)
    assert main(["certify", "a", "--n-max", "0"]) == 2
    assert "(see 'softhard certify --help')" in one_line_error(capsys)
    for cmd, regime in ((["certify", "odd(#a)"], "T"), (["run", "odd(#a)", "ab"], "U"),
                        (["bound", "Y odd(#a + #b + 1)"], "T")):
        assert main([*cmd, "--alphabet", "ab", "--regime", regime]) == 2
        err = one_line_error(capsys)
        written = "odd(#a)" if "+" not in cmd[1] else "odd(#a + #b + 1)"
        assert f"'{written}': even()/odd() needs the positional embedding" in err and f"not {regime}" in err
        assert "even(#a)" not in err


def test_an_output_name_the_os_refuses_is_one_line(capsys, tmp_path):
    """``certify -o NAME`` with a 300-character NAME: the output precheck's probe raised
    ENAMETOOLONG (internal error); a batch's ``-o DIR/`` likewise on mkdir."""
    long = str(tmp_path / ("x" * 300))
    for out, why in ((long + ".json", "not a usable file name"), (long + "/", "cannot create the directory"),
                     (str(tmp_path / "f.txt" / "c.json"), "not a usable file name")):
        (tmp_path / "f.txt").write_text("")
        assert main(["certify", "a", "--alphabet", "ab", "--no-numeric", "-o", out]) == 2
        assert why in one_line_error(capsys)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.txt"]


def test_run_table_of_a_long_word_is_elided():
    """``run`` on a 100 000-symbol word printed every position (a minute); a table now shows the
    first and last 100 positions and the first 100 where soft and hard differ, in order, with one
    gap marker (None) per run of left-out rows."""
    rows = list(range(1000))
    shown, left_out = elided(rows, lambda r: r % 7 == 0)
    sevens = [r for r in range(100, 900) if r % 7 == 0][:100]  # 105, 112, ..., 798
    kept = list(range(100)) + sevens + list(range(900, 1000))
    assert [r for r in shown if r is not None] == kept and left_out == 1000 - len(kept)
    assert shown[100] is None and shown[101] == 105 and shown.count(None) == len(sevens) + 1
    assert elided(rows[:200], lambda r: True) == (rows[:200], 0)


def test_run_prints_an_elided_table_with_its_count(capsys):
    """At the closed-form 1/tau soft and hard agree on ``(ab)^150``: 300 positions, 200 shown."""
    assert main(["run", "Y a", "ab" * 150, "--alphabet", "ab"]) == 0
    out = capsys.readouterr().out
    assert "(100 positions not shown" in out and "--json lists every position" in out
    assert out.count("│ 300 │") == 1 and out.count("│ 150 │") == 0 and out.count("│ 100 │") == 1
