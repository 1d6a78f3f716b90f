"""The ``softhard`` command line.

Subcommands: ``run`` (run the hard and soft transformers on one word), ``bound`` (symbolic node
bounds and required temperatures), ``confirm`` (numeric confirmation of the bounds), ``certify``
and ``verify`` (solver-checked certificates).  Exit status: 0 success, 1 a claim was refuted or
unknown / a check failed, 2 bad input (one-line message, no traceback).
"""

from __future__ import annotations

import argparse
import json
import sys
from fractions import Fraction

import mpmath
import numpy as np

from ..constructions.errors import ParameterError, SofthardError
from ..constructions.parameters import to_fraction

EXIT_OK, EXIT_FAIL, EXIT_BAD_INPUT = 0, 1, 2


#: set by :func:`main`: the command line asked for ``--json``, so usage errors print a JSON object too
_JSON_ERRORS = False


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2 (and the JSON object scripts expect with --json)
        if _JSON_ERRORS:
            print(json.dumps({"error": message, "kind": "UsageError", "exit": EXIT_BAD_INPUT}))
        self.exit(EXIT_BAD_INPUT, f"softhard: error: {message} (see 'softhard {self.prog.split()[-1]} --help')\n"
                  if " " in self.prog else f"softhard: error: {message}\n")


def int_option(name: str, minimum: int, why: str = ""):
    """argparse type: an integer ``>= minimum`` (a one-line usage error otherwise)."""
    def conv(s: str) -> int:
        try:
            v = int(s)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} must be an integer, got {s!r}") from None
        if v < minimum:
            raise argparse.ArgumentTypeError(f"{name} must be >= {minimum}{why}, got {v}")
        return v
    return conv


def _positive_int(name: str):
    return int_option(name, 1, " (n < 1 is not a length)")


def _nonneg_int(name: str):
    return int_option(name, 0)


#: the longest solver time limit accepted (one day): beyond it a "limit" is no limit
MAX_TIMEOUT_S = 86400.0


