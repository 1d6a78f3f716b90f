"""Model files: a hard-attention transformer written down as JSON (optionally with a ``.npz``).

This is the input format for *any* hard-attention transformer (THEORY §6): hand-written models,
models compiled from RASP-like programs, and the temporal-logic constructions exported with
:func:`export_transformer`.  ``docs/models.md`` is the user documentation; this docstring is the
reference.

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
      "inv_tau": NUMBER                                   # optional: default 1/τ for `run`
    }

* ``FEATURE`` — a positional family times a direction: ``{"family": F, "coordinate": C,
  "coefficient": c}`` (c defaults to 1) or ``{"family": F, "vector": VECTOR(d)}``.  Families
  (:data:`PE_FAMILIES`), evaluated at positions ``j = 1..n`` of a word of length ``n``; the BOS
  row (``j = 0``) of every family is 0: ``j``, ``j/n``, ``j^2``, ``(-1)^j``, ``n+1-j``,
  ``(n+1-j)/n``, ``1`` and ``sinusoidal`` (extra fields ``fn``: ``sin``/``cos``, ``omega``: a
  number, ``over_n``: bool; value ``fn(omega·j)`` or ``fn(omega·j/n)``, defined as the float64
  nearest to the true value so that the model is an exact rational object).
* ``table`` — absolute positional rows ``0..T`` (row 0 is BOS, as in Tracr); words longer than
  ``T`` are rejected.
* ``HEAD`` — ``{"name", "W_Q" (d,k), "W_K" (d,k), "W_V" (d,dv), "W_O" (dv,d), "b_Q" (k),
  "b_K" (k), "b_V" (dv), "b_O" (d), "scale", "mask", "rule"}``; biases default to 0, ``scale``
  (score multiplier, e.g. ``1/sqrt(key_size)``) to 1, ``mask`` to ``none``, ``rule`` to ``AHA``.
  Scores ``s_ij = scale·<x_i W_Q + b_Q, x_j W_K + b_K>``; BOS is always attendable; the BOS
  query row attends to BOS only.
* ``MLP`` — ``{"name", "W1" (d,h), "b1" (h), "W2" (h,d), "b2" (d)}``: ``x ← x + relu(x W1 + b1) W2 + b2``;
  a layer's ``mlp`` is a list applied in order (a single object is accepted).
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

Loading yields a :class:`ModelSpec` (validated, exact); :meth:`ModelSpec.canonical` folds
biases (into an appended ``__one__`` coordinate, 1 at every position) and keeps ``scale`` exact;
:meth:`HardModel.transformer` gives the float :class:`~softhard.constructions.transformer.Transformer`
that :func:`~softhard.constructions.engine.forward` runs hard and soft.

Every validation error is a :class:`ModelFormatError` whose one-line message names the file,
the field (``layers[1].heads[0].W_Q``) and what was expected.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import os
import re
from dataclasses import dataclass, field
from fractions import Fraction
from functools import lru_cache
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from .errors import ModelFormatError
from .transformer import MASKS, MLP, RULES, Block, Head, Transformer

FORMAT = "softhard-model"
VERSION = 1
OUTPUT_TYPES = ("boolean", "categorical", "numerical")
OUTPUT_AT = ("all", "first", "last")
ONE = "__one__"
POS = "__pos__"


# ---------------------------------------------------------------------------------------------
# positional families


@dataclass(frozen=True)
class Family:
    """A positional family: ``bounded`` (entries bounded independently of n; THEORY §1 regime T)
    and its exact range over ``1 ≤ j ≤ n ≤ N`` (``N=None``: every n)."""

    name: str
    bounded: bool
    doc: str


PE_FAMILIES: dict[str, Family] = {f.name: f for f in (
    Family("j", False, "position j"),
    Family("j/n", True, "relative position j/n"),
    Family("j^2", False, "squared position j²"),
    Family("(-1)^j", True, "parity (−1)^j"),
    Family("n+1-j", False, "reversed position n+1−j"),
    Family("(n+1-j)/n", True, "reversed relative position (n+1−j)/n"),
    Family("1", True, "constant 1 at every real position (0 at BOS)"),
    Family("sinusoidal", True, "fn(omega·j) or fn(omega·j/n), fn in {sin, cos}, as the nearest float64"),
)}


def _sinusoid_value(fn: str, omega: Fraction, j: int, n: int, over_n: bool) -> Fraction:
    return _sinusoid_cached(fn, omega.numerator, omega.denominator, j, n if over_n else 0)


@lru_cache(maxsize=200_000)
def _sinusoid_cached(fn: str, p: int, q: int, j: int, n: int) -> Fraction:
    import mpmath
    with mpmath.workdps(40):
        arg = mpmath.mpf(p) / q * j
        if n:
            arg = arg / n
        v = mpmath.sin(arg) if fn == "sin" else mpmath.cos(arg)
        return Fraction(float(v))  # float(mpf) rounds to nearest: a platform-independent definition


def family_value(feat: "PEFeature", j: int, n: int) -> Fraction:
    """Exact value of feature ``feat`` at position ``j`` (1..n) of a word of length ``n``."""
    f = feat.family
    if f == "j":
        return Fraction(j)
    if f == "j/n":
        return Fraction(j, n)
    if f == "j^2":
        return Fraction(j * j)
    if f == "(-1)^j":
        return Fraction(-1 if j % 2 else 1)
    if f == "n+1-j":
        return Fraction(n + 1 - j)
    if f == "(n+1-j)/n":
        return Fraction(n + 1 - j, n)
    if f == "1":
        return Fraction(1)
    return _sinusoid_value(feat.fn, feat.omega, j, n, feat.over_n)


def family_range(feat: "PEFeature", n_max: int | None) -> tuple[Fraction, Fraction]:
    """Exact ``[lo, hi]`` containing the feature's value at every ``1 ≤ j ≤ n ≤ n_max``
    (``n_max=None``: every n; only for bounded families).  Raises ``ValueError`` for an unbounded
    family with ``n_max=None``."""
    f = feat.family
    N = n_max
    if N is None and not PE_FAMILIES[f].bounded:
        raise ValueError(f"family {f} is unbounded")
    if f == "j":
        return Fraction(1), Fraction(N)
    if f == "j/n" or f == "(n+1-j)/n":
        return (Fraction(0) if N is None else Fraction(1, N)), Fraction(1)
    if f == "j^2":
        return Fraction(1), Fraction(N * N)
    if f == "(-1)^j":
        return Fraction(-1), Fraction(1 if (N is None or N >= 2) else -1)
    if f == "n+1-j":
        return Fraction(1), Fraction(N)
    if f == "1":
        return Fraction(1), Fraction(1)
    return Fraction(-1), Fraction(1)


@dataclass
class PEFeature:
    """One positional feature: ``family`` value times the exact direction ``vector`` (d,)."""

    family: str
    vector: np.ndarray  # object array of Fractions, shape (d,)
    fn: str = ""
    omega: Fraction = Fraction(0)
    over_n: bool = False

    @property
    def bounded(self) -> bool:
        return PE_FAMILIES[self.family].bounded

    def describe(self) -> str:
        if self.family == "sinusoidal":
            arg = "omega*j/n" if self.over_n else "omega*j"
            return f"{self.fn}({arg}), omega={self.omega}"
        return self.family


# ---------------------------------------------------------------------------------------------
# the exact model


@dataclass
class HeadSpec:
    """One head with exact weights (object arrays of Fractions).

    Shapes: ``W_Q``, ``W_K`` (d, k); ``W_V`` (d, dv); ``W_O`` (dv, d); biases ``b_Q``, ``b_K``
    (k,), ``b_V`` (dv,), ``b_O`` (d,) or None; ``scale`` > 0 exact.
    """

    name: str
    W_Q: np.ndarray
    W_K: np.ndarray
    W_V: np.ndarray
    W_O: np.ndarray
    b_Q: np.ndarray | None = None
    b_K: np.ndarray | None = None
    b_V: np.ndarray | None = None
    b_O: np.ndarray | None = None
    scale: Fraction = Fraction(1)
    mask: str = "none"
    rule: str = "AHA"

    def has_bias(self) -> bool:
        return any(b is not None and any(x != 0 for x in b) for b in (self.b_Q, self.b_K, self.b_V, self.b_O))


@dataclass
class MLPSpec:
    """Residual ReLU MLP with exact weights: ``W1`` (d, h), ``b1`` (h,), ``W2`` (h, d), ``b2`` (d,)."""

    name: str
    W1: np.ndarray
    b1: np.ndarray
    W2: np.ndarray
    b2: np.ndarray


@dataclass
class LayerSpec:
    heads: list[HeadSpec]
    mlps: list[MLPSpec]


@dataclass
class OutputSpec:
    """A readout: ``type`` boolean (one coordinate, read ``> threshold``), categorical (argmax over
    ``coords``, named by ``classes``) or numerical (one coordinate's value); ``at``: which
    positions are read (all / first / last)."""

    name: str
    type: str
    coords: list[int]
    threshold: Fraction = Fraction(1, 2)
    classes: list[str] = field(default_factory=list)
    at: str = "all"


@dataclass
class ModelSpec:
    """A validated model file, every weight an exact rational (object arrays of Fractions).

    ``token_embedding``: (|alphabet|+1, d), row 0 BOS; ``features``: positional families;
    ``table``: (T+1, d) or None; ``layers``; ``outputs``; ``doc``: the JSON document with every
    ``npz:`` array inlined (what a certificate embeds); ``sha256``: hash of the file bytes (and
    of the npz, if any).
    """

    name: str
    description: str
    alphabet: tuple[str, ...]
    labels: list[str]
    token_embedding: np.ndarray
    features: list[PEFeature]
    table: np.ndarray | None
    layers: list[LayerSpec]
    outputs: list[OutputSpec]
    inv_tau: Fraction | None = None
    doc: dict = field(default_factory=dict)
    path: str = "<model>"
    sha256: str = ""

    @property
    def d(self) -> int:
        return len(self.labels)

    @property
    def n_max(self) -> int | None:
        """Longest word the positional embedding is defined for (None: any length)."""
        return None if self.table is None else self.table.shape[0] - 1

    @property
    def bounded(self) -> bool:
        """True when every positional feature is bounded independently of n (THEORY §1)."""
        return all(f.bounded for f in self.features)

    def canonical(self) -> "HardModel":
        """The bias-free exact model the analyses run on (module docstring)."""
        return canonicalize(self)


@dataclass
class CanonHead:
    """A head of the canonical model: exact ``W_Q`` (d, k) (bias folded as the ``__one__`` row),
    ``W_K`` (d, k), ``W_V`` (d, dv), ``W_O`` (dv, d); ``scale`` exact (not folded, so scores are
    ``scale·(x W_Q)(x W_K)ᵀ`` exactly); ``layer``/``index`` locate it; ``tie_break`` is the β
    added by :func:`softhard.constructions.gaps.tie_break` (0 if none)."""

    name: str
    layer: int
    index: int
    W_Q: np.ndarray
    W_K: np.ndarray
    W_V: np.ndarray
    W_O: np.ndarray
    scale: Fraction
    mask: str
    rule: str
    tie_break: Fraction = Fraction(0)
    _cache: dict = field(default_factory=dict, repr=False, compare=False)

    def qk(self) -> np.ndarray:
        """``scale · W_Q W_Kᵀ`` (d, d), exact: scores are ``x_i M x_jᵀ`` (cached; do not mutate)."""
        if "qk" not in self._cache:
            self._cache["qk"] = _omatmul(self.W_Q, self.W_K.T) * self.scale
        return self._cache["qk"]

    def vo(self) -> np.ndarray:
        """``W_V W_O`` (d, d), exact: the head writes ``Σ_j α_ij x_j (W_V W_O)`` (cached)."""
        if "vo" not in self._cache:
            self._cache["vo"] = _omatmul(self.W_V, self.W_O)
        return self._cache["vo"]


@dataclass
class HardModel:
    """The canonical exact model (bias-free; see :meth:`ModelSpec.canonical`).

    Same fields as :class:`ModelSpec` but heads are :class:`CanonHead` and the residual may have
    extra coordinates ``__one__`` (biases, tie-break query) and ``__pos__`` (tie-break key, family
    j/n) appended after the file's own.
    """

    spec: ModelSpec
    alphabet: tuple[str, ...]
    labels: list[str]
    token_embedding: np.ndarray
    features: list[PEFeature]
    table: np.ndarray | None
    heads: list[list[CanonHead]]
    mlps: list[list[MLPSpec]]
    outputs: list[OutputSpec]

    @property
    def d(self) -> int:
        return len(self.labels)

    @property
    def n_layers(self) -> int:
        return len(self.heads)

    @property
    def bounded(self) -> bool:
        return all(f.bounded for f in self.features)

    @property
    def n_max(self) -> int | None:
        return None if self.table is None else self.table.shape[0] - 1

    def all_heads(self) -> list[CanonHead]:
        return [h for hs in self.heads for h in hs]

    def check_length(self, n: int) -> None:
        if n < 1:
            raise ModelFormatError("a word must have at least one symbol (n >= 1)")
        if self.n_max is not None and n > self.n_max:
            raise ModelFormatError(f"{self.spec.path}: positional.table has rows for n <= {self.n_max} only, "
                                   f"got a word of length {n}")

    def positional_exact(self, n: int) -> np.ndarray:
        """Exact positional embedding (n+1, d) (object array of Fractions); row 0 is BOS."""
        self.check_length(n)
        P = np.full((n + 1, self.d), Fraction(0), dtype=object)
        if self.table is not None:
            P[:, : self.table.shape[1]] = self.table[: n + 1]
        for f in self.features:
            nz = [(a, f.vector[a]) for a in range(self.d) if f.vector[a] != 0]
            for j in range(1, n + 1):
                v = family_value(f, j, n)
                if v:
                    for a, c in nz:
                        P[j, a] += v * c
        return P

    def positional_float(self, n: int) -> np.ndarray:
        """Float positional embedding (n+1, d) for the numeric engine (THEORY §7)."""
        self.check_length(n)
        P = np.zeros((n + 1, self.d))
        if self.table is not None:
            P[:, : self.table.shape[1]] = _to_float(self.table[: n + 1])
        j = np.arange(1, n + 1, dtype=np.float64)
        for f in self.features:
            vec = _to_float(f.vector)
            fam = f.family
            if fam == "j":
                vals = j
            elif fam == "j/n":
                vals = j / n
            elif fam == "j^2":
                vals = j * j
            elif fam == "(-1)^j":
                vals = np.where(np.arange(1, n + 1) % 2 == 1, -1.0, 1.0)
            elif fam == "n+1-j":
                vals = (n + 1) - j
            elif fam == "(n+1-j)/n":
                vals = ((n + 1) - j) / n
            elif fam == "1":
                vals = np.ones(n)
            else:
                vals = np.array([float(family_value(f, k, n)) for k in range(1, n + 1)])
            P[1:] += vals[:, None] * vec[None, :]
        return P

    def transformer(self) -> Transformer:
        """The float :class:`Transformer` (weights are the nearest doubles; ``scale`` folded into
        ``W_Q`` in float).  ``meta["hard_model"]`` is this object."""
        heads_blocks = []
        for hs, ms in zip(self.heads, self.mlps):
            heads = [Head(name=h.name, W_Q=_to_float(h.W_Q * h.scale), W_K=_to_float(h.W_K),
                          W_V=_to_float(h.W_V), W_O=_to_float(h.W_O), mask=h.mask, rule=h.rule, node=h.name)
                     for h in hs]
            mlps = [MLP(name=m.name, W1=_to_float(m.W1), b1=_to_float(m.b1), W2=_to_float(m.W2),
                        b2=_to_float(m.b2), nodes=()) for m in ms]
            heads_blocks.append(Block(heads=heads, mlps=mlps))
        outs = [self.labels[c] for o in self.outputs for c in o.coords]
        pe_name = ", ".join(f"{self.labels[_first_nz(f.vector)]}~{f.describe()}" for f in self.features) or "none"
        if self.table is not None:
            pe_name = (pe_name + ", " if self.features else "") + f"table(n<={self.n_max})"
        tr = Transformer(alphabet=self.alphabet, token_embedding=_to_float(self.token_embedding),
                         positional=self.positional_float, blocks=heads_blocks, labels=list(self.labels),
                         outputs=list(dict.fromkeys(outs)), positional_name=pe_name, bounded=self.bounded,
                         meta={"hard_model": self, "kind": "model", "name": self.spec.name})
        tr.validate()
        return tr

    def encode(self, word: Sequence[str]) -> list[int]:
        """Token ids (1-based; 0 is BOS) of ``word``; raises :class:`ModelFormatError` for an unknown symbol."""
        ix = {s: k + 1 for k, s in enumerate(self.alphabet)}
        try:
            return [ix[s] for s in word]
        except KeyError as e:
            raise ModelFormatError(f"symbol {e.args[0]!r} is not in the model's alphabet {list(self.alphabet)}") from None


def _first_nz(v) -> int:
    for a, x in enumerate(v):
        if x != 0:
            return a
    return 0


def _to_float(a: np.ndarray) -> np.ndarray:
    return np.array([float(x) for x in np.asarray(a, dtype=object).ravel()], dtype=np.float64).reshape(np.shape(a))


def _omatmul(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """Exact product of two object arrays of Fractions (2-d)."""
    r, k = A.shape
    k2, c = B.shape
    assert k == k2
    out = np.full((r, c), Fraction(0), dtype=object)
    Bc = [[B[t, j] for t in range(k)] for j in range(c)]
    for i in range(r):
        row = [A[i, t] for t in range(k)]
        nzr = [(t, x) for t, x in enumerate(row) if x != 0]
        if not nzr:
            continue
        for j in range(c):
            s = Fraction(0)
            col = Bc[j]
            for t, x in nzr:
                y = col[t]
                if y:
                    s += x * y
            out[i, j] = s
    return out


def zeros(shape) -> np.ndarray:
    """Object array of exact zeros."""
    return np.full(shape, Fraction(0), dtype=object)


# ---------------------------------------------------------------------------------------------
# canonicalisation


def canonicalize(spec: ModelSpec) -> HardModel:
    """Fold every head bias into an appended ``__one__`` coordinate (THEORY §0: scores stay
    ``<x_i W_Q, x_j W_K>``): ``W_Q ← [W_Q; b_Q]``, ``W_K ← [W_K; b_K]``, ``W_V ← [W_V; b_V]`` and,
    for ``b_O``, an extra value column reading ``__one__`` (soft and hard weights sum to 1, so it
    contributes exactly ``b_O``) with ``W_O ← [W_O; b_O]``.  Exact; no rounding."""
    need_one = any(h.has_bias() for L in spec.layers for h in L.heads)
    labels = list(spec.labels)
    d0 = len(labels)
    E = spec.token_embedding
    features = [copy.copy(f) for f in spec.features]
    table = spec.table
    if need_one:
        labels.append(ONE)
        E = np.concatenate([E, np.full((E.shape[0], 1), Fraction(1), dtype=object)], axis=1)
        for f in features:
            f.vector = np.concatenate([f.vector, zeros(1)])
        if table is not None:
            table = np.concatenate([table, zeros((table.shape[0], 1))], axis=1)
    d = len(labels)
    heads, mlps = [], []
    for li, L in enumerate(spec.layers):
        hs = []
        for hi, h in enumerate(L.heads):
            WQ, WK, WV, WO = (_pad_rows(h.W_Q, d), _pad_rows(h.W_K, d), _pad_rows(h.W_V, d), _pad_cols(h.W_O, d))
            if need_one:
                if h.b_Q is not None:
                    WQ[d0] = h.b_Q
                if h.b_K is not None:
                    WK[d0] = h.b_K
                if h.b_V is not None:
                    WV[d0] = h.b_V
                if h.b_O is not None and any(x != 0 for x in h.b_O):
                    col = zeros((d, 1))
                    col[d0, 0] = Fraction(1)
                    WV = np.concatenate([WV, col], axis=1)
                    bo = np.concatenate([h.b_O, zeros(d - len(h.b_O))])
                    WO = np.concatenate([WO, bo[None, :]], axis=0)
            hs.append(CanonHead(name=h.name, layer=li, index=hi, W_Q=WQ, W_K=WK, W_V=WV, W_O=WO, scale=h.scale,
                                mask=h.mask, rule=h.rule))
        heads.append(hs)
        mlps.append([MLPSpec(name=m.name, W1=_pad_rows(m.W1, d), b1=m.b1, W2=_pad_cols(m.W2, d),
                             b2=np.concatenate([m.b2, zeros(d - len(m.b2))])) for m in L.mlps])
    return HardModel(spec=spec, alphabet=spec.alphabet, labels=labels, token_embedding=E, features=features,
                     table=table, heads=heads, mlps=mlps, outputs=list(spec.outputs))


def _pad_rows(A: np.ndarray, d: int) -> np.ndarray:
    if A.shape[0] == d:
        return A.copy()
    return np.concatenate([A, zeros((d - A.shape[0], A.shape[1]))], axis=0)


def _pad_cols(A: np.ndarray, d: int) -> np.ndarray:
    if A.shape[1] == d:
        return A.copy()
    return np.concatenate([A, zeros((A.shape[0], d - A.shape[1]))], axis=1)


# ---------------------------------------------------------------------------------------------
# parsing and validation


class _Ctx:
    """Parsing context: the file name (for messages), residual labels, the npz archive."""

    def __init__(self, path: str, npz: dict | None):
        self.path = path
        self.npz = npz
        self.used: set[str] = set()
        self.labels: list[str] = []
        self.alphabet: tuple[str, ...] = ()

    def err(self, where: str, msg: str) -> ModelFormatError:
        return ModelFormatError(f"{self.path}: {where}: {msg}")


def _exact(x, ctx: _Ctx, where: str) -> Fraction:
    if isinstance(x, bool) or x is None:
        raise ctx.err(where, f"expected a number, got {json.dumps(x)}")
    if isinstance(x, int):
        return Fraction(x)
    if isinstance(x, float):
        if not math.isfinite(x):
            raise ctx.err(where, f"contains a non-finite number ({x}): NaN and infinities are not allowed")
        return Fraction(x)
    if isinstance(x, str):
        s = x.strip()
        if s.lower() in ("nan", "inf", "+inf", "-inf", "infinity", "-infinity"):
            raise ctx.err(where, f"contains a non-finite number ({s}): NaN and infinities are not allowed")
        try:
            return Fraction(s)
        except (ValueError, ZeroDivisionError):
            raise ctx.err(where, f"{x!r} is not a number (use a JSON number or an exact rational like \"1/3\")") from None
    raise ctx.err(where, f"expected a number, got {type(x).__name__}")


def _index(x, axis: str, size: int, ctx: _Ctx, where: str) -> int:
    """An index on ``axis`` ("residual", "token" or "plain"): int, or a label/symbol."""
    if isinstance(x, bool):
        raise ctx.err(where, f"index {x!r} is not an integer or label")
    if isinstance(x, int):
        if not 0 <= x < size:
            raise ctx.err(where, f"index {x} is out of range [0, {size})")
        return x
    if isinstance(x, str):
        if axis == "residual":
            if x in ctx.labels:
                return ctx.labels.index(x)
            raise ctx.err(where, f"{x!r} is not a residual label (labels: {', '.join(ctx.labels)})")
        if axis == "token":
            if x == "BOS":
                return 0
            if x in ctx.alphabet:
                return ctx.alphabet.index(x) + 1
            raise ctx.err(where, f"{x!r} is neither BOS nor a symbol of the alphabet")
    raise ctx.err(where, f"index {x!r} must be an integer" + (" or a label" if axis != "plain" else ""))


def _array(obj, ctx: _Ctx, where: str, ndim: int, shape: tuple, axes: tuple = ("plain", "plain")) -> np.ndarray:
    """Parse a MATRIX (ndim 2) or VECTOR (ndim 1) into an exact object array.

    ``shape``: expected sizes (None = free).  Raises :class:`ModelFormatError` naming ``where``.
    """
    what = "matrix" if ndim == 2 else "vector"
    if isinstance(obj, str) and obj.startswith("npz:"):
        name = obj[4:]
        if ctx.npz is None:
            raise ctx.err(where, f"refers to {obj!r} but the file names no \"arrays\" archive")
        if name not in ctx.npz:
            raise ctx.err(where, f"array {name!r} is not in the archive (has: {', '.join(sorted(ctx.npz)) or 'none'})")
        ctx.used.add(name)
        a = np.asarray(ctx.npz[name])
        if a.dtype.kind not in "fiub":
            raise ctx.err(where, f"array {name!r} has non-numeric dtype {a.dtype}")
        if a.ndim != ndim:
            raise ctx.err(where, f"expected a {ndim}-d array, got shape {a.shape}")
        a = a.astype(np.float64)
        if not np.all(np.isfinite(a)):
            bad = tuple(int(i) for i in np.argwhere(~np.isfinite(a))[0])
            raise ctx.err(where, f"contains a non-finite number at {list(bad)}: NaN and infinities are not allowed")
        out = np.array([Fraction(float(x)) for x in a.ravel()], dtype=object).reshape(a.shape)
    elif isinstance(obj, dict):
        keys = set(obj)
        if ndim == 2:
            allowed = {"shape", "entries"}
            if keys - allowed or "shape" not in obj:
                raise ctx.err(where, "a sparse matrix is {\"shape\": [rows, cols], \"entries\": [[i, j, value], ...]}")
            shp = obj["shape"]
            if (not isinstance(shp, list) or len(shp) != 2
                    or not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in shp)):
                raise ctx.err(where + ".shape", f"expected [rows, cols] (non-negative integers), got {json.dumps(shp)}")
            out = zeros(tuple(shp))
            ents = obj.get("entries", [])
            if not isinstance(ents, list):
                raise ctx.err(where + ".entries", "expected a list of [i, j, value]")
            for t, e in enumerate(ents):
                w = f"{where}.entries[{t}]"
                if not isinstance(e, list) or len(e) != 3:
                    raise ctx.err(w, "expected [i, j, value]")
                i = _index(e[0], axes[0], shp[0], ctx, w)
                j = _index(e[1], axes[1], shp[1], ctx, w)
                out[i, j] = _exact(e[2], ctx, w)
        else:
            allowed = {"size", "entries"}
            if keys - allowed or "size" not in obj:
                raise ctx.err(where, "a sparse vector is {\"size\": s, \"entries\": [[i, value], ...]}")
            sz = obj["size"]
            if not isinstance(sz, int) or isinstance(sz, bool) or sz < 0:
                raise ctx.err(where + ".size", f"expected a non-negative integer, got {json.dumps(sz)}")
            out = zeros(sz)
            ents = obj.get("entries", [])
            if not isinstance(ents, list):
                raise ctx.err(where + ".entries", "expected a list of [i, value]")
            for t, e in enumerate(ents):
                w = f"{where}.entries[{t}]"
                if not isinstance(e, list) or len(e) != 2:
                    raise ctx.err(w, "expected [i, value]")
                i = _index(e[0], axes[0], sz, ctx, w)
                out[i] = _exact(e[1], ctx, w)
    elif isinstance(obj, list):
        if ndim == 1:
            out = np.array([_exact(x, ctx, f"{where}[{i}]") for i, x in enumerate(obj)] or [], dtype=object)
            out = out.reshape(len(obj))
        else:
            rows = []
            width = None
            for i, r in enumerate(obj):
                if not isinstance(r, list):
                    raise ctx.err(f"{where}[{i}]", f"expected a row (list of numbers), got {type(r).__name__}")
                if width is None:
                    width = len(r)
                elif len(r) != width:
                    raise ctx.err(f"{where}[{i}]", f"row has {len(r)} entries, row 0 has {width} (ragged matrix)")
                rows.append([_exact(x, ctx, f"{where}[{i}][{j}]") for j, x in enumerate(r)])
            out = zeros((len(rows), width or 0))
            for i, r in enumerate(rows):
                for j, x in enumerate(r):
                    out[i, j] = x
    else:
        raise ctx.err(where, f"expected a {what} (nested list, \"npz:NAME\" or sparse object), got "
                             f"{type(obj).__name__}")
    for k, (got, want) in enumerate(zip(out.shape, shape)):
        if want is not None and got != want:
            dim = ("rows", "columns")[k] if ndim == 2 else "entries"
            hint = " (d_model)" if axes[k] == "residual" else ""
            raise ctx.err(where, f"expected {want} {dim}{hint}, got {got} (shape {tuple(out.shape)})")
    return out


def _check_keys(obj: dict, allowed: Sequence[str], ctx: _Ctx, where: str, required: Sequence[str] = ()) -> None:
    if not isinstance(obj, dict):
        raise ctx.err(where, f"expected an object, got {type(obj).__name__}")
    for k in obj:
        if k not in allowed:
            raise ctx.err(where, f"unknown field {k!r} (expected one of: {', '.join(allowed)})")
    for k in required:
        if k not in obj:
            raise ctx.err(where, f"missing required field {k!r}")


_TOP = ("format", "version", "name", "description", "alphabet", "d_model", "residual", "n_layers", "arrays",
        "token_embedding", "positional", "layers", "outputs", "inv_tau")
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
    ctx = _Ctx(path, npz)
    _check_keys(doc, _TOP, ctx, "<top>", required=("format", "version", "alphabet", "d_model", "token_embedding",
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
    E = _array(doc["token_embedding"], ctx, "token_embedding", 2, (len(alph) + 1, d), ("token", "residual"))
    # positional
    features: list[PEFeature] = []
    table = None
    pos = doc.get("positional")
    if pos is not None:
        _check_keys(pos, ("features", "table"), ctx, "positional")
        feats = pos.get("features", [])
        if not isinstance(feats, list):
            raise ctx.err("positional.features", "expected a list")
        for i, fo in enumerate(feats):
            w = f"positional.features[{i}]"
            _check_keys(fo, _FEAT, ctx, w, required=("family",))
            fam = fo["family"]
            if fam not in PE_FAMILIES:
                raise ctx.err(w + ".family", f"unknown positional family {fam!r} (known: {', '.join(PE_FAMILIES)})")
            if ("coordinate" in fo) == ("vector" in fo):
                raise ctx.err(w, "give exactly one of \"coordinate\" (with optional \"coefficient\") and \"vector\"")
            if "vector" in fo:
                if "coefficient" in fo:
                    raise ctx.err(w + ".coefficient", "only with \"coordinate\"")
                vec = _array(fo["vector"], ctx, w + ".vector", 1, (d,), ("residual",))
            else:
                c = _index(fo["coordinate"], "residual", d, ctx, w + ".coordinate")
                vec = zeros(d)
                vec[c] = _exact(fo.get("coefficient", 1), ctx, w + ".coefficient")
            fn, omega, over_n = "", Fraction(0), False
            if fam == "sinusoidal":
                fn = fo.get("fn")
                if fn not in ("sin", "cos"):
                    raise ctx.err(w + ".fn", f"expected \"sin\" or \"cos\", got {json.dumps(fn)}")
                if "omega" not in fo:
                    raise ctx.err(w, "missing required field 'omega' (sinusoidal frequency)")
                omega = _exact(fo["omega"], ctx, w + ".omega")
                over_n = fo.get("over_n", False)
                if not isinstance(over_n, bool):
                    raise ctx.err(w + ".over_n", "expected true or false")
            else:
                for k in ("fn", "omega", "over_n"):
                    if k in fo:
                        raise ctx.err(w + "." + k, f"only for the sinusoidal family, not {fam!r}")
            features.append(PEFeature(family=fam, vector=vec, fn=fn, omega=omega, over_n=over_n))
        if "table" in pos:
            table = _array(pos["table"], ctx, "positional.table", 2, (None, d), ("plain", "residual"))
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
        _check_keys(lo, ("heads", "mlp"), ctx, w)
        hl = lo.get("heads", [])
        if not isinstance(hl, list):
            raise ctx.err(w + ".heads", "expected a list of heads")
        heads = []
        for hi, ho in enumerate(hl):
            hw = f"{w}.heads[{hi}]"
            _check_keys(ho, _HEAD, ctx, hw, required=("W_Q", "W_K", "W_V", "W_O"))
            name = ho.get("name", f"L{li}.H{hi}")
            if not isinstance(name, str) or not name:
                raise ctx.err(hw + ".name", "expected a non-empty string")
            if name in names:
                raise ctx.err(hw + ".name", f"head name {name!r} is used twice")
            names.add(name)
            WQ = _array(ho["W_Q"], ctx, hw + ".W_Q", 2, (d, None), ("residual", "plain"))
            k = WQ.shape[1]
            WK = _array(ho["W_K"], ctx, hw + ".W_K", 2, (d, k), ("residual", "plain"))
            WV = _array(ho["W_V"], ctx, hw + ".W_V", 2, (d, None), ("residual", "plain"))
            dv = WV.shape[1]
            WO = _array(ho["W_O"], ctx, hw + ".W_O", 2, (dv, d), ("plain", "residual"))
            bq = _array(ho["b_Q"], ctx, hw + ".b_Q", 1, (k,)) if "b_Q" in ho else None
            bk = _array(ho["b_K"], ctx, hw + ".b_K", 1, (k,)) if "b_K" in ho else None
            bv = _array(ho["b_V"], ctx, hw + ".b_V", 1, (dv,)) if "b_V" in ho else None
            bo = _array(ho["b_O"], ctx, hw + ".b_O", 1, (d,), ("residual",)) if "b_O" in ho else None
            scale = _exact(ho.get("scale", 1), ctx, hw + ".scale")
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
            _check_keys(mo, _MLP, ctx, mw, required=("W1", "W2"))
            name = mo.get("name", f"mlp{mi}")
            if not isinstance(name, str) or not name:
                raise ctx.err(mw + ".name", "expected a non-empty string")
            W1 = _array(mo["W1"], ctx, mw + ".W1", 2, (d, None), ("residual", "plain"))
            h = W1.shape[1]
            b1 = _array(mo["b1"], ctx, mw + ".b1", 1, (h,)) if "b1" in mo else zeros(h)
            W2 = _array(mo["W2"], ctx, mw + ".W2", 2, (h, d), ("plain", "residual"))
            b2 = _array(mo["b2"], ctx, mw + ".b2", 1, (d,), ("residual",)) if "b2" in mo else zeros(d)
            mlps.append(MLPSpec(name=name, W1=W1, b1=b1, W2=W2, b2=b2))
        layers.append(LayerSpec(heads=heads, mlps=mlps))
    # outputs
    outs_doc = doc["outputs"]
    if not isinstance(outs_doc, list) or not outs_doc:
        raise ctx.err("outputs", "expected a non-empty list of outputs")
    outputs = []
    onames = set()
    for oi, oo in enumerate(outs_doc):
        w = f"outputs[{oi}]"
        _check_keys(oo, _OUT, ctx, w, required=("name", "type"))
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
            coords = [_index(c, "residual", d, ctx, f"{w}.coordinates[{t}]") for t, c in enumerate(cl)]
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
            coords = [_index(oo["coordinate"], "residual", d, ctx, w + ".coordinate")]
            classes = []
            if "classes" in oo:
                raise ctx.err(w + ".classes", "only for categorical outputs")
            if typ == "boolean":
                thr = _exact(oo.get("threshold", "1/2"), ctx, w + ".threshold")
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
        inv_tau = _exact(doc["inv_tau"], ctx, "inv_tau")
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
    try:
        raw = p.read_bytes()
    except OSError as e:
        raise ModelFormatError(f"{p}: cannot read ({e.strerror or e})") from None
    try:
        doc = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise ModelFormatError(f"{p}: not UTF-8 text (a model file is JSON)") from None
    except json.JSONDecodeError as e:
        raise ModelFormatError(f"{p}:{e.lineno}:{e.colno}: not valid JSON ({e.msg})") from None
    h = hashlib.sha256(raw)
    npz = None
    if isinstance(doc, dict) and "arrays" in doc:
        a = doc["arrays"]
        if not isinstance(a, str) or not a:
            raise ModelFormatError(f"{p}: arrays: expected the name of an .npz file")
        ap = (p.parent / a)
        try:
            ab = ap.read_bytes()
            with np.load(ap, allow_pickle=False) as z:
                npz = {k: np.array(z[k]) for k in z.files}
        except (OSError, ValueError) as e:
            raise ModelFormatError(f"{p}: arrays: cannot read {ap} ({getattr(e, 'strerror', None) or e})") from None
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


# ---------------------------------------------------------------------------------------------
# export


#: positional names of :mod:`softhard.constructions.weights` → (coordinate, family) pairs
_KNOWN_PE = {
    "pos=j/n, rpos=(n+1-j)/n": (("pos", "j/n"), ("rpos", "(n+1-j)/n")),
    "pos=j, rpos=n+1-j": (("pos", "j"), ("rpos", "n+1-j")),
}


def _num(x: float):
    x = float(x)
    return int(x) if x.is_integer() and abs(x) < 2**53 else x


def _mat(a: np.ndarray) -> list:
    return [[_num(v) for v in row] for row in np.asarray(a, dtype=np.float64)]


def export_transformer(tr: Transformer, *, name: str = "exported", description: str = "",
                       table_n_max: int | None = None, at: str = "all") -> dict:
    """Export a float :class:`Transformer` (e.g. a temporal-logic construction) to a model
    document (dict, JSON-ready).

    The positional embedding is written as named families when ``tr.positional_name`` is one of
    the constructions' (``pos=j/n, rpos=(n+1-j)/n`` → ``j/n`` and ``(n+1-j)/n``; regime U →
    ``j`` and ``n+1-j``), otherwise as a table up to ``table_n_max`` (which must then be given,
    and the embedding must not depend on n).  Every output coordinate becomes a boolean output
    read at ``at``.  Raises :class:`ModelFormatError` if the positional embedding cannot be
    represented.
    """
    d = tr.d
    doc: dict[str, Any] = {"format": FORMAT, "version": VERSION, "name": name, "description": description,
                           "alphabet": list(tr.alphabet), "d_model": d, "residual": list(tr.labels),
                           "n_layers": len(tr.blocks), "token_embedding": _mat(tr.token_embedding)}
    known = _KNOWN_PE.get(tr.positional_name)
    if known is not None:
        feats = []
        for coord, fam in known:
            if coord not in tr.labels:
                raise ModelFormatError(f"export: positional coordinate {coord!r} missing")
            feats.append({"family": fam, "coordinate": coord})
        # check the families reproduce the embedding
        for n in (1, 2, 7):
            P = tr.positional(n)
            Q = np.zeros_like(P)
            for coord, fam in known:
                f = PEFeature(family=fam, vector=zeros(d))
                Q[1:, tr.labels.index(coord)] = [float(family_value(f, j, n)) for j in range(1, n + 1)]
            if not np.array_equal(P, Q):
                raise ModelFormatError(f"export: positional embedding {tr.positional_name!r} does not match its families")
        doc["positional"] = {"features": feats}
    else:
        if table_n_max is None:
            raise ModelFormatError(f"export: positional embedding {tr.positional_name!r} is not a known family; "
                                   "give table_n_max to export it as a table")
        T = tr.positional(table_n_max)
        for n in (1, max(1, table_n_max // 2)):
            if not np.array_equal(tr.positional(n), T[: n + 1]):
                raise ModelFormatError("export: the positional embedding depends on n; it cannot be written as a table")
        if np.any(T):
            doc["positional"] = {"table": _mat(T)}
    layers = []
    for blk in tr.blocks:
        for m in blk.mlps:
            if not isinstance(m, MLP):  # e.g. the layer norm of an ``ln`` comparator (counting)
                raise ModelFormatError(f"export: sublayer {m.name!r} ({type(m).__name__}) is not a ReLU MLP; "
                                       "the model format has no layer normalisation")
        heads = [{"name": h.name, "W_Q": _mat(h.W_Q), "W_K": _mat(h.W_K), "W_V": _mat(h.W_V), "W_O": _mat(h.W_O),
                  "mask": h.mask, "rule": h.rule} for h in blk.heads]
        mlps = [{"name": m.name, "W1": _mat(m.W1), "b1": [_num(v) for v in m.b1], "W2": _mat(m.W2),
                 "b2": [_num(v) for v in m.b2]} for m in blk.mlps]
        layers.append({"heads": heads, "mlp": mlps})
    doc["layers"] = layers
    doc["outputs"] = [{"name": lab, "type": "boolean", "coordinate": lab, "at": at} for lab in tr.outputs]
    return doc


def write_model(doc: dict, path: str | os.PathLike) -> Path:
    """Write a model document as indented JSON (floats via ``repr``: exact round trip)."""
    p = Path(path)
    p.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    return p
