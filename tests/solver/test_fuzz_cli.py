"""Fuzz the command line through its entry point, in process (issue 15): formulas, words, option
values, model files and certificates (tests/fuzz_inputs.py).  Any traceback, exit status outside
{0, 1, 2}, multi-line bad-input message, non-strict ``--json`` output or a call beyond its
deadline fails.  A bounded number of examples keeps CI cheap; ``benchmarks/fuzz.py`` runs the
same strategies (plus huge sizes) on >= 10^5 inputs."""

from __future__ import annotations

import functools

from fuzz_inputs import argvs, run_cli, tmp_path_for
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from softhard.solver.cli import main

#: per-call deadline, seconds: generous for a loaded 2-core machine; every drawn input is small
DEADLINE_S = 60.0


@functools.cache
def certificate_text() -> str:
    """A real formula certificate (certified once per process) for verify to be fed mutations of."""
    path = tmp_path_for("base-cert.json")
    assert main(["certify", "Y a", "--alphabet", "ab", "--tau", "1/100", "--n-max", "6", "--no-numeric",
                 "-o", str(path), "--force"]) == 0
    return path.read_text()


@functools.cache
def command_lines():
    """The command-line strategy, built once per process: hypothesis validates a strategy (and its
    recursive formula grammar) on first use, which cost about 60% of this test's CPU when the
    strategy was built again for every example.  The same strategy; hypothesis's (derandomized)
    examples differ from the per-example build's, so 200 examples instead of 120 (every command
    drawn several times; 10 s CPU instead of 46 s for the 120)."""
    return argvs((certificate_text(),))


@settings(max_examples=200, deadline=None, database=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])
@given(data=st.data())
def test_no_command_line_crashes(data):
    argv = data.draw(command_lines(), label="argv")
    o = run_cli(argv, deadline_s=DEADLINE_S)
    assert o.problem is None, f"softhard {argv!r}: {o.problem}\nstderr: {o.err[-1500:]}"
