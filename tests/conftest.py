"""Test layout: ``tests/constructions``, ``tests/bounds``, ``tests/solver`` mirror the packages;
``tests/`` itself holds the end-to-end tests and the shared oracles and helpers (``languages``,
``counting_oracles``, ``models_util``, ``tamper``), importable from every folder.

Scheduling under pytest-xdist (``python -m pytest -q -n auto``, the README's and CI's command):
the modules in :data:`ONE_WORKER` build an expensive module-scoped fixture (the 13 Tracr library
programs compiled through JAX, ~70 s CPU; the Tracr certificates), which every worker that runs
one of their tests builds again.  Their tests therefore go to one worker as one unit, handed out
first (xdist's scope scheduler orders units by size, largest first); every other test is its own
unit, as under the default ``--dist load``.  xdist's own ``--dist loadgroup`` cannot do this with
pytest >= 9.2 (it renames node ids through a field pytest no longer reads, pytest-xdist issue
#1386: the ``xdist_group`` mark is silently ignored).  An explicit ``--dist`` other than ``load``
is left to xdist.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from xdist.scheduler import LoadScopeScheduling

TESTS = str(Path(__file__).resolve().parent)
if TESTS not in sys.path:
    sys.path.insert(0, TESTS)

#: test modules (node-id paths, relative to the rootdir) whose tests all run on one xdist worker
ONE_WORKER = ("tests/solver/test_tracr_lib.py", "tests/solver/test_tracr_certify.py")


class ModuleFixtureScheduling(LoadScopeScheduling):
    """``--dist load`` except that each module of :data:`ONE_WORKER` is one unit of work."""

    def _split_scope(self, nodeid: str) -> str:
        module = nodeid.split("::", 1)[0]
        return module if module in ONE_WORKER else nodeid


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """The scheduler of an xdist run: :class:`ModuleFixtureScheduling` under the default
    ``--dist load``, xdist's own otherwise (None defers to it)."""
    return ModuleFixtureScheduling(config, log) if config.getvalue("dist") == "load" else None
