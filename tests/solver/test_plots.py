"""``softhard plot`` (issue 18): the curves against closed forms computed here, one figure row per
certificate, bad input in one line."""

from __future__ import annotations

import json
import math
from fractions import Fraction
from pathlib import Path

import matplotlib.image
import numpy as np
import pytest

import softhard
from softhard.solver.cli import main
from softhard.solver.plots import plot_data

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture(scope="module")
def certs():
    spec = softhard.load_formula("Y a", alphabet="ab")
    out = {}
    for regime, n_max in (("T", 1000), ("U", 200)):
        c = softhard.build(spec, softhard.Params(regime=regime, eta="1/4"))
        out[regime] = softhard.certify(c, n_max=n_max, find_tau=True, numeric=True)
    return out


def test_regime_u_curve_is_ln_one_over_eta(certs):
    """Regime U: the leak is at most e^{-1/tau} for every n (THEORY §4), so the requirement
    tends to ln(1/eta) = ln 4, and the certified value sits just above it."""
    p = plot_data(certs["U"])
    (nc,) = p.nodes
    big = nc.ns >= 10
    assert np.all(np.abs(nc.tight[big] - math.log(4)) <= 1e-3 * math.log(4))
    assert np.all(nc.tight <= float(nc.certified) * (1 + 1e-12))
    assert math.log(4) <= float(nc.certified) <= math.log(4) * (1 + 1e-6)
    assert p.eta == 0.25 and p.all_n


def test_regime_t_curve_is_linear_in_n(certs):
    """Regime T: the tight requirement is (n/beta) ln(1/eta) to first order (THEORY §4): 4 n ln 4
    with beta = eta = 1/4; the certified 1/tau covers the requirement at every n of the range; the
    bound at the binding n crosses eta at the certified 1/tau; the observed leak stays below it."""
    p = plot_data(certs["T"])
    (nc,) = p.nodes
    big = nc.ns >= 100
    ref = 4 * nc.ns[big] * math.log(4)
    assert np.all(np.abs(nc.tight[big] - ref) <= 1e-2 * ref)
    assert np.all(nc.tight <= float(nc.certified) * (1 + 1e-9)) and nc.binding_n == 1000
    above, below = nc.inv_taus > float(nc.certified) * 1.01, nc.inv_taus < float(nc.certified) * 0.99
    assert np.all(nc.errors[above] <= 0.25) and np.all(nc.errors[below] > 0.25)
    assert np.all(np.diff(nc.errors) <= 0)  # decreasing in 1/tau
    assert nc.observed is not None and 0 < nc.observed[0] <= 0.25
    assert nc.empirical is not None and nc.empirical[1] <= float(nc.certified)
    # the closed form inv_tau_star is sufficient: at least the tight requirement
    assert nc.closed is not None and np.all(nc.closed[big] >= nc.tight[big] * (1 - 1e-9))


def test_plot_command_one_row_per_certificate(certs, tmp_path, capsys):
    for r, c in certs.items():
        softhard.write_certificate(c, tmp_path / f"{r}.json")
    out = tmp_path / "fig.png"
    assert main(["plot", str(tmp_path / "T.json"), str(tmp_path / "U.json"), "-o", str(out), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert [Path(r["certificate"]).name for r in info["rows"]] == ["T.json", "U.json"]
    img = matplotlib.image.imread(out)
    assert img.shape[:2] == (round(2 * 4.2 * 110), 12 * 110)  # two rows of 4.2 in at 110 dpi
    one = tmp_path / "one.svg"
    assert main(["plot", str(tmp_path / "U.json"), "-o", str(one)]) == 0
    assert one.read_text().lstrip().startswith("<?xml") and "<svg" in one.read_text()[:2000]
    assert main(["plot", str(tmp_path / "U.json"), "-o", str(one)]) == 2  # exists, no --force
    assert "file exists" in capsys.readouterr().err


def test_plot_refuses_in_one_line(certs, tmp_path, capsys):
    c = softhard.certify(softhard.build(softhard.load_formula("Y a", alphabet="ab"), softhard.Params(regime="U")),
                         n_max=20, tau=Fraction(1, 2), numeric=False)
    softhard.write_certificate(c, tmp_path / "fixed.json")
    softhard.write_certificate(certs["U"], tmp_path / "U.json")
    for argv, needle in ((["plot", str(tmp_path / "fixed.json"), "-o", str(tmp_path / "f.png")], "--find-tau"),
                         (["plot", str(tmp_path / "U.json"), "-o", str(tmp_path / "f.pdf")], ".png or .svg"),
                         (["plot", str(tmp_path / "missing.json"), "-o", str(tmp_path / "f.png")], "missing.json")):
        assert main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert "\n" not in err and needle in err, err


def test_a_log_schedule_draws_the_certified_curve_s_ln_n_plus_1():
    """A new-user trial: a ``--schedule log`` certificate drew the certified value as the flat line
    S, below the rising requirement, as if not certified.  Under 1/tau(n) = S·ln(n+1) (THEORY §9)
    the certified curve is S·ln(n+1), computed here with math.log1p: at or above the tight
    requirement at every n, and the error panel is centred on 1/tau at the binding n."""
    spec = softhard.load_formula("P a", alphabet="ab")
    c = softhard.build(spec, softhard.Params(regime="T", eta="1/4", schedule="log"))
    cert = softhard.certify(c, n_max=1000, find_tau=True, numeric=False)
    p = plot_data(cert)
    (nc,) = p.nodes
    s = float(nc.certified)
    want = np.array([s * math.log1p(k) for k in nc.ns])
    assert p.schedule == "log" and np.allclose(nc.certified_curve, want, rtol=1e-15)
    assert np.all(nc.tight <= want * (1 + 1e-9)) and nc.tight[-1] > s  # a flat line at S would be below
    assert nc.certified_at == pytest.approx(s * math.log1p(nc.binding_n), rel=1e-15)
    assert nc.inv_taus[0] < nc.certified_at < nc.inv_taus[-1]


def test_plot_warns_about_a_certificate_edited_after_certify(certs, tmp_path, capsys):
    """plot draws, it does not verify (a new-user trial drew a tampered certificate without a word):
    a section whose hash no longer matches gets one warning line naming it, and ``hashes_ok``
    false; the genuine certificate draws silently with ``hashes_ok`` true."""
    softhard.write_certificate(certs["U"], tmp_path / "U.json")
    cert = json.loads((tmp_path / "U.json").read_text())
    (node,) = cert["numeric"]["nodes"]
    cert["numeric"]["nodes"][node]["worst_observed"] = 0.001
    (tmp_path / "edited.json").write_text(json.dumps(cert))
    assert main(["plot", str(tmp_path / "U.json"), str(tmp_path / "edited.json"), "-o", str(tmp_path / "f.png"),
                 "--json"]) == 0
    got = capsys.readouterr()
    assert [r["hashes_ok"] for r in json.loads(got.out)["rows"]] == [True, False]
    (line,) = got.err.strip().splitlines()
    assert "edited.json" in line and "numeric" in line and "softhard verify" in line and "U.json" not in line
