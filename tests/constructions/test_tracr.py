"""Reading compiled Tracr models (issue 8): the mapping, the stored examples, the logit tables, gaps
and MLP margins computed independently from the raw arrays, bad input, live objects.

The independent computations here follow the export's own recipe (``forward_recipe`` in the
JSON: ``logits = q·k/√key_size`` on the raw weights, argmax ties averaged for the hard pass) with
plain NumPy on the ``.npz`` arrays; they share no code with ``softhard.constructions``.
"""

from __future__ import annotations

import itertools
import json
import math
import re
import shutil
from collections import Counter
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from softhard.constructions.engine import forward
from softhard.constructions.errors import ModelFormatError
from softhard.constructions.exact import ExactEngine, to_float
from softhard.constructions.gaps import all_tokens
from softhard.constructions.tracr import parse_labels
from softhard.constructions.tracr_gaps import analyse, unique_rows
from softhard.constructions.tracr_load import from_assembled, load_tracr
from softhard.bounds.tracr import logit_table
from softhard.solver.certjson import compute_hashes
from softhard.solver.cli import main
from softhard.solver.kinds import verify_certificate
from softhard.solver.tracr import analyse as full_analysis
from softhard.solver.tracr import certify_tracr, model_info

#: copies of ../shared/tracr-models (examples/tracr/README.md)
DIR = Path(__file__).resolve().parents[2] / "examples" / "tracr"
MODELS = ["frac_prevs", "hist"]


def raw(name):
    meta = json.loads((DIR / f"{name}.json").read_text())
    z = np.load(DIR / f"{name}.npz")
    return meta, {k: np.array(z[k], dtype=np.float64) for k in z.files}


@pytest.fixture(scope="module")
def models():
    return {m: load_tracr(DIR / m) for m in MODELS}


# --------------------------------------------------------------------------------------------
# an independent forward pass on the raw arrays (the export's recipe)


def raw_forward(meta, A, tokens, *, hard: bool):
    """Residual stream after the model, (T, d), for one input; hard: argmax with ties averaged."""
    enc = meta["input_encoding"]
    ids = [enc[meta["bos_token"]]] + [enc[t] for t in tokens]
    x = A["token_embed.embeddings"][ids] + A["pos_embed.embeddings"][: len(ids)]
    cfg = meta["config"]
    K, H = cfg["key_size"], cfg["num_heads"]
    for layer in range(cfg["num_layers"]):
        p = f"layer_{layer}."
        q = (x @ A[p + "attn.query.w"] + A[p + "attn.query.b"]).reshape(len(ids), H, K)
        k = (x @ A[p + "attn.key.w"] + A[p + "attn.key.b"]).reshape(len(ids), H, K)
        v = (x @ A[p + "attn.value.w"] + A[p + "attn.value.b"]).reshape(len(ids), H, K)
        outs = []
        for h in range(H):
            logits = q[:, h] @ k[:, h].T / math.sqrt(K)
            if cfg["causal"]:
                logits = np.where(np.tril(np.ones_like(logits)) > 0, logits, -np.inf)
            if hard:
                w = (logits == logits.max(axis=1, keepdims=True)).astype(float)
            else:
                w = np.exp(logits - logits.max(axis=1, keepdims=True))
            w /= w.sum(axis=1, keepdims=True)
            outs.append(w @ v[:, h])
        x = x + np.concatenate(outs, axis=1) @ A[p + "attn.linear.w"] + A[p + "attn.linear.b"]
        x = x + np.maximum(x @ A[p + "mlp.linear_1.w"] + A[p + "mlp.linear_1.b"], 0) @ A[p + "mlp.linear_2.w"] \
            + A[p + "mlp.linear_2.b"]
    return x


def decode(meta, x):
    cols = meta["output_residual_indices"]
    if meta["output_is_categorical"]:
        inv = {v: k for k, v in meta["output_encoding"].items()}
        return [inv[int(np.argmax(r[cols]))] for r in x[1:]]
    return [float(r[cols[0]]) for r in x[1:]]


# --------------------------------------------------------------------------------------------
# the mapping


