"""Compiled Tracr transformers and their mapping onto softhard's model format (THEORY §0, §2, §6).

Tracr (google-deepmind/tracr) compiles RASP programs into transformers that approximate hard
attention by softmax with a large inverse temperature.  :mod:`softhard.constructions.tracr_load`
reads such a model — an export (``NAME.json`` + ``NAME.npz``, see
docs/tracr.md, "The export format") or a live ``AssembledTransformerModel`` (duck-typed; tracr is
the optional ``[tracr]`` extra) — and validates it
into a :class:`TracrModel`; this module maps it onto a softhard model document
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
  checked (:func:`bos_obstacle`, per MLP hidden unit) and such a model gets a certificate with
  status unknown that names the head (not modelled yet);
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

import json
import math
import re
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Sequence

import numpy as np

from .errors import ModelFormatError, SofthardError
from .hard_model import HardModel, ModelSpec
from .modelfile import FORMAT, VERSION, parse_model

#: digits of the rational enclosure of the effective coldness c/√K (30: the enclosure moves the
#: largest certified length by less than one for lengths below about 10²⁵)
ENCLOSURE_DIGITS = 30


class UnsupportedModel(SofthardError):
    """A well-formed Tracr model that the mapping or the analysis does not support (layer norm, a
    non-ReLU activation; a head whose query or key carries soft error, a BOS row read by a later
    head); the message says what and where, ``part`` names the head or MLP (None: the model)."""

    def __init__(self, message: str, *, part: str | None = None):
        self.part = part
        super().__init__(message)


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
        """The canonical exact model (whether the BOS convention matters is for the certificate to
        say: :func:`bos_obstacle`)."""
        return self.spec().canonical()

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
    one-line reason (:func:`bos_obstacle`)."""
    ob = bos_obstacle(hm)
    return "" if ob is None else ob[1]


def bos_obstacle(hm: HardModel) -> tuple[str, str] | None:
    """None if the two BOS conventions agree at every non-BOS position (:func:`bos_convention`), else
    ``(part, reason)``: the head that reads the BOS row and why.  They can differ only through the
    BOS row's residual after an attention layer: it is read by non-BOS rows exactly when a later
    head's keys or values read a coordinate that an earlier head wrote (directly, or through an MLP
    hidden unit reading it — checked per unit: a unit reading only token or positional coordinates
    writes the same value in both conventions)."""
    dirty: set[int] = set()
    writer: dict[int, str] = {}
    for hs, ms in zip(hm.heads, hm.mlps):
        for h in hs:
            for a in sorted(dirty):
                if any(x != 0 for x in h.W_K[a]) or any(x != 0 for x in h.W_V[a]):
                    return (f"head {h.name}",
                            f"head {h.name} reads (as key or value) coordinate {hm.labels[a]!r}, which "
                            f"{writer[a]} wrote at the BOS row; Tracr's BOS query attends to every key, the format's "
                            "to BOS only, so the BOS row differs there and reaches this head (Tracr's BOS-row "
                            "semantics is not modelled yet)")
        for h in hs:
            VO = h.vo()
            for b in range(hm.d):
                if any(VO[a, b] != 0 for a in range(hm.d)):
                    dirty.add(b)
                    writer.setdefault(b, f"head {h.name}")
        for m in ms:  # per hidden unit: only a unit that reads a BOS-row-dirty coordinate writes one
            for u in range(m.W1.shape[1]):
                if any(m.W1[a, u] != 0 for a in dirty):
                    for b in range(hm.d):
                        if m.W2[u, b] != 0:
                            dirty.add(b)
                            writer.setdefault(b, f"MLP {m.name} unit {u} (reading a head's output)")
    return None


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
