"""softhard export --format torch (issue 17, item 1): every example formula, the shipped model files
and both Tracr exports become TorchScript programs that load and run in a Python process where
softhard cannot be imported, and agree with softhard's NumPy forward pass (soft and hard) within
the rounding allowance.  PyTorch is a test dependency: without it this module fails to import."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch  # noqa: F401 - the extra must be installed (fail, not skip)

import softhard
from softhard.constructions.engine import forward
from softhard.constructions.modelfile import load_model
from softhard.constructions.tracr_load import load_tracr
from softhard.solver.cli import main

ROOT = Path(__file__).resolve().parents[2]
FORMULAS = sorted((ROOT / "examples").glob("*.ltl"))
#: formulas with even()/odd() need the PE (j, j^2, (-1)^j) of regime P
REGIME = {f.name: "P" for f in FORMULAS if "even(" in f.read_text() or "odd(" in f.read_text()}

#: run in a fresh interpreter where importing softhard fails: the program must not need it
NO_SOFTHARD = r"""
import json, sys
sys.modules["softhard"] = None  # any import of softhard now raises ImportError
try:
    import softhard  # noqa: F401
    raise SystemExit("softhard is importable")
except ImportError:
    pass
import torch
torch.set_num_threads(1)  # B = 1, d of a few dozen: one thread (softhard's torch_export.one_thread)
jobs = json.loads(sys.argv[1])
res = {}
for prog, words in jobs.items():
    m = torch.jit.load(prog)
    side = json.load(open(prog + ".json"))
    out = []
    for w in words:
        ids = torch.tensor([[0] + [side["vocab"].index(s) for s in w]])
        out.append({"soft": m(ids, False, -1.0)[0].tolist(), "hard": m(ids, True, -1.0)[0].tolist()})
    res[prog] = out
print(json.dumps(res))
"""


def _run_without_softhard(jobs: dict[str, list[list[str]]]) -> dict[str, list[dict]]:
    """One fresh interpreter (softhard not importable) runs every program on its words."""
    r = subprocess.run([sys.executable, "-c", NO_SOFTHARD, json.dumps(jobs)], capture_output=True,
                       text=True, timeout=600, cwd="/")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def _sources(tmp_path):
    for f in FORMULAS:
        yield f.stem, ["export", str(f), "--regime", REGIME.get(f.name, "T"), "--tau", "1/40", "--n-max", "12"], None
    for f in sorted((ROOT / "examples" / "models").glob("*.json")):
        yield f.stem, ["export", "--model", str(f), "--tau", "1/30", "--n-max", "8"], load_model(f).canonical()
    for t in ("frac_prevs", "hist"):
        tm = load_tracr(ROOT / "examples" / "tracr" / t)
        yield t, ["export", "--tracr", str(ROOT / "examples" / "tracr" / t)], tm.hard_model()


def test_every_example_exports_and_runs_without_softhard(tmp_path, capsys):
    rng = np.random.default_rng(5)
    jobs, refs = {}, {}
    for name, argv, hm in _sources(tmp_path):
        prog = tmp_path / f"{name}.pt"
        assert main([*argv, "-o", str(prog), "--json"]) == 0, name
        res = json.loads(capsys.readouterr().out)
        assert res["check"]["ok"] and res["check"]["max_abs_difference"] <= res["check"]["allowance"], name
        side = json.loads((tmp_path / f"{name}.pt.json").read_text())
        assert side["vocab"][0] == "BOS" and side["outputs"], name
        # the softhard transformer the program was made from, rebuilt here for the reference run
        if hm is None:
            spec = softhard.load_formula(str(ROOT / "examples" / f"{name}.ltl"))
            tr = softhard.build(spec, softhard.Params(regime=REGIME.get(f"{name}.ltl", "T"), eta="1/4")).model
        else:
            tr = hm.transformer()
        words = [list(rng.choice(list(tr.alphabet), n)) for n in (1, 3, side["n_max"])]
        jobs[str(prog)] = words
        refs[str(prog)] = (name, tr, side, res["check"]["allowance"])
    assert len(jobs) == len(FORMULAS) + 2 + 2
    got_all = _run_without_softhard(jobs)
    for prog, (name, tr, side, allowance) in refs.items():
        for w, g in zip(jobs[prog], got_all[prog]):
            tok = tr.encode([w])
            soft = forward(tr, tok, mode="soft", inv_tau=side["default_inv_tau"]).x[0]
            hard = forward(tr, tok, mode="hard").x[0]
            scale = max(1.0, float(np.max(np.abs(soft))))
            assert np.max(np.abs(np.array(g["soft"]) - soft)) <= allowance * scale, (name, w)
            assert np.max(np.abs(np.array(g["hard"]) - hard)) <= allowance * scale, (name, w)
            # the documented decoding reads the same verdict from both
            for o in side["outputs"]:
                row = {"last": -1, "first": 1}.get(o["at"], -1)
                if o["type"] == "boolean":
                    k = o["indices"][0]
                    assert (np.array(g["hard"])[row, k] > o["threshold"]) == (hard[row, k] > o["threshold"])


def test_export_from_a_certificate_uses_the_certified_tau(tmp_path, capsys):
    cert = tmp_path / "c.json"
    assert main(["certify", str(ROOT / "examples" / "aba.ltl"), "--n-max", "64", "--find-tau", "--no-numeric",
                 "-o", str(cert)]) == 0
    capsys.readouterr()
    inv = float(json.loads(cert.read_text())["construction"]["inv_tau_decimal"])
    assert main(["export", "--certificate", str(cert), "-o", str(tmp_path / "p.pt"), "--n-max", "16", "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["inv_tau"] == pytest.approx(inv, rel=1e-9) and res["check"]["ok"]


def test_export_errors_are_one_line(tmp_path, capsys):
    assert main(["export", "examples/aba.ltl", "-o", str(tmp_path / "x.pt")]) == 2  # no temperature
    assert "give --tau" in capsys.readouterr().err
    assert main(["export", "--model", str(ROOT / "examples/models/ab_subsequence.json"), "--tracr", "x",
                 "-o", str(tmp_path / "x.pt")]) == 2
    assert "give one source" in capsys.readouterr().err
