"""The xdist scheduling of tests/xdist_schedule.py (installed by tests/conftest.py): the modules with
expensive module fixtures are each one unit of work (one worker builds their fixture), every other
test is its own unit, and the units are handed out longest first.  A renamed module would silently
lose its grouping (as ``--dist loadgroup`` silently did with pytest 9.2): every listed module must
exist and hold tests; every timed test must still exist."""

from __future__ import annotations

import re
from collections import OrderedDict
from pathlib import Path

from xdist_schedule import DURATIONS_FILE, ONE_WORKER, ModuleFixtureScheduling, load_durations, longest_first

ROOT = Path(__file__).resolve().parents[1]


def test_listed_modules_exist_and_hold_tests():
    for module in ONE_WORKER:
        text = (ROOT / module).read_text(encoding="utf-8")
        assert "\ndef test_" in text, module
        assert 'scope="module"' in text, f"{module} has no module fixture to share"


def test_units_of_work():
    sched = ModuleFixtureScheduling.__new__(ModuleFixtureScheduling)  # _split_scope reads no state
    lib = "tests/solver/test_tracr_lib.py"
    assert sched._split_scope(f"{lib}::test_certify_verify_and_runs[hist]") == lib
    assert sched._split_scope(f"{lib}::test_export_round_trip") == lib
    other = "tests/solver/test_cli.py::test_bound_command"
    assert sched._split_scope(other) == other
    nb = "tests/test_notebooks.py::test_notebook_runs[01_gap_lemma.ipynb]"
    assert sched._split_scope(nb) == nb


def test_timed_tests_exist():
    """Every node id in tests/durations.json names a module of tests/ defining that test function
    (a stale entry would only misorder the work, but it should be refreshed then)."""
    seconds = load_durations()
    assert len(seconds) >= 50 and all(v >= 1.0 for v in seconds.values())
    for nodeid in seconds:
        module, func = nodeid.split("::")
        name = re.sub(r"\[.*\]$", "", func)
        assert re.search(rf"^def {name}\(", (ROOT / module).read_text(encoding="utf-8"), re.M), nodeid
    assert load_durations(DURATIONS_FILE.with_name("no-such-file.json")) == {}


def test_longest_first():
    """Units sorted by the sum of their tests' seconds, a test not listed counting 0, ties in
    their original order: here m (2 + 0.5) before b (2), then the untimed a and c as they came."""
    units = OrderedDict((s, dict.fromkeys(t, False)) for s, t in (
        ("a", ["a"]), ("b", ["b"]), ("c", ["c"]), ("m", ["m::x", "m::y", "m::z"])))
    got = longest_first(units, {"b": 2.0, "m::x": 2.0, "m::y": 0.5, "elsewhere": 9.0})
    assert list(got) == ["m", "b", "a", "c"]
    assert got["m"] == {"m::x": False, "m::y": False, "m::z": False}  # the units themselves unchanged
