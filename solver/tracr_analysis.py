"""Tracr certificates, step 1: the exact analysis behind every answer (THEORY §2, §3, §6; docs/tracr.md).

:func:`model_info` extracts what the analysis needs from a Tracr export besides the converted
model document (embedded in the certificate's ``source.tracr``); :func:`check_source` checks the
two against each other when a certificate is replayed; :func:`analyse` enumerates every word up to
``max_seq_len`` in exact arithmetic (:func:`softhard.constructions.tracr_gaps.analyse`), builds
the logit tables, the exhaustive and the extrapolated premises, the composed bounds
(:func:`softhard.bounds.tracr.compose`), the tolerances ε, the compiled temperature's rational
enclosure, the key_size rule and the SelectorWidth count decoders.  Deterministic in its inputs:
certify and replay (verify) call it alike.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import ROUND_FLOOR, Decimal, localcontext
from fractions import Fraction
from typing import Callable

import mpmath

from ..bounds.tracr import LogitTable, TracrBound, compose, fs, logit_table
from ..bounds.tracr_extrapolation import selector_width_contexts, token_determined
from ..bounds.tracr_rules import (discretising_rule, key_size_from_terms, key_size_terms, max_sw_count,
                                  selector_width_decoder)
from ..constructions.errors import CertificateError, ParameterError, SofthardError
from ..constructions.hard_model import HardModel
from ..constructions.tracr import TracrModel, sqrt_ratio_enclosure
from ..constructions.tracr_gaps import CaseStats, Stats, analyse as exact_stats

DIGITS = 12


def fd(x: Fraction | None, digits: int = 12) -> str | None:
    """``x`` as a decimal string with ``digits`` significant digits (None stays None)."""
    if x is None:
        return None
    with mpmath.workdps(40):
        return mpmath.nstr(mpmath.mpf(x.numerator) / x.denominator, digits)


def down_digits(x, digits: int = DIGITS) -> Fraction:
    """Largest decimal with ``digits`` significant digits that is ≤ x (x: mpf or Fraction > 0)."""
    with localcontext() as ctx:
        ctx.prec = digits
        ctx.rounding = ROUND_FLOOR
        s = mpmath.nstr(mpmath.mpf(x.numerator) / x.denominator if isinstance(x, Fraction) else x, digits + 10,
                        strip_zeros=False)
        return Fraction(+Decimal(s))


# --------------------------------------------------------------------------------------------
# the information a certificate needs besides the converted model


def positional_coords(hm: HardModel) -> list[int]:
    """Residual coordinates the positional table writes at some non-BOS position."""
    if hm.table is None:
        return []
    return [a for a in range(hm.d) if any(x != 0 for x in hm.table[1:, a])]


def model_info(tm: TracrModel) -> dict:
    """What :func:`analyse` and the numeric confirmation need from the Tracr export besides the
    converted model document (JSON-ready; the certificate's ``source.tracr``).

    Read by the replay: ``max_seq_len``, ``key_size``, ``coldness`` (checked against the model
    document by :func:`check_source`), ``key_size_rule`` (:func:`softhard.bounds.tracr.key_size_terms`
    of the export's module descriptions), ``examples`` (the numeric confirmation); copied into the
    certificate's ``model`` section: ``name``, ``label``, ``num_heads``, ``coldness_source``,
    ``mlp_exactness``, ``notes``.  Provenance only (annotations, read by nothing): ``source``,
    ``files``, ``sops``, ``modules``."""
    pos = sorted({tm.block_of(a).name for a in tm.positional_coords()})
    return {"name": tm.name, "label": tm.label, "source": tm.source, "max_seq_len": tm.max_seq_len,
            "key_size": tm.key_size, "num_heads": tm.num_heads, "coldness": fs(tm.coldness),
            "coldness_source": tm.coldness_source, "mlp_exactness": tm.mlp_exactness,
            "key_size_rule": key_size_terms(tm.modules, set(pos)),
            "sops": tm.sops, "modules": tm.modules, "files": tm.files, "notes": list(tm.notes),
            "examples": [{k: ex.get(k) for k in ("input", "rasp", "compiled_jax", "numpy_soft", "numpy_hard")}
                         for ex in tm.examples]}


def _pos_int(x, where: str) -> int:
    if isinstance(x, bool) or not isinstance(x, int) or x < 1:
        raise CertificateError(f"{where}: expected a positive integer, got {x!r}", path=where)
    return x


def check_source(hm: HardModel, doc: dict, info: dict) -> None:
    """Raise :class:`CertificateError` (with the field's path) unless the export's metadata in a
    certificate's ``source.tracr`` agrees with its model document: ``max_seq_len`` is the
    positional table's length, ``key_size`` the heads' width, ``coldness`` a positive rational
    whose enclosure ``coldness/sqrt(key_size)`` is the document's ``inv_tau``, ``name`` the
    document's name."""
    N = _pos_int(info["max_seq_len"], "source.tracr.max_seq_len")
    K = _pos_int(info["key_size"], "source.tracr.key_size")
    _pos_int(info["num_heads"], "source.tracr.num_heads")
    if hm.table is not None and hm.table.shape[0] != N + 1:
        raise CertificateError(f"source.tracr.max_seq_len: {N}, but the model's positional table has "
                               f"{hm.table.shape[0] - 1} positions", path="source.tracr.max_seq_len")
    for hs in hm.heads:
        for h in hs:
            if h.W_Q.shape[1] != K:
                raise CertificateError(f"source.tracr.key_size: {K}, but head {h.name} has width {h.W_Q.shape[1]}",
                                       path="source.tracr.key_size")
    try:
        c = Fraction(str(info["coldness"]))
    except (ValueError, ZeroDivisionError):
        c = None
    if c is None or c <= 0 or fs(c) != info["coldness"]:
        raise CertificateError(f"source.tracr.coldness: {info['coldness']!r} is not a positive rational 'p/q'",
                               path="source.tracr.coldness")
    if fs(sqrt_ratio_enclosure(c, K)[0]) != doc.get("inv_tau"):
        raise CertificateError("source.tracr.coldness: coldness/sqrt(key_size) does not give the model's inv_tau",
                               path="source.tracr.coldness")
    if info["name"] != doc.get("name"):
        raise CertificateError("source.tracr.name: not the model's name", path="source.tracr.name")


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
    """Everything the answers prove claims about (module docstring)."""

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
    #: memoised results of deterministic re-runs on this analysis (the stored examples)
    cache: dict = field(default_factory=dict, repr=False)

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
    bound = compose(hm, dprem, data.contexts, N, z_values=zv, label="exhaustive",
                    mlp_heads={k: {"heads": v.heads, "outputs": v.head_out,
                                   "values": {h: (st.values_nonbos, st.values_bos) for h, st in stats.heads.items()}}
                               for k, v in stats.mlps.items()}, tolerance=eps)
    # extrapolation beyond max_seq_len
    ext, bound_ext, why = _extension(hm, info, stats, tables, dirs)
    # key_size as a function of max_seq_len
    fn, txt = key_size_from_terms(info["key_size_rule"], int(info["key_size"]), N)
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
        if mi.get("region") is not None:
            info_out[name]["region"] = [{"z": fs(r["z"]), "rho": fs(r["rho"]), "L": fs(r["L"])} for r in mi["region"]]
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
