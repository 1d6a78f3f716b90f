"""The padded batches of tests/test_transformer_languages.py against one call per length (ISSUE 16, lang14).

For every example language and regime, runs the test's ``_soft_verdicts`` on the test's words twice:
as the test does (random words of up to ``PAD_LENGTHS`` consecutive lengths padded into one
``forward_pair`` call where ``_padding_inert`` holds) and with padding off (one call per length, as
before lang14).  Every word's ``(soft verdict, hard verdict, soft value)`` must be equal, the soft
value bit for bit.  Prints one line per configuration and exits 1 on any difference:

    python benchmarks/lang_padding_identity.py [--only NAME ...]
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import test_transformer_languages as ttl  # noqa: E402
from languages import EXAMPLES, LANGUAGES  # noqa: E402

from softhard.constructions.parse import load_spec  # noqa: E402
from softhard.solver.pipeline import build  # noqa: E402


def compare(name: str, regime: str) -> tuple[bool, int, int]:
    """``(padded, words, differing words)`` for one configuration."""
    c = build(load_spec(str(EXAMPLES / f"{name}.ltl")), regime, eta=ttl.ETA)
    words, _ = ttl._words_and_members(name)
    padded = ttl._padding_inert(c)
    new, _ = ttl._soft_verdicts(c, words)
    inert = ttl._padding_inert
    ttl._padding_inert = lambda c: False
    try:
        old, _ = ttl._soft_verdicts(c, words)
    finally:
        ttl._padding_inert = inert
    assert new.keys() == old.keys()
    bits = lambda v: np.float64(v[2]).tobytes()  # noqa: E731
    diff = sum(1 for w in old if old[w][:2] != new[w][:2] or bits(old[w]) != bits(new[w]))
    return padded, len(old), diff


def main(argv: list[str]) -> int:
    only = set(argv[1:]) if argv[:1] == ["--only"] else None
    bad = 0
    for name in sorted(LANGUAGES):
        if only is not None and name not in only:
            continue
        for regime in ("T", "U"):
            padded, n, diff = compare(name, regime)
            bad += diff
            print(f"{name}-{regime}: padded={padded} words={n} differing={diff}", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
