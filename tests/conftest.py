"""Test layout: ``tests/constructions``, ``tests/bounds``, ``tests/solver`` mirror the packages;
``tests/`` itself holds the end-to-end tests and the shared oracles and helpers (``languages``,
``counting_oracles``, ``models_util``, ``tamper``), importable from every folder."""

from __future__ import annotations

import sys
from pathlib import Path

TESTS = str(Path(__file__).resolve().parent)
if TESTS not in sys.path:
    sys.path.insert(0, TESTS)
