"""Certify artefacts (ISSUE 16, solver/certify_memo.py): a ``softhard certify`` of a job recorded
before re-runs every recorded Z3 query and arb check live and, when each answers as recorded, takes
the recorded certificate with a new envelope.  Tested here: the certificate is a live certify's
(every field but the envelope and the solver's seconds; the numeric section bit for bit), valid for
a live verify and under the JSON Schema (validated here with jsonschema, not the memo); a doctored
answer, a malformed artefact, a recorded certificate the schema rejects and ``--no-cache`` give a
live certify; the key follows the input file's bytes (a bare name's ``NAME.ltl`` too) and every
option that reaches the certificate, and no output-only option; a certificate with a claim stopped
by a budget, or an input file edited while certifying, is not recorded; a certify on a warm artefact loads no SymPy, networkx,
NumPy, Lark, jsonschema, mpmath or importlib.metadata (a fresh interpreter)."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from softhard.bounds import store
from softhard.constructions.parse import load_spec
from softhard.solver import certify_memo, replay
from softhard.solver.certjson import load_certificate
from softhard.solver.cli import main
from softhard.solver.cli.handlers import certify as certify_handler
from softhard.solver.cli.handlers.jobs import PRESENTATION
from softhard.solver.kinds import verify_certificate
from artefact_util import own_cache

ROOT = Path(__file__).resolve().parents[2]
#: a small job (tomita4 up to n = 1000: a few seconds live)
JOB = ["certify", str(ROOT / "examples" / "tomita4.ltl"), "--regime", "T", "--n-max", "1000", "--eta", "1/4",
       "--find-tau", "--force"]
#: fields a live certify measures anew each run (wall-clock seconds) besides the envelope
SECONDS = ("seconds",)


@pytest.fixture(scope="module", autouse=True)
def cache_dir(tmp_path_factory):
    """A cache of this module's own, certify artefacts on (tests/artefact_util.py)."""
    with own_cache(tmp_path_factory, certify_artefacts=True) as d:
        yield d


def run(tmp_path, *extra) -> dict:
    out = tmp_path / f"c{len(list(tmp_path.iterdir()))}.json"
    rc = main([*JOB, "-o", str(out), *extra])
    store.set_disk_cache(None)  # (--no-cache switches the process's disk layer off)
    assert rc == 0
    return load_certificate(out)


def from_artefact(cert: dict) -> bool:
    return set(cert["times"]) == {"artefact_s", "total_s"}


def strip(value):
    """``value`` without the envelope and every ``seconds`` field (what two live runs differ in)."""
    if isinstance(value, dict):
        return {k: strip(v) for k, v in value.items() if k not in ("created", "times", "hashes") + SECONDS}
    if isinstance(value, list):
        return [strip(v) for v in value]
    return value


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    """(the live certify that records the artefact — no artefact to read yet —, the certify from it)."""
    d = tmp_path_factory.mktemp("certs")
    recorded = run(d)
    hit = run(d)
    return recorded, hit


def test_a_hit_is_the_live_certificate(certs):
    recorded, hit = certs
    assert not from_artefact(recorded) and from_artefact(hit)
    assert strip(hit) == strip(recorded) and hit["numeric"] == recorded["numeric"]
    body = {k: v for k, v in hit.items() if k not in ("created", "times", "hashes")}
    assert body == {k: v for k, v in recorded.items() if k not in ("created", "times", "hashes")}
    assert hit["created"] >= recorded["created"] and all(v >= 0 for v in hit["times"].values())
    # valid under the schema (a validator here, not the memo that finish() filled) and for a live verify
    validator = jsonschema.Draft202012Validator(replay.schema())
    assert list(validator.iter_errors(hit)) == []
    store.set_disk_cache(False)
    try:
        rep = verify_certificate(hit)
    finally:
        store.set_disk_cache(None)
    assert rep.ok and rep.problems == [], rep.problems


def _artefacts(cache: Path) -> list[Path]:
    out = []
    for p in cache.rglob("*.json"):
        try:
            doc = json.loads(p.read_text())
        except ValueError:
            continue
        if isinstance(doc, dict) and doc.get("format") == certify_memo.FORMAT and "transcript" in doc and "cert" in doc:
            out.append(p)
    return out


