"""CLI for compiled Tracr transformers (docs/tracr.md): ``softhard certify --tracr MODEL`` and
``softhard run --tracr MODEL WORD``.

:func:`register` is called by :func:`softhard.solver.cli.build_parser` after the model commands;
it adds ``--tracr`` to ``certify`` and ``run`` (routing to this module when given, otherwise
leaving both commands exactly as they were).  ``MODEL`` is ``NAME``, ``NAME.json`` or ``NAME.npz``
of an export (``../shared/tracr-models/frac_prevs``).  Exit status: 0 every compiled claim proved
and the numeric confirmation passed; 1 a claim refuted or unknown, or a numeric check failed; 2
bad input (one line naming the file and field).
"""

from __future__ import annotations

import json
from fractions import Fraction

import numpy as np

from ..constructions.errors import ParameterError
from ..constructions.exact import ExactEngine
from ..constructions.engine import forward
from ..constructions.parse import tokenize
from ..constructions.tracr_load import load_tracr
from ..constructions.parameters import to_fraction
from .certify_cli import status_line
from .certjson import check_output_path, write_certificate
from .cli import _fmt, stdout_console
from .tracr import certify_tracr


def register(sub) -> None:
    """Add ``--tracr`` (and its options) to ``certify`` and ``run``."""
    cert = sub.choices["certify"]
    cert.add_argument("--tracr", default=None, metavar="MODEL",
                      help="certify a compiled Tracr model (NAME, NAME.json or NAME.npz of an export): the lengths and "
                           "temperatures at which it stays exact (docs/tracr.md)")
    cert.add_argument("--n", type=int, default=None, metavar="N",
                      help="with --tracr: the length for the minimum-temperature answer (default max_seq_len)")
    _wrap(cert, cmd_certify_tracr, "certify")
    run = sub.choices["run"]
    run.add_argument("--tracr", default=None, metavar="MODEL", help="run a compiled Tracr model instead of a formula")
    _wrap(run, cmd_run_tracr, "run")


def _wrap(parser, fn, name: str) -> None:
    orig = parser.get_default("func")

    def dispatch(args):
        if getattr(args, "tracr", None):
            if getattr(args, "model", None):
                raise ParameterError("give either --tracr or --model, not both")
            if name == "certify" and getattr(args, "formula", None):
                raise ParameterError("give either a formula or --tracr, not both")
            return fn(args)
        if name == "certify" and getattr(args, "n", None) is not None:
            raise ParameterError("--n is for --tracr")
        return orig(args)

    dispatch.__name__ = getattr(orig, "__name__", "dispatch")
    parser.set_defaults(func=dispatch)


def _console():
    return stdout_console()


def _g(x, digits: int = 6) -> str:
    return _fmt(float(x), digits)


# --------------------------------------------------------------------------------------------
# certify --tracr


def cmd_certify_tracr(args) -> int:
    if args.tau is not None or args.find_tau:
        raise ParameterError("--tau/--find-tau do not apply to --tracr: the compiled temperature is fixed, and the "
                             "minimum temperature is always reported")
    eps = "margin"
    if getattr(args, "epsilon", None) not in (None, "margin"):
        eps = to_fraction(args.epsilon, "--epsilon")
        if eps <= 0:
            raise ParameterError(f"--epsilon must be > 0, got {args.epsilon}")
    if args.output:  # fail before the work if the output cannot be written
        check_output_path(args.output, force=args.force)
    tm = load_tracr(args.tracr)
    if args.n is not None and args.n < 1:
        raise ParameterError(f"--n must be >= 1, got {args.n}")
    from rich.console import Console
    err = Console(stderr=True, highlight=False)
    with err.status("analysing", spinner="dots") as st:
        say = (lambda s: st.update(s)) if not args.json else (lambda s: None)
        cert = certify_tracr(tm, epsilon=eps, n_target=args.n, timeout_s=args.timeout, numeric=not args.no_numeric,
                             progress=say)
    if args.output:
        write_certificate(cert, args.output, force=args.force)
    if args.json:
        print(json.dumps(cert, indent=1))
    else:
        print_tracr_certificate(cert, args.output)
    ok = cert["status"] == "proved" and (cert["numeric"] is None or cert["numeric"]["ok"])
    return 0 if ok else 1


