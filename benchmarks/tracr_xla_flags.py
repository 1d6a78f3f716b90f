"""The CPU seconds of compiling and exporting Tracr's 13 library programs (tests/tracr_lib.py, as
tests/solver/test_tracr_lib.py's fixture does: Tracr's compiler with its haiku init, then the
export's runs of the compiled model on its stored examples), and a SHA-256 of everything the export and the model give, under
the ``XLA_FLAGS`` of the environment; prints one JSON line.  Two runs under different flags whose
``sha256`` agree produced bit-identical exports (metadata with the compiled model's outputs on every
stored example, float64 arrays) and bit-identical float32 model outputs (unembedded output,
residuals, attention logits, layer outputs of one word per length), i.e. the flags changed only
XLA's compile time.

    XLA_FLAGS="--xla_backend_optimization_level=0 --xla_llvm_disable_expensive_passes=true" \\
        python benchmarks/tracr_xla_flags.py
    XLA_FLAGS="... --xla_cpu_use_fusion_emitters=false" python benchmarks/tracr_xla_flags.py

Needs the ``[tracr]`` extra.  Run it without ``JAX_COMPILATION_CACHE_DIR`` (a cold compile, as CI's).
Measured 2026-12-02 (2 shared cores, load ~4, the two runs concurrent): 107.7 s CPU with the suite's
flags (tests/conftest.py), 77.0 s with ``--xla_cpu_use_fusion_emitters=false`` added (XLA's older
CPU emitters: each op-by-op compile ~19 ms instead of ~40 ms), the same sha256 (154969f8…).  Since
the export records the jitted forward pass's outputs (``compiled_runner``, ISSUE 16 eleventh pass) the
hash differs from 154969f8… (pair_balance and frac_prevs: leaks below 4e-18 moved by ≤ 19 float32 ulps);
compare two runs of the same revision.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import resource
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from tracr_lib import LIB  # noqa: E402 — tests/ on sys.path first

from softhard.constructions.tracr_compile import compile_program, parse_vocab  # noqa: E402


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main() -> int:
    import jax
    import numpy as np

    t0 = _cpu()
    h = hashlib.sha256()
    for name, (spec, vocab_text, n, args) in LIB.items():
        vocab = parse_vocab(vocab_text)
        meta, arrays, model, _ = compile_program(spec, vocab, n, args, name=name)
        h.update(json.dumps(meta, sort_keys=True).encode())
        for k in sorted(arrays):
            h.update(k.encode() + np.ascontiguousarray(arrays[k]).tobytes())
        for L in range(1, n + 1):
            o = model.apply(["BOS"] + list(next(itertools.product(vocab, repeat=L))))
            for x in jax.tree_util.tree_leaves((o.unembedded, o.residuals, o.attn_logits, o.layer_outputs)):
                h.update(np.asarray(x).tobytes())
    print(json.dumps({"xla_flags": os.environ.get("XLA_FLAGS", ""), "cpu_s": round(_cpu() - t0, 2),
                      "sha256": h.hexdigest()}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
