"""Verify by replay (issue 12): every field of a real formula certificate edited, strict JSON
reading, schema-1 certificates, JSON paths and diffs."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from softhard.bounds import store
from softhard.constructions.errors import CertificateError
from softhard.constructions.parse import load_spec
from softhard.solver.certificate import certify
from softhard.solver.certjson import (MAX_DEPTH, Texts, _same_scalar, _short, canonical, compute_hashes, diff,
                                      fmt_path, leaves, load_certificate, loads, matches, object_text)
from softhard.solver.cli import main
from softhard.solver.kinds import verify_certificate
from softhard.solver.pipeline import build
from softhard.solver import certificate as certificate_module
from softhard.solver import replay
from softhard.solver.replay import BUDGET_WORDS, Kind, _budget_words, measured_fields
from tamper import edits, undetected

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
FAST = {"exhaustive_len": 6, "random_count": 64, "random_n_max": 64, "adversarial_ns": (10, 100)}
#: the replay's inputs: an edit here shows up in the fields derived from it, not at its own path
INPUTS = ("source", "construction.regime", "construction.params", "range", "search.per_bound[*].node",
          "search.per_bound[*].inv_tau_certified", "search.params", "solver")


@pytest.fixture(scope="module")
def cert():
    c = build(load_spec(str(EXAMPLES / "tomita4.ltl")), "T")
    return certify(c, n_max=10**4, find_tau=True, numeric_opts=FAST)


def test_every_edit_of_a_formula_certificate_is_rejected(cert):
    assert verify_certificate(cert).ok
    n = sum(1 for _ in edits(cert, "formula"))
    assert n > 500  # every leaf changed and every item/key deleted, outside the measured fields
    assert undetected(cert, "formula", verify_certificate, inputs=INPUTS) == []


def test_measured_fields_are_the_documented_ones(cert):
    m = measured_fields("formula")
    assert set(m) >= {"created", "tool", "times", "numeric", "search.per_bound[*].empirical"}
    # an edit of a measured field that contradicts the bounds is still caught by the consistency checks
    bad = copy.deepcopy(cert)
    v = next(iter(bad["numeric"]["nodes"]))
    bad["numeric"]["nodes"][v]["ratio"] = 0.5
    bad["hashes"] = compute_hashes(bad)
    rep = verify_certificate(bad)
    assert not rep.ok and rep.problems[0][0] == f"numeric.nodes.{v}.ratio"


@pytest.mark.parametrize("field,value", [("n", 100), ("runs", 0), ("runs", 61), ("method", "bisection"),
                                         ("ratio_certified_to_empirical", None)])
def test_edits_of_the_empirical_minimum_are_rejected(cert, field, value):
    """Rehashed edits of a search row's measured empirical minimum (a new-user trial found edits of
    measured fields accepted): its length is the binding one (n_max = 10^4, the cap), its run count
    within the iteration's 1..60, its description the fixed one, its ratio null only with no
    certified value; and the search's rounds within 1..6."""
    bad = copy.deepcopy(cert)
    assert bad["search"]["per_bound"][0]["empirical"]["n"] == 10**4
    bad["search"]["per_bound"][0]["empirical"][field] = value
    bad["hashes"] = compute_hashes(bad)
    where = f"search.per_bound[0].empirical.{field}"
    assert any(f == where for f, _ in verify_certificate(bad).problems)
    bad = copy.deepcopy(cert)
    bad["search"]["per_bound"][0]["rounds"] = 7
    bad["hashes"] = compute_hashes(bad)
    assert any(f == "search.per_bound[0].rounds" for f, _ in verify_certificate(bad).problems)


def test_a_null_empirical_minimum_and_reordered_search_rows_are_rejected(cert):
    """Left alone in stop 17 (from a review): a search row's ``empirical`` set to null, and the rows
    reordered, were accepted.  The search measures an empirical minimum exactly for a found τ of a
    head with a key (every row of tomita4's), and makes one row per bound in its own order."""
    rows = cert["search"]["per_bound"]
    assert len(rows) >= 2 and all(r["empirical"] is not None for r in rows)
    bad = copy.deepcopy(cert)
    bad["search"]["per_bound"][1]["empirical"] = None
    bad["hashes"] = compute_hashes(bad)
    assert ("search.per_bound[1].empirical" in [f for f, _ in verify_certificate(bad).problems])
    bad = copy.deepcopy(cert)
    bad["search"]["per_bound"].reverse()
    bad["hashes"] = compute_hashes(bad)
    assert "search.per_bound" in [f for f, _ in verify_certificate(bad).problems]


