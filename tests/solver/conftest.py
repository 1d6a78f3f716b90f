"""Fixtures of the command-line and solver tests."""

from __future__ import annotations

import pytest

from softhard.solver.cli.handlers import console


@pytest.fixture(autouse=True)
def no_incidental_progress(monkeypatch):
    """Progress lines appear after PROGRESS_AFTER_S seconds of wall time, so under load a refusal
    that is one line on a quiet machine could arrive after a ``softhard: [3 s] …`` line (seen in a
    full run at load 9): in these tests progress shows after an hour, unless a test sets its own
    delay (tests/solver/test_hardening.py does, to test the progress lines themselves)."""
    monkeypatch.setattr(console, "PROGRESS_AFTER_S", 3600.0)
