"""Replay artefacts of model-file and Tracr certificates (ISSUE 16; solver/model_inputs.py,
solver/tracr_inputs.py): a verify that finds the recorded replay of a certificate's inputs re-runs
every recorded Z3 query and arb check live and compares with the recorded output.  Tested here, for
one certificate of each kind: the report is the live path's (``--no-cache``) for the genuine
certificate and for edits of a derived field, a measured field, the embedded model and a searched
value; every measured field the checks read changes the key; a recorded answer that differs falls
back to the live path; a warm verify loads no SymPy, networkx or NumPy (a fresh interpreter)."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest

from softhard.bounds import store
from softhard.constructions import gap_tasks
from softhard.constructions.modelfile import doc_sha256, load_model
from softhard.constructions.tracr_load import load_tracr
from softhard.solver import model_inputs, replay
from softhard.solver.certjson import compute_hashes
from softhard.solver.kinds import FAST_INPUTS, KINDS
from softhard.solver.models import build_model_construction, certify_model
from softhard.solver.replay_memo import artefact_key
from softhard.solver.tracr import certify_tracr
from artefact_util import fast, live, own_cache, same
from tamper import _edited, _nodes

ROOT = Path(__file__).resolve().parents[2]
#: a small numeric plan: the measured section exists (its checks run), at little cost
PLAN = {"exhaustive_words": 64, "random_count": 16, "random_n_max": 16}


def recorded_lines(lines: list[str]) -> list[str]:
    """A live verify's ``checked`` lines as an artefact's verify states them: the kind's own lines
    (between the replay line and ``hashes``) marked as the recorded replay's."""
    return lines[:2] + [c + " (by the recorded replay)" for c in lines[2:-1]] + lines[-1:]


@pytest.fixture(scope="module", autouse=True)
def cache_dir(tmp_path_factory):
    """A cache directory and in-process store layer of this module's own (tests/artefact_util.py)."""
    with own_cache(tmp_path_factory) as d:
        yield d


@pytest.fixture(scope="module")
def certs():
    """ab_subsequence (n_max 9, ε 1/4, --find-tau, exhaustive premises, a numeric section) and the
    Tracr export frac_prevs (every answer, a numeric section)."""
    c, an = build_model_construction(load_model(ROOT / "examples" / "models" / "ab_subsequence.json"), n_max=9,
                                     epsilon=Fraction(1, 4))
    model = json.loads(json.dumps(certify_model(c, an, n_max=9, find_tau=True, numeric_opts=PLAN)))
    tracr = certify_tracr(load_tracr(ROOT / "examples" / "tracr" / "frac_prevs"))
    return {"model": model, "tracr": tracr}


def _key(cert: dict) -> str:
    return artefact_key(cert["kind"], FAST_INPUTS[cert["kind"]](cert), replay.replay_timeout(cert, None))


def _rehashed(cert: dict, edit) -> dict:
    c2 = copy.deepcopy(cert)
    edit(c2)
    c2["hashes"] = compute_hashes(c2)
    return c2


def _model_doc(c: dict) -> None:
    """An edit of the embedded model's weights, its SHA-256 recomputed: another model (a model
    file's first head scores BOS 1/3 instead of 1/2; the Tracr export's first MLP writes 2, not 1)."""
    doc = c["source"]["model"]
    if c["kind"] == "model":
        doc["layers"][0]["heads"][0]["W_K"]["entries"] = [["a", 0, 1], ["bos", 0, "1/3"]]
    else:
        doc["layers"][0]["mlp"][0]["W2"][0] = [2 if x == 1 else x for x in doc["layers"][0]["mlp"][0]["W2"][0]]
    c["source"]["model_sha256"] = doc_sha256(doc)


def _up(x: str) -> str:
    return str(Fraction(x) * Fraction(101, 100))


