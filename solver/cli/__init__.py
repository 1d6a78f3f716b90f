"""The ``softhard`` command line (its console script: :mod:`softhard.entry`, which calls :func:`main`).

Commands: ``run`` (the hard and soft transformers on one word), ``bound`` (symbolic node bounds
and required temperatures), ``confirm`` (numeric confirmation of the bounds), ``certify`` and
``verify`` (solver-checked certificates, every input kind), ``gap`` (a model file's score gaps),
``hahn`` (Hahn's obstacle at a fixed temperature), ``plot`` (figures of certificates), ``tracr compile`` (a RASP
program compiled by Tracr into the export format), ``import-torch`` (a trained torch encoder as a model
file), ``export`` (a construction as a TorchScript program).  Exit status: 0 success, 1 a claim was refuted
or unknown / a check failed, 2 bad input (one-line message, no traceback).

Layout: each command has two modules.

* ``cli/<command>.py`` defines the command's parser: ``HELP``, ``DESCRIPTION`` and
  ``add_arguments(parser)``.  These modules, :mod:`.options` and this driver are light (standard
  library, :mod:`softhard.constructions.errors`, :mod:`softhard.constructions.parameters`), so
  ``softhard --help`` and every usage error return without loading NumPy, SymPy or Z3.
  A parser module may also define ``precheck(args)``: checks of the parsed options that need no
  stage (``certify``: an output file that exists or cannot be written), run before the handler
  is imported, so such input is refused at once (ISSUE 16).
* ``cli/handlers/<command>.py`` does the work: ``handle(args) -> int`` (the exit status).  Its
  module-level imports are the pipeline's stages.  :func:`main` imports the chosen command's
  handler — and only that one — by its dotted name from :data:`COMMANDS`, and adds only that
  command's arguments to its parser when the parse is the same (:func:`_parsers_for`).

A command with several sources (``run`` and ``certify``: a formula, ``--model FILE`` or
``--tracr MODEL``) defines all of them in its one parser; its handler picks the kind.
"""

from __future__ import annotations

import argparse
import functools
import io
import json
import os
import sys
import threading
from importlib import import_module
from types import ModuleType

from ... import __version__
from ...constructions.errors import SofthardError
from . import bound, certify, confirm, export, gap, hahn, import_torch, plot, run, tracr, verify
from .options import (EXIT_BAD_INPUT, EXIT_INTERNAL, WORKING_DPS, Parser, UsageErrors, attach_negative_values,
                      one_line, value_options)

#: command -> (the module defining its parser, the dotted name of its handler module); in the
#: order ``softhard --help`` lists them
COMMANDS: dict[str, tuple[ModuleType, str]] = {
    "run": (run, "softhard.solver.cli.handlers.run"),
    "bound": (bound, "softhard.solver.cli.handlers.bound"),
    "confirm": (confirm, "softhard.solver.cli.handlers.confirm"),
    "certify": (certify, "softhard.solver.cli.handlers.certify"),
    "verify": (verify, "softhard.solver.cli.handlers.verify"),
    "gap": (gap, "softhard.solver.cli.handlers.gap"),
    "hahn": (hahn, "softhard.solver.cli.handlers.hahn"),
    "plot": (plot, "softhard.solver.cli.handlers.plot"),
    "tracr": (tracr, "softhard.solver.cli.handlers.tracr"),
    "import-torch": (import_torch, "softhard.solver.cli.handlers.import_torch"),
    "export": (export, "softhard.solver.cli.handlers.export"),
}

#: the module of the commands' output and progress display (loaded once a command line parses)
CONSOLE = "softhard.solver.cli.handlers.console"
#: commands whose handler loads PyTorch (4–6 s measured for import-torch, before its own work):
#: the import runs under a progress display (rich's console: every handler loads it anyway)
SLOW_IMPORTS = ("import-torch", "export")

DESCRIPTION = ("softhard: when does softmax attention compute exactly what hard attention computes? Compiles "
               "temporal-logic formulas to hard- and soft-attention transformers, derives per-node error bounds in "
               "SymPy, proves parameter choices with Z3, and confirms numerically.")


def build_parsers(only: str | None = None) -> tuple[Parser, dict[str, Parser]]:
    """The root parser and each command's parser (they share one :class:`UsageErrors`).  ``only``
    (a command's name): every command is registered (the root's help, choices and errors are the
    same) but only that one's arguments are added, and the dict holds that one (the others' parsers
    are empty: the command line they parse names ``only``, :func:`_parsers_for`)."""
    errors = UsageErrors()
    ap = Parser(prog="softhard", description=DESCRIPTION, usage_errors=errors)
    ap.add_argument("--version", action="version", version=f"softhard {__version__}")
    ap.add_argument("--debug", action="store_true",
                    help="on an internal error (exit 3), print the Python traceback instead of one line")
    sub = ap.add_subparsers(dest="cmd", metavar="COMMAND",
                            parser_class=functools.partial(Parser, usage_errors=errors))
    sub.required = True
    parsers = {}
    for name, (module, _) in COMMANDS.items():
        p = sub.add_parser(name, help=module.HELP, description=module.DESCRIPTION)
        if only is not None and name != only:
            continue
        module.add_arguments(p)
        p.intermixed = not any(isinstance(a, argparse._SubParsersAction) for a in p._actions)
        parsers[name] = p
    return ap, parsers


