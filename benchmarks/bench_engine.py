"""Engine benchmarks (ISSUE 7.3): one process, ratios rather than absolute times.

(a) One attention head at n = 1024, 4096, 16384: the structured O(n) path, the engine's dense
    path, and a plain NumPy dense softmax (``Q Kᵀ``, mask, row max, ``exp``, ``P V``: what one
    writes without the engine) on the same inputs.  The head is the ``!a S b`` selection of the
    10-subformula construction used by ``confirm_1e6.py`` (regime T, strict past mask), on the
    residual stream that reaches it for a uniformly random word, at two temperatures: the
    required ``1/τ(n)`` of the construction (most off-argmax weights underflow) and ``1/τ = 1``
    (none do).  Reported: baseline/structured (speed-up of the O(n) path) and dense/baseline.
(b) Time and peak memory against n = 10^3 … 10^6 of (i) that head on the structured path and
    (ii) a whole observation pass (``forward_pair``: hard and soft model together, all 4 heads and
    9 MLPs) of the construction, with the least-squares exponent of time ∝ n^p fitted over
    n ≥ 10^4 (below that, fixed per-call costs dominate) and over the whole range.

    python benchmarks/bench_engine.py                       # writes benchmarks/results.json
    python benchmarks/bench_engine.py --quick               # smaller sizes, for a smoke test

Timings are the minimum over repeats (``--repeats``); peak memory is the tracemalloc peak of one
call (NumPy reports its array allocations to tracemalloc), measured in a separate call.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

from softhard.bounds.derive import derive, required_inv_tau
from softhard.constructions.compile import compile_formula
from softhard.constructions.engine import forward, forward_pair, run_head
from softhard.constructions.engine import keep_freed_memory
from softhard.constructions.parse import parse_formula
from softhard.constructions.weights import build_transformer

FORMULA = "(a U b) | ((!a S b) & H (a | Y b))"
HEAD = "!a S b"


def setup():
    g = compile_formula(parse_formula(FORMULA), ["a", "b"])
    m = build_transformer(g, "T")
    return m, derive(g, "T")


def inv_tau_required(bounds, n: int) -> float:
    return float(max(required_inv_tau(nb.leak, n_value=n) for nb in bounds.values()))


def head_input(m, n: int, seed: int = 0):
    """The residual stream entering the block of ``HEAD`` for one random word, and the head."""
    tok = np.random.default_rng(seed).integers(1, 3, size=(1, n))
    for li, blk in enumerate(m.blocks):
        for h in blk.heads:
            if h.name == HEAD:
                tr = forward(m, tok, mode="hard", keep_residuals=True)
                return tr.residuals[li], h, tok  # (B, N, d) view of the engine's coordinate-major array
    raise SystemExit(f"no head {HEAD!r}")


def plain_numpy_softmax(x: np.ndarray, h, inv_tau: float) -> np.ndarray:
    """The baseline: dense masked softmax attention for batch row 0 of a C-contiguous ``(B, N, d)``
    array, written plainly."""
    Q, K, V = x[0] @ h.W_Q, x[0] @ h.W_K, x[0] @ h.W_V
    N = Q.shape[0]
    mask = np.tri(N, N, k=-1, dtype=bool)  # strict past: j < i
    mask[:, 0] = True  # BOS always attendable
    mask[0, 1:] = False
    S = Q @ K.T
    S *= inv_tau
    S[~mask] = -np.inf
    S -= S.max(axis=1, keepdims=True)
    np.exp(S, out=S)
    return (S @ V) / S.sum(axis=1, keepdims=True)


def best_time(fn, repeats: int, cpu: list | None = None) -> float:
    """Minimum wall time over ``repeats`` calls (the minimum process CPU time is appended to ``cpu``)."""
    ts, cs = [], []
    for _ in range(repeats):
        gc.collect()
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        ts.append(time.perf_counter() - t0)
        cs.append(time.process_time() - c0)
    if cpu is not None:
        cpu.append(min(cs))
    return min(ts)


def peak_mib(fn) -> float:
    gc.collect()
    tracemalloc.start()
    tracemalloc.reset_peak()
    fn()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak / 2**20


def fit_exponent(ns, ts) -> float:
    p, _ = np.polyfit(np.log(np.asarray(ns, float)), np.log(np.asarray(ts, float)), 1)
    return float(p)


def _first(path: Path, prefix: str, parse, default):
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return default
    return next((parse(ln) for ln in lines if ln.startswith(prefix)), default)


def machine() -> dict:
    model = _first(Path("/proc/cpuinfo"), "model name", lambda ln: ln.split(":", 1)[1].strip(), "?")
    mem = _first(Path("/proc/meminfo"), "MemTotal", lambda ln: int(ln.split()[1]), 0)
    return {"cpu": model, "nproc": os.cpu_count(), "ram_gib": round(mem / 2**20, 1),
            "python": platform.python_version(), "numpy": np.__version__, "load_avg_at_start": os.getloadavg()}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="smaller sizes (smoke test)")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--out", default=str(Path(__file__).with_name("results.json")))
    ap.add_argument("--no-progress", action="store_true")
    args = ap.parse_args(argv)
    keep_freed_memory()  # reuse freed arrays instead of faulting in fresh pages (see constructions/engine.py)
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
    from rich.table import Table

    m, bounds = setup()
    a_ns = [256, 1024] if args.quick else [1024, 4096, 16384]
    b_ns = [1000, 3000, 10**4, 3 * 10**4] if args.quick else [1000, 3000, 10**4, 3 * 10**4, 10**5, 3 * 10**5, 10**6]
    res = {"machine": machine(), "formula": FORMULA, "head": HEAD, "a": [], "b": []}
    steps = len(a_ns) * 2 + len(b_ns)
    with Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                  TimeElapsedColumn(), console=Console(stderr=True), disable=args.no_progress) as prog:
        task = prog.add_task("benchmarks", total=steps)
        # (a) structured vs dense vs plain NumPy
        for n in a_ns:
            x, h, _ = head_input(m, n)
            xb = np.ascontiguousarray(x)  # the baseline gets an ordinary (B, N, d) array
            for label, it in (("required", inv_tau_required(bounds, n)), ("1", 1.0)):
                prog.update(task, description=f"(a) n={n} 1/tau={label}")
                reps = args.repeats if n <= 4096 else max(2, args.repeats // 2)
                t_s = best_time(lambda h=h, x=x, it=it: run_head(h, x, soft=True, inv_tau=it, path="structured"), reps)
                t_d = best_time(lambda h=h, x=x, it=it: run_head(h, x, soft=True, inv_tau=it, path="dense"), reps)
                t_b = best_time(lambda h=h, xb=xb, it=it: plain_numpy_softmax(xb, h, it), reps)
                # the three agree (the baseline has no hard output or leak; compare soft outputs)
                so = run_head(h, x, soft=True, inv_tau=it, path="structured").soft[0]
                sd = run_head(h, x, soft=True, inv_tau=it, path="dense").soft[0]
                sb = plain_numpy_softmax(xb, h, it)
                res["a"].append({"n": n, "inv_tau": it, "inv_tau_label": label, "structured_s": t_s, "dense_s": t_d,
                                 "baseline_s": t_b, "speedup_structured_vs_baseline": t_b / t_s,
                                 "dense_over_baseline": t_d / t_b, "speedup_structured_vs_dense": t_d / t_s,
                                 "max_abs_diff_structured_dense": float(np.max(np.abs(so - sd))),
                                 "max_abs_diff_dense_baseline": float(np.max(np.abs(sd - sb)))})
                prog.update(task, advance=1)
        # (b) scaling of the O(n) path: one head, and a whole observation pass
        for n in b_ns:
            prog.update(task, description=f"(b) n={n:,}")
            x, h, tok = head_input(m, n)
            it = inv_tau_required(bounds, n)
            reps = args.repeats if n <= 10**5 else max(2, args.repeats // 2)
            def fh(h=h, x=x, it=it):
                return run_head(h, x, soft=True, inv_tau=it, path="structured")

            def fp(tok=tok, it=it):
                return forward_pair(m, tok, inv_tau=it)

            fp()
            cpu: list = []
            row = {"n": n, "inv_tau": it, "head_s": best_time(fh, reps, cpu), "pair_s": best_time(fp, reps, cpu),
                   "head_peak_mib": peak_mib(fh), "pair_peak_mib": peak_mib(fp)}
            row["head_cpu_s"], row["pair_cpu_s"] = cpu
            res["b"].append(row)
            prog.update(task, advance=1)
    for key in ("head", "pair", "head_cpu", "pair_cpu"):
        for label, lo in (("n_ge_1e4", 10**4), ("n_ge_1e5", 10**5), ("all", 0)):
            rows = [r for r in res["b"] if r["n"] >= lo]
            res[f"exponent_{key}_{label}"] = (fit_exponent([r["n"] for r in rows], [r[f"{key}_s"] for r in rows])
                                              if len(rows) >= 2 else None)
    a_top = [r for r in res["a"] if r["n"] == max(a_ns)]
    res["targets"] = {
        "speedup_at_max_n_ge_50": {r["inv_tau_label"]: r["speedup_structured_vs_baseline"] for r in a_top},
        "exponent_le_1.1": {k: res[f"exponent_{k}"] for k in ("head_n_ge_1e4", "pair_n_ge_1e4", "head_n_ge_1e5",
                                                              "pair_n_ge_1e5")},
        "dense_within_1.5x_of_baseline": {f"{r['n']}/{r['inv_tau_label']}": r["dense_over_baseline"] for r in res["a"]},
    }
    Path(args.out).write_text(json.dumps(res, indent=2))

    con = Console(width=160)
    t = Table(title="(a) one head: structured vs dense vs plain NumPy (ratios of min times)")
    for col in ("n", "1/tau", "baseline/structured", "dense/baseline", "dense/structured", "max |struct - dense|",
                "max |dense - baseline|"):
        t.add_column(col)
    for r in res["a"]:
        t.add_row(str(r["n"]), f"{r['inv_tau_label']} ({r['inv_tau']:.4g})", f"{r['speedup_structured_vs_baseline']:.1f}x",
                  f"{r['dense_over_baseline']:.2f}", f"{r['speedup_structured_vs_dense']:.1f}x",
                  f"{r['max_abs_diff_structured_dense']:.2e}", f"{r['max_abs_diff_dense_baseline']:.2e}")
    con.print(t)
    t = Table(title="(b) scaling of the O(n) path (B = 1)")
    for col in ("n", "head ms (CPU)", "head peak MiB", "forward_pair ms (CPU)", "forward_pair peak MiB",
                "pair ns/position"):
        t.add_column(col)
    for r in res["b"]:
        t.add_row(f"{r['n']:,}", f"{r['head_s'] * 1e3:.2f} ({r['head_cpu_s'] * 1e3:.2f})", f"{r['head_peak_mib']:.1f}",
                  f"{r['pair_s'] * 1e3:.1f} ({r['pair_cpu_s'] * 1e3:.1f})", f"{r['pair_peak_mib']:.1f}",
                  f"{r['pair_s'] / r['n'] * 1e9:.0f}")
    con.print(t)
    def fmt(v):
        return "n/a" if v is None else f"{v:.3f}"

    for label, text in (("n_ge_1e4", "n >= 1e4"), ("n_ge_1e5", "n >= 1e5"), ("all", "all n")):
        con.print(f"fitted exponent ({text}): head {fmt(res[f'exponent_head_{label}'])} "
                  f"(CPU {fmt(res[f'exponent_head_cpu_{label}'])}), forward_pair {fmt(res[f'exponent_pair_{label}'])} "
                  f"(CPU {fmt(res[f'exponent_pair_cpu_{label}'])})")
    con.print(f"machine: {res['machine']}")
    con.print(f"results written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
