"""The Python API's argument checks (``import softhard``), one function per concern.

Every public API function checks its arguments here, at the boundary, before any work: a wrong
type or kind of argument is one :class:`~softhard.constructions.errors.ParameterError` line naming
the function, the argument and what it expects (and, for an object of the wrong pipeline stage,
the call that makes the right one) — never a ``TypeError``, ``AttributeError`` or ``ValueError``
from deep inside.  Numbers are read by the existing helpers of
:mod:`softhard.constructions.parameters` (``to_count``, ``to_seconds``, ``to_fraction``).
"""

from __future__ import annotations

import functools
import inspect
import os
from typing import Callable

from ..constructions.errors import ParameterError
from ..constructions.hard_model import ModelSpec
from ..constructions.parameters import check_keywords
from ..constructions.parse import FormulaSpec
from ..constructions.softmax import check_inv_tau
from ..constructions.tracr import TracrModel
from .models import ModelAnalysis
from .pipeline import Construction

#: the call that makes each kind of construction (named in the messages)
MAKE = {"formula": "softhard.build(spec, softhard.Params(...))", "model": "softhard.build_model(spec, n_max=...)"}
#: the call that certifies each kind of construction
CERTIFY = {"formula": "softhard.certify(c, n_max=..., ...)",
           "model": "softhard.certify_model(c, an, n_max=..., ...) (c, an = softhard.build_model(...))"}
#: the loader of each input kind, by the type a user may pass in its place
LOADERS = {FormulaSpec: MAKE["formula"], ModelSpec: MAKE["model"]}


def shown(x) -> str:
    """``x`` for a one-line message: its type and its repr, cut to 40 characters with "…" when
    longer; a built :class:`Construction` as "a built formula Construction" (its kind), not its repr."""
    if isinstance(x, Construction):
        return f"a built {x.kind} Construction"
    r = repr(x)
    return f"{type(x).__name__} {r if len(r) <= 40 else r[:39] + '…'}"


def bind(func: str, sig: inspect.Signature, args: tuple, kwargs: dict) -> inspect.BoundArguments:
    """``args``/``kwargs`` bound to the signature ``sig``; raises :class:`ParameterError` (one line
    naming ``func``) for an unknown keyword (listing the accepted ones), a missing required
    argument, too many positional arguments or an argument given twice."""
    params = sig.parameters.values()
    if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        check_keywords(func, kwargs, [p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)])
    try:
        return sig.bind(*args, **kwargs)
    except TypeError as e:
        raise ParameterError(f"{func}: {e}; call it as {call_form(func, sig)}") from None


def call_form(func: str, sig: inspect.Signature) -> str:
    """How ``func`` is called, its required arguments by name: ``certify_model(c, an, ...)``
    (``...`` when it has optional ones; keyword-only ones after ``*``)."""
    params = list(sig.parameters.values())
    pos = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty]
    kw = [f"{p.name}=..." for p in params if p.kind is p.KEYWORD_ONLY and p.default is p.empty]
    optional = any(p.default is not p.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params)
    parts = pos + (["*", *kw] if kw else []) + (["..."] if optional else [])
    return f"{func}({', '.join(parts)})"


def boundary(target: Callable, check: Callable[[dict], None] | None = None, *, raises: str = "") -> Callable:
    """``target`` behind the API boundary: its arguments bound by :func:`bind` (a
    :class:`ParameterError` instead of Python's ``TypeError``), the flags and ``progress`` checked
    (:func:`check_flags`), then ``check(arguments)`` (a dict by parameter name; it raises
    :class:`ParameterError`), then the call.  Signature and docstring
    are ``target``'s (``help`` shows them), ``raises`` appended to the docstring."""
    func, sig = target.__name__, inspect.signature(target)

    @functools.wraps(target)
    def call(*args, **kwargs):
        try:
            bound = bind(func, sig, args, kwargs)
        except ParameterError:
            precheck(check, sig, args, kwargs)  # a wrong argument given says so before a missing one
            raise
        check_flags(func, sig, bound.arguments)
        if check is not None:
            check(bound.arguments)
        return target(*args, **kwargs)

    if raises:
        call.__doc__ = f"{(target.__doc__ or '').rstrip()}\n\n    API boundary: {raises}"
    return call


def precheck(check: Callable[[dict], None] | None, sig: inspect.Signature, args: tuple, kwargs: dict) -> None:
    """``check`` run on the arguments that were given when the call as a whole does not bind (a missing
    or extra argument): its :class:`ParameterError` about a given one (``certify_model(c)`` with a
    formula construction ``c``) is the more useful message.  Returns quietly when the given arguments
    do not bind either or ``check`` needs one that is missing (``KeyError``)."""
    if check is None:
        return
    try:
        partial = sig.bind_partial(*args, **kwargs).arguments
    except TypeError:
        return
    try:
        check(partial)
    except KeyError:
        return


def check_flags(func: str, sig: inspect.Signature, arguments: dict) -> None:
    """Raise :class:`ParameterError` naming ``func`` and the argument when an argument whose default
    is True or False (``find_tau``, ``numeric``, ``force``) is not a bool — a truthy ``"no"`` would
    silently switch it on — or a ``progress`` argument is neither None nor callable."""
    for k, v in arguments.items():
        default = sig.parameters[k].default
        if isinstance(default, bool) and not isinstance(v, bool):
            raise ParameterError(f"{func}: {k} must be True or False, got {shown(v)}")
    progress = arguments.get("progress")
    if progress is not None and not callable(progress):
        raise ParameterError(f"{func}: progress must be a function of one str (or None), got {shown(progress)}")