def test_duplicate_key_is_rejected(tmp_path, cert, capsys):
    text = json.dumps(cert).replace('"status": "proved"', '"status": "refuted", "status": "proved"', 1)
    p = tmp_path / "dup.json"
    p.write_text(text)
    with pytest.raises(CertificateError, match="duplicate key 'status'"):
        load_certificate(p)
    assert main(["verify", str(p)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "duplicate key" in err and "Traceback" not in err


@pytest.mark.parametrize("const", ["NaN", "Infinity", "-Infinity"])
def test_nan_and_infinity_are_rejected(tmp_path, const, capsys):
    p = tmp_path / "nan.json"
    p.write_text('{"schema": "softhard-certificate", "x": %s}' % const)
    assert main(["verify", str(p)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "NaN or Infinity" in err


def test_a_dict_no_json_text_gives_is_a_problem_not_an_exception(cert):
    """verify of a certificate dict (the API's) holding what no JSON text can (NaN, a lone
    surrogate, a set, a cycle, nesting deeper than the interpreter's stack) reports it at the root
    (it raised ValueError, UnicodeEncodeError, TypeError or RecursionError from the hashes or the
    schema memo's key: review10); the genuine dict still verifies."""
    cycle: dict = {}
    cycle["self"] = cycle
    deep: list = []
    inner = deep
    for _ in range(5000):
        inner.append([])
        inner = inner[0]
    for bad in (float("nan"), "\ud800", {1, 2}, cycle, deep):
        rep = verify_certificate({**cert, "source": {**cert["source"], "description": bad}})
        assert not rep.ok and [p for p, _ in rep.problems] == ["<root>"], (bad, rep.problems)
        assert rep.problems[0][1].startswith("not a JSON document: ")
    assert verify_certificate(cert).ok


def test_deep_nesting_and_size_are_bounded(tmp_path, capsys, monkeypatch):
    p = tmp_path / "deep.json"
    p.write_text("[" * 100_000 + "]" * 100_000)
    assert main(["verify", str(p)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"deeper than {MAX_DEPTH}" in err and ":1:65:" in err
    assert loads("[" * MAX_DEPTH + "]" * MAX_DEPTH) is not None
    monkeypatch.setattr("softhard.solver.certjson.MAX_BYTES", 100)
    q = tmp_path / "big.json"
    q.write_text(json.dumps({"x": "y" * 200}))
    assert main(["verify", str(q)]) == 2
    assert "bytes" in capsys.readouterr().err


def test_schema_1_certificate_gets_one_line(tmp_path, capsys):
    p = tmp_path / "old.json"
    p.write_text(json.dumps({"schema": "softhard-certificate", "schema_version": 1, "status": "proved"}))
    assert main(["verify", str(p)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "schema 1" in err and "re-certify" in err
    p.write_text(json.dumps({"schema": "softhard-tracr-certificate", "schema_version": 1}))
    assert main(["verify", str(p)]) == 2
    assert "re-certify" in capsys.readouterr().err


def test_paths_and_diff():
    assert matches(("search", "per_bound", 3, "empirical", "n"), "search.per_bound[*].empirical")
    assert not matches(("search", "per_bound", 3), "search.per_bound[*].empirical")
    assert matches(("claims", 0, "queries", 2, "seconds"), "claims[*].queries[*].seconds")
    assert not matches(("claims", 0, "seconds2"), "claims[*].seconds")
    a = {"x": [1, {"y": "1/4", "z": True}], "t": 1.0}
    b = {"x": [1, {"y": "1/3", "z": 1}], "t": 1.0 + 1e-12}
    assert diff(a, b) == [("x[1].y", 'is "1/4", the replay gives "1/3"'), ("x[1].z", "is true, the replay gives 1")]
    assert diff(a, b, ignore=("x[*].y", "x[1].z")) == []
    assert [p for p, _ in diff({"a": 1}, {"b": 1})] == ["a", "b"]
    assert diff([1, 2], [1]) == [("<root>", "has 2 item(s), the replay gives 1")]



def _reference_diff(stored, fresh, ignore=(), path=()):
    """The plain recursive comparison (every node visited, every pattern matched against the full
    path): the definition :func:`diff`'s shortcuts must reproduce exactly."""
    if any(matches(path, p) for p in ignore):
        return []
    where = fmt_path(path) or "<root>"
    if isinstance(stored, dict) and isinstance(fresh, dict):
        out = []
        for k in stored:
            if k not in fresh:
                if not any(matches(path + (k,), p) for p in ignore):
                    out.append((fmt_path(path + (k,)), "not part of the certificate the replay produces"))
            else:
                out.extend(_reference_diff(stored[k], fresh[k], ignore, path + (k,)))
        for k in fresh:
            if k not in stored and not any(matches(path + (k,), p) for p in ignore):
                out.append((fmt_path(path + (k,)), "missing (the replay produces it)"))
        return out
    if isinstance(stored, list) and isinstance(fresh, list):
        if len(stored) != len(fresh):
            return [(where, f"has {len(stored)} item(s), the replay gives {len(fresh)}")]
        return [d for i, (a, b) in enumerate(zip(stored, fresh)) for d in _reference_diff(a, b, ignore, path + (i,))]
    if isinstance(stored, (dict, list)) or isinstance(fresh, (dict, list)) or not _same_scalar(stored, fresh):
        return [(where, f"is {_short(stored)}, the replay gives {_short(fresh)}")]
    return []


_KEYS = st.sampled_from(["a", "b", "c"])
_SCALARS = st.one_of(st.booleans(), st.integers(-2, 2), st.sampled_from([0.0, 1.0, 1.0 + 1e-12, 2.5]),
                     st.sampled_from(["1/4", "x"]), st.none())
_JSON = st.recursive(_SCALARS, lambda ch: st.one_of(st.lists(ch, max_size=3), st.dictionaries(_KEYS, ch, max_size=3)),
                     max_leaves=12)
_PATTERNS = st.lists(st.lists(st.sampled_from(["a", "b", "[0]", "[1]", "[*]", "*"]), max_size=3)
                     .map(lambda ps: ".".join(ps).replace(".[", "[")), max_size=3)


def _mutate(draw, x):
    """``x`` with a few leaves changed (bool for int, int for float, keys added or dropped)."""
    if isinstance(x, dict):
        y = {k: _mutate(draw, v) for k, v in x.items() if draw(st.integers(0, 5))}
        if draw(st.booleans()):
            y[draw(_KEYS)] = draw(_SCALARS)
        return y
    if isinstance(x, list):
        y = [_mutate(draw, v) for v in x]
        return y if draw(st.integers(0, 5)) else y[:-1]
    if type(x) in (bool, int) and x in (0, 1) and draw(st.booleans()):  # equal in Python, not in JSON
        return int(x) if isinstance(x, bool) else bool(x)
    return draw(_SCALARS) if not draw(st.integers(0, 3)) else x


@given(st.data())
@settings(max_examples=400, deadline=None)
def test_diff_equals_the_plain_recursive_comparison(data):
    a = data.draw(_JSON)
    b = _mutate(data.draw, json.loads(json.dumps(a)))
    ignore = tuple(data.draw(_PATTERNS))
    path = tuple(data.draw(st.lists(st.sampled_from(["a", 0]), max_size=2)))
    assert diff(a, b, ignore, path) == _reference_diff(a, b, ignore, path)
    assert diff(a, a, ignore, path) == [] and diff(b, b) == []
    texts = (Texts(), Texts())  # the canonical texts kept between calls (verify's per-replay memo)
    assert diff(a, b, ignore, path, texts) == diff(a, b, ignore, path, texts) == _reference_diff(a, b, ignore, path)



@given(st.dictionaries(st.sampled_from(["claims", "b", "A", "é", "z[0]"]), _JSON, max_size=5))
@settings(max_examples=200, deadline=None)
def test_hashes_equal_the_section_by_section_definition(body):
    """compute_hashes assembles the whole body's canonical text from its sections' texts: the same
    hashes, in the same order, as hashing every section and the whole body separately."""
    import hashlib

    def h(x):
        return hashlib.sha256(canonical(x)).hexdigest()
    want = {}
    for k, v in body.items():
        want[k] = h(v)
        if isinstance(v, list):
            want.update({f"{k}[{i}]": h(x) for i, x in enumerate(v)})
    got = compute_hashes({**body, "hashes": {"stale": 1}})
    assert got["all"] == h(body) and list(got["sections"].items()) == list(want.items())
    texts = Texts()  # verify's: the sections' texts shared by the schema memo's key and the hashes
    cert = {**body, "hashes": {"stale": 1}}
    assert object_text(cert, texts) == canonical(cert) and compute_hashes(cert, texts) == got
    assert all(texts.text(v) == canonical(v) for v in body.values())


_BUDGET_JSON = st.recursive(st.sampled_from(["ok", "timeout", "budget exhausted", "x time limit", 0, None]),
                            lambda c: st.lists(c, max_size=3)
                            | st.dictionaries(st.sampled_from(["reason", "message", "search", "claims", "a"]), c,
                                              max_size=3), max_leaves=12)


@given(st.dictionaries(st.sampled_from(["reason", "message", "search", "claims"]), _BUDGET_JSON, max_size=4))
@settings(max_examples=300, deadline=None)
def test_budget_words_equal_the_leaf_by_leaf_definition(body):
    """verify's walk for budget words (replay._budget_words) finds exactly the leaves the
    definition names: a string under a ``reason`` key, or under ``message`` inside the top-level
    ``search``, holding a budget word."""
    want = any(isinstance(v, str) and p and (p[-1] == "reason" or (p[0] == "search" and p[-1] == "message"))
               and any(w in v for w in BUDGET_WORDS) for p, v in leaves(body))
    assert _budget_words(body) == want

def test_diff_tells_true_from_one_in_equal_looking_containers():
    assert [True, {"a": False}] == [1, {"a": 0}]  # Python's == alone would skip them
    assert diff([True, {"a": False}], [1, {"a": 0}]) == [("[0]", "is true, the replay gives 1"),
                                                          ("[1].a", "is false, the replay gives 0")]

def test_a_spent_budget_is_reported_never_taken_as_agreement(cert):
    from softhard.solver.replay import clear_replay_cache
    clear_replay_cache()
    rep = verify_certificate(cert, budget_s=0.0)
    clear_replay_cache()
    assert not rep.ok
    assert rep.problems[0][1].endswith("try a larger --timeout or --budget)"), rep.problems[0]
    assert any(f.endswith(".status") for f, _ in rep.problems)


def test_cli_budget_option(tmp_path, cert, capsys):
    p = tmp_path / "c.json"
    p.write_text(json.dumps(cert))
    assert main(["verify", str(p), "--budget", "0"]) == 2
    assert "--budget must be > 0" in capsys.readouterr().err
    assert main(["verify", str(p), "--budget", "3600"]) == 0


def test_cli_default_budget_is_the_library_default():
    from softhard.solver.cli import verify as verify_parser
    from softhard.solver.replay import DEFAULT_BUDGET_S
    assert verify_parser.DEFAULT_BUDGET_S == DEFAULT_BUDGET_S


def test_a_long_text_difference_is_shown_where_it_differs():
    """A new-user trial: an edited query text was reported with both sides cut at the same
    80-character prefix, so the message did not show what differs.  Now both sides start just
    before the first different character (its index given)."""
    q = ("; benchmark generated from python API\n(set-info :status unknown)\n(declare-fun n () Real)\n"
         "(assert (> n 3))\n(check-sat)\n")
    (where, msg), = diff({"smtlib": q.replace("(> n 3)", "(> n 4)")}, {"smtlib": q})
    i = q.index("(> n 3)") + 5
    assert where == "smtlib" and msg.startswith(f"differs from character {i}:")
    assert "(> n 4)" in msg and "(> n 3)" in msg
    (_, msg), = diff({"smtlib": q + "; edited"}, {"smtlib": q})
    assert f"differs from character {len(q)}:" in msg and "; edited" in msg
    assert diff({"x": "ab"}, {"x": "ac"}) == [("x", 'is "ab", the replay gives "ac"')]


@pytest.mark.parametrize("edited", ["section", "copy"])
def test_a_node_numeric_difference_names_the_measured_section(cert, edited):
    """Found by a new-user trial: an edit of ``numeric.nodes.<v>`` was reported at ``nodes[i].numeric``
    as "is <the untouched value>, the replay gives <the edited one>" — the sense reversed.  Both
    stored copies are now named, whichever was edited."""
    i, node = next((i, n) for i, n in enumerate(cert["nodes"]) if n.get("numeric"))
    name = node["node"]
    old = node["numeric"]["inputs"]
    bad = json.loads(json.dumps(cert))  # as read from a file: the two copies are separate objects
    (bad["numeric"]["nodes"][name] if edited == "section" else bad["nodes"][i]["numeric"])["inputs"] = old + 1
    bad["hashes"] = compute_hashes(bad)
    msgs = dict(verify_certificate(bad).problems)
    copy_is, section_has = (old, old + 1) if edited == "section" else (old + 1, old)
    assert msgs[f"nodes[{i}].numeric.inputs"] == (f"is {copy_is}, but numeric.nodes.{name} (the measured result it "
                                                  f"copies) has {section_has}")


def test_the_measured_checks_memo_gives_the_live_report(cert, monkeypatch):
    """verify memoises the measured checks' outcome per kept replay, keyed by mpmath's precision and
    the sections they read (``replay._measured``, ISSUE 16).  With it warm, edited copies get the
    report a verify without it gives: an edit elsewhere (served by the memo) and edits of the
    fields the checks read (keys of their own) — benchmarks/measured_memo_identity.py compares every
    edit of a formula, a model and a Tracr certificate."""
    def edited(fn):
        c2 = copy.deepcopy(cert)
        fn(c2)
        c2["hashes"] = compute_hashes(c2)
        return c2

    v = next(iter(cert["numeric"]["nodes"]))
    cases = [edited(lambda c: c["claims"][0].update(status="refuted")),
             edited(lambda c: c.update(composed="edited")),
             edited(lambda c: c["numeric"]["nodes"][v].update(ratio=0.5)),
             edited(lambda c: c["search"]["per_bound"][0].update(rounds=7)),
             edited(lambda c: c["search"]["per_bound"][0].pop("rounds")),
             edited(lambda c: c["range"].update(n_max=c["range"]["n_max"] + 1))]

    runs = []
    kind = certificate_module.FORMULA

    def counted(c, ctx, rep):
        runs.append(1)
        return kind.check_measured(c, ctx, rep)
    monkeypatch.setattr(certificate_module, "FORMULA", Kind(kind.name, kind.inputs, kind.replay, counted))

    def reports():  # the live path (verify --no-cache: no replay artefact read), from an empty replay memo
        replay.clear_replay_cache()
        runs.clear()
        store.set_disk_cache(False)
        try:
            out = [verify_certificate(cert)] + [verify_certificate(c2) for c2 in cases]
        finally:
            store.set_disk_cache(None)
        return [(r.ok, r.problems, r.checked, r.exit_code, r.undecided, r.status) for r in out], len(runs)

    with_memo, served = reports()
    assert with_memo[0][0] and not any(r[0] for r in with_memo[1:])
    monkeypatch.setattr(replay, "_MEASURED_CACHE", 0)
    without, every = reports()
    assert without == with_memo
    assert served == every - 2  # the claims and composed edits: the genuine certificate's checks, memoised
    replay.clear_replay_cache()


def _warm_then_cold(cert, kind, other):
    """verify of ``cert`` with the kinds ``other`` right after a verify with the registered
    ``kind`` (the memos warm), then from empty memos; the disk cache off."""
    store.set_disk_cache(False)
    try:
        replay.clear_replay_cache()
        assert replay.verify(cert, {"formula": kind}).ok
        warm = replay.verify(cert, other)
        replay.clear_replay_cache()
        return warm, replay.verify(cert, other)
    finally:
        store.set_disk_cache(None)
        replay.clear_replay_cache()


def test_the_measured_memo_is_per_check_function(cert):
    """A Kind of the same name with another ``check_measured`` gets its own checks' outcome, not
    the memoised one of the registered kind (review13 F3): a check that always adds a problem
    fails the certificate with the memo warm, as it does from an empty memo."""
    kind = certificate_module.FORMULA

    def strict(c, ctx, rep):  # noqa: ARG001 — check_measured's signature
        rep.add("numeric", "strict check: always fails")
    other = {"formula": Kind(kind.name, kind.inputs, kind.replay, strict)}
    warm, cold = _warm_then_cold(cert, kind, other)
    assert ("numeric", "strict check: always fails") in cold.problems and not cold.ok
    assert warm.problems == cold.problems and not warm.ok


def test_the_replay_memo_is_per_replay_function(cert):
    """A Kind of the same name with another ``replay`` runs its own replay, not the memoised one of
    the registered kind (the replay memo was keyed by the kind's name): a replay that re-derives a
    different status fails the certificate with the memo warm, as it does from an empty memo."""
    kind = certificate_module.FORMULA
    calls = []

    def skewed(c, t):
        calls.append(t)
        fresh, ctx = kind.replay(c, t)
        return dict(fresh, status="refuted"), ctx
    other = {"formula": Kind(kind.name, kind.inputs, skewed, kind.check_measured)}
    warm, cold = _warm_then_cold(cert, kind, other)
    assert len(calls) == 2 and not cold.ok and any(f == "status" for f, _ in cold.problems)
    assert warm.problems == cold.problems and not warm.ok
