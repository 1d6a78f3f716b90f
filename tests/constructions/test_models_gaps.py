"""Gap analysis (exhaustive against an independent brute force, searched), gap-0 reporting, and the UHA
tie-break with the gap it costs (issue 5, items 2 and 3)."""

from __future__ import annotations

import itertools
import json
import math
import re
from fractions import Fraction
from pathlib import Path

import mpmath
import pytest
from models_util import brute_force, uha_doc

from softhard.constructions.exact import ExactEngine, output_values
from softhard.constructions.gaps import analyse_gaps
from softhard.constructions.tie_breaks import plan_tie_breaks, same_hard_outputs, tie_break
from softhard.constructions.modelfile import load_model, parse_model
from softhard.constructions.random_models import random_model_doc
from softhard.solver.cli import main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "models" / "ab_subsequence.json"


def _brute_min(spec, n_max, uha_ties_zero=True):
    """Per head: (min gap, max ties) over all words of length ≤ n_max, by brute force."""
    best = {}
    for n in range(1, n_max + 1):
        for w in itertools.product(spec.alphabet, repeat=n):
            _, info = brute_force(spec, w)
            for name, rows in info.items():
                rule = next(h.rule for L in spec.layers for h in L.heads if h.name == name)
                g0, t0 = best.get(name, (None, 0))
                for _, g, ties in rows:
                    if rule != "AHA" and ties >= 2 and uha_ties_zero:
                        g = Fraction(0)
                    if g is not None and (g0 is None or g < g0):
                        g0 = g
                    t0 = max(t0, ties)
                best[name] = (g0, t0)
    return best


@pytest.mark.parametrize("seed", [1, 2, 5])
def test_exhaustive_gap_equals_brute_force_random(seed):
    doc = random_model_doc(seed, layers=2, width=7, heads=2, alphabet_size=2)
    spec = parse_model(doc)
    rep = analyse_gaps(spec.canonical(), 5)
    assert rep.method == "exhaustive" and rep.words == 2 + 4 + 8 + 16 + 32
    want = _brute_min(spec, 5)
    for name, h in rep.heads.items():
        assert (h.gap, h.ties_max) == want[name], name
        # the attaining input really attains it
        _, info = brute_force(spec, h.word)
        row = [r for r in info[name] if r[0] == h.row][0]
        assert row[1] == h.gap


def test_exhaustive_gap_hand_written_example():
    spec = load_model(EXAMPLE)
    rep = analyse_gaps(spec.canonical(), 7)
    want = _brute_min(spec, 7)
    for name, h in rep.heads.items():
        assert (h.gap, h.ties_max) == want[name]
    assert rep.heads["seen_a"].gap == Fraction(1, 2)
    assert rep.outputs["accept"].margin == Fraction(1, 2)
    assert rep.simulable


def test_searched_gap_is_exact_for_found_inputs_and_labelled():
    doc = random_model_doc(3, layers=2, width=7, heads=1, alphabet_size=3)
    spec = parse_model(doc)
    hm = spec.canonical()
    rep = analyse_gaps(hm, 40, exhaustive_limit=100, search_words=300, search_max_len=40, seed=1)
    assert rep.method == "searched" and not rep.exhaustive
    assert any("NOT proved" in note for note in rep.notes)
    for name, h in rep.heads.items():
        if h.word is None:
            continue
        _, info = brute_force(spec, h.word)
        assert [r for r in info[name] if r[0] == h.row][0][1] == h.gap
    # the search found at most the exhaustive minimum on short words is not required, but it must
    # never report a gap below the true minimum over the lengths it searched
    exh = analyse_gaps(hm, 4)
    rep4 = analyse_gaps(hm, 4, exhaustive_limit=1, search_words=200, search_max_len=4, seed=2)
    for name in exh.heads:
        if exh.heads[name].gap is not None:
            assert rep4.heads[name].gap >= exh.heads[name].gap


