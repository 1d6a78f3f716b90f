"""Symbolic leak bounds for soft selection heads (THEORY §2 gap lemma, §4 selections).

All expressions are SymPy expressions in the symbols :data:`n` (word length, ≥ 1), :data:`tau`
(temperature τ > 0), :data:`beta` (regime T tie-break weight, 0 < β ≤ 1/4) and :data:`eta`
(clean-up margin, 0 < η < 1/2).  A *leak bound* ``δ(n, τ, β)`` bounds, for every input of length
``n`` and every query row, the soft weight outside the hard argmax set; for Boolean values the
attention output error is at most the leak (D = 1, THEORY §2).

Regime T (score ``b_j + β·j/n``, BOS ``1/2``), with ``r = exp(−β/(nτ))`` and ``n ≥ 2``:

* some ``b = 1`` in the mask ("case A"):
  ``S_A = Σ_{k=1}^{n−2} r^k + exp(−(1/2 + β/n)/τ)``.  Proof: competitors before the chosen ``j*``
  sit at distinct distances ``kβ/n`` (b=1) or ``1 + kβ/n`` (b=0), so slot ``k`` contributes
  ``≤ r^k``; b=0 positions after ``j*`` sit at distance ``≥ 1 − β(n−2)/n > β(n−2)/n`` and so
  contribute ``≤ r^{n−2}``, no more than the unused slots; BOS sits at ``1/2 + βj*/n``.
  Attained up to the BOS term by ``b ≡ 1`` at the last query.
* no ``b = 1`` ("case B", the default wins): ``S_B = exp(−1/(2τ))·Σ_{j=1}^{n−1} exp(βj/(nτ))``,
  attained exactly by ``b ≡ 0``.
* ``δ_T = t/(1+t)`` with ``t = max(S_A, S_B)`` (THEORY §2: ``δ = S/(a+S)``, ``a = 1``).
* key ≡ 1 (``Y``, ``X``): case B never occurs, ``j* = i−1`` and the bound
  ``Σ_{k=1}^{n−2} r^k + exp(−(1/2 + β(n−1)/n)/τ)`` is attained exactly by every word.
* key *spacing* ``d ≥ 2`` (two positions with b = 1 are never closer than d:
  :mod:`softhard.constructions.spacing`): the m-th earlier b = 1 position sits at least ``md``
  slots before ``j*``, so the b = 1 competitors weigh at most ``Σ_{m≥1, md≤n−2} r^{md} ≤
  (r^d − r^{n−2+d})/(1 − r^d)``; every b = 0 position j (before or after ``j*``) sits at distance
  ``1 + β(j*−j)/n ≥ 1 − β(n−2)/n > 1 − β`` and there are at most ``n−2`` of them:
  ``S_A^{(d)} = (r^d − r^{n−2+d})/(1 − r^d) + (n−2)·exp(−(1 − β)/τ) + exp(−(1/2 + β/n)/τ)``.
  Attained up to the b = 0 and BOS terms by b = 1 every d positions ending just before the
  query.  With ``d = 1`` the general ``S_A`` above is used.

Regime U (score ``j + i·b(j)``, BOS ``i``), with ``q = exp(−1/τ)``: every competitor sits at a
distinct positive integer distance and at most ``n−1`` compete, so
``δ_U = S/(1+S)``, ``S = Σ_{k=1}^{n−1} q^k = (q − q^n)/(1 − q)``, attained exactly by ``b ≡ 1``
(and by ``b ≡ 0``) at the last query; ``δ_U < q`` for every ``n``.

Every ``exp`` in these expressions has an argument ≤ 0 on the valid range of n (the solver
relies on it to enclose each exponential in ``[0, 1]``).

The generic gap lemma ``(m−1)e^{−γ/τ}/(1 + (m−1)e^{−γ/τ})`` with ``m = n`` attendable positions
and gap ``γ = β/n`` (T) or ``1`` (U) is available for comparison: it costs a factor ``log n``.
"""

from __future__ import annotations

from functools import lru_cache

import sympy as sp

from .core import HALF, Bound, asymptotic_order, beta, eta, gap_lemma, n, tau

