"""The inputs of a Tracr certificate's replay (docs/certificates.md, "Replay artefacts"), without
SymPy, NumPy or any stage (ISSUE 16): a verify that finds a recorded replay artefact
(:mod:`softhard.solver.replay_memo`) keys it by these, without importing the Tracr kind's module
(:mod:`softhard.solver.tracr`, which uses the same definitions).
"""

from __future__ import annotations


def stated(cert: dict) -> dict:
    """The search's stated values (``search`` without its fixed ``method`` text): the minimum 1/τ,
    the longer-inputs and recompiled lengths with their binding claims.  Raises
    :class:`KeyError`/:class:`AttributeError` without a ``search`` object."""
    return {k: v for k, v in cert["search"].items() if k != "method"}


def inputs(cert: dict) -> list:
    """Every field a Tracr replay (:func:`softhard.solver.tracr.replay`) and its measured checks
    (:func:`softhard.solver.tracr.check_measured`) read, JSON-able: ``source`` whole (the embedded
    model document and its SHA-256, the export's metadata with its stored examples, the
    parameters), the stated values and the measured ``numeric`` section.  Raises
    :class:`KeyError`/:class:`AttributeError` for a certificate without them (schema-checked
    before)."""
    return [cert["source"], stated(cert), cert.get("numeric")]
