"""The xdist scheduling of the suite (used by tests/conftest.py) under the default ``--dist load``:

* **Units.**  The modules in :data:`ONE_WORKER` build an expensive module-scoped fixture (the 13
  Tracr library programs compiled through JAX, ~70 s CPU; certificates several tests read), which
  every worker that runs one of their tests builds again.  Their tests therefore go to one worker
  as one unit; every other test is its own unit, as under ``--dist load``.  xdist's own ``--dist
  loadgroup`` cannot do this with pytest >= 9.2 (it renames node ids through a field pytest no
  longer reads, pytest-xdist issue #1386: the ``xdist_group`` mark is silently ignored).
* **Order: longest first.**  The units are handed out in decreasing order of their estimated
  seconds (the sum of their tests' in ``tests/durations.json``, written by
  ``benchmarks/suite_durations.py`` from a full run; a test not listed counts 0 and keeps its
  collection order).  Collection order put the notebooks and the language tests — up to ~30 s
  each — last, so one worker could still be running one while the other had nothing left; longest
  first leaves only short tests for the end (the classic LPT rule for two machines).  The
  estimates only order the work: a stale or missing entry costs time, never a test.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from pathlib import Path

from xdist.scheduler import LoadScopeScheduling

#: test modules (node-id paths, relative to the rootdir) whose tests all run on one xdist worker
ONE_WORKER = (
    "tests/solver/test_tracr_lib.py", "tests/solver/test_tracr_certify.py",
    "tests/solver/test_certificate.py", "tests/solver/test_formula_numeric.py", "tests/solver/test_plots.py",
    "tests/solver/test_replay.py", "tests/solver/test_models_certify.py", "tests/solver/test_average_certify.py",
    "tests/solver/test_schedules.py", "tests/solver/test_verify_cache.py", "tests/solver/test_command_imports.py",
)

#: node id -> seconds (setup + call + teardown) of the tests that took >= 1 s in a full run
DURATIONS_FILE = Path(__file__).resolve().parent / "durations.json"


def load_durations(path: Path = DURATIONS_FILE) -> dict[str, float]:
    """``tests/durations.json`` as ``{node id: seconds}``; ``{}`` if the file is missing (every unit
    then counts 0: collection order, as without this scheduler)."""
    try:
        return {str(k): float(v) for k, v in json.loads(path.read_text(encoding="utf-8")).items()}
    except FileNotFoundError:
        return {}


Units = "OrderedDict[str, dict[str, bool]]"


def longest_first(units: Units, seconds: dict[str, float]) -> Units:
    """The work units (scope -> {node id: done}) reordered by decreasing estimated seconds (the
    sum over a unit's tests of ``seconds``, 0 for a test not listed); ties keep their order."""
    est = {scope: sum(seconds.get(t, 0.0) for t in tests) for scope, tests in units.items()}
    return OrderedDict(sorted(units.items(), key=lambda kv: -est[kv[0]]))


class ModuleFixtureScheduling(LoadScopeScheduling):
    """``--dist load`` except that each module of :data:`ONE_WORKER` is one unit of work, and the
    units are handed out longest first (:func:`longest_first`)."""

    _ordered = False

    def _split_scope(self, nodeid: str) -> str:
        module = nodeid.split("::", 1)[0]
        return module if module in ONE_WORKER else nodeid

    def _assign_work_unit(self, node) -> None:
        # the first assignment comes right after LoadScopeScheduling.schedule() built the queue
        if not self._ordered:
            self._ordered = True
            units = longest_first(self.workqueue, load_durations())
            self.workqueue.clear()
            self.workqueue.update(units)
        super()._assign_work_unit(node)