__all__ = ["Bound", "SelectionBound", "asymptotic_order", "beta", "eta", "gap_lemma", "n", "tau", "THETA",
           "geometric", "leak_T", "leak_U", "leak_U_all_n", "generic_T", "generic_U", "inv_tau_star_T",
           "inv_tau_star_U", "inv_tau_star_generic", "selection_bound", "HALF", "output_T_average",
           "inv_tau_star_T_average", "inv_tau_exact_T_average", "average_bound", "output_U_unique",
           "output_U_unique_all_n", "unique_output_bound_U", "output_T_value_const", "output_U_value_const",
           "output_T_values", "output_U_values", "value_const_bound", "values_bound"]

#: splitting constant θ of the sufficient closed form for regime T (see :func:`inv_tau_star_T`)
THETA = sp.Rational(1, 1000)


def geometric(r: sp.Expr, lo: sp.Expr, hi: sp.Expr) -> sp.Expr:
    """``Σ_{k=lo}^{hi} r^k`` in closed form ``(r^lo − r^{hi+1})/(1 − r)`` (valid for r ≠ 1, hi ≥ lo−1)."""
    return (r**lo - r ** (hi + 1)) / (1 - r)


def leak_T(key_const: bool = False, spacing: int = 1) -> sp.Expr:
    """Tight leak bound δ_T(n, τ, β) of a regime-T selection, valid for n ≥ 2 (module docstring).

    ``key_const=True`` gives the exact worst case of a head whose key is ≡ 1 (Y, X);
    ``spacing = d ≥ 2`` the bound for a key never 1 at two positions closer than d (the b = 1
    competitors at slots d, 2d, …).  Raises ``ValueError`` for a spacing < 1 or a constant key
    with spacing ≠ 1.  Source: THEORY §4 "Regime T", summed as in §2 "Structured rows".
    """
    d = int(spacing)
    if d < 1 or (key_const and d != 1):
        raise ValueError(f"spacing must be >= 1 (and 1 for a constant key), got {spacing}")
    u = beta / (n * tau)
    tail = sp.exp(-(n - 2) * u)
    s_geo = sp.exp(-u) * (1 - tail) / (1 - sp.exp(-u))  # Σ_{k=1}^{n-2} r^k
    if key_const:
        S = s_geo + sp.exp(-(HALF + beta * (n - 1) / n) / tau)
        return S / (1 + S)
    if d == 1:
        S_A = s_geo + sp.exp(-(HALF + beta / n) / tau)
    else:  # b = 1 competitors at slots d, 2d, …; b = 0 ones at distance ≥ 1 − β(n−2)/n
        s_geo_d = sp.exp(-d * u) * (1 - tail) / (1 - sp.exp(-d * u))  # (r^d − r^{n−2+d})/(1 − r^d)
        # (the b = 0 distance 1 − β(n−2)/n is bounded below by 1 − β: an n-free exponent keeps the
        # solver's enclosures tight — one box instead of ~30)
        S_A = s_geo_d + (n - 2) * sp.exp(-(1 - beta) / tau) + sp.exp(-(HALF + beta / n) / tau)
    # e^{−1/(2τ)} Σ_{j=1}^{n−1} e^{ju} = e^{−(1/2−β)/τ − u} (1 − e^{−(n−1)u})/(1 − e^{−u}),
    # written so that every exponent is ≤ 0 for n ≥ 1 (the solver encloses each exp in [0, 1]).
    S_B = sp.exp(-(HALF - beta) / tau - u) * (1 - sp.exp(-(n - 1) * u)) / (1 - sp.exp(-u))
    t = sp.Max(S_A, S_B)
    return t / (1 + t)


def leak_U() -> sp.Expr:
    """Tight leak bound δ_U(n, τ) of a regime-U selection: ``S/(1+S)``, ``S = (q − q^n)/(1 − q)``.

    Exact worst case over inputs of length n (valid for n ≥ 1).  Source: THEORY §4 "Regime U".
    """
    q = sp.exp(-1 / tau)
    S = q * (1 - sp.exp(-(n - 1) / tau)) / (1 - q)
    return S / (1 + S)


