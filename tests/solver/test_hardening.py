"""Issue 15 (hardening): budgets, progress, and the rough edges a newcomer hits, through the
command line."""

from __future__ import annotations

import copy
import itertools
import json
import re
import time
from fractions import Fraction
from pathlib import Path

import pytest

from softhard.bounds.confirm import Confirmation, NodeCheck
from softhard.bounds.params import Params
from softhard.constructions.parameters import fraction_text
from softhard.constructions.parse import load_spec
from softhard.solver.certificate import certify
from softhard.solver.certjson import compute_hashes
from softhard.solver.kinds import verify_certificate
from softhard.solver.pipeline import build_formula
from softhard.solver.cli import main
from softhard.solver.cli.handlers import console

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "models" / "ab_subsequence.json"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_progress_off_a_terminal_is_plain_lines_after_the_delay(monkeypatch, capsys):
    """Off a terminal (capsys is not one) a long step prints ``softhard: [t s] step`` lines on
    stderr; nothing before PROGRESS_AFTER_S; stdout stays empty."""
    monkeypatch.setattr(console, "PROGRESS_AFTER_S", 0.2)
    monkeypatch.setattr(console, "PROGRESS_EVERY_S", 0.2)
    with console.progress("first step") as say:
        time.sleep(0.05)
    cap = capsys.readouterr()
    assert cap.err == "" and cap.out == ""  # a short run prints nothing
    with console.progress("first step") as say:
        time.sleep(0.3)
        say("second step")
        time.sleep(0.3)
    cap = capsys.readouterr()
    lines = cap.err.splitlines()
    assert cap.out == "" and len(lines) >= 2, cap.err
    assert all(re.fullmatch(r"softhard: \[\d+ s\] (first|second) step", ln) for ln in lines), lines
    assert lines[0].endswith("first step") and lines[-1].endswith("second step")


def test_fractions_accept_decimals_exactly(capsys):
    """``--tau 1/8.2`` is 5/41 exactly (it was refused); a decimal exponent beyond 10^4 is refused
    in one line instead of asking Fraction for a billion-digit power."""
    from fractions import Fraction

    from softhard.constructions.errors import ParameterError
    from softhard.constructions.parameters import to_fraction
    assert to_fraction("1/8.2") == Fraction(5, 41) == Fraction(10, 82)
    assert to_fraction("2.5e-1/0.5") == Fraction(1, 2) and to_fraction(" 1 / 4 ") == Fraction(1, 4)
    for bad, needle in [("1/0", "divides by zero"), ("1/-4", "not a finite number"), ("1e-999999999", "exponent"),
                        ("1/4/2", "not a finite number"), ("nan", "not a finite number"), ("9" * 5000, "digits")]:
        with pytest.raises(ParameterError, match=needle):
            to_fraction(bad, "tau")
    assert main(["run", "Y a", "ab", "--alphabet", "ab", "--tau", "1/8.2", "--json"]) in (0, 1)
    out = json.loads(capsys.readouterr().out)
    assert out["inv_tau"] == 8.2 and out["tau_source"] == "--tau"
    assert main(["run", "Y a", "ab", "--tau", "1e-999999999"]) == 2
    assert "exponent" in capsys.readouterr().err


def test_model_epsilon_defaults_to_margin_like_tracr(capsys):
    """``certify --model`` without --epsilon uses 'margin', as --tracr does (it was required)."""
    from softhard.solver.cli import main as cli
    argv = ["certify", "--model", str(EXAMPLE), "--n-max", "4", "--tau", "1/200", "--no-numeric", "--json"]
    assert cli(argv) == 0
    default = json.loads(capsys.readouterr().out)
    assert cli([*argv, "--epsilon", "margin"]) == 0
    explicit = json.loads(capsys.readouterr().out)
    assert default["construction"]["params"] == explicit["construction"]["params"]
    assert default["status"] == "proved"


