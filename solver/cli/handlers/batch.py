"""Batches of ``certify`` and ``verify``: many inputs and parameter grids in one process.

A batch is a loop over the one pipeline: every job is exactly the single-input command's work
(``certify``: the kind's certify from :data:`softhard.solver.cli.handlers.certify.CERTIFY`, i.e.
:func:`softhard.solver.certificate.certify` and its model/Tracr counterparts; ``verify``:
:func:`softhard.solver.kinds.verify_certificate`), run in job order in this process, or on Dask
(``--workers K``, ``--scheduler tcp://HOST:PORT``; :mod:`softhard.solver.distributed`).

* **Inputs**: files, directories (their ``*.ltl`` / ``*.json``, sorted) and globs (expanded
  here, sorted, when the shell did not), in the order given.
* **Grid**: every comma-separated option (``--regime T,U --eta 1/4,1/8 --n-max 1e3,1e6``) makes
  one job per combination, inputs outermost, then the options in :data:`GRID`'s order.  An option
  with several values that the inputs' kind does not use is refused.
* **Output**: ``-o DIR`` writes one certificate per job, as soon as it is finished (atomically),
  named by :func:`job_name` — stable: the input's stem, the regime, and 8 hex digits of the
  SHA-256 of the job's key (the kind, the input's content, every option that reaches the
  certificate), so the same job always has the same name whatever else is in the batch.
* **Resume** (``--resume``): a job whose certificate is already in DIR is verified by replay
  (:func:`softhard.solver.kinds.verify_certificate`) and, when valid, not made again (an invalid
  one is made again and overwritten).  An interrupted batch (Ctrl-C) keeps every finished
  certificate and exits 130.
* **Summary**: a table (rich), or with ``--json`` one JSON line per job as it finishes and a last
  ``{"summary": ...}`` line.  Exit status: the worst (largest) of the jobs' exit statuses.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
from functools import partial
from pathlib import Path
from typing import Callable

import mpmath
from rich.markup import escape
from rich.table import Table

from ....constructions.errors import NotSimulable, SofthardError
from ....bounds.store import set_disk_cache
from ...certjson import load_certificate, write_certificate
from ...distributed import Cluster, run_jobs
from ...kinds import verify_certificate
from ..batching import CONNECT_TIMEOUT_S
from ..options import EXIT_BAD_INPUT, EXIT_INTERNAL, one_line
from .console import certified_exit, fmt, progress, stderr_console, stdout_console
from .jobs import Job, output_dir

# ---------------------------------------------------------------------------------------------
# the jobs' work (module-level functions: Dask ships them to the workers by reference)


def _failure(e: BaseException) -> dict:
    if isinstance(e, NotSimulable):
        return {"exit": 1, "error": f"not simulable: {e}"}
    if isinstance(e, SofthardError):
        return {"exit": getattr(e, "exit_code", EXIT_BAD_INPUT), "error": str(e)}
    return {"exit": EXIT_INTERNAL, "error": f"internal error: {type(e).__name__}: {e}"}


def certify_task(certify_one: Callable[[argparse.Namespace], dict], args: argparse.Namespace,
                 resume_path: str | None, timeout_s: float, debug: bool = False) -> dict:
    """One certify job: ``{"cert", "exit", "error", "resumed", "seconds"}``.  With
    ``resume_path`` (an existing certificate), verify it by replay first and keep it when valid."""
    t0 = time.perf_counter()
    with mpmath.workdps(30):  # as the command line's driver
        if resume_path is not None:
            try:
                cert = load_certificate(resume_path)
                rep = verify_certificate(cert, timeout_s=timeout_s)
            except SofthardError:
                rep = None
            if rep is not None and rep.ok:
                return {"cert": cert, "exit": certified_exit(cert), "error": None, "resumed": True,
                        "seconds": time.perf_counter() - t0}
        try:
            cert = certify_one(args)
        except Exception as e:  # noqa: BLE001 — one job's failure is its row; the batch goes on
            if debug and not isinstance(e, SofthardError):
                raise
            return {"cert": None, **_failure(e), "resumed": False, "seconds": time.perf_counter() - t0}
    return {"cert": cert, "exit": certified_exit(cert), "error": None, "resumed": False,
            "seconds": time.perf_counter() - t0}


def verify_task(path: str, timeout_s: float | None, budget_s: float, debug: bool = False, no_cache: bool = False
                ) -> dict:
    """One verify job: ``{"report": VerifyReport JSON | None, "kind", "exit", "error", "seconds"}``;
    ``no_cache``: the disk derivation cache off in the process that runs it (a Dask worker too)."""
    t0 = time.perf_counter()
    if no_cache:
        set_disk_cache(False)
    with mpmath.workdps(30):
        try:
            cert = load_certificate(path)
            rep = verify_certificate(cert, timeout_s=timeout_s, budget_s=budget_s)
        except Exception as e:  # noqa: BLE001
            if debug and not isinstance(e, SofthardError):
                raise
            return {"report": None, "kind": None, **_failure(e), "seconds": time.perf_counter() - t0}
    err = None if rep.ok else f"{rep.problems[0][0]}: {rep.problems[0][1]}"
    return {"report": rep.to_json(), "kind": cert.get("kind"), "exit": rep.exit_code,
            "error": err, "seconds": time.perf_counter() - t0}


# ---------------------------------------------------------------------------------------------
# running a batch and its summary


def _params_text(grid: dict) -> str:
    return " ".join(f"{k}={v}" for k, v in grid.items())


def _certified(cert: dict | None) -> str:
    if not cert:
        return "-"
    cons = cert.get("construction", {})
    sched = cons.get("schedule") or {}
    if sched.get("kind") in ("lin", "log"):  # construction.inv_tau is then the schedule's constant S
        return str(sched.get("inv_tau_of_n"))
    v = cons.get("inv_tau_decimal")
    return "-" if v is None else fmt(v, 8)


def run_certify_batch(args: argparse.Namespace, jobs: list[Job],
                      certify_one: Callable[[argparse.Namespace], dict]) -> int:
    """Run ``jobs`` (``certify_one``: the single-input certify of a namespace), write each
    certificate into ``-o DIR`` as it finishes, print the summary; returns the worst exit status."""
    out = output_dir(args.output)
    debug = bool(getattr(args, "debug", False))
    tasks, rows = [], {}
    for j in jobs:
        j.args.output, j.args.json = None, True  # the batch writes; no per-job spinner
        path = out / j.name if out else None
        resume = None
        if path is not None and path.exists():
            if args.resume:
                resume = str(path)
            elif not args.force:
                rows[j.index] = {"cert": None, "exit": EXIT_BAD_INPUT, "resumed": False, "seconds": 0.0,
                                 "error": f"{path}: file exists; use --force to overwrite it or --resume to keep it"}
                continue
        tasks.append((j, partial(certify_task, certify_one, j.args, resume, args.timeout, debug)))

    reported = [0]  # jobs reported so far (rows also holds the refused ones before they are reported)

    def finished(j: Job, r: dict) -> dict:
        path = out / j.name if out else None
        if path is not None and r["cert"] is not None and not r["resumed"]:
            write_certificate(r["cert"], path, force=bool(args.force or args.resume), force_name="--force")
        row = rows[j.index] = _certify_row(j, r, path)  # counted before a Ctrl-C can arrive during the report
        reported[0] += 1
        what = " ".join(x for x in (j.label, _params_text(j.grid)) if x)
        came = ", from a certify artefact" if row["from_artefact"] else ""
        _report(args, row, f"[{reported[0]}/{len(jobs)}] {what}: {row['status']} ({r['seconds']:.2f} s{came})")
        return row

    for j in jobs:
        if j.index in rows:
            rows[j.index] = finished(j, rows[j.index])
    return _run(args, jobs, tasks, rows, finished, _print_certify_table,
                "their certificates are kept; rerun with --resume to skip them")


def _run(args, jobs, tasks, rows, finished, table, rerun: str) -> int:
    """Run a batch's ``tasks`` on the cluster the options ask for, report each finished job, print
    the summary ``table``; on Ctrl-C the jobs finished so far are summarised and the last line
    says what a rerun does (``rerun``), exit 130."""
    interrupted = False
    try:
        with contextlib.ExitStack() as stack:
            cluster = Cluster(workers=args.workers, scheduler=args.scheduler,
                              connect_timeout_s=getattr(args, "connect_timeout", CONNECT_TIMEOUT_S))
            with progress(_cluster_text(args)):
                stack.enter_context(cluster)
            for j, r in run_jobs(cluster, tasks):
                rows[j.index] = finished(j, r)
    except KeyboardInterrupt:
        interrupted = True
    done = [rows[j.index] for j in jobs if j.index in rows]
    worst = max((r["exit"] for r in done), default=0)
    if args.json:
        print(json.dumps({"summary": {"jobs": len(jobs), "finished": len(done), "interrupted": interrupted,
                                      "exit": 130 if interrupted else worst}}))
    else:
        table(done)
    if interrupted:
        print(f"softhard: interrupted: {len(done)} of {len(jobs)} jobs finished ({rerun})", file=sys.stderr)
        return 130
    return worst


def _cluster_text(args: argparse.Namespace) -> str:
    """The progress line while a batch's cluster starts or is reached."""
    if args.scheduler is not None:
        return (f"connecting to the Dask scheduler at {args.scheduler} (giving up after "
                f"{getattr(args, 'connect_timeout', CONNECT_TIMEOUT_S):g} s)")
    if args.workers is not None:
        return f"starting a local Dask cluster of {args.workers or os.cpu_count() or 1} worker process(es)"
    return "starting"


