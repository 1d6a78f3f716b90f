"""The command line's parse through the reused parsers (``solver/cli``'s per-thread memo, ISSUE 16
branch ``cli12``) against freshly built ones, on every command line the fuzz strategy draws
(tests/fuzz_inputs.py, derandomized) plus each command's ``--help``: the namespace, or argparse's
exit status and everything printed, must be identical.  Prints the counts; exit 1 on a difference.

    python benchmarks/cli_parse_identity.py [--examples 2000]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from fuzz_inputs import argvs  # noqa: E402
from hypothesis import HealthCheck, given, settings  # noqa: E402

from softhard.solver import cli  # noqa: E402
from softhard.solver.cli.options import attach_negative_values, value_options  # noqa: E402


def parse(argv: list[str], fresh: bool) -> tuple:
    """What :func:`softhard.solver.cli.main` gets from its parse of ``argv``: (exit status or None,
    the namespace's items, stdout, stderr)."""
    if fresh:
        cmd = next((a for a in argv if not a.startswith("-")), None)
        neg = any(len(a) > 1 and a[0] == "-" and (a[1].isdigit() or a[1] == ".") for a in argv)
        ap, parsers = cli.build_parsers(only=cmd if cmd in cli.COMMANDS and not neg else None)
    else:
        ap, parsers = cli._parsers_for(argv)
    argv = attach_negative_values(value_options([ap, *parsers.values()]), argv)
    ap.usage_errors.json = "--json" in argv
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            ns, code = sorted(vars(ap.parse_args(argv)).items(), key=lambda kv: kv[0]), None
        except SystemExit as e:
            ns, code = None, e.code
    return code, repr(ns), out.getvalue(), err.getvalue()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--examples", type=int, default=2000)
    a = ap.parse_args()
    lines = [[c, "--help"] for c in cli.COMMANDS] + [["--help"], ["--version"], []]
    strategy = argvs(("{}",))

    @settings(max_examples=a.examples, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(strategy)
    def collect(argv):
        lines.append(list(argv))

    collect()
    differ = 0
    for argv in lines:  # the memo warmed by every earlier line, each compared with a fresh build
        if parse(argv, fresh=False) != parse(argv, fresh=True):
            differ += 1
            print("differs:", argv)
    print(f"{len(lines)} command lines, {differ} parsed differently")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
