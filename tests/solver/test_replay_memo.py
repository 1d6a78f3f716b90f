"""Replay artefacts (ISSUE 16, solver/replay_memo.py): a verify that finds the recorded replay of a
formula certificate's inputs re-runs every recorded Z3 query and arb check live and, when each
answers as recorded, compares the certificate with the recorded output instead of rebuilding the
construction.  Tested here: the report is the live path's (genuine and edited certificates of
several formulas, regimes T and U, a found and a given tau), every edit is still caught with the
artefact warm, a recorded answer that differs from the live one falls back to the live path,
``--no-cache`` never reads an artefact, and a verify on a warm artefact loads no SymPy, networkx
or NumPy (a fresh interpreter)."""

from __future__ import annotations

import contextlib
import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import mpmath
import pytest

from softhard.bounds import store
from softhard.constructions.parse import load_spec
from softhard.solver import replay, replay_memo
from softhard.solver.certificate import certify
from softhard.solver.certjson import canonical, compute_hashes
from softhard.solver.formula_inputs import inputs as formula_inputs
from softhard.solver.kinds import FAST_INPUTS, KINDS
from softhard.solver.pipeline import build
from softhard.solver.replay_memo import artefact_key
from artefact_util import fast, live, own_cache, same
from tamper import section_edits, undetected

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
FAST = {"exhaustive_len": 6, "random_count": 64, "random_n_max": 64, "adversarial_ns": (10, 100)}
#: the replay's inputs (as tests/solver/test_replay.py): an edit there shows up where it is used
INPUTS = ("source", "construction.regime", "construction.params", "range", "search.per_bound[*].node",
          "search.per_bound[*].inv_tau_certified", "search.params", "solver")


@pytest.fixture(scope="module", autouse=True)
def cache_dir(tmp_path_factory):
    """A cache directory of this module's own (tests/artefact_util.py)."""
    with own_cache(tmp_path_factory) as d:
        yield d


def _memo_key(cert: dict) -> tuple:
    return (KINDS["formula"].replay, canonical(["formula", formula_inputs(cert), replay.replay_timeout(cert, None)]))


def _cert(name: str, regime: str, **kw) -> dict:
    c = build(load_spec(str(EXAMPLES / f"{name}.ltl")), regime)
    return certify(c, **kw)


@pytest.fixture(scope="module")
def t4():
    """tomita4, regime T, --find-tau, with a numeric section (its measured checks run arb too)."""
    return _cert("tomita4", "T", n_max=10**4, find_tau=True, numeric_opts=FAST)


def _rehashed(cert: dict, edit) -> dict:
    c2 = copy.deepcopy(cert)
    edit(c2)
    c2["hashes"] = compute_hashes(c2)
    return c2


def _edits(cert: dict) -> list[tuple[str, dict, bool]]:
    """(what, edited certificate, whether its inputs are the genuine ones: the artefact serves it)."""
    def smt(c):
        q = c["claims"][0]["queries"][0]
        q["smtlib"] = q["smtlib"].replace("(check-sat)", "(assert true)\n(check-sat)", 1)

    def bound(c):
        b = c["nodes"][0]["bound"]
        b["srepr"] = f"Mul(Integer(2), {b['srepr']})"

    def status(c):
        c["status"] = "refuted"
        c["claims"][0]["status"] = "refuted"

    def n_max(c):
        c["range"]["n_max"] += 1

    unhashed = copy.deepcopy(cert)
    unhashed["composed"] = "every claim proved"
    return [("claims[0].queries[0].smtlib", _rehashed(cert, smt), True),
            ("nodes[0].bound.srepr", _rehashed(cert, bound), True),
            ("status", _rehashed(cert, status), True),
            ("range.n_max", _rehashed(cert, n_max), False),
            ("composed, hashes not recomputed", unhashed, True)]


CASES = [("tomita4", "T", {"n_max": 512, "find_tau": True, "numeric": False}),
         ("tomita4", "U", {"n_max": 512, "tau": "1/200", "numeric": False}),
         ("aba", "U", {"n_max": 512, "find_tau": True, "numeric": False}),
         ("dyck1", "T", {"n_max": 256, "tau": "1/100000", "numeric": False})]


