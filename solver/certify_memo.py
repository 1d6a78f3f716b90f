"""Certify artefacts: a ``softhard certify`` job run again from a recorded run (ISSUE 16;
docs/certificates.md, "Certify artefacts").  No SymPy, NumPy or networkx: a certify that finds its
artefact loads none of them.

A certify job is a deterministic function C(job, answers) of its *job* — the kind, the bytes of
every input file, every command-line option that reaches the certificate (all of them but the
output-only ones, :data:`softhard.solver.cli.handlers.jobs.PRESENTATION`), the installed code (:func:`softhard.bounds.store.fingerprint`),
the libraries it computes with (:func:`library_versions`), the machine the numeric confirmation ran
on (:func:`machine`: NumPy's float64 results are a function of the CPU's instruction set and the
thread settings) and mpmath's working precision — and of the answers of its *oracle calls*: every
Z3 query (a time limit makes its answer depend on the wall clock) and every ball-arithmetic check,
in order (:mod:`softhard.solver.oracle`).  Everything else a certificate holds — the search, the
claims, the numeric confirmation's results — is computed from those; only the envelope (``created``,
``times``, ``hashes``) is not.

A live certify of a job whose certificate no claim left to a budget (a query's time limit, a
claim's box or time budget: those depend on the wall clock beyond the recorded answers) records an
*artefact* in the derivation cache (:mod:`softhard.bounds.store`), keyed by the job: the oracle
transcript, the certificate and the summary's extra values (:func:`record`).  A later certify of
the same job re-runs **every** oracle call live, in order
(:func:`softhard.solver.replay_memo.rerun_transcript`: Z3 on the recorded query text in the solver
child with its recorded limit, arb on the recorded tree) and only when each answers as recorded,
and every query the certificate states is among them, takes the recorded certificate with a new
envelope: ``created`` now, ``times`` this run's (``artefact_s``: the re-run oracle calls,
``total_s``), the hashes recomputed (:func:`finish`).  Its measured fields — the numeric section,
each claim's and query's seconds, the search's empirical runs — are the recording run's, which
``times.artefact_s`` marks.  A different answer or a malformed artefact gives ``None``: the caller
certifies live.  Trust is the derivation cache's (an entry rewritten by somebody and still
well-formed is believed); ``certify --no-cache``, ``SOFTHARD_CACHE=0`` and
``SOFTHARD_CERTIFY_ARTEFACTS=0`` read and write none.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import hashlib
import json
import os
import platform
import time
from pathlib import Path

from ..bounds import store
from ..installed import version as installed_version
from ..constructions.paths import is_file
from .certjson import compute_hashes
from .model_inputs import verify_exhaustive_limit
from .replay import budget_hit, recorded_schema_valid, remember_new_certificate
from .records import Record
from .replay_memo import library_versions, mpmath_prec, rerun_transcript

#: the artefact entry's kind in the derivation cache
CERTIFY_ARTEFACT = "certify-artefact"
#: the artefact format (a change of its layout changes every key)
FORMAT = 1
#: libraries beyond :func:`softhard.solver.replay_memo.library_versions` a certify computes with
#: (numba: the fused selection-head kernel of the numeric confirmation, when installed)
MORE_LIBRARIES = ("numba",)
#: prefixes of environment variables that can change a certify's numbers (softhard's switches, the
#: numeric libraries' threads and code paths); ``SOFTHARD_CACHE_DIR`` only says where the cache is
ENV_PREFIXES = ("SOFTHARD_", "NUMBA_", "NPY_", "OMP_", "OPENBLAS_", "MKL_")
ENV_IGNORED = frozenset({"SOFTHARD_CACHE_DIR"})
#: the environment variable that turns certify artefacts off ("0") while the derivation cache stays on
SWITCH = "SOFTHARD_CERTIFY_ARTEFACTS"


def enabled() -> bool:
    """Whether certify artefacts are read and written: the derivation cache's disk layer is on
    (:func:`softhard.bounds.store.disk_cache_enabled`: off under ``--no-cache`` and
    ``SOFTHARD_CACHE=0``) and ``$SOFTHARD_CERTIFY_ARTEFACTS`` is not ``0`` (the test suite sets it:
    a test that replaces a stage must meet a live certify)."""
    return store.disk_cache_enabled() and os.environ.get(SWITCH, "1") != "0"


def machine() -> list:
    """``[architecture, system, SHA-256 of the CPU's feature line, core count]``: what NumPy's
    float64 results (SIMD code paths, BLAS threading) may depend on besides the libraries' versions.
    The feature line is ``/proc/cpuinfo``'s first ``flags`` (x86) or ``Features`` (ARM) line, ``""``
    where there is none."""
    flags = ""
    with contextlib.suppress(OSError), open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:  # (none: "")
        for line in f:
            if line.startswith(("flags", "Features")):
                flags = hashlib.sha256(line.encode()).hexdigest()
                break
    return [platform.machine(), platform.system(), flags, os.cpu_count()]


def environment() -> dict[str, str]:
    """The environment variables of :data:`ENV_PREFIXES` (but :data:`ENV_IGNORED`), sorted."""
    return {k: v for k, v in sorted(os.environ.items()) if k.startswith(ENV_PREFIXES) and k not in ENV_IGNORED}


def _version(dist: str) -> str:
    v = installed_version(dist)
    return "missing" if v is None else v


def _digest(path: Path) -> list:
    """``[path as given, SHA-256 of its bytes]``, or ``[path, None]`` for a path that is not a
    readable file (the live certify then reports it)."""
    try:
        return [str(path), hashlib.sha256(path.read_bytes()).hexdigest() if is_file(path) else None]
    except OSError:
        return [str(path), None]


def source_files(kind: str, source: str | None) -> list[Path]:
    """The files a certify of ``kind`` may read for the source argument ``source``: a formula's
    argument as a path and the same with ``.ltl`` appended (:func:`softhard.constructions.parse.load_spec`
    reads ``NAME.ltl`` for a bare ``NAME``, and an inline formula becomes a file's name once that
    file exists: each digest is ``None`` while the file is absent); a model file and the ``.npz``
    its ``arrays`` field names, relative to it; a Tracr export's ``NAME.json`` and ``NAME.npz``;
    ``[]`` for the embedded example."""
    if source is None:
        return []
    p = Path(source)
    if kind == "tracr":
        base = p.with_suffix("") if p.suffix in (".json", ".npz") else p
        return [p, base.with_name(base.name + ".json"), base.with_name(base.name + ".npz")]
    if kind == "model":
        out = [p]
        # (an unreadable, non-JSON or deeply nested file: the live certify says so)
        with contextlib.suppress(OSError, ValueError, RecursionError):
            doc = json.loads(p.read_bytes())
            if isinstance(doc, dict) and isinstance(doc.get("arrays"), str):
                out.append(p.parent / doc["arrays"])
        return out
    return [p, Path(source + ".ltl")]


def _plain(value):
    """``value`` as JSON (a Fraction or any other non-JSON option value as ``[type, str]``)."""
    return json.loads(json.dumps(value, sort_keys=True, default=lambda o: [type(o).__name__, str(o)]))


def job_inputs(kind: str, options: dict, source: str | None) -> list:
    """The job (module docstring), JSON-able: the kind, the options that reach the certificate
    (``options``: argparse dest -> value, the caller leaves out the output-only ones) and the digest of
    each file the source argument ``source`` names (:func:`source_files`)."""
    opts = {str(k): _plain(v) for k, v in sorted(options.items())}
    return [kind, opts, [_digest(f) for f in source_files(kind, source)]]


def job_key(kind: str, options: dict, source: str | None) -> str:
    """The artefact key of the job (:func:`job_inputs`) with the libraries' versions, the machine,
    the environment, mpmath's precision and the enumeration limit a model certify refuses beyond
    (:func:`softhard.solver.model_inputs.verify_exhaustive_limit`: it depends on the Dask workers);
    :func:`softhard.bounds.store.entry_key` adds the code's fingerprint."""
    libs = library_versions() + [_version(d) for d in MORE_LIBRARIES]
    return store.entry_key(CERTIFY_ARTEFACT, [FORMAT, job_inputs(kind, options, source), libs, machine(),
                                              environment(), mpmath_prec(), verify_exhaustive_limit()])


class Recorded(Record):
    """A certify artefact that re-ran: ``cert``, the recorded certificate (its recording run's
    envelope); ``extras``, the summary's values (:mod:`softhard.solver.cli.handlers.certify`);
    ``calls``, how many oracle calls were re-run; ``seconds``, how long that took.  (A plain record,
    :mod:`.records`: no dataclasses on a certify hit's path.)"""

    FIELDS = ("cert", "extras", "calls", "seconds")

    def __init__(self, cert: dict, extras: dict | None = None, calls: int = 0, seconds: float = 0.0):
        self.cert = cert
        self.extras = {} if extras is None else extras
        self.calls = calls
        self.seconds = seconds


def lookup(key: str) -> Recorded | None:
    """The certify recorded under ``key`` with every oracle call re-run live and answered as
    recorded, or None (artefacts off, none recorded, a malformed one, a recorded certificate that the
    schema memo does not hold as validated — :func:`softhard.solver.replay.recorded_schema_valid` —,
    a different answer).  Never raises for a malformed artefact."""
    if not enabled():
        return None
    t0 = time.perf_counter()
    art = store.load(key)
    try:
        if not (isinstance(art, dict) and art.get("format") == FORMAT and isinstance(art["cert"], dict)
                and isinstance(art["extras"], dict) and isinstance(art["transcript"], list)):
            return None
        if not recorded_schema_valid(art["cert"]):  # (the live certify that recorded it validated it)
            return None
        if not rerun_transcript(art["cert"], art["transcript"]):
            return None
    except (KeyError, TypeError, ValueError, AttributeError):
        return None
    return Recorded(cert=art["cert"], extras=art["extras"], calls=len(art["transcript"]),
                    seconds=time.perf_counter() - t0)


def recordable(cert: dict) -> bool:
    """Whether a live certify's ``cert`` may be recorded: no claim or search row stopped at a
    budget (:func:`softhard.solver.replay.budget_hit`: the wall clock decided more than the
    recorded answers)."""
    return not budget_hit(cert)


def record(key: str, cert: dict, transcript: list, extras: dict) -> None:
    """Store a live certify (its certificate, oracle transcript and the summary's extra values)
    under ``key`` when the cache's disk layer is on and :func:`recordable`; raises nothing for an
    unwritable cache."""
    if enabled() and recordable(cert):
        store.save(key, {"format": FORMAT, "cert": cert, "transcript": transcript, "extras": extras})


def finish(rec: Recorded, t_start: float) -> dict:
    """The certificate of a re-run artefact: the recorded one with ``created`` now, ``times`` this
    run's (``artefact_s``: the oracle calls' re-run, ``total_s``: since ``t_start``,
    ``time.perf_counter()``) and its hashes recomputed; remembered as schema-valid
    (:func:`softhard.solver.replay.remember_new_certificate`: the recorded certificate was validated
    when it was made, and only these envelope fields differ)."""
    cert = {k: v for k, v in rec.cert.items() if k != "hashes"}
    cert["created"] = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    total = max(0.0, time.perf_counter() - t_start)
    cert["times"] = {"artefact_s": round(rec.seconds, 6), "total_s": round(max(total, rec.seconds), 6)}
    cert["hashes"] = compute_hashes(cert)
    remember_new_certificate(cert, rec.cert)
    return cert