def test_a_doctored_or_malformed_artefact_certifies_live(certs, cache_dir, tmp_path):
    live = certs[0]
    (path,) = _artefacts(cache_dir)
    good = path.read_text()
    art = json.loads(good)
    z3_rows = [r for r in art["transcript"] if "z3" in r]
    assert z3_rows and {r["answer"] for r in z3_rows} <= {"unsat", "sat", "unknown"}
    doctored = copy.deepcopy(art)
    row = next(r for r in doctored["transcript"] if "z3" in r)
    row["answer"] = "sat" if row["answer"] == "unsat" else "unsat"
    malformed = dict(art, cert=["not", "a", "certificate"])
    # a recorded certificate the schema rejects (a rewritten entry): live, not written and remembered valid
    invalid = copy.deepcopy(art)
    invalid["cert"]["claims"][0]["seconds"] = -5.0
    assert list(jsonschema.Draft202012Validator(replay.schema()).iter_errors(invalid["cert"]))
    try:
        for bad in (doctored, malformed, invalid):
            path.write_text(json.dumps(bad))
            store._memory.clear()
            got = run(tmp_path)
            assert not from_artefact(got) and strip(got) == strip(live)
            path.write_text(json.dumps(bad))  # (the live run recorded the artefact again)
    finally:
        path.write_text(good)
        store._memory.clear()
    assert from_artefact(run(tmp_path))
    assert not from_artefact(run(tmp_path, "--no-cache"))


def test_the_key_follows_inputs_and_options_not_output(tmp_path):
    f = tmp_path / "f.ltl"
    f.write_text((ROOT / "examples" / "tomita4.ltl").read_text())
    opts = {"regime": "T", "eta": "1/4", "n_max": 1000, "find_tau": True}
    k = certify_memo.job_key("formula", opts, str(f))
    assert certify_memo.job_key("formula", dict(opts), str(f)) == k
    assert certify_memo.job_key("formula", {**opts, "eta": "1/5"}, str(f)) != k
    assert certify_memo.job_key("formula", {**opts, "timeout": 1.0}, str(f)) != k
    f.write_text(f.read_text() + "\n// an edit of the file's bytes\n")
    assert certify_memo.job_key("formula", opts, str(f)) != k
    # the command line leaves out exactly the output-only options (jobs.PRESENTATION)
    assert {"output", "json", "force", "no_cache", "workers"} <= set(PRESENTATION)
    assert not {"timeout", "n_max", "eta", "regime", "no_numeric", "max_positions", "tau"} & set(PRESENTATION)


def test_the_key_follows_the_file_a_bare_name_reads(tmp_path):
    """``certify DIR/f`` reads ``DIR/f.ltl`` (load_spec); the key follows that file's bytes, and its
    appearance after an inline formula of the same text was recorded."""
    bare = str(tmp_path / "f")
    opts = {"regime": "T", "eta": "1/4", "n_max": 1000, "find_tau": True}
    absent = certify_memo.job_key("formula", opts, bare)
    for example in ("tomita4", "aba"):
        (tmp_path / "f.ltl").write_text((ROOT / "examples" / f"{example}.ltl").read_text())
        assert load_spec(bare).name == example
        key = certify_memo.job_key("formula", opts, bare)
        assert key != absent
        absent = key


def test_an_input_edited_while_certifying_is_not_recorded(tmp_path, monkeypatch):
    """The file changes between the key's digest and the live certify's read: that certificate (of
    the new text) is not recorded under the old bytes' key, so the old text certifies live again."""
    f = tmp_path / "r.ltl"
    f.write_text((ROOT / "examples" / "tomita4.ltl").read_text())
    live = certify_handler.kind_certify("formula")

    def edit_then_certify(args):
        f.write_text((ROOT / "examples" / "aba.ltl").read_text())
        return live(args)

    monkeypatch.setenv("SOFTHARD_CACHE_DIR", str(tmp_path / "cache"))  # (the module's cache keeps one artefact)
    argv = [*JOB[:1], str(f), *JOB[2:]]
    with monkeypatch.context() as mp:
        mp.setitem(certify_handler.CERTIFY, "formula", (edit_then_certify, *certify_handler.CERTIFY["formula"][1:]))
        assert main([*argv, "-o", str(tmp_path / "a.json")]) == 0
    assert load_certificate(tmp_path / "a.json")["source"]["name"] == "aba"
    f.write_text((ROOT / "examples" / "tomita4.ltl").read_text())
    assert main([*argv, "-o", str(tmp_path / "b.json")]) == 0
    again = load_certificate(tmp_path / "b.json")
    assert again["source"]["name"] == "tomita4" and not from_artefact(again)


