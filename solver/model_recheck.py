"""Searched gap premises of a model certificate, rebuilt for the replay (verify): the stored values
re-evaluated exactly at their attaining inputs (docs/models.md; :mod:`softhard.solver.models`).

A searched analysis (:func:`softhard.constructions.gaps.analyse_gaps`, ``method="searched"``) is
not repeated by verify: its values are inputs, and every value that has an attaining input is
replaced by the exact value there — per head the gap, the gap to non-maximal positions, the ties
seen, the first tied row of the uniform-tieless check and the float64 separation; per output the
margin; per layer norm the variance.  What cannot be re-derived without the search (the words
tried, row counts) is copied, with consistency checks.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from ..constructions.errors import CertificateError
from ..constructions.exact_balls import exact_engine, margin_at
from ..constructions.gaps import GapReport, HeadGap, LNVariance, OutputMargin, float64_rounding_constant, read_rows
from ..constructions.hard_model import HardModel


def _attaining(att, hm: HardModel, n_max: int, where: str) -> tuple[tuple[str, ...], int] | None:
    if att is None:
        return None
    try:
        w, r = tuple(att["word"]), att["row"]
    except (KeyError, TypeError):
        raise CertificateError(f"{where}: not an attaining input {{word, row}}", path=where) from None
    if not (1 <= len(w) <= n_max and all(s in hm.alphabet for s in w) and isinstance(r, int) and 1 <= r <= len(w)):
        raise CertificateError(f"{where}: not a word of length 1..{n_max} over the alphabet with a row in 1..n",
                               path=where)
    return w, r


def recheck_report(hm: HardModel, stored: dict, n_max: int, where: str) -> GapReport:
    """A searched gap report rebuilt from its stored JSON (:func:`report_json`) with every value
    that has an attaining input re-evaluated exactly on ``hm`` at that input: per head the gap and
    the gap to non-maximal positions are the exact values there and the largest tie set is at
    least the ties seen there; per output the margin is the exact margin there.  The words and
    lengths tried, the seed and the notes are copied (searched values: the search is not re-run).
    Raises :class:`CertificateError` (with the JSON path) for a malformed entry."""
    eng = exact_engine(hm)

    def run(w):
        return eng.run(np.array([hm.encode(w)], dtype=np.int64))

    try:
        heads_j = {h["head"]: (i, h) for i, h in enumerate(stored["heads"])}
        outs_j = {o["output"]: (i, o) for i, o in enumerate(stored["outputs"])}
        heads, outputs = {}, {}
        for h in hm.all_heads():
            i, j = heads_j[h.name]
            hg = HeadGap(name=h.name, layer=h.layer, mask=h.mask, rule=h.rule, ties_max=int(j["ties_max"]))
            at = _attaining(j["attained_by"], hm, n_max, f"{where}.heads[{i}].attained_by")
            if at is not None:
                rows = run(at[0]).heads[h.name]
                hg.word, hg.row, hg.gap = at[0], at[1], rows.gap(0, at[1])
                hg.ties_max = max(hg.ties_max, int(rows.ties[0, at[1]]))
            _recheck_tieless(hg, j, run, hm, n_max, f"{where}.heads[{i}]")
            _recheck_float64(hg, j, run, hm, n_max, f"{where}.heads[{i}].float64")
            at = _attaining(j["attained_by_untied"], hm, n_max, f"{where}.heads[{i}].attained_by_untied")
            if at is not None:
                rows = run(at[0]).heads[h.name]
                hg.word_untied, hg.row_untied, hg.gap_untied = at[0], at[1], rows.aha_gap(0, at[1])
                hg.ties_max = max(hg.ties_max, int(rows.ties[0, at[1]]))
            heads[h.name] = hg
        for o in hm.outputs:
            i, j = outs_j[o.name]
            om = OutputMargin(name=o.name, type=o.type)
            at = _attaining(j["attained_by"], hm, n_max, f"{where}.outputs[{i}].attained_by")
            if at is not None and o.type != "numerical":
                if at[1] not in read_rows(o.at, len(at[0])):
                    raise CertificateError(f"{where}.outputs[{i}].attained_by: row {at[1]} is not read by the output",
                                           path=f"{where}.outputs[{i}].attained_by")
                om.word, om.row, om.margin = at[0], at[1], _margin_at(o, run(at[0]), at[1])
            outputs[o.name] = om
        lns = {}
        lns_j = {v["layernorm"]: (i, v) for i, v in enumerate(stored.get("layernorms", []))}
        for ln in (ln for lns_l in hm.lns for ln in lns_l):
            i, j = lns_j[ln.name]
            lv = LNVariance(name=ln.name)
            at = _attaining(j["attained_by"], hm, n_max, f"{where}.layernorms[{i}].attained_by")
            if at is not None:  # the word's smallest variance (the stored minimum is attained there)
                v, _, row = run(at[0]).ln_var[ln.name]
                lv.word, lv.row, lv.var = at[0], int(row), v
            lns[ln.name] = lv
        return GapReport(method="searched", n_max=n_max, alphabet_size=len(hm.alphabet), words=stored["words"],
                         lengths=stored["lengths"], heads=heads, outputs=outputs, seed=stored["seed"],
                         notes=stored["notes"], layernorms=lns)
    except KeyError as e:
        raise CertificateError(f"{where}: no stored searched value {e.args[0]!r}", path=where) from None


def _recheck_tieless(hg: HeadGap, j: dict, run, hm: HardModel, n_max: int, where: str) -> None:
    """The searched uniform-tieless check of one head (:class:`~softhard.constructions.gap_report.HeadGap`):
    the row counts are searched values (copied); a stored first tied row is re-evaluated exactly and
    must be tied (argmax set of ≥ 2 with a competitor outside it), and there is one iff the count of
    tied rows is positive.  Raises :class:`CertificateError` with the JSON path otherwise."""
    rows = j["rows"]
    hg.rows_uniform, hg.rows_unique, hg.rows_tied = (_count(rows[k], f"{where}.rows.{k}")
                                                     for k in ("uniform", "unique_max", "tied"))
    at = _attaining(j["tied_at"], hm, n_max, f"{where}.tied_at")
    if (at is None) != (hg.rows_tied == 0):
        raise CertificateError(f"{where}.tied_at: a tied row is stored exactly when rows.tied > 0",
                               path=f"{where}.tied_at")
    if at is not None:
        r = run(at[0]).heads[hg.name]
        amb = r.ambiguous is not None and bool(r.ambiguous[0, at[1]])
        if not (amb or (r.has_rest[0, at[1]] and r.ties[0, at[1]] >= 2)):
            raise CertificateError(f"{where}.tied_at: row {at[1]} of {' '.join(at[0])!r} is not tied (uniform or a "
                                   "unique maximum)", path=f"{where}.tied_at")
        hg.word_tied, hg.row_tied = at


def _recheck_float64(hg: HeadGap, j: dict, run, hm: HardModel, n_max: int, where: str) -> None:
    """The searched float64 separation of one head: the stored row re-evaluated exactly (its
    separation is the value there), the count of failing rows copied (a searched value), positive
    exactly when that separation is ≤ 1.  Raises :class:`CertificateError` with the JSON path."""
    f = j["float64"]
    if f is None:
        return
    hg.f64_checked, hg.f64_fail = True, _count(f["rows_failing"], f"{where}.rows_failing")
    at = _attaining(f["attained_by"], hm, n_max, f"{where}.attained_by")
    if at is None:
        return
    r = run(at[0]).heads[hg.name]
    b, i = 0, at[1]
    if r.f64_num is None or not r.has_rest[b, i]:
        raise CertificateError(f"{where}.attained_by: row {i} has no competitor", path=f"{where}.attained_by")
    hg.f64_word, hg.f64_row = at
    hg.f64_sep = Fraction(int(r.gap_num[b, i]), int(r.f64_num[b, i])) / (
        2 * float64_rounding_constant(*next(h for h in hm.all_heads() if h.name == hg.name).W_Q.shape))
    if (hg.f64_fail > 0) != (hg.f64_sep <= 1):
        raise CertificateError(f"{where}.rows_failing: positive exactly when the stored row's separation is <= 1",
                               path=f"{where}.rows_failing")


def _count(x, where: str) -> int:
    if not isinstance(x, int) or isinstance(x, bool) or x < 0:
        raise CertificateError(f"{where}: must be an integer >= 0, got {x!r}", path=where)
    return x


def _margin_at(o, run, row: int) -> Fraction:
    """Rounding margin of output ``o`` at ``row`` of a one-word exact run (as in the analysis; a
    rigorous lower bound for a model with layer norms)."""
    return margin_at(o, run, 0, row)
