"""Output of the commands: the rich console, number formatting, and the lines several commands
print (a numeric confirmation's verdict, a certificate's status).  rich is imported when a console
is made (a verify off a terminal prints no table and shows plain progress lines: it loads no rich;
ISSUE 16)."""

from __future__ import annotations

import contextlib
import itertools
import os
import sys
import threading
import time
from collections.abc import Callable
from functools import lru_cache

#: width of tables written to a pipe or file (no terminal to fit; COLUMNS still wins)
PIPE_WIDTH = 160


@lru_cache(maxsize=1)
def _console_class() -> type:
    """rich's Console, except that stdout closed early (``softhard ... | head``) raises
    BrokenPipeError to :func:`softhard.solver.cli.main`, which exits 141 silently as the README says
    (rich's own handler exits 1 — for certify and run, "refuted"/"differs": a script would be misled)."""
    from rich.console import Console  # third-party: loaded when a console is made

    class _Console(Console):
        def on_broken_pipe(self) -> None:
            self.quiet = True
            raise BrokenPipeError

    return _Console


def stdout_console() -> "rich.console.Console":  # noqa: F821 - imported lazily
    """The rich console the commands print to: a terminal's own width; piped or redirected,
    ``PIPE_WIDTH`` columns unless ``COLUMNS`` is set, so tables in logs do not wrap at 80."""
    width = None
    if not sys.stdout.isatty() and not os.environ.get("COLUMNS"):
        width = PIPE_WIDTH
    return _console_class()(highlight=False, soft_wrap=False, width=width)


def stderr_console() -> "rich.console.Console":  # noqa: F821 - imported lazily
    """The console of progress displays (stdout stays clean for ``--json`` and pipes)."""
    return _console_class()(stderr=True, highlight=False)


def _stderr_may_be_terminal() -> bool:
    """False when rich would certainly not treat stderr as a terminal (not a tty, neither
    ``FORCE_COLOR`` nor ``TTY_COMPATIBLE`` set), so that plain progress lines need no rich."""
    if os.environ.get("FORCE_COLOR") or os.environ.get("TTY_COMPATIBLE"):
        return True
    isatty = getattr(sys.stderr, "isatty", None)
    try:
        return isatty is not None and bool(isatty())
    except ValueError:  # a closed stream: let rich decide
        return True


#: a command shows progress once it has run this long, seconds (issue 15: "over about 2 s")
PROGRESS_AFTER_S = 2.0
#: off a terminal, one plain progress line at most this often, seconds
PROGRESS_EVERY_S = 10.0


@contextlib.contextmanager
def progress(text: str):
    """Progress of a long command on stderr (stdout stays clean for ``--json`` and pipes); yields
    ``say(text)``, the callback that names the current step.  Nothing in the first
    :data:`PROGRESS_AFTER_S` seconds; then, on a terminal, a transient rich spinner with the step,
    and otherwise plain lines ``softhard: [12 s] step`` every :data:`PROGRESS_EVERY_S` seconds
    (logs and CI see that a run is alive).  A daemon thread does the timing; it stops on exit."""
    err = stderr_console() if _stderr_may_be_terminal() else None
    state = {"text": text}
    done = threading.Event()
    t0 = time.perf_counter()

    def say(s: str) -> None:
        state["text"] = s
        if live is not None:
            live.update(s)

    live = None
    if err is not None and err.is_terminal:
        live = err.status(text, spinner="dots")

        def show() -> None:
            if not done.wait(PROGRESS_AFTER_S):
                live.start()
    else:
        def show() -> None:
            wait = PROGRESS_AFTER_S
            while not done.wait(wait):
                print(f"softhard: [{time.perf_counter() - t0:.0f} s] {state['text']}", file=sys.stderr, flush=True)
                wait = PROGRESS_EVERY_S
    timer = threading.Thread(target=show, daemon=True)
    timer.start()
    try:
        yield say
    finally:
        done.set()
        timer.join()
        if live is not None:
            live.stop()


