"""Model files: loading, validation errors (one line, exit 2 via the CLI), exporting the temporal-logic
constructions, and hard/soft forward equivalence with them (issue 5, items 1 and 6)."""

from __future__ import annotations

import copy
import itertools
import json
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from softhard.constructions.engine import forward
from softhard.constructions.errors import ModelFormatError
from softhard.constructions.exact import ExactEngine
from softhard.constructions.model_export import export_transformer
from softhard.constructions.modelfile import load_model, parse_model
from softhard.constructions.parse import load_spec
from softhard.constructions.semantics import truth
from softhard.solver.cli import main
from softhard.solver.pipeline import build

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "models" / "ab_subsequence.json"


def _doc():
    return json.loads(EXAMPLE.read_text())


def _cli(tmp_path, doc, capsys, *extra, npz=None):
    p = tmp_path / "m.json"
    if npz is not None:
        np.savez(tmp_path / "m.npz", **npz)
        doc = {**doc, "arrays": "m.npz"}
    p.write_text(json.dumps(doc) if not isinstance(doc, str) else doc)
    rc = main(["gap", "--model", str(p), "--n-max", "3", *extra])
    err = capsys.readouterr().err
    return rc, err


def test_example_loads_and_has_labels():
    spec = load_model(EXAMPLE)
    assert spec.alphabet == ("a", "b")
    assert spec.d == 9 and len(spec.layers) == 2
    assert spec.token_embedding[1, spec.labels.index("a")] == 1
    # "1/2" strings are exact rationals
    assert spec.layers[0].heads[0].W_K[spec.labels.index("bos"), 0] == Fraction(1, 2)
    assert len(spec.sha256) == 64


@pytest.mark.parametrize("mutate, field", [
    (lambda d: d["layers"][1]["heads"][0].__setitem__("W_Q", {"shape": [8, 1], "entries": []}),
     "layers[1].heads[0].W_Q: expected 9 rows (d_model), got 8"),
    (lambda d: d["layers"][0]["heads"][0].__setitem__("W_O", [[0] * 8]),
     "layers[0].heads[0].W_O: expected 9 columns (d_model), got 8"),
    (lambda d: d["layers"][0]["mlp"][1].__setitem__("W2", {"shape": [2, 9], "entries": []}),
     "layers[0].mlp[1].W2: expected 1 rows"),
    (lambda d: d["layers"][0]["heads"][0]["W_K"]["entries"].append(["a", 0, "nan"]),
     "layers[0].heads[0].W_K.entries[2]: contains a non-finite number"),
    (lambda d: d["layers"][1]["heads"][0]["W_V"]["entries"].append(["key", 0, float("inf")]),
     "layers[1].heads[0].W_V.entries[1]: contains a non-finite number"),
    (lambda d: d.__setitem__("positional", {"features": [{"family": "j^3", "coordinate": "one"}]}),
     "positional.features[0].family: unknown positional family 'j^3'"),
    (lambda d: d.__setitem__("n_layers", 1),
     "layers[1]: the model is deeper than its file says: n_layers = 1 but 2 layers are listed"),
    (lambda d: d["layers"][0]["heads"][0].__setitem__("WQ", []),
     "layers[0].heads[0]: unknown field 'WQ'"),
    (lambda d: d["layers"][0]["heads"][0].__setitem__("mask", "causal"),
     "layers[0].heads[0].mask: 'causal' is not one of"),
    (lambda d: d["layers"][1]["heads"][0].__setitem__("rule", "UHA"),
     "layers[1].heads[0].rule: 'UHA' is not one of"),
    (lambda d: d["layers"][0]["heads"][0]["W_Q"]["entries"].append(["nope", 0, 1]),
     "layers[0].heads[0].W_Q.entries[1]: 'nope' is not a residual label"),
    (lambda d: d.__setitem__("token_embedding", [[0] * 9, [1] * 9, [1] * 8]),
     "token_embedding[2]: row has 8 entries, row 0 has 9 (ragged matrix)"),
    (lambda d: d["outputs"][0].__setitem__("coordinate", "zzz"), "outputs[0].coordinate: 'zzz' is not a residual label"),
    (lambda d: d["layers"][0]["heads"][0].__setitem__("scale", -1), "layers[0].heads[0].scale: must be > 0"),
])
def test_bad_input_one_line_exit_2(tmp_path, capsys, mutate, field):
    doc = _doc()
    mutate(doc)
    rc, err = _cli(tmp_path, doc, capsys)
    assert rc == 2
    assert err.count("\n") == 1, err
    assert field in err, err
    assert "m.json" in err


