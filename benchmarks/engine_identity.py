"""Bitwise fingerprint of the engine's outputs on the language tests' words (ISSUE 16, engine11).

For every example language and regime of tests/test_transformer_languages.py (``forward_pair`` at
the test's 1/τ schedule, and ``forward(mode="hard")``) and every configuration of
tests/test_counting_languages.py (``forward`` soft at the certified 1/τ, and hard), hashes the bytes
of every output the engine returns: the final streams ``x`` of both traces and, per head, ``soft``,
``hard``, ``leak`` and ``ties``.  Run before and after an engine change and compare the JSON:

    python benchmarks/engine_identity.py OUT.json [--only NAME ...]

Prints one sha256 per configuration; the change is bit-identical iff every line agrees.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import test_counting_languages as tcl  # noqa: E402
import test_transformer_languages as ttl  # noqa: E402
from counting_oracles import COUNTING_LANGUAGES, length_grid, near_words  # noqa: E402
from languages import EXAMPLES, LANGUAGES  # noqa: E402

from softhard.constructions.engine import forward, forward_pair  # noqa: E402
from softhard.constructions.parse import load_spec  # noqa: E402
from softhard.solver.pipeline import build  # noqa: E402


def _feed(h, tr) -> None:
    for a in (tr.x,):
        h.update(np.ascontiguousarray(a).tobytes())
    for name in sorted(tr.heads):
        t = tr.heads[name]
        for a in (t.soft, t.hard, t.leak, t.ties):
            if a is not None:
                h.update(name.encode())
                h.update(np.ascontiguousarray(a).tobytes())


def _by_len(words):
    out: dict[int, list[str]] = {}
    for w in sorted(words):
        out.setdefault(len(w), []).append(w)
    return out


def regular(name: str, regime: str) -> str:
    c = build(load_spec(str(EXAMPLES / f"{name}.ltl")), regime, eta=ttl.ETA)
    words, _ = ttl._words_and_members(name)
    groups = _by_len(words)
    sched = ttl._inv_tau_schedule(c, groups)
    h = hashlib.sha256()
    for n in sorted(groups):
        tok = c.model.encode([list(w) for w in groups[n]])
        htr, s = forward_pair(c.model, tok, inv_tau=sched[n])
        _feed(h, htr)
        _feed(h, s)
        if n <= 12:
            _feed(h, forward(c.model, tok, mode="hard"))
    return h.hexdigest()


def counting_words(alphabet: str, count: int, lengths: list[int], seed: int) -> list[str]:
    """The uniform words tests/counting_oracles.py drew up to 0d04143 (one ``choice`` per symbol):
    fixed here so that fingerprints from before and after that change compare."""
    import random

    rng = random.Random(seed)
    return ["".join(rng.choice(alphabet) for _ in range(rng.choice(lengths))) for _ in range(count)]


def counting(name: str, regime: str, method) -> str:
    lang = COUNTING_LANGUAGES[name]
    c, inv_tau, _ = tcl.certified(name, regime, method)
    seed = 4000 + [x[0] for x in tcl.CONFIGS].index(name)
    grid = length_grid(tcl.N_MAX)
    words = set(counting_words(lang.alphabet, tcl.N_RANDOM, grid, seed)) | set(near_words(lang, tcl.N_NEAR, grid, seed + 1))
    words = {w for w in words if len(w) <= tcl.N_MAX}
    groups = _by_len(words)
    h = hashlib.sha256()
    for n in sorted(groups):
        tok = c.model.encode([list(w) for w in groups[n]])
        _feed(h, forward(c.model, tok, mode="soft", inv_tau=inv_tau))
        if n <= 12:
            _feed(h, forward(c.model, tok, mode="hard"))
    return h.hexdigest()


def main(argv: list[str]) -> None:
    out, only = argv[0], set(argv[2:]) if len(argv) > 1 and argv[1] == "--only" else None
    res = {}
    for name in sorted(LANGUAGES):
        for regime in ("T", "U"):
            key = f"{name}-{regime}"
            if only is None or name in only:
                res[key] = regular(name, regime)
                print(key, res[key], flush=True)
    for name, regime, method in tcl.CONFIGS:
        key = f"{name}-{regime}-{method}"
        if only is None or name in only:
            res[key] = counting(name, regime, method)
            print(key, res[key], flush=True)
    Path(out).write_text(json.dumps(res, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
