"""The public Python API (``import softhard``): one function per pipeline stage, every input kind.

Stages (docs/ARCHITECTURE.md): load → build (a :class:`Construction`: graph, transformer, node
bounds, premises) → derive (node bounds) → certify (claims, Z3 proofs, numeric runs, a certificate)
→ verify (replay).  :func:`run` and :func:`confirm` run the hard and soft transformers.
Parameters travel in one :class:`~softhard.bounds.params.Params`.  Every error is a
:class:`~softhard.constructions.errors.SofthardError` with a one-line message.
"""

from __future__ import annotations

import inspect
import os
from fractions import Fraction

from ..bounds.confirm import Confirmation
from ..bounds.confirm import confirm as _confirm_run
from ..bounds.derive import NodeBound
from ..bounds.params import Params
from ..constructions.engine import Trace, forward
from ..constructions.errors import ParameterError, SofthardError
from ..constructions.parameters import DEFAULT_MAX_POSITIONS, check_keywords, to_count, to_path, to_seconds
from ..constructions.softmax import check_inv_tau
from ..constructions.hard_model import ModelSpec
from ..constructions.modelfile import load_model as _load_model
from ..constructions.parse import FormulaSpec, load_spec, tokenize
from ..constructions.tracr import TracrModel
from ..constructions.tracr_load import load_tracr as _load_tracr
from .api_checks import (boundary, check_certify_options, check_inv_taus, check_symbols, expect_analysis,
                         expect_certificate, expect_construction, expect_spec, expect_tracr)
from .certificate import certify as _certify
from .formula_numeric import PLAN_DEFAULTS, check_work, numeric_families, planned_lengths, resolve_plan, work_estimate
from .certjson import load_certificate as _load_certificate
from .certjson import write_certificate as _write_certificate
from .kinds import verify_certificate
from .models import ModelAnalysis, build_model_construction
from .models import certify_model as _certify_model
from .pipeline import Construction
from .pipeline import build_formula
from .replay import VerifyReport
from .tracr import certify_tracr as _certify_tracr

__all__ = ["Params", "SofthardError", "load_formula", "load_model", "load_tracr", "build", "build_model", "derive",
           "certify", "certify_model", "certify_tracr", "verify", "load_certificate", "write_certificate", "run",
           "confirm", "Construction", "ModelSpec", "TracrModel", "FormulaSpec", "ModelAnalysis", "VerifyReport"]


#: keyword options :func:`build_model` passes on to :func:`build_model_construction`
MODEL_OPTIONS = tuple(k for k, v in inspect.signature(build_model_construction).parameters.items()
                      if v.kind is v.KEYWORD_ONLY and k not in ("n_max", "epsilon", "progress"))
#: the input-family options :func:`confirm` accepts (the plan's, without the key-pattern runs)
FAMILY_OPTIONS = tuple(k for k in PLAN_DEFAULTS if k != "key_pattern_ns")


@boundary
def load_formula(formula: str | os.PathLike, alphabet=None) -> FormulaSpec:
    """An ``.ltl`` file's path or an inline formula (``"a S b"``) as a :class:`FormulaSpec`.

    ``alphabet``: a string of one-character symbols, a whitespace-separated string or a list/tuple
    of symbol strings (default: the file's, or the symbols an inline formula mentions).  Raises
    :class:`~softhard.constructions.errors.FormulaSyntaxError` (``source:line:col``),
    ``FormulaError`` or ``InputFileError``; :class:`ParameterError` for a ``formula`` that is not a
    str or os.PathLike or an ``alphabet`` of another type.  Source: THEORY §4, §5; examples/README.md."""
    to_path(formula, "load_formula: formula (a path or formula text)")
    check_symbols(alphabet, "load_formula", "alphabet", none_ok=True)
    return load_spec(formula, alphabet=alphabet)


load_model = boundary(_load_model, lambda a: to_path(a["path"], "load_model: path"),
                      raises="a ``path`` that is not a str or os.PathLike is a :class:`ParameterError`.")
load_tracr = boundary(_load_tracr, lambda a: to_path(a["path"], "load_tracr: path"),
                      raises="a ``path`` that is not a str or os.PathLike is a :class:`ParameterError`.")
load_certificate = boundary(_load_certificate, lambda a: to_path(a["path"], "load_certificate: path"),
                            raises="a ``path`` that is not a str or os.PathLike is a :class:`ParameterError`.")
write_certificate = boundary(_write_certificate, lambda a: to_path(a["path"], "write_certificate: path"),
                             raises="a ``path`` that is not a str or os.PathLike is a :class:`ParameterError`.")


