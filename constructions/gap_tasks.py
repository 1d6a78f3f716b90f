"""The exhaustive enumeration of every word up to a length, split into tasks (THEORY §6 premises).

An exhaustive gap premise evaluates every word of length 1..N over k symbols — ``Σ k^n`` words,
in the order of ``itertools.product`` per length, in blocks of :data:`CHUNK` rows.  The work is
embarrassingly parallel: :func:`exhaustive_tasks` cuts it into tasks ``(n, start, stop)`` — a
range of word indices of one length, a whole number of blocks (:data:`TASK_CHUNKS` per task) —
that depend only on k and N, never on where they run.  :func:`task_tokens` yields a task's
blocks exactly as :func:`all_tokens` yields them for the whole length, so a task's partial
minimum, merged in task order, gives the single-process result bit for bit
(:func:`softhard.constructions.gaps.analyse_gaps`).

Where the tasks run is :data:`TASK_MAP`: a context variable holding a function
``map(fn, tasks) -> results in order`` (default: here, one after the other).  The command line
sets it to a Dask cluster's map (:class:`softhard.solver.distributed.Cluster`) for
``--workers``/``--scheduler``; nothing here imports Dask.
"""

from __future__ import annotations

import contextvars
import itertools
from typing import Callable, Iterator

import numpy as np

#: rows per block of exact evaluation
CHUNK = 2048
#: blocks per task (a task is at most TASK_CHUNKS * CHUNK words)
TASK_CHUNKS = 4

#: a task: every word of length ``n`` with index in [start, stop) (product order, 0-based)
Task = tuple[int, int, int]

#: where tasks run: ``map(fn, tasks)`` returning the results in task order; None: here, in order
TASK_MAP: contextvars.ContextVar[Callable | None] = contextvars.ContextVar("TASK_MAP", default=None)
#: how many workers TASK_MAP has (1: this process); scales the enumeration limits of verify
TASK_WORKERS: contextvars.ContextVar[int] = contextvars.ContextVar("TASK_WORKERS", default=1)


def all_tokens(k: int, n: int):
    """Every word of length n over ``k`` symbols as token ids (1-based), in chunks of ≤ CHUNK rows."""
    it = itertools.product(range(1, k + 1), repeat=n)
    while True:
        block = list(itertools.islice(it, CHUNK))
        if not block:
            return
        yield np.array(block, dtype=np.int64).reshape(len(block), n)


def exhaustive_tasks(k: int, n_max: int, chunks_per_task: int | None = None) -> list[Task]:
    """The tasks of an exhaustive enumeration of every word of length 1..``n_max`` over ``k``
    symbols: per length, consecutive index ranges of ``chunks_per_task * CHUNK`` words (default
    :data:`TASK_CHUNKS`; the last one shorter), lengths in increasing order.  Depends only on its
    arguments (the merged result does not depend on them at all)."""
    size = (chunks_per_task or TASK_CHUNKS) * CHUNK
    return [(n, a, min(a + size, k**n)) for n in range(1, n_max + 1) for a in range(0, k**n, size)]


def task_tokens(k: int, task: Task) -> Iterator[np.ndarray]:
    """The words of ``task`` as token ids (1-based), shape (≤ CHUNK, n) per block, in product
    order: word index i has digit ``(i // k^(n-1-p)) % k`` at position p.  Blocks start at
    multiples of CHUNK from the length's first word (as :func:`all_tokens`'s)."""
    n, start, stop = task
    powers = np.array([k ** (n - 1 - p) for p in range(n)], dtype=object if k**n >= 2**62 else np.int64)
    for a in range(start, stop, CHUNK):
        b = min(a + CHUNK, stop)
        idx = np.arange(a, b, dtype=np.int64) if powers.dtype != object else np.array(range(a, b), dtype=object)
        yield ((idx[:, None] // powers[None, :]) % k + 1).astype(np.int64)


def map_tasks(fn: Callable, tasks: list[Task], progress: Callable[[str], None] | None = None) -> list:
    """``[fn(t) for t in tasks]`` where :data:`TASK_MAP` says (default: here, with ``progress``
    told each task)."""
    m = TASK_MAP.get()
    if m is not None:
        if progress:
            progress(f"exhaustive: {len(tasks)} tasks on the cluster")
        return m(fn, tasks)
    out = []
    for t in tasks:
        if progress:
            progress(f"exhaustive: length {t[0]}, words {t[1]}..{t[2] - 1}")
        out.append(fn(t))
    return out
