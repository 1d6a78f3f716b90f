"""The inputs of a model-file certificate's replay (docs/certificates.md, "Replay artefacts"), without
SymPy, NumPy or any stage (ISSUE 16): a verify that finds a recorded replay artefact
(:mod:`softhard.solver.replay_memo`) keys it by these, without importing the model kind's module
(:mod:`softhard.solver.models`, which uses the same definitions).
"""

from __future__ import annotations

import sys

#: where a certificate stores the gap reports (``analysis.<field>``)
REPORT_FIELDS = {"final": "gap_report", "before": "gap_report_before_tie_break"}
#: most words an exhaustive premise may cover for ``verify`` to re-run the enumeration (per worker)
VERIFY_EXHAUSTIVE_LIMIT = 1_000_000
#: the module holding the Dask worker count (:data:`softhard.constructions.gap_tasks.TASK_WORKERS`)
_TASKS_MODULE = "softhard.constructions.gap_tasks"


def verify_exhaustive_limit() -> int:
    """The most words verify re-enumerates here: :data:`VERIFY_EXHAUSTIVE_LIMIT` per worker of the
    open Dask cluster (``--workers``/``--scheduler``; 1 without one: gap_tasks.TASK_WORKERS).  The
    worker count is a context variable of :mod:`softhard.constructions.gap_tasks` (a NumPy module,
    not imported here): only code that imported that module can have set it, so while it is not
    loaded the count is the variable's default, 1."""
    tasks = sys.modules.get(_TASKS_MODULE)
    return VERIFY_EXHAUSTIVE_LIMIT * (1 if tasks is None else int(tasks.TASK_WORKERS.get()))


def searched_reports(cert: dict) -> dict | None:
    """The stored gap reports (``{"final": ..., "before": ...}``) when the premises are searched
    (None: exhaustive, re-run by the replay).  Raises :class:`KeyError`/:class:`TypeError` without
    ``analysis.options.method``."""
    an = cert["analysis"]
    if an["options"]["method"] == "exhaustive":
        return None
    return {k: an[f] for k, f in REPORT_FIELDS.items()}


def search_rows(cert: dict) -> list[dict] | None:
    """The τ search's rows as the replay and the measured checks read them (node, certified value,
    and the measured ``rounds`` and ``empirical``), None for a given τ.  Raises
    :class:`AttributeError`/:class:`TypeError` for rows that are not objects."""
    srch = cert.get("search")
    if srch is None:
        return None
    return [{k: r.get(k) for k in ("node", "inv_tau_certified", "rounds", "empirical")} for r in srch["per_bound"]]


def inputs(cert: dict) -> list:
    """Every field a model replay (:func:`softhard.solver.models.replay`) and its measured checks
    (:func:`softhard.solver.models.check_measured`) read, JSON-able: the embedded model document
    and its SHA-256, the file provenance (copied into the replay), ``source.n_max``, ε, the
    analysis options, the searched gap reports (searched premises), the range, the search rows
    (with their measured ``rounds`` and ``empirical``) and ``search.params``, the certified 1/τ
    (``construction.inv_tau``: the numeric checks read it even when a search found it), the
    measured ``numeric`` section — and :func:`verify_exhaustive_limit`, the one replay input not
    in the certificate (a larger premise is refused).  Raises :class:`KeyError`/:class:`TypeError`/
    :class:`AttributeError` for a certificate without them (schema-checked before)."""
    src = cert["source"]
    return [src.get("model"), src.get("model_sha256"), src.get("file"), src.get("file_sha256"), src.get("n_max"),
            src.get("epsilon"), cert["analysis"]["options"], searched_reports(cert), cert["range"], search_rows(cert),
            (cert.get("search") or {}).get("params"), cert["construction"]["inv_tau"], cert.get("numeric"),
            verify_exhaustive_limit()]