def test_bad_json_and_npz_errors(tmp_path, capsys):
    rc, err = _cli(tmp_path, "{ not json", capsys)
    assert rc == 2 and "m.json:1:3: not valid JSON" in err
    # NaN inside an npz array, located by index
    doc = _doc()
    W = np.zeros((9, 1))
    W[4, 0] = np.nan
    doc["layers"][0]["heads"][0]["W_V"] = "npz:wv"
    rc, err = _cli(tmp_path, doc, capsys, npz={"wv": W})
    assert rc == 2 and "layers[0].heads[0].W_V: contains a non-finite number at [4, 0]" in err
    # an array for a layer the file does not declare: deeper than it says
    doc = _doc()
    doc["layers"][0]["heads"][0]["W_V"] = "npz:layers_0_wv"
    W[4, 0] = 0
    rc, err = _cli(tmp_path, doc, capsys, npz={"layers_0_wv": W, "layers_2_wv": W})
    assert rc == 2 and "arrays: the model is deeper than its file says: array 'layers_2_wv'" in err
    # a missing npz array
    doc = _doc()
    doc["layers"][0]["heads"][0]["W_V"] = "npz:missing"
    rc, err = _cli(tmp_path, doc, capsys, npz={"x": W})
    assert rc == 2 and "array 'missing' is not in the archive" in err


def test_another_softhard_input_is_named_as_such(tmp_path, capsys):
    """A trial: a certificate or a Tracr export's metadata given to --model was reported as a model
    file with unknown fields."""
    cert = {"schema": "softhard-certificate", "schema_version": 2, "kind": "formula", "claims": []}
    rc, err = _cli(tmp_path, cert, capsys)
    assert rc == 2 and "this is a softhard certificate (check it with softhard verify FILE), not a model file" in err
    tracr_meta = json.loads((ROOT / "examples" / "tracr" / "frac_prevs.json").read_text())
    rc, err = _cli(tmp_path, tracr_meta, capsys)
    assert rc == 2 and "this is a Tracr export's metadata" in err and "--tracr NAME" in err
    doc = {**_doc(), "kind": "x"}  # a model file with one unknown field is still a model file
    rc, err = _cli(tmp_path, doc, capsys)
    assert rc == 2 and "unknown field 'kind'" in err


def test_npz_arrays_equal_inline(tmp_path):
    doc = _doc()
    spec1 = parse_model(doc)
    WQ = np.zeros((9, 1))
    WQ[spec1.labels.index("one"), 0] = 1.0
    np.savez(tmp_path / "w.npz", wq=WQ)
    doc2 = copy.deepcopy(doc)
    doc2["arrays"] = "w.npz"
    doc2["layers"][0]["heads"][0]["W_Q"] = "npz:wq"
    (tmp_path / "m.json").write_text(json.dumps(doc2))
    spec2 = load_model(tmp_path / "m.json")
    assert np.array_equal(spec2.layers[0].heads[0].W_Q, spec1.layers[0].heads[0].W_Q)
    assert spec2.doc["layers"][0]["heads"][0]["W_Q"] == WQ.tolist()  # inlined for certificates


def test_biases_and_scale_fold_exactly():
    """A head with biases and a scale: the canonical (bias-folded) exact engine equals the brute force
    on the spec (biases added explicitly), and the float runtime agrees."""
    from models_util import brute_force
    doc = _doc()
    h = doc["layers"][0]["heads"][0]
    h["b_Q"] = ["1/3"]
    h["b_K"] = [0.25]
    h["b_V"] = ["-1/8"]
    h["b_O"] = {"size": 9, "entries": [["s1", "1/16"]]}
    h["scale"] = "3/7"
    spec = parse_model(doc)
    hm = spec.canonical()
    assert hm.labels[-1] == "__one__"
    eng = ExactEngine(hm)
    tr = hm.transformer()
    for n in (1, 3, 5):
        words = list(itertools.product("ab", repeat=n))
        tok = tr.encode(words)
        run = eng.run(tok)
        fl = forward(tr, tok, mode="hard").x
        for b, w in enumerate(words):
            x, _ = brute_force(spec, w)
            for i in range(n + 1):
                for a in range(spec.d):
                    assert Fraction(int(run.x.num[b, i, a]), run.x.den) == x[i][a]
                    assert abs(fl[b, i, a] - float(x[i][a])) < 1e-12