def leak_U_all_n() -> sp.Expr:
    """``q = exp(−1/τ)``: supremum over n of :func:`leak_U` (THEORY §4: δ ≤ q, independent of n)."""
    return sp.exp(-1 / tau)


def generic_T() -> sp.Expr:
    """Gap lemma for a regime-T selection: m = n attendable positions, gap γ = β/n."""
    return gap_lemma(n, beta / n)


def generic_U() -> sp.Expr:
    """Gap lemma for a regime-U selection: m = n attendable positions, gap γ = 1."""
    return gap_lemma(n, sp.Integer(1))


def inv_tau_star_T(spacing: int = 1) -> sp.Expr:
    """Closed-form sufficient inverse temperature for regime T: δ_T(n, τ, β) ≤ η when 1/τ is at least

    ``max( (n/β)·ln(1 + (1−η)/(η(1−θ))),  2·ln((1−η)/(θη)),  ln((n−1)(1−η)/η)/(1/2−β) )``

    with θ = :data:`THETA`.  Proof: the first two make ``r/(1−r) ≤ (1−θ)η/(1−η)`` and
    ``e^{−1/(2τ)} ≤ θη/(1−η)``, so ``S_A ≤ η/(1−η)``; the third makes
    ``S_B ≤ (n−1)e^{−(1/2−β)/τ} ≤ η/(1−η)``.  Leading order ``(n/β)·ln(1/η)``: Θ(n).
    With key spacing ``d ≥ 2`` the first term is divided by d (``r^d/(1−r^d)``), and the BOS and
    b = 0 terms share the θ part: ``2·ln(2(1−η)/(θη))`` and ``ln(2(n−1)(1−η)/(θη))/(1−β)``
    (``n − 2 < n − 1`` of them, each at distance ``1 − β(n−2)/n > 1 − β``).  Valid for n ≥ 2.
    """
    d = int(spacing)
    if d == 1:
        return sp.Max(
            (n / beta) * sp.log(1 + (1 - eta) / (eta * (1 - THETA))),
            2 * sp.log((1 - eta) / (THETA * eta)),
            sp.log((n - 1) * (1 - eta) / eta) / (HALF - beta),
        )
    return sp.Max(
        (n / (d * beta)) * sp.log(1 + (1 - eta) / (eta * (1 - THETA))),
        2 * sp.log(2 * (1 - eta) / (THETA * eta)),
        sp.log(2 * (n - 1) * (1 - eta) / (THETA * eta)) / (1 - beta),
        sp.log((n - 1) * (1 - eta) / eta) / (HALF - beta),
    )


def inv_tau_star_U() -> sp.Expr:
    """Closed-form inverse temperature for regime U: ``ln(1/η)`` makes δ_U(n) < q ≤ η for every n."""
    return sp.log(1 / eta)


def inv_tau_star_generic(m: sp.Expr, gap: sp.Expr) -> sp.Expr:
    """Gap lemma inverted: ``1/τ = ln((m−1)(1−η)/η)/γ`` makes the generic bound ≤ η (THEORY §2)."""
    return sp.log((m - 1) * (1 - eta) / eta) / gap


SelectionBound = Bound  # backwards-compatible name