def test_blocks_and_effective_temperature(models):
    fp, hi = models["frac_prevs"], models["hist"]
    assert [(b.name, b.kind, len(b.coords)) for b in fp.blocks] == [
        ("frac_prevs_3", "numerical", 1), ("indices", "categorical", 8), ("map_5", "numerical", 1),
        ("one", "numerical", 1), ("tokens", "categorical", 5)]
    assert next(b for b in hi.blocks if b.name == "hist_6").values == tuple(str(k) for k in range(9))
    for tm, name in ((fp, "frac_prevs"), (hi, "hist")):
        meta, _ = raw(name)
        lo, hi_ = tm.inv_tau_enclosure()
        K, c = meta["config"]["key_size"], Fraction(meta["softmax_coldness_nominal"])
        assert lo * lo * K <= c * c <= hi_ * hi_ * K and hi_ - lo <= Fraction(1, 10**27)
        assert tm.inv_tau_float == pytest.approx(meta["softmax_coldness_effective"], rel=1e-15)
        assert tm.to_doc()["inv_tau"] == f"{lo.numerator}/{lo.denominator}"
    # zero modules are omitted, and said so
    assert "layer_0.attn head 0" in fp.notes[0] and "layer_1.mlp" in fp.notes[0]
    hm = fp.hard_model()
    assert [[h.name for h in hs] for hs in hm.heads] == [[], ["L1.H0"]]
    # query weights divided by the coldness: unit scores 1 (selected) and 1/2 (BOS)
    assert {x for x in hm.heads[1][0].W_Q.ravel() if x != 0} == {Fraction(1), Fraction(1, 2)}


@pytest.mark.parametrize("name", MODELS)
def test_stored_examples_hard_exact(models, name):
    """The 20 stored examples: the exact hard forward pass of the mapped model and the independent
    raw-array hard pass both decode to the stored RASP outputs, exactly."""
    meta, A = raw(name)
    tm = models[name]
    hm = tm.hard_model()
    eng = ExactEngine(hm)
    o = hm.outputs[0]
    assert len(meta["examples"]) == 20
    for ex in meta["examples"]:
        x = eng.run(np.array([hm.encode(ex["input"])], dtype=np.int64)).x
        vals = [[Fraction(int(v), x.den) for v in x.num[0, i, o.coords]] for i in range(1, len(ex["input"]) + 1)]
        if o.type == "categorical":
            got = [o.classes[max(range(len(v)), key=lambda k: v[k])] for v in vals]
            assert got == [str(r) for r in ex["rasp"]]
        else:
            assert [float(v[0]) for v in vals] == [float(r) for r in ex["rasp"]]
        indep = decode(meta, raw_forward(meta, A, ex["input"], hard=True))
        if o.type == "categorical":
            assert indep == [str(r) for r in ex["rasp"]]
        else:
            assert indep == pytest.approx([float(r) for r in ex["rasp"]], abs=1e-12)


@pytest.mark.parametrize("name", MODELS)
def test_stored_examples_soft_at_compiled_temperature(models, name):
    """Soft at the compiled temperature: the mapped model equals the raw-array recipe and the stored
    numpy soft outputs to 1e-12, and decodes to the RASP outputs (the certificate proves this for
    every word of length <= 8)."""
    meta, A = raw(name)
    tm = models[name]
    hm = tm.hard_model()
    tr = hm.transformer()
    o = hm.outputs[0]
    for ex in meta["examples"]:
        x = forward(tr, tr.encode([ex["input"]]), mode="soft", inv_tau=tm.inv_tau_float).x[0]
        ref = raw_forward(meta, A, ex["input"], hard=False)
        # every non-BOS position agrees; the BOS row (whose output Tracr ignores) attends to BOS only in
        # softhard's format and softly to every key in Tracr: the difference is the BOS row's leak
        assert np.max(np.abs(x[1:, o.coords] - ref[1:, o.coords])) < 1e-12
        if o.type == "numerical":
            assert np.max(np.abs(x[1:, o.coords[0]] - np.array(ex["numpy_soft"], float))) < 1e-12
            assert np.max(np.abs(x[1:, o.coords[0]] - np.array([float(r) for r in ex["rasp"]]))) < 2e-7
        else:
            got = [o.classes[int(np.argmax(r))] for r in x[1:, o.coords]]
            assert got == [str(r) for r in ex["rasp"]] == [str(r) for r in ex["numpy_soft"]]


# --------------------------------------------------------------------------------------------
# logit tables, gaps and MLP margins, independently


