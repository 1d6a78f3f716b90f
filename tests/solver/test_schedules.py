"""Temperature schedules (THEORY §9; issue 13 item 3): the parameter, the all-n claims (log-length
scaling as algebraic powers, the linear schedule with polynomial enclosures), certificates and their
replay, the command line, and soft runs against the hard model at several n.  Every expected value is
computed here independently (mpmath softmax over the scores, exact closed forms), not taken from the
code under test."""

from __future__ import annotations

import copy
import json
import math
from fractions import Fraction
from pathlib import Path

import mpmath
import pytest
import sympy as sp

import softhard
from softhard.bounds.core import n as n_sym
from softhard.bounds.core import tau as tau_sym
from softhard.bounds.params import Params
from softhard.bounds.selection import output_T_average
from softhard.constructions.errors import ParameterError
from softhard.constructions.parameters import parse_schedule
from softhard.constructions.parse import load_spec
from softhard.solver.certificate import certify
from softhard.solver.certjson import compute_hashes
from softhard.solver.check import Claim, check_claim
from softhard.solver.cli import main
from softhard.solver.encode import build_query
from softhard.solver.kinds import verify_certificate
from softhard.solver.pipeline import build_formula

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
FAST = {"exhaustive_len": 5, "random_count": 32, "random_n_max": 64, "adversarial_ns": (10, 100)}
ETA = Fraction(1, 4)


def test_parse_and_params():
    assert parse_schedule("log:17/8") == ("log", Fraction(17, 8))
    assert parse_schedule("lin") == ("lin", None)
    assert parse_schedule("const") == ("const", None)
    for bad in ("cubic:2", "log:0", "log:-1", "log:x"):
        with pytest.raises(ParameterError):
            parse_schedule(bad)
    assert Params(schedule="const").schedule is None  # one spelling of the constant schedule
    p = Params(schedule="log")
    # e^{-1/(2τ(n))} with 1/τ(n) = S·ln(n+1) is exactly (n+1)^{-S/2}: an algebraic term
    got = p.substitute(sp.exp(-1 / (2 * tau_sym)), inv_tau=Fraction(3, 2))
    assert sp.simplify(got - (n_sym + 1) ** sp.Rational(-3, 4)) == 0
    assert not got.has(sp.exp) and not got.has(sp.log)
    got = Params(schedule="lin").substitute(sp.exp(-1 / tau_sym), inv_tau=Fraction(2))
    assert sp.simplify(got - sp.exp(-2 * n_sym)) == 0
    assert p.inv_tau_at(99, Fraction(2)) == pytest.approx(2 * mpmath.log(100), rel=1e-15)


def avg_err(n: int, s: Fraction) -> mpmath.mpf:
    """THEORY §4b worst output error of an average-hard head, with x = (n+1)^{-S/2} (log schedule),
    computed from its definition (one key = 1 position, n - 2 key = 0 positions, BOS)."""
    x = mpmath.power(n + 1, -mpmath.mpf(s.numerator) / (2 * s.denominator))
    big_s = x + (n - 2) * x**2
    return big_s / (1 + big_s)


def test_log_schedule_average_claim_for_all_n():
    """S = 17/8 holds for every n >= 2 (proved for all n, no n_max); S = 15/8 fails at n = 2, where
    the error is x/(1+x) with x = 3^{-15/16} > 1/3."""
    for s, status in ((Fraction(17, 8), "proved"), (Fraction(15, 8), "refuted")):
        expr = Params(schedule="log").substitute(output_T_average(), inv_tau=s)
        r = check_claim(Claim(expr, ETA, 2, None, poly_exp=True))
        assert r.status == status
        if status == "refuted":
            assert r.counterexample == 2 and avg_err(2, s) > mpmath.mpf(1) / 4
        else:  # independent spot checks far out: the proof covers n = 10^30 too
            assert all(avg_err(k, s) <= mpmath.mpf(1) / 4 for k in (2, 3, 10, 10**6, 10**30))
            assert all("log" not in q.smtlib and "exp" not in q.smtlib for q in r.queries)


