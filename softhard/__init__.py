"""softhard: when does softmax attention compute exactly what hard attention computes?

The public Python API, one call per pipeline stage, for every input kind (docs/ARCHITECTURE.md)::

    import softhard
    spec = softhard.load_formula("examples/tomita4.ltl")          # parse (or an inline formula)
    c = softhard.build(spec, softhard.Params(regime="T", eta="1/4"))   # graph, transformer, bounds
    bounds = softhard.derive(c)                                     # node -> SymPy bound
    cert = softhard.certify(c, n_max=10**6, find_tau=True)          # Z3 proofs + numeric runs
    softhard.write_certificate(cert, "t4.json")
    report = softhard.verify("t4.json")                             # replay; report.ok
    hard, soft = softhard.run(c, "1101001", inv_tau=1e3)            # the two transformers
    summary = softhard.confirm(c, n_max=1000, inv_tau=1e3)          # observed errors vs bounds

Model files (:func:`load_model`, :func:`build_model`, :func:`certify_model`) and Tracr exports
(:func:`load_tracr`, :func:`certify_tracr`) are certified and verified on the same path; every
certificate is verified by the one :func:`verify`.  Errors are :class:`SofthardError` subclasses.
"""

from __future__ import annotations

from importlib import import_module

__all__ = ["__version__", "Params", "SofthardError", "load_formula", "load_model", "load_tracr", "build",
           "build_model", "derive", "certify", "certify_model", "certify_tracr", "verify", "load_certificate",
           "write_certificate", "run", "confirm"]


def __getattr__(name: str):
    """The API names load :mod:`softhard.solver.api` on first use (PEP 562), so importing a
    subpackage (the command line: ``softhard.solver.cli``) does not load every stage.
    ``__version__``: the installed distribution's version (importlib.metadata's, read without
    importing it: :mod:`.installed`), "0+unknown" from a source tree without install; read on
    first use, so that importing the package does nothing but define names (the console script
    installs its Ctrl-C handler right after: :mod:`softhard.entry`)."""
    if name == "__version__":
        value = globals()["__version__"] = import_module("softhard.installed").version("softhard") or "0+unknown"
        return value
    if name in __all__:
        return getattr(import_module("softhard.solver.api"), name)
    raise AttributeError(f"module 'softhard' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