def _edits(kind: str) -> list[tuple[str, object, bool]]:
    """(what, edit, whether the artefact serves it: the inputs are the genuine ones)."""
    common = [("claims[0].status", lambda c: c["claims"][0].update(status="refuted"), True),
              ("embedded model", _model_doc, False)]
    if kind == "model":
        def node_ratio(c):
            s = next(iter(c["numeric"]["nodes"].values()))
            s["ratio"] = s["ratio"] / 2 + 0.125
        return common + [
            ("premises.heads[0].gap", lambda c: c["premises"]["heads"][0].update(gap=_up(c["premises"]["heads"][0]["gap"])),
             True),
            ("numeric.nodes.*.ratio (measured)", node_ratio, False),
            ("search.per_bound[0].rounds (measured)", lambda c: c["search"]["per_bound"][0].update(rounds=99), False),
            ("construction.inv_tau (read by the measured checks)",
             lambda c: c["construction"].update(inv_tau=_up(c["construction"]["inv_tau"])), False),
            ("search.per_bound[0].inv_tau_certified (searched)", lambda c: c["search"]["per_bound"][0].update(
                inv_tau_certified=_up(c["search"]["per_bound"][0]["inv_tau_certified"])), False)]
    return common + [
        ("answers.compiled.exact_up_to", lambda c: c["answers"]["compiled"].update(exact_up_to=1), True),
        ("numeric.all_words.violations (measured)", lambda c: c["numeric"]["all_words"].update(violations=3), False),
        ("source.tracr.examples[0] (read by the measured checks)",
         lambda c: c["source"]["tracr"]["examples"].pop(0), False),
        ("search.min_inv_tau.inv_tau (searched)", lambda c: c["search"]["min_inv_tau"].update(
            inv_tau=_up(c["search"]["min_inv_tau"]["inv_tau"])), False)]


@pytest.mark.parametrize("kind", ["model", "tracr"])
def test_the_artefact_gives_the_live_report(certs, kind):
    cert = certs[kind]
    first = fast(cert)  # no artefact yet: live, and recorded (the certificate is valid)
    assert first.ok and replay.LIVE_CHECKED in first.checked
    again = fast(cert)
    assert again.ok and replay.ARTEFACT_CHECKED in again.checked and replay.LIVE_CHECKED not in again.checked
    ref = live(cert)
    assert same(again, ref) and replay.LIVE_CHECKED in ref.checked
    # the kind's own lines (premises, measured checks): the recorded ones, said to be
    assert again.checked[2:] == recorded_lines(ref.checked)[2:]
    for what, edit, served in _edits(kind):
        c2 = _rehashed(cert, edit)
        got, ref = fast(c2), live(c2)
        assert not got.ok, what
        assert same(got, ref), what
        assert (replay.ARTEFACT_CHECKED in got.checked) == served, what


def _copy(x):
    """A new container with the same items (a shallow copy of a dict or list)."""
    return dict(x) if isinstance(x, dict) else list(x)


def _leaf_edits(cert: dict, where: tuple):
    """``(path, edited copy)`` for every leaf under ``cert[where...]`` changed and every key/item
    there deleted (tests/tamper.py's edits).  Only the containers on the edited path are copied
    (from ``cert[where...]`` down to the edited node's parent); the rest is shared with ``cert``,
    which nothing may mutate (the caller checks it unchanged; a deep copy of the model's numeric
    section per edit was ~1.6 s)."""
    part = cert
    for k in where:
        part = part[k]
    for path, v in _nodes(part):
        if not path:
            continue
        for what in ("changed", "deleted"):
            if what == "changed" and isinstance(v, (dict, list)) and v:
                continue
            edited = parent = _copy(part)
            for k in path[:-1]:
                parent[k] = parent = _copy(parent[k])
            if what == "deleted":
                del parent[path[-1]]
            else:
                parent[path[-1]] = _edited(v)
            c2 = dict(cert)
            target = c2
            for k in where[:-1]:
                target[k] = target = (list if isinstance(target[k], list) else dict)(target[k])
            target[where[-1]] = edited
            yield where + path, c2


