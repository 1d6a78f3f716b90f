"""Import a trained ``torch.nn.TransformerEncoder`` classifier as a model file (docs/torch.md).

The hard model of the file is the encoder's *argmax-attention counterpart*: the same weights, every
softmax replaced by average hard attention (AHA); the file's ``inv_tau`` is 1, the torch model's
own temperature, so ``softhard run --model`` at the default τ is the trained softmax model.

**Supported** (anything else is refused with one line naming the module):

* the module the factory returns has ``alphabet`` (a list of symbols; token id 0 is BOS, id k is
  ``alphabet[k-1]``), optional ``read_at`` (``"last"`` (default) or ``"first"``: the position the
  read-out is applied at), optional ``classes`` (class names) and optional ``causal`` (True: the
  encoder is called with a causal mask; mask ``past``);
* its direct children are exactly: one ``nn.Embedding`` with ``len(alphabet) + 1`` rows (tokens),
  one more ``nn.Embedding`` (the positional table, row j for position j, row 0 at BOS), one
  ``nn.TransformerEncoder`` and one ``nn.Linear`` (the read-out; its forward is
  ``readout(encoder(tok(ids) + pos(arange(n+1))))[read_at]``);
* ``model(ids)`` (ids (B, n+1), BOS first) returns the read-out logits (B, classes), and the
  encoder is called so that the BOS query row attends to BOS only (softhard's attention: e.g. an
  additive mask with ``-inf`` at ``[0, 1:]``; a causal mask does this already).  The import runs
  the module and the imported model (soft, τ = 1) on a few words and refuses, with the largest
  difference, when they disagree: a forward pass of another shape cannot pass silently;
* encoder layers: ``nn.TransformerEncoderLayer`` with ReLU feed-forward, ``norm_first`` True
  (pre-norm) or False (post-norm), ``nn.MultiheadAttention`` with packed in-projection, no
  ``bias_k``/``bias_v``, no ``add_zero_attn``; ``nn.LayerNorm`` with (or without) affine
  parameters; an optional final norm (``encoder.norm``); dropout is ignored (evaluation).

**Mapping** (residual: ``h0..h{d-1}`` the encoder's stream, ``p0..p{d-1}`` the pre-norm copy
(pre-norm only), ``logit0..`` the read-out): head k of a layer is
``W_Q = in_proj_weight[q rows of head k]ᵀ``, ``b_Q``, likewise K and V, ``W_O = out_proj.weight[:,
head k]ᵀ`` (``out_proj.bias`` on head 0), ``scale`` the float ``head_dim ** -0.5`` torch multiplies
by; post-norm norms are ``attention``/``mlp`` ``post`` norms over ``h``; pre-norm norms write
``p`` (heads and the feed-forward read ``p`` and write ``h``); the read-out is one more layer with
one MLP computing ``relu(z) − relu(−z) = z`` for ``z = h·Wᵀ + b`` into the logit coordinates
(exact), preceded by the encoder's final norm (as that layer's attention post-norm), read as a categorical output (a boolean ``logit0 > 0`` for one output unit).
"""

from __future__ import annotations

import copy
import importlib
import importlib.util
import json
import math
import pickle
import sys
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import torch
from torch import nn

from .engine import forward
from .errors import ModelFormatError, ParameterError
from .modelfile import FORMAT, VERSION, parse_model

SUPPORTED = ("nn.Embedding (tokens, positions)", "nn.TransformerEncoder of nn.TransformerEncoderLayer "
             "(ReLU, pre- or post-norm, nn.MultiheadAttention, nn.LayerNorm, dropout ignored)", "nn.Linear (read-out)")


def _refuse(where: str, mod, why: str) -> ModelFormatError:
    return ModelFormatError(f"import-torch: {where} ({type(mod).__module__}.{type(mod).__name__}): {why}; supported: "
                            + "; ".join(SUPPORTED))


def _np(t) -> np.ndarray | None:
    return None if t is None else t.detach().to(torch.float64).cpu().numpy()