@pytest.mark.parametrize("example", ["tomita2", "aba", "a_then_b"])
@pytest.mark.parametrize("regime", ["T", "U"])
def test_export_roundtrip_equivalent(example, regime, tmp_path):
    """Exported constructions: same float hard and soft runs as the original transformer, and the
    exact hard engine reproduces the reference semantics on every word up to length 7."""
    spec = load_spec(str(ROOT / "examples" / f"{example}.ltl"))
    c = build(spec, regime)
    doc = export_transformer(c.model, name=example, at=spec.at)
    p = tmp_path / "e.json"
    p.write_text(json.dumps(doc))
    hm = load_model(p).canonical()
    tr = hm.transformer()
    assert tr.bounded == (regime == "T")
    root = c.model.index(c.model.outputs[0])
    eng = ExactEngine(hm)
    for n in range(1, 8):
        words = list(itertools.product(spec.alphabet, repeat=n))
        tok = c.model.encode(words)
        for mode, it in (("hard", None), ("soft", 50.0)):
            a = forward(c.model, tok, mode=mode, inv_tau=it).x
            b = forward(tr, tok, mode=mode, inv_tau=it).x
            assert np.array_equal(a, b)
        ex = eng.run(tok).x
        ref = np.array([truth(spec.formula, w) for w in words])
        got = ex.num[:, 1:, root] != 0
        assert np.array_equal(got, ref)


def test_export_table_positional_and_refusal():
    from softhard.constructions.transformer import Block, Transformer
    E = np.eye(3)

    def pe_fixed(n):
        P = np.zeros((n + 1, 3))
        P[1:, 2] = np.arange(1, n + 1) % 3
        return P

    tr = Transformer(alphabet=("a", "b"), token_embedding=E, positional=pe_fixed, blocks=[Block()],
                     labels=["x", "y", "z"], outputs=["z"])
    doc = export_transformer(tr, table_n_max=6)
    spec = parse_model(doc)
    assert spec.n_max == 6 and spec.table[4, 2] == 1
    with pytest.raises(ModelFormatError, match="not a known family"):
        export_transformer(tr)

    def pe_rel(n):
        P = np.zeros((n + 1, 3))
        P[1:, 2] = np.arange(1, n + 1) / n
        return P
    tr.positional = pe_rel
    with pytest.raises(ModelFormatError, match="depends on n"):
        export_transformer(tr, table_n_max=6)
    hm = spec.canonical()
    with pytest.raises(ModelFormatError, match="positional.table has rows for n <= 6"):
        hm.positional_exact(7)


