"""verify's memo of the measured checks (solver/replay.py ``_measured``, ISSUE 16) changes no report:
every edit of three certificates — tomita4 (regime T, n_max 10^4, --find-tau, a numeric section: as
tests/solver/test_replay.py), the model ab_subsequence (n_max 12, ε 1/4, --find-tau: as
tests/solver/test_models_certify.py) and the Tracr export frac_prevs — verified once with the memo
off (``_MEASURED_CACHE = 0``: every verify runs the checks, as before) and once with it on, in one
process each time from an empty replay memo; the reports (valid, problems in order, checked lines,
exit status, undecided, status) must be equal.  The disk layer is off (``verify --no-cache``): every
verify takes the live path, where the memo is.  The edits: tests/tamper.py's ``edits`` (every leaf
changed, every key or item deleted, hashes recomputed, outside the measured fields) and
``section_edits`` of the measured sections (``numeric``, and ``search`` where there is one).

    SOFTHARD_CACHE_DIR=$(mktemp -d) python benchmarks/measured_memo_identity.py [formula model tracr]

Prints per certificate the number of edits, of differing reports (must be 0) and each pass's CPU
seconds; exits 1 on a difference.  Bounded: ~7,000 edits, a few minutes.
"""

import json
import sys
import time
from fractions import Fraction
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from softhard.bounds import store  # noqa: E402
from softhard.constructions.modelfile import load_model  # noqa: E402
from softhard.constructions.parse import load_spec  # noqa: E402
from softhard.constructions.tracr_load import load_tracr  # noqa: E402
from softhard.solver import replay  # noqa: E402
from softhard.solver.certificate import certify  # noqa: E402
from softhard.solver.kinds import verify_certificate  # noqa: E402
from softhard.solver.models import build_model_construction, certify_model  # noqa: E402
from softhard.solver.pipeline import build  # noqa: E402
from softhard.solver.tracr import certify_tracr  # noqa: E402
from tamper import edits, section_edits  # noqa: E402

FAST = {"exhaustive_len": 6, "random_count": 64, "random_n_max": 64, "adversarial_ns": (10, 100)}


def certificate(name: str) -> dict:
    if name == "formula":
        c = build(load_spec(str(ROOT / "examples" / "tomita4.ltl")), "T")
        return json.loads(json.dumps(certify(c, n_max=10**4, find_tau=True, numeric_opts=FAST)))
    if name == "model":
        c, an = build_model_construction(load_model(ROOT / "examples" / "models" / "ab_subsequence.json"), n_max=12,
                                         epsilon=Fraction(1, 4))
        return json.loads(json.dumps(certify_model(c, an, n_max=12, find_tau=True)))
    return json.loads(json.dumps(certify_tracr(load_tracr(ROOT / "examples" / "tracr" / "frac_prevs"))))


def reports(cert: dict, cap: int) -> tuple[list, float]:
    """Every edit's verify report, the live path (the disk layer off: no replay artefact is read or
    recorded, as ``verify --no-cache``), from an empty replay memo, with the measured memo's cap."""
    store.set_disk_cache(False)
    replay.clear_replay_cache()
    replay._MEASURED_CACHE = cap
    out, t = [], time.process_time()
    sections = [s for s in ("numeric", "search") if cert.get(s)]
    every = [edits(cert, cert["kind"])] + [section_edits(cert, s) for s in sections]
    for gen in every:
        for where, what, c2 in gen:
            r = verify_certificate(c2)
            out.append((str(where), what, r.ok, r.problems, r.checked, r.exit_code, r.undecided, r.status))
    r = verify_certificate(cert)
    out.append(("genuine", "", r.ok, r.problems, r.checked, r.exit_code, r.undecided, r.status))
    return out, time.process_time() - t


def main() -> int:
    bad = 0
    for name in sys.argv[1:] or ["formula", "model", "tracr"]:
        cert = certificate(name)
        off, t_off = reports(cert, 0)
        on, t_on = reports(cert, 4096)
        diffs = [(a, b) for a, b in zip(off, on) if a != b] + ([("length", None)] if len(off) != len(on) else [])
        bad += len(diffs)
        print(json.dumps({"certificate": name, "edits": len(off) - 1, "differing": len(diffs),
                          "cpu_off_s": round(t_off, 2), "cpu_on_s": round(t_on, 2)}), flush=True)
        for a, b in diffs[:5]:
            print("  off:", a, "\n  on: ", b)
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