def load_factory(spec: str, state_dict: str | None = None) -> nn.Module:
    """The module ``MODULE:FACTORY()`` returns (MODULE a dotted module name, or a ``.py`` file),
    with ``state_dict`` (a file saved by ``torch.save(model.state_dict(), FILE)``) loaded strictly,
    in evaluation mode.  Raises :class:`ParameterError` (one line) for a bad spec, a missing
    factory, or a state dict that does not fit."""
    if ":" not in spec:
        raise ParameterError(f"import-torch: expected MODULE:FACTORY, got {spec!r}")
    modname, fac = spec.rsplit(":", 1)
    try:
        if modname.endswith(".py"):
            p = Path(modname)
            isp = importlib.util.spec_from_file_location(p.stem, p)
            if isp is None or not p.is_file():
                raise ParameterError(f"import-torch: {modname}: no such file")
            mod = importlib.util.module_from_spec(isp)
            sys.modules.setdefault(p.stem, mod)
            isp.loader.exec_module(mod)
        else:
            mod = importlib.import_module(modname)
    except ImportError as e:
        raise ParameterError(f"import-torch: cannot import {modname!r} ({e})") from None
    f = getattr(mod, fac, None)
    if not callable(f):
        raise ParameterError(f"import-torch: {modname!r} has no callable {fac!r}")
    model = f()
    if not isinstance(model, nn.Module):
        raise ParameterError(f"import-torch: {spec}() returned {type(model).__name__}, not a torch.nn.Module")
    if state_dict is not None:
        _load_state_dict(model, state_dict)
    return model.eval()


#: how many missing or unexpected state-dict keys an error message names
KEYS_NAMED = 4


def _keys_text(keys: list[str]) -> str:
    """``'a', 'b', 'c', 'd' and 3 more``: the first :data:`KEYS_NAMED` keys of a mismatch."""
    shown = ", ".join(repr(k) for k in keys[:KEYS_NAMED])
    return shown + (f" and {len(keys) - KEYS_NAMED} more" if len(keys) > KEYS_NAMED else "")


def _load_state_dict(model: nn.Module, path: str) -> None:
    """Load the state dict in file ``path`` into ``model`` strictly (PyTorch's safe
    ``weights_only`` loader: a file holding code is never executed).  Raises
    :class:`ParameterError` in one line for a missing file, a file that is not a torch file, a
    whole pickled model (``torch.save(model, f)``: save ``model.state_dict()``), an object that is
    not a mapping of tensors, missing or unexpected keys (the first :data:`KEYS_NAMED` named) and
    shape mismatches.  (docs/torch.md; PyTorch's ``torch.load`` / ``load_state_dict``.)"""
    where = f"import-torch: {path}"
    if not Path(path).is_file():
        raise ParameterError(f"{where}: no such file")
    try:
        sd = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as e:
        # the weights-only loader refuses a pickled object other than tensors/containers: for a
        # whole saved model it names the model's class ("Unsupported global: GLOBAL encoder.X")
        if "Unsupported global" in str(e) or "weights_only" in str(e).lower() and "GLOBAL" in str(e):
            raise ParameterError(f"{where}: not a state dict but a pickled Python object (a whole model saved "
                                 "with torch.save(model, f)?); save model.state_dict() instead: "
                                 "torch.save(model.state_dict(), FILE)") from None
        raise ParameterError(f"{where}: not a state dict (not a file torch.save wrote)") from None
    except Exception:  # noqa: BLE001 — torch's readers raise IndexError, KeyError, EOFError, RuntimeError… on
        # bytes they did not write (the weights-only loader runs no code: any failure means "not its format")
        raise ParameterError(f"{where}: not a state dict (not a file torch.save wrote)") from None
    if not isinstance(sd, Mapping) or not all(isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in sd.items()):
        raise ParameterError(f"{where}: not a state dict (it holds a {type(sd).__name__}, not a mapping of names to "
                             "tensors); save model.state_dict()")
    want = model.state_dict()
    missing = [k for k in want if k not in sd]
    unexpected = [k for k in sd if k not in want]
    if missing or unexpected:
        parts = ([f"missing keys {_keys_text(missing)}"] if missing else []) + (
            [f"unexpected keys {_keys_text(unexpected)}"] if unexpected else [])
        raise ParameterError(f"{where}: the state dict does not fit {type(model).__name__}: " + "; ".join(parts))
    shapes = [k for k in want if tuple(sd[k].shape) != tuple(want[k].shape)]
    if shapes:
        k = shapes[0]
        raise ParameterError(f"{where}: the state dict does not fit {type(model).__name__}: {k!r} has shape "
                             f"{tuple(sd[k].shape)}, the model's is {tuple(want[k].shape)}"
                             + (f" ({len(shapes) - 1} more shape mismatch(es))" if len(shapes) > 1 else ""))
    try:
        model.load_state_dict(sd, strict=True)
    except (RuntimeError, ValueError) as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ParameterError(f"{where}: cannot load the state dict ({first})") from None