def fmt(x, digits: int = 6) -> str:
    """A number for a table: ``digits`` significant digits, exponent notation outside [1e-4, 1e6)."""
    x = float(x)
    if x == 0:
        return "0"
    if 1e-4 <= abs(x) < 1e6:
        return f"{x:.{digits}g}"
    return f"{x:.{max(digits - 2, 2)}e}"


def status_line(cert: dict, path, extra: str = "") -> str:
    """The last line ``certify`` prints (formulas, models, Tracr): the certificate's status, and
    when the claims are proved but the numeric confirmation failed, that it failed (exit 1)."""
    colr = {"proved": "green", "refuted": "red"}.get(cert["status"], "yellow")
    num = cert.get("numeric")
    failed = num is not None and not num["ok"]
    return (f"status: [{colr}]{cert['status']}[/{colr}]{extra}"
            + (" — but the [red]numeric confirmation FAILED[/red] (see above; exit 1)" if failed else "")
            + f"  ({cert['times']['total_s']:.2f} s)" + (f"; certificate written to {path}" if path else ""))


def families_text(families: dict) -> str:
    """``{family: number of inputs}`` as ``exhaustive 4094, random 400`` (display only)."""
    return ", ".join(f"{k} {v}" for k, v in families.items())


def numeric_verdict(inv_tau: float | str | None, families: dict, mismatched: int, unguarded: int, premise_failures: int,
                    ok: bool) -> str:
    """One line on a numeric confirmation (``certify`` and ``confirm``): inputs, differing outputs
    and the verdict, saying where the bounds were not claimed to hold (bounds/confirm.py).  ``inv_tau``:
    the one 1/τ, a text naming the temperature (a schedule), or None (said elsewhere)."""
    at = "" if inv_tau is None else f" at {inv_tau}" if isinstance(inv_tau, str) else f" at 1/tau = {inv_tau:.10g}"
    txt = (f"numeric confirmation{at}: inputs {families_text(families)}; positions whose clean output "
           f"differs from the hard model where every bound is <= eta: {mismatched}")
    if unguarded or premise_failures:
        txt += (f"; where some bound exceeds eta (too warm: exactness not claimed) {unguarded} differing "
                f"position(s) and {premise_failures} node check(s) whose inputs were not clean")
    return txt + ("; no bound exceeded" if ok else "; [red]A BOUND WAS EXCEEDED OR AN OUTPUT DIFFERS[/red]")


def certified_exit(cert: dict) -> int:
    """``certify``'s exit status: 0 when every claim is proved and the numeric confirmation (if
    run) agrees, else 1."""
    return 0 if cert["status"] == "proved" and (cert["numeric"] is None or cert["numeric"]["ok"]) else 1


#: the most positions a ``run`` table prints (the first and last :data:`TABLE_ENDS` and up to
#: :data:`TABLE_ENDS` where soft and hard differ); ``--json`` lists every position
TABLE_ENDS = 100


def elided(rows: list, differs: Callable[[object], bool]) -> tuple[list, int]:
    """The rows a table shows for a long word: all of them up to ``2 * TABLE_ENDS``; beyond, the
    first and last :data:`TABLE_ENDS` and the first :data:`TABLE_ENDS` rows where ``differs``, in
    order, with None where rows are left out.  Returns ``(rows with None gaps, number left out)``
    (a 100 000-symbol word's table took a minute to print)."""
    n = len(rows)
    if n <= 2 * TABLE_ENDS:
        return list(rows), 0
    keep = set(range(TABLE_ENDS)) | set(range(n - TABLE_ENDS, n))
    keep |= set(itertools.islice((i for i in range(TABLE_ENDS, n - TABLE_ENDS) if differs(rows[i])), TABLE_ENDS))
    out, last = [], -1
    for i in sorted(keep):
        if i != last + 1:
            out.append(None)
        out.append(rows[i])
        last = i
    return out, n - len(keep)
