"""Where a batch's jobs and an exhaustive enumeration's tasks run: in this process, or on Dask.

:class:`Cluster` is a context manager: ``Cluster()`` (no workers, no scheduler) runs every task
here, in order; ``Cluster(workers=K)`` starts a local ``dask.distributed`` cluster of K worker
processes (one thread each; ``K = 0``: the machine's cores); ``Cluster(scheduler="tcp://H:P")``
connects to an existing one.  While a cluster is open, the exhaustive enumerations of this
process are split onto it (:data:`softhard.constructions.gap_tasks.TASK_MAP`).  Dask is an optional extra (``pip install 'softhard[dask]'``),
imported only when a cluster is asked for.

The split of the work never depends on where it runs: the caller makes the tasks (a
deterministic list) and merges their results in task order (:meth:`Cluster.map`), so a result
computed on Dask is identical to the single-process one.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
from typing import Callable, Iterable, Iterator, TypeVar

from ..constructions.errors import ParameterError
from ..constructions.gap_tasks import TASK_MAP, TASK_WORKERS

T = TypeVar("T")
R = TypeVar("R")


class Cluster:
    """Runs tasks here (default) or on Dask (module docstring).  ``workers``: local worker
    processes (0: ``os.cpu_count()``); ``scheduler``: ``tcp://HOST:PORT`` of an existing cluster;
    ``processes=False``: a local cluster of threads in this process (tests: no process start);
    ``connect_timeout_s``: how long to try to reach ``scheduler``, seconds.  Raises
    :class:`ParameterError` when Dask is asked for but not installed, or the scheduler cannot be
    reached within ``connect_timeout_s``."""

    def __init__(self, workers: int | None = None, scheduler: str | None = None, *, processes: bool = True,
                 connect_timeout_s: float = 10.0):
        self.workers, self.scheduler, self.processes = workers, scheduler, processes
        self.connect_timeout_s = connect_timeout_s
        self.client = None
        self._cluster = None
        self._tokens = ()

    @property
    def distributed(self) -> bool:
        return self.workers is not None or self.scheduler is not None

    def __enter__(self) -> "Cluster":
        if not self.distributed:
            return self
        try:
            import dask  # optional extra: lazy
            from dask.distributed import Client, LocalCluster
        except ImportError:
            raise ParameterError("--workers/--scheduler need Dask: pip install 'softhard[dask]'") from None
        # every solver call runs in a child process with a hard kill (solver.check): a worker
        # process must be allowed children (workers of an existing cluster: start them with
        # DASK_DISTRIBUTED__WORKER__DAEMON=False)
        # Dask's default MALLOC_TRIM_THRESHOLD_=65536 in the workers' environment made an exact
        # enumeration task 2.5x slower (measured: benchmarks/README.md); keep its other variables
        environ = {k: v for k, v in dask.config.get("distributed.nanny.pre-spawn-environ").items()
                   if k != "MALLOC_TRIM_THRESHOLD_"}
        dask.config.set({"distributed.worker.daemon": False, "distributed.nanny.pre-spawn-environ": environ})
        if self.scheduler is not None:
            try:
                self.client = Client(self.scheduler, timeout=self.connect_timeout_s)
            except (OSError, TimeoutError) as e:  # Dask: "Timed out trying to connect to tcp://…"
                raise ParameterError(f"cannot reach the Dask scheduler at {self.scheduler} within "
                                     f"{self.connect_timeout_s:g} s ({type(e).__name__}); is it running? "
                                     "(--connect-timeout SECONDS waits longer)") from None
        else:
            n = self.workers or os.cpu_count() or 1
            with _sigint_ignored_by_children():
                self._cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=self.processes,
                                             dashboard_address=":0", protocol="tcp://", host="127.0.0.1")
            self.client = Client(self._cluster)
        # exhaustive enumerations run in this process (a one-job batch) go to the cluster too
        self._tokens = (TASK_MAP.set(self.map), TASK_WORKERS.set(self.n_workers()))
        return self

    def n_workers(self) -> int:
        """The cluster's workers (1 without a cluster)."""
        if self.client is None:
            return 1
        return max(1, len(self.client.scheduler_info().get("workers", {})))

    def __exit__(self, exc_type=None, *exc) -> None:
        if exc_type is not None and issubclass(exc_type, KeyboardInterrupt):
            self.quiet()
        if self._tokens:
            TASK_MAP.reset(self._tokens[0])
            TASK_WORKERS.reset(self._tokens[1])
            self._tokens = ()
        if self.client is not None:
            self.client.close()
        if self._cluster is not None:
            self._cluster.close()
        self.client = self._cluster = None

    def quiet(self) -> None:
        """Dask's loggers here and on every worker at CRITICAL: after a Ctrl-C the cluster is shut
        down on purpose, and Dask's warnings about cancelled tasks, closing comms and workers killed
        after their grace period are not the user's business (one line says it was interrupted)."""
        quiet_dask_loggers()
        if self.client is not None:
            with contextlib.suppress(Exception):  # best effort: a worker may be gone already
                self.client.run(quiet_dask_loggers)

    def map(self, fn: Callable[[T], R], items: Iterable[T]) -> list[R]:
        """``[fn(x) for x in items]``, in order (on Dask: one task per item, gathered in order)."""
        items = list(items)
        if self.client is None:
            return [fn(x) for x in items]
        futures = self.client.map(fn, items, pure=False)
        return self.client.gather(futures)


#: the loggers Dask writes its warnings to (quiet while a Ctrl-C shuts the cluster down)
DASK_LOGGERS = ("distributed", "tornado", "asyncio")


def quiet_dask_loggers() -> None:
    """Every logger of :data:`DASK_LOGGERS` in this process at CRITICAL (also those Dask's
    configuration gave a level of their own, e.g. ``distributed.client``)."""
    for name in [*DASK_LOGGERS, *logging.root.manager.loggerDict]:
        if name.split(".")[0] in DASK_LOGGERS:
            logging.getLogger(name).setLevel(logging.CRITICAL)


@contextlib.contextmanager
def _sigint_ignored_by_children():
    """While a local cluster starts: SIGINT ignored, so that the worker processes it spawns inherit
    the ignored disposition (kept across exec; Python then installs no KeyboardInterrupt handler).
    A terminal's Ctrl-C reaches the whole process group: without this every worker printed its own
    traceback; with it only this process is interrupted and shuts the workers down (:meth:`Cluster.__exit__`).
    The handler is restored on exit (a Ctrl-C during the start, ~1–3 s, is lost).  Only from the
    main thread (signal handlers can be set nowhere else); elsewhere a no-op."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)


def run_jobs(cluster: Cluster, jobs: list[tuple[T, Callable[[], R]]]) -> Iterator[tuple[T, R]]:
    """Run each ``(key, thunk)``: yields ``(key, thunk())`` — here in order, on Dask as each one
    finishes (so a batch writes every finished result at once).  One job runs here even with a
    cluster: its exhaustive enumerations go to the cluster instead (``gap_tasks.TASK_MAP``)."""
    if cluster.client is None or len(jobs) == 1:
        for key, thunk in jobs:
            yield key, thunk()
        return
    from dask.distributed import as_completed  # optional extra: lazy (imported by __enter__ already)

    futures = {cluster.client.submit(thunk, pure=False): key for key, thunk in jobs}
    try:
        for fut in as_completed(futures):
            yield futures[fut], fut.result()
    except KeyboardInterrupt:
        cluster.quiet()  # before cancelling: each cancelled task made its worker log a warning
        raise
    finally:
        for fut in futures:
            fut.cancel()