def unique_T_leak(n: int, inv_tau: mpmath.mpf, beta=mpmath.mpf(1) / 4) -> mpmath.mpf:
    """Leak of a regime-T unique selection with key ≡ 1 at the last query n (scores 1 + βj/n for
    j < n, BOS 1/2): a direct mpmath softmax (THEORY §4)."""
    scores = [mpmath.mpf(1) / 2] + [1 + beta * j / n for j in range(1, n)]
    m = max(scores)
    w = [mpmath.exp((s_ - m) * inv_tau) for s_ in scores]
    return 1 - w[-1] / sum(w)


@pytest.fixture(scope="module")
def y_log():
    c = build_formula(load_spec("Y a", alphabet="ab"), Params(regime="T", schedule="log"))
    return certify(c, n_max=200, tau=Fraction(1, 4), numeric_opts=FAST)


def test_unique_selection_does_not_survive_log_scaling(y_log):
    """A Y selection with bounded PE in regime T: under 1/τ(n) = 4·ln(n+1) it holds up to n = 2 and
    fails from n = 3 on — the leak of the attaining word, computed here by a direct softmax, exceeds
    η at n = 3 and tends to 1."""
    node = y_log["nodes"][0]
    assert y_log["status"] == "refuted" and y_log["range"]["all_n"] is True
    assert node["schedule"]["survives_all_n"] is False and node["schedule"]["holds_up_to_n"] == 2
    assert "does not survive" in node["schedule"]["reason"] and "grows" not in node["schedule"]["reason"][:20]
    it = lambda k: 4 * mpmath.log(k + 1)  # noqa: E731
    assert unique_T_leak(2, it(2)) <= mpmath.mpf(1) / 4 < unique_T_leak(3, it(3))
    assert unique_T_leak(2000, it(2000)) > mpmath.mpf(9) / 10
    assert verify_certificate(y_log).ok


def test_linear_schedule_unique_selection_survives():
    """Under 1/τ(n) = S·n the position term's ratio r = e^{-βS} is constant: S = 6 keeps the leak
    below η for every n (proved); the direct softmax's leak tends to r = e^{-3/2} = 0.2231 < 1/4
    (Σ_k r^k = r/(1−r), δ = S/(1+S) → r)."""
    c = build_formula(load_spec("Y a", alphabet="ab"), Params(regime="T", schedule="lin"))
    cert = certify(c, n_max=200, tau=Fraction(1, 6), numeric_opts=FAST)
    assert cert["status"] == "proved" and cert["nodes"][0]["schedule"]["survives_all_n"] is True
    r = mpmath.exp(-mpmath.mpf(6) / 4)
    for k in (2, 50, 3000):
        lk = unique_T_leak(k, 6 * mpmath.mpf(k))
        assert lk <= mpmath.mpf(1) / 4 and (k < 50 or abs(lk - r) < 1e-9)
    assert verify_certificate(cert).ok


@pytest.fixture(scope="module")
def p_log():
    c = build_formula(load_spec("(b & P a) | P(b & P a)", alphabet="ab"), Params(regime="T", schedule="log"))
    return certify(c, n_max=1000, find_tau=True, numeric_opts=FAST)


def test_find_tau_finds_the_smallest_grid_constant(p_log):
    """Every P node is average-hard; the supremum of the requirement is at n = 2 (S = 2 exactly:
    x = 3^{-S/2} = 1/3), so the smallest S on the 1/8 grid strictly above it is 17/8."""
    assert p_log["status"] == "proved" and p_log["range"]["all_n"] is True
    assert p_log["construction"]["schedule"]["kind"] == "log" and p_log["construction"]["inv_tau"] == "17/8"
    assert avg_err(2, Fraction(2)) == pytest.approx(mpmath.mpf(1) / 4, rel=1e-30)
    assert all(nd["schedule"]["survives_all_n"] for nd in p_log["nodes"])
    assert verify_certificate(p_log).ok


def test_edits_to_the_schedule_are_caught(p_log):
    for path, value in ((("construction", "schedule", "kind"), "lin"),
                        (("nodes", 0, "schedule", "survives_all_n"), False)):
        bad = copy.deepcopy(p_log)
        obj = bad
        for k in path[:-1]:
            obj = obj[k]
        obj[path[-1]] = value
        bad["hashes"] = compute_hashes({k: v for k, v in bad.items() if k != "hashes"})
        assert not verify_certificate(bad).ok, path