def seconds_option(s: str) -> float:
    """argparse type of ``--timeout``: seconds, finite, in (0, MAX_TIMEOUT_S]."""
    try:
        v = float(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--timeout must be a number of seconds, got {s!r}") from None
    if not (0 < v <= MAX_TIMEOUT_S):  # also rejects nan
        raise argparse.ArgumentTypeError(f"--timeout must be > 0 and <= {MAX_TIMEOUT_S:g} seconds, got {s}")
    return v


def _tau(s: str) -> Fraction:
    try:
        v = to_fraction(s, "tau")
    except ParameterError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    if v <= 0:
        raise argparse.ArgumentTypeError(f"tau must be > 0, got {s}")
    if not (Fraction(1, 10**300) <= v <= 10**300):  # numeric runs need 1/tau as a float64
        raise argparse.ArgumentTypeError(f"tau must be between 1e-300 and 1e300 (numeric runs use 1/tau as a "
                                         f"float64), got {s}")
    return v


def _common(p: argparse.ArgumentParser, n_max: bool = False):
    p.add_argument("formula", metavar="FORMULA_OR_FILE",
                   help="an inline formula (e.g. 'a S b') or a .ltl file declaring alphabet and formula")
    p.add_argument("--regime", choices=["T", "U", "P"], default="T",
                   help="T: bounded PE j/n, temperature tau(n) shrinking with n; U: unbounded PE j, one fixed "
                        "tau (THEORY §1, §4); P: U plus j^2 and (-1)^j, needed by even()/odd() (THEORY §5). "
                        "Default T")
    p.add_argument("--alphabet", default=None,
                   help="alphabet of an inline formula: a string of one-character symbols (default: the "
                        "symbols the formula mentions); given with a .ltl file, it replaces the file's alphabet")
    p.add_argument("--eta", default="1/4", help="clean-up margin eta in (0, 1/2), exact (e.g. 1/4); default 1/4")
    p.add_argument("--beta", default="1/4", help="regime T tie-break weight, 0 < beta <= 1/4; default 1/4")
    p.add_argument("--comparator", choices=["ln", "head", "pe"], default=None,
                   help="how count comparisons are built (THEORY §5): ln = layer norm of [F, -F] (exact at "
                        "eps_ln = 0), head = temperature-scaled comparator head (1/tau = Theta(n)), pe = "
                        "unbounded-PE comparator head (regimes U, P: one tau for all n). Default: pe in regimes "
                        "U and P, head in regime T")
    p.add_argument("--eps-ln", default=None,
                   help="layer-norm epsilon >= 0 of the ln comparator, exact (e.g. 1e-12). Default 0 (exact); "
                        "certify --find-tau searches the largest certifiable value when this is not given")
    p.add_argument("--json", action="store_true", help="print machine-readable JSON instead of tables")


def build_parser() -> argparse.ArgumentParser:
    ap = _Parser(prog="softhard", description=(
        "softhard: when does softmax attention compute exactly what hard attention computes? "
        "Compiles temporal-logic formulas to hard- and soft-attention transformers, derives "
        "per-node error bounds in SymPy, proves parameter choices with Z3, and confirms numerically."))
    from importlib import metadata
    try:
        ver = metadata.version("softhard")
    except metadata.PackageNotFoundError:  # pragma: no cover - running from a source tree
        ver = "unknown"
    ap.add_argument("--version", action="version", version=f"softhard {ver}")
    sub = ap.add_subparsers(dest="cmd", metavar="COMMAND", parser_class=_Parser)
    sub.required = True

    p = sub.add_parser("run", help="run the hard and soft transformers of a formula on one word",
                       description="Run the hard (UHA) and soft (softmax) transformers of a formula on STRING and "
                                   "print, per position, the reference value, the hard value, the soft clean value, "
                                   "and each attention node's soft value before clean-up.")
    _common(p)
    p.add_argument("string", metavar="STRING", help="the input word (characters, or space-separated symbols)")
    p.add_argument("--tau", type=_tau, default=None,
                   help="temperature tau > 0 (e.g. 1/1000). Default: the closed-form tau*(n, eta) that the node "
                        "bounds require (regime T: at the word's length; regime U: one tau for all n)")
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("bound", help="symbolic per-node leak bounds and required inverse temperatures",
                       description="Per attention node: the tight SymPy leak bound, the inverse temperature it needs "
                                   "at --n-max (tight numeric, closed form, generic gap lemma) and the asymptotic "
                                   "order as n grows.")
    _common(p)
    p.add_argument("--n-max", type=_positive_int("--n-max"), default=1000, help="largest word length (default 1000)")
    p.add_argument("--latex", action="store_true", help="print the bounds as LaTeX")
    p.set_defaults(func=cmd_bound)

    p = sub.add_parser("confirm", help="numeric confirmation of the node bounds on many inputs",
                       description="Run the soft transformer on (a) every word up to --exhaustive-len, (b) --random "
                                   "random words up to --n-max, (c) adversarial words per node, and compare each "
                                   "node's worst leak with its bound (tightness = observed/bound).")
    _common(p)
    p.add_argument("--n-max", type=_positive_int("--n-max"), default=1000, help="longest random/adversarial word")
    p.add_argument("--exhaustive-len", type=_nonneg_int("--exhaustive-len"), default=10,
                   help="all words up to this length (default 10)")
    p.add_argument("--random", type=_nonneg_int("--random"), default=1000, help="number of random words (default 1000)")
    p.add_argument("--seed", type=_nonneg_int("--seed"), default=0, help="random seed (>= 0)")
    p.add_argument("--tau", type=_tau, default=None,
                   help="fixed temperature for every length (default: the tight 1/tau(n) at each length)")
    p.set_defaults(func=cmd_confirm)

    from . import certify_cli
    certify_cli.register(sub, _common, _positive_int, _tau)
    from . import models_cli  # model files: gap, hahn, run --model, certify --model (THEORY §1, §6)
    models_cli.register(sub, _common, _positive_int, _tau)
    from . import tracr_cli  # compiled Tracr models: certify --tracr, run --tracr (docs/tracr.md)
    tracr_cli.register(sub)
    return ap


# ---------------------------------------------------------------------------------------------


def _load(args):
    from ..constructions.parse import load_spec
    return load_spec(args.formula, alphabet=args.alphabet)


def _eps_ln(args):
    """``--eps-ln`` as an exact Fraction ≥ 0, or None (not given)."""
    if args.eps_ln is None:
        return None
    from ..constructions.parameters import check_eps_ln
    try:
        return check_eps_ln(to_fraction(args.eps_ln, "--eps-ln"))
    except ParameterError as e:
        raise ParameterError(f"--eps-ln: {e}") from None


def _construction(args, spec=None):
    from ..constructions.parameters import check_beta, check_eta
    from .pipeline import build
    checked = {}
    for opt, check in (("--beta", check_beta), ("--eta", check_eta)):
        try:
            checked[opt] = check(to_fraction(getattr(args, opt[2:]), opt))
        except ParameterError as e:
            raise ParameterError(f"argument {opt}: {str(e).removeprefix(f'{opt}: ')}") from None
    spec = spec or _load(args)
    return build(spec, args.regime, beta=checked["--beta"], eta=checked["--eta"],
                 comparator=args.comparator, eps_ln=_eps_ln(args))


def _fmt(x: float, digits: int = 6) -> str:
    if x == 0:
        return "0"
    if 1e-4 <= abs(x) < 1e6:
        return f"{x:.{digits}g}"
    return f"{x:.{max(digits - 2, 2)}e}"


#: width of tables written to a pipe or file (no terminal to fit; COLUMNS still wins)
PIPE_WIDTH = 160


def stdout_console():
    """The rich console the commands print to: a terminal's own width; piped or redirected,
    ``PIPE_WIDTH`` columns unless ``COLUMNS`` is set, so tables in logs do not wrap at 80."""
    import os

    from rich.console import Console
    width = None
    if not sys.stdout.isatty() and not os.environ.get("COLUMNS"):
        width = PIPE_WIDTH
    return Console(highlight=False, soft_wrap=False, width=width)


_console = stdout_console


def cmd_run(args) -> int:
    from ..bounds.confirm import confirm
    from ..constructions.engine import forward
    from ..constructions.parse import tokenize
    from ..constructions.semantics import truth

    c = _construction(args)
    word = tokenize(args.string, c.spec.alphabet)
    n = len(word)
    inv_tau = float(1 / args.tau) if args.tau is not None else c.default_inv_tau(n)
    if not np.isfinite(inv_tau) or inv_tau <= 0:
        raise ParameterError(f"--tau {args.tau} gives an inverse temperature outside the float64 range")
    m = c.model
    tok = m.encode([word])
    hard = forward(m, tok, mode="hard")
    soft = forward(m, tok, mode="soft", inv_tau=inv_tau)
    root = m.index(m.outputs[0])
    ref = truth(c.spec.formula, word)
    at = c.spec.at
    k = n - 1 if at == "last" else 0
    heads = list(c.bounds)
    rows = []
    for p in range(n):
        rows.append({
            "position": p + 1, "symbol": word[p], "reference": int(ref[p]),
            "hard": float(hard.x[0, p + 1, root]), "soft": float(soft.x[0, p + 1, root]),
            "raw": {h: float(soft.x[0, p + 1, m.index(f"raw:{h}")]) for h in heads},
        })
    # per node: worst leak against its bound with the computed rounding allowance (bounds.confirm)
    conf = confirm(m, c.bounds, {"word": [word]}, inv_tau, beta=c.beta, eta=c.eta)
    leaks = {}
    for ch in conf.checks:
        leaks[ch.node] = {"observed_leak": ch.observed, "bound": ch.bound, "within_eta": ch.bound <= float(c.eta),
                          "exceeded": ch.exceeds, "allowance_rel": ch.allowance_rel,
                          # a node's bound assumes clean inputs: every attention node below it within eta
                          "premise": ch.premise}
    result = {
        "formula": str(c.spec.formula), "alphabet": list(c.spec.alphabet), "word": word, "n": n,
        "regime": c.regime, "beta": str(c.beta), "eta": str(c.eta), "inv_tau": inv_tau, "tau": 1 / inv_tau,
        "comparator": c.source.get("comparator"), "eps_ln": str(c.params.eps_ln) if c.params.eps_ln is not None else None,
        "tau_source": "--tau" if args.tau is not None else "closed form 1/tau*(n, eta)",
        "judged_at": at, "positions": rows,
        "accepted": {"reference": bool(ref[k]), "hard": bool(hard.x[0, k + 1, root] > 0.5),
                     "soft": bool(soft.x[0, k + 1, root] > 0.5)},
        "heads": leaks,
    }
    agree = result["accepted"]["hard"] == result["accepted"]["soft"]
    rc = EXIT_OK if agree else EXIT_FAIL
    if args.json:
        print(json.dumps(result, indent=2))
        return rc
    from rich.table import Table
    con = _console()
    con.print(f"[bold]{c.spec.formula}[/bold]  over {{{', '.join(c.spec.alphabet)}}}, regime {c.regime}, n = {n}, "
              f"1/tau = {_fmt(inv_tau)} ({result['tau_source']}), eta = {c.eta}")
    t = Table(show_header=True, header_style="bold")
    for col in ("pos", "sym", "reference", "hard", "soft (clean)"):
        t.add_column(col, justify="right")
    for h in heads:
        t.add_column(f"raw {h}", justify="right", overflow="fold", max_width=24)
    for r in rows:
        t.add_row(str(r["position"]), r["symbol"], str(r["reference"]), _fmt(r["hard"]), _fmt(r["soft"]),
                  *[_fmt(r["raw"][h], 8) for h in heads])
    con.print(t)
    acc = result["accepted"]
    con.print(f"judged at the {at} position: reference {'accepts' if acc['reference'] else 'rejects'}, "
              f"hard {'accepts' if acc['hard'] else 'rejects'}, soft {'accepts' if acc['soft'] else 'rejects'}")
    for h, v in leaks.items():
        flag = "" if v["within_eta"] else "  [red](bound exceeds eta: exactness not guaranteed)[/red]"
        if v["premise"]:
            rel = "vs"
            flag += f"  (bound not applicable: node {v['premise']} exceeds eta, so its inputs are not clean)"
        else:
            rel = "[red]> (BOUND EXCEEDED)[/red]" if v["exceeded"] else "<="
        con.print(f"  node {h}: max error {_fmt(v['observed_leak'])} {rel} bound {_fmt(v['bound'])}{flag}")
    if not agree:
        con.print("[red]soft verdict differs from the hard one[/red] (exit 1)")
    return rc


def cmd_bound(args) -> int:
    import sympy as sp
    from ..bounds import selection as S
    from ..bounds.core import asymptotic_order
    from ..bounds.derive import evaluate, in_tau, latex, required_inv_tau

    c = _construction(args)
    nmax = args.n_max
    subs = {S.beta: sp.Rational(c.beta.numerator, c.beta.denominator),
            S.eta: sp.Rational(c.eta.numerator, c.eta.denominator)}
    nodes = []
    for v, nb in c.bounds.items():
        b = nb.bound
        order, const = asymptotic_order(sp.simplify(b.inv_tau_star.subs(subs)))
        gen_star = b.inv_tau_star_generic
        gorder = asymptotic_order(gen_star.subs(subs))[0] if gen_star is not None else None
        req = (float(required_inv_tau(in_tau(b, c.params.exact()), n_value=nmax, eta_value=c.eta, beta_value=c.beta))
               if nmax >= b.n_min else 0.0)
        gen = (float(required_inv_tau(b.generic, n_value=nmax, eta_value=c.eta, beta_value=c.beta))
               if nmax >= 2 and b.generic is not None else None)
        closed = float(evaluate(b.inv_tau_star, n_value=max(nmax, b.n_min), inv_tau=1, beta_value=c.beta,
                                eta_value=c.eta))
        nodes.append({
            "node": v, "operator": nb.operator, "layer": nb.layer, "kind": b.kind, "key_const": b.key_const,
            "parameter": str(b.parameter),
            "leak_bound": str(b.leak), "leak_bound_latex": latex(b.leak),
            "all_n_bound": None if b.all_n is None else str(b.all_n),
            "generic_bound": None if b.generic is None else str(b.generic), "gap": str(b.gap),
            "inv_tau_required": req, "inv_tau_closed_form": closed, "inv_tau_generic": gen,
            "closed_form": str(b.inv_tau_star), "closed_form_latex": latex(b.inv_tau_star),
            "order": order, "order_constant": str(const), "generic_order": gorder,
            "attained_by": b.attained_by, "valid_for_n_ge": b.n_min, "source": b.source,
        })
    required = {}
    for x in nodes:
        required[x["parameter"]] = max(required.get(x["parameter"], 0.0), x["inv_tau_required"])
    result = {"formula": str(c.spec.formula), "alphabet": list(c.spec.alphabet), "regime": c.regime,
              "beta": str(c.beta), "eta": str(c.eta), "n_max": nmax, "nodes": nodes,
              "comparator": c.source.get("comparator"),
              "composed": "every node's error <= eta  =>  every clean-up round_eta is exact  =>  "
                          "soft output == hard output (THEORY §3)",
              "inv_tau_required_all_nodes": required.get("tau", 0.0),
              "inv_required_by_parameter": required}
    if args.json:
        print(json.dumps(result, indent=2))
        return EXIT_OK
    con = _console()
    from rich.table import Table
    con.print(f"[bold]{c.spec.formula}[/bold]  regime {c.regime}, beta = {c.beta}, eta = {c.eta}, n_max = {nmax}"
              + (f", comparator {result['comparator']}" if result["comparator"] else ""))
    if not nodes:
        con.print("no attention nodes: the formula is computed exactly by the embedding and ReLU gates")
        return EXIT_OK
    t = Table(show_header=True, header_style="bold")
    for col in ("node", "op", "layer", "param p", f"1/p needed at n={nmax} (tight)", "closed form", "gap lemma",
                "order", "gap-lemma order"):
        t.add_column(col, justify="right" if col not in ("node",) else "left", overflow="fold")
    for x in nodes:
        t.add_row(x["node"], x["operator"], str(x["layer"]), x["parameter"], _fmt(x["inv_tau_required"], 8),
                  _fmt(x["inv_tau_closed_form"], 8), _fmt(x["inv_tau_generic"], 8) if x["inv_tau_generic"] else "-",
                  x["order"], x["generic_order"] or "-")
    con.print(t)
    shown = set()
    for x in nodes:
        key = x["leak_bound"]
        if key in shown:
            continue
        shown.add(key)
        kind = {"selection": "key ≡ 1 (Y/X)" if x["key_const"] else "general key"}.get(x["kind"], x["kind"])
        con.print(f"\n[bold]error bound ({kind})[/bold], attained by {x['attained_by']}:")
        con.print(x["leak_bound_latex"] if args.latex else key)
        con.print(f"[bold]closed-form 1/{x['parameter']}*(n, eta)[/bold]:")
        con.print(x["closed_form_latex"] if args.latex else x["closed_form"])
        if x["all_n_bound"]:
            con.print(f"[bold]bound for all n[/bold]: {x['all_n_bound']}")
    con.print(f"\n{result['composed']}")
    return EXIT_OK


def cmd_confirm(args) -> int:
    from ..bounds.confirm import confirm
    from ..constructions.counting import adversarial_layernorm_words
    from ..constructions.simulate import adversarial_words, all_words, random_words

    c = _construction(args)
    m = c.model
    if args.tau is not None:
        it_fixed = float(1 / args.tau)
        inv_tau = lambda k: it_fixed  # noqa: E731
    else:
        # the temperature at which every bound is η·(1 − 10⁻⁶): exactly at η a float leak can land a
        # rounding error above η, leaving a clean-up inexact (and the next keys non-Boolean)
        margin = 1 + 1e-6
        inv_tau = lambda k: max(float(c.inv_tau_required(10**12 if c.uniform_in_n else k)) * margin, 1e-6)  # noqa: E731
    alph = c.spec.alphabet
    exh = []
    for k in range(1, min(args.exhaustive_len, args.n_max) + 1):  # no word longer than --n-max
        if len(alph) ** k > 200_000:
            break
        exh.extend(all_words(alph, k))
    adv_ns = sorted({k for k in (10, 100, args.n_max) if k <= args.n_max})
    adv = []
    for k in adv_ns:
        adv.extend(dict.fromkeys(adversarial_words(m, k, inv_tau(k)).values()))
        adv.extend(dict.fromkeys(adversarial_layernorm_words(m, k).values()))  # LN comparators
    fams = {"exhaustive": exh, "random": random_words(alph, args.random, args.n_max, seed=args.seed),
            "adversarial": adv}
    fams = {k: v for k, v in fams.items() if v}
    from rich.console import Console
    from rich.progress import Progress
    with Progress(console=Console(stderr=True), transient=True, disable=args.json) as prog:  # stdout stays clean
        task = prog.add_task("confirming", total=len(fams) + 1)
        conf = confirm(m, c.bounds, fams, inv_tau, beta=c.beta, eta=c.eta, key_pattern_ns=adv_ns,
                       progress=lambda name: prog.update(task, advance=1, description=f"family {name}"))
    summ = conf.summary()
    lengths = sorted({ch.n for ch in conf.checks})
    temps = {str(k): float(inv_tau(k)) for k in lengths}
    tau_txt = (f"fixed 1/tau = {_fmt(float(1 / args.tau), 10)} (--tau)" if args.tau is not None else
               "1/tau at each length: the smallest at which every node's bound is <= eta*(1 - 1e-6)"
               + (" (one value: the bounds are uniform in n)" if len(set(temps.values())) == 1 else ""))
    result = {"formula": str(c.spec.formula), "regime": c.regime, "n_max": args.n_max,
              "temperature": tau_txt, "inv_tau_by_length": temps,
              "inputs": conf.words, "ok": conf.ok, "nodes": summ,
              "mismatches": {k: [("".join(w), p) for w, p in v[:10]] for k, v in conf.mismatches.items()},
              "mismatches_unguarded": {k: [("".join(w), p) for w, p in v[:10]]
                                       for k, v in conf.unguarded_mismatches.items()},
              "premise_failures": conf.premise_failures,
              "max_output_deviation": conf.max_output_deviation}
    if args.json:
        print(json.dumps(result, indent=2, default=str))
    else:
        from rich.table import Table
        con = _console()
        con.print(f"[bold]{c.spec.formula}[/bold] regime {c.regime}: inputs {conf.words}")
        con.print(f"temperature: {tau_txt}; e.g. 1/tau = {_fmt(temps[str(lengths[-1])], 10)} at n = {lengths[-1]}"
                  if lengths else f"temperature: {tau_txt}")
        t = Table(show_header=True, header_style="bold")
        for col in ("node", "inputs", "worst observed", "bound there", "tightness", "at n", "family",
                    "max tightness per family", "violations"):
            t.add_column(col, overflow="fold")
        for v, s in summ.items():
            t.add_row(v, str(s["inputs"]), _fmt(s["worst_observed"], 8), _fmt(s["bound_there"], 8),
                      f"{s['ratio']:.6f}", str(s["at_n"]), s["family"],
                      ", ".join(f"{f}: {r:.4f}" for f, r in s["max_ratio_by_family"].items()),
                      str(s["violations"]))
        con.print(t)
        from .certify_cli import numeric_verdict
        con.print(numeric_verdict(None, conf.words,
                                  sum(len(v) for v in conf.mismatches.values()),
                                  sum(len(v) for v in conf.unguarded_mismatches.values()), conf.premise_failures,
                                  conf.ok))
        if not conf.ok:
            con.print("[red]BOUND OR CONSTRUCTION REFUTED[/red]")
    return EXIT_OK if conf.ok else EXIT_FAIL


def _attach_negative_values(ap: argparse.ArgumentParser, argv: list[str]) -> list[str]:
    """``--eta -1/4`` → ``--eta=-1/4``: argparse takes a value starting with '-' for an option
    unless it looks like a plain negative number, so ``-1/4`` or ``-1e-3`` would be refused
    with a confusing "expected one argument"; attached, the option's own check names the value."""
    takes_value = set()
    for sp_ in [ap] + [a for act in ap._actions if isinstance(act, argparse._SubParsersAction)
                       for a in act.choices.values()]:
        for act in sp_._actions:
            if act.option_strings and act.nargs != 0:
                takes_value.update(o for o in act.option_strings if o.startswith("--"))
    out: list[str] = []
    for a in argv:
        if out and out[-1] in takes_value and len(a) > 1 and a[0] == "-" and (a[1].isdigit() or a[1] == "."):
            out[-1] = f"{out[-1]}={a}"
        else:
            out.append(a)
    return out


def main(argv=None) -> int:
    global _JSON_ERRORS
    ap = build_parser()
    argv = _attach_negative_values(ap, list(sys.argv[1:] if argv is None else argv))
    _JSON_ERRORS = "--json" in argv
    try:
        args = ap.parse_args(argv)
    except SystemExit as e:  # argparse: --help (0) or a usage error (2)
        return int(e.code or 0)
    try:
        with mpmath.workdps(30):
            return args.func(args)
    except SofthardError as e:
        code = getattr(e, "exit_code", EXIT_BAD_INPUT)
        print(f"softhard: error: {e}", file=sys.stderr)
        if getattr(args, "json", False):  # scripts reading stdout get a JSON object too
            print(json.dumps({"error": str(e), "kind": type(e).__name__, "exit": code}))
        return code
    except KeyboardInterrupt:
        print("softhard: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
