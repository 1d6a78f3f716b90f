"""Certify compiled Tracr transformers: the lengths and temperatures at which they stay exact
(THEORY §2, §3, §6, §7, §8; docs/tracr.md).

Pipeline (the same path as model files — model representation, exact gap analysis, composed
bounds, Z3 claims with an arb second check — specialised where compiled models need it):

1. :func:`softhard.constructions.tracr.load_tracr` maps the export onto a softhard model whose
   inverse temperature ``λ = 1/τ`` is Tracr's effective coldness ``c/√key_size``;
2. :func:`softhard.constructions.tracr_gaps.analyse` enumerates every word up to
   ``max_seq_len`` in exact arithmetic: per head its structured premise (BOS gap, other gap,
   argmax size, per case), its states (→ the logit table), per MLP its hard contexts, per output
   its hard values and margin — the *data-level premises*, established exhaustively;
3. :func:`softhard.bounds.tracr.compose` gives per output an error bound ``E_o(n, τ)`` and per
   discretising MLP a resolution condition ``e_z(n, τ) ≤ r_min``;
4. the answers, each a set of Z3-checked claims ``∀ n ∈ [n_lo, n_hi]: expr(n) ≤ tol``:

   * **compiled** — every claim at the compiled temperature (rational ``λ⁻ ≤ λ``; the bound is
     decreasing in λ) for ``n ≤ max_seq_len``.  The positional table stops there, so for a model
     that reads positions this is as far as the *given* model goes;
   * **minimum temperature** — the smallest ``λ*`` (12 digits) at which every claim holds for
     ``n ≤ n_target``: proved at ``λ*``, refuted at ``λ*·(1 − 10⁻⁶)``; with the nominal coldness
     ``c* = λ*·√key_size`` Tracr would need;
   * **longer inputs at the compiled temperature** — the claims from the *table-level* premises
     (the logit table, the own-key pairs, the MLP contexts extrapolated for SelectorWidth inputs):
     the largest ``N*`` with every claim proved on ``[1, N*]``, the binding one refuted at
     ``N* + 1``.  For a position-free model (no head or MLP reads a positional coordinate, every
     head in the first attention layer) this is exact for the given weights with the positional
     table extended; otherwise it is *hypothetical* — a model with the same per-position structure;
   * **compiled at a larger max_seq_len N** (hypothetical) — key_size grows with N when a head
     reads the positional block, so ``λ(N) = c/√key_size(N)`` falls: the largest ``N_c`` at which
     the default coldness keeps every claim (proved at ``N_c``, refuted at ``N_c + 1``; the bound
     is increasing in N, so ``N_c`` covers every smaller N); for SelectorWidth count decoders the
     MLP resolution condition ``w(w+1) < L`` (L = mlp_exactness) that bounds N for the *hard*
     model itself;

5. numeric confirmation: the stored examples reproduced (exact hard forward = RASP; soft at the
   compiled temperature = the stored numpy/JAX outputs), every word up to ``max_seq_len`` run hard
   and soft against the bound, and the attaining words in 50-digit arithmetic (THEORY §7:
   float64 cannot see an error of 10⁻¹⁹).

The certificate (schema ``softhard-tracr-certificate``) embeds the converted model and the export's
metadata; :func:`verify_tracr` re-derives the analysis, regenerates every claim from the stored
parameters, re-runs every Z3 query, re-checks the answers against their claims, re-runs the
examples and checks every hash.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import math
import time
from dataclasses import dataclass, field
from fractions import Fraction
from importlib import resources
from typing import Callable

import mpmath
import numpy as np
import sympy as sp

from ..bounds.core import n as n_sym
from ..bounds.core import tau
from ..bounds.derive import evaluate, latex
from ..bounds.tracr import LogitTable, TracrBound, compose, fs, generic_leak_expr, logit_table
from ..bounds.tracr_extrapolation import (discretising_rule, key_size_rule, max_sw_count, selector_width_contexts,
                                          selector_width_decoder, token_determined)
from ..constructions.engine import forward
from ..constructions.errors import CertificateError, ParameterError, SofthardError
from ..constructions.exact import ExactEngine, to_float
from ..constructions.gaps import all_tokens
from ..constructions.hard_model import HardModel
from ..constructions.modelfile import doc_sha256, model_from_doc
from ..constructions.tracr import TracrModel, bos_convention, sqrt_ratio_enclosure
from ..constructions.tracr_gaps import CaseStats, Stats, analyse as exact_stats
from .certificate import ClaimSpec, VerifyReport, _canon, _claim_json, _verify_claim, _versions, schema_and_hashes
from .check import check_claim
from .search import round_up

SCHEMA = "softhard-tracr-certificate"
SCHEMA_VERSION = 1
SCHEMA_FILE = "tracr-certificate-1.schema.json"
DIGITS = 12
#: relative step below λ* at which the binding claim must be refuted ("λ* is minimal to 6 digits")
MIN_STEP = Fraction(1, 10**6)
#: largest length searched for N* / N_c
N_CAP = 10**30
N_C_CAP = 10**7


def schema() -> dict:
    """The JSON Schema of Tracr certificates (draft 2020-12)."""
    return json.loads(resources.files("softhard.solver").joinpath("schema", SCHEMA_FILE).read_text("utf-8"))


def _fd(x: Fraction | None, digits: int = 12) -> str | None:
    if x is None:
        return None
    with mpmath.workdps(40):
        return mpmath.nstr(mpmath.mpf(x.numerator) / x.denominator, digits)


def down_digits(x, digits: int = DIGITS) -> Fraction:
    """Largest decimal with ``digits`` significant digits that is ≤ x (x: mpf or Fraction > 0)."""
    from decimal import ROUND_FLOOR, Decimal, localcontext
    with localcontext() as ctx:
        ctx.prec = digits
        ctx.rounding = ROUND_FLOOR
        s = mpmath.nstr(mpmath.mpf(x.numerator) / x.denominator if isinstance(x, Fraction) else x, digits + 10,
                        strip_zeros=False)
        return Fraction(+Decimal(s))


# --------------------------------------------------------------------------------------------
# the information a certificate needs besides the converted model


def model_info(tm: TracrModel) -> dict:
    """What :func:`analyse` needs from the Tracr export besides the converted model document
    (JSON-ready; embedded in the certificate's source)."""
    pos_blocks = sorted({tm.block_of(a).name for a in tm.positional_coords()})
    return {"name": tm.name, "label": tm.label, "source": tm.source, "max_seq_len": tm.max_seq_len,
            "key_size": tm.key_size, "num_heads": tm.num_heads, "num_layers": tm.num_layers,
            "coldness": fs(tm.coldness), "coldness_source": tm.coldness_source,
            "mlp_exactness": tm.mlp_exactness, "causal": tm.causal, "vocab": list(tm.vocab),
            "positional_blocks": pos_blocks,
            "output": {"name": tm.output["name"], "categorical": tm.output["categorical"],
                       "labels": tm.output["labels"], "classes": [str(c) for c in tm.output["classes"]]},
            "sops": tm.sops, "modules": tm.modules, "files": tm.files, "notes": list(tm.notes),
            "examples": [{k: ex.get(k) for k in ("input", "rasp", "compiled_jax", "numpy_soft", "numpy_hard")}
                         for ex in tm.examples]}


# --------------------------------------------------------------------------------------------
# analysis


@dataclass
class Premises:
    """One set of premises for :func:`softhard.bounds.tracr.compose`: ``kind`` ("exhaustive",
    "extension" — exact for the given weights with the positional table extended —, or
    "hypothetical"), per head ``(BOS competitor, BOS in argmax)`` :class:`CaseStats`, per MLP its
    hard contexts and their z values, ``n_hi`` (None: every length), ``notes``."""

    kind: str
    heads: dict[str, tuple[CaseStats, CaseStats]]
    contexts: dict[str, dict]
    z_values: dict[str, dict]
    n_hi: int | None
    notes: list[str] = field(default_factory=list)
    margins: dict[str, Fraction | None] = field(default_factory=dict)


@dataclass
class Analysis:
    """Everything :func:`certify_tracr` proves claims about (module docstring)."""

    hm: HardModel
    info: dict
    stats: Stats
    tables: dict[str, LogitTable]
    data: Premises
    bound: TracrBound
    ext: Premises | None
    bound_ext: TracrBound | None
    ext_reason: str
    epsilon: dict[str, Fraction]
    margins: dict[str, Fraction | None]
    lam: tuple[Fraction, Fraction]
    key_size_fn: Callable | None
    key_size_text: str
    decoders: dict[str, dict]
    mlp_info: dict[str, dict]
    #: the tolerances are the default ones, read off the rounding margins ("margin" mode)
    eps_from_margin: bool = True

    @property
    def n_table(self) -> int:
        return int(self.info["max_seq_len"])

    @property
    def fraction_rule(self) -> str | None:
        """For a numerical output in "margin" mode whose hard values at max_seq_len are fractions
        ``a/b`` in [0, 1] with ``b ≤ max_seq_len`` and whose margin there is the Farey half-gap
        ``1/(2N(N−1))``: the rule that fixes its tolerance at a longer length (see
        :meth:`tolerance_at`); None otherwise (the tolerance stays the one at max_seq_len)."""
        o = self.hm.outputs[0]
        N = self.n_table
        if o.type != "numerical" or not self.eps_from_margin or N < 2:
            return None
        st = self.stats.outputs[o.name]
        vals = {Fraction(v[0]) for v in st.values}
        if not all(0 <= v <= 1 and v.denominator <= N for v in vals) or st.margin != Fraction(1, 2 * N * (N - 1)):
            return None
        return ("the hard values at max_seq_len are fractions a/b with b <= n (a mean of a 0/1 value over at most n "
                "positions) and their margin is the Farey half-gap 1/(2n(n-1)); assuming the same at every length n, "
                "the tolerance at n is 0.999/(2n(n-1)) (6 digits, rounded down), so the rounded output identifies the "
                "hard fraction")

    def tolerance_at(self, N: int) -> dict[str, Fraction]:
        """Tolerance overrides (claim node → tolerance) for a claim on ``[1, N]`` beyond
        max_seq_len: under :attr:`fraction_rule`, the output's ε(N) = 0.999/(2N(N−1)) (≤ the
        tolerance at every n ≤ N, as ε decreases in N); otherwise none."""
        if N <= self.n_table or self.fraction_rule is None:
            return {}
        return {f"out:{self.hm.outputs[0].name}": epsilon_for(Fraction(1, 2 * N * (N - 1)))}

    @property
    def coldness(self) -> Fraction:
        return Fraction(self.info["coldness"])


def _z_values(hm: HardModel, stats: Stats, bound_dirs: dict[str, dict[int, Fraction]]) -> dict[str, dict]:
    out = {}
    for name, ms in stats.mlps.items():
        d = bound_dirs.get(name)
        if not d:
            continue
        out[name] = {P: sum((c * ms.inputs[P][ms.in_coords.index(a)] for a, c in d.items() if a in ms.in_coords),
                            Fraction(0)) for P in ms.contexts}
    return out


def _directions(hm: HardModel, stats: Stats, premises) -> dict[str, dict[int, Fraction]]:
    """The error direction of each MLP (from a first composition without z values)."""
    b = compose(hm, premises, {k: v.contexts for k, v in stats.mlps.items()}, stats.n_max)
    return {k: v["analysis"].direction for k, v in b.mlps.items() if v.get("analysis") is not None}


def epsilon_for(margin: Fraction | None) -> Fraction | None:
    """The default tolerance: ``0.999·margin`` rounded down to 6 significant digits."""
    if margin is None or margin <= 0:
        return None
    return down_digits(margin * Fraction(999, 1000), 6)


def analyse(hm: HardModel, info: dict, *, epsilon="margin", progress=None) -> Analysis:
    """The exact analysis behind every answer (module docstring, steps 2–3 and the extrapolation).

    ``epsilon``: "margin" (per output, just below its rounding margin: categorical — half the
    top-two distance; numerical — half the smallest distance between two distinct hard values)
    or one exact positive rational for every output.  Raises :class:`ParameterError` for a bad
    ε or a model whose output has no margin (a single hard value) with ``epsilon="margin"``.
    """
    N = int(info["max_seq_len"])
    stats = exact_stats(hm, N, progress=progress)
    tables = {h: logit_table(hm, st) for h, st in stats.heads.items()}
    dprem = {h: (st.bos_competitor, st.bos_in_argmax) for h, st in stats.heads.items()}
    dirs = _directions(hm, stats, dprem)
    zv = _z_values(hm, stats, dirs)
    data = Premises(kind="exhaustive", heads=dprem, contexts={k: v.contexts for k, v in stats.mlps.items()},
                    z_values=zv, n_hi=N)
    bound = compose(hm, dprem, data.contexts, N, z_values=zv, label="exhaustive")
    margins = {name: o.margin for name, o in stats.outputs.items()}
    eps: dict[str, Fraction] = {}
    for o in hm.outputs:
        if isinstance(epsilon, str) and epsilon.strip() == "margin":
            e = epsilon_for(margins[o.name])
            if e is None:
                raise ParameterError(f"output {o.name}: no rounding margin (a single hard value on every input); "
                                     "give --epsilon E")
            eps[o.name] = e
        else:
            e = Fraction(epsilon) if not isinstance(epsilon, Fraction) else epsilon
            if e <= 0:
                raise ParameterError(f"--epsilon must be > 0, got {epsilon}")
            eps[o.name] = e
    # extrapolation beyond max_seq_len
    ext, bound_ext, why = _extension(hm, info, stats, tables, dirs)
    # key_size as a function of max_seq_len
    fn, txt = key_size_rule(info.get("modules") or [], set(info.get("positional_blocks") or []), int(info["key_size"]), N)
    decoders, mlp_info = _decoders(hm, info, stats, tables, bound, ext)
    c = Fraction(info["coldness"])
    lam = sqrt_ratio_enclosure(c, int(info["key_size"]))
    return Analysis(hm=hm, info=info, stats=stats, tables=tables, data=data, bound=bound, ext=ext, bound_ext=bound_ext,
                    ext_reason=why, epsilon=eps, margins=margins, lam=lam, key_size_fn=fn, key_size_text=txt,
                    decoders=decoders, mlp_info=mlp_info,
                    eps_from_margin=isinstance(epsilon, str) and epsilon.strip() == "margin")


def _extension(hm: HardModel, info: dict, stats: Stats, tables: dict[str, LogitTable], dirs):
    positional = [a for a in range(hm.d) if hm.table is not None and any(x != 0 for x in hm.table[1:, a])]
    td = token_determined(hm, positional)
    exact = True
    notes = []
    first_attn = next((li for li, hs in enumerate(hm.heads) if hs), None)
    heads = {}
    for h, t in tables.items():
        st = stats.heads[h]
        heads[h] = t.premise
        if not t.premise[0].rows and not t.premise[1].rows:
            return None, None, f"head {h}: no own-key pairs recorded"
        reads = set(st.q_coords) | set(st.k_coords) | set(st.v_coords)
        if not (reads <= td and st.layer == first_attn):
            exact = False
            notes.append(f"head {h} reads {'positional' if reads & set(positional) else 'sequence-dependent'} "
                         "coordinates: its states at longer inputs are assumed to have the same table-level "
                         f"structure ({t.pattern} pattern)")
    contexts, zs = {}, {}
    for li, ms in enumerate(hm.mlps):
        for m in ms:
            if m.name not in dirs:
                contexts[m.name] = stats.mlps[m.name].contexts  # reads no error: contexts unchanged (token-determined)
                continue
            got = None
            for h, st in stats.heads.items():
                got = selector_width_contexts(hm, m, st, tables[h], stats.mlps[m.name], None)
                if got:
                    break
            if got is None:
                return None, None, (f"MLP {m.name}: its hard inputs at lengths beyond max_seq_len are not known (only "
                                    "MLPs fed by a SelectorWidth head are extrapolated)")
            ctx, z_of, _, note = got
            contexts[m.name], zs[m.name] = ctx, z_of
            notes.append(note)
    kind = "extension" if exact else "hypothetical"
    prem = Premises(kind=kind, heads=heads, contexts=contexts, z_values=zs, n_hi=None, notes=notes)
    try:
        b = compose(hm, heads, contexts, int(info["max_seq_len"]), z_values=zs, label=kind)
    except SofthardError as e:
        return None, None, str(e)
    prem.margins = _ext_margins(hm, stats, prem)
    return prem, b, ""


def _ext_margins(hm: HardModel, stats: Stats, prem: Premises) -> dict[str, Fraction | None]:
    """Output margins over the extrapolated contexts, for outputs written only by one MLP whose
    contexts were extrapolated (else the exhaustive margin, stated as such)."""
    out = {}
    for o in hm.outputs:
        m_ = stats.outputs[o.name].margin
        writers = []
        for li, (hs, ms) in enumerate(zip(hm.heads, hm.mlps)):
            for h in hs:
                VO = h.vo()
                if any(VO[a, b] != 0 for a in range(hm.d) for b in o.coords):
                    writers.append(("head", h))
            for m in ms:
                if any(m.W2[u, b] != 0 for u in range(m.W2.shape[0]) for b in o.coords) or any(m.b2[b] != 0 for b in o.coords):
                    writers.append(("mlp", m))
        clean = all(hm.token_embedding[t, b] == 0 for t in range(hm.token_embedding.shape[0]) for b in o.coords)
        if (len(writers) == 1 and writers[0][0] == "mlp" and clean and o.type == "categorical"
                and writers[0][1].name in prem.z_values):
            m = writers[0][1]
            for P in prem.contexts[m.name]:
                vals = [m.b2[b] + sum((max(P[u], Fraction(0)) * m.W2[u, b] for u in range(m.W2.shape[0])), Fraction(0))
                        for b in o.coords]
                s = sorted(vals)
                mg = (s[-1] - s[-2]) / 2
                m_ = mg if m_ is None else min(m_, mg)
        out[o.name] = m_
    return out


def _decoders(hm, info, stats, tables, bound, ext) -> tuple[dict, dict]:
    """SelectorWidth count decoders: Tracr's discretising rule recognised on the given weights
    (:func:`softhard.bounds.tracr.discretising_rule`), its resolution condition and the
    rule's behaviour at other max_seq_len.  Also the per-MLP discretisation summary."""
    dec, info_out = {}, {}
    N = int(info["max_seq_len"])
    for name, mi in bound.mlps.items():
        disc = mi.get("analysis")
        info_out[name] = {"rule": mi["rule"], "analysis": disc.to_json(hm.labels) if disc is not None else None}
        if disc is None or len(disc.direction) != 1:
            continue
        values = [Fraction(1, w + 1) for w in range(N + 1)]
        rule = discretising_rule(disc, values)
        if rule is None:
            continue
        L = rule["slope"]
        h = next((t for t in tables.values() if t.pattern == "selector-width"), None)
        a_min = h.premise[1].a_min if h is not None else 1
        here = selector_width_decoder(L, N, a_min)
        # the rule reproduces the given MLP's outputs on every analysed context (to float32 rounding)
        m = next(x for xs in hm.mlps for x in xs if x.name == name)
        oc = hm.outputs[0].coords
        by_z = {r["z"]: r for r in here["rows"]}
        dev = Fraction(0)
        for ctx in disc.contexts:
            actual = [m.b2[b] + sum((max(ctx["pre"][u], Fraction(0)) * m.W2[u, b] for u in range(m.W2.shape[0])),
                                    Fraction(0)) for b in oc]
            rule_o = by_z[ctx["z"]]["outputs"] if ctx["z"] in by_z else None
            if rule_o is None or len(rule_o) != len(actual):
                dev = None
                break
            dev = max(dev, max(abs(x - y) for x, y in zip(actual, rule_o)))
        agree = dev is not None and dev <= Fraction(1, 10**5)
        wmax = max_sw_count(L)
        beyond = []
        if ext is not None and name in ext.z_values:
            for P, z in sorted(ext.z_values[name].items(), key=lambda kv: -kv[1]):
                a = 1 / z if z else None
                if a is None or a.denominator != 1 or a - 1 <= N:
                    continue
                vals = [m.b2[b] + sum((max(P[u], Fraction(0)) * m.W2[u, b] for u in range(m.W2.shape[0])), Fraction(0))
                        for b in oc]
                beyond.append({"count": int(a) - 1, "z": fs(z),
                               "decoded": hm.outputs[0].classes[max(range(len(vals)), key=lambda k: vals[k])]})
        dec[name] = {"slope": fs(L), "max_kink_error": float(rule["max_kink_error"]), "agrees_with_weights": agree,
                     "max_output_deviation": None if dev is None else float(dev),
                     "condition": here["condition"], "max_count_decoded": wmax,
                     "correct_for_max_seq_len_up_to": wmax, "given_weights_beyond_max_seq_len": beyond[:3],
                     "at": {str(k): _decoder_json(selector_width_decoder(L, k, a_min))
                            for k in sorted({N, wmax, wmax + 1})}}
    return dec, info_out


def _decoder_json(d: dict) -> dict:
    rmin = min((r["r"] for r in d["rows"] if r["r"] is not None), default=None)
    return {"N": d["N"], "all_counts_decoded": d["all_correct"], "correct_up_to": d["correct_up_to"],
            "r_min": fs(rmin), "r_min_decimal": None if rmin is None else float(rmin),
            "min_margin": fs(min(r["margin"] for r in d["rows"])),
            "rows": [{"count": r["count"], "z": fs(r["z"]), "decoded": r["decoded"], "one_hot": r["one_hot"],
                      "margin": fs(r["margin"]), "r": fs(r["r"]), "slope": fs(r["slope"])} for r in d["rows"]]}


# --------------------------------------------------------------------------------------------
# claims


def claim_exprs(bound: TracrBound, eps: dict[str, Fraction]) -> list[tuple[str, sp.Expr, Fraction]]:
    """``(node, expr(n, τ), tolerance)`` of every claim of a bound: one per output (error ≤ ε) and
    one per resolution condition (``e_z ≤ r_min``)."""
    out = [(f"out:{o}", e, eps[o]) for o, e in bound.outputs.items()]
    out += [(f"mlp:{m}", e, r) for m, (e, r) in bound.conditions.items()]
    return out


def _subs(expr: sp.Expr, inv_tau: Fraction) -> sp.Expr:
    return sp.sympify(expr).subs(tau, sp.Rational(inv_tau.denominator, inv_tau.numerator))


@dataclass
class ClaimRun:
    """A claim spec with its role and temperature, and (after running) its result JSON."""

    spec: ClaimSpec
    role: str
    inv_tau: Fraction
    premise: str
    json: dict | None = None


def make_claims(bound: TracrBound, eps, inv_tau: Fraction, n_lo: int, n_hi: int | None, role: str, premise: str,
                prefix: str, only: str | None = None, tol_override: dict | None = None) -> list[ClaimRun]:
    """One :class:`ClaimRun` per claim of ``bound`` at ``inv_tau`` on ``[n_lo, n_hi]`` (``only``: a
    single node; ``tol_override``: node → tolerance)."""
    out = []
    for k, (node, e, tol) in enumerate(claim_exprs(bound, eps)):
        if only is not None and node != only:
            continue
        tol = (tol_override or {}).get(node, tol)
        spec = ClaimSpec(id=f"{prefix}{k}", expr=_subs(e, inv_tau), tolerance=tol, n_lo=n_lo, n_hi=n_hi, nodes=[node])
        out.append(ClaimRun(spec=spec, role=role, inv_tau=inv_tau, premise=premise))
    return out


class arb_precision:
    """Context manager: python-flint's working precision (bits).  The shared checkers build the
    tolerance's ball at the *current* precision (53 bits by default); a claim refuted at ``N* + 1``
    exceeds its tolerance by a relative 1/N* (10⁻¹⁷ for hist), which needs more bits to decide."""

    def __init__(self, bits: int = 256):
        self.bits = bits

    def __enter__(self):
        import flint
        self.old = flint.ctx.prec
        flint.ctx.prec = max(self.old, self.bits)

    def __exit__(self, *exc):
        import flint
        flint.ctx.prec = self.old


def run_claims(runs: list[ClaimRun], timeout_s: float, say=None, minimise: bool = False) -> None:
    """Check every claim (Z3 + arb) and store its certificate JSON."""
    for r in runs:
        if r.json is not None:
            continue
        if say:
            say(f"claim {r.spec.id} ({r.spec.nodes[0]}, n in [{r.spec.n_lo}, {r.spec.n_hi}])")
        with arb_precision():
            res = check_claim(r.spec.claim(), timeout_s=timeout_s, minimise=minimise)
        j = _claim_json(r.spec, res)
        j.update(role=r.role, premise=r.premise, inv_tau=fs(r.inv_tau), inv_tau_decimal=_fd(r.inv_tau))
        r.json = j


def required(expr: sp.Expr, tol: Fraction, n_value: int) -> mpmath.mpf:
    """Smallest λ with ``expr(n_value, 1/λ) ≤ tol`` (numeric, mpmath bisection; the bound is
    decreasing in λ).  0 when it holds at every λ."""
    from ..bounds.derive import required_inv_tau
    return required_inv_tau(expr, n_value=n_value, eta_value=tol)


def largest_n(expr_n: sp.Expr, tol: Fraction | Callable[[int], Fraction], cap: int = N_CAP) -> int | None:
    """Largest integer n ≥ 1 with ``expr_n(n) ≤ tol`` (expr increasing in n; numeric, 50 digits);
    ``tol`` may be a function of n, non-increasing; 0 if it fails at n = 1; None if it holds up
    to ``cap``."""
    f = sp.lambdify([n_sym], expr_n, modules="mpmath")
    with mpmath.workdps(50):
        def ok(k):
            t = tol(k) if callable(tol) else tol
            return f(mpmath.mpf(k)) <= mpmath.mpf(t.numerator) / t.denominator

        if not ok(1):
            return 0
        lo, hi = 1, 2
        while ok(hi):
            lo, hi = hi, hi * 2
            if hi > cap:
                return None
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if ok(mid):
                lo = mid
            else:
                hi = mid
        return lo


# --------------------------------------------------------------------------------------------
# answers


def answer_compiled(an: Analysis, timeout_s: float, say=None) -> tuple[dict, list[ClaimRun]]:
    """Every claim at the compiled temperature (rational ``λ⁻``) for n ≤ max_seq_len; if one is
    refuted, the largest n below its smallest counterexample is proved too."""
    lo, hi = an.lam
    N = an.n_table
    runs = make_claims(an.bound, an.epsilon, lo, 1, N, "compiled", "exhaustive", "c")
    run_claims(runs, timeout_s, say, minimise=True)
    bad = [r for r in runs if r.json["status"] != "proved"]
    ans = {"inv_tau": fs(lo), "inv_tau_decimal": _fd(lo), "inv_tau_upper": fs(hi),
           "compiled_inv_tau_float": float(an.coldness) / math.sqrt(int(an.info["key_size"])),
           "n_range": [1, N], "claims": [r.spec.id for r in runs]}
    if not bad:
        ans.update(status="proved", exact_up_to=N,
                   limited_by=(f"the positional table (max_seq_len = {N}): the compiled model has no embedding for "
                               f"position {N + 1}" if any(True for _ in _positional(an.hm)) else
                               f"the analysed range (n <= max_seq_len = {N})"))
        return ans, runs
    cex = [r.json["counterexample"] for r in bad if r.json["status"] == "refuted" and r.json["counterexample"]]
    if cex and min(cex) > 1:
        m = min(cex) - 1
        more = make_claims(an.bound, an.epsilon, lo, 1, m, "compiled-largest", "exhaustive", "cl")
        run_claims(more, timeout_s, say)
        ok = all(r.json["status"] == "proved" for r in more)
        ans.update(status="refuted", exact_up_to=m if ok else None, first_failure=min(cex),
                   claims_largest=[r.spec.id for r in more])
        return ans, runs + more
    ans.update(status="refuted" if cex else "unknown", exact_up_to=0 if cex else None,
               first_failure=min(cex) if cex else None)
    return ans, runs


def _positional(hm: HardModel):
    if hm.table is None:
        return []
    return [a for a in range(hm.d) if any(x != 0 for x in hm.table[1:, a])]


def answer_min_inv_tau(an: Analysis, n_target: int, timeout_s: float, say=None) -> tuple[dict, list[ClaimRun]]:
    """The smallest λ (12 digits) proving every claim on ``[1, n_target]`` (data premises when
    ``n_target ≤ max_seq_len``, else the extrapolated ones), refuted a relative ``10⁻⁶`` below."""
    use_ext = n_target > an.n_table
    bound = an.bound_ext if use_ext else an.bound
    if bound is None:
        return {"status": "unknown", "n": n_target, "reason": f"no premises beyond max_seq_len: {an.ext_reason}"}, []
    premise = an.ext.kind if use_ext else "exhaustive"
    over = an.tolerance_at(n_target)  # fraction-valued outputs beyond max_seq_len: eps(n_target)
    reqs = []
    for node, e, tol in claim_exprs(bound, an.epsilon):
        reqs.append((required(e, over.get(node, tol), n_target), node))
    need, node = max(reqs, key=lambda t: t[0])
    if need == 0:
        return {"status": "proved", "n": n_target, "inv_tau": "0", "binding": None,
                "note": "every claim holds at any temperature for these lengths"}, []
    lam = round_up(need * (1 + mpmath.mpf("1e-9")), DIGITS)
    runs = make_claims(bound, an.epsilon, lam, 1, n_target, "min-inv-tau", premise, "m", tol_override=over)
    run_claims(runs, timeout_s, say)
    below = down_digits(mpmath.mpf(lam.numerator) / lam.denominator * (1 - mpmath.mpf(MIN_STEP.numerator) / MIN_STEP.denominator))
    ref = make_claims(bound, an.epsilon, below, n_target, n_target, "min-inv-tau-below", premise, "mb", only=node,
                      tol_override=over)
    run_claims(ref, timeout_s, say)
    K = int(an.info["key_size"])
    ok = all(r.json["status"] == "proved" for r in runs) and ref and ref[0].json["status"] == "refuted"
    c_star = mpmath.sqrt(mpmath.mpf(lam.numerator) ** 2 * K / mpmath.mpf(lam.denominator) ** 2)
    rec = None
    if an.key_size_fn is not None and n_target > an.n_table and an.key_size_fn(n_target) != K:
        Kn = an.key_size_fn(n_target)
        rec = {"key_size": Kn, "nominal_coldness": mpmath.nstr(mpmath.sqrt(mpmath.mpf(lam.numerator) ** 2 * Kn
                                                                          / mpmath.mpf(lam.denominator) ** 2), 10),
               "note": f"a model compiled for max_seq_len {n_target} has key_size {Kn}: it needs this nominal coldness"}
    return {"status": "proved" if ok else "unknown", "n": n_target, "premise": premise,
            "inv_tau": fs(lam), "inv_tau_decimal": _fd(lam), "refuted_below": fs(below), "refuted_below_decimal": _fd(below),
            "binding": node, "tight_numeric": float(need),
            "nominal_coldness": mpmath.nstr(c_star, 10), "key_size": K, "recompiled_for_n": rec,
            "claims": [r.spec.id for r in runs], "claims_below": [r.spec.id for r in ref]}, runs + ref


def answer_longer(an: Analysis, timeout_s: float, say=None) -> tuple[dict, list[ClaimRun]]:
    """The largest N* such that every claim from the extrapolated premises holds on [1, N*] at the
    compiled temperature; the binding claim refuted at N* + 1 (with ``λ⁺``)."""
    if an.bound_ext is None:
        return {"status": "unknown", "reason": an.ext_reason}, []
    lo, hi = an.lam
    best, node = None, None
    for nd, e, tol in claim_exprs(an.bound_ext, an.epsilon):
        k = largest_n(_subs(e, lo), lambda N, nd=nd, tol=tol: an.tolerance_at(N).get(nd, tol))
        if k is not None and (best is None or k < best):
            best, node = k, nd
    kind = an.ext.kind
    base = {"premise": kind, "inv_tau": fs(lo), "inv_tau_upper": fs(hi), "notes": an.ext.notes,
            "meaning": ("exact for the given weights: no head or MLP reads a positional coordinate, so the positional "
                        "table can be extended" if kind == "extension" else
                        "hypothetical: a model with the same per-position structure (the same logit-table levels and "
                        "own-key pairs) at longer lengths; the given model stops at max_seq_len")}
    if best is None and an.fraction_rule is not None:  # eps(n) -> 0: no positive bound holds for all n
        return {**base, "status": "unknown", "exact_up_to": None, "tolerance_rule": an.fraction_rule,
                "reason": f"within the length-dependent tolerance up to at least n = {N_CAP:.0e}; with a tolerance "
                          "that shrinks like 1/n^2 no claim for all n is made"}, []
    if best is None:
        runs = make_claims(an.bound_ext, an.epsilon, lo, 1, None, "longer", kind, "x")
        run_claims(runs, timeout_s, say)
        ok = all(r.json["status"] == "proved" for r in runs)
        return {**base, "status": "proved" if ok else "unknown", "exact_up_to": None, "all_n": True,
                "claims": [r.spec.id for r in runs]}, runs
    if best == 0:
        return {**base, "status": "refuted", "exact_up_to": 0}, []
    hvp = []
    for name, d in an.decoders.items():
        for b in d.get("given_weights_beyond_max_seq_len") or []:
            if str(b["decoded"]) != str(b["count"]):
                hvp.append(f"the hard model itself is not the program beyond max_seq_len = {an.n_table}: MLP {name} "
                           f"decodes a count of {b['count']} as {b['decoded']} (its classes stop at "
                           f"{an.hm.outputs[0].classes[-1]})")
                break
    if an.fraction_rule is not None:
        base["tolerance_rule"] = an.fraction_rule
        base["tolerance_at_exact_up_to"] = {k: fs(v) for k, v in an.tolerance_at(best).items()}
    elif an.hm.outputs[0].type == "numerical":
        hvp.append("epsilon stays the one chosen at max_seq_len; distinct hard values of a numerical output may lie "
                   "closer together at longer lengths (for a running fraction, 1/(n(n-1)) apart)")
    base["hard_vs_program"] = hvp
    runs = make_claims(an.bound_ext, an.epsilon, lo, 1, best, "longer", kind, "x", tol_override=an.tolerance_at(best))
    run_claims(runs, timeout_s, say)
    ref = make_claims(an.bound_ext, an.epsilon, hi, best + 1, best + 1, "longer-next", kind, "xn", only=node,
                      tol_override=an.tolerance_at(best + 1))
    run_claims(ref, timeout_s, say)
    ok = all(r.json["status"] == "proved" for r in runs) and ref[0].json["status"] == "refuted"
    return {**base, "status": "proved" if ok else "unknown", "exact_up_to": best, "binding": node,
            "claims": [r.spec.id for r in runs], "claims_next": [r.spec.id for r in ref]}, runs + ref


def _recompiled_decoder(an: Analysis):
    """For a model whose key_size does not grow but whose count decoder does: the largest N whose
    decoder decodes every count (Tracr's rule), the claim tolerances there (the decoder's
    r_min and 0.999·its smallest margin) and the first failure at N + 1; None without a decoder."""
    if not an.decoders or an.bound_ext is None:
        return None
    name, d = next(iter(an.decoders.items()))
    L = Fraction(d["slope"])
    Nh = d["max_count_decoded"]
    h = next((t for t in an.tables.values() if t.pattern == "selector-width"), None)
    a_min = h.premise[1].a_min if h is not None else 1
    tols = {}
    for N in range(1, Nh + 1):
        here = selector_width_decoder(L, N, a_min)
        r_min = min((r["r"] for r in here["rows"] if r["r"] is not None), default=None)
        margin = min(r["margin"] for r in here["rows"])
        tols[N] = {f"out:{an.hm.outputs[0].name}": epsilon_for(margin)}
        if r_min is not None:
            tols[N][f"mlp:{name}"] = r_min
    nxt = selector_width_decoder(L, Nh + 1, a_min)
    bad = next(r for r in nxt["rows"] if r["count"] != r["decoded"])
    return Nh, tols, {"N": Nh + 1, "count": bad["count"], "decoded": bad["decoded"]}


def _decoder_runs(an: Analysis, tols: dict, inv_tau: Fraction) -> list[ClaimRun]:
    """The claims of a recompiled count decoder: for each max_seq_len N, every claim on [1, N] with
    the decoder's tolerances at N."""
    runs = []
    for N, tol in sorted(tols.items()):
        for r in make_claims(an.bound_ext, an.epsilon, inv_tau, 1, N, "recompiled", "hypothetical", f"r{N}.",
                             tol_override=tol):
            if r.spec.nodes[0] in tol:
                runs.append(r)
    return runs


def answer_recompiled(an: Analysis, timeout_s: float, say=None) -> tuple[dict, list[ClaimRun]]:
    """A model compiled for max_seq_len N (hypothetical): key_size(N), λ(N) = c/√key_size(N), and
    the largest N_c at which the nominal coldness keeps every claim on [1, N] (proved at N_c,
    refuted at N_c + 1); plus the count decoders' resolution condition."""
    out: dict = {"key_size_rule": an.key_size_text, "decoders": an.decoders}
    fn = an.key_size_fn
    if fn is None or an.bound_ext is None:
        out.update(status="unknown", reason=an.key_size_text if fn is None else an.ext_reason)
        return out, []
    c = an.coldness
    claims = claim_exprs(an.bound_ext, an.epsilon)
    grows = fn(an.n_table + 1) != fn(an.n_table)
    hard_cap = min((d["max_count_decoded"] for d in an.decoders.values()), default=None)

    def tol(node: str, t: Fraction, N: int) -> mpmath.mpf:
        t = an.tolerance_at(N).get(node, t)
        return mpmath.mpf(t.numerator) / t.denominator

    def worst(N: int) -> mpmath.mpf:
        lam = mpmath.mpf(c.numerator) / c.denominator / mpmath.sqrt(fn(N))
        f = max(evaluate(e, n_value=N, inv_tau=lam) / tol(nd, t, N) for nd, e, t in claims)
        return f

    rows = []
    for N in sorted({an.n_table, 16, 32, 64, 128, 256, 1024}):
        lam_f = float(c) / math.sqrt(fn(N))
        rows.append({"N": N, "key_size": fn(N), "inv_tau": lam_f, "worst_ratio_to_tolerance": float(worst(N)),
                     "within": bool(worst(N) <= 1)})
    out["table"] = rows
    out["table_note"] = ("numeric (mpmath) values of the bound at n = N over its tolerance; the certified boundary "
                         "is N_c below")
    if not grows:
        out.update(key_size_constant=fn(an.n_table))
        rc = _recompiled_decoder(an)
        if rc is None:
            out.update(status="same-temperature",
                       note="key_size does not grow with max_seq_len: the compiled temperature is the same, so the "
                            "length answer is that of 'longer inputs'")
            return out, []
        Nh, tols, fail = rc
        l_lo, _ = sqrt_ratio_enclosure(c, fn(Nh))
        runs = _decoder_runs(an, tols, l_lo)
        run_claims(runs, timeout_s, say)
        ok = all(r.json["status"] == "proved" for r in runs)
        out.update(status="proved" if ok else "unknown", N_c=Nh, key_size_at_N_c=fn(Nh), inv_tau_at_N_c=fs(l_lo),
                   inv_tau_at_N_c_decimal=_fd(l_lo), binding="hard count decoder", claims=[r.spec.id for r in runs],
                   tolerances_at_N_c={k: fs(v) for k, v in tols[Nh].items()}, hard_failure_next=fail,
                   hard_model_exact_up_to=Nh,
                   note=("key_size does not grow with max_seq_len, so the temperature stays the compiled one; the count "
                         f"decoder (Tracr's rule, slope {an.decoders[next(iter(an.decoders))]['slope']}) decodes every "
                         f"count correctly only up to max_seq_len {Nh}: for every N <= {Nh} the claims hold on [1, N] "
                         f"with the decoder's margins at N, and at N = {Nh + 1} the hard model itself decodes count "
                         f"{fail['count']} as "
                         f"{fail['decoded']} (exact evaluation of the rule)"))
        return out, runs
    # N_c: largest N with worst(N) <= 1 (increasing in N)
    lo_, hi_ = 1, 2
    if worst(1) > 1:
        out.update(status="refuted", N_c=0)
        return out, []
    while worst(hi_) <= 1:
        lo_, hi_ = hi_, hi_ * 2
        if hi_ > N_C_CAP:
            out.update(status="unknown", reason=f"within tolerance beyond N = {N_C_CAP}")
            return out, []
    while hi_ - lo_ > 1:
        mid = (lo_ + hi_) // 2
        if worst(mid) <= 1:
            lo_ = mid
        else:
            hi_ = mid
    Nc = lo_
    l_lo, _ = sqrt_ratio_enclosure(c, fn(Nc))
    _, l_hi = sqrt_ratio_enclosure(c, fn(Nc + 1))
    runs = make_claims(an.bound_ext, an.epsilon, l_lo, 1, Nc, "recompiled", "hypothetical", "r",
                       tol_override=an.tolerance_at(Nc))
    run_claims(runs, timeout_s, say)
    # the binding claim at N_c + 1
    vals = []
    lam1 = mpmath.mpf(c.numerator) / c.denominator / mpmath.sqrt(fn(Nc + 1))
    for node, e, t in claims:
        vals.append((evaluate(e, n_value=Nc + 1, inv_tau=lam1) / tol(node, t, Nc + 1), node))
    node = max(vals)[1]
    ref = make_claims(an.bound_ext, an.epsilon, l_hi, Nc + 1, Nc + 1, "recompiled-next", "hypothetical", "rn", only=node,
                      tol_override=an.tolerance_at(Nc + 1))
    if an.fraction_rule is not None:
        out.update(tolerance_rule=an.fraction_rule,
                   tolerance_at_N_c={k: fs(v) for k, v in an.tolerance_at(Nc).items()})
    run_claims(ref, timeout_s, say)
    ok = all(r.json["status"] == "proved" for r in runs) and ref[0].json["status"] == "refuted"
    out.update(status="proved" if ok else "unknown", N_c=Nc, key_size_at_N_c=fn(Nc), inv_tau_at_N_c=fs(l_lo),
               inv_tau_at_N_c_decimal=_fd(l_lo), inv_tau_next_upper=fs(l_hi), binding=node,
               claims=[r.spec.id for r in runs], claims_next=[r.spec.id for r in ref],
               monotone=("the bound is decreasing in 1/tau and 1/tau(N) = c/sqrt(key_size(N)) is decreasing in N, so "
                         "the proof at N_c covers every N <= N_c"))
    if hard_cap is not None:
        out["hard_model_exact_up_to"] = hard_cap
    return out, runs + ref


# --------------------------------------------------------------------------------------------
# numeric confirmation


def _exact_outputs(an: Analysis, words: list[tuple[str, ...]]) -> dict[tuple, np.ndarray]:
    hm = an.hm
    eng = ExactEngine(hm)
    o = hm.outputs[0]
    out = {}
    by: dict[int, list] = {}
    for w in words:
        by.setdefault(len(w), []).append(w)
    for L, ws in by.items():
        tok = np.array([hm.encode(w) for w in ws], dtype=np.int64)
        x = eng.run(tok).x
        for b, w in enumerate(ws):
            out[w] = np.array([[Fraction(int(v), x.den) for v in x.num[b, i, o.coords]] for i in range(1, L + 1)],
                              dtype=object)
    return out


def _decode(an: Analysis, row) -> object:
    o = an.hm.outputs[0]
    if o.type == "categorical":
        return o.classes[int(np.argmax(np.asarray([float(v) for v in row])))]
    return row[0]


def _same_value(decoded, rasp, categorical: bool) -> bool:
    """A decoded hard value equals a stored RASP value: categorical — the same class text;
    numerical — the exact value's nearest double equals the stored number (bools are 0/1)."""
    if rasp is None:
        return False
    if categorical:
        return str(decoded) == str(rasp)
    return float(decoded) == float(rasp)


def confirm_examples(an: Analysis) -> dict:
    """The stored examples: exact hard forward decoded vs the RASP outputs (must be equal; numerical:
    the exact rational's nearest double equals the stored value); soft forward at the compiled
    temperature (float64) vs the stored numpy soft / JAX outputs and the RASP outputs."""
    exs = [e for e in an.info.get("examples") or [] if e.get("input")]
    if not exs:
        return {"count": 0, "hard_reproduced": None, "soft_reproduced": None, "rows": []}
    hm = an.hm
    tr = hm.transformer()
    lam = float(an.coldness) / math.sqrt(int(an.info["key_size"]))
    words = [tuple(e["input"]) for e in exs]
    exact = _exact_outputs(an, words)
    o = hm.outputs[0]
    cols = [tr.labels.index(hm.labels[c]) for c in o.coords]
    rows = []
    hard_ok = soft_ok = True
    max_soft_vs_numpy = max_soft_vs_jax = 0.0
    for e, w in zip(exs, words):
        ex = exact[w]
        hard = [_decode(an, r) for r in ex]
        soft_x = forward(tr, tr.encode([list(w)]), mode="soft", inv_tau=lam).x[0][1:, cols]
        soft = [_decode(an, r) for r in soft_x]
        has_rasp = any(v is not None for v in e["rasp"])
        h_ok = (all(_same_value(a, r, o.type == "categorical") for a, r in zip(hard, e["rasp"]))
                if has_rasp else None)
        if o.type == "categorical":
            s_ok = all(str(a) == str(b) for a, b in zip(soft, hard))
        else:
            bound = float(evaluate(an.bound.outputs[o.name], n_value=len(w), inv_tau=lam))
            s_ok = all(abs(float(s) - float(h)) <= bound + 1e-12 for s, h in zip(soft_x[:, 0], hard))
        if e.get("numpy_soft") is not None and o.type == "numerical":
            max_soft_vs_numpy = max(max_soft_vs_numpy, float(np.max(np.abs(soft_x[:, 0] - np.asarray(e["numpy_soft"], float)))))
        if e.get("compiled_jax") is not None and o.type == "numerical":
            max_soft_vs_jax = max(max_soft_vs_jax, float(np.max(np.abs(soft_x[:, 0] - np.asarray(e["compiled_jax"], float)))))
        if e.get("numpy_soft") is not None and o.type == "categorical":
            s_ok = s_ok and all(str(a) == str(b) for a, b in zip(soft, e["numpy_soft"]))
        hard_ok = hard_ok and (h_ok is not False)
        soft_ok = soft_ok and s_ok
        rows.append({"input": list(w), "hard": [str(v) if o.type == "categorical" else fs(v) for v in hard],
                     "hard_equals_rasp": h_ok, "soft_agrees": s_ok})
    return {"count": len(exs), "hard_reproduced": hard_ok, "soft_reproduced": soft_ok,
            "max_abs_soft_minus_stored_numpy_soft": max_soft_vs_numpy if o.type == "numerical" else None,
            "max_abs_soft_minus_stored_jax_float32": max_soft_vs_jax if o.type == "numerical" else None,
            "inv_tau_float": lam, "rows": rows,
            "note": ("hard: exact rational forward pass, decoded (categorical: argmax class; numerical: the value, whose "
                     "nearest double must equal the stored RASP value); soft: float64 at the compiled temperature")}


def mp_error(an: Analysis, word: tuple[str, ...], inv_tau, dps: int = 50) -> mpmath.mpf:
    """``max_i |soft − hard|`` over the output coordinates of ``word``, the soft forward pass in
    ``dps``-digit arithmetic (mpmath) against the exact hard one — resolves errors far below
    float64 resolution (THEORY §7)."""
    hm = an.hm
    o = hm.outputs[0]
    ex = _exact_outputs(an, [word])[word]
    with mpmath.workdps(dps):
        lam = mpmath.mpf(inv_tau.numerator) / inv_tau.denominator if isinstance(inv_tau, Fraction) else mpmath.mpf(inv_tau)
        N = len(word) + 1
        E = hm.token_embedding
        P = hm.positional_exact(len(word))
        ids = [0] + hm.encode(word)

        def M(a):
            return mpmath.matrix([[mpmath.mpf(x.numerator) / x.denominator for x in row] for row in a])
        x = mpmath.matrix(N, hm.d)
        for i, t in enumerate(ids):
            for a in range(hm.d):
                v = E[t, a] + P[i, a]
                x[i, a] = mpmath.mpf(v.numerator) / v.denominator
        for hs, ms in zip(hm.heads, hm.mlps):
            upd = mpmath.matrix(N, hm.d)
            for h in hs:
                Q, K, VO = x * M(h.W_Q), x * M(h.W_K), x * M(h.vo())
                sc = mpmath.mpf(h.scale.numerator) / h.scale.denominator
                for i in range(N):
                    js = [0] if i == 0 else [j for j in range(N) if _att(h.mask, i, j)]
                    s = [sc * sum(Q[i, c] * K[j, c] for c in range(Q.cols)) for j in js]
                    top = max(s)
                    w = [mpmath.exp(lam * (v - top)) for v in s]
                    z = sum(w)
                    for b in range(hm.d):
                        upd[i, b] += sum(wk * VO[j, b] for wk, j in zip(w, js)) / z
            x = x + upd
            for m in ms:
                pre = x * M(m.W1)
                for i in range(N):
                    for u in range(pre.cols):
                        pre[i, u] = max(pre[i, u] + mpmath.mpf(m.b1[u].numerator) / m.b1[u].denominator, 0)
                out = pre * M(m.W2)
                for i in range(N):
                    for b in range(hm.d):
                        x[i, b] += out[i, b] + mpmath.mpf(m.b2[b].numerator) / m.b2[b].denominator
        err = mpmath.mpf(0)
        for i in range(1, N):
            for k, c in enumerate(o.coords):
                v = ex[i - 1][k]
                err = max(err, abs(x[i, c] - mpmath.mpf(v.numerator) / v.denominator))
        return +err


def _att(mask: str, i: int, j: int) -> bool:
    if j == 0:
        return True
    return {"none": True, "past": j <= i, "strict_past": j < i, "future": j >= i, "strict_future": j > i}[mask]


#: absolute float64 allowance of an all-words observation against its bound (outputs are O(1))
ALL_WORDS_ALLOWANCE = 2.0**-40 * 2


def confirm_all_words(an: Analysis, inv_taus: list[float] | None = None, mp_words: int = 16) -> dict:
    """Every word up to max_seq_len run hard (exact) and soft (float64) at the compiled temperature
    (and at ``inv_taus``): per length the largest observed output error against the bound there,
    their ratio, the word attaining it.  At the longest length, the float64 worst words and the
    words ``s t…t`` and ``s…s t`` (at most ``mp_words``) are re-run with the soft pass in 50-digit
    arithmetic (:func:`mp_error`): errors below float64 resolution are measured there."""
    hm = an.hm
    tr = hm.transformer()
    eng = ExactEngine(hm)
    o = hm.outputs[0]
    cols = [tr.labels.index(hm.labels[c]) for c in o.coords]
    lam_c = float(an.coldness) / math.sqrt(int(an.info["key_size"]))
    lams = [lam_c] + [x for x in (inv_taus or []) if x != lam_c]
    k = len(hm.alphabet)
    per = {lam: [] for lam in lams}
    violations = 0
    mismatched = 0
    for L in range(1, an.n_table + 1):
        best = {lam: (-1.0, None, None) for lam in lams}
        for tok in all_tokens(k, L):
            hard = to_float(eng.run(tok).x)[:, 1:, :][..., o.coords]
            for lam in lams:
                soft = forward(tr, tok, mode="soft", inv_tau=lam).x[:, 1:, cols]
                diff = np.abs(soft - hard).max(axis=2)
                b, i = np.unravel_index(int(np.argmax(diff)), diff.shape)
                if diff[b, i] > best[lam][0]:
                    best[lam] = (float(diff[b, i]), tuple(hm.alphabet[int(t) - 1] for t in tok[b]), int(i) + 1)
                if lam == lam_c and o.type == "categorical":
                    mismatched += int(np.sum(np.argmax(soft, -1) != np.argmax(hard, -1)))
        for lam in lams:
            obs, w, row = best[lam]
            bd = float(evaluate(an.bound.outputs[o.name], n_value=L, inv_tau=lam))
            resolved = obs > 1e-14
            if obs > bd + ALL_WORDS_ALLOWANCE:
                violations += 1
            per[lam].append({"n": L, "words": k**L, "observed": obs, "bound": bd,
                             "ratio": (obs / bd) if bd > 0 and resolved else None,
                             "resolved_in_float64": resolved, "word": " ".join(w), "row": row})
    hp = []
    alph = hm.alphabet
    L = an.n_table
    cands = {tuple(r["word"].split()) for lam in lams for r in per[lam] if r["n"] == L}
    for s_ in alph:
        for t_ in alph:
            if s_ != t_:
                cands.add((s_,) + (t_,) * (L - 1))
                cands.add((s_,) * (L - 1) + (t_,))
    cands = sorted(cands)[:mp_words]
    for lam in lams:
        best = None
        for w in cands:
            v = mp_error(an, w, Fraction(lam))
            if best is None or v > best[0]:
                best = (v, w)
        bd = evaluate(an.bound.outputs[o.name], n_value=L, inv_tau=Fraction(lam))
        hp.append({"inv_tau": lam, "n": L, "words_tried": len(cands), "word": " ".join(best[1]),
                   "observed_mp50": mpmath.nstr(best[0], 15), "bound": mpmath.nstr(bd, 15),
                   "ratio": float(best[0] / bd) if bd > 0 else None})
    return {"families": {"exhaustive": sum(k**L for L in range(1, an.n_table + 1))},
            "per_inv_tau": [{"inv_tau": lam, "compiled": lam == lam_c, "rows": per[lam]} for lam in lams],
            "high_precision": hp, "violations": violations, "mismatched_outputs": mismatched,
            "ok": violations == 0 and mismatched == 0 and all(h["ratio"] is None or h["ratio"] <= 1 + 1e-9 for h in hp),
            "note": ("observed = max over words and positions of |soft - hard| on the output coordinates; float64 "
                     "cannot resolve errors below ~1e-15 (THEORY §7): those rows say resolved_in_float64 = false and the "
                     "attaining words are re-run with 50 digits (high_precision)")}


# --------------------------------------------------------------------------------------------
# certify


def _source(an: Analysis, doc: dict, params: dict) -> dict:
    return {"kind": "tracr", "model": doc, "model_sha256": doc_sha256(doc), "tracr": an.info,
            "epsilon": {k: fs(v) for k, v in an.epsilon.items()}, "epsilon_mode": params["epsilon_mode"],
            "parameters": params}


def _premises_json(an: Analysis) -> dict:
    st = an.stats
    heads = []
    for h, hs in st.heads.items():
        heads.append({"head": h, "layer": hs.layer, "bos_competitor": hs.bos_competitor.to_json(),
                      "bos_in_argmax": hs.bos_in_argmax.to_json(), "ties_max": hs.ties_max,
                      "statement": (f"on every input of length n in [1, {st.n_max}], every non-BOS row of head {h} "
                                    "has: if BOS is a competitor, BOS gap >= gap_bos, other competitors' gap >= "
                                    "gap_rest, argmax size >= a_min; if BOS is in the argmax, competitors' gap >= "
                                    "gap_rest and argmax size >= a_min (bos_in_argmax)")})
    outs = []
    for name, o in st.outputs.items():
        outs.append({"output": name, "type": o.type, "margin": fs(o.margin), "margin_decimal": _fd(o.margin),
                     "distinct_values": len(o.values), "epsilon": fs(an.epsilon[name]),
                     "epsilon_below_margin": None if o.margin is None else bool(an.epsilon[name] < o.margin),
                     "attained_by": (None if o.witness is None else
                                     ({"word": list(o.witness[0]), "row": o.witness[1]} if o.type == "categorical" else
                                      {"values": [fs(o.witness[0]), fs(o.witness[1])]}))})
    return {"status": f"established (exhaustive over {st.words} words)", "method": "exhaustive", "n_max": st.n_max,
            "words": st.words, "heads": heads, "outputs": outs, "seconds": round(st.seconds, 4)}


def _heads_json(an: Analysis) -> list[dict]:
    out = []
    for h, t in an.tables.items():
        hb = an.bound.heads[h]
        theta = hb["theta"]
        ext_theta = an.bound_ext.heads[h]["theta"] if an.bound_ext is not None else None
        gen = generic_leak_expr((an.stats.heads[h].bos_competitor, an.stats.heads[h].bos_in_argmax))
        N = an.n_table
        lam = an.lam[0]
        out.append({"head": h, "table": t.to_json(), "bos_query_attends_bos_only": all(v < t.bos_row[-1] for v in t.bos_row[:-1]),
                    "leak_bound": {"text": str(theta), "latex": latex(theta), "srepr": sp.srepr(theta)},
                    "leak_bound_extrapolated": None if ext_theta is None else str(ext_theta),
                    "generic_gap_lemma": str(gen),
                    "at_compiled_inv_tau": {"n": N, "structured": mpmath.nstr(evaluate(theta, n_value=N, inv_tau=lam), 6),
                                            "generic": mpmath.nstr(evaluate(gen, n_value=N, inv_tau=lam), 6)},
                    "spread": hb["spread"], "error_written": str(hb["error"])})
    return out


def certify_tracr(tm: TracrModel, *, epsilon="margin", n_target: int | None = None, timeout_s: float = 20.0,
                  numeric: bool = True, extra_inv_taus: list[float] | None = None, progress=None) -> dict:
    """The Tracr certificate (module docstring).  ``n_target``: length for the minimum-temperature
    answer (default max_seq_len).  Raises :class:`ParameterError` for bad parameters and
    :class:`UnsupportedModel` for models the analysis does not cover."""
    t0 = time.perf_counter()
    say = progress or (lambda s: None)
    doc = tm.to_doc()
    hm = model_from_doc(doc, path=f"{tm.source} (as a softhard model)").canonical()
    info = model_info(tm)
    if n_target is not None and n_target < 1:
        raise ParameterError(f"--n must be >= 1, got {n_target}")
    an = analyse(hm, info, epsilon=epsilon, progress=say)
    n_target = n_target or an.n_table
    params = {"epsilon_mode": "margin" if isinstance(epsilon, str) else "given", "n_target": n_target}
    t_solve = time.perf_counter()
    a1, r1 = answer_compiled(an, timeout_s, say)
    a2, r2 = answer_min_inv_tau(an, n_target, timeout_s, say)
    a3, r3 = answer_longer(an, timeout_s, say)
    a4, r4 = answer_recompiled(an, timeout_s, say)
    solve_s = time.perf_counter() - t_solve
    params.update(compiled={"inv_tau": a1["inv_tau"], "largest": a1.get("exact_up_to") if a1["status"] != "proved" else None},
                  min_inv_tau={"inv_tau": a2.get("inv_tau"), "below": a2.get("refuted_below"), "binding": a2.get("binding")},
                  longer={"N": a3.get("exact_up_to"), "binding": a3.get("binding"), "all_n": bool(a3.get("all_n"))},
                  recompiled={"N_c": a4.get("N_c"), "binding": a4.get("binding")})
    runs = r1 + r2 + r3 + r4
    t_num = time.perf_counter()
    num = None
    if numeric:
        say("numeric confirmation")
        num = {"examples": confirm_examples(an), "all_words": confirm_all_words(an, extra_inv_taus)}
        num["ok"] = bool(num["examples"]["hard_reproduced"] is not False and num["examples"]["soft_reproduced"] is not False
                         and num["all_words"]["ok"])
    numeric_s = time.perf_counter() - t_num
    o = hm.outputs[0]
    outputs = []
    for name, e in an.bound.outputs.items():
        outputs.append({"output": name, "type": o.type, "epsilon": fs(an.epsilon[name]),
                        "margin": fs(an.margins[name]), "bound": {"text": str(e), "latex": latex(e), "srepr": sp.srepr(e)},
                        "bound_extrapolated": None if an.bound_ext is None else str(an.bound_ext.outputs[name]),
                        "margin_extrapolated": (None if an.ext is None else fs(an.ext.margins.get(name)))})
    mlps = []
    for name, mi in an.mlp_info.items():
        cond = an.bound.conditions.get(name)
        mlps.append({"mlp": name, **mi, "condition": None if cond is None else
                     {"text": f"{cond[0]} <= {fs(cond[1])}", "error_in": str(cond[0]), "r_min": fs(cond[1])},
                     "decoder": an.decoders.get(name)})
    main = [r for r in r1 if r.role == "compiled"]
    status = ("proved" if all(r.json["status"] == "proved" for r in main) else
              "refuted" if any(r.json["status"] == "refuted" for r in main) else "unknown")
    from .certificate import graph_data
    cert = {
        "schema": SCHEMA, "schema_version": SCHEMA_VERSION,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"), "tool": _versions(),
        "source": _source(an, doc, params),
        "model": {"name": info["name"], "label": info["label"], "vocab": info["vocab"],
                  "max_seq_len": info["max_seq_len"], "layers": info["num_layers"], "key_size": info["key_size"],
                  "coldness_nominal": info["coldness"], "coldness_source": info["coldness_source"],
                  "inv_tau_compiled": {"lower": fs(an.lam[0]), "upper": fs(an.lam[1]), "decimal": _fd(an.lam[0]),
                                       "formula": f"coldness/sqrt(key_size) = {info['coldness']}/sqrt({info['key_size']})"},
                  "mlp_exactness": info["mlp_exactness"], "blocks": _blocks(hm), "notes": info["notes"],
                  "bos_convention": "the BOS row is never read by a later head's keys or values: the format's BOS "
                                    "convention and Tracr's give identical outputs at every non-BOS position"},
        "premises": _premises_json(an),
        "heads": _heads_json(an), "mlps": mlps, "outputs": outputs,
        "graph": graph_data(an.bound.graph),
        "claims": [r.json for r in runs],
        "answers": {"compiled": a1, "min_inv_tau": a2, "longer_inputs": a3, "recompiled": a4},
        "status": status,
        "composed": ("every claim of role 'compiled' proved AND the premises established => at every position of every "
                     "word of length <= max_seq_len, the softmax model at its compiled temperature is within epsilon of "
                     "the average-hard-attention model on every output coordinate (THEORY §2, §3, §6); with epsilon "
                     "below the output's margin, the decoded outputs are equal"),
        "numeric": num,
        "times": {"analysis_s": round(an.stats.seconds, 4), "solve_s": round(solve_s, 4),
                  "numeric_s": round(numeric_s, 4), "total_s": round(time.perf_counter() - t0, 4)},
    }
    cert["hashes"] = compute_hashes(cert)
    return cert


def _blocks(hm: HardModel) -> list[dict]:
    from ..constructions.tracr import parse_labels
    labs = [lab for lab in hm.labels if not lab.startswith("__")]
    return [{"name": b.name, "kind": b.kind, "size": len(b.coords),
             "values": [v for v in b.values if v is not None][:12]} for b in parse_labels(labs)]


def compute_hashes(cert: dict) -> dict:
    """SHA-256 of every top-level section, of each claim, and of the whole (without ``hashes``)."""
    body = {k: v for k, v in cert.items() if k != "hashes"}
    sections = {k: hashlib.sha256(_canon(v)).hexdigest() for k, v in body.items()}
    for i, x in enumerate(body.get("claims") or []):
        sections[f"claims[{i}]"] = hashlib.sha256(_canon(x)).hexdigest()
    return {"algorithm": "sha256", "sections": sections, "all": hashlib.sha256(_canon(body)).hexdigest()}


# --------------------------------------------------------------------------------------------
# verify


def _rebuild_runs(an: Analysis, params: dict) -> dict[str, list[ClaimRun]]:
    """Regenerate every claim from the stored parameters (no search): role → runs."""
    out: dict[str, list[ClaimRun]] = {}
    lo, hi = an.lam
    N = an.n_table
    out["compiled"] = make_claims(an.bound, an.epsilon, lo, 1, N, "compiled", "exhaustive", "c")
    big = params["compiled"].get("largest")
    if big:
        out["compiled-largest"] = make_claims(an.bound, an.epsilon, lo, 1, big, "compiled-largest", "exhaustive", "cl")
    mi = params["min_inv_tau"]
    nt = int(params["n_target"])
    if mi.get("inv_tau") not in (None, "0"):
        use_ext = nt > N
        b = an.bound_ext if use_ext else an.bound
        kind = an.ext.kind if use_ext else "exhaustive"
        over = an.tolerance_at(nt)
        out["min-inv-tau"] = make_claims(b, an.epsilon, Fraction(mi["inv_tau"]), 1, nt, "min-inv-tau", kind, "m",
                                         tol_override=over)
        out["min-inv-tau-below"] = make_claims(b, an.epsilon, Fraction(mi["below"]), nt, nt, "min-inv-tau-below", kind,
                                               "mb", only=mi["binding"], tol_override=over)
    lg = params["longer"]
    if an.bound_ext is not None and lg.get("all_n"):
        out["longer"] = make_claims(an.bound_ext, an.epsilon, lo, 1, None, "longer", an.ext.kind, "x")
    elif an.bound_ext is not None and lg.get("N"):
        out["longer"] = make_claims(an.bound_ext, an.epsilon, lo, 1, lg["N"], "longer", an.ext.kind, "x",
                                    tol_override=an.tolerance_at(lg["N"]))
        out["longer-next"] = make_claims(an.bound_ext, an.epsilon, hi, lg["N"] + 1, lg["N"] + 1, "longer-next",
                                         an.ext.kind, "xn", only=lg["binding"], tol_override=an.tolerance_at(lg["N"] + 1))
    rc = params["recompiled"]
    dec = _recompiled_decoder(an) if an.key_size_fn is not None and \
        an.key_size_fn(an.n_table + 1) == an.key_size_fn(an.n_table) else None
    if dec is not None and rc.get("N_c"):
        Nh, tols, _ = dec
        l_lo, _ = sqrt_ratio_enclosure(an.coldness, an.key_size_fn(Nh))
        out["recompiled"] = _decoder_runs(an, tols, l_lo)
    elif an.bound_ext is not None and rc.get("N_c") and an.key_size_fn is not None:
        Nc = rc["N_c"]
        c = an.coldness
        l_lo, _ = sqrt_ratio_enclosure(c, an.key_size_fn(Nc))
        _, l_hi = sqrt_ratio_enclosure(c, an.key_size_fn(Nc + 1))
        out["recompiled"] = make_claims(an.bound_ext, an.epsilon, l_lo, 1, Nc, "recompiled", "hypothetical", "r",
                                        tol_override=an.tolerance_at(Nc))
        out["recompiled-next"] = make_claims(an.bound_ext, an.epsilon, l_hi, Nc + 1, Nc + 1, "recompiled-next",
                                             "hypothetical", "rn", only=rc["binding"],
                                             tol_override=an.tolerance_at(Nc + 1))
    return out


def verify_tracr(cert: dict, *, timeout_s: float = 20.0, rerun_queries: bool = True) -> VerifyReport:
    """Re-check a Tracr certificate: schema, hashes, the embedded model, a fresh exact analysis
    (premises, margins, bounds), every claim regenerated from the stored parameters and re-run
    (Z3, plus arb at refutations), the answers against their claims, and the examples re-run.
    Never raises for a bad certificate: problems are reported by field."""
    t0 = time.perf_counter()
    rep = VerifyReport(status=cert.get("status") if isinstance(cert, dict) else None)
    hash_problems = schema_and_hashes(rep, cert, schema(), hasher=compute_hashes)
    if hash_problems is None:
        rep.seconds = time.perf_counter() - t0
        return rep
    src = cert["source"]
    try:
        if doc_sha256(src["model"]) != src["model_sha256"]:
            raise CertificateError("source.model: the embedded model does not match source.model_sha256")
        hm = model_from_doc(src["model"], path="<certificate source.model>").canonical()
        msg = bos_convention(hm)
        if msg:
            raise CertificateError(f"source.model: {msg}")
        params = src["parameters"]
        eps = src["epsilon"]
        epsilon = "margin" if src["epsilon_mode"] == "margin" else Fraction(next(iter(eps.values())))
        an = analyse(hm, src["tracr"], epsilon=epsilon)
    except (SofthardError, KeyError, ValueError, TypeError) as e:
        rep.add("source", f"cannot re-derive the analysis: {e.__class__.__name__}: {e}")
        rep.problems.extend(hash_problems)
        rep.seconds = time.perf_counter() - t0
        return rep
    if {k: fs(v) for k, v in an.epsilon.items()} != eps:
        rep.add("source.epsilon", f"stored {eps}, re-derived {({k: fs(v) for k, v in an.epsilon.items()})}")
    fresh_prem = _premises_json(an)
    for k in ("words", "n_max", "heads", "outputs"):
        if fresh_prem[k] != cert["premises"].get(k):
            rep.add(f"premises.{k}", "differs from the re-run exhaustive analysis")
    rep.checked.append(f"premises re-established by exhaustive enumeration ({an.stats.words} words)")
    for i, h in enumerate(_heads_json(an)):
        if i >= len(cert["heads"]) or cert["heads"][i]["table"] != h["table"] or cert["heads"][i]["leak_bound"] != h["leak_bound"]:
            rep.add(f"heads[{i}]", "logit table or leak bound differs from the re-derived one")
    for i, o in enumerate(cert["outputs"]):
        e = an.bound.outputs.get(o["output"])
        if e is None or o["bound"]["srepr"] != sp.srepr(e):
            rep.add(f"outputs[{i}].bound", "differs from the bound re-derived from the source")
    rep.checked.append("re-derived tables and bounds")
    # claims
    runs = _rebuild_runs(an, params)
    stored_claims = {c["id"]: (j, c) for j, c in enumerate(cert["claims"])}
    seen = set()
    for role, rs in runs.items():
        for r in rs:
            if r.spec.id not in stored_claims:
                rep.add("claims", f"no stored claim {r.spec.id} ({role})")
                continue
            j, x = stored_claims[r.spec.id]
            seen.add(r.spec.id)
            where = f"claims[{j}]"
            if x.get("role") != role:
                rep.add(f"{where}.role", f"{x.get('role')!r}, expected {role!r}")
            if x["expr_srepr"] != sp.srepr(r.spec.expr):
                rep.add(f"{where}.expr_srepr", "the claimed expression is not the bound at the stated temperature")
            if Fraction(x["tolerance"]) != r.spec.tolerance:
                rep.add(f"{where}.tolerance", f"{x['tolerance']} differs from {fs(r.spec.tolerance)}")
            if x["n_lo"] != r.spec.n_lo or x["n_hi"] != r.spec.n_hi:
                rep.add(f"{where}.n_lo/n_hi", f"[{x['n_lo']}, {x['n_hi']}] differs from [{r.spec.n_lo}, {r.spec.n_hi}]")
            if x.get("inv_tau") != fs(r.inv_tau):
                rep.add(f"{where}.inv_tau", f"{x.get('inv_tau')} differs from {fs(r.inv_tau)}")
            with arb_precision():
                _verify_claim(rep, where, x, r.spec, timeout_s, rerun_queries)
    for cid, (j, _) in stored_claims.items():
        if cid not in seen:
            rep.add(f"claims[{j}]", f"claim {cid} does not correspond to any answer")
    rep.checked.append("claims regenerated and re-run")
    # answers against their claims
    st = {c["id"]: c["status"] for c in cert["claims"]}
    A = cert["answers"]

    def need(field_, ids, want):
        for cid in ids or []:
            if st.get(cid) != want:
                rep.add(field_, f"claim {cid} is {st.get(cid)}, not {want}")

    if A["compiled"]["status"] == "proved":
        need("answers.compiled", A["compiled"]["claims"], "proved")
        if A["compiled"].get("exact_up_to") != an.n_table:
            rep.add("answers.compiled.exact_up_to", f"{A['compiled'].get('exact_up_to')} but the claims cover n <= {an.n_table}")
    expect = ("proved" if all(st.get(r.spec.id) == "proved" for r in runs["compiled"]) else
              "refuted" if any(st.get(r.spec.id) == "refuted" for r in runs["compiled"]) else "unknown")
    if cert["status"] != expect:
        rep.add("status", f"says {cert['status']} but the compiled claims give {expect}")
    for key, a, b in (("min_inv_tau", "claims", "claims_below"), ("longer_inputs", "claims", "claims_next"),
                      ("recompiled", "claims", "claims_next")):
        ans = A[key]
        if ans.get("status") == "proved":
            need(f"answers.{key}", ans.get(a), "proved")
            need(f"answers.{key}", ans.get(b), "refuted")
    if A["longer_inputs"].get("exact_up_to") != params["longer"].get("N"):
        rep.add("answers.longer_inputs.exact_up_to", "differs from source.parameters.longer.N")
    if A["recompiled"].get("N_c") != params["recompiled"].get("N_c"):
        rep.add("answers.recompiled.N_c", "differs from source.parameters.recompiled.N_c")
    if A["min_inv_tau"].get("inv_tau") != params["min_inv_tau"].get("inv_tau"):
        rep.add("answers.min_inv_tau.inv_tau", "differs from source.parameters.min_inv_tau.inv_tau")
    rep.checked.append("answers match their claims")
    # examples
    num = cert.get("numeric")
    if num:
        ex = confirm_examples(an)
        if ex["hard_reproduced"] != num["examples"]["hard_reproduced"]:
            rep.add("numeric.examples.hard_reproduced", f"stored {num['examples']['hard_reproduced']}, re-run gives "
                                                        f"{ex['hard_reproduced']}")
        if num["ok"] and (num["all_words"]["violations"] or num["all_words"]["mismatched_outputs"]):
            rep.add("numeric.ok", "says ok but violations or mismatches are recorded")
        rep.checked.append("examples re-run")
        _verify_all_words_rows(rep, num["all_words"], an)
    rep.problems.extend(hash_problems)
    rep.seconds = time.perf_counter() - t0
    return rep


def _verify_all_words_rows(rep: VerifyReport, aw: dict, an: Analysis) -> None:
    """Consistency of the stored all-words runs (not re-run): each row's bound re-evaluated at its
    (n, 1/τ), its ratio equal to observed/bound, and the violation count equal to the rows whose
    observation exceeds the bound beyond the allowance used by :func:`confirm_all_words`."""
    o = an.hm.outputs[0]
    viol = 0
    for j, p in enumerate(aw.get("per_inv_tau") or []):
        for k, r in enumerate(p.get("rows") or []):
            where = f"numeric.all_words.per_inv_tau[{j}].rows[{k}]"
            bd = float(evaluate(an.bound.outputs[o.name], n_value=r["n"], inv_tau=p["inv_tau"]))
            if abs(bd - r["bound"]) > 1e-12 * max(abs(bd), 1e-300):
                rep.add(f"{where}.bound", f"stored {r['bound']!r} but the bound at n = {r['n']} is {bd!r}")
            want = (r["observed"] / r["bound"]) if r["bound"] > 0 and r["resolved_in_float64"] else None
            if (want is None) != (r["ratio"] is None) or (want is not None and abs(want - r["ratio"]) > 1e-9 * max(1.0, want)):
                rep.add(f"{where}.ratio", f"stored {r['ratio']!r} but observed/bound gives {want!r}")
            if r["resolved_in_float64"] != (r["observed"] > 1e-14):
                rep.add(f"{where}.resolved_in_float64", "does not match the observed value")
            viol += r["observed"] > r["bound"] + ALL_WORDS_ALLOWANCE
    if viol != aw.get("violations"):
        rep.add("numeric.all_words.violations", f"stored {aw.get('violations')!r} but the stored rows show {viol}")
    rep.checked.append("all-words numeric rows consistent")
