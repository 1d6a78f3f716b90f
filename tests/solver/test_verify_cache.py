"""``verify --no-cache`` (new-user trial): the derivation cache is trusted like the installed code, so
a poisoned on-disk entry (one that parses but holds a wrong value) makes a plain verify accept a
certificate whose stated bound is wrong; ``--no-cache`` replays from a live derivation and rejects
it, as ``SOFTHARD_CACHE=0`` does.  Each verify runs in a fresh process (no in-memory results)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from softhard.bounds import store
from softhard.solver.certjson import compute_hashes

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _softhard(args: list[str], env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "softhard.solver.cli", *args], env=env, capture_output=True, text=True,
                          timeout=300)


@pytest.fixture(scope="module")
def poisoned(tmp_path_factory):
    """A certificate with one node's ``bound.srepr`` edited (and re-hashed), and the cache entry
    holding that node's true srepr text rewritten to the edited text."""
    d = tmp_path_factory.mktemp("poison")
    env = dict(os.environ, SOFTHARD_CACHE_DIR=str(d / "cache"), SOFTHARD_CACHE="1")
    cert_path = d / "t4.json"
    made = _softhard(["certify", str(EXAMPLES / "tomita4.ltl"), "--tau", "1/20000", "--n-max", "1000",
                      "--no-numeric", "-o", str(cert_path)], env)
    assert made.returncode == 0, made.stderr
    cert = json.loads(cert_path.read_text())
    true = cert["nodes"][2]["bound"]["srepr"]
    entries = [p for p in (d / "cache" / "derivations").glob("*/*.json") if json.loads(p.read_text()) == true]
    assert len(entries) == 1  # the srepr text of that node's bound, cached by the certify
    wrong = true.replace("Integer(-1)", "Integer(-2)", 1)
    assert wrong != true
    entries[0].write_text(json.dumps(wrong))
    cert["nodes"][2]["bound"]["srepr"] = wrong
    cert["hashes"] = compute_hashes(cert)
    cert_path.write_text(json.dumps(cert))
    return cert_path, env


def test_a_poisoned_entry_is_accepted_with_the_cache_and_caught_without(poisoned):
    path, env = poisoned
    trusting = _softhard(["verify", str(path)], env)
    assert trusting.returncode == 0, trusting.stderr  # the cache is trusted: its wrong text matches
    live = _softhard(["verify", str(path), "--no-cache"], env)
    assert live.returncode == 2
    assert "invalid certificate" in live.stderr and "nodes[2].bound.srepr" in live.stderr
    off = _softhard(["verify", str(path)], dict(env, SOFTHARD_CACHE="0"))  # the same effect as the variable
    assert off.returncode == 2 and "nodes[2].bound.srepr" in off.stderr
    batch = _softhard(["verify", str(path), str(path), "--no-cache", "--json"], env)  # the batch path too
    assert batch.returncode == 2


def test_set_disk_cache_overrides_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("SOFTHARD_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("SOFTHARD_CACHE", "1")
    try:
        assert store.cache_dir() == tmp_path / "derivations"
        store.set_disk_cache(False)
        assert store.cache_dir() is None and not store.disk_cache_enabled()
        store.save("00" + "a" * 62, "live")  # off: nothing written to disk
        assert not (tmp_path / "derivations").exists()
        monkeypatch.setenv("SOFTHARD_CACHE", "0")
        store.set_disk_cache(True)
        assert store.cache_dir() == tmp_path / "derivations"
        store.set_disk_cache(None)  # back to the environment
        assert store.cache_dir() is None
        with pytest.raises(TypeError):
            store.set_disk_cache("0")
    finally:
        store.set_disk_cache(None)
        store._memory.pop("00" + "a" * 62, None)
