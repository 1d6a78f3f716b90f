"""verify and the solver's time limits (new-user trial): the certifying run's per-query limit is
stored (``solver.timeout_s``) and replayed by default; a replay stopped by a budget exits 1
("could not re-check"), never 2 ("invalid") unless something was found edited."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from softhard.constructions.parse import load_spec
from softhard.solver import check
from softhard.solver.certificate import FORMULA, certify
from softhard.solver.certjson import compute_hashes
from softhard.solver.cli import main
from softhard.solver.kinds import verify_certificate
from softhard.solver.pipeline import build
from softhard.solver import replay as replay_module
from softhard.solver.replay import Kind, clear_replay_cache, verify

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture(scope="module")
def t4():
    return build(load_spec(str(EXAMPLES / "tomita4.ltl")), "T")


@pytest.fixture(scope="module")
def cert(t4):
    return certify(t4, n_max=1000, tau="1/20000", numeric=False, timeout_s=7.5)


def _limits_used(cert: dict, **kw) -> tuple[list[float], object]:
    """The per-query limits the formula kind's replay was called with, and the report."""
    seen: list[float] = []

    def spy(c, t):
        seen.append(t)
        return FORMULA.replay(c, t)

    clear_replay_cache()
    rep = verify(cert, {"formula": Kind("formula", FORMULA.inputs, spy, FORMULA.check_measured)}, **kw)
    return seen, rep


def _rehashed(cert: dict, edit) -> dict:
    c = copy.deepcopy(cert)
    edit(c)
    c["hashes"] = compute_hashes(c)
    return c


def test_the_time_limit_is_stored_and_replayed(cert):
    assert cert["status"] == "proved" and cert["solver"] == {"timeout_s": 7.5}
    seen, rep = _limits_used(cert)
    assert seen == [7.5] and rep.ok and rep.exit_code == 0
    seen, rep = _limits_used(cert, timeout_s=3.0)  # verify --timeout overrides
    assert seen == [3.0] and rep.ok
    edited = _rehashed(cert, lambda c: c["solver"].update(timeout_s=31.0))  # a replay input: replayed as stored
    seen, rep = _limits_used(edited)
    assert seen == [31.0] and rep.ok
    old = _rehashed(cert, lambda c: c.pop("solver"))  # a certificate from before the field: 20 s, as before
    seen, rep = _limits_used(old)
    assert seen == [20.0] and rep.ok


@pytest.mark.parametrize("value", [0, -1, 86401, "20", None])
def test_a_bad_stored_limit_is_a_schema_violation(cert, value):
    bad = _rehashed(cert, lambda c: c["solver"].update(timeout_s=value))
    rep = verify_certificate(bad)
    assert not rep.ok and rep.exit_code == 2
    assert rep.problems[0][0] == "solver.timeout_s" and "schema violation" in rep.problems[0][1]


def test_an_unknown_certificate_at_a_tiny_limit_is_not_called_invalid(t4, tmp_path, capsys):
    """The trial's case: certify at --timeout 0.001 leaves the claims unknown; a plain verify (no
    --timeout) replays at the stored 0.001 s.  Z3's limits are wall-clock, so a claim at the edge
    can come out either way: valid (0) or could-not-re-check (1), never invalid (2)."""
    c = certify(t4, n_max=10**6, tau="1/6000", numeric=False, timeout_s=0.001)
    assert c["solver"] == {"timeout_s": 0.001}
    p = tmp_path / "unk.json"
    p.write_text(json.dumps(c))
    clear_replay_cache()
    code = main(["verify", str(p)])
    err = capsys.readouterr().err
    assert code in (0, 1), err
    assert "invalid" not in err
    if code == 1:
        assert "could not re-check" in err


def test_a_budget_stopped_replay_exits_1_not_2(cert, tmp_path, capsys):
    p = tmp_path / "c.json"
    p.write_text(json.dumps(cert))
    clear_replay_cache()
    assert main(["verify", str(p), "--budget", "0.001"]) == 1
    err = capsys.readouterr().err
    assert "could not re-check certificate" in err and "invalid" not in err
    clear_replay_cache()
    assert main(["verify", str(p), "--budget", "0.001", "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["valid"] is False and out["undecided"] is True
    clear_replay_cache()
    q = tmp_path / "d.json"
    q.write_text(json.dumps(cert))
    assert main(["verify", str(p), str(q), "--budget", "0.001"]) == 1  # a batch: the worst job's status
    cap = capsys.readouterr()
    assert "could not re-check" in cap.out + cap.err
    # an edit (not re-hashed) is still "invalid" (2), whatever the budget
    bad = copy.deepcopy(cert)
    bad["range"]["n_max"] = 999
    p.write_text(json.dumps(bad))
    clear_replay_cache()
    assert main(["verify", str(p), "--budget", "0.001"]) == 2
    assert "invalid certificate" in capsys.readouterr().err


def test_a_stopped_claim_excuses_only_its_own_differences(monkeypatch):
    """A claim stored unknown at a 0.001 s limit, replayed at 20 s, is decided: its own fields, its
    node's status and the top-level "unknown" may differ ("could not re-check", exit 1).  Anything
    else edited with it — here the top-level status made "proved" — is still invalid (exit 2).
    The certifying run's time-outs are made certain (Z3 can refute within 1 ms on a loaded
    machine): every query of that run is answered as the hard wall-clock kill answers."""
    with monkeypatch.context() as m:
        m.setattr(check, "run_z3", lambda smtlib, timeout_s=0.0: ("unknown", "timeout (hard wall-clock kill)", None,
                                                                 timeout_s))
        c = certify(build(load_spec("Y a", alphabet="ab"), "T"), n_max=10**6, tau="1/6000", numeric=False,
                    timeout_s=0.001)
    assert c["status"] == "unknown" and "timeout" in c["claims"][0]["reason"]
    clear_replay_cache()
    rep = verify(c, {"formula": FORMULA}, timeout_s=20.0)
    assert not rep.ok and rep.undecided and rep.exit_code == 1
    assert {p for p, _ in rep.problems} >= {"nodes[0].status", "claims[0].status", "status"}
    forged = _rehashed(c, lambda x: x.update(status="proved"))
    clear_replay_cache()
    rep = verify(forged, {"formula": FORMULA}, timeout_s=20.0)
    assert not rep.ok and not rep.undecided and rep.exit_code == 2


def test_a_search_row_stopped_by_the_budget_counts_as_not_rechecked(t4):
    """A review found ``verify --no-cache --budget 1.3`` of a genuine ``--find-tau`` certificate
    exiting 2: the budget ran out at the search section's re-check of the found value, whose row
    states the proof's reason in ``message`` (``proof_at_certified`` "unknown"), where the budget
    test looked at ``reason`` leaves only.  Such a replay is budget-stopped (exit 1)."""
    fresh = {"claims": [{"status": "proved", "reason": ""}],
             "search": {"per_bound": [{"proof_at_certified": "unknown",
                                       "message": f"not proved at the stated value ({check.BUDGET_SPENT})"}]}}
    assert replay_module._budget_hit(fresh)
    fresh["search"]["per_bound"][0]["message"] = ""
    assert not replay_module._budget_hit(fresh)
    # a message elsewhere that mentions a timeout is not a budget stop of the replay
    assert not replay_module._budget_hit({"numeric": {"message": "timeout"}, "claims": []})
