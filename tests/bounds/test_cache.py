"""The derivation cache (bounds/cache.py) and the compiled numeric functions (bounds/fastfn.py):
a cached derivation agrees exactly with a live SymPy derivation (ISSUE 16)."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from fractions import Fraction
from importlib import metadata
from pathlib import Path

import mpmath
import pytest
import sympy as sp

from softhard.bounds import cache as C
from softhard.bounds import derive as D
from softhard.bounds import selection as S
from softhard.bounds import store as ST
from softhard.bounds.core import beta, eta, n, tau
from softhard.bounds.cache import compile_expr
from softhard.bounds.fastfn import Unsupported
from softhard.constructions.compile import assign_attention, compile_formula
from softhard.constructions.parse import parse_formula

ROOT = Path(__file__).resolve().parents[2]
SHAPES = [(r, kc, d) for r in ("T", "U") for kc in (False, True) for d in (1, 2, 3)]


def fields(b):
    return {f: getattr(b, f) for f in b.__dataclass_fields__}


def same(a, b):
    """Structurally identical: equal, same srepr and same str (what certificates store; the LaTeX
    is compared in test_cached_derive_and_claim_substitution_equal_live)."""
    if isinstance(a, sp.Basic) or isinstance(b, sp.Basic):
        return a == b and sp.srepr(a) == sp.srepr(b) and str(a) == str(b)
    return a == b


@pytest.fixture()
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("SOFTHARD_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(ST, "_memory", {})
    monkeypatch.setattr(C, "_exprs", {})
    return tmp_path / "derivations"


@pytest.mark.parametrize("shape", SHAPES)
def test_cached_selection_bound_equals_live_derivation(cache_dir, shape):
    r, kc, d = shape
    live = S.selection_bound(r, key_const=kc, spacing=d)
    first = C.cached_bound("selection", list(shape), lambda: S.selection_bound(r, key_const=kc, spacing=d))
    ST._memory.clear()  # force the disk layer
    calls = []
    again = C.cached_bound("selection", list(shape), lambda: calls.append(1) or live)
    assert calls == []  # served from disk, not derived
    assert any(cache_dir.rglob("*.json"))
    for k, v in fields(live).items():
        assert same(v, fields(first)[k]), k
        assert same(v, fields(again)[k]), k


def test_cached_derive_and_claim_substitution_equal_live(cache_dir, monkeypatch):
    g = compile_formula(parse_formula("(a U b) | ((!a S b) & H (a | Y b))"), ["a", "b"])
    cached = D.derive(g, "T")
    monkeypatch.setenv("SOFTHARD_CACHE", "0")
    ST._memory.clear()
    C._exprs.clear()
    live = D.derive(g, "T")  # with the disk layer off and the memory empty: a live derivation
    assert list(cached) == list(live)
    subs = {beta: sp.Rational(1, 4), eta: sp.Rational(1, 4), tau: sp.Rational(1, 5545178)}
    for v in live:
        for k, x in fields(live[v].bound).items():
            assert same(x, fields(cached[v].bound)[k]), (v, k)
        monkeypatch.setenv("SOFTHARD_CACHE", "1")
        a = C.subs(cached[v].bound.leak, subs)
        C._exprs.clear()
        ST._memory.clear()
        b = C.subs(cached[v].bound.leak, subs)  # decoded from disk
        assert same(live[v].bound.leak.subs(subs), a) and same(a, b)
        assert same(sp.latex(live[v].bound.leak, symbol_names={tau: r"\tau", beta: r"\beta", eta: r"\eta"}),
                    D.latex(cached[v].bound.leak))


@pytest.mark.parametrize("regime", ["T", "U"])
def test_cached_output_bounds_equal_live(cache_dir, monkeypatch, regime):
    """The AHA output bound (regime T) and the regime-U unique output bounds (``P``/``F`` of keys
    first possible at positions 1 and 2) come from the cache identical to a live derivation, from
    memory and from disk."""
    g = compile_formula(parse_formula("P a & P (b & Y a) & F b"), ["a", "b"])
    assign_attention(g, regime, None)
    monkeypatch.setenv("SOFTHARD_CACHE", "0")
    live = D.derive(g, regime)
    live_alt = {v: D.alternative_bound(g, v, regime) for v in live}
    monkeypatch.setenv("SOFTHARD_CACHE", "1")
    ST._memory.clear()
    first = D.derive(g, regime)
    ST._memory.clear()  # the disk layer
    again = D.derive(g, regime)
    assert any(cache_dir.rglob("*.json"))
    kinds_seen = set()
    for v, nb in live.items():
        kinds_seen.add(nb.bound.kind)
        for k, x in fields(nb.bound).items():
            assert same(x, fields(first[v].bound)[k]) and same(x, fields(again[v].bound)[k]), (v, k)
        alt = D.alternative_bound(g, v, regime)
        assert (alt is None) == (live_alt[v] is None)
        if alt is not None:
            assert alt[0] == live_alt[v][0]
            for k, x in fields(live_alt[v][1]).items():
                assert same(x, fields(alt[1])[k]), (v, k)
    # the shapes this test is about: AHA output bounds in T, unique output bounds (key_first 1 and 2) in U
    assert ("average-selection" in kinds_seen) == (regime == "T")
    if regime == "U":
        assert {g.nodes[v].get("key_first") for v in live if g.nodes[v].get("average_ok")} == {1, 2}


@pytest.mark.parametrize("shape", SHAPES)
def test_cached_srepr_and_str_equal_live(cache_dir, shape):
    """``srepr_of``/``str_of`` give SymPy's own texts of every field of a bound and of its claim at
    exact parameters, computed once and then served from memory and from disk."""
    r, kc, d = shape
    b = S.selection_bound(r, key_const=kc, spacing=d)
    subs = {beta: sp.Rational(1, 4), eta: sp.Rational(1, 4), tau: sp.Rational(125, 693147248)}
    exprs = [x for x in fields(b).values() if isinstance(x, sp.Basic)] + [b.leak.subs(subs)]
    for e in exprs:
        live = (sp.srepr(e), str(e))
        assert (C.srepr_of(e), C.str_of(e)) == live
        ST._memory.clear()  # the disk layer
        assert (C.srepr_of(e), C.str_of(e)) == live
    assert len(list(cache_dir.rglob("*.json"))) >= len({sp.srepr(e) for e in exprs})


def test_key_depends_on_inputs_and_sources(cache_dir, monkeypatch):
    a = ST.entry_key("selection", ["T", False, 1])
    assert a != ST.entry_key("selection", ["T", False, 2])
    monkeypatch.setattr(ST, "_fingerprint", ["another source tree"])
    assert a != ST.entry_key("selection", ["T", False, 1])


def test_malformed_entry_is_rederived(cache_dir):
    live = S.selection_bound("U", key_const=False, spacing=1)
    C.cached_bound("selection", ["U", False, 1], lambda: live)
    ST._memory.clear()
    (path,) = cache_dir.rglob("*.json")
    path.write_text(json.dumps({"leak": {"expr": ["NoSuchHead"]}}))
    again = C.cached_bound("selection", ["U", False, 1], lambda: live)
    assert same(again.leak, live.leak)


def test_unwritable_cache_dir_is_ignored(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("SOFTHARD_CACHE_DIR", str(blocker))  # a file, not a directory
    monkeypatch.setattr(ST, "_memory", {})
    b = C.cached_bound("selection", ["T", True, 1], lambda: S.selection_bound("T", key_const=True, spacing=1))
    assert same(b.leak, S.selection_bound("T", key_const=True, spacing=1).leak)


@pytest.mark.parametrize("shape", SHAPES)
def test_compiled_functions_agree_with_lambdify(shape):
    r, kc, d = shape
    b = S.selection_bound(r, key_const=kc, spacing=d)
    for e in (b.leak, b.generic, b.inv_tau_star, b.all_n, b.rounding):
        if e is None:
            continue
        f = compile_expr(e, [n, tau, beta, eta], "mpmath")
        g = sp.lambdify([n, tau, beta, eta], e, modules="mpmath")
        ff = compile_expr(e, [n, tau, beta, eta], "float")
        for nv in (2, 9, 1000, 10**6):
            for it in ("0.5", 3, 10**4, 5 * 10**6):
                with mpmath.workdps(50):
                    args = (mpmath.mpf(nv), 1 / mpmath.mpf(it), mpmath.mpf(1) / 4, mpmath.mpf(1) / 4)
                    want = g(*args)
                    assert abs(f(*args) - want) <= mpmath.mpf(10) ** -45 * max(abs(want), mpmath.mpf(10) ** -300)
                    got = float(ff(float(nv), 1 / float(it), 0.25, 0.25))
                    assert got == pytest.approx(float(want), rel=1e-9, abs=1e-300)


def test_trees_evaluate_without_sympy():
    """Each selection bound's tree, as the cache stores it (JSON), evaluated by
    :func:`compile_tree` in a fresh interpreter that never imports SymPy: lambdify's values (50
    digits) at every (n, 1/tau)."""
    exprs = [S.selection_bound(r, key_const=kc, spacing=d).leak for r, kc, d in SHAPES]
    grid = [(nv, it) for nv in (2, 9, 1000, 10**6) for it in (3, 10**4)]
    probe = (
        "import json, sys, mpmath\n"
        "from softhard.bounds.fastfn import compile_tree\n"
        "trees, grid = json.loads(sys.stdin.read())\n"
        "out = []\n"
        "with mpmath.workdps(50):\n"
        "    for t in trees:\n"
        "        f = compile_tree(t, ['n', 'tau', 'beta', 'eta'], 'mpmath')\n"
        "        out.append([mpmath.nstr(f(mpmath.mpf(a), 1 / mpmath.mpf(b), mpmath.mpf(1) / 4, mpmath.mpf(1) / 4), 48)\n"
        "                    for a, b in grid])\n"
        "print(json.dumps({'values': out, 'sympy': 'sympy' in sys.modules}))\n")
    out = subprocess.run([sys.executable, "-c", probe], input=json.dumps([[C.encode_expr(e) for e in exprs], grid]),
                         capture_output=True, text=True, timeout=120, check=True)
    got = json.loads(out.stdout)
    assert got["sympy"] is False
    for e, row in zip(exprs, got["values"]):
        g = sp.lambdify([n, tau, beta, eta], e, modules="mpmath")
        for (nv, it), text in zip(grid, row):
            with mpmath.workdps(50):
                want = g(mpmath.mpf(nv), 1 / mpmath.mpf(it), mpmath.mpf(1) / 4, mpmath.mpf(1) / 4)
                assert abs(mpmath.mpf(text) - want) <= mpmath.mpf(10) ** -44 * max(abs(want), mpmath.mpf(10) ** -300)


def test_compile_refuses_other_heads():
    with pytest.raises(Unsupported):
        compile_expr(sp.sin(n), [n], "mpmath")
    with pytest.raises(Unsupported):
        compile_expr(n + sp.Symbol("other"), [n], "float")


def test_cached_smt_text_equals_live_query(cache_dir):
    from softhard.solver.check import Claim, check_claim
    from softhard.solver.encode import build_query

    b = S.selection_bound("T", key_const=False, spacing=1)
    expr = b.leak.subs({beta: sp.Rational(1, 4), eta: sp.Rational(1, 4), tau: sp.Rational(1, 60000)})
    claim = Claim(expr, Fraction(1, 4), 2, 10_000)
    first = check_claim(claim, timeout_s=20)
    ST._memory.clear()
    again = check_claim(claim, timeout_s=20)  # query texts from disk
    assert first.status == again.status == "proved"
    assert [q.smtlib for q in first.queries] == [q.smtlib for q in again.queries]
    for q in again.queries:  # each box is asked at 32 bits, then (unless unsat) at 128 (solver/check.py)
        assert q.smtlib in {build_query(expr, Fraction(1, 4), q.lo, q.hi, prec=p).smtlib for p in (32, 128)}


def test_fingerprint_is_the_sympy_keyed_one_and_needs_no_sympy():
    """The store reads SymPy's version from the distribution's metadata: the same string as
    ``sympy.__version__`` (so the keys did not change with the split), and a fresh interpreter that
    computes a key and reads an entry loads no SymPy."""
    assert metadata.version("sympy") == sp.__version__
    h = hashlib.sha256()
    try:
        h.update(metadata.version("softhard").encode())
    except metadata.PackageNotFoundError:
        h.update(b"0+unknown")
    h.update(sp.__version__.encode())
    for d in (ROOT / "bounds", ROOT / "constructions", ROOT / "solver"):  # (every subfolder: rglob, not the store's os.walk)
        found = [p for ext in ("py", "lark", "json") for p in d.rglob(f"*.{ext}") if "__pycache__" not in p.parts]
        for p in sorted(found, key=lambda p: p.relative_to(d).as_posix()):
            h.update(p.name.encode())
            h.update(p.read_bytes())
    assert ST.fingerprint() == h.hexdigest()
    probe = ("import sys; from softhard.bounds import store; store.load(store.entry_key('x', [1])); "
             "print('sympy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize("value,on", [("0", False), ("off", False), ("FALSE", False), (" no ", False), ("1", True),
                                      ("on", True), ("", True)])
def test_the_cache_switch_reads_the_usual_off_words(monkeypatch, value, on):
    """A new-user trial: ``SOFTHARD_CACHE=off`` left the cache on (only ``0`` turned it off)."""
    monkeypatch.setenv("SOFTHARD_CACHE", value)
    ST.set_disk_cache(None)
    assert ST.disk_cache_enabled() is on


def test_subs_falls_back_to_live_where_it_cannot_key(cache_dir):
    """cache.subs answers as a live ``.subs`` where no key can be built (review13b F2, F3): two
    same-named symbols of other assumptions in one substitution, an integer past str()'s digit
    limit, and under ``sympy.evaluate(False)`` (a live subs then leaves the tree unevaluated)."""
    y, yp = sp.Symbol("y"), sp.Symbol("y", positive=True)
    assert C.subs(y + yp, {y: 1, yp: 2}) == 3
    big = sp.Integer(10) ** 5000 * tau
    assert C.subs(big, {tau: 2}) == 2 * sp.Integer(10) ** 5000
    x = sp.Symbol("x")
    e = sp.Max(sp.Rational(10, 9), x / 3) + sp.exp(-x)
    C.subs(e, {x: 3})  # a cached, evaluated entry first
    with sp.evaluate(False):
        live = e.subs({x: 3})
        got = C.subs(e, {x: 3})
    assert sp.srepr(got) == sp.srepr(live)