def _tol_txt(answer: dict, var: str) -> str:
    """'epsilon', or the length-dependent tolerance an answer used (solver.tracr ``fraction_rule``)."""
    return f"0.999/(2{var}({var}-1))" if answer.get("tolerance_rule") else "epsilon"


def _st(s: str) -> str:
    col = {"proved": "green", "refuted": "red"}.get(s, "yellow")
    return f"[{col}]{s}[/{col}]"


def print_tracr_certificate(cert: dict, path=None) -> None:
    """Human-readable summary of a Tracr certificate (per output: the proved length range and the
    temperature it needs)."""
    con = _console()
    m = cert["model"]
    tr = cert["source"]["tracr"]
    lam = m["inv_tau_compiled"]
    con.print(f"[bold]{m['name']}[/bold] — Tracr model {tr['source']} (vocab {' '.join(m['vocab'])}, max_seq_len "
              f"{m['max_seq_len']}, {m['layers']} layer(s))")
    con.print(f"compiled temperature: nominal coldness c = {m['coldness_nominal']} ({m['coldness_source']}), key_size "
              f"K = {m['key_size']}  =>  effective 1/tau = c/sqrt(K) = {lam['decimal']} (claims use the rational "
              f"lower enclosure; every bound decreases in 1/tau)")
    con.print("residual blocks: " + ", ".join(
        f"{b['name']} ({b['kind']}{', ' + str(b['size']) + ' values' if b['kind'] == 'categorical' else ''})"
        for b in m["blocks"]))
    for note in m["notes"]:
        con.print(f"  note: {note}")
    pr = cert["premises"]
    con.print(f"premises: [green]{pr['status']}[/green], every word of length <= {pr['n_max']} "
              f"({cert['times']['analysis_s']:.2f} s)")
    for h in cert["heads"]:
        t = h["table"]
        p = next(x for x in pr["heads"] if x["head"] == h["head"])
        con.print(f"[bold]head {h['head']}[/bold] ({t['pattern']} pattern): logit table {len(t['query_states'])} query x "
                  f"{len(t['key_states'])} key states, levels {{{', '.join(t['levels'])}}} (unit scores: x 1/tau)")
        d1, d2 = p["bos_competitor"], p["bos_in_argmax"]
        if d1["rows"]:
            con.print(f"  rows with BOS a competitor: BOS gap {d1['gap_bos']}, other competitors' gap {d1['gap_rest']}, "
                      f"argmax >= {d1['a_min']}")
        if d2["rows"]:
            con.print(f"  rows with BOS in the argmax: competitors' gap {d2['gap_rest']}, argmax >= {d2['a_min']}")
        a = h["at_compiled_inv_tau"]
        con.print(f"  leak bound Theta(n, tau) = {h['leak_bound']['text']}")
        con.print(f"  at n = {a['n']}, compiled 1/tau: {a['structured']} (generic gap lemma: {a['generic']})")
    for mm in cert["mlps"]:
        con.print(f"[bold]MLP {mm['mlp']}[/bold]: {mm['rule']}")
        an = mm.get("analysis")
        if an and mm.get("condition"):
            con.print("  discretisation margins (distance of each hard input value to the nearest kink, exact): "
                      + ", ".join(f"z={c['z']}: {_g(c['margin_decimal'], 4) if c['margin'] else 'inf'}"
                                  + (" (on a ramp)" if c["slope"] else "") for c in an["contexts"]))
            con.print(f"  tolerated input error r_min = {an['r_min']} ({_g(an['r_min_decimal'], 6)}); slopes there "
                      f"{ {k: v for k, v in an['slopes'].items() if v != '0'} } (Lipschitz bound would be "
                      f"{max((Fraction(v) for v in an['lipschitz'].values()), default=0)})")
            con.print(f"  resolution condition: {mm['condition']['text']}")
        dec = mm.get("decoder")
        if dec:
            con.print(f"  count decoder (slope L = {dec['slope']}, matches the weights to {dec['max_kink_error']:.1e}): "
                      f"{dec['condition']}; with L = {dec['slope']}, counts up to {dec['max_count_decoded']} are decoded")
    for o in cert["outputs"]:
        con.print(f"[bold]output {o['output']}[/bold] ({o['type']}): margin {o['margin']}, epsilon = {o['epsilon']}; "
                  f"error(n, tau) <= {o['bound']['text']}")
    A = cert["answers"]
    a1, a2, a3, a4 = A["compiled"], A["min_inv_tau"], A["longer_inputs"], A["recompiled"]
    outs = ", ".join(f"{o['output']} ({o['type']}, epsilon {o['epsilon']})" for o in cert["outputs"])
    con.print(f"[bold]answers for output {outs}[/bold] (every one a set of Z3 claims, each re-checked in arb "
              "interval arithmetic):")
    if a1["status"] == "proved":
        con.print(f" 1. at the compiled 1/tau = {a1['inv_tau_decimal']}: within epsilon for every n in [1, "
                  f"{a1['exact_up_to']}] {_st('proved')} — limited by {a1['limited_by']}")
    else:
        con.print(f" 1. at the compiled 1/tau = {a1['inv_tau_decimal']}: {_st(a1['status'])}; within epsilon for n <= "
                  f"{a1.get('exact_up_to')}, first failure of the bound at n = {a1.get('first_failure')}")
    if a2.get("inv_tau") and a2["inv_tau"] != "0":
        con.print(f" 2. smallest 1/tau for every n <= {a2['n']}: {a2['inv_tau_decimal']} {_st(a2['status'])} (the bound's claim is refuted at "
                  f"{a2['refuted_below_decimal']}: the bound, not necessarily the model, fails below; binding: {a2['binding']}) = nominal coldness {a2['nominal_coldness']} "
                  f"at key_size {a2['key_size']}"
                  + ("" if a2.get("premise") == "exhaustive" else f" — {a2.get('premise')} premises beyond max_seq_len")
                  + ("" if not a2.get("recompiled_for_n") else
                     f"; compiled for max_seq_len {a2['n']}: key_size {a2['recompiled_for_n']['key_size']}, nominal "
                     f"coldness {a2['recompiled_for_n']['nominal_coldness']}"))
    else:
        con.print(f" 2. smallest 1/tau for n <= {a2.get('n')}: {a2.get('note') or a2.get('reason')}")
    if a3.get("exact_up_to"):
        con.print(f" 3. longer inputs at the compiled 1/tau ({a3['meaning']}): within {_tol_txt(a3, 'n')} for every "
                  f"n <= {a3['exact_up_to']} {_st(a3['status'])}, not certifiable at {a3['exact_up_to'] + 1} "
                  f"(binding: {a3['binding']})")
        if a3.get("tolerance_rule"):
            con.print(f"    tolerance: {a3['tolerance_rule']}")
        for note in a3.get("hard_vs_program") or []:
            con.print(f"    [yellow]but[/yellow]: {note}")
    elif a3.get("all_n"):
        con.print(f" 3. longer inputs at the compiled 1/tau ({a3['meaning']}): within epsilon for every n — the bound "
                  f"does not grow with n {_st(a3['status'])}")
    else:
        con.print(f" 3. longer inputs: {_st(a3['status'])} {a3.get('reason', '')}")
    if a4.get("N_c") is not None and a4.get("hard_failure_next"):
        f = a4["hard_failure_next"]
        con.print(f" 4. compiled for max_seq_len N (hypothetical; {a4['key_size_rule']}): exact for every N <= {a4['N_c']} "
                  f"{_st(a4['status'])} (claims for each N with the count decoder's margins at N); at N = "
                  f"{f['N']} the hard model itself decodes count {f['count']} as {f['decoded']} (MLP resolution "
                  "condition w(w+1) < L)")
    elif a4.get("N_c") is not None:
        con.print(f" 4. compiled for max_seq_len N (hypothetical; {a4['key_size_rule']}): with the same coldness, within "
                  f"{_tol_txt(a4, 'N')} for every n <= N for every N <= {a4['N_c']} {_st(a4['status'])} (1/tau = "
                  f"{a4['inv_tau_at_N_c_decimal']} at N = {a4['N_c']}), not at N = {a4['N_c'] + 1}")
    else:
        con.print(f" 4. compiled for max_seq_len N: {a4.get('note') or a4.get('reason')}")
    if a4.get("hard_model_exact_up_to") is not None and not a4.get("hard_failure_next"):
        con.print(f"    the hard model itself decodes every count correctly only for max_seq_len <= "
                  f"{a4['hard_model_exact_up_to']} (MLP resolution condition)")
    num = cert["numeric"]
    if num:
        ex = num["examples"]
        aw = num["all_words"]
        comp = next(p for p in aw["per_inv_tau"] if p["compiled"])
        ratios = [r["ratio"] for r in comp["rows"] if r["ratio"] is not None]
        hp = aw["high_precision"][0] if aw["high_precision"] else None
        con.print(f"numeric: {ex['count']} stored examples — hard reproduces RASP: {ex['hard_reproduced']} (numpy hard: "
                  f"{ex['numpy_hard_reproduced']}), soft agrees: {ex['soft_reproduced']}" + (f" (vs stored numpy soft {ex['max_abs_soft_minus_stored_numpy_soft']:.2g}, "
                                               f"JAX float32 {ex['max_abs_soft_minus_stored_jax_float32']:.2g})"
                                               if ex.get("max_abs_soft_minus_stored_numpy_soft") is not None else ""))
        con.print(f"  all {aw['families']['exhaustive']} words: observed/bound "
                  + (f"up to {max(ratios):.10g}" if ratios else "below float64 resolution")
                  + (f"; 50 digits at n = {hp['n']}: {hp['observed_mp50']} vs bound {hp['bound']} (ratio "
                     f"{hp['ratio']:.4g}, '{hp['word']}')" if hp else "")
                  + f"; bound exceeded: {aw['violations']}, outputs differing: {aw['mismatched_outputs']}")
    con.print(status_line(cert, path))


