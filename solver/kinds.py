"""The registry of certificate kinds, and verify for all of them (ARCHITECTURE.md, "verify").

Each input kind (a formula, a hard-attention model file, a Tracr export) contributes one
:class:`~softhard.solver.replay.Kind`: how to replay its certificates.  :func:`verify_certificate`
is the one verify of every kind: :func:`softhard.solver.replay.verify` with this registry.
"""

from __future__ import annotations

from .certificate import FORMULA
from .models import MODEL
from .replay import DEFAULT_BUDGET_S, Kind, VerifyReport, verify
from .tracr import TRACR

#: certificate kind name -> how to replay it
KINDS: dict[str, Kind] = {k.name: k for k in (FORMULA, MODEL, TRACR)}


def verify_certificate(cert: dict, *, timeout_s: float = 20.0, budget_s: float = DEFAULT_BUDGET_S) -> VerifyReport:
    """Verify a certificate of any kind by replay (:func:`softhard.solver.replay.verify`): every
    field except the measured ones re-derived and compared, problems named by JSON path.  Never
    raises for a bad certificate.  ``timeout_s``: hard limit per re-run solver query; ``budget_s``:
    total time for re-proving claims."""
    return verify(cert, KINDS, timeout_s=timeout_s, budget_s=budget_s)
