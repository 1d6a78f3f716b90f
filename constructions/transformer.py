"""Explicit transformers as NumPy arrays: the one numeric representation every construction
compiles to (temporal logic, counting, hand-written and compiled models).

A :class:`Transformer` holds token and positional embeddings, blocks of attention heads
followed by residual ReLU MLPs, and a readout.  Position 0 is BOS and is always attendable
(THEORY §0); :func:`mask_matrix` is the definition of the masks every attention path implements.
:mod:`softhard.constructions.engine` runs a transformer with hard (AHA/UHA) or soft (softmax)
attention.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

from .errors import ModelFormatError, ParameterError

MASKS = ("strict_past", "past", "strict_future", "future", "none")
RULES = ("AHA", "UHA-leftmost", "UHA-rightmost")


def mask_matrix(mask: str, nq: np.ndarray, N: int) -> np.ndarray:
    """Boolean ``(len(nq), N)`` attendability for query indices ``nq`` (BOS column always True).

    The definition every path implements; the dense path only materialises it near the diagonal.
    """
    j = np.arange(N)[None, :]
    i = nq[:, None]
    if mask == "strict_past":
        m = j < i
    elif mask == "past":
        m = j <= i
    elif mask == "strict_future":
        m = j > i
    elif mask == "future":
        m = j >= i
    else:
        m = np.ones((len(nq), N), dtype=bool)
    m = m.copy()
    m[nq == 0, :] = False  # the BOS query row attends to BOS only
    m[:, 0] = True
    return m


@dataclass
class Head:
    """One attention head.

    Shapes: ``W_Q``, ``W_K``: ``(d, k)``; ``W_V``: ``(d, dv)``; ``W_O``: ``(dv, d)``.
    Score ``s_ij = <x_i W_Q, x_j W_K>`` (no extra scaling: fold any 1/√k into ``W_Q``).
    ``mask`` is one of :data:`MASKS` (BOS, position 0, is always attendable); ``rule`` is the
    hard-attention rule, one of :data:`RULES`.  ``node`` names the computation-graph node the
    head implements (or ``None``).
    """

    name: str
    W_Q: np.ndarray
    W_K: np.ndarray
    W_V: np.ndarray
    W_O: np.ndarray
    mask: str = "strict_past"
    rule: str = "AHA"
    node: str | None = None

    def validate(self, d: int, where: str) -> None:
        for nm in ("W_Q", "W_K", "W_V", "W_O"):
            a = getattr(self, nm)
            if not isinstance(a, np.ndarray) or a.ndim != 2:
                raise ModelFormatError(f"{where}.{nm}: expected a 2-d array")
            if not np.all(np.isfinite(a)):
                raise ModelFormatError(f"{where}.{nm}: contains NaN or infinite entries")
        if self.W_Q.shape[0] != d or self.W_K.shape[0] != d or self.W_V.shape[0] != d:
            raise ModelFormatError(f"{where}: W_Q/W_K/W_V must have {d} rows (d_model)")
        if self.W_Q.shape[1] != self.W_K.shape[1]:
            raise ModelFormatError(f"{where}: W_Q has {self.W_Q.shape[1]} columns, W_K {self.W_K.shape[1]}")
        if self.W_O.shape != (self.W_V.shape[1], d):
            raise ModelFormatError(f"{where}.W_O: expected shape {(self.W_V.shape[1], d)}, got {self.W_O.shape}")
        if self.mask not in MASKS:
            raise ModelFormatError(f"{where}.mask: {self.mask!r} is not one of {', '.join(MASKS)}")
        if self.rule not in RULES:
            raise ModelFormatError(f"{where}.rule: {self.rule!r} is not one of {', '.join(RULES)}")


@dataclass
class MLP:
    """Residual ReLU MLP: ``x ← x + relu(x W1 + b1) W2 + b2``.

    Shapes: ``W1 (d, h)``, ``b1 (h,)``, ``W2 (h, d)``, ``b2 (d,)``.
    """

    name: str
    W1: np.ndarray
    b1: np.ndarray
    W2: np.ndarray
    b2: np.ndarray
    nodes: tuple[str, ...] = ()

    def validate(self, d: int, where: str) -> None:
        for nm in ("W1", "b1", "W2", "b2"):
            a = getattr(self, nm)
            if not isinstance(a, np.ndarray):
                raise ModelFormatError(f"{where}.{nm}: expected an array")
            if not np.all(np.isfinite(a)):
                raise ModelFormatError(f"{where}.{nm}: contains NaN or infinite entries")
        h = self.W1.shape[1] if self.W1.ndim == 2 else -1
        if self.W1.shape != (d, h) or self.b1.shape != (h,) or self.W2.shape != (h, d) or self.b2.shape != (d,):
            raise ModelFormatError(
                f"{where}: shapes W1 {self.W1.shape}, b1 {self.b1.shape}, W2 {self.W2.shape}, "
                f"b2 {self.b2.shape} do not fit d_model={d}")

    def __call__(self, x: np.ndarray) -> np.ndarray:
        return x + np.maximum(x @ self.W1 + self.b1, 0.0) @ self.W2 + self.b2


@dataclass
class ResidualLayerNorm:
    """Layer norm of residual coordinates ``coords`` written into ``target`` (a sublayer of a block,
    placed among its MLPs; the engine overwrites ``target`` with it):
    ``x[target] ← gamma ⊙ (x[coords] − mean)/√(var + eps) + beta`` at every position (biased
    variance, as ``torch.nn.LayerNorm``).  Shapes: ``coords``, ``target``, ``gamma``, ``beta``: (m,).
    Not attention: the hard and the soft transformer share it.  docs/models.md "Layer norm"."""

    name: str
    coords: np.ndarray
    target: np.ndarray
    gamma: np.ndarray
    beta: np.ndarray
    eps: float
    nodes: tuple[str, ...] = ()

    def validate(self, d: int, where: str) -> None:
        m = len(self.coords)
        for nm in ("coords", "target", "gamma", "beta"):
            a = getattr(self, nm)
            if not isinstance(a, np.ndarray) or a.shape != (m,):
                raise ModelFormatError(f"{where}.{nm}: expected shape ({m},)")
        if m < 1 or np.any(self.coords < 0) or np.any(self.coords >= d) or np.any(self.target < 0) \
                or np.any(self.target >= d):
            raise ModelFormatError(f"{where}: coordinates must be residual indices below {d}")
        if not (np.all(np.isfinite(self.gamma)) and np.all(np.isfinite(self.beta))):
            raise ModelFormatError(f"{where}: gamma/beta contain NaN or infinite entries")
        if not (math.isfinite(self.eps) and self.eps > 0):
            raise ModelFormatError(f"{where}.eps: must be finite and > 0, got {self.eps!r}")

    def reads(self) -> list[int]:
        """Residual coordinates the layer norm reads."""
        return [int(c) for c in self.coords]

    def normalise(self, cols: list[np.ndarray]) -> list[np.ndarray]:
        """The m normalised columns (each ``(B, N)``) of the columns ``cols`` of ``x[coords]``."""
        X = np.stack(cols, axis=0)
        mu = X.mean(axis=0)
        c = X - mu
        var = (c * c).mean(axis=0)
        r = 1.0 / np.sqrt(var + self.eps)
        return [c[k] * r * self.gamma[k] + self.beta[k] for k in range(len(cols))]

    def __call__(self, x: np.ndarray) -> np.ndarray:
        out = x.copy()
        ys = self.normalise([x[..., int(c)] for c in self.coords])
        for t, y in zip(self.target, ys):
            out[..., int(t)] = y
        return out


@dataclass
class Block:
    """Attention heads (run in parallel on the same input) followed by MLPs (in sequence)."""

    heads: list[Head] = field(default_factory=list)
    mlps: list[MLP] = field(default_factory=list)


PositionalFn = Callable[[int], np.ndarray]


@dataclass
class Transformer:
    """An explicit transformer.

    * ``alphabet``: the input symbols; token id ``t+1`` is ``alphabet[t]``, id 0 is BOS.
    * ``token_embedding``: ``(|alphabet|+1, d)``, row 0 the BOS embedding.
    * ``positional(n)``: ``(n+1, d)`` positional embedding for a word of length ``n`` (row 0 for
      BOS); ``positional_name`` documents the family (e.g. ``"j/n"``), ``bounded`` says whether its
      entries are bounded independently of ``n`` (THEORY §1: regime T vs regime U).
    * ``blocks``: applied in order.
    * ``labels``: one name per residual coordinate.
    * ``outputs``: residual coordinates read out (by label).
    """

    alphabet: tuple[str, ...]
    token_embedding: np.ndarray
    positional: PositionalFn
    blocks: list[Block]
    labels: list[str]
    outputs: list[str]
    positional_name: str = "custom"
    bounded: bool = True
    meta: dict = field(default_factory=dict)

    @property
    def d(self) -> int:
        return self.token_embedding.shape[1]

    def index(self, label: str) -> int:
        try:
            return self.labels.index(label)
        except ValueError:
            raise ModelFormatError(f"no residual coordinate labelled {label!r}") from None

    def validate(self) -> None:
        d = self.d
        if self.token_embedding.shape != (len(self.alphabet) + 1, d):
            raise ModelFormatError(
                f"token_embedding: expected shape {(len(self.alphabet) + 1, d)}, got {self.token_embedding.shape}")
        if len(self.labels) != d:
            raise ModelFormatError(f"labels: {len(self.labels)} labels for d_model={d}")
        for li, blk in enumerate(self.blocks):
            for hi, h in enumerate(blk.heads):
                h.validate(d, f"block {li} head {hi} ({h.name})")
            for mi, m in enumerate(blk.mlps):
                m.validate(d, f"block {li} mlp {mi} ({m.name})")

    def encode(self, words: Sequence[Sequence[str]]) -> np.ndarray:
        """Token ids ``(B, n)`` for words of equal length ``n`` (ids start at 1; 0 is BOS).

        A word may be any sequence of alphabet symbols (a tuple, a list, or a ``str`` when every
        symbol is one character).  Raises :class:`ParameterError` for unequal lengths or a symbol
        outside the alphabet.
        """
        words = list(words)
        lookup = {s: k + 1 for k, s in enumerate(self.alphabet)}
        lengths = {len(w) for w in words}
        if len(lengths) != 1:
            raise ParameterError("encode: all words in a batch must have the same length")
        n = lengths.pop()
        fast = _encode_single_chars(self.alphabet, words, n)
        if fast is not None:
            return fast
        try:
            return np.array([[lookup[s] for s in w] for w in words], dtype=np.int64).reshape(len(words), -1)
        except KeyError as e:
            raise ParameterError(f"symbol {e.args[0]!r} is not in the alphabet {list(self.alphabet)}") from None

    def embed(self, tokens: np.ndarray, dtype=np.float64) -> np.ndarray:
        """Residual stream after embedding: ``(B, n+1, d)``."""
        B, n = tokens.shape
        if n < 1:
            raise ParameterError("n < 1: a word must have at least one symbol")
        ids = np.concatenate([np.zeros((B, 1), dtype=np.int64), tokens], axis=1)
        pe = np.asarray(self.positional(n), dtype=np.float64)
        if pe.shape != (n + 1, self.d):
            raise ModelFormatError(f"positional({n}) returned shape {pe.shape}, expected {(n + 1, self.d)}")
        x = self.token_embedding[ids] + pe[None, :, :]
        return x.astype(dtype, copy=False)


# --------------------------------------------------------------------------------------------
# encoding and embedding helpers


def _encode_single_chars(alphabet: Sequence[str], words: list, n: int) -> np.ndarray | None:
    """Vectorised :meth:`Transformer.encode` when every symbol is one character (else ``None``).

    Each word becomes one ``str`` (``"".join``) whose code points are mapped through a lookup
    table, so a word of 10^6 symbols costs milliseconds instead of a Python loop per symbol.
    """
    if not words or n == 0 or not all(isinstance(s, str) and len(s) == 1 for s in alphabet):
        return None
    cps = np.array([ord(s) for s in alphabet], dtype=np.int64)
    lut = np.zeros(int(cps.max()) + 2, dtype=np.int64)  # 0 = not in the alphabet
    lut[cps] = np.arange(1, len(alphabet) + 1)
    joined = []
    for w in words:
        try:
            s = w if isinstance(w, str) else "".join(w)
        except TypeError:
            return None
        if len(s) != n:  # some element was not a single character: let the general path report it
            return None
        joined.append(s)
    # one decode for the whole batch (a per-word decode cost ~25 µs a word: ISSUE 16)
    cp = np.frombuffer("".join(joined).encode("utf-32-le"), dtype=np.uint32).astype(np.int64)
    np.minimum(cp, len(lut) - 1, out=cp)
    ids = lut[cp]
    if not ids.all():
        flat = int(np.flatnonzero(ids == 0)[0])
        bad = joined[flat // n][flat % n]
        raise ParameterError(f"symbol {bad!r} is not in the alphabet {list(alphabet)}")
    return ids.reshape(len(words), n)