@lru_cache(maxsize=64)  # building the closed forms (SymPy Max) costs ~0.15 s; Bounds are never mutated
def selection_bound(regime: str, key_const: bool = False, spacing: int = 1) -> Bound:
    """:class:`Bound` for a selection head in regime ``"T"`` or ``"U"`` (THEORY §4).

    ``spacing``: the key's least distance between two 1s (regime T uses it, :func:`leak_T`; in
    regime U the worst case, a key = 1 only at position 1, does not depend on it).  Raises
    ``ValueError`` for an unknown regime.
    """
    if regime == "T":
        d = 1 if key_const else int(spacing)
        return Bound(
            kind="selection", regime="T", key_const=key_const, leak=leak_T(key_const, d), generic=generic_T(),
            inv_tau_star=inv_tau_star_T(d), inv_tau_star_generic=inv_tau_star_generic(n, beta / n),
            gap=beta / n, all_n=None, n_min=2, spacing=d,
            attained_by=("every word at the last query (key ≡ 1)" if key_const else
                         "a run of key = 1 ending just before the query (case A); key ≡ 0 (case B)" if d == 1 else
                         f"key = 1 every {d} positions ending just before the query (case A); key ≡ 0 (case B)"))
    if regime == "U":
        return Bound(
            kind="selection", regime="U", key_const=key_const, leak=leak_U(), generic=generic_U(),
            inv_tau_star=inv_tau_star_U(), inv_tau_star_generic=inv_tau_star_generic(n, sp.Integer(1)),
            gap=sp.Integer(1), all_n=leak_U_all_n(), n_min=1,
            attained_by="key ≡ 1 or key ≡ 0 up to the query")
    raise ValueError(f"unknown regime {regime!r}")


def output_T_average() -> sp.Expr:
    """Exact worst-case *output* error of an average-hard selection in regime T (THEORY §4b), n ≥ 2.

    Head: score ``b(j)`` on real positions, BOS ``1/2``, value ``v = b`` (0 at BOS), rule AHA; the
    clean-up reads the output ``y = Σ_{b(j)=1} α_j``.  With ``a`` positions with b = 1 and ``m``
    real positions in the mask and ``x = e^{−1/(2τ)}``:

    * ``a = 0``: every value is 0, so ``y = 0`` exactly (the hard output): error 0;
    * ``a ≥ 1``: ``y = a/(a + x + (m−a)x²)`` (BOS at gap 1/2, the ``m − a`` positions with b = 0
      at gap 1), error ``1 − y = S/(a + S)`` with ``S = x + (m−a)x²``.  It decreases in ``a`` and
      increases in ``m ≤ n − 1`` (strict mask, query n or 1), so the worst case over all words of
      length n is ``a = 1``, ``m = n − 1``:

    ``err(n, τ) = S/(1 + S)``, ``S = e^{−1/(2τ)} + (n − 2)·e^{−1/τ}``, attained exactly by one
    position with b = 1 before the last query (after the first, for F).
    """
    S = sp.exp(-HALF / tau) + (n - 2) * sp.exp(-1 / tau)
    return S / (1 + S)


def inv_tau_star_T_average() -> sp.Expr:
    """Closed-form sufficient 1/τ for :func:`output_T_average` ≤ η:
    ``max(2·ln(2(1−η)/η), ln(2(n−1)(1−η)/η))``.  Proof: then ``e^{−1/(2τ)} ≤ η/(2(1−η))`` and
    ``(n−2)e^{−1/τ} ≤ η/(2(1−η))``, so ``S ≤ η/(1−η)`` and ``S/(1+S) ≤ η``.  Leading order
    ``ln n``: Θ(log n) (THEORY §4b)."""
    return sp.Max(2 * sp.log(2 * (1 - eta) / eta), sp.log(2 * (n - 1) * (1 - eta) / eta))


def inv_tau_exact_T_average() -> sp.Expr:
    """The exact requirement: :func:`output_T_average` = η at ``1/τ = −2·ln x*`` with
    ``x* = 2k/(1 + √(1 + 4(n−2)k))``, ``k = η/(1−η)`` (the positive root of ``(n−2)x² + x = k``,
    written without cancellation; valid for n ≥ 2)."""
    k = eta / (1 - eta)
    return -2 * sp.log(2 * k / (1 + sp.sqrt(1 + 4 * (n - 2) * k)))


@lru_cache(maxsize=8)
def average_bound(regime: str) -> Bound:
    """:class:`Bound` of an average-hard selection (THEORY §4b): an output-error bound
    (``quantity = "output"``).  Only regime ``"T"``; raises ``ValueError`` otherwise."""
    if regime != "T":
        raise ValueError(f"average-hard selections are built in regime T only, got {regime!r}")
    return Bound(kind="average-selection", regime="T", leak=output_T_average(), generic=gap_lemma(n, HALF),
                 inv_tau_star=inv_tau_star_T_average(), inv_tau_star_generic=inv_tau_star_generic(n, HALF),
                 gap=HALF, all_n=None, n_min=2, quantity="output", source="THEORY §4b, §2",
                 attained_by="one position with key = 1 in the mask of the last (first, for F) query; "
                             "no key = 1: output exactly 0")