# --------------------------------------------------------------------------------------------
# run --tracr


def cmd_run_tracr(args) -> int:
    tm = load_tracr(args.tracr)
    hm = tm.hard_model()
    # space-separated tokens (Tracr vocabularies may have multi-character tokens), else characters
    if " " in args.string.strip():
        word = args.string.split()
        for i, t in enumerate(word, 1):
            if t not in hm.alphabet:
                raise ParameterError(f"token {t!r} at position {i} is not in the vocabulary {{{' '.join(hm.alphabet)}}}")
    else:
        word = tokenize(args.string, hm.alphabet)
    hm.check_length(len(word))
    lam = float(1 / args.tau) if args.tau is not None else tm.inv_tau_float
    tr = hm.transformer()
    o = hm.outputs[0]
    x = ExactEngine(hm).run(np.array([hm.encode(word)], dtype=np.int64)).x
    hard = [[Fraction(int(v), x.den) for v in x.num[0, i, o.coords]] for i in range(1, len(word) + 1)]
    soft = forward(tr, tr.encode([word]), mode="soft", inv_tau=lam).x[0][1:, o.coords]
    rasp = next((e["rasp"] for e in tm.examples if e["input"] == list(word)), None)
    rows = []
    for i, w in enumerate(word):
        if o.type == "categorical":
            hd = o.classes[int(np.argmax([float(v) for v in hard[i]]))]
            sd = o.classes[int(np.argmax(soft[i]))]
        else:
            hd, sd = float(hard[i][0]), float(soft[i][0])
        rows.append({"position": i + 1, "token": w, "hard": hd, "soft": sd,
                     "max_abs_soft_minus_hard": float(np.max(np.abs(soft[i] - np.array([float(v) for v in hard[i]])))),
                     "rasp": None if rasp is None else rasp[i]})
    res = {"model": tm.name, "word": word, "inv_tau": lam, "tau_source": "--tau" if args.tau else "compiled c/sqrt(key_size)",
           "positions": rows}
    if args.json:
        print(json.dumps(res, indent=1, default=str))
        return 0
    from rich.table import Table
    con = _console()
    con.print(f"[bold]{tm.name}[/bold] on {' '.join(word)} (n = {len(word)}), 1/tau = {_g(lam, 10)} ({res['tau_source']})")
    t = Table(show_header=True, header_style="bold")
    for col in ("pos", "token", "hard (exact)", "soft", "|soft - hard|", "stored RASP"):
        t.add_column(col, justify="right")
    for r in rows:
        t.add_row(str(r["position"]), r["token"], str(r["hard"]) if o.type == "categorical" else _g(r["hard"], 10),
                  str(r["soft"]) if o.type == "categorical" else _g(r["soft"], 10), _g(r["max_abs_soft_minus_hard"], 3),
                  "-" if r["rasp"] is None else str(r["rasp"]))
    con.print(t)
    return 0