@pytest.mark.parametrize("name,regime,kw", CASES, ids=[f"{n}-{r}" for n, r, _ in CASES])
def test_the_artefact_gives_the_live_report(name, regime, kw):
    """Each live report is a fresh replay (this process's replay of the inputs forgotten first, as
    in a ``verify --no-cache`` of that file alone): a replay that read a field outside the kind's
    inputs would then differ from the artefact's report.  The artefact's oracle calls re-run once,
    on the genuine certificate (``again``); the edited copies share that re-run, as verifies of
    copies in one process do (its answers depend on the artefact's key only, never on the
    certificate; ISSUE 16: an oracle re-run per edit was a third of aba-U's time)."""
    cert = _cert(name, regime, **kw)
    edits = _edits(cert)
    first = fast(cert)  # no artefact yet: live, and recorded (the certificate is valid)
    assert first.ok and replay.LIVE_CHECKED in first.checked
    again = fast(cert)
    assert again.ok and replay.ARTEFACT_CHECKED in again.checked and replay.LIVE_CHECKED not in again.checked
    assert same(again, fresh_live(cert))
    for what, c2, served in edits:
        got, ref = fast(c2, rerun=False), fresh_live(c2)
        assert not got.ok, what
        assert same(got, ref), what
        assert (replay.ARTEFACT_CHECKED in got.checked) == served, what
        assert replay.LIVE_CHECKED in ref.checked


def fresh_live(cert: dict) -> replay.VerifyReport:
    """:func:`live` after forgetting this process's replay of ``cert``'s inputs (when they can be
    read): the live path replays ``cert`` itself."""
    with contextlib.suppress(KeyError, TypeError, AttributeError):
        replay._REPLAYS.pop(_memo_key(cert), None)
    return live(cert)


def _artefact_key(cert: dict) -> str | None:
    try:
        return artefact_key("formula", formula_inputs(cert), replay.replay_timeout(cert, None))
    except (KeyError, TypeError, AttributeError):  # inputs that cannot be read: the live path reports them
        return None


def test_every_edit_is_rejected_with_the_artefact_warm(t4):
    """tests/solver/test_replay.py's every-edit test, each verify served by the artefact wherever
    the edit leaves the inputs alone (this process's memo of the genuine replay forgotten).  An
    edit of the inputs has another artefact key (checked here), under which nothing is recorded
    (only a valid certificate's replay is), so its verify is the live path's: that one is run on the
    same certificate (tomita4, T, the same options) by tests/solver/test_replay.py's every-edit
    test, not a second time here (ISSUE 16: the live replays of the edited inputs were two thirds
    of this test's CPU)."""
    assert fast(t4).ok
    genuine = _artefact_key(t4)
    served, other_inputs = [], []

    def same_key(c):
        other_inputs.append(_artefact_key(c) != genuine)
        return not other_inputs[-1]

    def verify(c):  # (the artefact's oracle calls re-run once: this process then keeps its replay)
        rep = fast(c, rerun=False)
        served.append(replay.ARTEFACT_CHECKED in rep.checked)
        return rep

    assert undetected(t4, "formula", verify, inputs=INPUTS, only=same_key) == []
    assert sum(served) > 300  # most edits are of derived fields: the artefact served them
    assert 0 < sum(other_inputs) < 100  # (the edits of inputs: 46 of 901)


def test_the_key_covers_every_measured_field_the_checks_read(t4):
    """The recorded measured-check result is reused only under the same key, so every measured
    field the checks read must change the key: each edit of the numeric section, and of a search
    row's ``rounds`` and ``empirical`` (the fields the formula kind's ``check_measured`` reads)."""
    assert KINDS["formula"].inputs is FAST_INPUTS["formula"] is formula_inputs

    def key(c):
        return artefact_key("formula", formula_inputs(c), 20.0)

    base = key(t4)
    n = 0
    for where, what, c2 in section_edits(t4, "numeric"):
        assert key(c2) != base, (where, what)
        n += 1
    assert n > 100
    row = next(i for i, r in enumerate(t4["search"]["per_bound"]) if r.get("empirical"))
    for field in ["rounds"] + [f"empirical.{k}" for k in t4["search"]["per_bound"][row]["empirical"]]:
        c2 = copy.deepcopy(t4)
        target, leaf = c2["search"]["per_bound"][row], field.split(".")
        for k in leaf[:-1]:
            target = target[k]
        target[leaf[-1]] = "edited"
        assert key(c2) != base, field
    # and the measured fields outside the key are read by no check: timings, versions, the date
    c2 = copy.deepcopy(t4)
    c2["created"], c2["tool"]["z3-solver"], c2["times"]["total_s"] = "then", "0", 1e9
    c2["claims"][0]["seconds"] = c2["claims"][0]["queries"][0]["seconds"] = 1e9
    assert key(c2) == base


def _doctored(cert: dict, change) -> None:
    key = artefact_key("formula", formula_inputs(cert), replay.replay_timeout(cert, None))
    art = store.load(key)
    assert isinstance(art, dict) and art["transcript"]
    art = copy.deepcopy(art)
    change(art)
    store.save(key, art)