def output_U_unique(first: int = 1) -> sp.Expr:
    """Exact worst-case *output* error of a regime-U unique selection whose value is its key
    (``P φ``, ``F φ``; THEORY §4b), for a key that can be 1 no earlier than position ``p = first``.

    Query i, chosen ``j*`` (the nearest b = 1, ``j* ≥ p``, score ``j* + i``); the positions with
    value 0 are BOS (score i: gap ``j*``) and the b = 0 positions (score j: gap ``j* + i − j``, all
    distinct); earlier b = 1 positions carry value 1 and only add to the denominator.  Every gap
    grows with ``j*`` and i, so the worst case is ``j* = p`` at the last query (i = n) with every
    other position b = 0 (positions before p must be): gaps ``p … n−1`` (BOS and the b = 0 positions
    after p) and ``n+1 … n+p−1`` (those before p).  With ``q = e^{−1/τ}``

    ``S = q^p (1 − q^{n−p})/(1 − q) + q^{n+1} (1 − q^{p−1})/(1 − q)``, error ``S/(1 + S)``,

    attained exactly for n ≥ p + 1; valid (every exponent ≤ 0) for n ≥ p, and below p + 1 no b = 1
    is visible: output 0 exactly.  With p = 1 it is :func:`leak_U`."""
    p = int(first)
    q = sp.exp(-1 / tau)
    S = sp.exp(-sp.Integer(p) / tau) * (1 - sp.exp(-(n - p) / tau)) / (1 - q)
    if p > 1:
        S += sp.exp(-(n + 1) / tau) * (1 - sp.exp(-sp.Integer(p - 1) / tau)) / (1 - q)
    return S / (1 + S)


def output_U_unique_all_n(first: int = 1) -> sp.Expr:
    """Supremum over n of :func:`output_U_unique`: ``q^p/(1 − q + q^p)`` (= q for p = 1)."""
    qp = sp.exp(-sp.Integer(int(first)) / tau)
    return qp / (1 - sp.exp(-1 / tau) + qp)


@lru_cache(maxsize=16)
def unique_output_bound_U(first: int = 1) -> Bound:
    """:class:`Bound` of a regime-U (or P) unique selection whose value is its key, on its output
    (THEORY §4b): :func:`output_U_unique`, one τ for every n (:func:`output_U_unique_all_n`)."""
    p = int(first)
    return Bound(kind="selection", regime="U", leak=output_U_unique(p), generic=generic_U(),
                 inv_tau_star=sp.log(1 / eta),  # q ≤ η: S ≤ q/(1−q) ≤ η/(1−η) for every p
                 inv_tau_star_generic=inv_tau_star_generic(n, sp.Integer(1)), gap=sp.Integer(1),
                 all_n=output_U_unique_all_n(p), n_min=p, quantity="output", first=p, source="THEORY §4b, §4",
                 attained_by=f"one key = 1 at position {p} from the start (end, for F) before the query; "
                             "no key = 1: output exactly 0")


# ---------------------------------------------------------------------------------------------
# unique selections whose value is not their key, judged on their output (THEORY §4c)


def output_T_value_const() -> sp.Expr:
    """Exact worst-case *output* error of a regime-T unique selection whose value is ≡ 1 and whose
    key is ≡ 1 (``Y true``, ``X true``; THEORY §4c), n ≥ 2.

    The chosen position ``j* = i − 1`` carries value 1 and so does every earlier position: only BOS
    (value 0, gap ``1/2 + βj*/n``) errs, ``err = x_{j*}/(1 + x_{j*} + Σ_{k=1}^{j*−1} r^k)``,
    ``x_{j*} = e^{−(1/2 + βj*/n)/τ}``, which decreases in ``j*``: the worst query is ``i = 2``
    (``j* = 1``, no other competitor) and ``err = x/(1 + x)``, ``x = e^{−(1/2 + β/n)/τ}`` — attained
    exactly at position 2 of every word of length n (position n − 1 for X)."""
    x = sp.exp(-(HALF + beta / n) / tau)
    return x / (1 + x)


