"""python-flint's ball types — ``arb``, ``fmpq`` and the context ``ctx`` — without the rest of the
package (ISSUE 16).

``import flint`` runs the package's ``__init__``, which loads every one of its ~40 extension modules
(polynomials, matrices, finite fields, series, …): ~87 ms of CPU against ~36 ms for the six a ball
check uses (``arb``, ``arf``, ``fmpq``, ``fmpz``, the base classes and the context; python-flint
0.9.0, medians of 21 interleaved interpreter runs, benchmarks/README.md).  A verify served by a
replay artefact re-runs its arb checks and little else, so this is a seventh of its CPU time.

This module imports only those: it puts the package's module object in ``sys.modules`` before its
``__init__`` has run (created from the package's own spec, as the import system creates it just
before running ``__init__``), then imports the submodules — the very extension modules, types and
global context (``ctx.prec``) that ``import flint`` gives, nothing re-implemented or wrapped.  The
package module gets ``arb``, ``fmpq`` and ``ctx`` as attributes, and a PEP 562 ``__getattr__`` that
runs the package's ``__init__`` into it on the first access of any other name (``flint.fmpz_poly``,
``flint.__version__``), as :func:`importlib.reload` does: whoever uses python-flint later in the
process gets the complete package.  When python-flint is imported already, or its layout is another
(a submodule missing: :class:`ImportError`), the package is imported whole.  Raises
:class:`ImportError` when python-flint is not installed.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import threading

#: the names this module provides, each the attribute of the same name of the complete package
NAMES = ("arb", "fmpq", "ctx")

_lock = threading.RLock()


def _completer(pkg, spec):
    """The package's PEP 562 ``__getattr__``: on the first access of a name not loaded yet, run
    the package's ``__init__`` into ``pkg`` (once, under a lock: Dask workers are threads), then
    return the name or raise :class:`AttributeError` as a complete package would."""
    def __getattr__(name: str):
        with _lock:
            if pkg.__dict__.get("__getattr__") is __getattr__:
                del pkg.__dict__["__getattr__"]
                spec.loader.exec_module(pkg)
        try:
            return pkg.__dict__[name]
        except KeyError:
            raise AttributeError(f"module 'flint' has no attribute {name!r}") from None
    return __getattr__


def _whole() -> tuple:
    flint = importlib.import_module("flint")
    return tuple(getattr(flint, k) for k in NAMES)


def _load() -> tuple:
    """``(arb, fmpq, ctx)``: from the submodules alone when python-flint is not imported yet and
    has the expected layout, else from the whole package."""
    with _lock:
        if "flint" in sys.modules:
            return _whole()
        spec = importlib.util.find_spec("flint")
        if spec is None or spec.loader is None or spec.submodule_search_locations is None:
            return _whole()  # not a package as 0.9 ships it: imported (or failing) as usual
        pkg = importlib.util.module_from_spec(spec)
        sys.modules["flint"] = pkg
        try:
            got = (importlib.import_module("flint.types.arb").arb, importlib.import_module("flint.types.fmpq").fmpq,
                   importlib.import_module("flint.pyflint").ctx)
        except (ImportError, AttributeError):
            if sys.modules.get("flint") is pkg:
                del sys.modules["flint"]
            return _whole()
        for k, v in zip(NAMES, got):
            setattr(pkg, k, v)
        pkg.__getattr__ = _completer(pkg, spec)
        return got


arb, fmpq, ctx = _load()
