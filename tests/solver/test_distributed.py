"""Dask (issue 18): the same results through a 2-worker cluster on loopback as in one process —
exhaustive gap premises split into tasks, and batches of certify jobs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from softhard.constructions import gap_tasks
from softhard.constructions.gaps import analyse_gaps
from softhard.constructions.modelfile import parse_model
from softhard.constructions.random_models import random_model_doc
from softhard.solver.certjson import diff, load_certificate
from softhard.solver.cli import main
from softhard.solver.distributed import Cluster
from softhard.solver.replay import unchecked_fields

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
ENVELOPE = ("created", "times", "hashes", "tool")


def same(a: dict, b: dict) -> list:
    return diff({k: v for k, v in a.items() if k not in ENVELOPE}, {k: v for k, v in b.items() if k not in ENVELOPE},
                unchecked_fields(a["kind"]))


@pytest.fixture(scope="module")
def loopback():
    """A 2-worker cluster in this process (threads), talking TCP on 127.0.0.1.  Dask is imported
    here, not at collection: an xdist worker that runs none of these tests never loads it."""
    from dask.distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, protocol="tcp://", host="127.0.0.1",
                      dashboard_address=None) as cl:
        yield cl.scheduler_address


def test_exhaustive_premise_on_two_workers_equals_one_process(loopback, monkeypatch):
    doc = random_model_doc(2, layers=2, heads=2, alphabet_size=2, width=6)
    for L in doc["layers"]:
        L["heads"][1]["rule"] = "UHA-rightmost"  # ties: gap 0 at the first tied word
    hm = parse_model(doc).canonical()
    monkeypatch.setattr(gap_tasks, "CHUNK", 64)
    monkeypatch.setattr(gap_tasks, "TASK_CHUNKS", 1)
    one = analyse_gaps(hm, 9, method="exhaustive").to_json()
    with Cluster(scheduler=loopback) as c:
        assert c.n_workers() == 2 and gap_tasks.TASK_WORKERS.get() == 2
        two = analyse_gaps(hm, 9, method="exhaustive").to_json()
    assert gap_tasks.TASK_MAP.get() is None  # closed: back to this process
    one.pop("seconds"), two.pop("seconds")
    assert one == two and one["words"] == 2**10 - 2 and len(gap_tasks.exhaustive_tasks(2, 9)) > 10


def test_model_certificate_through_the_cluster_is_identical_and_verifies(loopback, tmp_path, capsys):
    """certify --model with --scheduler: the one job runs here and its exhaustive enumeration on
    the workers; the certificate equals the single-process one, and verify re-checks it there."""
    model = str(EXAMPLES / "models" / "ab_subsequence.json")
    argv = ["certify", "--model", model, "--n-max", "7", "--epsilon", "1/4", "--find-tau", "--no-numeric"]
    assert main(argv + ["-o", str(tmp_path / "one.json")]) == 0
    assert main(argv + ["-o", str(tmp_path / "dask") + "/", "--scheduler", loopback, "--json"]) == 0
    rows = [json.loads(x) for x in capsys.readouterr().out.splitlines() if x.startswith("{")]
    two = load_certificate(rows[0]["certificate"])
    assert two["premises"]["method"] == "exhaustive" and two["premises"]["words"] == 2**8 - 2
    assert same(load_certificate(tmp_path / "one.json"), two) == []
    assert main(["verify", rows[0]["certificate"], "--scheduler", loopback]) == 0


def test_batch_on_two_worker_processes_gives_identical_certificates(tmp_path, capsys):
    """--workers 2: a local cluster of two processes runs the jobs; each certificate equals the
    one made in this process (outside the measured fields and the envelope)."""
    f = tmp_path / "ya.ltl"
    f.write_text("alphabet: a b\nformula: Y a\n")
    argv = ["certify", str(f), "--regime", "T,U", "--n-max", "30", "--find-tau", "--no-numeric"]
    assert main(argv + ["-o", str(tmp_path / "seq")]) == 0
    assert main(argv + ["-o", str(tmp_path / "par"), "--workers", "2"]) == 0
    capsys.readouterr()
    seq = sorted(p.name for p in (tmp_path / "seq").iterdir())
    assert seq == sorted(p.name for p in (tmp_path / "par").iterdir()) and len(seq) == 2
    for name in seq:
        assert same(load_certificate(tmp_path / "seq" / name), load_certificate(tmp_path / "par" / name)) == []