def import_torch(model: nn.Module, *, name: str = "imported", alphabet=None, read_at: str | None = None,
                 classes=None, causal: bool | None = None) -> tuple[dict, dict[str, np.ndarray], dict]:
    """A model document (module docstring), its arrays (name → float64 array, for the ``.npz``
    beside it) and the forward check (``{"words", "max_abs_difference"}``) for a supported encoder
    classifier; keyword arguments override the module's
    ``alphabet``/``read_at``/``classes``/``causal`` attributes.  Shapes: d = the encoder's
    d_model, D = d (post-norm) or 2d (pre-norm) plus the number of read-out units.
    Raises :class:`ModelFormatError` naming the first unsupported module."""
    alphabet = list(alphabet if alphabet is not None else getattr(model, "alphabet", []) or [])
    if not alphabet or not all(isinstance(s, str) and s for s in alphabet):
        raise ParameterError("import-torch: the model needs an 'alphabet' (list of symbols; id 0 is BOS)")
    read_at = read_at or getattr(model, "read_at", "last")
    if read_at not in ("last", "first"):
        raise ParameterError(f"import-torch: read_at must be 'last' or 'first', got {read_at!r}")
    causal = bool(getattr(model, "causal", False) if causal is None else causal)
    embs, enc, lin = [], None, None
    for cname, child in model.named_children():
        if isinstance(child, nn.Embedding):
            embs.append((cname, child))
        elif isinstance(child, nn.TransformerEncoder) and enc is None:
            enc = child
        elif isinstance(child, nn.Linear) and lin is None:
            lin = child
        elif isinstance(child, nn.Dropout):
            continue
        else:
            raise _refuse(cname, child, "not a supported module (or one too many of its kind)")
    if enc is None or lin is None or len(embs) != 2:
        raise ParameterError("import-torch: expected two nn.Embedding (tokens, positions), one nn.TransformerEncoder "
                             "and one nn.Linear read-out as the model's children")
    tok = [e for _, e in embs if e.num_embeddings == len(alphabet) + 1]
    if not tok:
        raise ParameterError(f"import-torch: no nn.Embedding with len(alphabet) + 1 = {len(alphabet) + 1} rows")
    tok = tok[0]
    pos = next(e for _, e in embs if e is not tok)
    d = tok.embedding_dim
    layers = list(enc.layers)
    for i, L in enumerate(layers):
        _check_layer(L, f"encoder.layers.{i}")
    pre = any(L.norm_first for L in layers)
    if pre and not all(L.norm_first for L in layers):
        raise ParameterError("import-torch: mixed pre- and post-norm layers are not supported")
    if enc.norm is not None and not isinstance(enc.norm, nn.LayerNorm):
        raise _refuse("encoder.norm", enc.norm, "the final norm must be nn.LayerNorm")
    C = lin.out_features
    H = [f"h{k}" for k in range(d)]
    P = [f"p{k}" for k in range(d)] if pre else []
    labels = H + P + [f"logit{k}" for k in range(C)]
    D = len(labels)
    ix = {s: k for k, s in enumerate(labels)}
    arrays: dict[str, np.ndarray] = {}

    def arr(key: str, a: np.ndarray) -> str:
        arrays[key] = np.ascontiguousarray(a, dtype=np.float64)
        return "npz:" + key

    def place(rows_from: list[str], W: np.ndarray) -> np.ndarray:
        out = np.zeros((D, W.shape[1]))
        out[[ix[s] for s in rows_from]] = W
        return out

    def cols(W: np.ndarray, to: list[str]) -> np.ndarray:
        out = np.zeros((W.shape[0], D))
        out[:, [ix[s] for s in to]] = W
        return out

    E = np.zeros((len(alphabet) + 1, D))
    E[:, :d] = _np(tok.weight)
    T = np.zeros((pos.num_embeddings, D))
    T[:, :d] = _np(pos.weight)
    doc_layers = []
    reads = P if pre else H
    for li, L in enumerate(layers):
        at = L.self_attn
        nh, hd = at.num_heads, d // at.num_heads
        Win, bin_ = _np(at.in_proj_weight), _np(at.in_proj_bias)
        Wo, bo = _np(at.out_proj.weight), _np(at.out_proj.bias)
        scale = float(hd) ** -0.5
        heads = []
        for k in range(nh):
            sl = slice(k * hd, (k + 1) * hd)
            h = {"name": f"L{li}.H{k}", "mask": "past" if causal else "none", "rule": "AHA", "scale": scale}
            for t, nm in enumerate("QKV"):
                h[f"W_{nm}"] = arr(f"L{li}_H{k}_W{nm}", place(reads, Win[t * d:(t + 1) * d][sl].T))
                if bin_ is not None:
                    h[f"b_{nm}"] = arr(f"L{li}_H{k}_b{nm}", bin_[t * d:(t + 1) * d][sl])
            h["W_O"] = arr(f"L{li}_H{k}_WO", cols(Wo[:, sl].T, H))
            if k == 0 and bo is not None:
                h["b_O"] = arr(f"L{li}_bO", cols(bo[None, :], H)[0])
            heads.append(h)
        ff = L.linear1.out_features
        mlp = {"name": f"L{li}.ffn", "W1": arr(f"L{li}_W1", place(reads, _np(L.linear1.weight).T)),
               "b1": arr(f"L{li}_b1", _np(L.linear1.bias) if L.linear1.bias is not None else np.zeros(ff)),
               "W2": arr(f"L{li}_W2", cols(_np(L.linear2.weight).T, H)),
               "b2": arr(f"L{li}_b2", cols((_np(L.linear2.bias) if L.linear2.bias is not None else np.zeros(d))[None, :],
                                           H)[0])}
        norms = [_norm(L.norm1, f"L{li}.norm1", "attention", "pre" if pre else "post", H, P, arr),
                 _norm(L.norm2, f"L{li}.norm2", "mlp", "pre" if pre else "post", H, P, arr)]
        doc_layers.append({"heads": heads, "mlp": [mlp], "layernorm": norms})
    # the read-out: z = h W^T + b into the logit coordinates, as relu(z) - relu(-z)
    W, b = _np(lin.weight), _np(lin.bias) if lin.bias is not None else np.zeros(C)
    logits = [f"logit{k}" for k in range(C)]
    W2 = np.concatenate([np.eye(C), -np.eye(C)], axis=0)
    ro = {"heads": [], "mlp": [{
        "name": "readout", "W1": arr("readout_W1", place(H, np.concatenate([W.T, -W.T], axis=1))),
        "b1": arr("readout_b1", np.concatenate([b, -b])), "W2": arr("readout_W2", cols(W2, logits))}]}
    if enc.norm is not None:  # the encoder's final norm: an attention post-norm of the head-less read-out layer
        ro["layernorm"] = [_norm(enc.norm, "final_norm", "attention", "post", H, P, arr)]
    doc_layers.append(ro)
    cls = list(classes if classes is not None else getattr(model, "classes", None) or [str(k) for k in range(max(C, 2))])
    if C == 1:
        out = {"name": "accept", "type": "boolean", "coordinate": "logit0", "threshold": 0, "at": read_at}
    else:
        if len(cls) != C:
            raise ParameterError(f"import-torch: {len(cls)} class names for {C} read-out units")
        out = {"name": "class", "type": "categorical", "coordinates": logits, "classes": [str(c) for c in cls],
               "at": read_at}
    doc = {"format": FORMAT, "version": VERSION, "name": name,
           "description": f"imported from torch: {len(layers)} {'pre' if pre else 'post'}-norm encoder layer(s), "
                          f"d_model {d}, {layers[0].self_attn.num_heads if layers else 0} head(s), read-out at "
                          f"{read_at}; hard model = argmax (AHA) counterpart, inv_tau 1 = the trained softmax",
           "alphabet": alphabet, "d_model": D, "residual": labels, "n_layers": len(doc_layers),
           "token_embedding": arr("token_embedding", E), "positional": {"table": arr("positional_table", T)},
           "layers": doc_layers, "outputs": [out], "inv_tau": 1}
    checked = _check_forward(model, doc, arrays, alphabet, pos.num_embeddings - 1)
    return doc, arrays, checked