#: the parameters :func:`softhard.certify` can search for together with τ (its ``tune``)
TUNABLE = ("eps_ln",)


def check_certify_options(arguments: dict, func: str = "certify") -> None:
    """``all_n`` None or a bool; ``tune`` a list/tuple of names from :data:`TUNABLE`.  Raises
    :class:`ParameterError` naming the argument."""
    all_n = arguments.get("all_n")
    if all_n is not None and not isinstance(all_n, bool):
        raise ParameterError(f"{func}: all_n must be True, False or None (uniform bounds decide), got {shown(all_n)}")
    tune = arguments.get("tune", ())
    if not isinstance(tune, (list, tuple)) or any(t not in TUNABLE for t in tune):
        raise ParameterError(f"{func}: tune must be a tuple of parameter names the search finds with tau "
                             f"({', '.join(TUNABLE)}), got {shown(tune)}")


def expect_construction(c, func: str, kind: str | None = None, *, advice: str | None = None) -> Construction:
    """``c`` if it is a built :class:`Construction` (of ``kind``, when given); raises
    :class:`ParameterError` naming ``func`` and the argument ``c`` otherwise: for a loaded spec, the
    call that builds it; for another kind of construction ``advice`` (default: the function that
    certifies that kind)."""
    if not isinstance(c, Construction):
        make = LOADERS.get(type(c), f"{MAKE['formula']} or {MAKE['model']}")
        got = f"a loaded {type(c).__name__}" if type(c) in LOADERS else shown(c)
        raise ParameterError(f"{func}: c must be a built Construction, got {got}; call {make} first")
    if kind is not None and c.kind != kind:
        hint = advice or f"certify it with {CERTIFY.get(c.kind, 'the function for its kind')}"
        raise ParameterError(f"{func}: c is a {c.kind} construction, not a {kind} one; {hint}")
    return c


def expect_spec(value, cls: type, func: str, load: str, arg: str = "spec") -> None:
    """Raise :class:`ParameterError` unless ``value`` is a ``cls`` (one line naming the loader)."""
    if not isinstance(value, cls):
        raise ParameterError(f"{func} takes a {cls.__name__}, got {shown(value)}; load it first with {load}")


def expect_analysis(an, func: str) -> ModelAnalysis:
    """``an`` if it is the :class:`ModelAnalysis` :func:`softhard.build_model` returns; raises
    :class:`ParameterError` otherwise."""
    if not isinstance(an, ModelAnalysis):
        raise ParameterError(f"{func}: an must be the ModelAnalysis softhard.build_model returns "
                             f"(c, an = softhard.build_model(spec, n_max=...)), got {shown(an)}")
    return an


def check_inv_taus(values, func: str, arg: str) -> None:
    """``values`` None or a list/tuple of finite positive inverse temperatures (floats; a run's 1/τ);
    raises :class:`ParameterError` naming ``func``, ``arg`` and the index of a bad one."""
    if values is None:
        return
    if not isinstance(values, (list, tuple)):
        raise ParameterError(f"{func}: {arg} must be a list or tuple of inverse temperatures (or None), "
                             f"got {shown(values)}")
    for i, v in enumerate(values):
        try:
            check_inv_tau(v)
        except ParameterError as e:
            raise ParameterError(f"{func}: {arg}[{i}]: {e}") from None


def expect_tracr(tm, func: str) -> TracrModel:
    """``tm`` if it is a loaded :class:`TracrModel`; raises :class:`ParameterError` otherwise, for a
    path too (load it with :func:`softhard.load_tracr`, as ``build`` wants a loaded spec)."""
    if not isinstance(tm, TracrModel):
        raise ParameterError(f"{func}: tm must be a TracrModel, got {shown(tm)}; load the export first with "
                             f"softhard.load_tracr(path)")
    return tm


def check_symbols(value, func: str, arg: str, *, none_ok: bool = False):
    """``value`` if it is a string or a list/tuple of strings (a word or an alphabet; None too when
    ``none_ok``); raises :class:`ParameterError` naming ``func`` and ``arg`` otherwise."""
    if (value is None and none_ok) or isinstance(value, str):
        return value
    if isinstance(value, (list, tuple)) and all(isinstance(s, str) for s in value):
        return value
    raise ParameterError(f"{func}: {arg} must be a string of symbols or a list/tuple of symbol strings"
                         f"{' (or None)' if none_ok else ''}, got {shown(value)}")


def expect_certificate(cert, func: str, *, path_ok: bool = False):
    """``cert`` if it is a certificate dict (or, when ``path_ok``, a file name); raises
    :class:`ParameterError` otherwise: a certificate is one JSON object, as :func:`softhard.certify`
    returns and :func:`softhard.load_certificate` requires."""
    if isinstance(cert, dict) or (path_ok and isinstance(cert, (str, os.PathLike))):
        return cert
    what = "a certificate dict (as softhard.certify returns)" + (" or a file name" if path_ok else "")
    then = f"; certify it first with {CERTIFY.get(cert.kind, 'the function for its kind')}" if isinstance(
        cert, Construction) else ""
    raise ParameterError(f"{func}: certificate must be {what}, got {shown(cert)}{then}")
