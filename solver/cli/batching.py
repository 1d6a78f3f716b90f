"""The options of batches (``certify`` and ``verify`` with many inputs or a parameter grid):
``--workers``, ``--scheduler``, ``--resume``.  The parser only (light); the work:
:mod:`softhard.solver.cli.handlers.batch`."""

from __future__ import annotations

import argparse

from .options import positive_int, seconds_type

#: default of ``--connect-timeout``: seconds to try to reach a ``--scheduler`` (Dask: 30 s)
CONNECT_TIMEOUT_S = 10.0


def scheduler_option(s: str) -> str:
    """argparse type of ``--scheduler``: a Dask scheduler address ``tcp://HOST:PORT``."""
    host, _, port = s.removeprefix("tcp://").rpartition(":")
    if not s.startswith("tcp://") or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise argparse.ArgumentTypeError(f"--scheduler must be tcp://HOST:PORT, got {s!r}")
    return s


def add_batch_options(p: argparse.ArgumentParser, *, resume: bool) -> None:
    """``--workers K`` / ``--scheduler tcp://HOST:PORT`` (run the jobs on Dask: a local cluster of
    K worker processes, or an existing cluster), and with ``resume``, ``--resume``."""
    g = p.add_mutually_exclusive_group()
    g.add_argument("--workers", type=positive_int("--workers"), nargs="?", const=0, default=None, metavar="K",
                   help="run the batch's jobs on a local Dask cluster of K worker processes (default: the "
                        "machine's cores; needs the [dask] extra); one job runs here and splits its exhaustive "
                        "enumeration (gap premises of --model) onto the cluster. Results are identical to the "
                        "single-process run")
    g.add_argument("--scheduler", type=scheduler_option, default=None, metavar="tcp://HOST:PORT",
                   help="as --workers, on an existing Dask cluster (needs the [dask] extra; start its workers with "
                        "DASK_DISTRIBUTED__WORKER__DAEMON=False: solver calls run in child processes)")
    p.add_argument("--connect-timeout", type=seconds_type("--connect-timeout"), default=CONNECT_TIMEOUT_S,
                   metavar="SECONDS",
                   help=f"with --scheduler: how long to try to reach the scheduler before giving up with one line, exit "
                        f"2 (default {CONNECT_TIMEOUT_S:g} s; Dask's own default is 30 s)")
    if resume:
        p.add_argument("--resume", action="store_true",
                       help="with -o DIR: skip a job whose certificate is already in DIR and verifies by replay "
                            "(an invalid one is made again)")
