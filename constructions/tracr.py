"""Read compiled Tracr transformers and map them onto softhard's model format (THEORY §0, §2, §6).

Tracr (google-deepmind/tracr) compiles RASP programs into transformers that approximate hard
attention by softmax with a large inverse temperature.  This module reads such a model — an
export (``NAME.json`` + ``NAME.npz``, see ``../shared/tracr-models/README.md``) or, when the
``tracr`` package happens to be importable, a live ``AssembledTransformerModel`` (duck-typed; tracr
is *not* a dependency) — validates it, and maps it onto a softhard model document
(:mod:`softhard.constructions.modelfile`), the input of the gap analysis, the composed bounds and
the certificates.  ``docs/tracr.md`` is the user documentation.

**The mapping** (every step exact; the export's float64 weights are exact binary rationals):

* *residual blocks from the labels*: a label is ``NAME:VALUE`` (one direction of a categorical
  block, one-hot encoding ``VALUE``) or ``NAME`` (a numerical block, or ``one``); consecutive
  labels with the same ``NAME`` form one block (:func:`parse_labels`);
* *embeddings*: token rows ``BOS`` then the vocabulary in encoding order (``PAD`` is dropped: we
  never pad); ``pos_embed`` is the positional ``table`` (row 0 = BOS, row p = ``indices:p-1``),
  so words are at most ``max_seq_len`` long;
* *heads*: head ``h`` of layer ``l`` is the column slice ``[h·K, (h+1)·K)`` of
  ``layer_l.attn.{query,key,value}.{w,b}`` (K = ``key_size``) and the row slice of
  ``attn.linear.w``; ``attn.linear.b`` is head 0's ``b_O``.  Tracr's logits are
  ``q·k/√K`` with the nominal softmax coldness ``c`` (``softmax_coldness_nominal``, default 100)
  already inside ``q``.  We divide ``W_Q`` and ``b_Q`` by ``c`` (exactly), so that the model's
  scores are *unit scores* (an Aggregate scores selected keys 1, BOS 1/2, the rest 0), and the
  inverse temperature ``1/τ`` of every bound is Tracr's **effective coldness**
  ``λ = c/√K`` — the 1/√key_size scaling included.  ``λ`` is irrational for most K; claims use
  exact rational enclosures ``λ⁻ ≤ λ ≤ λ⁺`` (:meth:`TracrModel.inv_tau_enclosure`);
* *mask* ``none`` (``past`` when ``causal``: Tracr's causal mask is ``j ≤ i``); *rule* ``AHA``:
  the hard reference semantics is average hard attention, so a SelectorWidth head, which ties BOS
  with the selected keys on purpose, averages over BOS and the selected keys (its output is
  ``1/(w+1)``);
* *BOS*: always attendable; the format lets the BOS query attend to BOS only, while Tracr's BOS
  query attends softly to every key.  The two agree at every non-BOS position unless a later
  head's keys or values read a coordinate that an earlier head wrote (at the BOS row); that is
  checked (:func:`bos_convention`) and such models are refused (not supported yet);
* *MLPs* as they are (``relu``); *outputs*: a categorical output reads the
  ``output_residual_labels`` (argmax, classes from ``output_encoding``), a numerical one reads its
  single coordinate; ``unembed.w`` must be the 0/1 projection onto those labels;
* heads and MLPs whose weights are all zero (Tracr fills unused layers with zeros) are omitted:
  they write exactly 0 in both semantics (a note says so).

Every problem with the input is a :class:`~softhard.constructions.errors.ModelFormatError` whose
one-line message names the file and the field (``frac_prevs.npz: layer_1.attn.query.w: expected
shape (16, 10) (d_model × num_heads·key_size), got (16, 9)``); the CLI prints it and exits 2.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from .errors import ModelFormatError, SofthardError
from .hard_model import HardModel, ModelSpec
from .modelfile import FORMAT, VERSION, parse_model

#: digits of the rational enclosure of the effective coldness c/√K (30: the enclosure moves the
#: largest certified length by less than one for lengths below about 10²⁵)
ENCLOSURE_DIGITS = 30


class UnsupportedModel(SofthardError):
    """A well-formed Tracr model that the mapping does not support (layer norm, a non-ReLU
    activation, a BOS row read by a later head); the message says what and where."""


# ---------------------------------------------------------------------------------------------
# residual blocks


@dataclass(frozen=True)
class Block:
    """A residual block: ``name``, ``kind`` ("categorical": one coordinate per value, one-hot;
    "numerical": one coordinate carrying a number), the residual ``coords`` (indices) and the
    ``values`` they encode (``None`` for a numerical block)."""

    name: str
    kind: str
    coords: tuple[int, ...]
    values: tuple[str | None, ...]

    def label(self, k: int) -> str:
        v = self.values[k]
        return self.name if v is None else f"{self.name}:{v}"


_LABEL = re.compile(r"^([^:\s][^:]*?)(?::(.+))?$")


def parse_labels(labels: Sequence[str], *, where: str = "residual_labels") -> list[Block]:
    """Residual blocks from Tracr's residual labels (``NAME`` or ``NAME:VALUE``, as Tracr's
    ``BasisDirection`` prints them).

    Labels of one categorical block must be consecutive (Tracr sorts its basis); a ``NAME`` may
    not be both numerical and categorical.  Raises :class:`ModelFormatError` (message prefixed by
    ``where``, e.g. ``hist.json: residual_labels[3]: ...``) for a non-string, empty or unparsable
    label, a duplicate, or a split block.
    """
    blocks: list[Block] = []
    seen: dict[str, int] = {}
    for i, lab in enumerate(labels):
        w = f"{where}[{i}]"
        if not isinstance(lab, str):
            raise ModelFormatError(f"{w}: expected a string label, got {json.dumps(lab)}")
        m = _LABEL.match(lab)
        if not lab or lab != lab.strip() or m is None or (":" in lab and m.group(2) is None):
            raise ModelFormatError(f"{w}: label {lab!r} does not parse as NAME or NAME:VALUE")
        name, value = m.group(1), m.group(2)
        kind = "numerical" if value is None else "categorical"
        if name in seen:
            b = blocks[seen[name]]
            if b.kind != kind:
                raise ModelFormatError(f"{w}: label {lab!r}: block {name!r} is both numerical and categorical")
            if kind == "numerical" or b.coords[-1] != i - 1:
                raise ModelFormatError(f"{w}: label {lab!r} repeats block {name!r} (labels {b.coords[0]}..."
                                       f"{b.coords[-1]}); a block's labels must be distinct and consecutive")
            if value in b.values:
                raise ModelFormatError(f"{w}: label {lab!r} appears twice")
            blocks[seen[name]] = Block(name, kind, b.coords + (i,), b.values + (value,))
        else:
            seen[name] = len(blocks)
            blocks.append(Block(name, kind, (i,), (value,)))
    return blocks


# ---------------------------------------------------------------------------------------------
# the model


@dataclass
class TracrModel:
    """A validated Tracr model (export or live object).

    * ``name`` (the program), ``label`` (the output sop's label), ``source``: where it came from;
    * ``vocab`` in input-encoding order; ``bos``/``pad`` tokens; ``max_seq_len``;
    * ``config``: ``num_layers``, ``num_heads``, ``key_size``, ``mlp_hidden_size``, ``causal``;
    * ``coldness``: the nominal softmax coldness c (exact), ``coldness_source``;
      ``mlp_exactness`` (the ramp slope of numerical MLPs, if known);
    * ``labels``/``blocks``: the residual stream; ``arrays``: every parameter, float64, named as
      in the export (``layer_0.attn.query.w`` …);
    * ``output``: ``{"name", "categorical", "labels", "coords", "classes"}``;
    * ``examples``: the stored examples (``input``, ``rasp``, ``compiled_jax``, ``numpy_soft``,
      ``numpy_hard``) — empty for a live object; ``sops``/``modules``: the export's descriptions;
    * ``files``: ``{path: sha256}`` of the files read; ``notes``: what the mapping did.
    """

    name: str
    label: str
    source: str
    vocab: tuple[str, ...]
    bos: str
    pad: str | None
    max_seq_len: int
    num_layers: int
    num_heads: int
    key_size: int
    mlp_hidden_size: int
    causal: bool
    coldness: Fraction
    coldness_source: str
    mlp_exactness: int | None
    labels: list[str]
    blocks: list[Block]
    arrays: dict[str, np.ndarray]
    output: dict
    examples: list[dict] = field(default_factory=list)
    sops: dict = field(default_factory=dict)
    modules: list = field(default_factory=list)
    files: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    _doc: dict | None = field(default=None, repr=False)

    @property
    def d(self) -> int:
        return len(self.labels)

    # -- temperature ------------------------------------------------------------------------

    @property
    def inv_tau_float(self) -> float:
        """The compiled effective coldness ``λ = c/√key_size`` as a float (numeric runs only)."""
        return float(self.coldness) / math.sqrt(self.key_size)

    def inv_tau_enclosure(self, key_size: int | None = None, coldness: Fraction | None = None,
                          digits: int = ENCLOSURE_DIGITS) -> tuple[Fraction, Fraction]:
        """Exact rationals ``λ⁻ ≤ c/√K ≤ λ⁺`` with ``digits`` significant digits (K defaults to
        the model's key_size, c to its coldness).  Proved by squaring: ``(λ⁻)²K ≤ c² ≤ (λ⁺)²K``."""
        return sqrt_ratio_enclosure(coldness if coldness is not None else self.coldness,
                                    key_size if key_size is not None else self.key_size, digits)

    # -- structure --------------------------------------------------------------------------

    def block_of(self, coord: int) -> Block:
        for b in self.blocks:
            if coord in b.coords:
                return b
        raise KeyError(coord)  # pragma: no cover - every coordinate has a block

    def positional_coords(self) -> list[int]:
        """Residual coordinates the positional table writes at some non-BOS position."""
        P = self.arrays["pos_embed.embeddings"]
        return [a for a in range(self.d) if np.any(P[1:, a] != 0)]

    def head_slices(self, layer: int) -> list[dict[str, np.ndarray]]:
        """Per head of ``layer``: ``W_Q, b_Q, W_K, b_K, W_V, b_V, W_O`` (raw float64 slices; the
        query is *not* divided by the coldness here) and ``b_O`` (head 0 only, else zeros)."""
        K = self.key_size
        p = f"layer_{layer}.attn."
        out = []
        for h in range(self.num_heads):
            s = slice(h * K, (h + 1) * K)
            out.append({"W_Q": self.arrays[p + "query.w"][:, s], "b_Q": self.arrays[p + "query.b"][s],
                        "W_K": self.arrays[p + "key.w"][:, s], "b_K": self.arrays[p + "key.b"][s],
                        "W_V": self.arrays[p + "value.w"][:, s], "b_V": self.arrays[p + "value.b"][s],
                        "W_O": self.arrays[p + "linear.w"][s, :],
                        "b_O": self.arrays[p + "linear.b"] if h == 0 else np.zeros(self.d)})
        return out

    # -- the softhard model -----------------------------------------------------------------

    def to_doc(self) -> dict:
        """The softhard model document (module docstring: the mapping).  Deterministic; numbers
        are JSON ints, ``repr``-exact floats, or exact rationals ``"p/q"`` (the query weights
        divided by the coldness)."""
        if self._doc is not None:
            return self._doc
        enc_rows = [0] + [1 + k for k in range(len(self.vocab))]  # rows of our token matrix
        E = self.arrays["token_embed.rows"]
        layers = []
        omitted = []
        for li in range(self.num_layers):
            heads = []
            for hi, sl in enumerate(self.head_slices(li)):
                VO = np.concatenate([sl["W_V"], sl["b_V"][None, :]]) @ sl["W_O"]
                if not np.any(VO) and not np.any(sl["b_O"]):
                    omitted.append(f"layer_{li}.attn head {hi}")
                    continue
                h = {"name": f"L{li}.H{hi}",
                     "W_Q": _exact_mat(sl["W_Q"], self.coldness), "W_K": _mat(sl["W_K"]),
                     "W_V": _mat(sl["W_V"]), "W_O": _mat(sl["W_O"]),
                     "mask": "past" if self.causal else "none", "rule": "AHA"}
                for nm, div in (("b_Q", self.coldness), ("b_K", None), ("b_V", None), ("b_O", None)):
                    if np.any(sl[nm]):
                        h[nm] = _exact_vec(sl[nm], div)
                heads.append(h)
            p = f"layer_{li}.mlp."
            W1, b1 = self.arrays[p + "linear_1.w"], self.arrays[p + "linear_1.b"]
            W2, b2 = self.arrays[p + "linear_2.w"], self.arrays[p + "linear_2.b"]
            mlps = []
            # hidden units that are padding (no input weight and no bias, or no output weight) are dropped
            used = [u for u in range(W1.shape[1]) if (np.any(W1[:, u]) or b1[u] != 0) and np.any(W2[u])]
            if used or np.any(b2):
                mlps.append({"name": f"L{li}.mlp", "W1": _mat(W1[:, used]), "b1": _vec(b1[used]),
                             "W2": _mat(W2[used, :]), "b2": _vec(b2)})
            if not mlps:
                omitted.append(f"layer_{li}.mlp")
            layers.append({"heads": heads, "mlp": mlps})
        if omitted:
            self.notes.append(f"omitted (all weights zero, they write exactly 0 in both semantics): "
                              f"{', '.join(omitted)}")
        o = self.output
        if o["categorical"]:
            out = {"name": o["name"], "type": "categorical", "coordinates": list(o["labels"]),
                   "classes": [str(c) for c in o["classes"]], "at": "all"}
        else:
            out = {"name": o["name"], "type": "numerical", "coordinate": o["labels"][0], "at": "all"}
        lo, _ = self.inv_tau_enclosure()
        doc = {"format": FORMAT, "version": VERSION, "name": self.name,
               "description": (f"Tracr model {self.name} ({self.source}); scores in units of the nominal softmax "
                               f"coldness c = {_fs(self.coldness)}; 1/tau is Tracr's effective coldness "
                               f"c/sqrt(key_size) = c/sqrt({self.key_size})"),
               "alphabet": list(self.vocab), "d_model": self.d, "residual": list(self.labels),
               "n_layers": self.num_layers,
               "token_embedding": _mat(E[enc_rows]),
               "positional": {"table": _mat(self.arrays["pos_embed.embeddings"])},
               "layers": layers, "outputs": [out], "inv_tau": _fs(lo)}
        self._doc = doc
        return doc

    def spec(self) -> ModelSpec:
        """The validated :class:`ModelSpec` of :meth:`to_doc`."""
        return parse_model(self.to_doc(), path=f"{self.source} (as a softhard model)")

    def hard_model(self) -> HardModel:
        """The canonical exact model; raises :class:`UnsupportedModel` when the BOS convention
        matters (:func:`bos_convention`)."""
        hm = self.spec().canonical()
        msg = bos_convention(hm)
        if msg:
            raise UnsupportedModel(f"{self.source}: {msg}")
        return hm

    # -- reading outputs --------------------------------------------------------------------

    def decode(self, values: np.ndarray) -> list:
        """Decode output coordinates ``(n, k)`` (rows = positions 1..n, float or Fraction) to the
        RASP value per position: the class of the argmax (categorical) or the number."""
        if self.output["categorical"]:
            return [self.output["classes"][int(np.argmax(np.asarray(r, dtype=np.float64)))] for r in values]
        return [v[0] for v in values]


def bos_convention(hm: HardModel) -> str:
    """Empty if the format's BOS convention (the BOS query attends to BOS only) and Tracr's (the BOS
    query attends softly to every key) give identical values at every non-BOS position; else a
    one-line reason.  They can differ only through the BOS row's residual after an attention
    layer: it is read by non-BOS rows exactly when a later head's keys or values read a
    coordinate that an earlier head wrote (directly, or through an MLP reading it)."""
    dirty: set[int] = set()
    writer: dict[int, str] = {}
    for hs, ms in zip(hm.heads, hm.mlps):
        for h in hs:
            for a in sorted(dirty):
                if any(x != 0 for x in h.W_K[a]) or any(x != 0 for x in h.W_V[a]):
                    return (f"head {h.name} reads (as key or value) coordinate {hm.labels[a]!r}, which "
                            f"{writer[a]} wrote at the BOS row; Tracr's BOS row there differs from the format's "
                            "(BOS attends to BOS only) — models where a later head reads an earlier head's output "
                            "through keys or values are not supported yet")
        for h in hs:
            VO = h.vo()
            for b in range(hm.d):
                if any(VO[a, b] != 0 for a in range(hm.d)):
                    dirty.add(b)
                    writer.setdefault(b, f"head {h.name}")
        for m in ms:
            if any(any(m.W1[a, u] != 0 for u in range(m.W1.shape[1])) for a in dirty):
                for b in range(hm.d):
                    if any(m.W2[u, b] != 0 for u in range(m.W2.shape[0])):
                        dirty.add(b)
                        writer.setdefault(b, f"MLP {m.name} (reading a head's output)")
    return ""


# ---------------------------------------------------------------------------------------------
# exact helpers


def sqrt_ratio_enclosure(c: Fraction, K: int, digits: int = ENCLOSURE_DIGITS) -> tuple[Fraction, Fraction]:
    """Decimal rationals ``lo ≤ c/√K ≤ hi`` with ``digits`` significant digits (c > 0, K ≥ 1),
    exact: ``lo = ⌊√(c²/K)·10^s⌋/10^s`` by integer square root, and ``lo²·K ≤ c² ≤ hi²·K`` is
    checked in rational arithmetic."""
    c = Fraction(c)
    if c <= 0 or K < 1:
        raise ValueError("need c > 0 and K >= 1")
    target = c * c / K  # λ²
    e = math.floor(math.log10(float(c) / math.sqrt(K)))
    s = digits - 1 - e
    scaled = target * Fraction(10) ** (2 * s)
    k = math.isqrt(scaled.numerator // scaled.denominator)  # ⌊√⌊x⌋⌋ = ⌊√x⌋
    unit = Fraction(1, 10**s) if s >= 0 else Fraction(10 ** (-s))
    lo = k * unit
    hi = lo if lo * lo == target else lo + unit
    assert lo * lo <= target <= hi * hi and lo > 0
    return lo, hi


def _fs(x: Fraction) -> str:
    return f"{x.numerator}/{x.denominator}" if x.denominator != 1 else str(x.numerator)


def _num(x: float):
    x = float(x)
    return int(x) if x.is_integer() and abs(x) < 2**53 else x


def _mat(a: np.ndarray) -> list:
    return [[_num(v) for v in row] for row in np.asarray(a, dtype=np.float64)]


def _vec(a: np.ndarray) -> list:
    return [_num(v) for v in np.asarray(a, dtype=np.float64)]


def _exact(v: float, div: Fraction | None):
    if div is None:
        return _num(v)
    q = Fraction(float(v)) / div
    return int(q) if q.denominator == 1 and abs(q) < 2**53 else _fs(q)


def _exact_mat(a: np.ndarray, div: Fraction) -> list:
    return [[_exact(v, div) for v in row] for row in np.asarray(a, dtype=np.float64)]


def _exact_vec(a: np.ndarray, div: Fraction | None) -> list:
    return [_exact(v, div) for v in np.asarray(a, dtype=np.float64)]


# ---------------------------------------------------------------------------------------------
# reading an export


class _Err:
    def __init__(self, path: str):
        self.path = path

    def __call__(self, where: str, msg: str) -> ModelFormatError:
        return ModelFormatError(f"{self.path}: {where}: {msg}")


def _resolve(path: str | os.PathLike) -> tuple[Path, Path]:
    p = Path(path)
    if p.is_dir():
        raise ModelFormatError(f"{p}: is a directory; give the model as NAME, NAME.json or NAME.npz "
                               "(e.g. ../shared/tracr-models/frac_prevs)")
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
    try:
        raw = jp.read_bytes()
    except OSError as e:
        raise ModelFormatError(f"{jp}: cannot read ({e.strerror or e})") from None
    try:
        meta = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise ModelFormatError(f"{jp}: not UTF-8 text (a Tracr export's metadata is JSON)") from None
    except json.JSONDecodeError as e:
        raise ModelFormatError(f"{jp}:{e.lineno}:{e.colno}: not valid JSON ({e.msg})") from None
    if not isinstance(meta, dict):
        raise ModelFormatError(f"{jp}: expected a JSON object")
    try:
        zraw = zp.read_bytes()
        with np.load(zp, allow_pickle=False) as z:
            arrays = {k: np.array(z[k]) for k in z.files}
    except OSError as e:
        raise ModelFormatError(f"{zp}: cannot read ({e.strerror or e}); a Tracr export is NAME.json plus "
                               "NAME.npz") from None
    except (ValueError, EOFError) as e:
        raise ModelFormatError(f"{zp}: not a readable .npz archive ({e.__class__.__name__}: {e})") from None
    files = {str(jp): hashlib.sha256(raw).hexdigest(), str(zp): hashlib.sha256(zraw).hexdigest()}
    return _build(meta, arrays, json_path=str(jp), npz_path=str(zp), files=files, source=str(jp.with_suffix("")))


def _build(meta: dict, arrays: dict[str, np.ndarray], *, json_path: str, npz_path: str, files: dict,
           source: str, coldness_source: str = "softmax_coldness_nominal") -> TracrModel:
    ej, ez = _Err(json_path), _Err(npz_path)
    vocab = _get(meta, "vocab", ej, list, "a list of token strings")
    if not vocab or not all(isinstance(t, str) and t for t in vocab) or len(set(vocab)) != len(vocab):
        raise ej("vocab", "expected a non-empty list of distinct non-empty strings")
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
            if t not in vocab:
                raise ej(f"examples[{i}].input", f"token {t!r} is not in vocab")
        if len(ex["input"]) > max_len or not ex["input"]:
            raise ej(f"examples[{i}].input", f"length {len(ex['input'])} outside 1..max_seq_len = {max_len}")
        if not isinstance(ex["rasp"], list) or len(ex["rasp"]) != len(ex["input"]):
            raise ej(f"examples[{i}].rasp", "expected one value per input token")
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
    tm.to_doc()  # maps eagerly: the notes and any problem surface at load time
    spec = tm.spec()
    msg = bos_convention(spec.canonical())
    if msg:
        raise UnsupportedModel(f"{source}: {msg}")
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


def from_assembled(model: Any, *, name: str = "tracr-model", output: str | None = None,
                   coldness: float | None = None, examples: Sequence[Sequence[str]] = ()) -> TracrModel:
    """A :class:`TracrModel` from a live compiled model (tracr's ``AssembledTransformerModel``;
    duck-typed, so tracr need not be installed to call this on an equivalent object).

    Reads ``model.params`` (``token_embed``/``pos_embed`` ``embeddings``,
    ``transformer/layer_i/attn/{query,key,value,linear}`` and ``transformer/layer_i/mlp/linear_{1,2}``
    ``w``/``b``), ``model.model_config`` (``num_heads``, ``num_layers``, ``key_size``,
    ``mlp_hidden_size``, ``causal``, ``layer_norm``), ``model.residual_labels``,
    ``model.input_encoder`` (``encoding_map``, ``bos_token``, ``pad_token``) and
    ``model.output_encoder`` (``decoding_map`` for a categorical output; numerical otherwise).

    ``output``: the output sop's label (its residual block); inferred for a categorical output as
    the block whose values are the decoder's classes, required for a numerical one.
    ``coldness``: the nominal softmax coldness; default: inferred as the largest ``|W_Q W_Kᵀ|``
    entry over all heads (Tracr's selectors score selected keys at exactly the coldness).
    ``examples``: input words whose outputs :func:`softhard.solver.tracr.confirm` will compare with
    ``model.apply`` when it exists.  Raises like :func:`load_tracr` (file name ``<live model>``).
    """
    where = f"<live model {name}>"
    err = _Err(where)
    for attr in ("params", "model_config", "residual_labels", "input_encoder"):
        if not hasattr(model, attr):
            raise err(attr, "missing (expected a tracr AssembledTransformerModel)")
    params = model.params
    cfgo = model.model_config
    cfg = {}
    for k in ("num_layers", "num_heads", "key_size", "mlp_hidden_size"):
        if not hasattr(cfgo, k):
            raise err(f"model_config.{k}", "missing")
        cfg[k] = int(getattr(cfgo, k))
    cfg["causal"] = bool(getattr(cfgo, "causal", False))
    ie = model.input_encoder
    enc = dict(getattr(ie, "encoding_map", {}) or {})
    bos, pad = getattr(ie, "bos_token", None), getattr(ie, "pad_token", None)
    if not enc or bos is None:
        raise err("input_encoder", "needs encoding_map and bos_token")
    vocab = [t for t in enc if t not in (bos, pad)]
    labels = [str(s) for s in model.residual_labels]
    arrays: dict[str, np.ndarray] = {}

    def grab(key: str, sub: str, name_: str):
        try:
            arrays[name_] = np.asarray(params[key][sub], dtype=np.float64)
        except (KeyError, TypeError):
            raise err(f"params[{key!r}][{sub!r}]", "missing") from None

    grab("token_embed", "embeddings", "token_embed.embeddings")
    grab("pos_embed", "embeddings", "pos_embed.embeddings")
    for li in range(cfg["num_layers"]):
        for nm in ("query", "key", "value", "linear"):
            for s in ("w", "b"):
                grab(f"transformer/layer_{li}/attn/{nm}", s, f"layer_{li}.attn.{nm}.{s}")
        for nm in ("linear_1", "linear_2"):
            for s in ("w", "b"):
                grab(f"transformer/layer_{li}/mlp/{nm}", s, f"layer_{li}.mlp.{nm}.{s}")
    oe = getattr(model, "output_encoder", None)
    dec = getattr(oe, "decoding_map", None) if oe is not None else None
    blocks = parse_labels(labels, where=f"{where}: residual_labels")
    if dec:
        classes = [dec[k] for k in sorted(dec)]
        if output is None:
            cands = [b for b in blocks if b.kind == "categorical" and [str(v) for v in b.values] == [str(c) for c in classes]]
            if len(cands) != 1:
                raise err("output", "cannot infer the output block from output_encoder.decoding_map; pass output=LABEL")
            output = cands[0].name
        out_labels = [f"{output}:{c}" for c in classes]
    else:
        if output is None:
            raise err("output", "a numerical output's residual label must be given (output=LABEL)")
        out_labels = [output]
    for lab in out_labels:
        if lab not in labels:
            raise err("output", f"{lab!r} is not a residual label")
    if coldness is None:
        best = 0.0
        K = cfg["key_size"]
        for li in range(cfg["num_layers"]):
            Q, Kw = arrays[f"layer_{li}.attn.query.w"], arrays[f"layer_{li}.attn.key.w"]
            for h in range(cfg["num_heads"]):
                s = slice(h * K, (h + 1) * K)
                best = max(best, float(np.max(np.abs(Q[:, s] @ Kw[:, s].T), initial=0.0)))
        if best <= 0:
            raise err("params", "no attention head has a nonzero score; cannot infer the softmax coldness "
                                "(pass coldness=...)")
        coldness, csrc = best, "inferred: largest |W_Q W_K^T| entry over the heads"
    else:
        csrc = "given"
    meta = {"program": name, "program_label": output, "vocab": vocab, "max_seq_len": arrays["pos_embed.embeddings"].shape[0] - 1,
            "bos_token": bos, "pad_token": pad, "input_encoding": enc, "residual_labels": labels, "config": cfg,
            "softmax_coldness_nominal": coldness, "layer_norm": bool(getattr(cfgo, "layer_norm", False)),
            "output_residual_labels": out_labels, "output_is_categorical": bool(dec),
            "examples": [{"input": list(w), "rasp": [None] * len(w)} for w in examples]}
    if dec:
        meta["output_encoding"] = {str(c): k for k, c in enumerate(classes)}
    return _build(meta, arrays, json_path=where, npz_path=where, files={}, source=where, coldness_source=csrc)


def load_any(obj: Any) -> TracrModel:
    """:func:`load_tracr` for a path, :func:`from_assembled` for anything with ``params``."""
    if isinstance(obj, TracrModel):
        return obj
    if isinstance(obj, (str, os.PathLike)):
        return load_tracr(obj)
    if hasattr(obj, "params") and hasattr(obj, "residual_labels"):
        return from_assembled(obj)
    raise ModelFormatError(f"cannot read a Tracr model from {type(obj).__name__}")
