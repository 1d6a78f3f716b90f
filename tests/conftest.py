"""Test layout: ``tests/constructions``, ``tests/bounds``, ``tests/solver`` mirror the packages;
``tests/`` itself holds the end-to-end tests and the shared oracles and helpers (``languages``,
``counting_oracles``, ``models_util``, ``tamper``), importable from every folder.

Under pytest-xdist (``python -m pytest -q -n auto``, the README's and CI's command) the default
``--dist load`` uses :class:`xdist_schedule.ModuleFixtureScheduling`: the modules with expensive
module fixtures run on one worker each (tests/xdist_schedule.py).  An explicit ``--dist`` other
than ``load`` is left to xdist.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

TESTS = str(Path(__file__).resolve().parent)
if TESTS not in sys.path:
    sys.path.insert(0, TESTS)

from xdist_schedule import ModuleFixtureScheduling  # noqa: E402 — tests/ on sys.path first


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """The scheduler of an xdist run: :class:`ModuleFixtureScheduling` under the default
    ``--dist load``, xdist's own otherwise (None defers to it)."""
    return ModuleFixtureScheduling(config, log) if config.getvalue("dist") == "load" else None
