"""The xdist scheduling of the suite (used by tests/conftest.py): under the default ``--dist load``,
the modules in :data:`ONE_WORKER` build an expensive module-scoped fixture (the 13 Tracr library
programs compiled through JAX, ~70 s CPU; the Tracr certificates), which every worker that runs
one of their tests builds again.  Their tests therefore go to one worker as one unit, handed out
first (xdist's scope scheduler orders units by size, largest first); every other test is its own
unit, as under ``--dist load``.  xdist's own ``--dist loadgroup`` cannot do this with pytest >= 9.2
(it renames node ids through a field pytest no longer reads, pytest-xdist issue #1386: the
``xdist_group`` mark is silently ignored)."""

from __future__ import annotations

from xdist.scheduler import LoadScopeScheduling

#: test modules (node-id paths, relative to the rootdir) whose tests all run on one xdist worker
ONE_WORKER = ("tests/solver/test_tracr_lib.py", "tests/solver/test_tracr_certify.py")


class ModuleFixtureScheduling(LoadScopeScheduling):
    """``--dist load`` except that each module of :data:`ONE_WORKER` is one unit of work."""

    def _split_scope(self, nodeid: str) -> str:
        module = nodeid.split("::", 1)[0]
        return module if module in ONE_WORKER else nodeid
