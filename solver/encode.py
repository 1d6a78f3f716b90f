"""Sound encoding of "bound(n) ≤ η for all n in a box" as an exact Z3 query.

Z3 must never see ``exp`` or ``log`` (SOLVER-NOTES.md: it accepts them and answers wrongly).
So every ``exp(g(n))`` in a bound becomes a fresh real variable ``E_k`` constrained to an exact
rational enclosure ``[L_k, U_k]`` of ``exp(g(n))`` over the box, computed outside the solver with
outward-rounded interval arithmetic (``mpmath.iv``).  The query asserts the *negation* of the claim:

    lo ≤ n ≤ hi  ∧  ⋀_k L_k ≤ E_k ≤ U_k  ∧  ⋀ denominators ≠ 0  ∧  bound(n, E) > η

Every true counterexample satisfies it, so ``unsat`` proves the claim on the box.  A ``sat`` is
*not* a counterexample (the enclosures over-approximate); :mod:`softhard.solver.check` checks
candidate integers rigorously and otherwise splits the box.

Enclosures of exponentials below ``2^-CLAMP_BITS`` are widened to ``[0, 2^-CLAMP_BITS]`` and
those above ``2^CLAMP_BITS`` keep only their lower bound: both are sound and keep the rationals
small.  The bounds of :mod:`softhard.bounds.selection` are written with nonpositive exponents so
that this loses nothing that matters.

Square roots (the layer-norm comparator's bound, THEORY §5 (a)) are algebraic, so they are
encoded exactly: each ``sqrt(h(n))`` becomes a fresh real ``R_k`` with ``R_k ≥ 0 ∧ R_k² = h(n)``;
``h`` must be provably ≥ 0 on the box (else :class:`SolverError`: an impossible ``R_k² = h < 0``
would make the query vacuously unsatisfiable).

Rational powers ``h(n)^{p/q}`` — what ``exp(−c·S·ln(n+1)/τ)`` becomes under the log-length
schedule (THEORY §9: ``e^{−γ/τ(n)} = (n+1)^{−Sγ}``) — are algebraic too and encoded the same way:
per base ``h`` one fresh real ``R ≥ 0`` with ``R^Q = h`` (Q the least common denominator of the
exponents of ``h``), and ``h^{p/q} = R^{pQ/q}``.  Square roots are the case Q = 2.  ``log`` is only
ever *enclosed* (inside an ``exp`` atom, by interval arithmetic), never translated.

Exponentials tied to n (``poly_exp=True``, the schedules' claims, THEORY §9 lemma E): on a box where
an atom's argument ``g(n)`` is a polynomial in n with ``g ≤ 0``, the atom also satisfies
``E·(1 − g + g²/2) ≤ 1`` (``e^x ≥ 1 + x + x²/2`` for ``x = −g ≥ 0``), which keeps the correlation
between ``E`` and ``n`` on an unbounded box, where the constant enclosure alone is ``[0, U]``.

Only exact rationals reach Z3 (``z3.Q``); a SymPy ``Float`` or any function other than ``exp``,
algebraic powers, ``Max`` and ``Min`` raises :class:`SolverError`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import sympy as sp
from mpmath import iv

from ..constructions.errors import SolverError

CLAMP_BITS = 512
#: symbol for the word length inside claims
n = sp.Symbol("n", positive=True)


def _raw_to_fraction(raw) -> Fraction:
    """Exact value of an mpmath raw mpf tuple ``(sign, man, exp, bc)``."""
    sign, man, exp, _ = raw
    if man == 0:
        if exp in (0,):  # zero
            return Fraction(0)
        raise SolverError("interval endpoint is infinite or NaN")
    v = Fraction(man) * (Fraction(2) ** exp)
    return -v if sign else v


def _ends(x) -> tuple[Fraction | None, Fraction | None]:
    """Exact endpoints of an ``iv.mpf``; ``None`` for an infinite endpoint."""
    a, b = x._mpi_
    out = []
    for raw in (a, b):
        s, man, e, bc = raw
        if man == 0 and e != 0:  # inf / nan encodings in mpmath
            out.append(None)
        else:
            out.append(_raw_to_fraction(raw))
    return out[0], out[1]


def iv_eval(expr: sp.Expr, n_box):
    """Outward-rounded interval value of ``expr`` for ``n`` in the interval ``n_box`` (``iv.mpf``).

    Supports ``n``, rationals, ``+``, ``*``, integer powers, ``exp``, ``Max``, ``Min``.
    Raises :class:`SolverError` for anything else (floats included).
    """
    if expr == n:
        return n_box
    if expr.is_Rational:
        return iv.mpf(int(expr.p)) / iv.mpf(int(expr.q))
    if isinstance(expr, sp.Float):
        raise SolverError(f"a floating-point constant {expr} reached the solver; use exact rationals")
    if expr.is_Add:
        acc = iv.mpf(0)
        for a in expr.args:
            acc = acc + iv_eval(a, n_box)
        return acc
    if expr.is_Mul:
        acc = iv.mpf(1)
        for a in expr.args:
            acc = acc * iv_eval(a, n_box)
        return acc
    if expr.is_Pow and expr.exp.is_Integer:
        base = iv_eval(expr.base, n_box)
        k = int(expr.exp)
        return base**k if k >= 0 else 1 / (base ** (-k))
    if _is_sqrt_power(expr):
        base = iv_eval(expr.base, n_box)
        if _ends(base)[0] is None or _ends(base)[0] < 0:
            raise SolverError(f"cannot show the radicand of {expr} is >= 0 on the box")
        k = int(expr.exp * 2)
        r = iv.sqrt(base)
        return r**k if k >= 0 else 1 / (r ** (-k))
    if _is_root_power(expr):  # h^{p/q}, q > 2: exp((p/q)·ln h), h > 0 on the box
        base = iv_eval(expr.base, n_box)
        if _ends(base)[0] is None or _ends(base)[0] <= 0:
            raise SolverError(f"cannot show the base of {expr} is > 0 on the box")
        return _iv_exp(iv.mpf(int(expr.exp.p)) / iv.mpf(int(expr.exp.q)) * iv.log(base))
    if isinstance(expr, sp.log):
        arg = iv_eval(expr.args[0], n_box)
        if _ends(arg)[0] is None or _ends(arg)[0] <= 0:
            raise SolverError(f"cannot show the argument of {expr} is > 0 on the box")
        return iv.log(arg)
    if isinstance(expr, sp.exp):
        return _iv_exp(iv_eval(expr.args[0], n_box))
    if isinstance(expr, (sp.Max, sp.Min)):
        # max/min are monotone in each argument: combine lower ends and upper ends separately
        # (an infinite end is None in _ends and compares as ∓∞)
        vals = [iv_eval(a, n_box) for a in expr.args]

        def lo_key(v):  # −∞ (None) sorts below every finite lower end
            a = _ends(v)[0]
            return (0, Fraction(0)) if a is None else (1, a)

        def hi_key(v):  # +∞ (None) sorts above every finite upper end
            b = _ends(v)[1]
            return (1, Fraction(0)) if b is None else (0, b)

        pick = max if isinstance(expr, sp.Max) else min
        lo = pick(vals, key=lo_key).a
        hi = pick(vals, key=hi_key).b
        return iv.mpf([lo, hi])
    raise SolverError(f"cannot enclose {type(expr).__name__} term {expr} soundly")


def _is_sqrt_power(e: sp.Expr) -> bool:
    """``h**(k/2)`` with ``k`` odd: a (negative) power of a square root."""
    return bool(e.is_Pow and e.exp.is_Rational and not e.exp.is_Integer and e.exp.q == 2)


def _is_root_power(e: sp.Expr) -> bool:
    """``h**(p/q)`` with ``q > 2``: a power of a q-th root (the log-length schedule's terms)."""
    return bool(e.is_Pow and e.exp.is_Rational and not e.exp.is_Integer and e.exp.q > 2)


def _is_algebraic_power(e: sp.Expr) -> bool:
    return _is_sqrt_power(e) or _is_root_power(e)


_EXP_CUT = 2 * CLAMP_BITS  # |argument| beyond which exp is not evaluated (ln 2 < 1, so e^{-1024} < 2^{-512})


def _iv_exp(x):
    """``exp`` of an interval without evaluating astronomically large or small arguments:
    exp is increasing, so ``[a, b] ↦ [e^a, e^b]`` with ``e^a`` replaced by 0 when ``a < −_EXP_CUT``
    and ``e^b`` by +∞ when ``b > _EXP_CUT`` (mpmath would need ~|a| bits of precision otherwise)."""
    a, b = _ends(x)
    lo = iv.mpf(0) if (a is None or a < -_EXP_CUT) else iv.exp(iv.mpf(x.a))
    if b is None or b > _EXP_CUT:
        hi = iv.mpf("inf")
    elif b < -_EXP_CUT:
        hi = iv.mpf(2) ** (-CLAMP_BITS)
    else:
        hi = iv.exp(iv.mpf(x.b))
    return iv.mpf([lo.a, hi.b])


def n_interval(lo: int, hi: int | None):
    """``iv.mpf`` for the box ``[lo, hi]`` (``hi=None``: unbounded)."""
    return iv.mpf([lo, "inf"]) if hi is None else iv.mpf([lo, hi])


@dataclass
class Atom:
    """One exponential of the bound, with its exact enclosure on the current box."""

    name: str
    expr: sp.Expr
    lower: Fraction
    upper: Fraction | None


def exp_atoms(expr: sp.Expr) -> list[sp.Expr]:
    """The distinct ``exp(·)`` subterms of ``expr``, innermost first, in a deterministic order
    (an ``exp`` nested in another is allowed: see the comment below; ``log`` inside is refused)."""
    atoms = sorted(expr.atoms(sp.exp), key=lambda e: (sp.count_ops(e), sp.srepr(e)))
    # exp nested in exp, and log inside exp (a schedule's e^{−βS·ln(n+1)/n}), are sound: the outer
    # atom is enclosed as a whole by iv_eval (which encloses the inner terms recursively, outward
    # rounded) and Z3 sees only its fresh variable.
    return atoms


def _partial_fractions(atom: sp.Expr) -> sp.Expr:
    """``exp(g)`` with a rational argument g rewritten as its partial fractions (an exact identity):
    ``−Sn/(2n+2)`` becomes ``−S/2 + S/(2n+2)``, with one occurrence of n, so interval arithmetic
    encloses it tightly on an unbounded box (as written it gives ``[−∞, 0]``: the dependency problem)."""
    g = atom.args[0]
    if g.is_polynomial(n) or not g.is_rational_function(n) or g.atoms(sp.Float):
        return atom
    return sp.exp(sp.apart(sp.cancel(g), n), evaluate=False)


def enclose(atom: sp.Expr, lo: int, hi: int | None, prec: int, *, tight: bool = False
            ) -> tuple[Fraction, Fraction | None]:
    """Exact rational enclosure of ``atom = exp(g(n))`` for ``n ∈ [lo, hi]`` (clamped; see module doc).
    ``tight``: a rational argument is first split into partial fractions (schedules' claims)."""
    old = iv.prec
    iv.prec = prec
    try:
        v = iv_eval(_partial_fractions(atom) if tight else atom, n_interval(lo, hi))
    finally:
        iv.prec = old
    L, U = _ends(v)
    L = Fraction(0) if L is None or L < 0 else L
    tiny = Fraction(1, 2**CLAMP_BITS)
    big = Fraction(2**CLAMP_BITS)
    if U is not None and U < tiny:
        return Fraction(0), tiny
    if L < tiny:
        L = Fraction(0)
    if U is not None and U > big:
        U = None
    if L > big:
        L = big
    return L, U


def q(x: Fraction, ctx: z3.Context | None = None) -> z3.ArithRef:
    """Exact Z3 rational from a Fraction (never from a float)."""
    import z3  # third-party, ~0.15 s: loaded only when a query is built (see build_query)

    if not isinstance(x, (Fraction, int)) or isinstance(x, bool):
        raise SolverError(f"non-rational constant {x!r} would reach Z3")
    x = Fraction(x)
    return z3.Q(x.numerator, x.denominator, ctx) if x.denominator != 1 else z3.RealVal(x.numerator, ctx)


class _Translator:
    """SymPy → Z3 over reals, refusing transcendental functions and floats."""

    def __init__(self, nvar: z3.ArithRef, atoms: dict[sp.Expr, z3.ArithRef]):
        self.nvar = nvar
        self.ctx = nvar.ctx
        self.atoms = atoms
        self.nonzero: list[tuple[z3.ArithRef, sp.Expr]] = []  # (denominator in Z3, the same in SymPy)
        self.roots: dict[sp.Expr, z3.ArithRef] = {}  # radicand -> R with R >= 0, R^Q = radicand
        self.root_defs: list = []
        self.degree: dict[sp.Expr, int] = {}  # radicand -> Q (2 for square roots; set by build_query)
        #: bases whose exponents are all negative (and Q > 2): R = h^{-1/Q}, R > 0, R^Q·h = 1, so that
        #: h^{-p/q} = R^{pQ/q} is a polynomial (no division: Z3 decides these much faster)
        self.inverse: set[sp.Expr] = set()

    def _root(self, radicand: sp.Expr) -> z3.ArithRef:
        import z3  # third-party (see build_query)

        if radicand not in self.roots:
            r = z3.Real(f"R{len(self.roots)}", self.ctx)
            self.roots[radicand] = r
            d = self.degree.get(radicand, 2)
            if radicand in self.inverse:
                self.root_defs += [r > 0, r**d * self(radicand) == 1]
            else:
                self.root_defs += [r >= 0, (r * r if d == 2 else r**d) == self(radicand)]
        return self.roots[radicand]

    def __call__(self, e: sp.Expr) -> z3.ArithRef:
        import z3  # third-party (see build_query)

        if e in self.atoms:
            return self.atoms[e]
        if e == n:
            return self.nvar
        if e.is_Rational:
            return q(Fraction(int(e.p), int(e.q)), self.ctx)
        if isinstance(e, sp.Float):
            raise SolverError(f"a floating-point constant {e} reached the Z3 translator; use exact rationals")
        if e.is_Add:
            return z3.Sum([self(a) for a in e.args])
        if e.is_Mul:
            num, den, sden = [], [], []
            for a in e.args:
                if a.is_Pow and a.exp.is_Integer and int(a.exp) < 0:
                    den.append(self(a.base) if int(a.exp) == -1 else self(a.base) ** (-int(a.exp)))
                    sden.append(a.base ** (-int(a.exp)))
                else:
                    num.append(self(a))
            top = num[0] if len(num) == 1 else (z3.Product(num) if num else z3.RealVal(1, self.ctx))
            if not den:
                return top
            bot = den[0] if len(den) == 1 else z3.Product(den)
            self.nonzero.append((bot, sp.Mul(*sden)))
            return top / bot
        if _is_algebraic_power(e):
            d = self.degree.setdefault(e.base, int(e.exp.q))  # build_query sets the lcm per base
            if not (e.exp * d).is_Integer:
                raise SolverError(f"internal: the root degree {d} of {e.base} does not clear the exponent of {e}")
            k = int(e.exp * d)
            r = self._root(e.base)
            if e.base in self.inverse:  # R = h^{-1/Q}: h^{k/Q} = R^{-k}, -k > 0
                return r ** (-k) if k != -1 else r
            if k >= 0:
                return r**k if k != 1 else r
            d = r ** (-k) if k != -1 else r
            self.nonzero.append((d, sp.Pow(e.base, -e.exp)))
            return 1 / d
        if e.is_Pow and e.exp.is_Integer:
            k = int(e.exp)
            b = self(e.base)
            if k >= 0:
                return b**k if k != 1 else b
            d = b ** (-k) if k != -1 else b
            self.nonzero.append((d, e.base ** (-k)))
            return 1 / d
        if isinstance(e, sp.Max) or isinstance(e, sp.Min):
            args = [self(a) for a in e.args]
            acc = args[0]
            for a in args[1:]:
                acc = z3.If(acc >= a, acc, a) if isinstance(e, sp.Max) else z3.If(acc <= a, acc, a)
            return acc
        if isinstance(e, (sp.exp, sp.log)) or e.is_Pow:
            raise SolverError(f"transcendental term {e} must not reach Z3 (SOLVER-NOTES: Z3 answers such queries wrongly)")
        raise SolverError(f"cannot translate {type(e).__name__} term {e} to Z3")


@dataclass
class Query:
    """One box query: its SMT-LIB2 text, the atoms' enclosures, and the box."""

    smtlib: str
    lo: int
    hi: int | None
    atoms: list[Atom]
    prec: int


def _sqrt_radicands(expr: sp.Expr) -> list[sp.Expr]:
    return sorted({a.base for a in _algebraic_powers(expr)}, key=sp.srepr)


def _algebraic_powers(expr: sp.Expr) -> list[sp.Expr]:
    """The non-integer rational powers of ``expr`` outside every ``exp`` atom (those inside are
    enclosed with the atom)."""
    out, stack = [], [expr]
    while stack:
        e = stack.pop()
        if isinstance(e, sp.exp):
            continue
        if isinstance(e, sp.Expr) and _is_algebraic_power(e):
            out.append(e)
        stack.extend(e.args)
    return out


def inverse_roots(expr: sp.Expr) -> set[sp.Expr]:
    """The bases h of rational powers in ``expr`` whose exponents are all negative and not all
    halves (a root of degree > 2): encoded by R = h^{-1/Q} (``R > 0 ∧ R^Q·h = 1``), which needs h > 0
    on the box (:func:`build_query` checks it)."""
    powers: dict[sp.Expr, list[sp.Expr]] = {}
    for a in _algebraic_powers(expr):
        powers.setdefault(a.base, []).append(a)
    return {h for h, ps in powers.items() if all(p.exp < 0 for p in ps) and any(_is_root_power(p) for p in ps)}


def root_degrees(expr: sp.Expr) -> dict[sp.Expr, int]:
    """Per base ``h`` of a rational power in ``expr``, the least common denominator Q of its exponents."""
    out: dict[sp.Expr, int] = {}
    for a in _algebraic_powers(expr):
        out[a.base] = math.lcm(out.get(a.base, 1), int(a.exp.q))
    return out


def _poly_enclosure(arg: sp.Expr, lo: int, hi: int | None, prec: int) -> sp.Expr | None:
    """``1 − g + g²/2`` for an exp atom's argument ``g`` that is a polynomial in n with ``g ≤ 0`` on
    the box (shown by interval arithmetic), else None: then ``e^g ≤ 1/(1 − g + g²/2)`` there
    (THEORY §9 lemma E: ``e^x ≥ 1 + x + x²/2`` for ``x ≥ 0``)."""
    if not arg.has(n) or not arg.is_polynomial(n) or arg.atoms(sp.Float):
        return None
    old = iv.prec
    iv.prec = prec
    try:
        top = _ends(iv_eval(arg, n_interval(lo, hi)))[1]
    except (SolverError, ZeroDivisionError, ValueError):
        return None
    finally:
        iv.prec = old
    if top is None or top > 0:
        return None
    return 1 - arg + arg**2 / 2


def build_query(expr: sp.Expr, eta: Fraction, lo: int, hi: int | None, *, prec: int = 128,
                poly_exp: bool = False) -> Query:
    """The negated claim ``∃ n ∈ [lo, hi]: expr(n) > eta`` with exp atoms enclosed (module doc).

    ``expr`` may contain only the symbol :data:`n`; all parameters must already be exact rationals.
    ``poly_exp``: add the polynomial enclosures of exp atoms tied to n (module doc; schedules).
    Raises :class:`SolverError` if a free symbol other than n, a float or a transcendental function
    other than exp would reach Z3.
    """
    # Z3 is imported here, not at module level: a warm certify or verify reads every query's SMT-LIB2
    # text from the derivation cache (bounds/cache.py) and never builds one (~0.15 s CPU saved; ISSUE 16)
    import z3

    free = expr.free_symbols - {n}
    if free:
        raise SolverError(f"claim still has free parameters {sorted(map(str, free))}; substitute exact values")
    if isinstance(eta, float):
        raise SolverError("eta must be an exact rational")
    ctx = z3.Context()  # a fresh context per query: its SMT-LIB2 text is a function of the claim alone
    nvar = z3.Real("n", ctx)
    s = z3.Solver(ctx=ctx)
    s.add(nvar >= lo)
    if hi is not None:
        s.add(nvar <= hi)
    atoms: list[Atom] = []
    amap: dict[sp.Expr, z3.ArithRef] = {}
    for k, a in enumerate(exp_atoms(expr)):
        L, U = enclose(a, lo, hi, prec, tight=poly_exp)
        v = z3.Real(f"E{k}", ctx)
        amap[a] = v
        s.add(v >= q(L, ctx))
        if U is not None:
            s.add(v <= q(U, ctx))
        atoms.append(Atom(name=f"E{k}", expr=a, lower=L, upper=U))
    for root in _sqrt_radicands(expr):  # sound only if every radicand is >= 0 on the box
        old = iv.prec
        iv.prec = prec
        try:
            lo_r = _ends(iv_eval(root, n_interval(lo, hi)))[0]
        finally:
            iv.prec = old
        if lo_r is None or lo_r < 0:
            raise SolverError(f"cannot show the radicand {root} is >= 0 for n in [{lo}, {hi}]")
        if lo_r == 0 and root in inverse_roots(expr):  # R^Q·h = 1 has no solution where h = 0
            raise SolverError(f"cannot show the base {root} of a negative power is > 0 for n in [{lo}, {hi}]")
    tr = _Translator(nvar, amap)
    tr.degree = root_degrees(expr)
    tr.inverse = inverse_roots(expr)
    if poly_exp:
        for atom in exp_atoms(expr):
            poly = _poly_enclosure(atom.args[0], lo, hi, prec)
            if poly is not None:
                s.add(amap[atom] * tr(poly) <= 1)
    body = tr(expr)
    for c in tr.root_defs:
        s.add(c)
    # "denominator ≠ 0" may be assumed only where interval arithmetic shows it on the whole box;
    # otherwise the bound may have a pole there, Z3's division is unconstrained, and the box can
    # only end "unknown" (never proved)
    for zd, sd in tr.nonzero:
        try:
            old_prec = iv.prec
            iv.prec = prec
            try:
                lo_d, hi_d = _ends(iv_eval(sd, n_interval(lo, hi)))
            finally:
                iv.prec = old_prec
        except (SolverError, ZeroDivisionError, ValueError):
            continue
        if (lo_d is not None and lo_d > 0) or (hi_d is not None and hi_d < 0):
            s.add(zd != 0)
    s.add(body > q(Fraction(eta), ctx))
    return Query(smtlib=s.to_smt2(), lo=lo, hi=hi, atoms=atoms, prec=prec)
