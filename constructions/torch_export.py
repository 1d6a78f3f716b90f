"""Export an explicit transformer (:class:`~softhard.constructions.transformer.Transformer`: a
formula's construction, a model file's hard model, a Tracr export's) as a TorchScript program
that runs without softhard (docs/torch.md).

The program (``torch.jit.load(FILE)``) is ``forward(ids, hard: bool, inv_tau: float) -> x``:
``ids`` (B, n+1) int64 token ids with column 0 = BOS (id 0) and id k = ``vocab[k]``; ``x`` the
final residual stream (B, n+1, d) in float64.  ``hard=True`` runs every head with its hard rule
(AHA: the average over the positions attaining the row's maximum score, exact float equality;
UHA-leftmost/rightmost: the first/last of them), ``hard=False`` softmax at inverse temperature
``inv_tau`` (the program's default, ``default_inv_tau``, is stored beside it).  Masks: BOS is
always attendable and the BOS row attends to BOS only, as in softhard.  The positional embedding
is a precomputed table per length ``n ≤ n_max`` (``pos[n, j]``), so words longer than ``n_max``
are rejected.  A sidecar ``FILE.json`` documents the vocabulary, the residual labels, and how to
read each output (coordinate(s), threshold, class names, position).

Sublayers exported: attention blocks (heads in parallel, then the residual add), residual ReLU
MLPs, layer norms of model files and the counting construction's comparator layer norm.
"""

from __future__ import annotations

import json
from contextlib import contextmanager
from pathlib import Path
from typing import List

import numpy as np
import torch
from torch import nn

from .counting import LayerNorm as CountingLayerNorm
from .errors import ModelFormatError, ParameterError
from .engine import forward
from .transformer import MLP, Head, ResidualLayerNorm, Transformer

MASK_CODES = {"none": 0, "past": 1, "strict_past": 2, "future": 3, "strict_future": 4}
RULE_CODES = {"AHA": 0, "UHA-leftmost": 1, "UHA-rightmost": 2}
#: longest table the export precomputes (memory (n_max+1)^2·d doubles)
MAX_EXPORT_LEN = 512


def _t(a) -> torch.Tensor:
    return torch.tensor(np.asarray(a, dtype=np.float64), dtype=torch.float64)


class TorchHead(nn.Module):
    """One head: ``W_Q`` (d, k), ``W_K`` (d, k), ``W_V`` (d, dv), ``W_O`` (dv, d); mask and rule codes."""

    def __init__(self, h: Head):
        super().__init__()
        self.register_buffer("WQ", _t(h.W_Q))
        self.register_buffer("WK", _t(h.W_K))
        self.register_buffer("WV", _t(h.W_V))
        self.register_buffer("WO", _t(h.W_O))
        self.mask = MASK_CODES[h.mask]
        self.rule = RULE_CODES[h.rule]

    def attendable(self, N: int) -> torch.Tensor:
        i = torch.arange(N).unsqueeze(1)
        j = torch.arange(N).unsqueeze(0)
        if self.mask == 1:
            m = j <= i
        elif self.mask == 2:
            m = j < i
        elif self.mask == 3:
            m = j >= i
        elif self.mask == 4:
            m = j > i
        else:
            m = torch.ones(N, N, dtype=torch.bool)
        m = m.clone()
        m[0, :] = False
        m[:, 0] = True
        return m

    def forward(self, x: torch.Tensor, hard: bool, inv_tau: float) -> torch.Tensor:
        N = x.shape[1]
        S = torch.matmul(torch.matmul(x, self.WQ), torch.matmul(x, self.WK).transpose(1, 2))
        att = self.attendable(N).unsqueeze(0)
        neg = torch.full_like(S, float("-inf"))
        Sm = torch.where(att, S, neg)
        V = torch.matmul(x, self.WV)
        if hard:
            top = Sm.max(dim=-1, keepdim=True).values
            A = (Sm == top) & att
            if self.rule == 0:
                w = A.to(torch.float64)
                w = w / w.sum(dim=-1, keepdim=True)
            else:
                Ai = A.to(torch.int64)
                if self.rule == 1:
                    idx = torch.argmax(Ai, dim=-1)
                else:
                    idx = N - 1 - torch.argmax(torch.flip(Ai, [-1]), dim=-1)
                w = torch.nn.functional.one_hot(idx, N).to(torch.float64)
        else:
            w = torch.softmax(Sm * inv_tau, dim=-1)
        return torch.matmul(torch.matmul(w, V), self.WO)


class TorchAttention(nn.Module):
    """A block's heads, run in parallel on the same input, then the residual add."""

    def __init__(self, heads: List[Head]):
        super().__init__()
        self.heads = nn.ModuleList([TorchHead(h) for h in heads])

    def forward(self, x: torch.Tensor, hard: bool, inv_tau: float) -> torch.Tensor:
        upd = torch.zeros_like(x)
        for h in self.heads:
            upd = upd + h(x, hard, inv_tau)
        return x + upd


