"""Helpers of the artefact tests (tests/solver/test_replay_memo.py, test_replay_memo_kinds.py,
test_certify_memo.py): a cache directory of a module's own, and verify on the artefact path, on
the live path, and the comparison of their reports."""

from __future__ import annotations

import contextlib

import pytest

from softhard.bounds import store
from softhard.solver import certify_memo, replay
from softhard.solver.certjson import canonical
from softhard.solver.kinds import KINDS, verify_certificate


@contextlib.contextmanager
def own_cache(tmp_path_factory, *, certify_artefacts: bool = False):
    """A cache directory of the calling module's own (artefacts are recorded, doctored and read
    there only), the disk layer on; ``certify_artefacts``: certify artefacts on too (the suite turns
    them off: tests/conftest.py), and an empty in-process layer of the store (``store._memory``:
    another module's verify of the same certificate in this process would otherwise serve the first
    verify here from its recorded replay — tracr10 found test_replay_memo_kinds failing after
    test_tracr_certify in one process).  Yields the directory; afterwards the in-process replay memos
    are forgotten."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(store, "_memory", {})
        d = tmp_path_factory.mktemp("softhard-cache")
        mp.setenv("SOFTHARD_CACHE_DIR", str(d))
        mp.delenv("SOFTHARD_CACHE", raising=False)
        if certify_artefacts:
            mp.delenv(certify_memo.SWITCH, raising=False)
        store.set_disk_cache(None)
        yield d
    store.set_disk_cache(None)
    replay.clear_replay_cache()


def fast(cert: dict, *, rerun: bool = True) -> replay.VerifyReport:
    """verify with artefacts on and this process's memo of the certificate's replay forgotten, so
    a recorded artefact is what serves it (when there is one); ``rerun``: its oracle calls re-run
    (this process's memo of artefact replays forgotten too)."""
    if rerun:
        replay._ARTEFACTS.clear()
    # an edit the inputs cannot be read from has no memo key (the live path reports it)
    with contextlib.suppress(KeyError, TypeError, AttributeError):
        kind = KINDS[cert["kind"]]
        replay._REPLAYS.pop((kind.replay, canonical([cert["kind"], kind.inputs(cert),
                                                     replay.replay_timeout(cert, None)])), None)
    return verify_certificate(cert)


def live(cert: dict) -> replay.VerifyReport:
    """verify with the disk layer off (``verify --no-cache``): no artefact read or written."""
    store.set_disk_cache(False)
    try:
        return verify_certificate(cert)
    finally:
        store.set_disk_cache(None)


def same(a: replay.VerifyReport, b: replay.VerifyReport) -> bool:
    """The two reports agree in everything but how the replay was done (``checked``, ``seconds``)."""
    return (a.ok, a.problems, a.exit_code, a.undecided, a.status) == (b.ok, b.problems, b.exit_code, b.undecided,
                                                                      b.status)