@pytest.mark.parametrize("what", ["z3 answer", "z3 timeout", "arb verdict", "missing row", "a repeat, answered otherwise"])
def test_a_recorded_answer_that_differs_falls_back_to_the_live_path(t4, what):
    assert fast(t4).ok and replay.ARTEFACT_CHECKED in fast(t4).checked  # warm

    def change(art):
        rows = art["transcript"]
        z3 = next(r for r in rows if "z3" in r and r["answer"] == "unsat")
        arb = next(r for r in rows if "arb" in r)
        if what == "z3 answer":
            z3["answer"] = "sat"
        elif what == "z3 timeout":  # recorded as killed at its limit: the live run answers
            z3.update(answer="unknown", reason="timeout (hard wall-clock kill)")
        elif what == "arb verdict":
            arb["result"][0] = "unknown"
        elif what == "a repeat, answered otherwise":  # the same query asked again, recorded with another answer
            rows.append({**z3, "answer": "sat", "n": "2"})
        else:  # a query the recorded output states, not re-run (every row of it)
            rows[:] = [r for r in rows if r.get("z3") != z3["z3"]]
        # and the recorded output edited: never believed once an answer differs
        art["fresh"]["status"] = "doctored"

    _doctored(t4, change)
    got = fast(t4)
    assert replay.LIVE_CHECKED in got.checked and replay.ARTEFACT_CHECKED not in got.checked
    assert got.ok and same(got, live(t4))
    assert replay.ARTEFACT_CHECKED in fast(t4).checked  # the live path recorded the genuine artefact again


def test_equal_rows_are_rerun_once(t4, monkeypatch):
    """Rows that repeat a query or check with the same recorded answer are re-run once (ISSUE 16):
    the transcript twice over takes one live call per distinct row, and still re-runs them all."""
    assert replay.ARTEFACT_CHECKED in fast(t4).checked  # warm
    art = store.load(artefact_key("formula", formula_inputs(t4), replay.replay_timeout(t4, None)))
    rows = art["transcript"] + copy.deepcopy(art["transcript"])
    distinct = {json.dumps(r, sort_keys=True) for r in rows}
    calls: list[str] = []

    def counted(f):
        def run(*a, **kw):
            calls.append(f.__name__)
            return f(*a, **kw)
        run.__name__ = f.__name__
        return run

    monkeypatch.setattr(replay_memo, "run_z3", counted(replay_memo.run_z3))
    monkeypatch.setattr(replay_memo, "rerun_row", counted(replay_memo.rerun_row))
    assert replay_memo.rerun_transcript(art["fresh"], rows)
    assert len(calls) == len(distinct) < len(rows)
    assert calls.count("run_z3") == len({json.dumps(r, sort_keys=True) for r in rows if "z3" in r})


def test_a_deferred_precision_keys_and_replays_as_mpmaths_working_precision(t4):
    """verify on the command line defers mpmath's 30 digits to the live replay (a verify served by
    an artefact never loads mpmath: ISSUE 16); the key is the one computed inside
    mpmath.workdps(30), and the live replay runs at those digits."""
    for dps in (15, 30, 50):
        with mpmath.workdps(dps):
            assert replay_memo.dps_to_prec(dps) == mpmath.mp.prec
    with mpmath.workdps(30):
        want = artefact_key("formula", formula_inputs(t4), 20.0)
    before = mpmath.mp.prec
    with replay_memo.deferred_dps(30):
        assert artefact_key("formula", formula_inputs(t4), 20.0) == want and mpmath.mp.prec == before
        with replay_memo.working_precision():
            assert mpmath.mp.dps == 30
        assert mpmath.mp.prec == before
    with replay_memo.working_precision():
        assert mpmath.mp.prec == before


def test_a_poisoned_artefact_is_believed_as_the_cache_is(t4):
    """The documented caveat (docs/certificates.md): an artefact rewritten with a transcript that
    still answers as recorded is believed, as a rewritten derivation-cache entry is; here it makes
    the genuine certificate invalid.  ``--no-cache`` replays live."""
    assert replay.ARTEFACT_CHECKED in fast(t4).checked

    def change(art):
        art["fresh"]["composed"] = "doctored"

    _doctored(t4, change)
    got = fast(t4)
    assert replay.ARTEFACT_CHECKED in got.checked and got.problems[0][0] == "composed"
    assert live(t4).ok
    replay.clear_replay_cache()
    replay._ARTEFACTS.clear()
    _doctored(t4, lambda art: art["fresh"].update(composed=t4["composed"]))  # restored for the next tests
    assert fast(t4).ok


def test_no_cache_never_reads_an_artefact(t4):
    assert replay.ARTEFACT_CHECKED in fast(t4).checked
    replay._REPLAYS.pop(_memo_key(t4), None)
    rep = live(t4)
    assert rep.ok and replay.LIVE_CHECKED in rep.checked


PROBE = """
import json, sys
from softhard.solver.cli import main
rc = main(sys.argv[1:])
print(json.dumps({"rc": rc, "modules": sorted(sys.modules)}))
"""


