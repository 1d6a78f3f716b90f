"""The console script ``softhard`` (and ``python -m softhard``): :func:`softhard.solver.cli.main`
with a Ctrl-C answered by one line from the moment this module loads (Python's own start-up and
the import of the package before it, a few hundredths of a second, are outside its reach).

Loading the command line takes a few tenths of a second (its parsers; a command's stages load
later, inside :func:`~softhard.solver.cli.main`, which answers a Ctrl-C itself).  A Ctrl-C while
this module imports it printed Python's ``KeyboardInterrupt`` traceback; here a SIGINT handler
is installed first, prints ``softhard: interrupted`` and ends the process with status 130 (as a
shell reports a process ended by SIGINT), and the previous handler is restored once the command
line is loaded; a process that ignores SIGINT (a Dask worker of ``--workers``, which re-runs this
script's imports; a background job of a non-interactive shell) keeps ignoring it.  A Ctrl-C while
the arguments are parsed, before the command's own handling, is answered the same way by
:func:`main`.  Standard library only, besides the command line.
"""

from __future__ import annotations

import os
import signal
import sys

#: exit status of an interrupted command (128 + SIGINT), as :func:`softhard.solver.cli.main` returns
EXIT_INTERRUPTED = 130
#: what an interrupted command prints on stderr, as :func:`softhard.solver.cli.main` does
INTERRUPTED = "softhard: interrupted\n"


def _interrupted_while_loading(signum, frame) -> None:  # noqa: ARG001 — the signal module's signature
    """SIGINT during the import below: one line, exit 130 at once (``os._exit``: no half-loaded
    module runs its clean-up; nothing has been written yet)."""
    os.write(2, INTERRUPTED.encode())
    os._exit(EXIT_INTERRUPTED)


# an ignored SIGINT stays ignored: a Dask worker (solver/distributed.py ignores it while the cluster
# starts; the spawned worker runs this script's imports again as ``__mp_main__``) killed here made
# the cluster's start fail ("Nanny failed to start", exit 3); a handler not set from Python (None)
# could not be restored
_previous = signal.getsignal(signal.SIGINT)
_guard = _previous is not signal.SIG_IGN and _previous is not None
if _guard:
    signal.signal(signal.SIGINT, _interrupted_while_loading)
from .solver.cli import main as _cli_main  # noqa: E402 — loaded under the handler above

if _guard:
    signal.signal(signal.SIGINT, _previous)


def main(argv: list[str] | None = None) -> int:
    """Run one ``softhard`` command line (default ``sys.argv[1:]``) and return its exit status:
    :func:`softhard.solver.cli.main`'s, or 130 with one line on stderr when interrupted before
    the command's own handling starts."""
    try:
        return _cli_main(argv)
    except KeyboardInterrupt:
        sys.stderr.write(INTERRUPTED)
        return EXIT_INTERRUPTED
