"""The xdist scheduling of tests/xdist_schedule.py (installed by tests/conftest.py): the modules with expensive module fixtures are each
one unit of work (one worker builds their fixture), every other test is its own unit.  A renamed
module would silently lose its grouping (as ``--dist loadgroup`` silently did with pytest 9.2):
every listed module must exist and hold tests."""

from __future__ import annotations

from pathlib import Path

from xdist_schedule import ONE_WORKER, ModuleFixtureScheduling

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