@pytest.mark.parametrize("rule", ["UHA-rightmost", "UHA-leftmost"])
def test_uha_ties_are_gap_zero_then_tie_break(rule, tmp_path, capsys):
    spec = parse_model(uha_doc(rule))
    hm = spec.canonical()
    N = 6
    rep = analyse_gaps(hm, N)
    h = rep.heads["last_a"]
    assert h.gap == 0 and h.ties_max >= 2 and not rep.simulable
    assert h.gap_untied == Fraction(1, 2)
    betas = plan_tie_breaks(rep)
    beta = betas["last_a"]
    assert 0 < beta <= Fraction(1, 2) * N / (N + 1) and beta.denominator & (beta.denominator - 1) == 0  # dyadic
    hm2, infos = tie_break(hm, betas, N, {"last_a": h.gap_untied})
    rep2 = analyse_gaps(hm2, N)
    g2 = rep2.heads["last_a"].gap
    pred = infos[0].predicted_gap
    assert pred == min(beta / N, Fraction(1, 2) - beta)
    assert g2 >= pred and g2 == beta / N  # attained by adjacent a's at n = N
    assert rep2.heads["last_a"].ties_max == 1 and rep2.simulable
    same, bad, cnt = same_hard_outputs(hm, hm2, N)
    assert same and bad is None and cnt == 2 ** (N + 1) - 2
    # a too-large beta changes the hard outputs (the gap premise of the tie-break is real)
    hm3, _ = tie_break(hm, {"last_a": Fraction(3, 2)}, N)
    assert not same_hard_outputs(hm, hm3, N)[0]
    # CLI: without the tie-break the model is not simulable (exit 1) and the witness is printed
    p = tmp_path / "u.json"
    p.write_text(json.dumps(uha_doc(rule)))
    rc = main(["gap", "--model", str(p), "--n-max", str(N), "--tie-break", "off", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 1 and not out["simulable"] and "NOT simulable" in out["verdict"]
    rc = main(["gap", "--model", str(p), "--n-max", str(N), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and out["simulable"]
    assert out["tie_break"][0]["beta"] == f"{beta.numerator}/{beta.denominator}"
    assert out["report_after_tie_break"]["heads"][0]["gap"] == str(beta / N)


def test_near_tie_reported_exactly():
    """An AHA head whose two best keys differ by 2^-60: the gap is reported exactly (not 0, not a float)."""
    doc = uha_doc()
    doc["layers"][0]["heads"][0]["rule"] = "AHA"
    doc["layers"][0]["heads"][0]["W_K"]["entries"].append(["par", 0, f"1/{2 ** 60}"])
    rep = analyse_gaps(parse_model(doc).canonical(), 5)
    assert rep.heads["last_a"].gap == Fraction(1, 2 ** 59)
    assert rep.heads["last_a"].gap > 0 and rep.simulable


@pytest.mark.parametrize("seed,head,want", [(13, "L0H0", Fraction(1, 352)), (11, "L0H0", Fraction(1, 1936)),
                                            (12, "L1H0", Fraction(25, 589824))])
def test_search_visits_every_short_length(seed, head, want):
    """The minimum of these heads over words of length <= 13 sits at length 11 or 12, which the
    search's old log-spaced length grid {1, 2, 3, 4, 5, 7, 9, 13} never visited (found by review:
    up to 17x too large).  The exhaustive value is the oracle; the search now finds it."""
    hm = parse_model(random_model_doc(seed, layers=2, width=8, heads=2)).canonical()
    exh = analyse_gaps(hm, 13)
    assert exh.method == "exhaustive" and exh.heads[head].gap == want
    rep = analyse_gaps(hm, 13, exhaustive_limit=100, search_words=4000, seed=0)
    assert rep.method == "searched" and rep.heads[head].gap == want
    for name, h in rep.heads.items():  # never below the true minimum
        if h.gap is not None and exh.heads[name].gap is not None:
            assert h.gap >= exh.heads[name].gap


def test_aha_tie_counts_whose_lcm_exceeds_int64():
    """Issue 15 C1: an AHA head whose rows have 1..45 tied positions (``a^45`` in ``seen_a``) needs
    the common multiplier lcm(1..45) > 2^63; it overflowed int64 (``gap --model ... --n-max 45``).
    The exact run must agree with the independent brute force, and the output is the language."""
    spec = load_model(EXAMPLE)
    hm = spec.canonical()
    words = ["a" * 45, "a" * 44 + "b", "b" * 44 + "a", "ba" * 22 + "b"]
    assert math.lcm(*range(1, 46)) >= 2 ** 63
    run = ExactEngine(hm).run([[spec.alphabet.index(s) + 1 for s in w] for w in words])
    assert max(int(t) for t in run.heads["seen_a"].ties.ravel()) == 45
    out = spec.labels.index("out")
    got = output_values(hm, run.x, [out])
    for b, w in enumerate(words):
        want_x, _ = brute_force(spec, w)
        assert [got[b, i, 0] for i in range(len(w) + 1)] == [row[out] for row in want_x]
        assert got[b, len(w), 0] == (1 if re.fullmatch(r".*a.*b.*", w) else 0)
    assert run.heads["seen_a"].gap(0, 45) == Fraction(1, 2)
    rep = analyse_gaps(hm, 45, search_words=300, seed=0)
    assert rep.heads["seen_a"].gap == Fraction(1, 2) and rep.heads["seen_a"].ties_max == 45


def test_word_counts_closed_form_and_capped():
    """count_words is Σ k^n in closed form (it summed n_max powers: ``gap --n-max 10^60`` hung);
    with a cap it is min(count, cap + 1) for any n_max; beyond 10^4000 words (a certificate's
    JSON integer) it is refused naming --n-max (``certify --model --n-max 20000`` crashed with
    Python's 4300-digit int/str limit)."""
    from softhard.constructions.errors import ParameterError
    from softhard.constructions.words import count_words, word_count_text
    for k in (1, 2, 3, 5):
        for n in range(1, 30):
            want = sum(k ** i for i in range(1, n + 1))
            assert count_words(k, n) == want
            for cap in (0, 1, 10, 1000, 10**6):
                assert count_words(k, n, cap=cap) == min(want, cap + 1)
    assert count_words(2, 10**60, cap=20_000) == 20_001
    assert word_count_text(2, 10**60) == f"about 10^{int(10**60 * math.log10(2))}"
    assert word_count_text(2, 3) == "14"
    # beyond float range (fuzz find: an OverflowError, exit 3): the exponent floor(n_max·log10 k), exactly
    with mpmath.workdps(460):
        want = int(mpmath.floor(mpmath.mpf(10**400 - 1) * mpmath.log10(3)))
    assert word_count_text(3, 10**400 - 1) == f"about 10^{want}"
    with pytest.raises(ParameterError, match=r"--n-max <= 13287"):
        count_words(2, 20_000)
    assert len(str(count_words(2, 13_287))) <= 4001


def test_exhaustive_beyond_its_limit_is_refused_naming_the_option(capsys):
    """Issue 15 H1: ``gap --method exhaustive --n-max 20`` (2^21 - 2 words) ran with no cap."""
    assert main(["gap", "--model", str(EXAMPLE), "--n-max", "20", "--method", "exhaustive"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "2097150 words" in err and "--exhaustive-limit" in err
    assert 2 ** 21 - 2 == 2097150
    # within a raised limit it runs (and agrees with auto below the limit)
    assert main(["gap", "--model", str(EXAMPLE), "--n-max", "4", "--method", "exhaustive",
                 "--exhaustive-limit", "30", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["report"]["words"] == 30


def test_model_certify_beyond_countable_lengths_is_refused_first(capsys):
    assert main(["certify", "--model", str(EXAMPLE), "--n-max", "20000", "--epsilon", "1/4", "--tau", "1/100",
                 "--no-numeric"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--n-max <= 13287" in err
