"""Issue 15 (hardening): budgets, progress, and the rough edges a newcomer hits, through the
command line."""

from __future__ import annotations

import re
import time

from softhard.solver.cli.handlers import console


def test_progress_off_a_terminal_is_plain_lines_after_the_delay(monkeypatch, capsys):
    """Off a terminal (capsys is not one) a long step prints ``softhard: [t s] step`` lines on
    stderr; nothing before PROGRESS_AFTER_S; stdout stays empty."""
    monkeypatch.setattr(console, "PROGRESS_AFTER_S", 0.2)
    monkeypatch.setattr(console, "PROGRESS_EVERY_S", 0.2)
    with console.progress("first step") as say:
        time.sleep(0.05)
    cap = capsys.readouterr()
    assert cap.err == "" and cap.out == ""  # a short run prints nothing
    with console.progress("first step") as say:
        time.sleep(0.3)
        say("second step")
        time.sleep(0.3)
    cap = capsys.readouterr()
    lines = cap.err.splitlines()
    assert cap.out == "" and len(lines) >= 2, cap.err
    assert all(re.fullmatch(r"softhard: \[\d+ s\] (first|second) step", ln) for ln in lines), lines
    assert lines[0].endswith("first step") and lines[-1].endswith("second step")