def _from_artefact(cert: dict | None) -> bool:
    """Whether ``cert`` came from a certify artefact (its ``times`` has ``artefact_s``:
    :mod:`softhard.solver.certify_memo`)."""
    return isinstance(cert, dict) and isinstance(cert.get("times"), dict) and "artefact_s" in cert["times"]


def _certify_row(j: Job, r: dict, path: Path | None) -> dict:
    cert = r["cert"]
    if cert is None:
        status = "error"
    else:
        status = cert["status"] + ("" if cert.get("numeric") is None or cert["numeric"]["ok"]
                                   else ", numeric FAILED")
    return {"job": j.index, "input": j.label, "params": {k: str(v) for k, v in j.grid.items()},
            "kind": cert["kind"] if cert else None, "status": status, "exit": r["exit"],
            "inv_tau": cert.get("construction", {}).get("inv_tau") if cert else None,
            "inv_tau_decimal": _certified(cert) if cert else None, "seconds": round(r["seconds"], 3),
            "resumed": r["resumed"], "from_artefact": _from_artefact(cert), "certificate": str(path) if path is not None and cert is not None else None,
            "error": r["error"]}


def _print_certify_table(rows: list[dict]) -> None:
    t = Table(show_header=True, header_style="bold", title="certify: one row per job",
              caption="1/tau: the certified inverse temperature (construction.inv_tau), or under a schedule "
                      "1/tau(n) (construction.schedule.inv_tau_of_n); exit: the job's status "
                      "(0 proved, 1 refuted/unknown/numeric failure, 2 bad input, 3 internal error)",
              caption_justify="left")
    for col in ("#", "input", "parameters", "status", "exit", "1/tau", "time s", "certificate / error"):
        t.add_column(col, overflow="fold")
    for r in rows:
        col = {0: "green", 1: "yellow"}.get(r["exit"], "red")
        st = _cell(f"{r['status']}" + (" (resumed)" if r["resumed"] else "")
                   + (" (certify artefact)" if r.get("from_artefact") else ""))
        t.add_row(str(r["job"]), _cell(r["input"]), _cell(" ".join(f"{k}={v}" for k, v in r["params"].items())),
                  f"[{col}]{st}[/{col}]", str(r["exit"]), r["inv_tau_decimal"] or "-", f"{r['seconds']:.2f}",
                  _cell(r["certificate"] or r["error"] or "-"))
    stdout_console().print(t)


