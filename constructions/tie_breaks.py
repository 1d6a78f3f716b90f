"""The UHA tie-break of THEORY §4 for model files, and the check that it keeps the hard outputs.

For a UHA head (leftmost/rightmost), a tie of the maximum is gap 0 — softmax splits weight over
the tied positions — so :func:`tie_break` adds ``β·p_j`` (``p_j = j/n`` for rightmost, ``−j/n``
for leftmost), which selects the same position and costs gap: ``γ' ≥ min(β/N, γ₀ − β)`` where γ₀
is the gap to the non-maximal positions; ``β = γ₀·N/(N+1)`` gives ``γ' ≥ γ₀/(N+1)``
(:mod:`softhard.constructions.gaps` finds γ₀).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from .exact_balls import exact_engine
from .errors import ParameterError
from .gap_report import GapReport, fd, fs
from .gap_tasks import all_tokens
from .hard_model import ONE, POS, CanonHead, HardModel, MLPSpec, zeros
from .parameters import DEFAULT_EXHAUSTIVE_LIMIT
from .positional import PEFeature
from .words import count_words

# --------------------------------------------------------------------------------------------
# UHA tie-break (THEORY §4)


@dataclass
class TieBreak:
    """One UHA head's tie-break: ``beta`` (exact dyadic), the untied gap γ₀ before, the predicted
    lower bound ``min(β/N, γ₀ − β)`` on the gap after, and the direction (+ for rightmost)."""

    head: str
    beta: Fraction
    gap_untied: Fraction | None
    predicted_gap: Fraction
    sign: int

    def to_json(self) -> dict:
        return {"head": self.head, "beta": fs(self.beta), "gap_before_untied": fs(self.gap_untied),
                "predicted_gap_after": fs(self.predicted_gap), "predicted_gap_after_decimal": fd(self.predicted_gap),
                "term": ("+" if self.sign > 0 else "-") + "beta*j/n"}


def _round_down_dyadic(x: Fraction, bits: int = 20) -> Fraction:
    if x <= 0:
        raise ParameterError("cannot round a non-positive number")
    e = bits - math.floor(math.log2(x))
    return Fraction(math.floor(x * 2**e), 2**e) if e >= 0 else Fraction(math.floor(x / 2 ** (-e)) * 2 ** (-e))


def plan_tie_breaks(rep: GapReport) -> dict[str, Fraction]:
    """β per UHA head whose analysis found a tie: ``β ≤ γ₀·N/(N+1)`` (rounded down to a dyadic
    rational, so it is exact in float64 too); γ₀ None (never a non-maximal competitor) gives β = 1."""
    out = {}
    N = rep.n_max
    for h in rep.heads.values():
        if h.rule != "AHA" and h.ties_max >= 2:
            g0 = h.gap_untied
            target = Fraction(1) if g0 is None else g0 * N / (N + 1)
            out[h.name] = _round_down_dyadic(target)
    return out


def tie_break(hm: HardModel, betas: dict[str, Fraction], n_max: int, gaps: dict[str, Fraction | None] | None = None
              ) -> tuple[HardModel, list[TieBreak]]:
    """The model with ``β·p_j`` added to the scores of the heads in ``betas`` (THEORY §4).

    Adds residual coordinates ``__pos__`` (positional family j/n, 0 at BOS) and ``__one__`` (1 at
    every position, if absent), and to each listed head a query column reading ``__one__`` and a
    key column reading ``__pos__`` with weight ``±β/scale`` (+ for UHA-rightmost, − for leftmost;
    BOS has p = 0, so a tie with BOS goes to the real position for rightmost and to BOS for
    leftmost, as the UHA rule says).  Every other weight is unchanged (padded with zeros).
    ``gaps``: the untied gaps γ₀ for the prediction.  Raises :class:`ParameterError` for an
    unknown head or an AHA head.
    """
    heads_by = {h.name: h for h in hm.all_heads()}
    for name in betas:
        if name not in heads_by:
            raise ParameterError(f"tie-break: no head named {name!r}")
        if heads_by[name].rule == "AHA":
            raise ParameterError(f"tie-break: head {name!r} is AHA (ties are averaged, no tie-break needed)")
    labels = list(hm.labels)
    E = hm.token_embedding
    feats = [PEFeature(f.family, f.vector, f.fn, f.omega, f.over_n) for f in hm.features]
    table = hm.table
    add = []
    if ONE not in labels:
        add.append(ONE)
    if POS not in labels:
        add.append(POS)
    labels += add
    d = len(labels)
    if add:
        extra = zeros((E.shape[0], len(add)))
        if ONE in add:
            extra[:, add.index(ONE)] = Fraction(1)
        E = np.concatenate([E, extra], axis=1)
        for f in feats:
            f.vector = np.concatenate([f.vector, zeros(len(add))])
        if table is not None:
            table = np.concatenate([table, zeros((table.shape[0], len(add)))], axis=1)
    ione, ipos = labels.index(ONE), labels.index(POS)
    if POS in add:
        v = zeros(d)
        v[ipos] = Fraction(1)
        feats.append(PEFeature(family="j/n", vector=v))

    def rows(A):
        return np.concatenate([A, zeros((d - A.shape[0], A.shape[1]))], axis=0) if A.shape[0] < d else A.copy()

    def cols(A):
        return np.concatenate([A, zeros((A.shape[0], d - A.shape[1]))], axis=1) if A.shape[1] < d else A.copy()

    new_heads = []
    infos = []
    for hs in hm.heads:
        nh = []
        for h in hs:
            WQ, WK, WV, WO = rows(h.W_Q), rows(h.W_K), rows(h.W_V), cols(h.W_O)
            beta = Fraction(0)
            if h.name in betas:
                beta = betas[h.name]
                sign = 1 if h.rule == "UHA-rightmost" else -1
                q = zeros((d, 1))
                q[ione, 0] = Fraction(1)
                kc = zeros((d, 1))
                kc[ipos, 0] = sign * beta / h.scale
                WQ = np.concatenate([WQ, q], axis=1)
                WK = np.concatenate([WK, kc], axis=1)
                g0 = (gaps or {}).get(h.name)
                pred = beta / n_max if g0 is None else min(beta / n_max, g0 - beta)
                infos.append(TieBreak(head=h.name, beta=beta, gap_untied=g0, predicted_gap=pred, sign=sign))
            nh.append(CanonHead(name=h.name, layer=h.layer, index=h.index, W_Q=WQ, W_K=WK, W_V=WV, W_O=WO,
                                scale=h.scale, mask=h.mask, rule=h.rule, tie_break=h.tie_break + beta))
        new_heads.append(nh)
    new_mlps = [[MLPSpec(name=m.name, W1=rows(m.W1), b1=m.b1, W2=cols(m.W2),
                         b2=np.concatenate([m.b2, zeros(d - len(m.b2))])) for m in ms] for ms in hm.mlps]
    hm2 = HardModel(spec=hm.spec, alphabet=hm.alphabet, labels=labels, token_embedding=E, features=feats,
                    table=table, heads=new_heads, mlps=new_mlps, outputs=list(hm.outputs), lns=hm.lns)
    return hm2, infos


def same_hard_outputs(hm1: HardModel, hm2: HardModel, n_max: int, *, limit: int = DEFAULT_EXHAUSTIVE_LIMIT,
                      words: list[tuple[str, ...]] | None = None) -> tuple[bool, tuple[str, ...] | None, int]:
    """Do two models (same alphabet and outputs) give identical exact hard outputs?

    On every word of length ≤ ``n_max`` when that is at most ``limit`` words, else on ``words``.
    Returns ``(same, first differing word or None, words compared)``.
    """
    e1, e2 = exact_engine(hm1), exact_engine(hm2)
    k = len(hm1.alphabet)
    coords1 = [c for o in hm1.outputs for c in o.coords]
    coords2 = [c for o in hm2.outputs for c in o.coords]
    batches = []
    if count_words(k, n_max, cap=limit) <= limit:
        for n in range(1, n_max + 1):
            batches.extend(all_tokens(k, n))
    else:
        by: dict[int, list] = {}
        for w in words or []:
            by.setdefault(len(w), []).append([hm1.alphabet.index(s) + 1 for s in w])
        batches = [np.array(v, dtype=np.int64) for v in by.values()]
    cnt = 0
    for tok in batches:
        x1, x2 = e1.run(tok).x, e2.run(tok).x
        a = _obj(x1.num[:, 1:, coords1]) * x2.den
        b = _obj(x2.num[:, 1:, coords2]) * x1.den
        ne = np.any(a != b, axis=(1, 2))
        cnt += len(tok)
        if ne.any():
            b0 = int(np.argmax(ne))
            return False, tuple(hm1.alphabet[t - 1] for t in tok[b0]), cnt
    return True, None, cnt


def _obj(a):
    return a if a.dtype == object else a.astype(object)
