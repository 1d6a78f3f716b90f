"""Model files: a hard-attention transformer written down as JSON (optionally with a ``.npz``).

This is the input format for *any* hard-attention transformer (THEORY §6): hand-written models,
models compiled from RASP-like programs, and the temporal-logic constructions exported with
:func:`~softhard.constructions.model_export.export_transformer`.  ``docs/models.md`` is the user
documentation; this docstring is the reference.

File layout (JSON object; unknown fields are errors, so typos are caught)::

    {
      "format": "softhard-model", "version": 1,          # required
      "name": "...", "description": "...",               # optional
      "alphabet": ["a", "b"],                             # required, distinct strings
      "d_model": 6,                                       # required: residual width d
      "residual": ["bos", "one", ...],                    # optional: one label per coordinate
      "n_layers": 2,                                      # optional: declared depth (checked)
      "arrays": "model.npz",                              # optional: where "npz:NAME" arrays live
      "token_embedding": MATRIX (|alphabet|+1, d),        # row 0 = BOS, then alphabet order
      "positional": {"features": [FEATURE...], "table": MATRIX (T+1, d)},   # optional
      "layers": [ {"heads": [HEAD...], "mlp": [MLP...]} ...],
      "outputs": [OUTPUT...],                             # required, non-empty
      "final_layernorm": LN,                              # optional: after the last layer
      "inv_tau": NUMBER                                   # optional: default 1/τ for `run`
    }

* ``FEATURE`` — a positional family times a direction: ``{"family": F, "coordinate": C,
  "coefficient": c}`` (c defaults to 1) or ``{"family": F, "vector": VECTOR(d)}``.  Families
  (:data:`~softhard.constructions.positional.PE_FAMILIES`), evaluated at positions
  ``j = 1..n`` of a word of length ``n``; the BOS row (``j = 0``) of every family is 0: ``j``,
  ``j/n``, ``j^2``, ``(-1)^j``, ``n+1-j``, ``(n+1-j)/n``, ``1`` and ``sinusoidal`` (extra fields
  ``fn``: ``sin``/``cos``, ``omega``: a number, ``over_n``: bool; value ``fn(omega·j)`` or
  ``fn(omega·j/n)``, defined as the float64 nearest to the true value so that the model is an
  exact rational object).
* ``table`` — absolute positional rows ``0..T`` (row 0 is BOS, as in Tracr); words longer than
  ``T`` are rejected.
* ``HEAD`` — ``{"name", "W_Q" (d,k), "W_K" (d,k), "W_V" (d,dv), "W_O" (dv,d), "b_Q" (k),
  "b_K" (k), "b_V" (dv), "b_O" (d), "scale", "mask", "rule"}``; biases default to 0, ``scale``
  (score multiplier, e.g. ``1/sqrt(key_size)``) to 1, ``mask`` to ``none``, ``rule`` to ``AHA``.
  Scores ``s_ij = scale·<x_i W_Q + b_Q, x_j W_K + b_K>``; BOS is always attendable; the BOS
  query row attends to BOS only.
* ``MLP`` — ``{"name", "W1" (d,h), "b1" (h), "W2" (h,d), "b2" (d)}``: ``x ← x + relu(x W1 + b1) W2 + b2``;
  a layer's ``mlp`` is a list applied in order (a single object is accepted).
* ``LN`` (a layer's ``"layernorm"``: one object or a list) — ``{"name", "sublayer": "attention"|"mlp",
  "position": "pre"|"post", "gamma" (m), "beta" (m), "eps" (> 0), "coordinates" (m; default every
  coordinate of the file), "target" (m; pre-norm only, required, disjoint from "coordinates")}``:
  ``x[target] ← γ ⊙ (x[coords] − μ)/√(v + eps) + β`` at every position, BOS included (biased
  variance v, as ``torch.nn.LayerNorm``).  Post-norm normalises in place (attention: after the
  heads' residual add; mlp: after the MLPs); pre-norm writes the normalised copy into ``target``
  (attention: before the heads; mlp: after the heads), where the sublayer reads it.
  ``final_layernorm`` has no sublayer/position and acts after the last layer.
* ``OUTPUT`` — ``{"name", "type": "boolean"|"categorical"|"numerical", "coordinate" |
  "coordinates", "threshold" (boolean, default 1/2), "classes" (categorical), "at":
  "all"|"first"|"last"}``.
* ``MATRIX`` — a nested list; ``"npz:NAME"``; or sparse ``{"shape": [r, c], "entries": [[i, j,
  v], ...]}`` where an index on a residual axis may be a residual label and a token-embedding
  row may be ``"BOS"`` or a symbol.  ``VECTOR`` likewise (nested list, ``npz:``, or
  ``{"size": s, "entries": [[i, v], ...]}``).
* Numbers: a JSON number is an IEEE double and means its *exact* binary value
  (``Fraction(float)``); a string ``"1/3"`` or ``"0.1"`` is an exact rational (the float runtime
  uses its nearest double).  NaN and infinities are rejected.

Loading yields a :class:`~softhard.constructions.hard_model.ModelSpec` (validated, exact);
:meth:`ModelSpec.canonical` folds biases (into an appended ``__one__`` coordinate, 1 at every
position) and keeps ``scale`` exact, giving the :class:`~softhard.constructions.hard_model.HardModel`
the analyses run on; :meth:`HardModel.transformer` gives the float
:class:`~softhard.constructions.transformer.Transformer` that
:func:`~softhard.constructions.engine.forward` runs hard and soft.

Every validation error is a :class:`ModelFormatError` whose one-line message names the file,
the field (``layers[1].heads[0].W_Q``) and what was expected.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import re
from fractions import Fraction
from pathlib import Path

import numpy as np

from .errors import ModelFormatError
from .hard_model import LN_POINTS, ONE, POS, HeadSpec, LayerSpec, LNSpec, MLPSpec, ModelSpec, OutputSpec, zeros
from .jsonfile import other_document, read_json_file
from .npzfile import load_npz
from .modelvalues import MAX_ENTRIES, Ctx, array, check_keys, exact, index
from .positional import PE_FAMILIES, PEFeature
from .transformer import MASKS, RULES

FORMAT = "softhard-model"
VERSION = 1
OUTPUT_TYPES = ("boolean", "categorical", "numerical")
OUTPUT_AT = ("all", "first", "last")


_TOP = ("format", "version", "name", "description", "alphabet", "d_model", "residual", "n_layers", "arrays",
        "token_embedding", "positional", "layers", "outputs", "inv_tau", "final_layernorm")
_LN = ("name", "sublayer", "position", "gamma", "beta", "eps", "coordinates", "target")
#: (sublayer, position) -> where the norm acts in the layer, and its order at that point
_LN_POINT = {("attention", "pre"): ("before_heads", 0), ("attention", "post"): ("after_heads", 0),
             ("mlp", "pre"): ("after_heads", 1), ("mlp", "post"): ("after_mlps", 0)}
_HEAD = ("name", "W_Q", "W_K", "W_V", "W_O", "b_Q", "b_K", "b_V", "b_O", "scale", "mask", "rule")
_MLP = ("name", "W1", "b1", "W2", "b2")
_OUT = ("name", "type", "coordinate", "coordinates", "threshold", "classes", "at")
_FEAT = ("family", "coordinate", "coefficient", "vector", "fn", "omega", "over_n")


def parse_model(doc: dict, *, path: str = "<model>", npz: dict | None = None, sha256: str = "") -> ModelSpec:
    """Validate a model document (the parsed JSON) and return the exact :class:`ModelSpec`.

    ``npz``: the arrays archive (name → array) if the document refers to ``npz:`` arrays.
    Raises :class:`ModelFormatError` (one line: file, field, what was expected) on any problem:
    wrong shapes, NaN/infinite entries, an unknown positional family, an unknown mask or rule,
    more layers than ``n_layers`` declares, unreferenced archive arrays.
    """
    ctx = Ctx(path, npz)
    other = other_document(doc, "model")
    if other is not None:
        raise ctx.err("<top>", f"this is {other}, not a model file")
    check_keys(doc, _TOP, ctx, "<top>", required=("format", "version", "alphabet", "d_model", "token_embedding",
                                                  "layers", "outputs"))
    if doc["format"] != FORMAT:
        raise ctx.err("format", f"expected {FORMAT!r}, got {doc['format']!r}")
    if doc["version"] != VERSION:
        raise ctx.err("version", f"this softhard reads version {VERSION}, got {doc['version']!r}")
    alph = doc["alphabet"]
    if not isinstance(alph, list) or not alph or not all(isinstance(s, str) and s for s in alph):
        raise ctx.err("alphabet", "expected a non-empty list of non-empty strings")
    if len(set(alph)) != len(alph):
        dup = next(s for s in alph if alph.count(s) > 1)
        raise ctx.err("alphabet", f"symbol {dup!r} appears twice")
    if "BOS" in alph:
        raise ctx.err("alphabet", "'BOS' is reserved for the beginning-of-sequence row")
    ctx.alphabet = tuple(alph)
    d = doc["d_model"]
    if not isinstance(d, int) or isinstance(d, bool) or d < 1:
        raise ctx.err("d_model", f"expected a positive integer, got {json.dumps(d)}")
    if d > MAX_ENTRIES:
        raise ctx.err("d_model", f"{d} is more than this reader's limit of {MAX_ENTRIES} (2^24) coordinates")
    labels = doc.get("residual")
    if labels is None:
        labels = [f"x{k}" for k in range(d)]
    if not isinstance(labels, list) or not all(isinstance(s, str) and s for s in labels):
        raise ctx.err("residual", "expected a list of non-empty strings (one label per coordinate)")
    if len(labels) != d:
        raise ctx.err("residual", f"{len(labels)} labels for d_model = {d}")
    if len(set(labels)) != d:
        dup = next(s for s in labels if labels.count(s) > 1)
        raise ctx.err("residual", f"label {dup!r} appears twice")
    for s in labels:
        if s in (ONE, POS):
            raise ctx.err("residual", f"label {s!r} is reserved")
    ctx.labels = list(labels)
    E = array(doc["token_embedding"], ctx, "token_embedding", 2, (len(alph) + 1, d), ("token", "residual"))
    # positional
    features: list[PEFeature] = []
    table = None
    pos = doc.get("positional")
    if pos is not None:
        check_keys(pos, ("features", "table"), ctx, "positional")
        feats = pos.get("features", [])
        if not isinstance(feats, list):
            raise ctx.err("positional.features", "expected a list")
        for i, fo in enumerate(feats):
            w = f"positional.features[{i}]"
            check_keys(fo, _FEAT, ctx, w, required=("family",))
            fam = fo["family"]
            if fam not in PE_FAMILIES:
                raise ctx.err(w + ".family", f"unknown positional family {fam!r} (known: {', '.join(PE_FAMILIES)})")
            if ("coordinate" in fo) == ("vector" in fo):
                raise ctx.err(w, "give exactly one of \"coordinate\" (with optional \"coefficient\") and \"vector\"")
            if "vector" in fo:
                if "coefficient" in fo:
                    raise ctx.err(w + ".coefficient", "only with \"coordinate\"")
                vec = array(fo["vector"], ctx, w + ".vector", 1, (d,), ("residual",))
            else:
                c = index(fo["coordinate"], "residual", d, ctx, w + ".coordinate")
                vec = zeros(d)
                vec[c] = exact(fo.get("coefficient", 1), ctx, w + ".coefficient")
            fn, omega, over_n = "", Fraction(0), False
            if fam == "sinusoidal":
                fn = fo.get("fn")
                if fn not in ("sin", "cos"):
                    raise ctx.err(w + ".fn", f"expected \"sin\" or \"cos\", got {json.dumps(fn)}")
                if "omega" not in fo:
                    raise ctx.err(w, "missing required field 'omega' (sinusoidal frequency)")
                omega = exact(fo["omega"], ctx, w + ".omega")
                over_n = fo.get("over_n", False)
                if not isinstance(over_n, bool):
                    raise ctx.err(w + ".over_n", "expected true or false")
            else:
                for k in ("fn", "omega", "over_n"):
                    if k in fo:
                        raise ctx.err(w + "." + k, f"only for the sinusoidal family, not {fam!r}")
            features.append(PEFeature(family=fam, vector=vec, fn=fn, omega=omega, over_n=over_n))
        if "table" in pos:
            table = array(pos["table"], ctx, "positional.table", 2, (None, d), ("plain", "residual"))
            if table.shape[0] < 2:
                raise ctx.err("positional.table", "needs at least 2 rows (BOS and position 1)")
    # layers
    layers_doc = doc["layers"]
    if not isinstance(layers_doc, list):
        raise ctx.err("layers", "expected a list of layers")
    if "n_layers" in doc:
        nl = doc["n_layers"]
        if not isinstance(nl, int) or isinstance(nl, bool) or nl < 0:
            raise ctx.err("n_layers", f"expected a non-negative integer, got {json.dumps(nl)}")
        if len(layers_doc) > nl:
            raise ctx.err(f"layers[{nl}]", f"the model is deeper than its file says: n_layers = {nl} but "
                                           f"{len(layers_doc)} layers are listed")
        if len(layers_doc) < nl:
            raise ctx.err("layers", f"n_layers = {nl} but only {len(layers_doc)} layers are listed")
    layers: list[LayerSpec] = []
    names: set[str] = set()
    for li, lo in enumerate(layers_doc):
        w = f"layers[{li}]"
        check_keys(lo, ("heads", "mlp", "layernorm"), ctx, w)
        hl = lo.get("heads", [])
        if not isinstance(hl, list):
            raise ctx.err(w + ".heads", "expected a list of heads")
        heads = []
        for hi, ho in enumerate(hl):
            hw = f"{w}.heads[{hi}]"
            check_keys(ho, _HEAD, ctx, hw, required=("W_Q", "W_K", "W_V", "W_O"))
            name = ho.get("name", f"L{li}.H{hi}")
            if not isinstance(name, str) or not name:
                raise ctx.err(hw + ".name", "expected a non-empty string")
            if name in names:
                raise ctx.err(hw + ".name", f"head name {name!r} is used twice")
            names.add(name)
            WQ = array(ho["W_Q"], ctx, hw + ".W_Q", 2, (d, None), ("residual", "plain"))
            k = WQ.shape[1]
            WK = array(ho["W_K"], ctx, hw + ".W_K", 2, (d, k), ("residual", "plain"))
            WV = array(ho["W_V"], ctx, hw + ".W_V", 2, (d, None), ("residual", "plain"))
            dv = WV.shape[1]
            WO = array(ho["W_O"], ctx, hw + ".W_O", 2, (dv, d), ("plain", "residual"))
            bq = array(ho["b_Q"], ctx, hw + ".b_Q", 1, (k,)) if "b_Q" in ho else None
            bk = array(ho["b_K"], ctx, hw + ".b_K", 1, (k,)) if "b_K" in ho else None
            bv = array(ho["b_V"], ctx, hw + ".b_V", 1, (dv,)) if "b_V" in ho else None
            bo = array(ho["b_O"], ctx, hw + ".b_O", 1, (d,), ("residual",)) if "b_O" in ho else None
            scale = exact(ho.get("scale", 1), ctx, hw + ".scale")
            if scale <= 0:
                raise ctx.err(hw + ".scale", f"must be > 0 (it multiplies the scores), got {scale}")
            mask = ho.get("mask", "none")
            if mask not in MASKS:
                raise ctx.err(hw + ".mask", f"{mask!r} is not one of {', '.join(MASKS)}")
            rule = ho.get("rule", "AHA")
            if rule not in RULES:
                raise ctx.err(hw + ".rule", f"{rule!r} is not one of {', '.join(RULES)}")
            heads.append(HeadSpec(name=name, W_Q=WQ, W_K=WK, W_V=WV, W_O=WO, b_Q=bq, b_K=bk, b_V=bv, b_O=bo,
                                  scale=scale, mask=mask, rule=rule))
        ml = lo.get("mlp", [])
        if isinstance(ml, dict):
            ml = [ml]
        if not isinstance(ml, list):
            raise ctx.err(w + ".mlp", "expected an MLP object or a list of them")
        mlps = []
        for mi, mo in enumerate(ml):
            mw = f"{w}.mlp[{mi}]"
            check_keys(mo, _MLP, ctx, mw, required=("W1", "W2"))
            name = mo.get("name", f"mlp{mi}")
            if not isinstance(name, str) or not name:
                raise ctx.err(mw + ".name", "expected a non-empty string")
            W1 = array(mo["W1"], ctx, mw + ".W1", 2, (d, None), ("residual", "plain"))
            h = W1.shape[1]
            b1 = array(mo["b1"], ctx, mw + ".b1", 1, (h,)) if "b1" in mo else zeros(h)
            W2 = array(mo["W2"], ctx, mw + ".W2", 2, (h, d), ("plain", "residual"))
            b2 = array(mo["b2"], ctx, mw + ".b2", 1, (d,), ("residual",)) if "b2" in mo else zeros(d)
            mlps.append(MLPSpec(name=name, W1=W1, b1=b1, W2=W2, b2=b2))
        lnl = lo.get("layernorm", [])
        if isinstance(lnl, dict):
            lnl = [lnl]
        if not isinstance(lnl, list):
            raise ctx.err(w + ".layernorm", "expected a layer-norm object or a list of them")
        lns = [_layernorm(lno, ctx, f"{w}.layernorm[{k}]", d, f"L{li}.ln{k}", final=False)
               for k, lno in enumerate(lnl)]
        seen = {}
        for ln in lns:
            key = (ln.sublayer, ln.position)
            if key in seen:
                raise ctx.err(f"{w}.layernorm", f"two layer norms for the {ln.sublayer} sublayer in position {ln.position}")
            seen[key] = ln
        lns.sort(key=lambda ln: (LN_POINTS.index(ln.point), _LN_POINT[(ln.sublayer, ln.position)][1]))
        layers.append(LayerSpec(heads=heads, mlps=mlps, lns=lns))
    if "final_layernorm" in doc:
        if not layers:
            raise ctx.err("final_layernorm", "needs at least one layer")
        layers[-1].lns.append(_layernorm(doc["final_layernorm"], ctx, "final_layernorm", d, "final_ln", final=True))
    # outputs
    outs_doc = doc["outputs"]
    if not isinstance(outs_doc, list) or not outs_doc:
        raise ctx.err("outputs", "expected a non-empty list of outputs")
    outputs = []
    onames = set()
    for oi, oo in enumerate(outs_doc):
        w = f"outputs[{oi}]"
        check_keys(oo, _OUT, ctx, w, required=("name", "type"))
        name = oo["name"]
        if not isinstance(name, str) or not name or name in onames:
            raise ctx.err(w + ".name", "expected a non-empty, unique string")
        onames.add(name)
        typ = oo["type"]
        if typ not in OUTPUT_TYPES:
            raise ctx.err(w + ".type", f"{typ!r} is not one of {', '.join(OUTPUT_TYPES)}")
        if typ == "categorical":
            if "coordinates" not in oo or "coordinate" in oo:
                raise ctx.err(w, "a categorical output needs \"coordinates\" (a list), not \"coordinate\"")
            cl = oo["coordinates"]
            if not isinstance(cl, list) or len(cl) < 2:
                raise ctx.err(w + ".coordinates", "expected a list of at least 2 coordinates")
            coords = [index(c, "residual", d, ctx, f"{w}.coordinates[{t}]") for t, c in enumerate(cl)]
            classes = oo.get("classes", [str(c) for c in cl])
            if not isinstance(classes, list) or len(classes) != len(coords):
                raise ctx.err(w + ".classes", f"expected {len(coords)} class names")
            classes = [str(c) for c in classes]
            if "threshold" in oo:
                raise ctx.err(w + ".threshold", "only for boolean outputs")
            thr = Fraction(1, 2)
        else:
            if "coordinate" not in oo or "coordinates" in oo:
                raise ctx.err(w, f"a {typ} output needs \"coordinate\" (one coordinate)")
            coords = [index(oo["coordinate"], "residual", d, ctx, w + ".coordinate")]
            classes = []
            if "classes" in oo:
                raise ctx.err(w + ".classes", "only for categorical outputs")
            if typ == "boolean":
                thr = exact(oo.get("threshold", "1/2"), ctx, w + ".threshold")
            else:
                if "threshold" in oo:
                    raise ctx.err(w + ".threshold", "only for boolean outputs")
                thr = Fraction(1, 2)
        at = oo.get("at", "all")
        if at not in OUTPUT_AT:
            raise ctx.err(w + ".at", f"{at!r} is not one of {', '.join(OUTPUT_AT)}")
        outputs.append(OutputSpec(name=name, type=typ, coords=coords, threshold=thr, classes=classes, at=at))
    inv_tau = None
    if "inv_tau" in doc:
        inv_tau = exact(doc["inv_tau"], ctx, "inv_tau")
        if inv_tau <= 0:
            raise ctx.err("inv_tau", f"must be > 0, got {inv_tau}")
    if npz is not None:
        unused = sorted(set(npz) - ctx.used)
        if unused:
            deeper = [u for u in unused if (m := re.match(r"^layers?[_\[.]?(\d+)", u)) and int(m.group(1)) >= len(layers)]
            if deeper:
                raise ctx.err("arrays", f"the model is deeper than its file says: array {deeper[0]!r} belongs to a layer "
                                        f"beyond the {len(layers)} listed")
            raise ctx.err("arrays", f"array {unused[0]!r} in the archive is not referenced by the model")
    inlined = inline_arrays(doc, npz) if npz is not None else copy.deepcopy(doc)
    inlined.pop("arrays", None)
    inlined.setdefault("name", str(doc.get("name") or Path(path).stem))  # an embedded copy keeps its name
    return ModelSpec(name=str(inlined["name"]), description=str(doc.get("description") or ""),
                     alphabet=tuple(alph), labels=list(labels), token_embedding=E, features=features, table=table,
                     layers=layers, outputs=outputs, inv_tau=inv_tau, doc=inlined, path=path, sha256=sha256)


def _layernorm(lo, ctx: Ctx, w: str, d: int, default_name: str, *, final: bool) -> LNSpec:
    """One layer-norm object (module docstring) as an :class:`LNSpec`."""
    check_keys(lo, _LN, ctx, w, required=("eps",) if final else ("sublayer", "position", "eps"))
    name = lo.get("name", default_name)
    if not isinstance(name, str) or not name:
        raise ctx.err(w + ".name", "expected a non-empty string")
    if final:
        for k in ("sublayer", "position"):
            if k in lo:
                raise ctx.err(w + "." + k, "the final layer norm acts after the last layer (no sublayer or position)")
        sub, pos, point = "final", "post", "after_mlps"
    else:
        sub, pos = lo["sublayer"], lo["position"]
        if sub not in ("attention", "mlp"):
            raise ctx.err(w + ".sublayer", f"{sub!r} is not one of attention, mlp")
        if pos not in ("pre", "post"):
            raise ctx.err(w + ".position", f"{pos!r} is not one of pre, post")
        point = _LN_POINT[(sub, pos)][0]
    cl = lo.get("coordinates", list(range(d)))
    if not isinstance(cl, list) or not cl:
        raise ctx.err(w + ".coordinates", "expected a non-empty list of residual coordinates")
    coords = [index(c, "residual", d, ctx, f"{w}.coordinates[{t}]") for t, c in enumerate(cl)]
    if len(set(coords)) != len(coords):
        raise ctx.err(w + ".coordinates", "a coordinate appears twice")
    m = len(coords)
    if pos == "pre" and not final:
        if "target" not in lo:
            raise ctx.err(w, "a pre-norm needs \"target\": the coordinates the normalised values are written to "
                             "(the sublayer reads them; the residual itself is not normalised)")
    if "target" in lo:
        tl = lo["target"]
        if not isinstance(tl, list) or len(tl) != m:
            raise ctx.err(w + ".target", f"expected a list of {m} residual coordinates (one per normalised coordinate)")
        target = [index(c, "residual", d, ctx, f"{w}.target[{t}]") for t, c in enumerate(tl)]
        if len(set(target)) != m:
            raise ctx.err(w + ".target", "a coordinate appears twice")
        if pos == "pre" and set(target) & set(coords):
            raise ctx.err(w + ".target", "a pre-norm's target must not overlap its coordinates")
        if pos == "post" and not final and target != coords:
            raise ctx.err(w + ".target", "a post-norm normalises its coordinates in place (omit \"target\")")
    else:
        target = list(coords)
    gamma = array(lo["gamma"], ctx, w + ".gamma", 1, (m,)) if "gamma" in lo else np.full(m, Fraction(1), dtype=object)
    beta = array(lo["beta"], ctx, w + ".beta", 1, (m,)) if "beta" in lo else zeros(m)
    eps = exact(lo["eps"], ctx, w + ".eps")
    if eps <= 0:
        raise ctx.err(w + ".eps", f"must be > 0 (it keeps the normalisation Lipschitz), got {eps}")
    return LNSpec(name=name, coords=coords, target=target, gamma=gamma, beta=beta, eps=eps, point=point,
                  sublayer=sub, position=pos)


def inline_arrays(doc, npz: dict):
    """A deep copy of ``doc`` with every ``"npz:NAME"`` replaced by the array as nested lists of
    floats (``repr``-exact in JSON)."""
    if isinstance(doc, dict):
        return {k: inline_arrays(v, npz) for k, v in doc.items()}
    if isinstance(doc, list):
        return [inline_arrays(v, npz) for v in doc]
    if isinstance(doc, str) and doc.startswith("npz:") and doc[4:] in npz:
        return np.asarray(npz[doc[4:]], dtype=np.float64).tolist()
    return doc


def load_model(path: str | os.PathLike) -> ModelSpec:
    """Read and validate a model file (JSON, plus the ``.npz`` its ``arrays`` field names, relative
    to the JSON file).  Raises :class:`ModelFormatError` for unreadable files, invalid JSON
    (with line:column) and every validation problem of :func:`parse_model`."""
    p = Path(path)
    raw, doc = read_json_file(p, "a model file")
    h = hashlib.sha256(raw)
    npz = None
    if isinstance(doc, dict) and "arrays" in doc:
        a = doc["arrays"]
        if not isinstance(a, str) or not a:
            raise ModelFormatError(f"{p}: arrays: expected the name of an .npz file")
        ap = (p.parent / a)
        try:
            ab = ap.read_bytes()
        except OSError as e:
            raise ModelFormatError(f"{p}: arrays: cannot read {ap} ({e.strerror or e})") from None
        try:
            npz = load_npz(ab)
        except ValueError as e:
            raise ModelFormatError(f"{p}: arrays: {ap}: {e}") from None
        h.update(ab)
    if not isinstance(doc, dict):
        raise ModelFormatError(f"{p}: a model file is a JSON object")
    return parse_model(doc, path=str(p), npz=npz, sha256=h.hexdigest())


def model_from_doc(doc: dict, *, path: str = "<embedded model>") -> ModelSpec:
    """:func:`parse_model` for an embedded (array-inlined) document; ``sha256`` is of its canonical JSON."""
    return parse_model(doc, path=path, sha256=doc_sha256(doc))


def doc_sha256(doc: dict) -> str:
    """SHA-256 of the canonical JSON text of a model document (sorted keys, repr floats)."""
    return hashlib.sha256(json.dumps(doc, sort_keys=True, separators=(",", ":")).encode("utf-8")).hexdigest()
