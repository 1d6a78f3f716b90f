"""Speed-up of an exhaustive gap premise on 2 local Dask workers against 1 (issue 18), and the
largest exhaustive premise certified and verified through Dask.

(a) The exhaustive gap analysis of examples/models/ab_subsequence.json over every word of length
    1..N (:func:`softhard.constructions.gaps.analyse_gaps`, split by
    :mod:`softhard.constructions.gap_tasks`): in this process, on a local cluster of 1 worker
    process and on one of 2, interleaved (--repeat rounds; each round runs the three in turn),
    median wall time per setting; the clusters are started once, before timing.  Every result is
    compared with the in-process one (must be identical).  A parallel speed-up is a wall-time
    ratio; the CPU time of this process is reported too (the workers' CPU is theirs).
(b) With --largest N: ``softhard certify --model ... --n-max N --workers 2`` then ``softhard
    verify ... --workers 2`` as subprocesses, wall time of each.

    python benchmarks/dask_bench.py --n 16 --repeat 3 --json benchmarks/dask_bench.json
    python benchmarks/dask_bench.py --n 14 --repeat 1            # a quick run
    python benchmarks/dask_bench.py --n 16 --largest 19 --json benchmarks/dask_bench.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

from softhard.constructions.gap_tasks import TASK_MAP, exhaustive_tasks
from softhard.constructions.words import count_words
from softhard.constructions.gaps import analyse_gaps, exhaustive_part
from softhard.constructions.modelfile import load_model
from softhard.solver.distributed import Cluster

ROOT = Path(__file__).resolve().parent.parent
MODEL = ROOT / "examples" / "models" / "ab_subsequence.json"


def cpu_timed(hm, task) -> tuple[float, int]:
    """One task's CPU seconds, and the process that ran it."""
    t0 = time.process_time()
    exhaustive_part(hm, task)
    return time.process_time() - t0, os.getpid()


def speedup(n: int, repeat: int) -> dict:
    """Wall time of the whole analysis per setting (medians over interleaved rounds), and the CPU
    time of every task per worker process: the CPU-time speed-up is the 1-worker total over the
    busier of the two workers (what the wall ratio would be on a machine with 2 idle cores)."""
    hm = load_model(str(MODEL)).canonical()
    ref = analyse_gaps(hm, n, method="exhaustive").to_json()
    ref.pop("seconds")
    tasks = exhaustive_tasks(2, n)
    times: dict[str, list[float]] = {"here": [], "1 worker": [], "2 workers": []}
    cpu: dict[str, list[float]] = {"1 worker": [], "2 workers": []}
    with Cluster(workers=1) as c1, Cluster(workers=2) as c2:
        clusters = {"here": None, "1 worker": c1, "2 workers": c2}
        for _ in range(repeat):
            for name, c in clusters.items():
                # each Cluster's __enter__ set the task map; the innermost (c2) is active: set it per setting
                tok = TASK_MAP.set(None if c is None else c.map)
                try:
                    t0 = time.perf_counter()
                    rep = analyse_gaps(hm, n, method="exhaustive").to_json()
                    times[name].append(time.perf_counter() - t0)
                finally:
                    TASK_MAP.reset(tok)
                rep.pop("seconds")
                if rep != ref:
                    raise SystemExit(f"{name}: the result differs from the in-process one")
                if c is not None:
                    per: dict[int, float] = {}
                    for sec, pid in c.map(partial(cpu_timed, hm), tasks):
                        per[pid] = per.get(pid, 0.0) + sec
                    cpu[name].append(max(per.values()) if name == "2 workers" else sum(per.values()))
    med = {k: statistics.median(v) for k, v in times.items()}
    mcpu = {k: statistics.median(v) for k, v in cpu.items()}
    return {"n": n, "words": count_words(2, n), "tasks": len(tasks), "repeat": repeat,
            "wall_s": times, "median_wall_s": med, "wall_speedup_2_vs_1": med["1 worker"] / med["2 workers"],
            "cpu_s_busiest_worker": cpu, "median_cpu_s_busiest_worker": mcpu,
            "cpu_speedup_2_vs_1": mcpu["1 worker"] / mcpu["2 workers"], "identical": True}


def largest(n: int) -> dict:
    cli = [sys.executable, "-m", "softhard.solver.cli"]
    words = count_words(2, n)
    with tempfile.TemporaryDirectory() as td:
        out = Path(td) / "big.json"
        certify = [*cli, "certify", "--model", str(MODEL), "--n-max", str(n), "--epsilon", "1/4", "--find-tau",
                   "--exhaustive-limit", str(words), "--workers", "2", "-o", str(out) + "/"]
        t0 = time.perf_counter()
        p = subprocess.run(certify, capture_output=True, text=True)
        tc = time.perf_counter() - t0
        if p.returncode != 0:
            raise SystemExit(f"certify failed ({p.returncode}):\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
        (cert,) = list(Path(str(out) + "/").glob("*.json"))
        doc = json.loads(cert.read_text())
        verify = [*cli, "verify", str(cert), "--workers", "2", "--json"]
        t0 = time.perf_counter()
        q = subprocess.run(verify, capture_output=True, text=True)
        tv = time.perf_counter() - t0
    return {"n_max": n, "words": words, "premise_method": doc["premises"]["method"],
            "premise_words": doc["premises"]["words"], "status": doc["status"], "certify_wall_s": tc,
            "verify_exit": q.returncode, "verify_wall_s": tv,
            "commands": [" ".join(["softhard", *certify[3:]]).replace(str(ROOT) + "/", ""),
                         "softhard verify CERT --workers 2"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=16, help="longest word of the speed-up premise (2^(n+1)-2 words)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--largest", type=int, default=None, metavar="N", help="also certify and verify at n_max = N")
    ap.add_argument("--json", default=None, help="write the results here")
    args = ap.parse_args()
    res = {"machine": {"nproc": os.cpu_count(), "load_avg_at_start": os.getloadavg()[0]},
           "recorded": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    res["speedup"] = s = speedup(args.n, args.repeat)
    print(f"exhaustive premise, N = {s['n']} ({s['words']} words, {s['tasks']} tasks): median wall "
          + ", ".join(f"{k} {v:.2f} s" for k, v in s["median_wall_s"].items())
          + f"; 2 workers vs 1: wall {s['wall_speedup_2_vs_1']:.2f}x, CPU of the busiest worker "
          + f"{s['cpu_speedup_2_vs_1']:.2f}x; identical results", flush=True)
    if args.largest:
        res["largest"] = g = largest(args.largest)
        print(f"largest: n_max = {g['n_max']}, {g['words']} words ({g['premise_method']}), certify {g['certify_wall_s']:.1f} s "
              f"(status {g['status']}), verify {g['verify_wall_s']:.1f} s (exit {g['verify_exit']})")
    res["load_avg_at_end"] = os.getloadavg()[0]
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=1) + "\n")


if __name__ == "__main__":
    main()