@pytest.mark.parametrize("kind", ["model", "tracr"])
def test_the_key_covers_every_measured_field_the_checks_read(certs, kind, monkeypatch):
    """The recorded measured-check result is reused only under the same key: every edit of the
    numeric section changes it, and of the other fields the measured checks read (a model's search
    rows' ``rounds`` and ``empirical``, its 1/τ; the stored Tracr examples); a model's key also
    holds the most words verify re-enumerates (a larger premise is refused).  Timings, versions and
    the date change nothing."""
    cert = certs[kind]
    text = json.dumps(cert)  # the edits share their unedited parts with cert: checked unchanged at the end
    assert KINDS[kind].inputs is FAST_INPUTS[kind]
    base = _key(cert)
    edits = list(_leaf_edits(cert, ("numeric",)))
    if kind == "model":  # the search row's measured fields and certified value, the 1/τ the checks read
        for path in (("search", "per_bound", 0, "rounds"), ("search", "per_bound", 0, "empirical"),
                     ("search", "per_bound", 0, "inv_tau_certified"), ("construction", "inv_tau")):
            c2 = copy.deepcopy(cert)
            parent = c2
            for k in path[:-1]:
                parent = parent[k]
            parent[path[-1]] = _edited(parent[path[-1]])
            edits.append((path, c2))
    else:
        edits += list(_leaf_edits(cert, ("source", "tracr", "examples")))
    assert len(edits) > 80
    for path, c2 in edits:
        assert _key(c2) != base, path
    if kind == "model":
        monkeypatch.setattr(model_inputs, "VERIFY_EXHAUSTIVE_LIMIT", 1000)
        assert _key(cert) != base
        monkeypatch.undo()
        token = gap_tasks.TASK_WORKERS.set(2)
        try:
            assert _key(cert) != base
        finally:
            gap_tasks.TASK_WORKERS.reset(token)
    c2 = copy.deepcopy(cert)
    c2["created"], c2["tool"]["z3-solver"] = "then", "0"
    c2["times"] = {k: 1e9 for k in c2["times"]}
    c2["claims"][0]["seconds"] = c2["claims"][0]["queries"][0]["seconds"] = 1e9
    assert _key(c2) == base
    assert json.dumps(cert) == text


@pytest.mark.parametrize("kind", ["model", "tracr"])
def test_a_recorded_answer_that_differs_falls_back_to_the_live_path(certs, kind):
    cert = certs[kind]
    assert fast(cert).ok and replay.ARTEFACT_CHECKED in fast(cert).checked  # warm
    key = _key(cert)
    art = copy.deepcopy(store.load(key))
    z3 = next(r for r in art["transcript"] if "z3" in r and r["answer"] == "unsat")
    z3["answer"] = "sat"
    art["fresh"]["status"] = "doctored"  # never believed once an answer differs
    store.save(key, art)
    got = fast(cert)
    assert replay.LIVE_CHECKED in got.checked and replay.ARTEFACT_CHECKED not in got.checked
    assert got.ok and same(got, live(cert))
    # the live path recorded the genuine artefact again — with every oracle call, although this
    # process's Tracr replay served the claims from its memo (solver/tracr.py keeps their rows)
    assert replay.ARTEFACT_CHECKED in fast(cert).checked


PROBE = """
import json, sys
from softhard.solver.cli import main
rc = main(sys.argv[1:])
print(json.dumps({"rc": rc, "modules": sorted(sys.modules)}))
"""


def _run(argv: list[str], env: dict) -> tuple[int, set[str], dict]:
    out = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, cwd=ROOT,
                         timeout=300, env=env)
    lines = out.stdout.strip().splitlines()
    last = json.loads(lines[-1])
    return last["rc"], set(last["modules"]), json.loads("\n".join(lines[:-1]))


@pytest.mark.parametrize("kind", ["model", "tracr"])
def test_a_warm_artefact_verify_loads_no_sympy_networkx_numpy(certs, kind, tmp_path):
    env = {**os.environ, "SOFTHARD_CACHE_DIR": str(tmp_path / "cache")}
    env.pop("SOFTHARD_CACHE", None)
    path = tmp_path / f"{kind}.json"
    path.write_text(json.dumps(certs[kind]))
    rc, modules, report = _run(["verify", str(path), "--json"], env)  # live: records the artefact
    assert rc == 0 and report["valid"] and replay.LIVE_CHECKED in report["checked"]
    assert {"sympy", "networkx", "numpy", f"softhard.solver.{'models' if kind == 'model' else 'tracr'}"} <= modules
    rc, modules, warm = _run(["verify", str(path), "--json"], env)
    assert rc == 0 and warm["valid"] and replay.ARTEFACT_CHECKED in warm["checked"]
    assert warm["checked"][2:] == recorded_lines(report["checked"])[2:] and warm["problems"] == report["problems"] == []
    assert not {m.split(".")[0] for m in modules} & {"sympy", "networkx", "numpy", "lark", "jsonschema", "rich"}
    assert not {"softhard.solver.models", "softhard.solver.tracr", "softhard.solver.certificate"} & modules
    assert f"softhard.solver.{kind}_inputs" in modules