class TorchMLP(nn.Module):
    """``x + relu(x W1 + b1) W2 + b2``."""

    def __init__(self, m: MLP):
        super().__init__()
        for k in ("W1", "b1", "W2", "b2"):
            self.register_buffer(k, _t(getattr(m, k)))

    def forward(self, x: torch.Tensor, hard: bool, inv_tau: float) -> torch.Tensor:
        return x + torch.matmul(torch.relu(torch.matmul(x, self.W1) + self.b1), self.W2) + self.b2


class TorchLayerNorm(nn.Module):
    """``x[target] ← γ ⊙ (x[coords] − μ)/√(v + eps) + β`` (biased variance)."""

    def __init__(self, ln: ResidualLayerNorm):
        super().__init__()
        self.register_buffer("coords", torch.tensor(np.asarray(ln.coords), dtype=torch.int64))
        self.register_buffer("target", torch.tensor(np.asarray(ln.target), dtype=torch.int64))
        self.register_buffer("gamma", _t(ln.gamma))
        self.register_buffer("beta", _t(ln.beta))
        self.eps = float(ln.eps)

    def forward(self, x: torch.Tensor, hard: bool, inv_tau: float) -> torch.Tensor:
        z = x.index_select(2, self.coords)
        c = z - z.mean(dim=-1, keepdim=True)
        var = (c * c).mean(dim=-1, keepdim=True)
        y = c * (1.0 / torch.sqrt(var + self.eps)) * self.gamma + self.beta
        return x.index_copy(2, self.target, y)


class TorchCountingLN(nn.Module):
    """The counting comparator: ``x[outs[k]] += F_k/√(F_k² + eps)`` with ``F = x W``."""

    def __init__(self, ln: CountingLayerNorm):
        super().__init__()
        self.register_buffer("W", _t(ln.W))
        self.register_buffer("outs", torch.tensor(np.asarray(ln.outs), dtype=torch.int64))
        self.eps = float(ln.eps)

    def forward(self, x: torch.Tensor, hard: bool, inv_tau: float) -> torch.Tensor:
        F = torch.matmul(x, self.W)
        return x.index_add(2, self.outs, F / torch.sqrt(F * F + self.eps))


class ExportedTransformer(nn.Module):
    """The exported program (module docstring)."""

    def __init__(self, tr: Transformer, n_max: int, default_inv_tau: float):
        super().__init__()
        self.register_buffer("tok", _t(tr.token_embedding))
        pos = np.zeros((n_max + 1, n_max + 1, tr.d))
        for n in range(1, n_max + 1):
            pos[n, : n + 1] = tr.positional(n)
        self.register_buffer("pos", _t(pos))
        self.n_max = n_max
        self.default_inv_tau = float(default_inv_tau)
        steps: list[nn.Module] = []
        for bi, blk in enumerate(tr.blocks):
            if blk.heads:
                steps.append(TorchAttention(blk.heads))
            for m in blk.mlps:
                if isinstance(m, MLP):
                    steps.append(TorchMLP(m))
                elif isinstance(m, ResidualLayerNorm):
                    steps.append(TorchLayerNorm(m))
                elif isinstance(m, CountingLayerNorm):
                    steps.append(TorchCountingLN(m))
                else:
                    raise ModelFormatError(f"export: block {bi} sublayer {getattr(m, 'name', '?')} "
                                           f"({type(m).__name__}) has no torch counterpart")
        self.steps = nn.ModuleList(steps)

    def forward(self, ids: torch.Tensor, hard: bool = False, inv_tau: float = -1.0) -> torch.Tensor:
        n = ids.shape[1] - 1
        if n < 1 or n > self.n_max:
            raise ValueError("word length must be in [1, n_max]")
        t = inv_tau if inv_tau > 0 else self.default_inv_tau
        x = self.tok[ids] + self.pos[n, : n + 1].unsqueeze(0)
        for s in self.steps:
            x = s(x, hard, t)
        return x


