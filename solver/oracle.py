"""The oracle transcript of a replay (ISSUE 16): what a live replay asked Z3 and arb, in order.

A formula replay is a deterministic function of the certificate's inputs, the installed code and
the answers of its *oracle calls*: every Z3 query (its answer can depend on the wall clock: a time
limit) and every ball-arithmetic check.  While :data:`ORACLE_LOG` holds a list, each such call
appends one JSON-able row (:func:`note_answer`: :mod:`softhard.solver.check` for each Z3 query,
:mod:`softhard.solver.arbcheck` for each arb check); :mod:`softhard.solver.replay_memo` records the
rows with the replay's output and, on a later verify, re-runs every row live and compares.
No SymPy, no third-party import.
"""

from __future__ import annotations

import contextvars

#: the oracle transcript of the running replay (a list of JSON-able rows), or None: not recording
#: (set by :mod:`softhard.solver.replay_memo` around a live replay)
ORACLE_LOG: contextvars.ContextVar[list | None] = contextvars.ContextVar("softhard_oracle_log", default=None)


def note_answer(row: dict) -> None:
    """Append ``row`` (a JSON-able record of one oracle call: a Z3 query and its answer, an arb
    check and its verdict) to :data:`ORACLE_LOG` when a replay is being recorded; else nothing."""
    log = ORACLE_LOG.get()
    if log is not None:
        log.append(row)
