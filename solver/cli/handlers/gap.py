"""``softhard gap``: the minimum attention-score gap of every head of a model file (THEORY §2, §6),
exhaustive or searched (:func:`softhard.constructions.gaps.analyse_gaps`), and again after the UHA
tie-break when one is planned.  Exit 1 when a gap is 0 (not simulable by softmax this way)."""

from __future__ import annotations

import json

from rich.table import Table

from ....constructions.gaps import analyse_gaps
from ....constructions.tie_breaks import plan_tie_breaks, tie_break
from ....constructions.modelfile import load_model
from ...models import check_exhaustive_limit
from .console import fmt, progress, stdout_console


def handle(args) -> int:
    """The gap report (and, with the tie-break, the report after it); exit 1 when a gap is 0.
    Raises :class:`ParameterError` for an ``--exhaustive-limit`` above the most words an exhaustive
    analysis enumerates (the same maximum as ``certify --model``: the work stays bounded)."""
    check_exhaustive_limit(args.exhaustive_limit, "an exhaustive analysis that large would not finish "
                           "(use --method searched for longer words)",
                           cap_is="the most words an exhaustive gap analysis enumerates")
    spec = load_model(args.model)
    hm = spec.canonical()
    opts = dict(exhaustive_limit=args.exhaustive_limit, search_words=args.search_words,
                search_max_len=args.search_max_len, seed=args.seed, method=args.method)
    after = None
    infos = []
    with progress("gap analysis") as say:
        rep = analyse_gaps(hm, args.n_max, progress=say, **opts)
        betas = plan_tie_breaks(rep) if args.tie_break == "auto" else {}
        if betas:
            hm2, infos = tie_break(hm, betas, args.n_max, {h: rep.heads[h].gap_untied for h in betas})
            after = analyse_gaps(hm2, args.n_max, progress=lambda s: say(f"after the tie-break: {s}"), **opts)
    final = after or rep
    result = {"model": spec.name, "file": spec.path, "n_max": args.n_max, "report": rep.to_json(),
              "tie_break": [t.to_json() for t in infos] or None,
              "report_after_tie_break": after.to_json() if after else None,
              "simulable": final.simulable,
              "verdict": verdict(final)}
    if args.json:
        print(json.dumps(result, indent=1))
    else:
        print_gap(spec, rep, "gap analysis")
        if after:
            con = stdout_console()
            con.print("[bold]UHA tie-break[/bold] (THEORY §4): score += beta*p_j, p_j = j/n (rightmost) or -j/n (leftmost)")
            for t in infos:
                g_after = after.heads[t.head].gap
                con.print(f"  {t.head}: beta = {t.beta}; untied gap before {fmt(t.gap_untied) if t.gap_untied else '-'}"
                          f", predicted after >= {fmt(t.predicted_gap)}, found after "
                          f"{fmt(g_after) if g_after is not None else '-'}"
                          + (f" (cost factor {float(t.gap_untied / g_after):.4g})" if t.gap_untied and g_after else ""))
            print_gap(spec, after, "gap analysis after the tie-break")
        stdout_console().print(result["verdict"])
    return 0 if final.simulable else 1


def verdict(rep) -> str:
    """One line: simulable (every gap positive) or not, with the witness; exhaustive or searched."""
    z = rep.zero_gap()
    how = ("established exhaustively" if rep.exhaustive else "searched, NOT proved")
    if z:
        h = z[0]
        return (f"NOT simulable this way: head {h.name} ({h.rule}) has gap 0 on input {' '.join(h.word)!r} at query "
                f"row {h.row} ({how}).")
    return f"every head has a positive gap on inputs of length <= {rep.n_max} ({how})."


def tieless_cell(h) -> str:
    """The uniform-tieless verdict of one head: yes/no with its row counts, or the first tied row."""
    if h.tieless:
        return f"yes ({h.rows_uniform} uniform, {h.rows_unique} unique-max rows)"
    return f"no: {h.rows_tied} tied rows, first {' '.join(h.word_tied)} ({h.row_tied})"


def print_gap(spec, rep, title) -> None:
    """A gap report as a table (per head: gap, attaining input, ties), output margins, notes."""
    con = stdout_console()
    con.print(f"[bold]{spec.name}[/bold]: {title}, {rep.method} over {rep.words} words of length <= {rep.n_max} "
              f"({rep.seconds:.2f} s)")
    t = Table(show_header=True, header_style="bold")
    for col in ("head", "layer", "mask", "rule", "gap", "attained by (row)", "max ties", "untied gap", "tieless"):
        t.add_column(col, overflow="fold")
    for h in rep.heads.values():
        t.add_row(h.name, str(h.layer), h.mask, h.rule,
                  "-" if h.gap is None else f"{h.gap} ({fmt(h.gap)})",
                  "-" if h.word is None else f"{' '.join(h.word)} ({h.row})", str(h.ties_max),
                  "-" if h.gap_untied is None else fmt(h.gap_untied), tieless_cell(h))
    con.print(t)
    con.print("  tieless: every row uniform (all scores equal: soft = AHA average exactly) or with a unique maximum "
              "(arXiv 2412.09925v1); the composed bound then uses the tie-free form (THEORY §6)")
    for o in rep.outputs.values():
        if o.margin is not None:
            con.print(f"  output {o.name} ({o.type}): margin {o.margin} ({fmt(o.margin)}) at "
                      f"{' '.join(o.word)} (position {o.row})")
    for h in rep.heads.values():
        if h.f64_fail:
            con.print(f"  [yellow]float64[/yellow]: head {h.name} has {h.f64_fail} row(s) whose score gap is within "
                      f"twice the float64 rounding error of the scores, worst {' '.join(h.f64_word)} ({h.f64_row}): "
                      "a float64 run may not pick the hard argmax there (certify's precision.float64_premise)")
    for note in rep.notes:
        con.print(f"  [yellow]note[/yellow]: {note}")