def _run(argv: list[str], env: dict) -> tuple[int, list[str], dict | None]:
    out = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, cwd=ROOT,
                         timeout=300, env=env)
    lines = out.stdout.strip().splitlines()
    last = json.loads(lines[-1])
    report = json.loads("\n".join(lines[:-1])) if "--json" in argv and len(lines) > 1 else None
    return last["rc"], last["modules"], report


#: the command line's certify of the subprocess tests below (tomita4, T, n_max 64, no numeric section)
CERTIFY = ["certify", "examples/tomita4.ltl", "--regime", "T", "--n-max", "64", "--eta", "1/4", "--json",
           "--no-numeric", "-o"]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """A cache directory of its own in which a fresh interpreter certified ``a.json`` (CERTIFY) and
    verified it live, recording the artefact of its inputs: ``(directory, env, certify's exit status,
    (the live verify's exit status, modules, report))``.  Shared by the two tests below, which began
    with the same certify and live verify in a directory each (ISSUE 16: two interpreters fewer);
    neither test's later steps change what the other reads (an invalid certificate records nothing;
    a new certificate's verify served by the artefact records nothing either)."""
    d = tmp_path_factory.mktemp("recorded")
    env = {**os.environ, "SOFTHARD_CACHE_DIR": str(d / "cache")}
    env.pop("SOFTHARD_CACHE", None)
    made = _run(CERTIFY + [str(d / "a.json")], env)[0]
    return d, env, made, _run(["verify", str(d / "a.json"), "--json"], env)  # live: records the artefact


def test_a_warm_artefact_verify_loads_no_sympy_networkx_numpy(recorded):
    d, env, made, (rc, modules, report) = recorded
    cert = d / "a.json"
    assert made == 0
    assert rc == 0 and report["valid"] and replay.LIVE_CHECKED in report["checked"]  # the live verify
    assert {"sympy", "networkx", "numpy", "softhard.solver.certificate"} <= set(modules)
    rc, modules, report = _run(["verify", str(cert), "--json"], env)
    assert rc == 0 and report["valid"] and replay.ARTEFACT_CHECKED in report["checked"]
    loaded = {m.split(".")[0] for m in modules}
    # nor mpmath (its precision is deferred to a live replay), importlib.metadata or dataclasses (ISSUE 16)
    assert not loaded & {"sympy", "networkx", "numpy", "lark", "jsonschema", "rich", "mpmath", "dataclasses"}
    assert "softhard.solver.certificate" not in modules and "softhard.solver.replay_memo" in modules
    assert "importlib.metadata" not in modules and "softhard.installed" in modules
    # the command line's live verify recorded the artefact under the key of mpmath's 30 digits
    recorded = json.loads(cert.read_text())
    with mpmath.workdps(30):
        key = artefact_key("formula", formula_inputs(recorded), replay.replay_timeout(recorded, None))
    assert (Path(env["SOFTHARD_CACHE_DIR"]) / "derivations" / key[:2] / f"{key}.json").is_file()
    # an edited copy is refused, on the same warm path (the edit is a derived field's)
    bad = json.loads(cert.read_text())
    bad["claims"][0]["status"] = "refuted"
    bad["hashes"] = compute_hashes(bad)
    (d / "bad.json").write_text(json.dumps(bad))
    rc, _, report = _run(["verify", str(d / "bad.json"), "--json"], env)
    assert rc == 2 and not report["valid"] and report["problems"][0]["field"] == "claims[0].status"


def test_a_fresh_certificate_verifies_without_a_schema_validator(recorded):
    """certify checks its own output against the schema and remembers it valid
    (replay.check_new_certificate): the verify of a certificate just made — a new ``created`` time,
    so a text never verified — loads no jsonschema once the artefact of its inputs is warm."""
    d, env, made, (rc, _, _) = recorded
    assert made == 0 and rc == 0  # a.json certified, and verified live: the artefact recorded
    assert _run(CERTIFY + [str(d / "b.json")], env)[0] == 0
    rc, modules, report = _run(["verify", str(d / "b.json"), "--json"], env)
    assert rc == 0 and report["valid"] and replay.ARTEFACT_CHECKED in report["checked"]
    assert "jsonschema" not in {m.split(".")[0] for m in modules}


def test_certify_refuses_to_write_a_certificate_its_schema_rejects(t4):
    """A certificate certify made that the schema rejects is a bug in softhard: RuntimeError (the
    command line's internal error), naming the path; a valid one passes."""
    replay.check_new_certificate(copy.deepcopy(t4))
    bad = copy.deepcopy(t4)
    bad["status"] = "maybe"
    with pytest.raises(RuntimeError, match=r"schema rejects at status"):
        replay.check_new_certificate(bad)
