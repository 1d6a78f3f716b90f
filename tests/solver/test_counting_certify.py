"""Certificates for counting (issue 4, "Done when"): ``softhard certify examples/dyck1.ltl --n-max
100000 --eta 1/4 --find-tau`` is proved in each comparator method, ``softhard verify`` accepts it,
the comparator bounds are attained on the certificate's adversarial inputs, and a tampered
parameter is caught.  Parity (regime P) likewise."""

from __future__ import annotations

import json
from fractions import Fraction

import mpmath
import pytest

from languages import EXAMPLES
from softhard.solver.certjson import compute_hashes, load_certificate
from softhard.solver.kinds import verify_certificate
from softhard.solver.cli import main

N_MAX = 100_000


@pytest.mark.parametrize("name,extra", [
    ("dyck1", ["--regime", "T", "--comparator", "head"]),
    ("dyck1", ["--regime", "T", "--comparator", "ln"]),
    ("dyck1", ["--regime", "U", "--comparator", "pe"]),
    ("parity", ["--regime", "P"]),
])
def test_certify_and_verify(name, extra, tmp_path, capsys):
    out = tmp_path / f"{name}.json"
    argv = ["certify", str(EXAMPLES / f"{name}.ltl"), "--n-max", str(N_MAX), "--eta", "1/4", "--find-tau",
            "-o", str(out), *extra]
    assert main(argv) == 0, capsys.readouterr()
    assert main(["verify", str(out)]) == 0, capsys.readouterr()
    cert = load_certificate(out)
    assert cert["status"] == "proved" and cert["numeric"]["ok"] and cert["numeric"]["mismatched_outputs"] == 0
    assert all(c["status"] == "proved" for c in cert["claims"])
    kinds = {nd["kind"] for nd in cert["nodes"]}
    params = cert["construction"]["params"]
    inv_tau = Fraction(cert["construction"]["inv_tau"])
    if "ln" in extra:
        assert kinds == {"layernorm"}
        eps = Fraction(params["eps_ln"])
        # the largest certifiable ε is the closed form 3/(4(n+1)²) (η = 1/4), up to the search's rounding
        assert 0.999 < eps / Fraction(3, 4 * (N_MAX + 1) ** 2) <= 1
        assert "no node depends on tau" in cert["search"]["message"]
    elif "pe" in extra:
        assert kinds == {"comparator-pe"} and cert["range"]["all_n"]
        assert abs(float(inv_tau) - 1.0986122887 * 2) < 1e-6  # 2 ln 3, for every n
    elif "head" in extra:
        assert kinds == {"comparator-head"}
        # judged on the output (THEORY §4b, §5 (b)): with 1/τ = c·n and n → ∞ the worst case g = −1
        # gives S = e^{−c/2}/(1 − e^{−βc}) = η/(1 − η): c solved here independently (the leak bound
        # needed about 6.03 n)
        c = mpmath.findroot(lambda c: mpmath.exp(-c / 2) / (1 - mpmath.exp(-c / 4)) - mpmath.mpf(1) / 3, 3.3)
        assert abs(float(inv_tau) / N_MAX / float(c) - 1) < 1e-3
    else:
        assert kinds == {"parity"}
        assert 3.5 < float(inv_tau) / N_MAX < 3.7  # Θ(n): about 2 ln 6 (n+1)
    # tightness: each bound is attained (to 0.9) on the certificate's adversarial inputs
    for v, s in cert["numeric"]["nodes"].items():
        assert s["violations"] == 0
        assert s["ratio"] >= 0.9, (v, s)
    # tampering with a parameter (hashes recomputed) is caught by re-derivation
    bad = json.loads(json.dumps(cert))
    key = "eps_ln" if "eps_ln" in params else "eta"
    bad["construction"]["params"][key] = "1/3" if key == "eta" else str(2 * Fraction(params[key]))
    bad["hashes"] = compute_hashes(bad)
    rep = verify_certificate(bad)
    assert not rep.ok and any("claims" in f or "bound" in f or f.startswith("construction.params") for f, _ in rep.problems), rep.problems
    if "comparator" in cert["source"]:  # another comparator method: another graph
        bad = json.loads(json.dumps(cert))
        bad["source"]["comparator"] = "ln" if cert["source"]["comparator"] != "ln" else "head"
        bad["hashes"] = compute_hashes(bad)
        rep = verify_certificate(bad)
        assert not rep.ok and any(f.startswith(("graph", "search.per_bound")) for f, _ in rep.problems), rep.problems