def export_torch(tr: Transformer, path: str | Path, *, n_max: int, inv_tau: float, outputs: list[dict],
                 source: dict) -> tuple[Path, Path]:
    """Write the TorchScript program ``path`` and its sidecar ``path + ".json"`` (module
    docstring).  ``outputs``: how to read each output (name, coordinates, type, threshold,
    classes, at); ``source``: what was exported (kind, file, τ and where it came from).
    Raises :class:`ParameterError` for ``n_max`` outside [1, :data:`MAX_EXPORT_LEN`]."""
    if not 1 <= n_max <= MAX_EXPORT_LEN:
        raise ParameterError(f"export: --n-max must be in [1, {MAX_EXPORT_LEN}] (the positional table is "
                             f"(n_max+1)^2 x d doubles), got {n_max}")
    mod = torch.jit.script(ExportedTransformer(tr, n_max, inv_tau))
    p = Path(path)
    mod.save(str(p))
    side = Path(str(p) + ".json")
    side.write_text(json.dumps({
        "format": "softhard-torch-export", "version": 1,
        "load": "m = torch.jit.load(FILE); x = m(ids, hard, inv_tau)  # x: (B, n+1, d) float64",
        "inputs": "ids: int64 (B, n+1); column 0 is BOS (id 0); id k is vocab[k]; all words of one length n, "
                  f"1 <= n <= {n_max}",
        "vocab": ["BOS", *tr.alphabet], "residual": list(tr.labels), "n_max": n_max,
        "default_inv_tau": float(inv_tau),
        "modes": {"soft": "hard=False: softmax at inv_tau (<= 0: default_inv_tau)",
                  "hard": "hard=True: AHA average over the row's maximal scores (exact float equality); "
                          "UHA-leftmost/-rightmost the first/last of them"},
        "outputs": outputs, "source": source}, indent=1) + "\n", encoding="utf-8")
    return p, side


def rounding_allowance(tr: Transformer, x_max: float, n: int, inv_tau: float) -> float:
    """First-order allowance for two float64 evaluations of the same transformer that differ only in
    the order of their roundings (u = 2^-53): each sum of at most ``L = n + 1 + d + h`` terms of size
    ≤ ``x_max²`` moves by ``L·u·x_max²``, softmax turns a score change δ into a weight change of at
    most ``inv_tau·δ`` times the value size, and every sublayer adds its own; summed over the
    sublayers.  An estimate of the order of the discrepancy, not a rigorous bound."""
    u = 2.0 ** -53
    steps = sum(len(b.mlps) + (1 if b.heads else 0) for b in tr.blocks) + 1
    h = max([m.W1.shape[1] for b in tr.blocks for m in b.mlps if isinstance(m, MLP)] + [1])
    L = n + 1 + tr.d + h
    s = max(1.0, x_max)
    return 16.0 * steps * L * u * s * s * (1.0 + inv_tau * s * s)


@contextmanager
def one_thread():
    """Run the enclosed torch operations on one intra-op thread, then restore the thread count.

    The exported programs work on (B, n+1, d) tensors with B = 1 and d of a few dozen: splitting
    such operations over threads only adds synchronisation, and on a loaded machine OpenMP's
    waiting threads spin — :func:`check_export` took 3.6x the CPU time with two threads than with
    one (2 cores, shared).  The results are the same operations; only the summation order inside
    a reduction may differ, which :func:`rounding_allowance` covers."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def check_export(path: str | Path, tr: Transformer, inv_tau: float, n_max: int, seed: int = 0) -> dict:
    """Reload the program at ``path`` and compare it, soft (at ``inv_tau``) and hard, with the NumPy
    forward pass on test words (the words of lengths 1 and 2, at most 6 each, and a random word at
    lengths 8 and n_max); ``ok`` when every difference is within
    :func:`rounding_allowance`.  Returns ``{"words", "max_abs_difference", "allowance", "ok", "worst"}``."""
    m = torch.jit.load(str(path))
    rng = np.random.default_rng(seed)
    k = len(tr.alphabet)
    words = []
    for n in range(1, min(2, n_max) + 1):
        ids = np.array(np.meshgrid(*[np.arange(1, k + 1)] * n)).reshape(n, -1).T[:6]
        words.extend(ids)
    for n in sorted({min(8, n_max), n_max}):
        words.extend(rng.integers(1, k + 1, size=(1, n)))
    with one_thread():
        worst, allow_at, ok, worst_word = _compare(m, tr, words, inv_tau)
    return {"words": len(words), "max_abs_difference": worst, "allowance": allow_at, "ok": ok,
            "worst": {"word": worst_word}}


def _compare(m, tr: Transformer, words: list, inv_tau: float) -> tuple[float, float, bool, list | None]:
    """:func:`check_export`'s loop: ``(largest difference, its allowance, all within?, its word)``."""
    worst, allow_at, ok = 0.0, 0.0, True
    worst_word = None
    for ids in words:
        tok = np.asarray(ids, dtype=np.int64)[None]
        tids = torch.tensor(np.concatenate([[0], tok[0]]))[None]
        for hard in (False, True):
            if hard:
                ref = forward(tr, tok, mode="hard").x[0]
            else:
                ref = forward(tr, tok, mode="soft", inv_tau=inv_tau).x[0]
            with torch.no_grad():
                got = m(tids, hard, inv_tau)[0].numpy()
            diff = float(np.max(np.abs(got - ref))) if ref.size else 0.0
            allow = rounding_allowance(tr, float(np.max(np.abs(ref))), tok.shape[1], 0.0 if hard else inv_tau)
            if not diff <= allow:
                ok = False
            if diff >= worst:
                worst, allow_at, worst_word = diff, allow, [tr.alphabet[t - 1] for t in tok[0]]
    return worst, allow_at, ok, worst_word