def test_soft_runs_match_hard_under_log_scaling():
    """The actual soft transformer at 1/τ(n) = (17/8)·ln(n+1) on adversarial words (one a, then b's)
    at several n: the P-a head's output equals a separate mpmath softmax over its scores (key 1 at
    the a, 0 at the b's, BOS 1/2; values = key), and every clean output equals the hard one."""
    spec = load_spec("P a", alphabet="ab")
    c = softhard.build(spec, Params(regime="T", schedule="log"))
    s = Fraction(17, 8)
    head = next(iter(c.bounds))
    for n in (3, 10, 100, 1000):
        word = "a" + "b" * (n - 1)
        hard, soft = softhard.run(c, word, inv_tau=s)
        it = mpmath.mpf(17) / 8 * mpmath.log(n + 1)
        # query n (strict past): positions 1..n-1, one key = 1 (position 1), BOS at score 1/2
        w_bos, w_a, w_b = mpmath.exp((mpmath.mpf(1) / 2 - 1) * it), mpmath.mpf(1), mpmath.exp(-it)
        y = w_a / (w_bos + w_a + (n - 2) * w_b)
        got = soft.heads[head].soft[0, n, 0]
        assert got == pytest.approx(float(y), rel=1e-9)
        assert 1 - y == pytest.approx(float(avg_err(n, s)), rel=1e-12)  # the attained worst case
        assert (soft.x[..., [c.model.index(o) for o in c.model.outputs]]
                == hard.x[..., [c.model.index(o) for o in c.model.outputs]]).all()


def test_cli(tmp_path, capsys):
    out = tmp_path / "c.json"
    rc = main(["certify", "P a", "--alphabet", "ab", "--schedule", "log:17/8", "--n-max", "100", "--no-numeric",
               "-o", str(out), "--json"])
    assert rc == 0
    cert = json.loads(out.read_text())
    assert cert["construction"]["schedule"]["S"] == "17/8" and cert["range"]["all_n"] is True
    capsys.readouterr()
    for argv in (["certify", "P a", "--schedule", "cubic:2"], ["certify", "P a", "--schedule", "log:2", "--tau", "1"],
                 ["hahn", "P a", "--alphabet", "ab", "--tau", "1/2", "--schedule", "log:2"],
                 ["certify", "--model", str(EXAMPLES / "models" / "ab_subsequence.json"), "--schedule", "log:2", "--n-max", "5"]):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err.strip()
        assert err.count("\n") == 0 and "schedule" in err, err


def test_bound_reports_the_constant_each_node_needs(capsys):
    """``bound --schedule log``: P a needs S = 2 (its supremum, at n = 2: 3^{-S/2} = 1/3 exactly) and
    survives; Y a's requirement still grows at n = 10^12 (it is about n/(β ln(n+1))·ln 4 there)."""
    assert main(["bound", "(b & P a) | Y a", "--alphabet", "ab", "--schedule", "log", "--n-max", "1000",
                 "--json"]) == 0
    rows = {x["node"]: x["schedule"] for x in json.loads(capsys.readouterr().out)["nodes"]}
    assert rows["P a"]["survives"] and rows["P a"]["sup_at_n"] == 2
    assert rows["P a"]["S_required_sup"] == pytest.approx(2.0, rel=1e-9)
    assert not rows["Y a"]["survives"] and rows["Y a"]["S_required_sup"] > 1e11
    # at n = 1000 the average bound's S solves (998) x^2 + x = 1/3 with x = 1001^{-S/2}
    x = mpmath.findroot(lambda x: 998 * x**2 + x - mpmath.mpf(1) / 3, 0.01)
    assert rows["P a"]["S_required_at_n_max"] == pytest.approx(float(-2 * mpmath.log(x) / mpmath.log(1001)), rel=1e-9)


