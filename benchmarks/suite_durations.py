"""Write ``tests/durations.json`` (the xdist scheduler's estimates: tests/xdist_schedule.py) from
the JUnit XML of a full run.  Each test's seconds are its setup + call + teardown (pytest's default
``junit_duration_report = total``); tests under ``--min`` seconds are left out (the scheduler counts
them as 0 and runs them last, in collection order).

    python -m pytest -q -n auto -p no:cacheprovider --junitxml=/tmp/suite.xml
    python benchmarks/suite_durations.py /tmp/suite.xml -o tests/durations.json

Only the order matters to the scheduler (longest first), so a run on a loaded machine is as good
as a quiet one.
"""

from __future__ import annotations

import argparse
import json
import sys
import xml.etree.ElementTree as ET


def node_id(case: ET.Element) -> str:
    """pytest's node id of a JUnit ``testcase`` (``classname`` is the dotted module path, then any
    test classes; ``name`` the function with its parameters)."""
    parts = case.get("classname", "").split(".")
    # the module is the longest prefix that names a file: tests.solver.test_x[.Class]
    tests = [k for k, p in enumerate(parts) if p.startswith("test_")]
    i = tests[-1] if tests else len(parts) - 1
    mod = "/".join(parts[: i + 1]) + ".py"
    return "::".join([mod, *parts[i + 1:], case.get("name", "")])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("junit", help="JUnit XML of a full run (pytest --junitxml)")
    ap.add_argument("-o", "--output", default="-", help="output JSON (default stdout)")
    ap.add_argument("--min", type=float, default=1.0, help="leave out tests under this many seconds (1.0)")
    a = ap.parse_args(argv)
    out: dict[str, float] = {}
    for case in ET.parse(a.junit).getroot().iter("testcase"):
        t = float(case.get("time", "0"))
        if t >= a.min:
            out[node_id(case)] = round(t, 1)
    text = json.dumps(dict(sorted(out.items(), key=lambda kv: (-kv[1], kv[0]))), indent=0) + "\n"
    if a.output == "-":
        sys.stdout.write(text)
    else:
        with open(a.output, "w", encoding="utf-8") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
