"""The registry of certificate kinds, and verify for all of them (ARCHITECTURE.md, "verify").

Each input kind (a formula, a hard-attention model file, a Tracr export) contributes one
:class:`~softhard.solver.replay.Kind`: how to replay its certificates.  :func:`verify_certificate`
is the one verify of every kind: :func:`softhard.solver.replay.verify` with this registry.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from importlib import import_module

from .replay import DEFAULT_BUDGET_S, Kind, VerifyReport, verify

#: certificate kind name -> the module and name of its :class:`Kind` (imported when a certificate of
#: that kind is verified: a formula's verify loads no model-file or Tracr code; ISSUE 16)
KIND_MODULES: dict[str, tuple[str, str]] = {
    "formula": ("softhard.solver.certificate", "FORMULA"),
    "model": ("softhard.solver.models", "MODEL"),
    "tracr": ("softhard.solver.tracr", "TRACR"),
}


class Registry(Mapping):
    """``{kind name: Kind}`` over :data:`KIND_MODULES`, each kind's module imported on first access."""

    def __getitem__(self, name: str) -> Kind:
        module, attr = KIND_MODULES[name]
        return getattr(import_module(module), attr)

    def __contains__(self, name: object) -> bool:  # (Mapping's would import the kind's module)
        return name in KIND_MODULES

    def __iter__(self) -> Iterator[str]:
        return iter(KIND_MODULES)

    def __len__(self) -> int:
        return len(KIND_MODULES)


#: certificate kind name -> how to replay it
KINDS: Mapping[str, Kind] = Registry()

#: certificate kind name -> the module and name of its ``inputs`` function (the replay's inputs,
#: :attr:`Kind.inputs`) in a module without SymPy or any stage: the kinds whose verify may re-run a
#: recorded replay artefact instead of rebuilding the construction (softhard.solver.replay_memo)
INPUT_MODULES: dict[str, tuple[str, str]] = {
    "formula": ("softhard.solver.formula_inputs", "inputs"),
    "model": ("softhard.solver.model_inputs", "inputs"),
    "tracr": ("softhard.solver.tracr_inputs", "inputs"),
}


class InputsRegistry(Mapping):
    """``{kind name: inputs function}`` over :data:`INPUT_MODULES`, each module imported on first access."""

    def __getitem__(self, name: str) -> Callable[[dict], object]:
        module, attr = INPUT_MODULES[name]
        return getattr(import_module(module), attr)

    def __contains__(self, name: object) -> bool:
        return name in INPUT_MODULES

    def __iter__(self) -> Iterator[str]:
        return iter(INPUT_MODULES)

    def __len__(self) -> int:
        return len(INPUT_MODULES)


#: kind name -> its SymPy-free replay-inputs function (verify's fast path)
FAST_INPUTS: Mapping[str, Callable[[dict], object]] = InputsRegistry()


def verify_certificate(cert: dict, *, timeout_s: float | None = None, budget_s: float = DEFAULT_BUDGET_S
                       ) -> VerifyReport:
    """Verify a certificate of any kind by replay (:func:`softhard.solver.replay.verify`): every
    field except the measured ones re-derived and compared, problems named by JSON path.  Never
    raises for a bad certificate.  ``timeout_s``: hard limit per re-run solver query (None: the
    certificate's own ``solver.timeout_s``, 20 s without it); ``budget_s``:
    total time for re-proving claims.  A certificate whose replay was recorded (a replay
    artefact in the derivation cache, :mod:`softhard.solver.replay_memo`) is verified by re-running
    every recorded oracle call live, without rebuilding the construction: the same report."""
    return verify(cert, KINDS, timeout_s=timeout_s, budget_s=budget_s, fast_inputs=FAST_INPUTS)
