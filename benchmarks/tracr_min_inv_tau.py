"""The smallest inverse temperature at which a Tracr model, *run*, stays exact on every word up to
max_seq_len — the measured counterpart of answer 2 of ``softhard certify --tracr`` (docs/tracr.md,
"Composition per context").

    python benchmarks/tracr_min_inv_tau.py MODEL TOL

MODEL: an export (NAME, NAME.json or NAME.npz).  TOL > 0: the largest |soft − hard| over the output
coordinates of every position of every word must stay below TOL (the certificate's ε);
TOL = 0 (categorical outputs): the decoded (argmax) outputs must equal the hard ones.  Bisection
(40 halvings of [0.5, 60]) over float64 soft runs against the exact hard run; bounded by the
exhaustive limit of the analysis (every word up to max_seq_len).  A numeric run proves nothing: it
is what the certified value is compared with.
"""

from __future__ import annotations

import sys

import numpy as np

from softhard.constructions.engine import forward
from softhard.constructions.exact import ExactEngine, to_float
from softhard.constructions.gaps import all_tokens, count_words
from softhard.constructions.tracr_gaps import EXHAUSTIVE_LIMIT
from softhard.constructions.tracr_load import load_tracr


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[3].strip(), file=sys.stderr)
        return 2
    tm = load_tracr(argv[0])
    tol = float(argv[1])
    hm = tm.hard_model()
    tr = hm.transformer()
    o = hm.outputs[0]
    cols = [tr.labels.index(hm.labels[c]) for c in o.coords]
    k = len(hm.alphabet)
    if count_words(k, tm.max_seq_len) > EXHAUSTIVE_LIMIT:
        print(f"more than {EXHAUSTIVE_LIMIT} words", file=sys.stderr)
        return 2
    eng = ExactEngine(hm)
    data = [(tok, to_float(eng.run(tok).x)[:, 1:, :][..., o.coords])
            for L in range(1, tm.max_seq_len + 1) for tok in all_tokens(k, L)]

    def ok(lam: float) -> bool:
        for tok, hard in data:
            soft = forward(tr, tok, mode="soft", inv_tau=lam).x[:, 1:, cols]
            if tol == 0 and o.type == "categorical":
                if np.any(np.argmax(soft, -1) != np.argmax(hard, -1)):
                    return False
            elif np.max(np.abs(soft - hard)) >= tol:
                return False
        return True

    lo, hi = 0.5, 60.0
    if not ok(hi):
        print("not exact even at 1/tau = 60")
        return 1
    for _ in range(40):
        mid = (lo + hi) / 2
        if ok(mid):
            hi = mid
        else:
            lo = mid
    print(f"measured minimum 1/tau {hi!r} (exact at it, not at {lo!r})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