def _unit_score(meta, A, xq, xk, layer=None):
    K = meta["config"]["key_size"]
    p = f"layer_{layer}.attn."
    q = (xq @ A[p + "query.w"] + A[p + "query.b"])[:K] / meta["softmax_coldness_nominal"]
    k = (xk @ A[p + "key.w"] + A[p + "key.b"])[:K]
    return float(q @ k)


def test_logit_table_frac_prevs_from_raw_arrays(models):
    meta, A = raw("frac_prevs")
    tm = models["frac_prevs"]
    hm = tm.hard_model()
    st = analyse(hm, 8)
    t = logit_table(hm, st.heads["L1.H0"])
    enc = meta["input_encoding"]
    E, P = A["token_embed.embeddings"], A["pos_embed.embeddings"]
    # the map_5 MLP runs before this head but writes nothing it reads: embedding states suffice
    for r, rname in zip(t.scores, t.row_names):
        i = int(rname.split("indices=")[1].split(",")[0])  # query index (0-based)
        for v, cname in zip(r, t.col_names):
            j = int(cname.split("indices=")[1].split(",")[0])
            ind = _unit_score(meta, A, E[enc["x"]] + P[i + 1], E[enc["y"]] + P[j + 1], layer=1)
            assert float(v) == ind == (1.0 if j <= i else 0.0)
    bos = _unit_score(meta, A, E[enc["x"]] + P[1], E[enc["BOS"]] + P[0], layer=1)
    assert {float(b) for b in t.bos_scores} == {bos} == {0.5}
    assert t.pattern == "aggregate" and [float(v) for v in t.levels] == [0, 0.5, 1]
    cb, ca = t.premise
    assert (cb.g_bos, cb.g_rest, cb.a_min, ca.rows) == (Fraction(1, 2), Fraction(1), 1, 0)


def test_logit_table_hist_from_raw_arrays(models):
    meta, A = raw("hist")
    hm = models["hist"].hard_model()
    st = analyse(hm, 3)
    t = logit_table(hm, st.heads["L0.H0"])
    enc = meta["input_encoding"]
    E, P = A["token_embed.embeddings"], A["pos_embed.embeddings"]
    for r, rname, b in zip(t.scores, t.row_names, t.bos_scores):
        a = rname.split("tokens=")[1].split(",")[0]
        for v, cname in zip(r, t.col_names):
            c = cname.split("tokens=")[1]
            assert float(v) == _unit_score(meta, A, E[enc[a]] + P[1], E[enc[c]] + P[2], layer=0) == float(a == c)
        assert float(b) == _unit_score(meta, A, E[enc[a]] + P[1], E[enc["BOS"]] + P[0], layer=0) == 1.0
    assert t.pattern == "selector-width"
    cb, ca = t.premise
    assert cb.rows == 0 and (ca.g_rest, ca.a_min) == (Fraction(1), 2)


@pytest.mark.parametrize("name", MODELS)
def test_premises_brute_force(models, name):
    """Per row of every word of length <= 4 (raw arrays, float scores — small dyadic values, exact
    in float64): BOS gap, other competitors' gap and argmax size per case, against the module."""
    meta, A = raw(name)
    hm = models[name].hard_model()
    st = analyse(hm, 4)
    (hname, hs), = st.heads.items()
    layer = hs.layer
    K = meta["config"]["key_size"]
    c = meta["softmax_coldness_nominal"]
    found = {"B": [None, None, None], "A": [None, None]}

    def upd(lst, k, v):
        lst[k] = v if lst[k] is None else min(lst[k], v)

    for n in range(1, 5):
        for w in itertools.product(meta["vocab"], repeat=n):
            x = raw_forward_until(meta, A, w, layer)
            p = f"layer_{layer}.attn."
            q = (x @ A[p + "query.w"])[:, :K] / c
            kk = (x @ A[p + "key.w"])[:, :K]
            S = q @ kk.T
            for i in range(1, n + 1):
                s = S[i]
                top = s.max()
                A_ = [j for j in range(n + 1) if s[j] == top]
                rest = [s[j] for j in range(1, n + 1) if j not in A_]
                if 0 in A_:
                    if rest:
                        upd(found["A"], 0, top - max(rest))
                    upd(found["A"], 1, len(A_))
                else:
                    upd(found["B"], 0, top - s[0])
                    if rest:
                        upd(found["B"], 1, top - max(rest))
                    upd(found["B"], 2, len(A_))
    cb, ca = hs.bos_competitor, hs.bos_in_argmax
    f = lambda v: None if v is None else float(v)  # noqa: E731
    assert [f(cb.g_bos), f(cb.g_rest), cb.a_min] == found["B"]
    assert [f(ca.g_rest), ca.a_min] == found["A"]