def output_U_value_const() -> sp.Expr:
    """Regime-U analogue of :func:`output_T_value_const`: BOS sits ``j*`` below the chosen position
    (score ``j* + i`` against ``i``), the worst query is ``i = 2``: ``q/(1 + q)``, ``q = e^{−1/τ}``,
    for every n ≥ 2 (attained exactly at position 2)."""
    q = sp.exp(-1 / tau)
    return q / (1 + q)


def output_T_values(spacing: int = 1, value_spacing: int = 2) -> sp.Expr:
    """Output-error bound of a regime-T unique selection whose value is not its key (THEORY §4c),
    n ≥ 2: ``S/(1 + S)`` with ``S = min(S_A^{(d)}, S_out)``,

    ``S_out = (r^{d_v} − r^{n−2+d_v})/(1 − r^d) + (n − 2)·e^{−(1−β)/τ} + e^{−(1/2 + β/n)/τ}``,

    ``r = e^{−β/(nτ)}``, ``d`` the key spacing, ``d_v ≥ d`` the value spacing (two key = 1 positions
    closer than ``d_v`` carry equal values).  Every compiled selection has ``v ⇒ b`` (Y/X: b ≡ 1;
    S/U: v = ψ, b = ψ ∨ ¬φ), so with no b = 1 (BOS wins, value 0) every value is 0: output error 0.
    With a chosen ``j*`` only the competitors whose value differs from ``v(j*)`` err: earlier b = 1
    positions at slots ``k ≥ d_v`` (at least d apart: ``r^{d_v}, r^{d_v+d}, …``, at most
    ``(r^{d_v} − r^{n−2+d_v})/(1 − r^d)`` as ``d_v ≥ d``), b = 0 positions (at most n − 2, gap
    ``≥ 1 − β``) and BOS (gap ``≥ 1/2 + β/n``), and ``err ≤ D/(1 + D)`` for their weight D.  The leak's
    case A sum ``S_A^{(d)}`` (:func:`leak_T`) bounds it too.  Attained up to the b = 0 and BOS terms by
    b = 1 at ``j* = n − 1`` (value 1) and at every d-th position from ``j* − d_v`` down (value 0)."""
    d, dv = int(spacing), int(value_spacing)
    if d < 1 or dv < max(d, 2):
        raise ValueError(f"value spacing must be >= max(2, key spacing), got {dv} (key spacing {d})")
    u = beta / (n * tau)
    tail = sp.exp(-(n - 2) * u)
    bos = sp.exp(-(HALF + beta / n) / tau)
    if d == 1:
        s_a = sp.exp(-u) * (1 - tail) / (1 - sp.exp(-u)) + bos
    else:
        s_a = sp.exp(-d * u) * (1 - tail) / (1 - sp.exp(-d * u)) + (n - 2) * sp.exp(-(1 - beta) / tau) + bos
    s_out = sp.exp(-dv * u) * (1 - tail) / (1 - sp.exp(-d * u)) + (n - 2) * sp.exp(-(1 - beta) / tau) + bos
    S = sp.Min(s_a, s_out)
    return S / (1 + S)


def output_U_values(m: int) -> sp.Expr:
    """Output-error bound of a regime-U unique selection whose value is not its key (THEORY §4c):
    ``S/(1+S)``, ``S = (q^m − q^{n+m−1})/(1 − q)``, ``m = min(d_v, p)`` (value spacing, key_first).
    The competitors sit at distinct integer distances (earlier b = 1 at k, BOS at ``j* ≥ p``, b = 0
    beyond ``j*``); the ones whose value differs are at distance ``≥ m``, and at most n − 1 compete."""
    q = sp.exp(-1 / tau)
    S = sp.exp(-sp.Integer(int(m)) / tau) * (1 - sp.exp(-(n - 1) / tau)) / (1 - q)
    return S / (1 + S)