def test_run_model_cli(capsys):
    rc = main(["run", "--model", str(EXAMPLE), "abba", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0
    rows = out["outputs"][0]["positions"]
    assert [r["hard_read"] for r in rows] == [0, 1, 1, 1]
    assert [r["soft_read"] for r in rows] == [0, 1, 1, 1]
    rc = main(["run", "--model", str(EXAMPLE), "abc"])
    assert rc == 2
    assert "'c'" in capsys.readouterr().err
    rc = main(["run", "Y a", "ab", "--alphabet", "ab"])  # a formula still works without --model
    assert rc == 0
    capsys.readouterr()


def test_sinusoidal_family_is_the_nearest_double():
    import mpmath
    doc = _doc()
    doc["positional"] = {"features": [{"family": "sinusoidal", "fn": "cos", "omega": "1/3", "over_n": True,
                                       "coordinate": "s1", "coefficient": 1}]}
    hm = parse_model(doc).canonical()
    n = 7
    P = hm.positional_exact(n)
    F = hm.positional_float(n)
    s1 = hm.labels.index("s1")
    for j in range(1, n + 1):
        with mpmath.workdps(50):
            want = float(mpmath.cos(mpmath.mpf(1) / 3 * j / n))
        assert P[j, s1] == Fraction(want) and F[j, s1] == want
    assert P[0, s1] == 0 and hm.bounded


def _sparse_row(d, where, shape, entries):
    """Replace the array at ``where`` (a path of keys) in ``d`` by a sparse matrix."""
    obj = d
    for k in where[:-1]:
        obj = obj[k]
    obj[where[-1]] = {"shape": shape, "entries": entries}


@pytest.mark.parametrize("mutate, field", [
    # a row outside the declared shape: 'b' is row 2 of a token embedding declared with 2 rows (was IndexError)
    (lambda d: _sparse_row(d, ["token_embedding"], [2, 9], [["BOS", "bos", 1], ["b", "one", 1]]),
     "token_embedding: expected 3 rows, got 2 (shape (2, 9))"),
    # the label 'out' is coordinate 8 of a W_Q declared with 3 rows (was IndexError)
    (lambda d: _sparse_row(d, ["layers", 0, "heads", 0, "W_Q"], [3, 1], [["out", 0, 1]]),
     "layers[0].heads[0].W_Q: expected 9 rows (d_model), got 3 (shape (3, 1))"),
    # huge declared shapes: checked before anything is allocated (were ValueError / MemoryError)
    (lambda d: _sparse_row(d, ["layers", 0, "heads", 0, "W_Q"], [9, 10**20], []),
     "layers[0].heads[0].W_Q.shape: declares 9 x 100000000000000000000 entries, more than this reader's limit"),
    (lambda d: _sparse_row(d, ["layers", 1, "mlp", 0, "W1"], [9, 10**9], [["s2", 0, 1]]),
     "layers[1].mlp[0].W1.shape: declares 9 x 1000000000 entries, more than this reader's limit of 16777216"),
    (lambda d: d.__setitem__("positional", {"table": {"shape": [10**15, 9], "entries": []}}),
     "positional.table.shape: declares 1000000000000000 x 9 entries"),
    (lambda d: d["layers"][0]["heads"][0].__setitem__("b_Q", {"size": 10**30, "entries": []}),
     "layers[0].heads[0].b_Q: expected 1 entries, got 1000000000000000000000000000000"),
    (lambda d: (d.__setitem__("d_model", 10**12), d.pop("residual")),
     "d_model: 1000000000000 is more than this reader's limit of 16777216 (2^24) coordinates"),
    # weights beyond float64 (were OverflowError in the float runtime)
    (lambda d: _sparse_row(d, ["layers", 0, "mlp", 0, "W1"], [9, 2], [["s1", 0, 10**400]]),
     "layers[0].mlp[0].W1.entries[0]: about 10^400 is beyond the float64 range"),
    (lambda d: d["layers"][0]["heads"][0].__setitem__("scale", "1e400"),
     "layers[0].heads[0].scale: 1e400 is beyond the float64 range"),
    (lambda d: d["layers"][0]["heads"][0]["W_K"]["entries"].append(["a", 0, "-2e308"]),
     "layers[0].heads[0].W_K.entries[2]: -2e308 is beyond the float64 range"),
    (lambda d: d["layers"][0]["heads"][0]["W_K"]["entries"].append(["a", 0, "1e-100000000"]),
     "layers[0].heads[0].W_K.entries[2]: '1e-100000000': decimal exponent beyond +-10000"),
])
def test_model_file_limits_are_model_format_errors(mutate, field):
    """Issue 15 C7: each of these crashed with IndexError, ValueError, MemoryError or OverflowError
    (or took minutes); each is now a one-line ModelFormatError naming the file and the field."""
    doc = _doc()
    mutate(doc)
    with pytest.raises(ModelFormatError) as ei:
        parse_model(doc, path="m.json")
    msg = str(ei.value)
    assert msg.startswith("m.json: ") and "\n" not in msg
    assert field in msg, msg


def test_model_file_weights_at_the_float64_limits_load():
    """The largest double, a value that rounds down to it and a tiny value that rounds to 0 are
    accepted, kept exact, and the float runtime holds their nearest doubles."""
    big = int(np.finfo(np.float64).max)
    doc = _doc()
    doc["layers"][0]["heads"][0]["W_K"]["entries"] += [["b", 0, big + 2**969 - 1], ["a", 0, "1e-400"]]
    spec = parse_model(doc)
    WK = spec.layers[0].heads[0].W_K
    ib, ia = spec.labels.index("b"), spec.labels.index("a")
    assert WK[ib, 0] == big + 2**969 - 1 and WK[ia, 0] == Fraction(1, 10**400)
    Wf = spec.canonical().transformer().blocks[0].heads[0].W_K
    assert Wf[ib, 0] == np.finfo(np.float64).max and Wf[ia, 0] == 0.0