def raw_forward_until(meta, A, tokens, layer):
    """Residual entering ``layer`` (raw arrays, hard)."""
    m = dict(meta)
    m["config"] = dict(meta["config"], num_layers=layer)
    return raw_forward(m, A, tokens, hard=True)


def test_hist_mlp_margins_from_raw_arrays(models):
    """The discretisation margins of hist's counting MLP: the distance of each hard input value
    1/(w+1) to the nearest kink -(W1[one]+b1)/W1[attn], from the raw float32-valued weights."""
    meta, A = raw("hist")
    labels = meta["residual_labels"]
    W1, b1 = A["layer_0.mlp.linear_1.w"], A["layer_0.mlp.linear_1.b"]
    ia, io = labels.index("hist_6_selector_width_attn_output"), labels.index("one")
    kinks = [-(Fraction(W1[io, u]) + Fraction(b1[u])) / Fraction(W1[ia, u]) for u in range(W1.shape[1]) if W1[ia, u]]
    margins = {Fraction(1, w + 1): min(abs(Fraction(1, w + 1) - k) for k in kinks) for w in range(1, 9)}
    tm = models["hist"]
    an = full_analysis(tm.hard_model(), model_info(tm))
    disc = an.bound.mlps["L0.mlp"]["analysis"]
    assert {c["z"]: c["margin"] for c in disc.contexts} == margins
    assert disc.r_min == min(margins.values()) == margins[Fraction(1, 8)]
    # 1/8 and 1/9 sit on ramps (slope 100): Tracr's ramp width 1/100 exceeds half their distance
    assert {c["z"] for c in disc.contexts if any(c["slope"].values())} == {Fraction(1, 8), Fraction(1, 9)}
    assert set(disc.slopes.values()) == {0, 100}


def _hist_mlp(A, labels):
    """hist's counting MLP as a function of its input z (one = 1, BOS indicator 0), exact."""
    W1, b1 = A["layer_0.mlp.linear_1.w"], A["layer_0.mlp.linear_1.b"]
    W2, b2 = A["layer_0.mlp.linear_2.w"], A["layer_0.mlp.linear_2.b"]
    ia, io = labels.index("hist_6_selector_width_attn_output"), labels.index("one")
    oc = [labels.index(f"hist_6:{k}") for k in range(9)]

    def f(z):
        pre = [Fraction(W1[ia, u]) * z + Fraction(W1[io, u]) + Fraction(b1[u]) for u in range(W1.shape[1])]
        return [sum((Fraction(W2[u, b]) * max(pre[u], Fraction(0)) for u in range(W1.shape[1])), Fraction(b2[b]))
                for b in oc]
    kinks = sorted({-(Fraction(W1[io, u]) + Fraction(b1[u])) / Fraction(W1[ia, u])
                    for u in range(W1.shape[1]) if W1[ia, u]})
    return f, kinks


def test_hist_tolerance_region_from_raw_arrays(models):
    """Per count w, the largest input error rho_w that keeps every output coordinate of hist's MLP
    within epsilon of its hard value, and the largest ratio (output change)/(input error) up to it:
    computed here by walking the MLP's kinks in z, from the raw arrays (the module walks units)."""
    meta, A = raw("hist")
    labels = meta["residual_labels"]
    f, kinks = _hist_mlp(A, labels)
    tm = models["hist"]
    an = full_analysis(tm.hard_model(), model_info(tm))
    eps = an.epsilon["hist_6"]
    region = {r["z"]: (r["rho"], r["L"]) for r in an.bound.mlps["L0.mlp"]["region"]}
    assert an.bound.mlps["L0.mlp"]["rule"] == "tolerance region"
    for w in range(1, 9):
        z0 = Fraction(1, w + 1)
        f0 = f(z0)

        def dev(z):
            return max(abs(a - b) for a, b in zip(f(z), f0))
        rho, ratio = None, Fraction(0)
        for sg in (1, -1):
            pts = sorted((abs(k - z0) for k in kinks if sg * (k - z0) > 0))
            prev, found = Fraction(0), None
            for t in pts + [Fraction(10)]:
                if dev(z0 + sg * t) > eps:  # the first crossing lies in (prev, t]: bisect the linear piece exactly
                    a, b = dev(z0 + sg * prev), dev(z0 + sg * t)
                    found = prev + (eps - a) / (b - a) * (t - prev)
                    break
                prev = t
            if found is not None and (rho is None or found < rho):
                rho = found
        assert region[z0][0] == rho, w
        for sg in (1, -1):
            lim = rho if rho is not None else Fraction(10)
            pts = [k for k in (abs(k - z0) for k in kinks if sg * (k - z0) > 0) if k <= lim] + [lim]
            first = min((abs(k - z0) for k in kinks if k != z0), default=lim)
            pts.append(min(first, lim) / 2)
            ratio = max([ratio] + [dev(z0 + sg * t) / t for t in pts])
        assert region[z0][1] == ratio, w