@lru_cache(maxsize=8)
def value_const_bound(regime: str) -> Bound:
    """:class:`Bound` of a unique selection with value ≡ 1 and key ≡ 1 (THEORY §4c), on its output:
    :func:`output_T_value_const` (regime T; sufficient ``1/τ = 2 ln((1−η)/η)``, Θ(1)) or
    :func:`output_U_value_const` (U/P; ``ln((1−η)/η)``, every n).  Raises ``ValueError`` otherwise."""
    text = "every word at position 2 (the first query with a real candidate): only BOS (value 0) errs"
    if regime == "T":
        return Bound(kind="selection", regime="T", key_const=True, leak=output_T_value_const(), generic=generic_T(),
                     inv_tau_star=2 * sp.log((1 - eta) / eta), inv_tau_star_generic=inv_tau_star_generic(n, beta / n),
                     gap=beta / n, n_min=2, quantity="output", value_const=True, source="THEORY §4c",
                     attained_by=text)
    if regime in ("U", "P"):
        return Bound(kind="selection", regime="U", key_const=True, leak=output_U_value_const(), generic=generic_U(),
                     inv_tau_star=sp.log((1 - eta) / eta), inv_tau_star_generic=inv_tau_star_generic(n, sp.Integer(1)),
                     gap=sp.Integer(1), all_n=output_U_value_const(), n_min=1, quantity="output", value_const=True,
                     source="THEORY §4c", attained_by=text)
    raise ValueError(f"unknown regime {regime!r}")


@lru_cache(maxsize=32)
def values_bound(regime: str, spacing: int, value_spacing: int, first: int = 1) -> Bound:
    """:class:`Bound` of a unique selection whose value is not its key, with value spacing
    ``d_v ≥ 2`` (THEORY §4c), on its output: :func:`output_T_values` (regime T) or
    :func:`output_U_values` with ``m = min(d_v, first)`` (U/P; needs m ≥ 2).  Sufficient closed form
    in T: ``r ≤ 1/2`` and ``r^{d_v} ≤ (1−θ)ρ/2`` bound the geometric part by ``(1−θ)ρ`` (``1 − r^d ≥
    1 − r``), the BOS and b = 0 parts as in :func:`inv_tau_star_T`; Θ(n), ``d_v`` times below the
    leak's leading term.  Raises ``ValueError`` for an unknown regime or too small a spacing."""
    d, dv = int(spacing), int(value_spacing)
    rho = eta / (1 - eta)
    if regime == "T":
        return Bound(kind="selection", regime="T", leak=output_T_values(d, dv), generic=generic_T(),
                     inv_tau_star=sp.Max((n / beta) * sp.log(2), (n / (dv * beta)) * sp.log(2 / ((1 - THETA) * rho)),
                                         2 * sp.log(2 * (1 - eta) / (THETA * eta)),
                                         sp.log(2 * (n - 1) * (1 - eta) / (THETA * eta)) / (1 - beta)),
                     inv_tau_star_generic=inv_tau_star_generic(n, beta / n), gap=beta / n, n_min=2, spacing=d,
                     quantity="output", value_spacing=dv, source="THEORY §4c",
                     attained_by=f"key = 1 just before the query (value 1) and every {d} position(s) from {dv} "
                                 "before it on (value 0); no key = 1: output exactly 0")
    if regime in ("U", "P"):
        m = min(dv, int(first))
        if m < 2:
            raise ValueError(f"regime U output bound needs min(value spacing, key_first) >= 2, got {m}")
        return Bound(kind="selection", regime="U", leak=output_U_values(m), generic=generic_U(),
                     inv_tau_star=sp.log(1 / eta), inv_tau_star_generic=inv_tau_star_generic(n, sp.Integer(1)),
                     gap=sp.Integer(1), all_n=output_U_unique_all_n(m), n_min=1, quantity="output",
                     value_spacing=dv, first=int(first), spacing=d, source="THEORY §4c",
                     attained_by=f"key = 1 at distances >= {m} from the chosen position with the other value")
    raise ValueError(f"unknown regime {regime!r}")