#: largest |torch − imported| logit difference the import accepts (float32 weights, float64 runs)
FORWARD_TOLERANCE = 1e-6


def _check_forward(model: nn.Module, doc: dict, arrays: dict, alphabet: list, t_max: int) -> dict:
    """Run ``model`` (in float64) and the imported model (soft, τ = 1) on up to 12 words of lengths
    1..4 and refuse the import when a logit differs by more than :data:`FORWARD_TOLERANCE`."""
    spec = parse_model(dict(doc, arrays="<memory>"), path="<import-torch>", npz=arrays)
    hm = spec.canonical()
    tr = hm.transformer()
    coords = [hm.labels.index(c) for c in doc["outputs"][0].get("coordinates", ["logit0"])]
    m64 = copy.deepcopy(model).double().eval()
    rng = np.random.default_rng(0)
    worst, count = (0.0, None), 0
    for n in range(1, min(4, t_max) + 1):
        words = {tuple(rng.choice(alphabet, n)) for _ in range(3)}
        for w in sorted(words):
            with torch.no_grad():
                ref = m64(torch.tensor([[0] + [alphabet.index(s) + 1 for s in w]])).reshape(-1).numpy()
            got = forward(tr, tr.encode([w]), mode="soft", inv_tau=1.0).x[0, 1 if doc["outputs"][0]["at"] == "first"
                                                                            else -1, coords]
            diff = float(np.max(np.abs(got - ref)))
            count += 1
            if not diff <= worst[0]:
                worst = (diff, w)
    if not worst[0] <= FORWARD_TOLERANCE:
        raise ModelFormatError(
            f"import-torch: the module's forward differs from the imported model by {worst[0]:.3g} on "
            f"{''.join(worst[1])!r}: it is not the supported shape (is the BOS row masked to attend to BOS only?)")
    return {"words": count, "max_abs_difference": worst[0]}