def test_polynomial_enclosure_lemma_e():
    """THEORY §9 lemma E: on an unbounded box an exp atom alone is only enclosed in [0, U], so
    (n−2)·e^{−2n} ≤ 1/4 for every n ≥ 2 cannot be proved from it (box budget: unknown); with
    E·(1 + 2n + 2n²) ≤ 1 it is proved in one query. A false claim, (n−2)·e^{−n/100} ≤ 1/4, is still
    refuted at an integer (e^{-1}·98 > 36 at n = 100; the smallest violation is n = 3, 1·e^{-3/100} > 1/4)."""
    e = (n_sym - 2) * sp.exp(-2 * n_sym)
    r0 = check_claim(Claim(e, ETA, 2, None), max_boxes=8, second_check=False)
    assert r0.status == "unknown"
    r1 = check_claim(Claim(e, ETA, 2, None, poly_exp=True), second_check=False)
    assert r1.status == "proved" and len(r1.queries) == 1
    plain = build_query(e, ETA, 2, None).smtlib
    assert r1.queries[0].smtlib.count("(assert") == plain.count("(assert") + 1  # exactly the lemma-E constraint
    bad = (n_sym - 2) * sp.exp(-n_sym / 100)
    r2 = check_claim(Claim(bad, ETA, 2, None, poly_exp=True), second_check=False)
    assert r2.status == "refuted" and r2.counterexample == 3
    assert mpmath.exp(-mpmath.mpf(3) / 100) > mpmath.mpf(1) / 4


def test_comparator_head_under_lin_refuted_then_raised(tmp_path, capsys):
    """Regression (merge of the output-judged head comparator): the search's first grid value is
    refuted at some n and the requirement there (an mpmath number) was compared with the Fraction
    grid value — TypeError, exit 3.  Now the search raises S and proves it; verify replays it."""
    out = tmp_path / "m.json"
    majority = Path(__file__).resolve().parents[2] / "examples" / "majority.ltl"
    assert main(["certify", str(majority), "--schedule", "lin", "--n-max", "1000", "--no-numeric", "--json",
                 "-o", str(out)]) == 0
    cert = json.loads(out.read_text())
    s = Fraction(cert["construction"]["inv_tau"])
    assert cert["status"] == "proved" and (s * 8).denominator == 1 and cert["search"]["per_bound"][0]["rounds"] >= 2
    capsys.readouterr()
    assert main(["verify", str(out)]) == 0


