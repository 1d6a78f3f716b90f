"""The Python API validates its arguments at the boundary (new-user trial): every bad argument is
a SofthardError (ParameterError) with one line naming the API argument, never a ZeroDivisionError,
TypeError, ValueError or AttributeError from deep inside; lengths are read as the CLI reads them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import softhard
from softhard.constructions.errors import ParameterError

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture(scope="module")
def t4():
    return softhard.build(softhard.load_formula(str(EXAMPLES / "tomita4.ltl")))


@pytest.mark.parametrize("n_max,words", [(float("inf"), "n_max must be a finite number"),
                                         (float("nan"), "n_max must be a finite number"),
                                         (10.5, "n_max must be an integer"), ("12.5", "n_max must be an integer"),
                                         ("many", "n_max"), (None, "n_max must be an integer >= 1"),
                                         (True, "n_max must be an integer >= 1"), (0, "n_max must be >= 1"),
                                         ("0", "n_max must be >= 1"), (-3.0, "n_max must be >= 1")])
def test_certify_rejects_a_bad_n_max_with_a_parameter_error(t4, n_max, words):
    with pytest.raises(ParameterError, match=words) as e:
        softhard.certify(t4, n_max=n_max, find_tau=True)
    assert "--" not in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize("n_max", [1000, 1e3, "1000", "1e3", " 1000 "])
def test_certify_reads_n_max_as_the_cli_does(t4, n_max):
    cert = softhard.certify(t4, n_max=n_max, tau="1/20000", numeric=False)
    assert cert["range"] == {"n_min": 1, "n_max": 1000, "all_n": False} and cert["status"] == "proved"


@pytest.mark.parametrize("timeout_s", [0, -1, float("nan"), float("inf"), 86401, "20"])
def test_certify_rejects_a_bad_timeout(t4, timeout_s):
    with pytest.raises(ParameterError, match="timeout_s must be"):
        softhard.certify(t4, n_max=100, tau="1/20000", numeric=False, timeout_s=timeout_s)


@pytest.mark.parametrize("inv_tau", [float("nan"), float("inf"), 0.0, -2.0, "hot"])
def test_confirm_rejects_a_bad_inv_tau_as_run_does(t4, inv_tau):
    with pytest.raises(ParameterError, match="1/tau must be finite and > 0|must be a number") as e:
        softhard.confirm(t4, n_max=100, inv_tau=inv_tau)
    with pytest.raises(ParameterError) as r:
        softhard.run(t4, "0110", inv_tau=inv_tau)
    assert str(e.value) == str(r.value)  # the one check, the one message


@pytest.mark.parametrize("n_max", [float("inf"), 0, "1.5"])
def test_confirm_rejects_a_bad_n_max(t4, n_max):
    with pytest.raises(ParameterError, match="n_max must be"):
        softhard.confirm(t4, n_max=n_max, inv_tau=100.0)


def test_build_of_a_path_says_to_load_it_first():
    with pytest.raises(ParameterError, match=r"build takes a FormulaSpec, got str .*softhard\.load_formula"):
        softhard.build(str(EXAMPLES / "tomita4.ltl"))
    with pytest.raises(ParameterError, match=r"build_model takes a ModelSpec, got str .*softhard\.load_model"):
        softhard.build_model(str(EXAMPLES / "models" / "ab_subsequence.json"), n_max=12)
    with pytest.raises(ParameterError, match="params must be a softhard.Params"):
        softhard.build(softhard.load_formula("a S b"), "T")


def test_build_model_n_max_names_the_api_argument():
    spec = softhard.load_model(str(EXAMPLES / "models" / "ab_subsequence.json"))
    for bad in (0, float("inf"), "x"):
        with pytest.raises(ParameterError, match="n_max"):
            softhard.build_model(spec, n_max=bad)
    mc, an = softhard.build_model(spec, n_max=4, epsilon="1/4")
    with pytest.raises(ParameterError, match=r"n_max \(--n-max\) 5 exceeds the gap analysis length 4"):
        softhard.certify_model(mc, an, n_max=5, find_tau=True)
    with pytest.raises(ParameterError, match="n_max .*must be a finite number"):
        softhard.certify_model(mc, an, n_max=float("inf"), find_tau=True)


def test_write_certificate_names_force_true_not_the_cli_flag(t4, tmp_path):
    cert = softhard.certify(t4, n_max=100, tau="1/20000", numeric=False)
    p = tmp_path / "c.json"
    softhard.write_certificate(cert, p)
    with pytest.raises(ParameterError, match=r"file exists; use force=True to overwrite it"):
        softhard.write_certificate(cert, p)
    softhard.write_certificate(cert, p, force=True)
    assert json.loads(p.read_text())["range"]["n_max"] == 100