def test_a_claim_stopped_by_a_budget_is_not_recorded(certs, cache_dir):
    (path,) = _artefacts(cache_dir)
    transcript = json.loads(path.read_text())["transcript"]
    stopped = copy.deepcopy(certs[0])
    stopped["claims"][0]["reason"] = "Z3 timeout after 20 s"
    assert certify_memo.recordable(certs[0]) and not certify_memo.recordable(stopped)
    keys = [certify_memo.job_key("formula", {"test": name}, None) for name in ("stopped", "genuine")]
    certify_memo.record(keys[0], stopped, transcript, {})
    certify_memo.record(keys[1], certs[0], transcript, {})
    assert certify_memo.lookup(keys[0]) is None
    assert certify_memo.lookup(keys[1]).cert == certs[0]


def test_a_hit_loads_no_sympy(certs, cache_dir, tmp_path):
    code = ("import sys, json; from softhard.solver.cli import main; "
            f"rc = main({[*JOB, '-o', str(tmp_path / 'h.json'), '--json']!r}); "
            "print(json.dumps([rc, sorted(m for m in ('sympy', 'networkx', 'numpy', 'lark', 'jsonschema', 'mpmath', "
            "'importlib.metadata') "
            "if m in sys.modules)]))")
    env = {k: v for k, v in os.environ.items() if k != certify_memo.SWITCH}
    env["SOFTHARD_CACHE_DIR"] = str(cache_dir)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    rc, loaded = json.loads(out.stdout.strip().splitlines()[-1])
    assert rc == 0 and loaded == [], out.stderr
    assert from_artefact(load_certificate(tmp_path / "h.json"))


KIND_JOBS = {
    "model": ["certify", "--model", str(ROOT / "examples" / "models" / "ab_subsequence.json"), "--n-max", "12",
              "--epsilon", "1/4", "--find-tau", "--force"],
    "tracr": ["certify", "--tracr", str(ROOT / "examples" / "tracr" / "frac_prevs"), "--force"],
}


@pytest.mark.parametrize("kind", sorted(KIND_JOBS))
def test_model_and_tracr_hits_are_the_live_certificate(kind, tmp_path, capsys):
    """The kinds with replay artefacts have certify artefacts too: a hit is the live certificate
    (but the envelope and seconds; the numeric section bit for bit) and its summary prints (a stage's
    seconds: 'done by the recorded run')."""
    got = []
    for i, extra in enumerate(([], [])):
        out = tmp_path / f"{i}.json"
        assert main([*KIND_JOBS[kind], "-o", str(out), *extra]) == 0
        store.set_disk_cache(None)
        got.append((load_certificate(out), capsys.readouterr().out))
    (recorded, _), (hit, text) = got
    assert not from_artefact(recorded) and from_artefact(hit)
    assert strip(hit) == strip(recorded) and hit["numeric"] == recorded["numeric"]
    text = " ".join(text.split())  # (rich wraps at the console width)
    assert text.startswith("from a recorded certify") and "done by the recorded run" in text
    store.set_disk_cache(False)
    try:
        assert verify_certificate(hit).ok
    finally:
        store.set_disk_cache(None)


def test_a_batch_says_which_jobs_came_from_an_artefact(tmp_path, capsys):
    """A new-user trial: a batch's rows and progress lines did not say which jobs a certify artefact
    served (only a single job's summary did)."""
    argv = ["certify", "Y a", "a S b", "--alphabet", "ab", "--regime", "U", "--n-max", "50", "--no-numeric",
            "-o", str(tmp_path / "out") + "/", "--force", "--json"]
    rows = []
    for _ in range(2):
        assert main(argv) == 0
        cap = capsys.readouterr()
        rows.append([json.loads(line) for line in cap.out.splitlines() if line.startswith("{\"job\":")])
        store.set_disk_cache(None)
    assert [r["from_artefact"] for r in rows[0]] == [False, False]
    assert [r["from_artefact"] for r in rows[1]] == [True, True]
    written = sorted((tmp_path / "out").iterdir())
    assert len(written) == 2 and all(from_artefact(load_certificate(p)) for p in written)
