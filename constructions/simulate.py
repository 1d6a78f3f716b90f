"""Numeric runs of the hard and soft transformers on many inputs, reporting what each head did.

This module only *observes*: per attention head (graph node) and word length, the largest leak
``δ`` seen, where it was seen, the largest attention-output error ``|soft − AHA|`` on the same
residual stream, and a rigorous float-rounding allowance for the leak; plus, per word, whether the
soft model's clean output equals the hard model's.  Comparison with the symbolic bounds happens in
:mod:`softhard.bounds.confirm` (constructions imports nothing of ours; ARCHITECTURE.md).

A numeric run never proves anything: it confirms or refutes a bound (THEORY §7, §8).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Callable, Iterable, Sequence

import numpy as np

from .model import Transformer, forward

U64 = np.finfo(np.float64).eps / 2  # unit roundoff of float64


def all_words(alphabet: Sequence[str], n: int) -> list[tuple[str, ...]]:
    """All ``|alphabet|^n`` words of length ``n`` (lexicographic)."""
    return list(itertools.product(alphabet, repeat=n))


def random_words(alphabet: Sequence[str], count: int, n_max: int, seed: int = 0,
                 n_min: int = 1) -> list[tuple[str, ...]]:
    """``count`` words with lengths uniform in ``[n_min, n_max]`` and symbols uniform (fixed seed)."""
    rng = np.random.default_rng(seed)
    lens = rng.integers(n_min, n_max + 1, size=count)
    alph = np.array(list(alphabet), dtype=object)
    return [tuple(alph[rng.integers(0, len(alphabet), size=k)]) for k in lens]


def periodic_words(alphabet: Sequence[str], n: int, max_period: int = 3) -> list[tuple[str, ...]]:
    """Words ``(u)^{n/|u|}`` (truncated to length n) for every ``u`` with ``|u| ≤ max_period``.

    The candidate pool of the adversarial search: a head's key is constant or periodic on these,
    which is what attains the leak bounds of THEORY §4 (a long run of key = 1, or key ≡ 0).
    """
    out: dict[tuple[str, ...], None] = {}
    for p in range(1, max_period + 1):
        for u in itertools.product(alphabet, repeat=p):
            w = tuple((u * (n // p + 1))[:n])
            out[w] = None
    return list(out)


def group_by_length(words: Iterable[Sequence[str]]) -> dict[int, list[tuple[str, ...]]]:
    """``{n: [words of length n]}`` in increasing n."""
    d: dict[int, list[tuple[str, ...]]] = {}
    for w in words:
        d.setdefault(len(w), []).append(tuple(w))
    return dict(sorted(d.items()))


@dataclass
class HeadObservation:
    """Worst case one head showed on the words of one length ``n``.

    ``leak``: largest observed leak; ``word``/``row``: where (row = query position, 1-based);
    ``output_error``: largest ``|soft − hard|`` of the head's raw output; ``allowance_rel``: the
    relative float64 rounding allowance for the leak (see :func:`leak_rounding_allowance`);
    ``inputs``: number of words.
    """

    node: str
    n: int
    inv_tau: float
    inputs: int
    leak: float
    word: tuple[str, ...]
    row: int
    output_error: float
    allowance_rel: float
    path: str


@dataclass
class RunSummary:
    """Per head and length: :class:`HeadObservation`; per word: clean outputs equal?"""

    heads: dict[str, dict[int, HeadObservation]] = field(default_factory=dict)
    words: int = 0
    mismatches: list[tuple[tuple[str, ...], int]] = field(default_factory=list)  # (word, position)
    max_output_deviation: float = 0.0  # max |soft clean output − hard output| (float rounding only)

    def merge(self, other: "RunSummary") -> None:
        for node, per_n in other.heads.items():
            mine = self.heads.setdefault(node, {})
            for k, ob in per_n.items():
                if k not in mine:
                    mine[k] = ob
                else:
                    cur = mine[k]
                    inputs = cur.inputs + ob.inputs
                    best = ob if ob.leak > cur.leak else cur
                    mine[k] = HeadObservation(**{**best.__dict__, "inputs": inputs,
                                                 "output_error": max(cur.output_error, ob.output_error),
                                                 "allowance_rel": max(cur.allowance_rel, ob.allowance_rel)})
        self.words += other.words
        self.mismatches.extend(other.mismatches)
        self.max_output_deviation = max(self.max_output_deviation, other.max_output_deviation)


def leak_rounding_allowance(score_scale: float, key_dim: int, inv_tau: float, N: int) -> float:
    """Relative float64 rounding allowance for a computed leak ``S/(a+S)``.

    Standard forward error analysis (Higham, *Accuracy and Stability*, §3): scores are dot products
    of length ``k`` of rounded inputs, so ``|ŝ − s| ≤ γ_{k+2}·Σ|q_c k_c| ≤ γ_{k+2}·score_scale``
    with ``γ_m = m·u/(1 − m·u)``; an exponent ``(s_j − s*)/τ`` is then off by at most
    ``2·|ŝ−s|/τ + 2u·|x|`` with ``|x| ≤ 2·score_scale/τ``, which perturbs each ``e^x`` by a relative
    ``expm1(·)``; summing ``N`` positive terms and one division add ``(N+3)u``.  The structured
    path's log-depth scan adds at most ``4u·(1 + ln N)`` per level, ``⌈log₂ N⌉ + 1`` levels.
    """
    m = key_dim + 2
    gamma = m * U64 / (1 - m * U64)
    eps_s = gamma * score_scale
    levels = int(np.ceil(np.log2(max(N, 2)))) + 1
    dx = 2 * eps_s * inv_tau + 2 * U64 * (2 * score_scale * inv_tau) + levels * 4 * U64 * (1 + np.log(N))
    return float(np.expm1(dx) + (N + 3) * U64)


def observe(model: Transformer, words: Sequence[Sequence[str]], inv_tau: float | Callable[[int], float],
            *, batch: int = 512, path: str = "auto") -> RunSummary:
    """Run ``model`` hard and soft on ``words`` (any lengths) and summarise per head and length.

    ``inv_tau``: a number, or a function of the word length ``n`` (regime T's ``1/τ(n)``).
    The soft model's clean output (coordinate ``model.outputs[0]``) is compared with the hard one
    at every position: a position where they fall on different sides of 1/2 is a mismatch;
    ``max_output_deviation`` records the largest difference (float rounding in the clean-up MLPs).
    Shapes: words are sequences of alphabet symbols.  Raises ``ParameterError`` for bad input.
    """
    summary = RunSummary()
    out_ix = model.index(model.outputs[0])
    for n, ws in group_by_length(words).items():
        it = float(inv_tau(n) if callable(inv_tau) else inv_tau)
        for b0 in range(0, len(ws), batch):
            chunk = ws[b0:b0 + batch]
            tok = model.encode(chunk)
            hard = forward(model, tok, mode="hard", path=path)
            soft = forward(model, tok, mode="soft", inv_tau=it, path=path)
            part = RunSummary(words=len(chunk))
            for name, tr in soft.heads.items():
                leak = tr.leak[:, 1:]
                bi, ri = np.unravel_index(int(np.argmax(leak)), leak.shape)
                err = float(np.max(np.abs(tr.soft[:, 1:] - tr.hard[:, 1:]))) if tr.soft.size else 0.0
                part.heads[name] = {n: HeadObservation(
                    node=name, n=n, inv_tau=it, inputs=len(chunk), leak=float(leak[bi, ri]),
                    word=tuple(chunk[bi]), row=int(ri) + 1, output_error=err,
                    allowance_rel=leak_rounding_allowance(tr.score_scale, tr.key_dim, it, n + 1), path=tr.path)}
            hs, ss = hard.x[:, 1:, out_ix], soft.x[:, 1:, out_ix]
            part.max_output_deviation = float(np.max(np.abs(hs - ss)))
            bad = np.argwhere((ss > 0.5) != (hs > 0.5))
            part.mismatches.extend((tuple(chunk[b]), int(p) + 1) for b, p in bad[:100])
            summary.merge(part)
    return summary


def adversarial_words(model: Transformer, n: int, inv_tau: float, *, max_period: int = 3) -> dict[str, tuple[str, ...]]:
    """Per head, the periodic word of length ``n`` (see :func:`periodic_words`) with the largest leak.

    This is the adversarial family of THEORY §4 found by search rather than by hand, so it works
    for any formula: for each head it picks the pattern whose key comes closest to "a long run of
    b = 1" (or b ≡ 0).  Returns ``{head name: word}``.
    """
    cands = periodic_words(model.alphabet, n, max_period)
    tok = model.encode(cands)
    soft = forward(model, tok, mode="soft", inv_tau=inv_tau)
    best: dict[str, tuple[str, ...]] = {}
    for name, tr in soft.heads.items():
        k = int(np.argmax(tr.leak[:, 1:].max(axis=1)))
        best[name] = cands[k]
    return best