def _check_layer(L, where: str) -> None:
    if not isinstance(L, nn.TransformerEncoderLayer):
        raise _refuse(where, L, "encoder layers must be nn.TransformerEncoderLayer")
    act = getattr(L, "activation", None)
    if not (act is torch.nn.functional.relu or isinstance(act, nn.ReLU)):
        raise _refuse(where + ".activation", L, "the feed-forward activation must be ReLU")
    at = L.self_attn
    if not isinstance(at, nn.MultiheadAttention) or not at._qkv_same_embed_dim:
        raise _refuse(where + ".self_attn", at, "needs nn.MultiheadAttention with a packed in-projection")
    if at.bias_k is not None or at.bias_v is not None or at.add_zero_attn:
        raise _refuse(where + ".self_attn", at, "bias_k/bias_v/add_zero_attn are not supported")
    for nm in ("norm1", "norm2"):
        if not isinstance(getattr(L, nm), nn.LayerNorm):
            raise _refuse(f"{where}.{nm}", getattr(L, nm), "norms must be nn.LayerNorm")
    for nm in ("linear1", "linear2"):
        if not isinstance(getattr(L, nm), nn.Linear):
            raise _refuse(f"{where}.{nm}", getattr(L, nm), "the feed-forward must be nn.Linear")


def _norm(ln: nn.LayerNorm, name: str, sublayer: str | None, position: str, H, P, arr) -> dict:
    if len(ln.normalized_shape) != 1:
        raise _refuse(name, ln, "only a norm over the last dimension is supported")
    d = ln.normalized_shape[0]
    o = {"name": name, "eps": float(ln.eps), "coordinates": list(H),
         "gamma": arr(name.replace(".", "_") + "_gamma", _np(ln.weight) if ln.weight is not None else np.ones(d)),
         "beta": arr(name.replace(".", "_") + "_beta", _np(ln.bias) if getattr(ln, "bias", None) is not None else np.zeros(d))}
    if sublayer is not None:
        o["sublayer"], o["position"] = sublayer, position
        if position == "pre":
            o["target"] = list(P)
    if o["eps"] <= 0 or not math.isfinite(o["eps"]):
        raise _refuse(name, ln, "eps must be > 0")
    return o


def write_imported(doc: dict, arrays: dict[str, np.ndarray], path: str | Path) -> Path:
    """Write the model file ``path`` and its arrays beside it (``<stem>.npz``), after validating
    the document with :func:`~softhard.constructions.modelfile.parse_model`."""
    p = Path(path)
    doc = dict(doc, arrays=p.with_suffix(".npz").name)
    parse_model(doc, path=str(p), npz=arrays)
    np.savez(p.with_suffix(".npz"), **arrays)
    p.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    return p