# --------------------------------------------------------------------------------------------
# bad input: one line naming the file and the field, exit 2


def _copy(tmp_path, name="frac_prevs"):
    for ext in (".json", ".npz"):
        shutil.copy(DIR / f"{name}{ext}", tmp_path / f"{name}{ext}")
    return tmp_path / name


def _edit_npz(stem, fn):
    z = dict(np.load(f"{stem}.npz"))
    fn(z)
    np.savez(f"{stem}.npz", **z)


def _edit_json(stem, fn):
    p = Path(f"{stem}.json")
    d = json.loads(p.read_text())
    fn(d)
    p.write_text(json.dumps(d))


BAD = [
    ("missing array", lambda s: _edit_npz(s, lambda z: z.pop("layer_1.attn.query.w")),
     "frac_prevs.npz: layer_1.attn.query.w: missing array"),
    ("shape", lambda s: _edit_npz(s, lambda z: z.__setitem__("layer_1.attn.key.w", z["layer_1.attn.key.w"][:, :9])),
     "frac_prevs.npz: layer_1.attn.key.w: expected shape (16, 10)"),
    ("config disagrees", lambda s: _edit_json(s, lambda d: d["config"].__setitem__("key_size", 12)),
     "frac_prevs.npz: layer_0.attn.query.w: expected shape (16, 12)"),
    ("label", lambda s: _edit_json(s, lambda d: d["residual_labels"].__setitem__(3, ":2")),
     "frac_prevs.json: residual_labels[3]: label ':2' does not parse as NAME or NAME:VALUE"),
    ("label split", lambda s: _edit_json(s, lambda d: d["residual_labels"].__setitem__(15, "indices:9")),
     "frac_prevs.json: residual_labels[15]: label 'indices:9' repeats block 'indices'"),
    ("missing field", lambda s: _edit_json(s, lambda d: d.pop("vocab")), "frac_prevs.json: vocab: missing"),
    ("d_model", lambda s: _edit_json(s, lambda d: d.__setitem__("d_model", 17)), "frac_prevs.json: d_model: 17 but"),
    ("temperature", lambda s: _edit_json(s, lambda d: d.__setitem__("softmax_coldness_effective", 100.0)),
     "frac_prevs.json: softmax_coldness_effective: 100.0 but"),
    ("nan", lambda s: _edit_npz(s, lambda z: z["layer_0.mlp.linear_1.w"].__setitem__((13, 0), np.nan)),
     "frac_prevs.npz: layer_0.mlp.linear_1.w: contains a non-finite number at [13, 0]"),
    ("unembed", lambda s: _edit_npz(s, lambda z: z["unembed.w"].__setitem__((1, 0), 1.0)),
     "frac_prevs.npz: unembed.w: is not the 0/1 projection"),
    ("extra layer", lambda s: _edit_npz(s, lambda z: z.__setitem__("layer_2.mlp.linear_1.b", np.zeros(1))),
     "frac_prevs.npz: layer_2.mlp.linear_1.b: belongs to a layer beyond config.num_layers = 2"),
    ("layer norm", lambda s: _edit_json(s, lambda d: d.__setitem__("layer_norm", True)),
     "frac_prevs.json: layer_norm: layer normalisation is not part"),
    ("bad json", lambda s: Path(f"{s}.json").write_text('{"vocab": [1,'), "frac_prevs.json:1:14: not valid JSON"),
    ("no npz", lambda s: Path(f"{s}.npz").unlink(), "frac_prevs.npz: cannot read"),
]


