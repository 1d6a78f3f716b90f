"""Figures of certificates (``softhard plot``): what a reader wants to see of a formula certificate.

Per certificate (one row of the figure per certificate, so a batch is one row per job):

* **left — 1/τ against n, per distinct node bound**: the tight numeric requirement (the smallest
  1/τ with bound(n, τ) ≤ η, :func:`softhard.bounds.derive.required_inv_tau_many`; solid), the
  node's closed form ``inv_tau_star`` (THEORY §4; dashed) and the generic gap lemma's
  ``inv_tau_star_generic`` (dotted), each over a log grid of n in the certified range; the
  certified 1/τ (squares: at the binding length, and a line over the range it is certified for;
  under a schedule 1/τ(n) = S·g(n), THEORY §9, that line is the curve S·g(n))
  and the empirical minimum measured on the soft transformer (crosses), both read from the
  certificate's ``search`` section;
* **right — output error against 1/τ**: each node's bound at the binding length against 1/τ, the
  tolerance η, the certified 1/τ, and the largest leak observed by the numeric run at the
  certified 1/τ (circles, ``nodes[].numeric``; absent with ``--no-numeric``).

The curves come from the construction rebuilt from the certificate's stored source and parameters
(:func:`softhard.solver.pipeline.rebuild`, the replay's first step), never from text in the file.
Model and Tracr certificates carry no per-node 1/τ curves; :func:`plot_data` refuses them.
Curves are float64 (numeric, for reading — the proofs are the certificate's claims).
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np
import sympy as sp

from ..bounds.core import beta, eta, n, tau
from ..bounds.derive import fix, required_inv_tau_many
from ..constructions.errors import ParameterError
from .certificate import construction_params
from .pipeline import rebuild

#: points per curve (log grid in n or 1/τ)
POINTS = 60
#: the most rows (certificates) one figure draws
MAX_ROWS = 24


@dataclass
class NodeCurves:
    """One distinct node bound of a certificate: ``ns`` (lengths), ``tight`` / ``closed`` /
    ``generic`` (1/τ needed at each n; ``closed``/``generic`` None when the bound has no such
    form), ``certified`` (the certificate's exact 1/τ, under a schedule its constant S) and its
    binding n, ``certified_curve`` (the certified 1/τ at each n: S·g(n) under a schedule
    1/τ(n) = S·g(n), THEORY §9; else constant) and ``certified_at`` (at the binding n), ``empirical`` ((n, 1/τ) or None),
    ``inv_taus``/``errors`` (the bound at the binding n against 1/τ) and ``observed`` (the largest
    leak of the numeric run at the certified 1/τ and the n it was seen at, or None)."""

    node: str
    ns: np.ndarray
    tight: np.ndarray
    closed: np.ndarray | None
    generic: np.ndarray | None
    certified: Fraction
    certified_curve: np.ndarray
    certified_at: float
    binding_n: int
    empirical: tuple[int, float] | None
    inv_taus: np.ndarray
    errors: np.ndarray
    observed: tuple[float, int] | None


@dataclass
class CertificatePlot:
    """What one row of the figure shows: the title, the tolerance η, the range, the temperature
    schedule (``const``, ``lin``, ``log``: THEORY §9) and the curves."""

    title: str
    eta: float
    n_lo: int
    n_hi: int
    all_n: bool
    schedule: str = "const"
    nodes: list[NodeCurves] = field(default_factory=list)


#: g(n) of each schedule 1/τ(n) = S·g(n), as a legend writes it
_G = {"lin": "n", "log": "ln(n+1)"}


def _curve(expr: sp.Expr | None, ns: np.ndarray, b: float, e: float) -> np.ndarray | None:
    if expr is None:
        return None
    f = sp.lambdify([n, beta, eta], expr, modules="numpy")
    with np.errstate(all="ignore"):
        return np.broadcast_to(np.asarray(f(ns, b, e), dtype=np.float64), ns.shape).copy()


def plot_data(cert: dict, points: int = POINTS) -> CertificatePlot:
    """The curves of one formula certificate (module docstring).  ``points`` per curve.
    Raises :class:`ParameterError` for a certificate of another kind or without a search section
    (certified with ``--tau``: there is no certified requirement to compare), and
    :class:`~softhard.constructions.errors.CertificateError` when it does not rebuild."""
    if cert.get("kind") != "formula":
        raise ParameterError(f"plot draws formula certificates; this one is of kind {cert.get('kind')!r}")
    if not cert.get("search"):
        raise ParameterError("plot needs a certificate made with --find-tau (its search section holds the certified "
                             "and empirical 1/tau per node)")
    params = construction_params(cert)
    c = rebuild(cert["source"], params)
    b, e = float(c.params.beta), float(c.params.eta)
    rng = cert["range"]
    n_lo, n_hi = max(rng["n_min"], 2), max(rng["n_max"], 3)
    ns = np.unique(np.round(np.geomspace(n_lo, n_hi, points)))
    title = cert["construction"]["title"]
    title = title if len(title) <= 48 else title[:45] + "..."
    out = CertificatePlot(title=f"{title} — regime {cert['construction']['regime']}",
                          eta=e, n_lo=rng["n_min"], n_hi=rng["n_max"], all_n=rng["all_n"],
                          schedule=c.params.schedule_kind)
    numeric = {x["node"]: x.get("numeric") for x in cert["nodes"]}
    for row in cert["search"]["per_bound"]:
        nb = c.bounds.get(row["node"])
        if nb is None or nb.bound.parameter != tau or nb.bound.tolerance != eta:
            continue  # layer-norm epsilon and other parameters: no 1/tau curve
        leak = fix(nb.leak, nb.fixed)
        cert_inv = Fraction(row["inv_tau_certified"])
        nb_n = int(row["binding_n"] or rng["n_max"])  # None: the bound does not depend on n
        emp = row.get("empirical")
        at_binding = c.params.inv_tau_at(nb_n, cert_inv)  # S·g(n) at the binding n under a schedule
        grid = np.geomspace(at_binding / 8, at_binding * 4, points)
        f = sp.lambdify([n, tau, beta, eta], leak, modules="numpy")
        with np.errstate(all="ignore"):
            errs = np.broadcast_to(np.asarray(f(float(nb_n), 1.0 / grid, b, e), dtype=np.float64), grid.shape).copy()
        num = numeric.get(row["node"])
        out.nodes.append(NodeCurves(
            node=row["node"], ns=ns, tight=required_inv_tau_many(leak, ns, eta_value=c.params.eta,
                                                                 beta_value=c.params.beta),
            closed=_curve(nb.bound.inv_tau_star, ns, b, e), generic=_curve(nb.bound.inv_tau_star_generic, ns, b, e),
            certified=cert_inv, certified_curve=np.array([c.params.inv_tau_at(int(k), cert_inv) for k in ns]),
            certified_at=at_binding, binding_n=nb_n,
            empirical=(int(emp["n"]), float(emp["inv_tau_empirical"])) if emp else None,
            inv_taus=grid, errors=errs,
            observed=(float(num["largest_leak"]), int(num["largest_leak_at_n"]))
            if num and num.get("largest_leak") is not None else None))
    return out


def draw(plots: list[CertificatePlot], path: str) -> None:
    """Draw ``plots`` (one row each) into ``path`` (.png or .svg) with matplotlib (the ``[plot]``
    extra, imported here).  Raises :class:`ParameterError` for another suffix, more than
    :data:`MAX_ROWS` rows, or a missing matplotlib."""
    suffix = str(path).rsplit(".", 1)[-1].lower()
    if suffix not in ("png", "svg"):
        raise ParameterError(f"{path}: the figure must be a .png or .svg file")
    if not plots or len(plots) > MAX_ROWS:
        raise ParameterError(f"plot draws 1 to {MAX_ROWS} certificates, got {len(plots)}")
    try:
        import matplotlib  # optional extra: lazy
    except ImportError:
        raise ParameterError("plot needs matplotlib: pip install 'softhard[plot]'") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = figure(plots)
    fig.savefig(path, dpi=110, metadata={"Date": None} if suffix == "svg" else {"Software": None})
    plt.close(fig)


#: the longest line of a panel title, characters (a longer title wraps onto further lines)
TITLE_WIDTH = 52


def range_text(n_hi: int, all_n: bool) -> str:
    """The length range of a panel title: ``all n``, ``n ≤ 1000`` or, for a power of ten beyond
    10^6, ``n ≤ 10^15`` (exact either way)."""
    if all_n:
        return "all n"
    k = len(str(n_hi)) - 1
    return f"n ≤ 10^{k}" if k >= 6 and n_hi == 10 ** k else f"n ≤ {n_hi}"


def panel_title(p: CertificatePlot) -> str:
    """The left panel's title: the certificate's title and its range, wrapped at
    :data:`TITLE_WIDTH` characters (a long range or title was clipped at the figure's edge)."""
    return textwrap.fill(f"{p.title} ({range_text(p.n_hi, p.all_n)})", TITLE_WIDTH)


def figure(plots: list[CertificatePlot]):
    """The matplotlib figure of ``plots`` (one row each: 1/τ needed against n; the bound against
    1/τ), laid out by matplotlib's constrained layout so no title or label is clipped.  Needs
    matplotlib (the caller, :func:`draw`, checks it is installed and picks the Agg backend)."""
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    fig, axes = plt.subplots(len(plots), 2, figsize=(12, 4.2 * len(plots)), squeeze=False, layout="constrained")
    for (left, right), p in zip(axes, plots):
        for i, nc in enumerate(p.nodes):
            col = f"C{i % 10}"
            left.plot(nc.ns, nc.tight, "-", color=col, label=f"{nc.node}: tight (bound = η)")
            if nc.closed is not None:
                left.plot(nc.ns, nc.closed, "--", color=col, alpha=0.7, label="closed form")
            if nc.generic is not None:
                left.plot(nc.ns, nc.generic, ":", color=col, alpha=0.7, label="generic gap lemma")
            hi = nc.certified_at
            if p.schedule == "const":
                left.hlines(hi, p.n_lo, p.n_hi, colors=col, linestyles="-", alpha=0.25)
            else:  # the certified 1/tau(n) = S·g(n) over the range
                left.plot(nc.ns, nc.certified_curve, "-", color=col, lw=3, alpha=0.25,
                          label=f"certified 1/τ(n) = {float(nc.certified):.4g}·{_G[p.schedule]}")
            left.plot([nc.binding_n], [hi], "s", color=col, ms=7, label="certified (Z3)")
            if nc.empirical:
                left.plot([nc.empirical[0]], [nc.empirical[1]], "x", color="k", ms=9, mew=2,
                          label="empirical minimum" if i == 0 else None)
            right.plot(nc.inv_taus, nc.errors, "-", color=col, label=f"{nc.node}: bound at n = {nc.binding_n}")
            right.axvline(hi, color=col, alpha=0.4, ls="--")
            if nc.observed is not None and nc.observed[0] > 0:
                right.plot([hi], [nc.observed[0]], "o", color=col, mfc="none", ms=9,
                           label=f"largest observed leak (n = {nc.observed[1]})")
        right.axhline(p.eta, color="k", lw=0.8, label="tolerance η")
        left.set(xscale="log", yscale="log", xlabel="n", ylabel="1/τ needed", title=panel_title(p))
        right.set(xscale="log", yscale="log", xlabel="1/τ", ylabel="output error (leak)", title="error against 1/τ")
        for ax in (left, right):
            ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
            ax.grid(True, which="both", alpha=0.2)
            ax.legend(fontsize=7, loc="best")
    return fig

