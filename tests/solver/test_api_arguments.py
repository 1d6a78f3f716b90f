"""The Python API checks every argument at the boundary (solver/api_checks.py): a new-user trial
found bare TypeError/AttributeError/ValueError from deep inside, and one real bug — ``certify`` of a
model construction returned a ``kind: model`` certificate without ``premises`` that ``verify``
then rejected.  Each family below must be one :class:`ParameterError` line whose message names the
argument and what it expects."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pytest

import softhard
from softhard.constructions.errors import ParameterError

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture(scope="module")
def t4():
    return softhard.build(softhard.load_formula(str(EXAMPLES / "tomita4.ltl")))


@pytest.fixture(scope="module")
def model():
    spec = softhard.load_model(str(EXAMPLES / "models" / "ab_subsequence.json"))
    return softhard.build_model(spec, n_max=4, epsilon="1/4")


def _one_line(e: pytest.ExceptionInfo, *words: str) -> None:
    msg = str(e.value)
    assert type(e.value) is ParameterError and "\n" not in msg
    for w in words:
        assert w in msg, (w, msg)


def test_certify_refuses_a_model_construction_and_certify_model_a_formula_one(t4, model):
    """The real bug: certify(mc) made a model certificate without premises (verify: "'premises' is
    a required property").  Now it points at certify_model, which makes one verify accepts."""
    mc, an = model
    with pytest.raises(ParameterError) as e:
        softhard.certify(mc, n_max=4, find_tau=True)
    _one_line(e, "certify: c is a model construction", "softhard.certify_model(c, an")
    with pytest.raises(ParameterError) as e:
        softhard.certify_model(t4, an, n_max=4, find_tau=True)
    _one_line(e, "certify_model: c is a formula construction", "softhard.certify(c")
    with pytest.raises(ParameterError) as e:
        softhard.certify_model(mc, None, n_max=4, find_tau=True)
    _one_line(e, "certify_model: an must be the ModelAnalysis", "got NoneType None")
    cert = softhard.certify_model(mc, an, n_max=4, find_tau=True, numeric=False)
    assert cert["kind"] == "model" and "premises" in cert
    assert softhard.verify(cert).ok


def test_certify_tracr_wants_a_loaded_model_and_an_exact_epsilon():
    path = str(EXAMPLES / "tracr" / "hist")
    with pytest.raises(ParameterError) as e:
        softhard.certify_tracr(path)
    _one_line(e, "certify_tracr: tm must be a TracrModel", "got str", "softhard.load_tracr(path)")
    tm = softhard.load_tracr(path)
    for bad in ("x", float("nan"), [1]):
        with pytest.raises(ParameterError) as e:
            softhard.certify_tracr(tm, epsilon=bad)
        _one_line(e, "epsilon")
    with pytest.raises(ParameterError) as e:
        softhard.certify_tracr(tm, epsilon="-1/4")
    _one_line(e, "epsilon (--epsilon) must be > 0")
    for bad, words in ((5, "extra_inv_taus must be a list or tuple"), ([1e3, "a"], "extra_inv_taus[1]: "),
                       ((float("nan"),), "extra_inv_taus[0]: inverse temperature 1/tau must be finite")):
        with pytest.raises(ParameterError) as e:
            softhard.certify_tracr(tm, extra_inv_taus=bad)
        _one_line(e, "certify_tracr: ", words)


@pytest.mark.parametrize("call,words", [
    (lambda: softhard.load_formula(None), ("load_formula: formula", "got NoneType")),
    (lambda: softhard.load_formula("a", alphabet=5), ("load_formula: alphabet", "got int 5")),
    (lambda: softhard.load_formula("a", alphabet=["a", 1]), ("load_formula: alphabet",)),
    (lambda: softhard.load_model(None), ("load_model: path", "got NoneType")),
    (lambda: softhard.load_tracr(3), ("load_tracr: path", "got int 3")),
    (lambda: softhard.load_certificate(None), ("load_certificate: path", "got NoneType")),
    (lambda: softhard.verify(None), ("verify: certificate must be a certificate dict", "got NoneType")),
    (lambda: softhard.verify([]), ("verify: certificate must be", "got list []")),
])
def test_a_loader_given_no_path_names_the_argument(call, words):
    with pytest.raises(ParameterError) as e:
        call()
    _one_line(e, *words)


@pytest.mark.parametrize("word", [101, None, ["0", 1], {"0": 1}])
def test_run_names_a_word_of_another_type(t4, word):
    with pytest.raises(ParameterError) as e:
        softhard.run(t4, word, inv_tau=100.0)
    _one_line(e, "run: word must be a string of symbols or a list/tuple of symbol strings")


def test_a_spec_where_a_construction_is_expected_says_to_build_it_first(t4):
    spec = softhard.load_formula(str(EXAMPLES / "tomita4.ltl"))
    calls = {"derive": lambda: softhard.derive(spec),
             "certify": lambda: softhard.certify(spec, n_max=6, find_tau=True),
             "run": lambda: softhard.run(spec, "01", inv_tau=100.0),
             "confirm": lambda: softhard.confirm(spec, n_max=6, inv_tau=100.0)}
    for name, call in calls.items():
        with pytest.raises(ParameterError) as e:
            call()
        _one_line(e, f"{name}: c must be a built Construction, got a loaded FormulaSpec",
                  "call softhard.build(spec, softhard.Params(...)) first")
    mspec = softhard.load_model(str(EXAMPLES / "models" / "ab_subsequence.json"))
    with pytest.raises(ParameterError) as e:
        softhard.certify_model(mspec, None, n_max=4, find_tau=True)
    _one_line(e, "certify_model: c must be a built Construction", "softhard.build_model(spec, n_max=...)")
    assert set(softhard.derive(t4)) == set(t4.bounds)  # a construction passes


def test_unknown_keywords_are_named_with_the_accepted_ones(t4, model):
    spec = softhard.load_model(str(EXAMPLES / "models" / "ab_subsequence.json"))
    with pytest.raises(ParameterError) as e:
        softhard.build_model(spec, n_max=4, bogus=1)
    _one_line(e, "build_model: unknown keyword argument bogus", "it accepts", "exhaustive_limit", "tie_break_mode")
    with pytest.raises(ParameterError) as e:
        softhard.confirm(t4, n_max=6, inv_tau=100.0, bogus=1)
    _one_line(e, "confirm: unknown keyword argument bogus", "adversarial_ns", "exhaustive_len")
    with pytest.raises(ParameterError) as e:
        softhard.certify(t4, n_max=6, tau="1/100", taus=2)
    _one_line(e, "certify: unknown keyword argument taus", "inv_tau", "max_positions")
    with pytest.raises(ParameterError) as e:
        softhard.certify(t4)
    _one_line(e, "certify: missing a required argument: 'n_max'", "call it as certify(c, *, n_max=..., ...)")
    with pytest.raises(ParameterError) as e:  # a trial: the message named `an` without saying where it is
        softhard.certify_model(model[0], n_max=4)
    _one_line(e, "certify_model: missing a required argument: 'an'", "call it as certify_model(c, an, *, n_max=..., ...)")
    with pytest.raises(ParameterError) as e:
        softhard.certify_model(*model, n_max=4, find_tau=True, max_positions=10)
    _one_line(e, "certify_model: unknown keyword argument max_positions")


def test_a_wrong_argument_given_is_named_before_a_missing_one(t4, model):
    """A trial: ``certify_model(c)`` with a formula construction said ``an`` was missing, not that
    ``c`` was of the wrong kind; and ``verify(c)`` showed a cut repr of the construction."""
    with pytest.raises(ParameterError) as e:
        softhard.certify_model(t4)
    _one_line(e, "certify_model: c is a formula construction, not a model one", "softhard.certify(c")
    with pytest.raises(ParameterError) as e:  # a right c: the missing argument is still the message
        softhard.certify_model(model[0])
    _one_line(e, "certify_model: missing a required argument: 'an'")
    with pytest.raises(ParameterError) as e:
        softhard.certify(model[0])
    _one_line(e, "certify: c is a model construction", "softhard.certify_model(c, an")
    with pytest.raises(ParameterError) as e:
        softhard.verify(t4)
    _one_line(e, "verify: certificate must be", "got a built formula Construction",
              "certify it first with softhard.certify(c, n_max=..., ...)")
    with pytest.raises(ParameterError) as e:  # a long repr is cut with an ellipsis, not mid-word silently
        softhard.verify(list(range(100)))
    _one_line(e, "got list [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, …")


def test_numbers_are_checked_and_named(t4, model):
    mc, an = model
    with pytest.raises(ParameterError) as e:
        softhard.certify_model(mc, an, n_max=4, tau="x")
    _one_line(e, "tau (--tau): 'x' is not a finite number")
    # a tau given as text is exact, as certify reads it: the same claims as the Fraction
    a = softhard.certify_model(mc, an, n_max=4, tau="1/1000", numeric=False)
    b = softhard.certify_model(mc, an, n_max=4, tau=Fraction(1, 1000), numeric=False)
    assert a["construction"] == b["construction"] and a["construction"]["tau"] == "1/1000"
    for kw, words in ((dict(adversarial_ns="x"), "adversarial_ns must be a list or tuple of lengths"),
                      (dict(adversarial_ns=(10, 0)), "adversarial_ns[1] must be >= 1"),
                      (dict(exhaustive_len=-1), "exhaustive_len must be >= 0"),
                      (dict(random_count=1.5), "random_count must be an integer"),
                      (dict(seed="s"), "seed"),
                      (dict(max_positions=-3), "max_positions must be >= 1, got -3")):
        with pytest.raises(ParameterError) as e:
            softhard.confirm(t4, n_max=6, inv_tau=100.0, **kw)
        _one_line(e, words)
    with pytest.raises(ParameterError) as e:
        softhard.certify(t4, n_max=6, tau="1/100", max_positions=-3)
    _one_line(e, "max_positions must be >= 1, got -3")
    with pytest.raises(ParameterError) as e:
        softhard.certify(t4, n_max=6, tau="1/100", numeric_opts={"adversarial_ns": "x"})
    _one_line(e, "adversarial_ns must be a list or tuple")
    with pytest.raises(ParameterError) as e:
        softhard.certify(t4, n_max=6, tau="1/100", numeric_opts=[("seed", 1)])
    _one_line(e, "numeric options must be a dict")


def test_confirm_reads_the_family_options_as_the_cli_does(t4):
    """A count given as decimal text is the integer it writes: exhaustive words of lengths 1..3
    over {0, 1} are 2 + 4 + 8 = 14."""
    got = softhard.confirm(t4, n_max=6, inv_tau=1e4, exhaustive_len="3", random_count=0, adversarial_ns=[6])
    assert got.words["exhaustive"] == 14


@pytest.mark.parametrize("kw,words", [(dict(timeout_s=-1), "timeout_s must be > 0"),
                                      (dict(timeout_s="abc"), "timeout_s must be a number of seconds"),
                                      (dict(timeout_s=float("nan")), "timeout_s must be > 0"),
                                      (dict(budget_s=0), "budget_s must be > 0")])
def test_verify_refuses_a_bad_time_limit_as_the_cli_does(t4, kw, words):
    """``softhard verify --timeout -1`` exits 2; the API returned ok=False, undecided=True."""
    cert = softhard.certify(t4, n_max=6, tau="1/100", numeric=False)
    with pytest.raises(ParameterError) as e:
        softhard.verify(cert, **kw)
    _one_line(e, words)


def test_write_certificate_writes_only_a_json_object(t4, tmp_path):
    for cert, words in (([1], "write_certificate: cert must be a certificate dict"),
                        ({"a": {1, 2}}, "write_certificate: cert: a: a set cannot be written as JSON"),
                        ({"a": [1, Fraction(1, 2)]}, "a[1]: a Fraction cannot be written"),
                        ({"a": {1: 2}}, "key 1 is not a string"),
                        ({"a": float("inf")}, "cannot be written as strict JSON")):
        p = tmp_path / "c.json"
        with pytest.raises(ParameterError) as e:
            softhard.write_certificate(cert, p)
        _one_line(e, words)
        assert not p.exists() and not list(tmp_path.iterdir())  # nothing written, no temporary left
    with pytest.raises(ParameterError) as e:
        softhard.write_certificate({"a": 1}, None)
    _one_line(e, "write_certificate: path must be a file name")
    cert = softhard.certify(t4, n_max=6, tau="1/100", numeric=False)
    softhard.write_certificate(cert, tmp_path / "ok.json")
    assert json.loads((tmp_path / "ok.json").read_text()) == cert


def test_build_model_options_and_progress_are_checked():
    spec = softhard.load_model(str(EXAMPLES / "models" / "ab_subsequence.json"))
    for bad in ("x", None, 2.5, -1):
        with pytest.raises(ParameterError) as e:
            softhard.build_model(spec, n_max=4, exhaustive_limit=bad)
        _one_line(e, "exhaustive_limit (--exhaustive-limit)")
    with pytest.raises(ParameterError) as e:
        softhard.build_model(spec, n_max=4, progress="x")
    _one_line(e, "build_model: progress must be a function of one str (or None), got str 'x'")
    seen: list[str] = []
    softhard.build_model(spec, n_max=4, epsilon="1/4", progress=seen.append)  # a callable passes


def test_flags_all_n_and_tune_are_checked(t4, model, tmp_path):
    """A truthy "no" switched find_tau/numeric on and all_n="x" was stored in the certificate."""
    for kw, words in ((dict(tau="1/100", numeric="no"), "certify: numeric must be True or False, got str 'no'"),
                      (dict(find_tau=1), "certify: find_tau must be True or False, got int 1"),
                      (dict(tau="1/100", all_n="x"), "certify: all_n must be True, False or None"),
                      (dict(find_tau=True, tune="eps_ln"), "certify: tune must be a tuple of parameter names"),
                      (dict(find_tau=True, tune=("beta",)), "(eps_ln), got tuple ('beta',)")):
        with pytest.raises(ParameterError) as e:
            softhard.certify(t4, n_max=6, **kw)
        _one_line(e, words)
    with pytest.raises(ParameterError) as e:
        softhard.certify_model(*model, n_max=4, find_tau="yes")
    _one_line(e, "certify_model: find_tau must be True or False")
    with pytest.raises(ParameterError) as e:
        softhard.write_certificate({"a": 1}, tmp_path / "c.json", force="no")
    _one_line(e, "write_certificate: force must be True or False")
    assert not (tmp_path / "c.json").exists()


def test_certify_model_numeric_options_are_checked(model):
    for opts, words in (({"bogus": 1}, "numeric options: unknown keyword argument bogus; it accepts exhaustive_words"),
                        ({"random_count": -1}, "random_count must be >= 0"),
                        ({"random_n_max": "x"}, "random_n_max"),
                        ("x", "numeric options must be a dict")):
        with pytest.raises(ParameterError) as e:
            softhard.certify_model(*model, n_max=4, tau="1/1000", numeric_opts=opts)
        _one_line(e, words)