@boundary
def build(spec: FormulaSpec, params: Params | None = None) -> Construction:
    """Compile a formula into its hard/soft transformer pair and derive every node's bound.

    ``params``: regime, β, η, comparator, ε_LN, schedule (default ``Params()``: regime T, β = η = 1/4,
    constant τ; ``Params(schedule="log")`` makes :func:`certify`'s τ the schedule's constant S, THEORY §9).
    Raises :class:`ParameterError` for parameters the construction cannot use (e.g. parity outside
    regime P), and for a ``spec`` that is not a :class:`FormulaSpec` (a path or formula text: load
    it first with :func:`load_formula`).  Source: THEORY §3–§5."""
    expect_spec(spec, FormulaSpec, "build", "softhard.load_formula(path or formula text)")
    if params is not None and not isinstance(params, Params):
        raise ParameterError(f"build: params must be a softhard.Params, got {type(params).__name__}")
    p = params or Params()
    # the one Params object, whole (its schedule and construction too), onto the one pipeline
    return build_formula(spec, p if p.eta is not None else p.with_(eta=Fraction(1, 4)))


@boundary
def build_model(spec: ModelSpec, *, n_max: int, epsilon="margin", progress=None, **options
                ) -> tuple[Construction, ModelAnalysis]:
    """A hard-attention model file's construction and its gap analysis (premises) up to length
    ``n_max``; ``epsilon``: the output tolerance ε (exact, or ``"margin"``: from the outputs'
    rounding margins).  ``options``: the keywords of
    :func:`softhard.solver.models.build_model_construction` (:data:`MODEL_OPTIONS`).
    Raises :class:`ParameterError` (also for a ``spec`` that is not a :class:`ModelSpec`: load it
    with :func:`load_model`; an ``n_max`` that is not an integer >= 1; an unknown option, named with
    the accepted ones), :class:`~softhard.constructions.errors.ModelFormatError`.  Source: THEORY §2,
    §6; docs/models.md."""
    expect_spec(spec, ModelSpec, "build_model", "softhard.load_model(path)")
    check_keywords("build_model", options, ("n_max", "epsilon", "progress") + MODEL_OPTIONS)
    n_max = to_count(n_max, "n_max")
    return build_model_construction(spec, n_max=n_max, epsilon=epsilon, progress=progress, **options)


@boundary
def derive(c: Construction) -> dict[str, NodeBound]:
    """Every attention node's bound (SymPy expressions in n and the parameters), by node name:
    the derive stage's result carried in the construction.  Raises :class:`ParameterError` for a
    ``c`` that is not a built :class:`Construction` (a loaded spec: build it first).  Source:
    THEORY §2–§6."""
    return dict(expect_construction(c, "derive").bounds)


def _certify_args(a: dict) -> None:
    expect_construction(a["c"], "certify", "formula")
    check_certify_options(a)


certify = boundary(
    _certify, _certify_args,
    raises="a ``c`` that is not a built formula :class:`Construction` is a :class:`ParameterError` (a loaded "
           "spec: call ``softhard.build(spec, softhard.Params(...))`` first; a model construction: "
           ":func:`certify_model`), as are an unknown keyword, a ``find_tau``/``numeric`` that is not a bool, an "
           "``all_n`` that is not a bool or None and a ``tune`` with a name other than ``eps_ln``.")


def _certify_model_args(a: dict) -> None:
    expect_construction(a["c"], "certify_model", "model")
    expect_analysis(a["an"], "certify_model")


certify_model = boundary(
    _certify_model, _certify_model_args,
    raises="a ``c`` that is not a built model :class:`Construction` (a formula construction: :func:`certify`), "
           "an ``an`` that is not the :class:`ModelAnalysis` :func:`build_model` returned with it, or an unknown "
           "keyword is a :class:`ParameterError`.")
def _certify_tracr_args(a: dict) -> None:
    expect_tracr(a["tm"], "certify_tracr")
    check_inv_taus(a.get("extra_inv_taus"), "certify_tracr", "extra_inv_taus")


certify_tracr = boundary(
    _certify_tracr, _certify_tracr_args,
    raises="``tm`` must be a loaded :class:`TracrModel`: a path is a :class:`ParameterError` saying to call "
           ":func:`load_tracr` first (as :func:`build` wants a loaded spec), as are an unknown keyword and an "
           "``extra_inv_taus`` that is not a list/tuple of finite positive numbers.")


@boundary
def verify(certificate: dict | str | os.PathLike, *, timeout_s: float | None = None, budget_s: float = 600.0
           ) -> VerifyReport:
    """Verify a certificate (a dict, or a file read strictly) of any kind by replay
    (docs/certificates.md); ``timeout_s`` per re-run query (None: the limit the certificate was
    made with, ``solver.timeout_s``; 20 s for one without it), ``budget_s`` for all re-proofs; both
    in seconds, in (0, 86400].  Returns the report (``.ok``, ``.problems`` by JSON path); raises
    :class:`~softhard.constructions.errors.CertificateError` only for a file that is not strict JSON,
    :class:`ParameterError` for a ``certificate`` that is neither a dict nor a file name and for a
    time limit that is not a number of seconds in range (as ``softhard verify --timeout -1``)."""
    expect_certificate(certificate, "verify", path_ok=True)
    timeout_s = None if timeout_s is None else to_seconds(timeout_s, "timeout_s")
    budget_s = to_seconds(budget_s, "budget_s")
    cert = certificate if isinstance(certificate, dict) else _load_certificate(certificate)
    return verify_certificate(cert, timeout_s=timeout_s, budget_s=budget_s)


