"""CPU per stage of one certify (regime T, n_max = 10^6, eta = 1/4, --find-tau) or one verify, in a
fresh process, as the command line runs them (ISSUE 16, benchmarks/README.md "third pass").

    python benchmarks/certify_stages.py certify examples/tomita4.ltl
    python benchmarks/certify_stages.py verify t4.json

Prints one JSON line: ``time.process_time`` of this process around the imports (the certify and
verify handlers' modules), each stage of :func:`softhard.solver.certificate.certify` (build, search,
numeric confirmation, assemble + envelope) or the whole verify, then the solver child's CPU (the Z3
process, from ``RUSAGE_CHILDREN`` once it is stopped) and the process total.  Warm derivation cache:
run it once before reading the numbers.  Bounded: one certify or verify.
"""

import json
import resource
import sys
import time

T = time.process_time
t0 = T()
from softhard.solver.kinds import verify_certificate  # noqa: E402
from softhard.solver.replay_memo import deferred_dps  # noqa: E402
from softhard.solver.z3proc import _stop_all  # noqa: E402

if sys.argv[1:2] == ["certify"]:  # what the certify command loads (a verify loads only its own handler's modules)
    import mpmath  # noqa: E402  (the driver loads mpmath for every command but one certificate's verify)

    from softhard.bounds.params import Params  # noqa: E402
    from softhard.constructions.parse import load_spec  # noqa: E402
    from softhard.solver import certificate as C  # noqa: E402
    from softhard.solver.check import ProofCache  # noqa: E402
    from softhard.solver.cli.handlers import certify as _certify_handler  # noqa: E402,F401  (as the CLI loads it)
    from softhard.solver.pipeline import build_formula  # noqa: E402
else:
    from softhard.solver.cli.handlers import verify as _verify_handler  # noqa: E402,F401  (as the CLI loads it)


def main() -> None:
    out = {"imports": T() - t0}
    mode, path = sys.argv[1], sys.argv[2]
    if mode not in ("certify", "verify"):
        raise SystemExit("usage: certify_stages.py certify FORMULA.ltl | verify CERT.json")
    # the driver's 30 digits: entered at once for certify, deferred to a live replay for verify (as
    # softhard verify of one certificate: a verify served by a replay artefact loads no mpmath)
    with (mpmath.workdps(30) if mode == "certify" else deferred_dps(30)):
        if mode == "certify":
            t = T()
            c = build_formula(load_spec(path), Params(regime="T", eta="1/4"))
            out["build"] = T() - t
            t = T()
            proofs = ProofCache()
            found = C.search_values(c, 1, 10**6, False, 20.0, ("tau",), proofs)
            inv, _ = C.searched_params(c, found, 1, 10**6, False, ("tau",))
            out["search"] = T() - t
            t = T()
            num = C.numeric_section(c, 10**6, inv, {})
            out["numeric"] = T() - t
            t = T()
            cert = C.assemble(c, inv_tau=inv, n_lo=1, n_max=10**6, all_n=False, timeout_s=20, proofs=proofs,
                              found=found, numeric=num)
            C.envelope(cert, {}, timeout_s=20.0)
            out["assemble+envelope"] = T() - t
        else:
            with open(path) as f:
                cert = json.load(f)
            t = T()
            rep = verify_certificate(cert)
            out["verify"] = T() - t
            if not rep.ok:
                raise SystemExit(f"not valid: {rep.problems[:3]}")
    _stop_all()
    ch = resource.getrusage(resource.RUSAGE_CHILDREN)
    out["solver child"] = ch.ru_utime + ch.ru_stime
    out["process total"] = T()
    print(json.dumps({k: round(v, 3) for k, v in out.items()}))


if __name__ == "__main__":
    main()
