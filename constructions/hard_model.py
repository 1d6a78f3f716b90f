"""The exact hard-attention model of a model file (THEORY §0, §6).

:class:`ModelSpec` is a validated model file (:func:`softhard.constructions.modelfile.parse_model`)
with every weight an exact rational; :meth:`ModelSpec.canonical` folds biases (into an appended
``__one__`` coordinate, 1 at every position) and keeps ``scale`` exact, giving the
:class:`HardModel` the analyses run on; :meth:`HardModel.transformer` gives the float
:class:`~softhard.constructions.transformer.Transformer` that
:func:`~softhard.constructions.engine.forward` runs hard and soft.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Sequence

import numpy as np

from .errors import ModelFormatError
from .positional import PEFeature, family_value
from .transformer import MLP, Block, Head, ResidualLayerNorm, Transformer

ONE = "__one__"
POS = "__pos__"


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


#: where a layer norm acts inside a layer: before the heads (pre-norm of attention), after the
#: heads' residual add (post-norm of attention, then pre-norm of the MLP) or after the MLPs
LN_POINTS = ("before_heads", "after_heads", "after_mlps")


@dataclass
class LNSpec:
    """A layer norm sublayer with exact parameters (THEORY §6, docs/models.md "Layer norm").

    ``x[target] ← γ ⊙ (x[coords] − μ)/√(v + eps) + β`` at every position (BOS included), with
    ``μ``, ``v`` the mean and (biased) variance of ``x[coords]``; ``coords``, ``target``: residual
    indices of equal length m (``target == coords`` for post-norm, disjoint for pre-norm, where
    the heads or MLP read ``target``); ``gamma``, ``beta``: (m,) exact; ``eps`` > 0 exact;
    ``point``: one of :data:`LN_POINTS`; ``sublayer``/``position``: as written in the file
    ("attention"/"mlp"/"final", "pre"/"post")."""

    name: str
    coords: list[int]
    target: list[int]
    gamma: np.ndarray
    beta: np.ndarray
    eps: Fraction
    point: str
    sublayer: str = "attention"
    position: str = "post"


@dataclass
class LayerSpec:
    heads: list[HeadSpec]
    mlps: list[MLPSpec]
    lns: list[LNSpec] = field(default_factory=list)


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
    lns: list[list[LNSpec]] = field(default_factory=list)

    @property
    def d(self) -> int:
        return len(self.labels)

    @property
    def has_layernorm(self) -> bool:
        return any(self.lns)

    def lns_at(self, layer: int, point: str) -> list[LNSpec]:
        """The layer norms of ``layer`` at ``point`` (one of :data:`LN_POINTS`), in order."""
        if layer >= len(self.lns):
            return []
        return [ln for ln in self.lns[layer] if ln.point == point]

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
        for li, (hs, ms) in enumerate(zip(self.heads, self.mlps)):
            pre = [_float_ln(ln) for ln in self.lns_at(li, "before_heads")]
            if pre:
                heads_blocks.append(Block(heads=[], mlps=pre))
            heads = [Head(name=h.name, W_Q=_to_float(h.W_Q * h.scale), W_K=_to_float(h.W_K),
                          W_V=_to_float(h.W_V), W_O=_to_float(h.W_O), mask=h.mask, rule=h.rule, node=h.name)
                     for h in hs]
            mlps = [MLP(name=m.name, W1=_to_float(m.W1), b1=_to_float(m.b1), W2=_to_float(m.W2),
                        b2=_to_float(m.b2), nodes=()) for m in ms]
            mlps = ([_float_ln(ln) for ln in self.lns_at(li, "after_heads")] + mlps
                    + [_float_ln(ln) for ln in self.lns_at(li, "after_mlps")])
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


def _float_ln(ln: LNSpec) -> ResidualLayerNorm:
    return ResidualLayerNorm(name=ln.name, coords=np.array(ln.coords, dtype=np.int64),
                             target=np.array(ln.target, dtype=np.int64), gamma=_to_float(ln.gamma),
                             beta=_to_float(ln.beta), eps=float(ln.eps))


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
                     table=table, heads=heads, mlps=mlps, outputs=list(spec.outputs),
                     lns=[list(L.lns) for L in spec.layers])


def _pad_rows(A: np.ndarray, d: int) -> np.ndarray:
    if A.shape[0] == d:
        return A.copy()
    return np.concatenate([A, zeros((d - A.shape[0], A.shape[1]))], axis=0)


def _pad_cols(A: np.ndarray, d: int) -> np.ndarray:
    if A.shape[1] == d:
        return A.copy()
    return np.concatenate([A, zeros((A.shape[0], d - A.shape[1]))], axis=1)