def _report(args: argparse.Namespace, row: dict, line: str) -> None:
    """A finished job: its row as one JSON line on stdout (``--json``), else ``line`` on stderr,
    one line whatever the input holds (control characters escaped, never wrapped)."""
    if args.json:
        print(json.dumps(row), flush=True)
    else:
        stderr_console().print(one_line(line), highlight=False, markup=False, soft_wrap=True)


def _cell(text) -> str:
    """``text`` (an input, a file name, an error, a field read from a certificate: the user's
    characters or any JSON value) as one line of a table cell, its brackets not read as rich markup."""
    return escape(one_line(text if isinstance(text, str) else json.dumps(text)))


def run_verify_batch(args: argparse.Namespace, files: list[str]) -> int:
    """Verify every certificate in ``files``; print the summary; returns the worst exit status
    (0 valid, 1 could not be re-checked within the budgets, 2 invalid or unreadable, 3 internal error)."""
    debug = bool(getattr(args, "debug", False))
    jobs = [Job(index=i, args=args, label=f) for i, f in enumerate(files)]
    no_cache = bool(getattr(args, "no_cache", False))
    tasks = [(j, partial(verify_task, j.label, args.timeout, args.budget, debug, no_cache)) for j in jobs]
    rows: dict[int, dict] = {}

    def finished(j: Job, r: dict) -> dict:
        rep = r["report"]
        row = {"job": j.index, "certificate": j.label, "kind": r["kind"], "valid": bool(rep and rep["valid"]),
               "status": rep["status"] if rep else None, "exit": r["exit"], "seconds": round(r["seconds"], 3),
               "problems": rep["problems"] if rep else None, "error": r["error"]}
        rows[j.index] = row  # counted before a Ctrl-C can arrive during the report
        _report(args, row, f"[{len(rows)}/{len(jobs)}] {j.label}: {_verdict(row)} "
                           f"({r['seconds']:.2f} s)")
        return row

    return _run(args, jobs, tasks, rows, finished, _print_verify_table,
                "verify writes nothing and has no --resume: rerun it on the certificates not yet checked")


def _verdict(row: dict) -> str:
    """A verify row's verdict: valid (exit 0), could not re-check (exit 1: a budget stopped the
    replay, nothing found edited), INVALID (2) or an error (3)."""
    return "valid" if row["valid"] else ("could not re-check" if row["exit"] == 1 else "INVALID")


def _print_verify_table(rows: list[dict]) -> None:
    t = Table(show_header=True, header_style="bold", title="verify: one row per certificate",
              caption="status: what the certificate records (valid whatever it is); verdict: what the replay found",
              caption_justify="left")
    for col in ("#", "certificate", "kind", "status", "verdict", "time s", "first problem"):
        t.add_column(col, overflow="fold")
    for r in rows:
        v = {"valid": "[green]valid[/green]", "could not re-check": "[yellow]could not re-check[/yellow]"}.get(
            _verdict(r), "[red]INVALID[/red]")
        t.add_row(str(r["job"]), _cell(r["certificate"]), _cell(r["kind"] or "-"), _cell(r["status"] or "-"), v,
                  f"{r['seconds']:.2f}", _cell(r["error"] or "-"))
    stdout_console().print(t)