#: per thread, :func:`build_parsers`'s result by its ``only`` (a parse changes a parser for its
#: duration only: argparse's intermixed parse, :class:`~.options.Parser`'s flag)
_BUILT = threading.local()


def _parsers_for(argv: list[str]) -> tuple[Parser, dict[str, Parser]]:
    """:func:`build_parsers` for the command line ``argv``: only the named command's arguments when
    that gives the same parse — the command is the first argument not starting with '-' (the root
    parser's options take no value) and no argument looks like a negative number (then
    :func:`~.options.attach_negative_values` changes nothing, whichever options take a value);
    every command's otherwise (ISSUE 16: ~10 ms of each command's start-up).  Built once per thread
    and reused by later :func:`main` calls in the same process (5–11 ms each, argparse's gettext
    look-ups included: in-process callers, the test suite's ~1,000 calls); the parsers keep no state
    between parses, and the one default that is a list (``tracr compile --args``) is only read."""
    cmd = next((a for a in argv if not a.startswith("-")), None)
    only = cmd if cmd in COMMANDS and not any(len(a) > 1 and a[0] == "-" and (a[1].isdigit() or a[1] == ".")
                                              for a in argv) else None
    built = _BUILT.__dict__
    if only not in built:
        built[only] = build_parsers(only=only)
    return built[only]


def build_parser() -> argparse.ArgumentParser:
    """The root parser of ``softhard`` (every command's parser below it)."""
    return build_parsers()[0]


#: exit status when stdout is closed early (``| head``): 128 + SIGPIPE, as a shell tool
EXIT_BROKEN_PIPE = 141


def _silence_stdout() -> None:
    """Point stdout at /dev/null, so that the interpreter's final flush does not fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):  # not a real file (in-process capture)
        pass


def main(argv=None) -> int:
    """Run one ``softhard`` command line (default ``sys.argv[1:]``); returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    ap, parsers = _parsers_for(argv)
    argv = attach_negative_values(value_options([ap, *parsers.values()]), argv)
    ap.usage_errors.json = "--json" in argv
    try:
        args = ap.parse_args(argv)
    except SystemExit as e:  # argparse: --help (0) or a usage error (2)
        return int(e.code or 0)
    try:
        precheck = getattr(COMMANDS[args.cmd][0], "precheck", None)  # bad input refused before any work
        if precheck is not None:
            precheck(args)
        if args.cmd in SLOW_IMPORTS:  # under the progress display every long command shows
            with import_module(CONSOLE).progress(f"{args.cmd}: loading its libraries (PyTorch)"):
                handler = import_module(COMMANDS[args.cmd][1])
        else:
            handler = import_module(COMMANDS[args.cmd][1])
        if getattr(handler, "OWN_PRECISION", False):  # it enters WORKING_DPS itself (verify: where a replay computes)
            return handler.handle(args)
        import mpmath  # third-party, loaded with the handler's stages; every command runs at 30 digits

        with mpmath.workdps(WORKING_DPS):
            return handler.handle(args)
    except SofthardError as e:
        code = getattr(e, "exit_code", EXIT_BAD_INPUT)
        print(f"softhard: error: {one_line(str(e))}", file=sys.stderr)
        if getattr(args, "json", False):  # scripts reading stdout get a JSON object too
            print(json.dumps({"error": str(e), "kind": type(e).__name__, "exit": code}))
        return code
    except KeyboardInterrupt:
        print("softhard: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # stdout closed early (`softhard ... | head`): stop quietly, like a tool killed by SIGPIPE
        _silence_stdout()
        return EXIT_BROKEN_PIPE
    except Exception as e:  # noqa: BLE001 — a bug in softhard, not bad input: one line, exit 3
        if args.debug:
            raise
        print(f"softhard: internal error: {type(e).__name__}: {one_line(str(e))} (a bug in softhard, not in your "
              "input; 'softhard --debug ...' prints the traceback)", file=sys.stderr)
        if getattr(args, "json", False):
            print(json.dumps({"error": str(e), "kind": type(e).__name__, "exit": EXIT_INTERNAL}))
        return EXIT_INTERNAL
