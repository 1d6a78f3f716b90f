"""Issue 15 (hardening): budgets, progress, and the rough edges a newcomer hits, through the
command line."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest

from softhard.solver.cli import main
from softhard.solver.cli.handlers import console

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "models" / "ab_subsequence.json"


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


def test_fractions_accept_decimals_exactly(capsys):
    """``--tau 1/8.2`` is 5/41 exactly (it was refused); a decimal exponent beyond 10^4 is refused
    in one line instead of asking Fraction for a billion-digit power."""
    from fractions import Fraction

    from softhard.constructions.errors import ParameterError
    from softhard.constructions.parameters import to_fraction
    assert to_fraction("1/8.2") == Fraction(5, 41) == Fraction(10, 82)
    assert to_fraction("2.5e-1/0.5") == Fraction(1, 2) and to_fraction(" 1 / 4 ") == Fraction(1, 4)
    for bad, needle in [("1/0", "divides by zero"), ("1/-4", "not a finite number"), ("1e-999999999", "exponent"),
                        ("1/4/2", "not a finite number"), ("nan", "not a finite number"), ("9" * 5000, "digits")]:
        with pytest.raises(ParameterError, match=needle):
            to_fraction(bad, "tau")
    assert main(["run", "Y a", "ab", "--alphabet", "ab", "--tau", "1/8.2", "--json"]) in (0, 1)
    out = json.loads(capsys.readouterr().out)
    assert out["inv_tau"] == 8.2 and out["tau_source"] == "--tau"
    assert main(["run", "Y a", "ab", "--tau", "1e-999999999"]) == 2
    assert "exponent" in capsys.readouterr().err


def test_model_epsilon_defaults_to_margin_like_tracr(capsys):
    """``certify --model`` without --epsilon uses 'margin', as --tracr does (it was required)."""
    from softhard.solver.cli import main as cli
    argv = ["certify", "--model", str(EXAMPLE), "--n-max", "4", "--tau", "1/200", "--no-numeric", "--json"]
    assert cli(argv) == 0
    default = json.loads(capsys.readouterr().out)
    assert cli([*argv, "--epsilon", "margin"]) == 0
    explicit = json.loads(capsys.readouterr().out)
    assert default["construction"]["params"] == explicit["construction"]["params"]
    assert default["status"] == "proved"