def test_human_output_of_a_schedule_certificate_with_an_average_hard_node(tmp_path, capsys):
    """New-user trial: the README's ``certify "(b & P a) | P(b & P a)" --alphabet ab --schedule log``
    without --json printed the certificate, then crashed formatting the P node's fixed-tau choice
    line (no n_max under a schedule: None), exit 3.  Exit 0 now, the choice line without numbers,
    and S = 17/8 (the grid point above the exact S = 2 at n = 2: 3^{-S/2} = 1/3, THEORY §9)."""
    out = tmp_path / "p.json"
    assert main(["certify", "(b & P a) | P(b & P a)", "--alphabet", "ab", "--schedule", "log", "--no-numeric",
                 "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "average-hard (auto)" in text and "status: proved" in text
    assert Fraction(json.loads(out.read_text())["construction"]["inv_tau"]) == Fraction(17, 8)


def test_run_and_confirm_take_a_schedule(capsys):
    """``run`` and ``confirm`` refused ``--schedule``; with ``lin:S``/``log:S`` they run each length n
    at 1/τ(n) = S·g(n) (THEORY §9), checked against math.log / exact products; without S or with
    ``--tau`` as well it is one line, exit 2."""
    assert main(["run", "Y a", "abab", "--alphabet", "ab", "--schedule", "log:4", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["n"] == 4 and abs(out["inv_tau"] - 4 * math.log(5)) <= 1e-12 * out["inv_tau"]
    assert out["tau_source"].startswith("--schedule log:4")
    # the engine's observed error at that temperature stays within the derived bound there
    head = out["heads"]["Y a"]
    assert 0 < head["observed_leak"] <= head["bound"] * (1 + 1e-9)
    assert main(["confirm", "Y a", "--alphabet", "ab", "--schedule", "lin:2", "--n-max", "100", "--random", "5",
                 "--exhaustive-len", "4", "--json"]) == 0
    conf = json.loads(capsys.readouterr().out)
    assert conf["inv_tau_by_length"] and all(v == 2 * int(k) for k, v in conf["inv_tau_by_length"].items())
    assert conf["ok"] and "--schedule lin:2" in conf["temperature"]
    for argv in (["run", "Y a", "abab", "--alphabet", "ab", "--schedule", "log"],
                 ["run", "Y a", "abab", "--alphabet", "ab", "--schedule", "log:2", "--tau", "1/3"],
                 ["confirm", "Y a", "--alphabet", "ab", "--schedule", "lin"],
                 ["export", "Y a", "--alphabet", "ab", "--schedule", "log:2", "-o", "unused.json"]):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and ("--schedule" in err or "--tau" in err), argv


@pytest.mark.parametrize("argv", [["P a", "--alphabet", "ab", "--schedule", "log"],
                                  [str(Path(__file__).resolve().parents[2] / "examples" / "majority.ltl"),
                                   "--schedule", "lin"]])
def test_schedule_search_rows_are_in_units_of_s(argv, capsys):
    """A new-user trial: a schedule certificate's search rows printed the closed form and the gap
    lemma as 1/τ(n_max)/g(n_max) (for 'P a' under log: closed form 1.38 below the tight S = 2).
    Each is now the constant S it needs for every n (its supremum over n, like the tight S), so a
    sufficient condition reads at or above the tight S, and the table says it is in units of S."""
    assert main(["certify", *argv, "--find-tau", "--n-max", "100", "--no-numeric", "--json"]) == 0
    cert = json.loads(capsys.readouterr().out)
    for p in cert["search"]["per_bound"]:
        tight = p["inv_tau_tight_numeric"]
        assert float(Fraction(p["inv_tau_certified"])) >= tight
        for ref in ("inv_tau_closed_form", "inv_tau_generic_gap_lemma"):
            assert p[ref] is None or p[ref] >= tight * (1 - 1e-12), (ref, p[ref], tight)
    assert main(["certify", *argv, "--find-tau", "--n-max", "100", "--no-numeric"]) == 0
    out = " ".join(capsys.readouterr().out.split())  # (the console wraps at its width)
    assert "constant S = (1/tau(n))/g(n) each needs for every n" in out and "S certified" in out


def test_certify_says_why_a_bound_does_not_survive_the_schedule(capsys, monkeypatch):
    """A new-user trial: ``certify "Y a" --schedule log:4`` printed only ``refuted n=3``; the why
    (THEORY §9: Y's competitors sit at gaps k·β/n, a gap shrinking like 1/n needs 1/τ(n) = Θ(n),
    which ln-scaling does not give) was only in the certificate.  It is printed now; a surviving
    schedule prints no such line."""
    monkeypatch.setenv("COLUMNS", "400")
    assert main(["certify", "Y a", "--alphabet", "ab", "--schedule", "log:4", "--no-numeric"]) == 1
    out = capsys.readouterr().out
    assert "schedule, Y a: does not survive" in out and "1/tau(n) = Theta(n)" in out
    assert main(["certify", "P a", "--alphabet", "ab", "--schedule", "log", "--find-tau", "--no-numeric"]) == 0
    assert "schedule, " not in capsys.readouterr().out


def test_tables_under_a_schedule_show_1_over_tau_of_n(tmp_path, capsys, monkeypatch):
    """New-user trial: under a schedule the certify table's caption said "at n_max and the chosen
    tau" and the batch summary's 1/tau column showed the constant S.  Now: the bound at n = n_max and
    the schedule's 1/tau(n_max) — for Y in regime T under lin:8 that is r = e^{−β·S} = e^{−2}
    (THEORY §4, §9: the gap β/n times 1/τ(n) = 8n) — and the column shows 1/tau(n) = 8*n."""
    monkeypatch.setenv("COLUMNS", "250")  # whole cells, whatever terminal the tests run in
    assert main(["certify", str(EXAMPLES / "tomita4.ltl"), "--regime", "T", "--schedule", "lin:8", "--n-max", "100",
                 "--no-numeric", "-o", str(tmp_path / "one.json")]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "error bound at n = 100 and the schedule's 1/tau(100)" in out
    assert f"│ {mpmath.nstr(mpmath.exp(-2), 8)} │" in out and "average-selection T" in out
    batch = tmp_path / "batch"
    assert main(["certify", str(EXAMPLES / "tomita4.ltl"), str(EXAMPLES / "aba.ltl"), "--regime", "T", "--schedule",
                 "lin:8", "--n-max", "100", "--no-numeric", "-o", str(batch)]) == 0
    rows = [ln for ln in capsys.readouterr().out.splitlines() if ".ltl" in ln]
    assert len(rows) == 2 and all("│ 8*n " in r for r in rows), rows
