"""Read compiled Tracr transformers: an export (``NAME.json`` + ``NAME.npz``, see
docs/tracr.md, "The export format") or a live ``AssembledTransformerModel`` (duck-typed, through
the same export path; tracr is the optional ``[tracr]`` extra).  Both are validated
into a :class:`~softhard.constructions.tracr.TracrModel`, which maps them onto softhard's model
format (the mapping is described in :mod:`softhard.constructions.tracr`).

Every problem with the input is a :class:`~softhard.constructions.errors.ModelFormatError` whose
one-line message names the file and the field; a well-formed model the mapping does not support
raises :class:`~softhard.constructions.tracr.UnsupportedModel`.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
from fractions import Fraction
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from .errors import ModelFormatError
from .jsonfile import read_json_file
from .npzfile import load_npz
from .paths import is_dir
from .tracr import TracrModel, UnsupportedModel, parse_labels
from .tracr_compile import export_assembled, token_text

# ---------------------------------------------------------------------------------------------
# reading an export


class _Err:
    def __init__(self, path: str):
        self.path = path

    def __call__(self, where: str, msg: str) -> ModelFormatError:
        return ModelFormatError(f"{self.path}: {where}: {msg}")


def _resolve(path: str | os.PathLike) -> tuple[Path, Path]:
    p = Path(path)
    if is_dir(p):
        raise ModelFormatError(f"{p}: is a directory; give the model as NAME, NAME.json or NAME.npz "
                               "(e.g. examples/tracr/frac_prevs)")
    stem = p.with_suffix("") if p.suffix in (".json", ".npz") else p
    return stem.with_name(stem.name + ".json"), stem.with_name(stem.name + ".npz")


def _get(meta: dict, key: str, err: _Err, types, what: str, where: str | None = None):
    if key not in meta:
        raise err(where or key, f"missing (expected {what})")
    v = meta[key]
    allowed = types if isinstance(types, tuple) else (types,)
    if not isinstance(v, allowed) or (isinstance(v, bool) and bool not in allowed):
        raise err(where or key, f"expected {what}, got {json.dumps(v)[:60]}")
    return v


def _pos_int(meta: dict, key: str, err: _Err, where: str) -> int:
    v = _get(meta, key, err, int, "a positive integer", where)
    if v < 1:
        raise err(where, f"expected a positive integer, got {v}")
    return v


def load_tracr(path: str | os.PathLike) -> TracrModel:
    """Read and validate a Tracr export: ``path`` is ``NAME``, ``NAME.json`` or ``NAME.npz``
    (both files must exist side by side).  Returns a :class:`TracrModel`.

    Raises :class:`ModelFormatError` (one line naming the file and the field) for unreadable
    files, invalid JSON, missing fields or arrays, shapes that disagree with the config, non-finite
    weights, labels that do not parse, an ``unembed.w`` that is not the 0/1 projection onto the
    output labels, inconsistent temperatures; :class:`UnsupportedModel` for layer norm or a
    non-ReLU activation.
    """
    jp, zp = _resolve(path)
    raw, meta = read_json_file(jp, "a Tracr export's metadata")
    if not isinstance(meta, dict):
        raise ModelFormatError(f"{jp}: expected a JSON object")
    try:
        zraw = zp.read_bytes()
    except OSError as e:
        raise ModelFormatError(f"{zp}: cannot read ({e.strerror or e}); a Tracr export is NAME.json plus "
                               "NAME.npz") from None
    try:
        arrays = load_npz(zraw)
    except ValueError as e:
        raise ModelFormatError(f"{zp}: {e}") from None
    files = {str(jp): hashlib.sha256(raw).hexdigest(), str(zp): hashlib.sha256(zraw).hexdigest()}
    return _build(meta, arrays, json_path=str(jp), npz_path=str(zp), files=files, source=str(jp.with_suffix("")))


def _build(meta: dict, arrays: dict[str, np.ndarray], *, json_path: str, npz_path: str, files: dict,
           source: str, coldness_source: str = "softmax_coldness_nominal") -> TracrModel:
    ej, ez = _Err(json_path), _Err(npz_path)
    vocab_raw = _get(meta, "vocab", ej, list, "a list of tokens (strings or numbers)")
    if not vocab_raw or not all(isinstance(t, (str, int, float)) and (not isinstance(t, str) or t) for t in vocab_raw):
        raise ej("vocab", "expected a non-empty list of tokens: non-empty strings, numbers or booleans")
    vocab = [token_text(t) for t in vocab_raw]  # a token is its text (as in the residual labels)
    if len(set(vocab)) != len(vocab):
        raise ej("vocab", f"token {next(t for t in vocab if vocab.count(t) > 1)!r} appears twice")
    max_len = _pos_int(meta, "max_seq_len", ej, "max_seq_len")
    bos = _get(meta, "bos_token", ej, str, "a string")
    pad = meta.get("pad_token")
    if pad is not None and not isinstance(pad, str):
        raise ej("pad_token", f"expected a string, got {json.dumps(pad)}")
    enc = _get(meta, "input_encoding", ej, dict, "an object token -> id")
    for t in [bos] + vocab:
        if t not in enc:
            raise ej("input_encoding", f"has no id for token {t!r}")
    for t, v in enc.items():
        if not isinstance(v, int) or isinstance(v, bool) or v < 0:
            raise ej(f"input_encoding.{t}", f"expected a non-negative integer id, got {json.dumps(v)}")
    if len(set(enc.values())) != len(enc):
        raise ej("input_encoding", "two tokens share an id")
    for t in vocab:
        if t in (bos, pad):
            raise ej("vocab", f"token {t!r} is also the BOS/PAD token")
    vocab_sorted = tuple(sorted(vocab, key=lambda t: enc[t]))
    cfg = _get(meta, "config", ej, dict, "an object (num_layers, num_heads, key_size, mlp_hidden_size, causal)")
    L = _pos_int(cfg, "num_layers", ej, "config.num_layers")
    H = _pos_int(cfg, "num_heads", ej, "config.num_heads")
    K = _pos_int(cfg, "key_size", ej, "config.key_size")
    M = _pos_int(cfg, "mlp_hidden_size", ej, "config.mlp_hidden_size")
    causal = cfg.get("causal", False)
    if not isinstance(causal, bool):
        raise ej("config.causal", f"expected true or false, got {json.dumps(causal)}")
    if meta.get("layer_norm", cfg.get("layer_norm", False)) not in (False, None):
        raise UnsupportedModel(f"{json_path}: layer_norm: layer normalisation is not part of softhard's model format")
    act = meta.get("activation", "relu")
    if act != "relu":
        raise UnsupportedModel(f"{json_path}: activation: only relu MLPs are supported, got {json.dumps(act)}")
    labels = _get(meta, "residual_labels", ej, list, "a list of residual labels")
    blocks = parse_labels(labels, where=f"{json_path}: residual_labels")
    d = len(labels)
    if "d_model" in meta and meta["d_model"] != d:
        raise ej("d_model", f"{meta['d_model']} but residual_labels has {d} labels")
    # temperature
    c_raw = _get(meta, "softmax_coldness_nominal", ej, (int, float), "a positive number")
    if not math.isfinite(c_raw) or c_raw <= 0:
        raise ej("softmax_coldness_nominal", f"expected a positive number, got {c_raw}")
    c = Fraction(c_raw)
    mlp_ex = meta.get("mlp_exactness")
    if mlp_ex is not None and (not isinstance(mlp_ex, (int, float)) or isinstance(mlp_ex, bool) or mlp_ex <= 0):
        raise ej("mlp_exactness", f"expected a positive number, got {json.dumps(mlp_ex)}")
    # arrays
    V = max(enc.values()) + 1
    want: dict[str, tuple[int, ...]] = {"token_embed.embeddings": (V, d), "pos_embed.embeddings": (max_len + 1, d)}
    for li in range(L):
        p = f"layer_{li}."
        for nm in ("query", "key", "value"):
            want[p + f"attn.{nm}.w"] = (d, H * K)
            want[p + f"attn.{nm}.b"] = (H * K,)
        want[p + "attn.linear.w"] = (H * K, d)
        want[p + "attn.linear.b"] = (d,)
        want[p + "mlp.linear_1.w"] = (d, M)
        want[p + "mlp.linear_1.b"] = (M,)
        want[p + "mlp.linear_2.w"] = (M, d)
        want[p + "mlp.linear_2.b"] = (d,)
    why = {"token_embed.embeddings": "input_encoding ids × d_model", "pos_embed.embeddings": "max_seq_len+1 × d_model"}
    for name, shape in want.items():
        if name not in arrays:
            raise ez(name, f"missing array (config.num_layers = {L} needs it)" if name.startswith("layer_")
                     else "missing array")
        a = arrays[name]
        if a.dtype.kind not in "fiub":
            raise ez(name, f"non-numeric dtype {a.dtype}")
        if a.shape != shape:
            hint = why.get(name) or _shape_hint(name)
            raise ez(name, f"expected shape {shape} ({hint}), got {a.shape}")
        a = a.astype(np.float64)
        if not np.all(np.isfinite(a)):
            bad = [int(i) for i in np.argwhere(~np.isfinite(a))[0]]
            raise ez(name, f"contains a non-finite number at {bad}")
        arrays[name] = a
    lam = float(c) / math.sqrt(K)
    if "softmax_coldness_effective" in meta:
        v = meta["softmax_coldness_effective"]
        if not isinstance(v, (int, float)) or not math.isclose(v, lam, rel_tol=1e-9):
            raise ej("softmax_coldness_effective", f"{v} but softmax_coldness_nominal/sqrt(config.key_size) = {lam!r}")
    if "attn_logit_scale" in meta:
        v = meta["attn_logit_scale"]
        if not isinstance(v, (int, float)) or not math.isclose(v, 1 / math.sqrt(K), rel_tol=1e-9):
            raise ej("attn_logit_scale", f"{v} but 1/sqrt(config.key_size) = {1 / math.sqrt(K)!r}")
    extra = sorted(set(arrays) - set(want) - {"unembed.w"})
    if extra:
        m = re.match(r"^layer_(\d+)\.", extra[0])
        if m and int(m.group(1)) >= L:
            raise ez(extra[0], f"belongs to a layer beyond config.num_layers = {L}")
        raise ez(extra[0], "is not a parameter of this model (unknown array)")
    if "param_arrays" in meta:
        pa = meta["param_arrays"]
        if not isinstance(pa, dict):
            raise ej("param_arrays", "expected an object name -> shape")
        for name, shp in pa.items():
            if name in arrays and list(arrays[name].shape) != shp:
                raise ej(f"param_arrays.{name}", f"says shape {shp}, {npz_path} has {list(arrays[name].shape)}")
    # output
    out_labels = _get(meta, "output_residual_labels", ej, list, "a list of residual labels")
    if not out_labels:
        raise ej("output_residual_labels", "is empty")
    coords = []
    for k, lab in enumerate(out_labels):
        if lab not in labels:
            raise ej(f"output_residual_labels[{k}]", f"{lab!r} is not a residual label")
        coords.append(labels.index(lab))
    if "output_residual_indices" in meta and meta["output_residual_indices"] != coords:
        raise ej("output_residual_indices", f"{meta['output_residual_indices']} but the labels are at {coords}")
    categorical = _get(meta, "output_is_categorical", ej, bool, "true or false")
    label = meta.get("program_label") or meta.get("program") or Path(source).name
    if not isinstance(label, str) or not label:
        raise ej("program_label", "expected a non-empty string")
    if categorical:
        oe = _get(meta, "output_encoding", ej, dict, "an object class -> output index")
        idx = sorted(oe.items(), key=lambda kv: kv[1])
        if [v for _, v in idx] != list(range(len(out_labels))):
            raise ej("output_encoding", f"indices must be 0..{len(out_labels) - 1} (one per output label)")
        classes = [k for k, _ in idx]
        if len(coords) < 2:
            raise ej("output_residual_labels", "a categorical output needs at least 2 labels")
    else:
        if len(coords) != 1:
            raise ej("output_residual_labels", f"a numerical output has one label, got {len(coords)}")
        classes = []
    if "unembed.w" in arrays:
        U = arrays["unembed.w"]
        P = np.zeros((d, len(coords)))
        for k, a in enumerate(coords):
            P[a, k] = 1.0
        if U.shape != P.shape:
            raise ez("unembed.w", f"expected shape {P.shape} (d_model × output labels), got {U.shape}")
        if not np.array_equal(U, P):
            raise ez("unembed.w", "is not the 0/1 projection onto output_residual_labels (softhard reads outputs "
                                  "as residual coordinates)")
    # examples
    examples = meta.get("examples", [])
    if not isinstance(examples, list):
        raise ej("examples", "expected a list")
    for i, ex in enumerate(examples):
        if not isinstance(ex, dict) or not isinstance(ex.get("input"), list) or "rasp" not in ex:
            raise ej(f"examples[{i}]", "expected an object with 'input' (list of tokens) and 'rasp'")
        for t in ex["input"]:
            if isinstance(t, (dict, list)) or token_text(t) not in vocab:
                raise ej(f"examples[{i}].input", f"token {t!r} is not in vocab")
        if len(ex["input"]) > max_len or not ex["input"]:
            raise ej(f"examples[{i}].input", f"length {len(ex['input'])} outside 1..max_seq_len = {max_len}")
        for k in ("rasp", "compiled", "compiled_jax", "numpy_soft", "numpy_hard"):
            if k in ex and ex[k] is not None and (not isinstance(ex[k], list) or len(ex[k]) != len(ex["input"])):
                raise ej(f"examples[{i}].{k}", "expected one value per input token")
    examples = [{**ex, "input": [token_text(t) for t in ex["input"]],
                 "compiled_jax": ex.get("compiled_jax", ex.get("compiled"))} for ex in examples]
    token_rows = np.zeros((len(vocab_sorted) + 1, d))
    E = arrays["token_embed.embeddings"]
    token_rows[0] = E[enc[bos]]
    for k, t in enumerate(vocab_sorted):
        token_rows[k + 1] = E[enc[t]]
    arrays["token_embed.rows"] = token_rows
    tm = TracrModel(name=str(meta.get("program") or Path(source).name), label=label, source=source,
                    vocab=vocab_sorted, bos=bos, pad=pad, max_seq_len=max_len, num_layers=L, num_heads=H,
                    key_size=K, mlp_hidden_size=M, causal=causal, coldness=c, coldness_source=coldness_source,
                    mlp_exactness=None if mlp_ex is None else int(mlp_ex), labels=list(labels), blocks=blocks,
                    arrays=arrays,
                    output={"name": label, "categorical": categorical, "labels": list(out_labels), "coords": coords,
                            "classes": classes},
                    examples=examples, sops=meta.get("sops") or {}, modules=meta.get("modules") or [], files=files)
    tm.spec()  # maps and validates eagerly: the notes and any format problem surface at load time
    return tm


def _shape_hint(name: str) -> str:
    if name.endswith((".query.w", ".key.w", ".value.w")):
        return "d_model × num_heads·key_size"
    if name.endswith((".query.b", ".key.b", ".value.b")):
        return "num_heads·key_size"
    if name.endswith("linear.w") and ".attn." in name:
        return "num_heads·key_size × d_model"
    if name.endswith("linear_1.w"):
        return "d_model × mlp_hidden_size"
    if name.endswith("linear_1.b"):
        return "mlp_hidden_size"
    if name.endswith("linear_2.w"):
        return "mlp_hidden_size × d_model"
    return "d_model"


# ---------------------------------------------------------------------------------------------
# a live tracr object (optional; duck-typed)


def tracr_available() -> bool:
    """True when the ``tracr`` package can be imported (it is never required)."""
    import importlib.util
    return importlib.util.find_spec("tracr") is not None


def from_assembled(model: Any, *, name: str = "tracr-model", output: str | None = None, program: Any = None,
                   mlp_exactness: int | None = None, examples: Sequence[Sequence] | None = None) -> TracrModel:
    """A :class:`TracrModel` from a live compiled model (tracr's ``AssembledTransformerModel``,
    duck-typed): :func:`softhard.constructions.tracr_compile.export_assembled` turns it into the
    export's metadata and arrays — exactly what ``softhard tracr compile`` writes — and they are
    validated as :func:`load_tracr` validates the files.

    ``output``: the output sop's label (default ``program.label``; inferred from the output
    encoder for a categorical output; required for a numerical one without ``program``);
    ``program``: the RASP program (the stored examples then carry RASP's outputs);
    ``examples``: input words (default: up to 20, see ``export_assembled``).  Raises like
    :func:`load_tracr` (file name ``<live model NAME>``)."""
    meta, arrays = export_assembled(model, name=name, output=output, program=program, mlp_exactness=mlp_exactness,
                                    examples=examples)
    where = f"<live model {name}>"
    return _build(meta, arrays, json_path=where, npz_path=where, files={}, source=where,
                  coldness_source="inferred: largest |W_Q W_K^T| entry over the heads")


def load_any(obj: Any) -> TracrModel:
    """:func:`load_tracr` for a path, :func:`from_assembled` for anything with ``params``."""
    if isinstance(obj, TracrModel):
        return obj
    if isinstance(obj, (str, os.PathLike)):
        return load_tracr(obj)
    if hasattr(obj, "params") and hasattr(obj, "residual_labels"):
        return from_assembled(obj)
    raise ModelFormatError(f"cannot read a Tracr model from {type(obj).__name__}")
