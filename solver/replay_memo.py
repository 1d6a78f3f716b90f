"""Replay artefacts: a verify that re-runs a recorded replay's oracle calls instead of rebuilding
the construction (ISSUE 16; docs/certificates.md, "Replay artefacts").  No SymPy, NumPy or
networkx: a verify that finds its artefact loads none of them.

A kind's replay is a deterministic function R(inputs, answers) of the certificate's inputs (the
kind's ``inputs``: source, parameters, found values, range, the measured fields the derived ones
depend on), the installed code, and the answers of its *oracle calls* — every Z3 query (whose
answer can depend on the wall clock: a time limit) and every ball-arithmetic check, in order
(:mod:`softhard.solver.oracle`).  A live verify that finds the certificate valid records an
*artefact* in the derivation cache (:mod:`softhard.bounds.store`), keyed by the kind, its inputs,
the per-query time limit, :func:`~softhard.bounds.store.fingerprint` (package version, SymPy's
version, every source of bounds/, constructions/, solver/), the versions of the libraries a
replay computes with (:data:`LIBRARIES`) and mpmath's working precision: the oracle transcript, R's output (the re-assembled
certificate) and the measured checks' result (their problems and ``checked`` lines).

A later verify with the same key re-runs **every** oracle call live, in order — Z3 on the recorded
query text in the solver child (:func:`softhard.solver.z3proc.run_z3`), arb on the recorded tree
(:func:`softhard.solver.balls.rerun_row`) — and uses the recorded output only when every live answer
equals the recorded one: R is deterministic given its inputs, the code and the answers, so its
output is then the recorded one.  A different answer, a missing or malformed artefact or the
verify's deadline passing gives ``None``: the caller takes the live path (never a verdict from a
partial replay).  The artefact is trusted as the rest of the cache is (as the installed code:
an entry rewritten by somebody and still well-formed is believed); ``verify --no-cache`` and
``SOFTHARD_CACHE=0`` neither read nor write artefacts.

The same cache holds one more memo: that a certificate's exact canonical text is valid under the
schema of a given SHA-256 (:func:`schema_valid`, :func:`remember_schema_valid`), so a verify of an
unchanged certificate needs no JSON Schema validator.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import sys
import time

from ..bounds import store
from ..installed import version as installed_version
from .balls import rerun_row
from .certjson import Texts, canonical, object_text
from .records import Record
from .z3proc import run_z3

#: the artefact entry's kind in the derivation cache
ARTEFACT = "replay-artefact"
#: the schema-validity memo's kind
SCHEMA_VALID = "schema-valid"
#: distributions whose versions key an artefact besides the fingerprint's (SymPy, the package): what
#: a replay computes with (graphs, numeric plans and float texts, mpmath, arb, Z3, the parser)
LIBRARIES = ("numpy", "networkx", "mpmath", "python-flint", "z3-solver", "lark", "jsonschema")
#: the artefact format (a change of its layout changes every key; 2: keyed by the inputs' digest)
FORMAT = 2

_versions: list[list[str]] = []


def library_versions() -> list[str]:
    """``[python version, version of each of LIBRARIES]`` (``"missing"`` for one not installed),
    read once per process from the installed distributions' metadata (as importlib.metadata reads it:
    :func:`softhard.installed.version`)."""
    if not _versions:
        out = [sys.version]
        for d in LIBRARIES:
            v = installed_version(d)
            out.append("missing" if v is None else v)
        _versions.append(out)
    return _versions[0]


def enabled() -> bool:
    """Whether artefacts are read and written: the disk layer of the derivation cache is on
    (:func:`softhard.bounds.store.disk_cache_enabled`; off under ``verify --no-cache`` and
    ``SOFTHARD_CACHE=0``)."""
    return store.disk_cache_enabled()


def artefact_key(kind: str, inputs, timeout_s: float, inputs_text: bytes | None = None) -> str:
    """The artefact key of a replay of ``kind`` with ``inputs`` (JSON-able) under the per-query
    limit ``timeout_s`` (seconds): :func:`softhard.bounds.store.entry_key` over them (the inputs by
    the SHA-256 of their canonical JSON: ``inputs_text`` when the caller has it, a Tracr source is
    ~20 kB; ISSUE 16), the format and :func:`library_versions`.  Raises ValueError for inputs no
    canonical JSON holds (NaN, infinity), TypeError for a non-JSON value."""
    text = canonical(inputs) if inputs_text is None else inputs_text
    return store.entry_key(ARTEFACT, [FORMAT, kind, hashlib.sha256(text).hexdigest(), float(timeout_s),
                                      library_versions(), mpmath_prec()])


def mpmath_prec() -> int:
    """mpmath's working precision in bits that a live replay here runs at (a replay's numbers may
    depend on it: the command line runs at 30 digits): the deferred precision's
    (:func:`deferred_dps`) when one is set, else mpmath's current one, 53 — its default — while
    mpmath is not loaded (it then starts at 53)."""
    dps = DEFERRED_DPS.get()
    if dps is not None:
        return dps_to_prec(dps)
    mp = sys.modules.get("mpmath")
    return int(mp.mp.prec) if mp is not None else 53


#: mpmath's working precision (decimal digits) deferred to the live replay, or None: set by
#: :func:`deferred_dps` (a single certificate's verify on the command line), entered by
#: :func:`working_precision` around the live replay and its measured checks only, so that a verify
#: served by an artefact never loads mpmath (ISSUE 16)
DEFERRED_DPS: contextvars.ContextVar[int | None] = contextvars.ContextVar("softhard_deferred_dps", default=None)


def dps_to_prec(dps: int) -> int:
    """The precision in bits mpmath works at with ``dps`` decimal digits (``mpmath.workdps(dps)``
    sets it: ``mpmath.libmp.dps_to_prec``, tested equal), without loading mpmath."""
    return max(1, int(round((int(dps) + 1) * 3.3219280948873626)))


@contextlib.contextmanager
def deferred_dps(dps: int):
    """Inside the block, mpmath's working precision is ``dps`` decimal digits wherever a replay
    computes (:func:`working_precision`) and in artefact keys (:func:`mpmath_prec`), as inside
    ``mpmath.workdps(dps)``, while mpmath is loaded only by a live replay."""
    token = DEFERRED_DPS.set(int(dps))
    try:
        yield
    finally:
        DEFERRED_DPS.reset(token)


@contextlib.contextmanager
def working_precision():
    """``mpmath.workdps`` at the deferred precision (:data:`DEFERRED_DPS`) for the block (mpmath
    imported then); nothing when none is deferred.  Around every live replay and measured check."""
    dps = DEFERRED_DPS.get()
    if dps is None:
        yield
        return
    import mpmath  # third-party: loaded here by a live replay only

    with mpmath.workdps(dps):
        yield


class Replayed(Record):
    """What verify takes from a replay, whichever path gave it: ``fresh``, the certificate
    re-assembled (without ``hashes``); ``problems``/``checked``, what the kind's measured checks
    reported (``(json path, message)`` pairs, and the lines for :attr:`VerifyReport.checked`);
    ``transcript``, the oracle rows of the live replay and checks (empty on the fast path);
    ``from_artefact``: True when the oracle calls were re-run from an artefact.  (A plain record,
    :mod:`.records`: no dataclasses on a verify's path.)"""

    FIELDS = ("fresh", "problems", "checked", "transcript", "from_artefact")
    fresh: dict
    problems: list[tuple[str, str]]
    checked: list[str]
    transcript: list[dict]
    from_artefact: bool

    def __init__(self, fresh: dict, problems: list[tuple[str, str]] | None = None, checked: list[str] | None = None,
                 transcript: list[dict] | None = None, from_artefact: bool = False):
        self.fresh = fresh
        self.problems = [] if problems is None else problems
        self.checked = [] if checked is None else checked
        self.transcript = [] if transcript is None else transcript
        self.from_artefact = from_artefact


def _rerun(row: dict) -> bool:
    """Re-run one oracle row live; whether the answer equals the recorded one."""
    if "z3" in row:
        ans, reason, n, _ = run_z3(row["z3"], row["timeout_s"])
        return [ans, reason, n] == [row["answer"], row["reason"], row["n"]]
    return rerun_row(row)


def _queries_in_transcript(fresh: dict, transcript: list) -> bool:
    """Whether every Z3 query the recorded output states (``claims[*].queries[*]``: text, answer,
    reason) is a row of the transcript, i.e. is re-run live with that answer: whatever an artefact
    holds, a claim it calls proved was re-proved by this verify on exactly the stated queries."""
    ran = {(r["z3"], r["answer"], r["reason"]) for r in transcript if isinstance(r, dict) and "z3" in r}
    claims = fresh.get("claims")
    for cl in claims if isinstance(claims, list) else []:
        for q in cl.get("queries") or []:
            if (q["smtlib"], q["answer"], q["reason"]) not in ran:
                return False
    return True


def rerun_transcript(output: dict, transcript: list, deadline: float | None = None) -> bool:
    """Whether every oracle row of ``transcript`` re-run live, in order, gives its recorded answer
    before ``deadline`` (``time.perf_counter()``), and every Z3 query ``output`` states
    (``claims[*].queries[*]``) is among those rows: then a deterministic function of the inputs,
    the code and the answers gives the recorded ``output`` again.  Raises :class:`KeyError`,
    :class:`TypeError`, :class:`ValueError`, :class:`AttributeError` for malformed rows (callers
    treat these as a miss).  Used by verify's artefacts and certify's (:mod:`.certify_memo`).

    Rows that are equal (the same query or check, the same recorded answer) are re-run once: that
    one live answer is a possible answer of each of the calls (an oracle's answer depends on its
    question and, through a time limit, on the wall clock only), so the replay that gets it at every
    one of them is a possible live run, and it gives the recorded output (ISSUE 16: a tomita4
    transcript asks one Z3 query and one arb check twice).  Rows of one question with different
    recorded answers are each re-run, as before."""
    if not _queries_in_transcript(output, transcript):
        return False
    done: set[bytes] = set()
    for row in transcript:
        if deadline is not None and time.perf_counter() > deadline:
            return False
        if not isinstance(row, dict):
            return False
        key = canonical(row)
        if key in done:
            continue
        if not _rerun(row):
            return False
        done.add(key)
    return True


def lookup(key: str, deadline: float | None = None) -> Replayed | None:
    """The replay recorded under ``key`` with every oracle call re-run live and answered as
    recorded, or None (no artefact, a malformed one, a different live answer, or the wall-clock
    ``deadline``, ``time.perf_counter()``, passed: the caller replays live).  Never raises for a
    malformed artefact."""
    if not enabled():
        return None
    art = store.load(key)
    try:
        if not (isinstance(art, dict) and art.get("format") == FORMAT and isinstance(art["fresh"], dict)
                and isinstance(art["transcript"], list) and isinstance(art["checked"], list)):
            return None
        problems = [(str(p), str(m)) for p, m in art["problems"]]
        if not rerun_transcript(art["fresh"], art["transcript"], deadline):
            return None
    except (KeyError, TypeError, ValueError, AttributeError):
        return None
    return Replayed(fresh=art["fresh"], problems=problems, checked=[str(c) for c in art["checked"]],
                    from_artefact=True)


def record(key: str, rep: Replayed) -> None:
    """Store ``rep`` (a live replay: its output, measured checks and oracle transcript) under ``key``
    when artefacts are on (:func:`enabled`); raises nothing for an unwritable cache."""
    if not enabled() or rep.from_artefact:
        return
    store.save(key, {"format": FORMAT, "fresh": rep.fresh, "problems": [list(p) for p in rep.problems],
                     "checked": rep.checked, "transcript": rep.transcript})


def _schema_key(cert: dict, schema_text: str, texts: Texts | None = None) -> str | None:
    try:  # (= canonical(cert), from the sections' texts when verify has them: certjson.object_text)
        text = canonical(cert) if texts is None else object_text(cert, texts)
    except (TypeError, ValueError):  # NaN/Infinity or a non-JSON value: validated, never memoised
        return None
    return store.entry_key(SCHEMA_VALID, [hashlib.sha256(schema_text.encode()).hexdigest(),
                                          hashlib.sha256(text).hexdigest()])


def schema_valid(cert: dict, schema_text: str, texts: Texts | None = None) -> bool:
    """Whether a JSON Schema validation found ``cert`` (its exact canonical JSON) valid under the
    schema ``schema_text`` before (memoised in the cache by :func:`remember_schema_valid`; False
    when artefacts are off or nothing is recorded); ``texts``: canonical texts of ``cert``'s
    containers already known (:class:`~.certjson.Texts`, filled)."""
    if not enabled():
        return False
    key = _schema_key(cert, schema_text, texts)
    return key is not None and store.load(key) is True


def remember_schema_valid(cert: dict, schema_text: str, texts: Texts | None = None) -> None:
    """Record that ``cert`` is valid under ``schema_text`` (call only after a validation found no
    error); nothing when artefacts are off.  ``texts`` as for :func:`schema_valid`."""
    if not enabled():
        return
    key = _schema_key(cert, schema_text, texts)
    if key is not None:
        store.save(key, True)