@pytest.mark.parametrize("case,edit,message", BAD, ids=[b[0] for b in BAD])
def test_bad_input_one_line_exit_2(tmp_path, capsys, case, edit, message):
    stem = _copy(tmp_path)
    edit(str(stem))
    rc = main(["certify", "--tracr", str(stem), "--no-numeric"])
    err = capsys.readouterr().err.strip()
    assert rc == 2
    assert len(err.splitlines()) == 1, err
    assert message in err, err


def test_bos_row_read_by_a_later_head_is_named(tmp_path, capsys):
    """A layer-0 head writing map_5 (read as a value by layer 1): the format's BOS convention would
    differ from Tracr's at the BOS row — the model loads, its certificate has status unknown and
    names the head and why (exit 1), and verify replays it."""
    stem = _copy(tmp_path)
    meta, _ = raw("frac_prevs")
    lab = meta["residual_labels"]

    def edit(z):
        z["layer_0.attn.value.w"][lab.index("tokens:x"), 0] = 1.0
        z["layer_0.attn.linear.w"][0, lab.index("map_5")] = 1.0
    _edit_npz(str(stem), edit)
    cert = certify_tracr(load_tracr(stem), numeric=False)
    assert cert["status"] == "unknown" and cert["claims"] == [] and cert["uncertifiable"]["part"] == "head L1.H0"
    assert re.search(r"head L1.H0 reads .* 'map_5', which head L0.H0 wrote at the BOS row", cert["uncertifiable"]["reason"])
    assert all(a["status"] == "unknown" for a in cert["answers"].values())
    out = tmp_path / "c.json"
    assert main(["certify", "--tracr", str(stem), "--no-numeric", "-o", str(out)]) == 1
    assert "not certifiable: head L1.H0" in capsys.readouterr().out
    assert main(["verify", str(out)]) == 0


def test_score_perturbation_is_named(tmp_path):
    """A head whose query reads an earlier head's (soft) output: sigma > 0 is not supported — the
    certificate says so (status unknown, the head named) and verify replays it."""
    stem = _copy(tmp_path)
    meta, _ = raw("frac_prevs")
    lab = meta["residual_labels"]

    def edit(z):
        z["layer_0.attn.value.w"][lab.index("tokens:x"), 0] = 1.0
        z["layer_0.attn.linear.w"][0, lab.index("frac_prevs_3")] = 1.0
        z["layer_1.attn.query.w"][lab.index("frac_prevs_3"), 0] = 100.0
    _edit_npz(str(stem), edit)
    cert = certify_tracr(load_tracr(stem), numeric=False)
    assert cert["status"] == "unknown" and cert["uncertifiable"]["part"] == "head L1.H0"
    assert re.search(r"head L1.H0 reads coordinate.* frac_prevs_3 .*sigma > 0", cert["uncertifiable"]["reason"])
    rep = verify_certificate(cert)
    assert rep.ok, rep.problems
    bad = json.loads(json.dumps(cert))
    bad["uncertifiable"]["part"] = "head L0.H0"
    bad["hashes"] = compute_hashes(bad)
    assert not verify_certificate(bad).ok  # the replay re-finds the part: an edited one is caught


def test_parse_labels_errors():
    with pytest.raises(ModelFormatError, match=r"x.json: residual_labels\[1\]: label 'a:' does not parse"):
        parse_labels(["one", "a:"], where="x.json: residual_labels")
    with pytest.raises(ModelFormatError, match="both numerical and categorical"):
        parse_labels(["a", "a:1"])
    with pytest.raises(ModelFormatError, match="expected a string"):
        parse_labels(["a", 3])
    assert parse_labels(["t:a:b"])[0].values == ("a:b",)  # a value may contain ':'


# --------------------------------------------------------------------------------------------
# a live compiled model (duck-typed; tracr is not installed)


class _Cfg:
    def __init__(self, c):
        self.num_layers, self.num_heads = c["num_layers"], c["num_heads"]
        self.key_size, self.mlp_hidden_size = c["key_size"], c["mlp_hidden_size"]
        self.causal, self.layer_norm = c["causal"], False