def test_a_file_name_that_is_not_a_file_says_so(tmp_path, monkeypatch, capsys):
    """``certify tomita9`` (no such file, no .ltl) was parsed as a formula ("'tomita9' is not a
    symbol"); a bare name whose .ltl exists is that file."""
    monkeypatch.chdir(tmp_path)
    assert main(["certify", "tomita9"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no file 'tomita9' or 'tomita9.ltl'" in err and "quote" in err
    (tmp_path / "mine.ltl").write_text("alphabet: a b\nformula: a S b\n")
    assert main(["bound", "mine", "--n-max", "10", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["formula"] == "a S b"
    assert main(["run", "Ya", "ab"]) == 2  # short: still the formula's own hint
    assert "'Ya' is not a symbol" in capsys.readouterr().err


def _premise(argv, capsys):
    assert main(argv + ["--no-numeric", "--json"]) == 0
    cert = json.loads(capsys.readouterr().out, parse_constant=lambda c: pytest.fail(f"not strict JSON: {c}"))
    return cert, cert["precision"]["float64_premise"]


def test_float64_premise_in_the_certificate_and_replayed(tmp_path, capsys):
    """Issue 15: at 1/tau = 1e300 the float64 rounding allowance overflowed to inf and the
    certificate had inf/NaN (an internal error, exit 3); beyond the lengths float64 separates the
    certificate said "proved" with no word on float64.  The precision section now states the
    float64 premise (re-derived by replay); the exact status is unchanged."""
    from math import ceil

    from softhard.solver.kinds import verify_certificate
    cert, prem = _premise(["certify", "H !c", "--n-max", "8", "--tau", "1e-300"], capsys)
    assert cert["status"] == "proved" and prem["status"] == "fails" and "1/tau = 1e+300" in prem["reasons"][0]
    assert cert["precision"]["float64_at_n_max"]["rounding_allowance_rel"] is None
    assert verify_certificate(cert).ok
    edited = json.loads(json.dumps(cert))
    edited["precision"]["float64_premise"]["status"] = "holds"
    rep = verify_certificate(edited)
    assert not rep.ok and any(p.startswith("precision.float64_premise") for p, _ in rep.problems), rep.problems
    cert, prem = _premise(["certify", "a S b", "--n-max", "1000", "--tau", "1/20000"], capsys)
    assert prem == {**prem, "status": "holds", "reasons": []}
    # regime T separates adjacent positions (gap beta/n near 1) while n < ceil(8/9 * beta * 2^52)
    sep = ceil(8 * 2**52 / (9 * 4)) - 1
    cert, prem = _premise(["certify", "a S b", "--n-max", str(10**16), "--find-tau"], capsys)
    assert prem["status"] == "fails" and f"only up to n = {sep}, below n_max = {10**16}" in prem["reasons"][0]
    main(["certify", "a S b", "--n-max", str(10**16), "--no-numeric"])
    assert "float64 premise: fails" in capsys.readouterr().out


def test_an_invalid_certificate_with_json_still_says_so_on_stderr(tmp_path, capsys):
    """Every exit 2 has its one stderr line; with --json, verify printed the report only."""
    bad = tmp_path / "c.json"
    bad.write_text(EXAMPLE.read_text())  # a model file, not a certificate
    assert main(["verify", str(bad), "--json"]) == 2
    cap = capsys.readouterr()
    assert json.loads(cap.out)["valid"] is False
    assert cap.err.count("\n") == 1 and cap.err.startswith(f"softhard: invalid certificate {bad}")


def test_stdout_closed_early_is_no_traceback():
    """``softhard ... --json | head -3`` printed two tracebacks (BrokenPipeError); now it stops
    quietly with 141 (128 + SIGPIPE, as a shell tool)."""
    import subprocess
    import sys
    code = ("import sys; from softhard.solver.cli import main; "
            "sys.exit(main(['run', 'Y a', 'ab' * 2000, '--alphabet', 'ab', '--tau', '1/100', '--json']))")
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdout.readline()
    # like head: stop reading after the first line (the output, ~0.8 MB, is 12x a pipe's 64 KiB buffer;
    # 'ab' * 20000 wrote 8 MB for ~0.8 s more CPU and proves nothing more)
    p.stdout.close()
    err = p.stderr.read().decode()
    assert p.wait(timeout=120) == 141 and "Traceback" not in err and err == "", err


def test_random_words_are_generated_lazily_and_equal_the_list():
    """Confirmation memory O(chunk): the random family is generated word by word (RandomWords),
    the same words as random_words, and length_batches holds about 4*max_positions symbols."""
    import numpy as np

    from softhard.constructions.simulate import RandomWords, length_batches, random_words
    lazy = RandomWords("ab", 40, 300, seed=5)
    assert list(lazy) == random_words("ab", 40, 300, seed=5) == list(lazy)  # re-iterable
    lens = np.random.default_rng(5).integers(1, 301, size=40)
    assert len(lazy) == 40 and lazy.positions == int(lens.sum()) + 40
    pulled = []

    def source():
        for i in range(1000):
            pulled.append(i)
            yield ("a",) * (99 if i % 2 else 49)  # 100 and 50 positions with BOS

    seen = 0
    for n, chunk in length_batches(source(), batch=512, max_positions=1000):
        assert len({len(w) for w in chunk}) == 1 and len(chunk[0]) == n
        assert len(pulled) - seen <= 4 * 1000 // 50 + 1  # never more than one flush ahead
        seen += len(chunk)
    assert seen == 1000


def test_confirm_estimates_its_work_and_refuses_beyond_the_budget(capsys):
    """Issue 15: ``confirm examples/tomita4.ltl --n-max 1000000`` took 577 s and 6.2 GB with no
    warning.  The estimate counts the random positions exactly (lengths drawn first)."""
    import numpy as np
    tomita4 = str(Path(__file__).resolve().parents[2] / "examples" / "tomita4.ltl")
    assert main(["confirm", tomita4, "--n-max", "1000000"]) == 2
    err = capsys.readouterr().err
    lens = np.random.default_rng(0).integers(1, 10**6 + 1, size=1000)
    assert err.count("\n") == 1 and "--max-positions" in err
    assert f"random words {int(lens.sum()) + 1000:.3g}" in err
    assert main(["confirm", tomita4, "--n-max", "50", "--random", "20", "--max-positions", "100", "--json"]) == 2
    capsys.readouterr()
    assert main(["confirm", tomita4, "--n-max", "50", "--random", "20", "--exhaustive-len", "3", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["ok"] and out["inputs"]["random"] == 20 and out["inputs"]["exhaustive"] == 2 + 4 + 8


def test_hahn_help_offers_only_what_it_accepts(capsys):
    """``hahn --help`` offered --regime U and --comparator pe, which it rejects (regime T only),
    and a one-letter alphabet (no one-symbol change exists) was analysed vacuously."""
    from softhard.solver.cli import build_parsers
    _, parsers = build_parsers()
    opts = {o: a for a in parsers["hahn"]._actions for o in a.option_strings}
    assert "--regime" not in opts and set(opts["--comparator"].choices) == {"ln", "head"}
    assert "pe =" not in opts["--comparator"].help and "regimes U" not in opts["--comparator"].help
    assert main(["hahn", "Y a", "--tau", "1/4"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no other symbol" in err and "--alphabet" in err
    assert main(["hahn", "Y a", "--alphabet", "ab", "--tau", "1/4", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["model"]


def test_run_summary_is_one_line(capsys):
    """``run --summary``: one line instead of a row per position.  'a S b' (some b, and a at every
    later position) holds at the end of abab and of b a^40, and not on aa (no b)."""
    assert main(["run", "a S b", "abab", "--summary"]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and "reference accepts, hard accepts, soft accepts" in out and "0 of 4" in out
    assert main(["run", "a S b", "aa", "--alphabet", "ab", "--summary"]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and "reference rejects" in out and "0 of 2" in out
    # too warm: the verdict differs at some positions, exit 1, still one line
    assert main(["run", "a S b", "b" + "a" * 40, "--tau", "10", "--summary"]) == 1
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and "soft rejects" in out and "0 of 41" not in out


def test_documentation_links_stay_inside_the_repository():
    """Every relative Markdown link resolves to a file of the repository (docs/ARCHITECTURE.md
    linked a SOLVER-NOTES.md that is not in it; docs/tracr.md pointed outside it)."""
    root = Path(__file__).resolve().parents[2]
    docs = [root / "README.md", *root.glob("docs/*.md"), *root.glob("examples/**/*.md"),
            *root.glob("notebooks/*.md"), *root.glob("benchmarks/*.md")]
    bad = []
    for doc in docs:
        text = doc.read_text(encoding="utf-8")
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target) or target.startswith("#"):
                continue
            path = (doc.parent / target.split("#")[0]).resolve()
            if not path.exists() or root not in path.parents:
                bad.append(f"{doc.relative_to(root)}: {target}")
        bad += [f"{doc.relative_to(root)}: mentions ../shared/" for _ in re.findall(r"\.\./shared/", text)]
    assert not bad, bad


def _tiny_gap_model(gap: str) -> dict:
    """UHA-rightmost "parity of the position of the last a": a keys score 1 + gap, b keys 1,
    BOS 1/2 (the a/b tie-break is the gap alone)."""
    return {"format": "softhard-model", "version": 1, "name": "tiny_gap", "alphabet": ["a", "b"], "d_model": 5,
            "residual": ["bos", "one", "a", "par", "y"],
            "token_embedding": {"shape": [3, 5], "entries": [["BOS", "bos", 1], ["a", "one", 1], ["a", "a", 1],
                                                             ["b", "one", 1]]},
            "positional": {"features": [{"family": "(-1)^j", "coordinate": "par"}]},
            "layers": [{"heads": [{"name": "last_a", "mask": "strict_past", "rule": "UHA-rightmost",
                                   "W_Q": {"shape": [5, 1], "entries": [["one", 0, 1]]},
                                   "W_K": {"shape": [5, 1], "entries": [["one", 0, 1], ["a", 0, gap],
                                                                        ["bos", 0, "1/2"]]},
                                   "W_V": {"shape": [5, 1], "entries": [["par", 0, 1]]},
                                   "W_O": {"shape": [1, 5], "entries": [[0, "y", 1]]}}]}],
            "outputs": [{"name": "y", "type": "numerical", "coordinate": "y"}]}


def test_model_float64_premise(tmp_path, capsys):
    """Issue 15: a model whose exact scores differ by 1e-20 (1 + 1e-20 and 1 are one double)
    was certified "proved" with nothing said about float64; its precision section now says the
    float64 premise fails (re-derived by replay), the console says so, and a model with gap 1
    (scores of size 1, rounding error ~1e-15) holds."""
    import numpy as np

    from softhard.solver.kinds import verify_certificate
    assert 1.0 + 1e-20 == 1.0 and float(np.float64(1) + np.float64(1e-20)) == 1.0
    p = tmp_path / "tiny.json"
    argv = ["certify", "--model", str(p), "--n-max", "6", "--epsilon", "1/4", "--no-numeric"]
    p.write_text(json.dumps(_tiny_gap_model("1/100000000000000000000")))
    assert main([*argv, "--json"]) == 0
    cert = json.loads(capsys.readouterr().out)
    prem = cert["precision"]["float64_premise"]
    assert cert["status"] == "proved" and prem["status"] == "fails" and "head last_a" in prem["reasons"][0]
    assert verify_certificate(cert).ok
    edited = json.loads(json.dumps(cert))
    edited["precision"]["float64_premise"]["status"] = "holds"
    assert any(f.startswith("precision.float64_premise") for f, _ in verify_certificate(edited).problems)
    assert main(argv) == 0
    assert "float64 premise: fails" in capsys.readouterr().out
    p.write_text(json.dumps(_tiny_gap_model("1")))
    assert main([*argv, "--json"]) == 0
    prem = json.loads(capsys.readouterr().out)["precision"]["float64_premise"]
    assert prem["status"] == "holds" and prem["reasons"] == [] and prem["rows_checked"] >= 1


def _magnitude_model() -> dict:
    """Scores ``s_ij = qm_i·[j ≥ 1] + gq_i·[w_j = a]`` (BOS 0): a query ``b`` has qm = 1, gq = 10^-6
    (the smallest gap, scores near 1: float64 separates them); a query ``a`` has qm = 2^44,
    gq = 10^-3 — a larger gap, but 2^44 + 10^-3 is the double 2^44 (ulp 2^-8)."""
    return {"format": "softhard-model", "version": 1, "name": "magnitude", "alphabet": ["a", "b"], "d_model": 6,
            "residual": ["bos", "one", "a", "qm", "gq", "y"],
            "token_embedding": {"shape": [3, 6], "entries": [
                ["BOS", "bos", 1], ["a", "one", 1], ["a", "a", 1], ["a", "qm", 2**44], ["a", "gq", "1/1000"],
                ["b", "one", 1], ["b", "qm", 1], ["b", "gq", "1/1000000"]]},
            "layers": [{"heads": [{"name": "h", "mask": "past", "rule": "AHA",
                                   "W_Q": {"shape": [6, 2], "entries": [["qm", 0, 1], ["gq", 1, 1]]},
                                   "W_K": {"shape": [6, 2], "entries": [["one", 0, 1], ["a", 1, 1]]},
                                   "W_V": {"shape": [6, 1], "entries": [["a", 0, 1]]},
                                   "W_O": {"shape": [1, 6], "entries": [[0, "y", 1]]}}]}],
            "outputs": [{"name": "y", "type": "numerical", "coordinate": "y"}]}


def test_model_float64_premise_checks_every_row(tmp_path, capsys):
    """Issue 15: the float64 premise covers every analysed row, not only the gap-attaining one.
    Here the gap (10^-6) is attained at a query b, where the scores are near 1 and float64 keeps
    them apart; the only near-ties are the rows of a query a after a b (gap 10^-3 on scores near
    2^44, where 2^44 + 10^-3 rounds to 2^44), which the premise names."""
    from softhard.solver.kinds import verify_certificate
    big = float(2**44)
    assert big + 1e-3 == big and 1.0 + 1e-6 != 1.0  # the float64 facts the model is built on
    p = tmp_path / "mag.json"
    p.write_text(json.dumps(_magnitude_model()))
    assert main(["certify", "--model", str(p), "--n-max", "4", "--epsilon", "1/4", "--no-numeric", "--json"]) == 0
    cert = json.loads(capsys.readouterr().out)
    head = cert["premises"]["heads"][0]
    # the gap-attaining row is a b query (independently: gap 10^-6 needs a b query with an a before it)
    assert head["gap"] == "1/1000000" and head["attained_by"]["word"][head["attained_by"]["row"] - 1] == "b"
    f64 = head["float64"]
    w, r = f64["attained_by"]["word"], f64["attained_by"]["row"]
    assert w[r - 1] == "a" and "b" in w[:r]  # a query a with a b before it: gap 10^-3 at scores 2^44
    # rows failing, counted independently: queries a at rows i >= 2 with some b in 1..i-1
    fail = sum(1 for n in range(1, 5) for word in itertools.product("ab", repeat=n) for i in range(2, n + 1)
               if word[i - 1] == "a" and "b" in word[:i - 1])
    assert f64["rows_failing"] == fail > 0
    assert main(["gap", "--model", str(p), "--n-max", "4"]) == 0  # gap says it too
    assert f"float64: head h has {fail} row(s)" in capsys.readouterr().out
    prem = cert["precision"]["float64_premise"]
    assert prem["status"] == "fails" and len(prem["reasons"]) == 1 and "head h" in prem["reasons"][0]
    assert f"row {r}" in prem["reasons"][0] and cert["status"] == "proved"  # exact claims still proved
    assert verify_certificate(cert).ok
    edited = json.loads(json.dumps(cert))
    edited["analysis"]["gap_report"]["heads"][0]["float64"]["rows_failing"] = 0
    assert any(f.startswith("analysis.gap_report.heads[0].float64") for f, _ in verify_certificate(edited).problems)


def test_messages_echoing_input_stay_one_line(capsys):
    """Found by benchmarks/fuzz.py: an argument with U+0085 (NEL, a line break to
    str.splitlines) or a newline was echoed into the one-line error; it is escaped now."""
    assert main(["verify", "--bogus=a\x85b\nc", "x"]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "a\\x85b\\nc" in err
    assert main(["run", "Y a\x85", "ab"]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "\\x85" in err


def test_deeply_nested_model_file_is_bad_input(tmp_path, capsys):
    """Found by benchmarks/fuzz.py: a model file nested ~10^5 deep crashed the JSON decoder
    (RecursionError, exit 3); deeper than 32 levels is now one line, exit 2, for every command
    that reads model files or Tracr metadata."""
    from softhard.constructions.jsonfile import MAX_JSON_DEPTH, nesting_depth
    assert nesting_depth('{"a": [[1], {"b": "[[[["}]}') == 3 and MAX_JSON_DEPTH == 32
    p = tmp_path / "deep.json"
    for text in ("[" * 100000 + "]" * 100000, '{"format": ' + "[" * 33 + "]" * 33 + "}"):
        p.write_text(text)
        for argv in (["gap", "--model", str(p), "--n-max", "3"], ["certify", "--model", str(p), "--n-max", "3"],
                     ["run", "--model", str(p), "ab"]):
            assert main(argv) == 2, argv
            err = capsys.readouterr().err
            assert err.count("\n") == 1 and "nested deeper than 32 levels" in err, err
    p.write_text(EXAMPLE.read_text())  # the example (depth <= 32) still loads
    assert main(["gap", "--model", str(p), "--n-max", "3", "--json"]) == 0
    capsys.readouterr()


def test_confirm_random_count_is_bounded(capsys):
    """Found by benchmarks/fuzz.py: ``confirm --random 101010101010101010`` drew that many lengths
    up front (MemoryError, exit 3); --random is at most 10^6 (its lengths: 8 MB)."""
    assert main(["confirm", "Y a", "--random", "101010101010101010"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--random must be <= 1000000" in err


def test_a_certificate_whose_schema_field_is_an_object_is_invalid(tmp_path, capsys):
    """Found by benchmarks/fuzz.py: ``"schema": {}`` in a certificate crashed verify
    (TypeError: unhashable type: 'dict', exit 3) before the schema check."""
    p = tmp_path / "c.json"
    for v in ({}, [], [[1]], None, 2):
        p.write_text(json.dumps({"schema": v, "schema_version": 2, "kind": "formula"}))
        assert main(["verify", str(p)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "not a softhard certificate of schema 2" in err


def test_a_certificate_number_beyond_float_range_or_a_lone_surrogate_is_bad_input(tmp_path, capsys):
    """From a review (stop 17): ``1e999`` (read as infinity) and ``"\\ud800"`` (no character) in a
    certificate ended as an internal error (exit 3) in verify; both are not strict JSON text: exit 2,
    one line naming the file, with ``--json`` too.  A paired surrogate escape is a character."""
    p = tmp_path / "c.json"
    cases = {'{"schema": "softhard-certificate", "schema_version": 2, "x": 1e999}': "beyond float range",
             '{"schema": "softhard-certificate", "schema_version": 2, "x": -1E+999}': "beyond float range",
             '{"schema": "softhard-certificate", "schema_version": 2, "x": "\\ud800"}': "unpaired UTF-16 surrogate",
             '{"schema": "softhard-certificate", "schema_version": 2, "\\uDFFF": 1}': "unpaired UTF-16 surrogate"}
    for text, words in cases.items():
        p.write_text(text)
        for extra in ([], ["--json"]):
            assert main(["verify", str(p), *extra]) == 2
            err = capsys.readouterr().err
            assert err.count("\n") == 1 and words in err and str(p) in err, err
    p.write_text('{"schema": "softhard-certificate", "schema_version": 2, "x": "\\ud83d\\ude00"}')
    assert main(["verify", str(p)]) == 2
    assert "surrogate" not in capsys.readouterr().err  # (invalid for other reasons: the schema)


def test_hahn_eps_ln_needs_the_ln_comparator(capsys):
    """Issue 15: ``hahn --eps-ln`` with the head comparator (given or default) or with --model was
    accepted and ignored; it is a one-line usage error (exit 2) unless the comparator is ln."""
    for argv in (["hahn", "Y a", "--alphabet", "ab", "--tau", "1/4", "--comparator", "head", "--eps-ln", "1/10"],
                 ["hahn", "Y a", "--alphabet", "ab", "--tau", "1/4", "--eps-ln", "0"],
                 ["hahn", "--model", str(EXAMPLE), "--tau", "1/4",
                  "--eps-ln", "0"]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and "--eps-ln" in err and "--comparator ln" in err
    # with the ln comparator it is taken: the lemma does not apply to layer norm (exit 1, the reason)
    assert main(["hahn", "#a > #b", "--alphabet", "ab", "--tau", "1/4", "--comparator", "ln", "--eps-ln", "0",
                 "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["applicable"] is False and out["eps_ln"] == "0"


def test_batch_lines_stay_one_line_per_input(tmp_path, capsys, monkeypatch):
    """Found by benchmarks/fuzz.py: a batch's per-input line echoed the input raw, and U+001C (a
    line boundary to str.splitlines) split it; a long input name was also wrapped at 80 columns
    off a terminal.  Each input's line is escaped and never wrapped now."""
    monkeypatch.chdir(tmp_path)
    long_name = "x" * 150 + ".ltl"
    assert main(["certify", "\u00a1\x1c\u00b7", "i", long_name]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 3 and all(re.fullmatch(r"\[\d/3\] .+ \(\d+\.\d\d s\)", ln) for ln in lines), lines
    assert "\\x1c" in lines[0] and long_name in lines[2]


def test_run_json_is_strict_for_a_zero_output_bound(capsys):
    """Found by benchmarks/fuzz.py (``run examples/tomita7.ltl 1 --json``): at n = 1 the average-hard
    P nodes have output bound 0, so their relative rounding allowance is infinite, and ``run`` printed
    it as ``Infinity`` (not JSON); it is null now, as in ``confirm``."""
    def reject(name):
        raise ValueError(name)

    assert main(["run", str(EXAMPLE.parents[1] / "tomita7.ltl"), "1", "--json"]) == 0
    out = json.loads(capsys.readouterr().out, parse_constant=reject)
    assert out["heads"] and all(h["bound"] == 0.0 and h["allowance_rel"] is None for h in out["heads"].values())


def test_huge_parameter_values_are_named_in_one_line(capsys):
    """Found by benchmarks/fuzz.py: ``run ... --eta 857e6421`` (a 6424-digit integer, within the
    decimal-exponent limit) crashed printing the value in the range error (Python refuses str() of
    an integer over 4300 digits: exit 3); it is shown as ~8.57000e+6423.  And a valid but tiny
    beta whose closed-form 1/tau overflows float64 was reported as '--tau None ...'."""
    for argv, want in ((["--eta", "857e6421"], "eta must satisfy 0 < eta < 1/2 (THEORY §3), got ~8.57000e+6423"),
                       (["--eta", "-3e5000"], "got -~3.00000e+5000"),
                       (["--beta", "54E+7664"], "beta must satisfy 0 < beta <= 1/4 (THEORY §4), got ~5.40000e+7665"),
                       (["--beta", "1e-9000"], "the closed-form 1/tau at n = 2 (beta = ~1.00000e-9000, eta = 1/4) is "
                                               "outside the float64 range; give --tau")):
        assert main(["run", "Y a", "ab", "--alphabet", "ab", *argv]) == 2
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and want in err, err
    assert fraction_text(Fraction(1, 4)) == "1/4" and fraction_text(Fraction(10**300 + 7)) == "~1.00000e+300"
    assert fraction_text(Fraction(-123456789, 10**400)) == "-~1.23456e-392"


def test_integer_option_with_too_many_digits(capsys):
    """An integer option beyond Python's 4300-digit conversion limit was called 'not an integer'
    and echoed in full (5000 characters); it is named as too many digits, shortened."""
    assert main(["bound", "Y a", "--alphabet", "ab", "--n-max", "9" * 5000]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "has too many digits (5000" in err and len(err) < 300


def test_file_names_with_a_nul_character(capsys):
    """Found by benchmarks/fuzz.py (``verify verify ... 'ï¡¿...\\x00' a``): a file name with a NUL
    character made os.stat/open raise ValueError (exit 3) in the certificate and model readers; it
    is a bad input now, one line naming it."""
    for argv in (["verify", "x\x00y"], ["certify", "--model", "x\x00y.json"],
                 ["gap", "--model", "m\x00.json", "--n-max", "3"], ["certify", "--tracr", "t\x00.json"],
                 ["run", "--model", "m\x00.json", "ab"],
                 ["certify", "Y a", "--alphabet", "ab", "-o", "c\x00.json"]):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and "contains a NUL character" in err and "\\x00" in err, err
    assert main(["verify", "a", "x\x00y"]) == 2  # in a batch: one line per input
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 2 and lines[1].startswith("[2/2] x\\x00y: INVALID")


def test_eps_ln_without_the_ln_comparator_is_refused_everywhere(capsys, tmp_path):
    """``run``, ``bound`` and ``certify`` accepted ``--eps-ln`` with the head comparator and dropped
    it silently; like ``hahn`` they now refuse it in one line (exit 2).  In a certify grid over
    comparators it applies to the ln jobs only: the head job's certificate has no eps_ln."""
    for argv in (["run", "#a > #b", "ab", "--alphabet", "ab", "--eps-ln", "1/100"],
                 ["bound", "#a > #b", "--alphabet", "ab", "--comparator", "head", "--eps-ln", "1/100"],
                 ["certify", "#a > #b", "--alphabet", "ab", "--eps-ln", "1/100", "-o", str(tmp_path / "x.json")]):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and "--eps-ln" in err and "--comparator ln" in err, argv
    assert not (tmp_path / "x.json").exists()
    out = tmp_path / "grid"
    main(["certify", "#a > #b", "--alphabet", "ab", "--comparator", "head,ln", "--eps-ln", "1/100", "--regime", "T",
          "--n-max", "10", "--no-numeric", "-o", str(out) + "/"])
    capsys.readouterr()
    params = sorted(json.dumps(json.loads(p.read_text())["construction"]["params"], sort_keys=True)
                    for p in out.glob("*.json"))
    assert params == ['{"beta": "1/4", "eps_ln": "1/100", "eta": "1/4"}', '{"beta": "1/4", "eta": "1/4"}']


def test_a_bad_schedule_in_a_batch_is_refused_once(capsys, tmp_path):
    """``certify F --schedule log,lin --regime T,U -o DIR/`` reported the bad ``--schedule`` as an
    error row per job; it is one option for the whole command, refused once (exit 2, one line,
    nothing written)."""
    out = tmp_path / "grid"
    assert main(["certify", "Y a", "--alphabet", "ab", "--schedule", "log,lin", "--regime", "T,U",
                 "-o", str(out) + "/"]) == 2
    cap = capsys.readouterr()
    assert len(cap.err.strip().splitlines()) == 1 and "--schedule" in cap.err and cap.out == ""
    assert not out.exists() or not any(out.iterdir())


def test_a_bound_that_underflows_float64_gives_no_ratio_not_infinity(tmp_path, capsys):
    """Found by a new-user trial: ``certify examples/aba.ltl --eta 1/8 --n-max 1000`` stopped with an
    internal error (exit 3): at 1/τ = 8317.8 the average-hard P node's bound (~1e-1807) is 0.0 in
    float64 while a one-ulp output error (2.2e-16) is observed, and observed/bound = inf reached the
    certificate's strict JSON.  Such a check has no ratio (None); the certificate is written, strict,
    and verifies."""
    out = tmp_path / "aba8.json"
    assert main(["certify", str(EXAMPLES / "aba.ltl"), "--eta", "1/8", "--n-max", "1000", "-o", str(out)]) == 0
    capsys.readouterr()
    text = out.read_text()
    cert = json.loads(text, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))  # no NaN/Infinity
    p = cert["numeric"]["nodes"]["P (a & (Y (b & (Y a))))"]
    assert p["ratio"] is None or p["ratio"] >= 0
    assert all(r is None or r >= 0 for r in p["max_ratio_by_family"].values())
    assert main(["verify", str(out)]) == 0


def test_node_check_ratio_of_an_underflowed_bound_is_none():
    """NodeCheck.ratio: observed/bound; 0 when nothing is observed; None (not inf) when the bound is
    0.0 in float64 but an error is observed; such checks rank below every ratio in the summary."""
    mk = lambda obs, bd: NodeCheck(node="v", family="f", n=10, inv_tau=1.0, inputs=1, observed=obs, bound=bd,  # noqa: E731
                                   allowance_rel=float("inf") if bd == 0 else 1e-12, word="ab", row=1)
    assert mk(2.2e-16, 0.0).ratio is None and mk(0.0, 0.0).ratio == 0.0 and mk(1e-3, 4e-3).ratio == 0.25
    conf = Confirmation(checks=[mk(2.2e-16, 0.0), mk(0.0, 0.0)])
    s = conf.summary()["v"]
    assert s["ratio"] == 0.0 and s["max_ratio_by_family"] == {"f": 0.0}
    assert Confirmation(checks=[mk(2.2e-16, 0.0)]).summary()["v"]["ratio"] is None


def test_stdout_closed_early_in_a_rich_table_exits_141_not_1():
    """Found by a new-user trial: ``softhard run … | head -1`` (rich's table output, not --json)
    exited 1 — for run "the soft verdict differs", for certify "refuted": rich's own broken-pipe
    handler exits 1.  The console hands it to main, which exits 141 silently, as the README says."""
    import os
    import subprocess
    import sys
    code = ("import sys; from softhard.solver.cli import main; "
            "sys.exit(main(['run', 'Y a', 'ab' * 3000, '--alphabet', 'ab', '--tau', '1/100']))")
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         env={**os.environ, "COLUMNS": "120"})
    p.stdout.readline()
    p.stdout.close()  # the table (6000 rows) is far beyond a pipe's buffer
    err = p.stderr.read().decode()
    assert p.wait(timeout=120) == 141 and "Traceback" not in err and err == "", err


def test_rehashed_edits_of_the_numeric_summary_are_rejected():
    """Found by a new-user trial: with the hashes recomputed, verify accepted ``numeric.ok = false``
    (no violation, no mismatch recorded), a changed ``premise_failures`` and a description replaced
    by a number.  They are consistency-checked now: ok equals "no violation and no mismatch",
    premise_failures is the sum over the nodes, the descriptions are the fixed texts."""
    c = build_formula(load_spec("Y a", alphabet="ab"), Params(regime="T", eta="1/4"))
    cert = certify(c, n_max=50, tau=Fraction(1, 200))
    assert verify_certificate(cert).ok
    for path, value in ((("numeric", "ok"), False), (("numeric", "premise_failures"), 4),
                        (("numeric", "mismatches_count"), 3), (("numeric", "note"), "proves")):
        bad = copy.deepcopy(cert)
        bad[path[0]][path[1]] = value
        bad["hashes"] = compute_hashes({k: v for k, v in bad.items() if k != "hashes"})
        rep = verify_certificate(bad)
        assert not rep.ok and any(path[1] in str(p) for p in rep.problems), (path, rep.problems)