@boundary
def run(c: Construction, word, *, inv_tau: float) -> tuple[Trace, Trace]:
    """The hard and the soft transformer of ``c`` on one word (a string of one-character symbols or
    a list/tuple of symbol strings); ``inv_tau``: the soft transformer's 1/τ (> 0, finite float) —
    under a schedule (``Params(schedule="lin"|"log")``, THEORY §9) its constant S: the run uses S·g(n).
    Returns ``(hard, soft)`` traces; ``trace.x`` has shape (1, n + 1, D) (row 0: BOS).
    Raises :class:`ParameterError` for a ``c`` that is not a built :class:`Construction`, a bad
    1/τ, a ``word`` of another type, an empty word or a symbol outside the alphabet.  THEORY §2."""
    expect_construction(c, "run")
    check_symbols(word, "run", "word")
    alphabet = c.model.alphabet
    w = tokenize(word, alphabet) if isinstance(word, str) else list(word)
    if not w:
        raise ParameterError("run: the word is empty")
    tok = c.model.encode([w])
    it = inv_tau if c.params.schedule is None else c.params.inv_tau_at(len(w), inv_tau)
    return forward(c.model, tok, mode="hard"), forward(c.model, tok, mode="soft", inv_tau=it)


@boundary
def confirm(c: Construction, *, n_max: int, inv_tau: float, max_positions: int | None = DEFAULT_MAX_POSITIONS,
            **families_options) -> Confirmation:
    """Numeric confirmation of a formula construction's bounds: the exhaustive, random and
    adversarial input families up to ``n_max`` (options :data:`FAMILY_OPTIONS`, as
    :func:`softhard.solver.formula_numeric.numeric_families`), each node's worst observed error
    against its bound.  Never a proof (THEORY §7).  Returns a :class:`Confirmation` (``.ok``).

    ``n_max`` caps the families' lengths; it is not a promise that length ``n_max`` is run: the
    lengths are the plan's (exhaustive words up to ``exhaustive_len`` = 10, random ones up to
    ``random_n_max`` = 500, adversarial ones at ``adversarial_ns`` = 10, 100, 1000, 10^4 by default),
    each capped by ``n_max``.  The lengths actually run are the checks' ``n``
    (``max(ch.n for ch in result.checks)``); pass ``adversarial_ns=(n_max,)`` to run n_max itself.

    Bounded as ``certify``'s run is: the work is estimated from the plan before any run
    (:func:`~softhard.solver.formula_numeric.work_estimate`, in word positions) and refused above
    ``max_positions`` (an integer >= 1; None: no limit) with :class:`ParameterError`.  Also a
    :class:`ParameterError`: a ``c`` that is not a built formula :class:`Construction`, an ``n_max``
    that is not an integer >= 1 (an integral float or exact decimal text such as ``"1e3"`` is read
    as the command line reads it), an ``inv_tau`` that is not finite and > 0, an unknown option
    (named with the accepted ones) or a bad option value (counts >= 0, lengths >= 1:
    :func:`~softhard.solver.formula_numeric.check_plan_value`)."""
    expect_construction(c, "confirm", "formula",
                        advice="a model's numeric confirmation runs inside softhard.certify_model")
    check_keywords("confirm", families_options, ("n_max", "inv_tau", "max_positions") + FAMILY_OPTIONS)
    n_max = to_count(n_max, "n_max")
    if max_positions is not None:
        max_positions = to_count(max_positions, "max_positions")
    if not callable(inv_tau):
        check_inv_tau(inv_tau)
    plan = resolve_plan(n_max, {**families_options, "key_pattern_ns": []})  # no key-pattern runs here
    if max_positions is not None:
        run_it = inv_tau if callable(inv_tau) else (lambda k: float(inv_tau))
        pos, dense = work_estimate(c, planned_lengths(c, n_max, plan), run_it)
        check_work(pos, dense, max_positions, "lower n_max or the families' lengths", colder="choose a colder tau",
                   limit="pass a larger max_positions (None: no limit)")
    fams = numeric_families(c, n_max, inv_tau, **{k: plan[k] for k in FAMILY_OPTIONS})
    return _confirm_run(c.model, c.bounds, fams, inv_tau, beta=c.beta, eta=c.eta)