class _Enc:
    def __init__(self, **kw):
        self.__dict__.update(kw)


class FakeAssembled:
    """The attributes of tracr's AssembledTransformerModel that the reader uses, built from an export."""

    def __init__(self, name):
        meta, A = raw(name)
        self.model_config = _Cfg(meta["config"])
        self.residual_labels = list(meta["residual_labels"])
        self.input_encoder = _Enc(encoding_map=dict(meta["input_encoding"]), bos_token="BOS", pad_token="PAD")
        if meta["output_is_categorical"]:
            self.output_encoder = _Enc(encoding_map={int(k): v for k, v in meta["output_encoding"].items()})
        else:
            self.output_encoder = None
        self.params = {"token_embed": {"embeddings": A["token_embed.embeddings"]},
                       "pos_embed": {"embeddings": A["pos_embed.embeddings"]}}
        for li in range(meta["config"]["num_layers"]):
            for nm in ("query", "key", "value", "linear"):
                self.params[f"transformer/layer_{li}/attn/{nm}"] = {s: A[f"layer_{li}.attn.{nm}.{s}"] for s in "wb"}
            for nm in ("linear_1", "linear_2"):
                self.params[f"transformer/layer_{li}/mlp/{nm}"] = {s: A[f"layer_{li}.mlp.{nm}.{s}"] for s in "wb"}


@pytest.mark.parametrize("name,output", [("hist", None), ("frac_prevs", "frac_prevs_3")])
def test_live_object(models, name, output):
    tm = from_assembled(FakeAssembled(name), name=name, output=output)
    ref = models[name]
    assert tm.coldness == 100 and tm.coldness_source.startswith("inferred")
    a, b = tm.to_doc(), ref.to_doc()
    for k in ("alphabet", "residual", "token_embedding", "positional", "layers", "inv_tau"):
        assert a[k] == b[k], k
    assert a["outputs"][0]["name"] == ref.output["name"]
    with pytest.raises(ModelFormatError, match="numerical output's residual label must be given"):
        from_assembled(FakeAssembled("frac_prevs"))


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 40), st.integers(0, 5), st.integers(1, 4), st.integers(0, 2**31 - 1))
def test_unique_rows_is_numpy_unique(rows, cols, span, seed):
    """The lexsort-based unique of the exhaustive analysis gives exactly numpy's rows and inverse."""
    a = np.random.default_rng(seed).integers(-span, span + 1, size=(rows, cols))
    u, inv = unique_rows(a)
    if rows == 0:
        assert u.shape[0] == 0 and inv.shape == (0,)
        return
    want_u, want_inv = np.unique(a, axis=0, return_inverse=True)
    if cols == 0:
        assert u.shape == (1, 0) and not inv.any()
        return
    assert np.array_equal(u, want_u) and np.array_equal(inv, want_inv.reshape(-1))


@pytest.mark.parametrize("name", ["frac_prevs", "hist"])
def test_analysis_keeps_every_words_hard_outputs(models, name):
    """Stats.hard_outputs (reused by the all-words numeric run, ISSUE 16) is, chunk by chunk, the
    float64 of a separate exact forward pass of the same words (bit for bit), and the hard values
    it names are the output statistics' values with their row counts."""
    hm = models[name].hard_model()
    N = hm.table.shape[0] - 1
    st = analyse(hm, N)
    eng = ExactEngine(hm)
    k = len(hm.alphabet)
    for o in hm.outputs:
        raw_counts: Counter = Counter()  # (denominator, numerators) -> rows; as fractions below
        for L in range(1, N + 1):
            chunks = list(all_tokens(k, L))
            stored = st.hard_outputs[(o.name, L)]
            assert len(stored) == len(chunks)
            for (ids, table), tok in zip(stored, chunks):
                x = eng.run(tok).x
                want = to_float(x)[:, 1:, :][..., o.coords]
                assert ids.shape == tok.shape and np.array_equal(table[ids], want)
                den = int(x.den)
                raw_counts.update((den, tuple(r)) for r in x.num[:, 1:, o.coords].reshape(-1, len(o.coords)).tolist())
        counts: dict = {}
        for (den, nums), c in raw_counts.items():
            s = tuple(Fraction(int(v), den) for v in nums)
            counts[s] = counts.get(s, 0) + c
        assert counts == st.outputs[o.name].values
