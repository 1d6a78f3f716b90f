"""Verify by replay: one procedure for every certificate kind (docs/certificates.md).

A certificate is *inputs* (its ``source`` and parameters, the values a search found), *derived*
fields (everything a proof or a re-computation gives from the inputs) and *measured* fields
(numeric-run results, timings, library versions; listed per kind in the schema's ``x-measured``).
:func:`verify`:

1. reads the envelope: ``schema`` and ``schema_version`` (a schema-1 certificate gets one line
   saying to re-certify), then validates the JSON Schema;
2. asks the certificate's :class:`Kind` to **replay** it: rebuild the construction from the
   stored source and parameters, re-derive every bound and text, re-prove each claim at the
   stated values (no re-search), re-check the premises, and assemble the certificate again with
   the stored measured fields;
3. compares the stored and the replayed certificate field by field (:func:`certjson.diff`):
   every difference outside the measured fields is a problem named by its JSON path;
4. runs the kind's consistency checks on the measured fields (against each other and the bounds);
5. recomputes the section hashes (reported after the more specific replay problems).

Nothing in a certificate is therefore trusted except the measured fields, and those only as far
as their consistency checks go.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import sys
import time
from collections.abc import Callable, Mapping
from functools import lru_cache

from ..constructions.errors import SofthardError, WorkLimitError
from .certjson import Texts, assembled_text, canonical, diff, hash_problems
from .oracle import ORACLE_LOG
from .replay_paths import BUDGET_WORDS, name_copies, only_stopped_claims
from .records import FrozenRecord, Record
from .replay_memo import (Replayed, artefact_key, lookup, record, remember_schema_valid, schema_valid,
                          working_precision)
from .replay_memo import enabled as memo_enabled
from .schema_memo import CURRENT_TEXTS, SCHEMA_FILE, schema_text, validator, schema  # noqa: F401 (re-exported)
from .z3proc import VERIFY_DEADLINE

SCHEMA = "softhard-certificate"
SCHEMA_VERSION = 2
#: schema identifiers of earlier versions: verified no more, answered with one line
OLD_SCHEMAS = {"softhard-certificate": 1, "softhard-tracr-certificate": 1}


@lru_cache(maxsize=1)
def _parsed_schema() -> dict:
    """The schema parsed once, for the read-only look-ups below (callers of :func:`schema` get
    their own copy)."""
    return schema()


@lru_cache(maxsize=None)
def measured_fields(kind: str) -> tuple[str, ...]:
    """The JSON-path patterns of ``kind``'s measured fields (the schema's ``x-measured``)."""
    x = _parsed_schema()["x-measured"]
    return tuple(x["common"] + x.get(kind, []))


@lru_cache(maxsize=None)
def annotation_fields(kind: str) -> tuple[str, ...]:
    """The JSON-path patterns of ``kind``'s annotations (the schema's ``x-annotations``): provenance
    text that no claim depends on (the input file's name, its description), copied, not checked."""
    return tuple(_parsed_schema()["x-annotations"].get(kind, []))


@lru_cache(maxsize=None)
def unchecked_fields(kind: str) -> tuple[str, ...]:
    """Everything a replay does not compare: measured fields and annotations."""
    return measured_fields(kind) + annotation_fields(kind)


class VerifyReport(Record):
    """``problems``: ``(json path, message)`` pairs, valid iff empty; ``checked``: what was re-done;
    ``status``: the certificate's stated status; ``seconds``: wall time of the verification;
    ``undecided``: every problem comes from a replay that hit a solver budget (a query's time limit,
    a claim's box or time budget, verify's total budget), nothing was found edited or inconsistent:
    the certificate could not be re-checked, which is not the same as invalid.  (A plain record,
    :mod:`.records`: no dataclasses on a verify's path.)"""

    FIELDS = ("problems", "checked", "status", "seconds", "undecided")
    problems: list[tuple[str, str]]
    checked: list[str]
    status: str | None
    seconds: float
    undecided: bool

    def __init__(self, problems: list[tuple[str, str]] | None = None, checked: list[str] | None = None,
                 status: str | None = None, seconds: float = 0.0, undecided: bool = False):
        self.problems = [] if problems is None else problems
        self.checked = [] if checked is None else checked
        self.status, self.seconds, self.undecided = status, seconds, undecided

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def exit_code(self) -> int:
        """The command line's exit status (README, "Exit status"): 0 valid, 1 could not be re-checked
        (:attr:`undecided`), 2 invalid."""
        return 0 if self.ok else (1 if self.undecided else 2)

    def add(self, where: str, msg: str) -> None:
        self.problems.append((where, msg))

    def to_json(self) -> dict:
        return {"valid": self.ok, "status": self.status,
                "problems": [{"field": f, "message": m} for f, m in self.problems],
                "checked": self.checked, "undecided": self.undecided, "seconds": round(self.seconds, 6)}


class Kind(FrozenRecord):
    """One kind of certificate (formula, model, tracr, …): how to replay it.

    * ``inputs(cert)``: every field the replay reads (source, parameters, searched values and the
      measured fields derived ones depend on), JSON-serialisable — the replay cache key;
    * ``replay(cert, timeout_s)``: ``(fresh, context)``: the certificate re-assembled from those
      inputs (without ``hashes``) and whatever the kind's measured checks need (its rebuilt
      construction); raises :class:`SofthardError` (or anything, for a tampered source) when it
      cannot be rebuilt;
    * ``check_measured(cert, context, report)``: consistency checks of the measured fields against
      each other and the re-derived bounds (optional).

    Immutable and hashable (a frozen record, :mod:`.records`).
    """

    FIELDS = ("name", "inputs", "replay", "check_measured")
    name: str
    inputs: Callable[[dict], object]
    replay: Callable[[dict, float], tuple[dict, object]]
    check_measured: Callable[[dict, object, VerifyReport], None] | None

    def __init__(self, name: str, inputs: Callable[[dict], object],
                 replay: Callable[[dict, float], tuple[dict, object]],
                 check_measured: Callable[[dict, object, VerifyReport], None] | None = None):
        self._set(name=name, inputs=inputs, replay=replay, check_measured=check_measured)


#: (the kind's replay function, canonical JSON of [kind name, its inputs, the time limit]) -> its
#: output, context and oracle transcript: keyed by the function itself, so a same-named Kind with
#: another replay (API callers, tests) runs its own (tests/solver/test_replay.py)
_REPLAYS: dict[tuple[Callable, bytes], tuple[dict, object, list]] = {}
_REPLAY_CACHE = 16
#: artefact key -> the replay its re-run oracle calls confirmed (this process; :func:`_fast`)
_ARTEFACTS: dict[str, Replayed] = {}


def _replay(kind: Kind, cert: dict, timeout_s: float, known: tuple[Callable, str, bytes] | None = None
            ) -> tuple[dict, object, list]:
    """``kind.replay`` (memoised per inputs and limit), with the oracle transcript it recorded;
    ``known``: ``(an inputs function, a kind name, the memo key they give for cert)``, used when
    they are the kind's own (:func:`_fast` computed it: the inputs serialised once)."""
    if known is not None and known[0] is kind.inputs and known[1] == kind.name:
        key = (kind.replay, known[2])
    else:
        key = (kind.replay, canonical([kind.name, kind.inputs(cert), timeout_s]))
    if key not in _REPLAYS:
        if len(_REPLAYS) >= _REPLAY_CACHE:
            _forget(_REPLAYS.pop(next(iter(_REPLAYS)))[0])
        log: list = []
        token = ORACLE_LOG.set(log)
        try:
            fresh, ctx = kind.replay(cert, timeout_s)
        finally:
            ORACLE_LOG.reset(token)
        _REPLAYS[key] = (fresh, ctx, log)
    return _REPLAYS[key]


def _live(kinds: Mapping[str, Kind], name: str, cert: dict, timeout_s: float, deadline: float,
          known: tuple[Callable, str, bytes] | None = None) -> tuple[dict, object, list]:
    """The live replay of ``cert`` by its kind ``kinds[name]`` (the kind's module imported and run
    at the deferred mpmath precision, if any: :func:`~.replay_memo.working_precision`), its claims
    within the verify's ``deadline`` (``time.perf_counter()``), with its oracle transcript (raises
    what ``kind.replay`` raises); ``known`` as for :func:`_replay`."""
    token = VERIFY_DEADLINE.set(deadline)
    try:
        with working_precision():
            return _replay(kinds[name], cert, timeout_s, known)
    finally:
        VERIFY_DEADLINE.reset(token)


def _measured(kind: Kind, cert: dict, fresh: dict, ctx: object, log: list, texts: Texts | None = None) -> Replayed:
    """A live replay with the kind's measured checks of ``cert`` (their problems and ``checked``
    lines; malformed measured fields are one problem, anything else raised propagates as before),
    and the oracle transcript of both.  For a replay kept in :data:`_REPLAYS` their outcome is
    memoised (:data:`_MEASURED_RUNS`) by ``kind.check_measured`` itself and the SHA-256 of mpmath's
    precision and the text of the sections they read (:data:`MEASURED_READS`, from ``texts``:
    ``cert``'s :class:`~.certjson.Texts`): edited copies of
    one certificate that differ elsewhere share one run (ISSUE 16).  The key text is canonical
    (sorted keys): a copy whose sections differ only in key order gets the first copy's outcome —
    the same problems (the checks name sets in sorted order), listed in the first copy's order."""
    memo = view = None
    if texts is not None and any(r[0] is fresh for r in _REPLAYS.values()):
        known = _MEASURED_RUNS.get(id(fresh))
        if known is None or known[0] is not fresh:  # (the very object: an id is reused once freed)
            known = _MEASURED_RUNS[id(fresh)] = (fresh, {})
        memo = known[1]
        with working_precision():
            prec = sys.modules["mpmath"].mp.prec if "mpmath" in sys.modules else None
        with contextlib.suppress(TypeError, ValueError, RecursionError):  # (serialised by the hashes already)
            text = canonical(prec) + b"".join(b"," + canonical(k) + b":" + assembled_text(cert[k], texts, 0)
                                              for k in MEASURED_READS if k in cert)
            # the very check function too (a Kind of the same name with another check shares no
            # entry); the text as its SHA-256 (an entry's key: 32 bytes, not the sections' size)
            view = (kind.check_measured, hashlib.sha256(text).digest())
        if view in memo:
            was = memo[view]
            return Replayed(fresh=fresh, problems=list(was.problems), checked=list(was.checked),
                            transcript=list(was.transcript))
    out = Replayed(fresh=fresh, transcript=list(log))
    if kind.check_measured is not None:
        scratch = VerifyReport()
        token = ORACLE_LOG.set(out.transcript)
        try:
            with working_precision():
                kind.check_measured(cert, ctx, scratch)
            scratch.checked.append("measured fields consistent")
        except (KeyError, TypeError, ValueError, ArithmeticError, AttributeError) as e:
            scratch.add("measured", f"malformed measured fields ({e.__class__.__name__}: {e})")
        finally:
            ORACLE_LOG.reset(token)
        out.problems, out.checked = scratch.problems, scratch.checked
    if view is not None and len(memo) < _MEASURED_CACHE:
        memo[view] = Replayed(fresh=fresh, problems=list(out.problems), checked=list(out.checked),
                              transcript=list(out.transcript))
    return out


def _envelope(cert, rep: VerifyReport, texts: Texts) -> bool | None:
    """The envelope and schema check of verify: False (``rep`` has the problem), True (validated
    here) or None (valid by the schema memo); ``texts``: the certificate's canonical texts, filled."""
    if not isinstance(cert, dict):
        rep.add("<root>", "a certificate is a JSON object")
        return False
    sid, ver = cert.get("schema"), cert.get("schema_version")
    if isinstance(sid, str) and sid in OLD_SCHEMAS and ver == OLD_SCHEMAS[sid]:  # any JSON value may be there
        rep.add("schema_version", f"schema {ver} certificate ({sid}); re-certify it with this version of softhard "
                                  f"(schema {SCHEMA_VERSION})")
        return False
    if sid != SCHEMA or ver != SCHEMA_VERSION:
        rep.add("schema", f"not a softhard certificate of schema {SCHEMA_VERSION} (schema {sid!r}, version {ver!r})")
        return False
    if schema_valid(cert, schema_text(), texts):  # this exact text validated before (replay_memo; the cache's trust)
        rep.checked.append("schema")
        return None  # valid, from the memo
    import jsonschema  # third-party, heavy: loaded by verify only (see validator)

    token = CURRENT_TEXTS.set(texts)
    try:
        err = jsonschema.exceptions.best_match(validator().iter_errors(cert))  # = jsonschema.validate
        if err is not None:
            raise err
    except jsonschema.ValidationError as e:
        path = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in e.absolute_path).lstrip(".") or "<root>"
        rep.add(path, f"schema violation: {e.message[:300]}")
        return False
    finally:
        CURRENT_TEXTS.reset(token)
    rep.checked.append("schema")
    return True


def check_new_certificate(cert: dict) -> None:
    """certify's own schema check of the certificate it has just made (every kind's certify ends in
    :func:`softhard.solver.certificate.envelope`, which calls this): a violation is a bug in softhard,
    raised as ``RuntimeError`` (the command line's internal error, exit 3); a valid certificate is
    remembered in the schema memo (:func:`~softhard.solver.replay_memo.remember_schema_valid`), so a
    verify of the written file needs no JSON Schema validator (~0.1 s of its start-up; ISSUE 16).
    Nothing when the derivation cache is off (the memo could not be kept)."""
    if not memo_enabled():
        return
    import jsonschema  # third-party, heavy (see validator)

    err = jsonschema.exceptions.best_match(validator().iter_errors(cert))
    if err is not None:
        path = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in err.absolute_path).lstrip(".") or "<root>"
        raise RuntimeError(f"certify made a certificate its schema rejects at {path}: {err.message[:300]}")
    remember_schema_valid(cert, schema_text())


#: the envelope fields in which a certify artefact's certificate differs from the recorded one
#: (:func:`remember_new_certificate`)
RENEWED = ("created", "times", "hashes")
_HEX64 = re.compile(r"[0-9a-f]{64}")


def _renewed_like(cert: dict, validated: dict) -> bool:
    """Whether ``cert`` equals ``validated`` but in :data:`RENEWED`, where it has a string
    ``created``, an object of finite non-negative numbers ``times`` and hashes of the same layout
    (the same keys and section names, SHA-256 hex values) — what the schema allows for them."""
    if {k: v for k, v in cert.items() if k not in RENEWED} != {k: v for k, v in validated.items() if k not in RENEWED}:
        return False
    times, new, old = cert.get("times"), cert.get("hashes"), validated.get("hashes")
    if not (isinstance(cert.get("created"), str) and isinstance(times, dict) and isinstance(new, dict)
            and isinstance(old, dict)):
        return False
    if not all(type(v) in (int, float) and v >= 0 and v != float("inf") for v in times.values()):
        return False
    return (new.keys() == old.keys() and new.get("algorithm") == old.get("algorithm")
            and new.get("scheme") == old.get("scheme") and isinstance(new.get("sections"), dict)
            and isinstance(old.get("sections"), dict) and new["sections"].keys() == old["sections"].keys()
            and all(isinstance(v, str) and _HEX64.fullmatch(v) for v in [*new["sections"].values(), new.get("all")]))


def recorded_schema_valid(cert: dict) -> bool:
    """Whether the schema memo holds ``cert`` (its exact text) as validated under today's schema:
    what :func:`check_new_certificate` remembered for the certificate a live certify made.  A
    certify artefact's certificate must be (:func:`softhard.solver.certify_memo.lookup`) before
    :func:`remember_new_certificate` takes it as ``validated``: a cache entry rewritten since, or
    recorded under another schema, is then certified live, never written schema-invalid and
    remembered valid."""
    return schema_valid(cert, schema_text())


def remember_new_certificate(cert: dict, validated: dict) -> None:
    """The schema check of a certificate certify took from an artefact
    (:func:`softhard.solver.certify_memo.finish`): ``validated`` was made and validated by a live
    certify (:func:`check_new_certificate`); when ``cert`` differs from it only in the renewed
    envelope (:func:`_renewed_like`) it is remembered as valid without a validator, otherwise it is
    validated as :func:`check_new_certificate` does (raising ``RuntimeError`` for a violation)."""
    if not memo_enabled():
        return
    if _renewed_like(cert, validated):
        remember_schema_valid(cert, schema_text())
    else:
        check_new_certificate(cert)


def budget_hit(cert: dict) -> bool:
    """Whether a claim of ``cert`` (its ``reason``) or a search row (its ``message``) stopped at a
    budget (:data:`BUDGET_WORDS`: a query's time limit, a claim's box or time budget, verify's
    total budget): the wall clock decided it, not only the solver's answers."""
    return _budget_hit(cert)


#: what a replay checked (:attr:`VerifyReport.checked`), live or from a recorded artefact
LIVE_CHECKED = "replayed from source and parameters: every non-measured field re-derived and compared"
ARTEFACT_CHECKED = ("replayed from a recorded artefact of the same inputs and code: every Z3 query and arb check "
                    "re-run live (once per process) with the recorded answers, every non-measured field compared")

#: default total time a verify may spend re-proving claims (seconds; ``--budget``)
DEFAULT_BUDGET_S = 600.0
#: the per-query solver time limit a replay uses for a certificate that does not record its own
#: (``solver.timeout_s``, written since the field was added; certify's ``--timeout`` default)
DEFAULT_TIMEOUT_S = 20.0
#: the certificate's section recording the certifying run's solver settings (a replay input)
SOLVER_SECTION = "solver"


def solver_section(timeout_s: float) -> dict:
    """The ``solver`` section of a certificate (every kind): ``{"timeout_s": seconds}``, the hard
    wall-clock limit of each solver query of the certifying run.  An input of the replay (as
    ``range`` is): verify re-proves every claim under the same limit, so a claim left ``unknown`` by
    a time-out replays as ``unknown`` (docs/certificates.md)."""
    return {"timeout_s": float(timeout_s)}


def replay_timeout(cert: dict, timeout_s: float | None) -> float:
    """The per-query time limit of ``cert``'s replay (seconds): ``timeout_s`` when given (verify's
    ``--timeout``), else the stored ``solver.timeout_s`` (schema-checked: a number in (0, 86400]),
    else :data:`DEFAULT_TIMEOUT_S` (a certificate from before the field)."""
    if timeout_s is not None:
        return float(timeout_s)
    stored = cert.get(SOLVER_SECTION)
    if isinstance(stored, dict) and isinstance(stored.get("timeout_s"), (int, float)):
        return float(stored["timeout_s"])
    return DEFAULT_TIMEOUT_S


#: id of a memoised replay's certificate (alive in _REPLAYS or _ARTEFACTS) -> (it, :func:`_budget_hit` of it)
_BUDGET_HITS: dict[int, tuple[dict, bool]] = {}
#: the top-level sections the measured checks (:attr:`Kind.check_measured`) read: formula and model
#: ``kind``, ``numeric``, ``range``, ``construction.inv_tau``, ``search``; Tracr ``numeric``, ``source``
MEASURED_READS = ("kind", "source", "construction", "range", "search", "numeric")
#: id of a replay's certificate in _REPLAYS -> (it, {(check_measured, SHA-256 of precision + MEASURED_READS
#: text): a Replayed}) (:func:`_measured`)
_MEASURED_RUNS: dict[int, tuple[dict, dict[tuple[Callable | None, bytes], Replayed]]] = {}
_MEASURED_CACHE = 4096


def _budget_hit(fresh: dict) -> bool:
    """Whether a re-run claim of ``fresh`` stopped at a budget (memoised for the replays kept in
    :data:`_REPLAYS` and :data:`_ARTEFACTS`: every verify of an edited copy of one certificate
    shares its replay)."""
    memo = any(r[0] is fresh for r in _REPLAYS.values()) or any(a.fresh is fresh for a in _ARTEFACTS.values())
    known = _BUDGET_HITS.get(id(fresh))
    if memo and known is not None and known[0] is fresh:  # (the very object: an id is reused once freed)
        return known[1]
    hit = _budget_words(fresh)
    if memo:
        _BUDGET_HITS[id(fresh)] = (fresh, hit)
    return hit


def _budget_words(obj) -> bool:
    """Whether a string under a ``reason`` key anywhere in ``obj``, or under a ``message`` key inside
    its top-level ``search`` (a claim's reason, or a search row's message: the re-check of a found
    value states its proof's reason there: "not proved at the stated value (verify time budget
    exhausted ...)"), holds one of :data:`BUDGET_WORDS`: every such leaf of
    :func:`~.certjson.leaves`, walked without a generator per container (ISSUE 16: the walk of the
    stored certificate was a fifth of a rejected edit's verify)."""
    stack: list = [(obj, None)]  # (value, inside the top-level search; None: the top level itself)
    while stack:
        v, search = stack.pop()
        if isinstance(v, dict):
            for k, x in v.items():
                if isinstance(x, str):
                    if (k == "reason" or (search and k == "message")) and any(w in x for w in BUDGET_WORDS):
                        return True
                elif isinstance(x, (dict, list)):
                    stack.append((x, k == "search" if search is None else search))
        elif isinstance(v, list):
            stack.extend((x, bool(search)) for x in v if isinstance(x, (dict, list)))
    return False


#: id of a memoised replay's certificate (alive in _REPLAYS or _ARTEFACTS) -> (it, the canonical
#: texts of its containers, :class:`~.certjson.Texts`): the diff of every edited copy of one
#: certificate serialises the replay's sections once (the replay output is never mutated: the memo
#: already relies on that)
_FRESH_TEXTS: dict[int, tuple[dict, Texts]] = {}


def _fresh_texts(fresh: dict) -> Texts:
    """The canonical texts of ``fresh``'s containers: kept while ``fresh`` is a memoised replay's
    output (:data:`_REPLAYS`, :data:`_ARTEFACTS`), else new (one verify's)."""
    known = _FRESH_TEXTS.get(id(fresh))
    if known is not None and known[0] is fresh:
        return known[1]
    texts = Texts()
    if any(r[0] is fresh for r in _REPLAYS.values()) or any(a.fresh is fresh for a in _ARTEFACTS.values()):
        _FRESH_TEXTS[id(fresh)] = (fresh, texts)
    return texts


def _forget(fresh: dict) -> None:
    """Drop what is kept of an evicted replay's output."""
    _BUDGET_HITS.pop(id(fresh), None)
    _FRESH_TEXTS.pop(id(fresh), None)
    _MEASURED_RUNS.pop(id(fresh), None)


def clear_replay_cache() -> None:
    """Forget earlier replays (each verify of an identical certificate otherwise reuses one)."""
    _REPLAYS.clear()
    _BUDGET_HITS.clear()
    _FRESH_TEXTS.clear()
    _MEASURED_RUNS.clear()
    _ARTEFACTS.clear()


def verify(cert: dict, kinds: Mapping[str, Kind], *, timeout_s: float | None = None,
           budget_s: float = DEFAULT_BUDGET_S,
           fast_inputs: Mapping[str, Callable[[dict], object]] | None = None) -> VerifyReport:
    """Verify ``cert`` by replay (module docstring); never raises for a bad certificate — every
    problem is reported with its JSON path.  ``kinds``: the registry of certificate kinds
    (:data:`softhard.solver.kinds.KINDS`).  ``timeout_s``: the hard wall-clock limit of each
    re-run solver query (a re-run that times out is reported, never taken as agreement); None (the
    default): the certifying run's own limit, ``solver.timeout_s`` (:func:`replay_timeout`);
    ``budget_s``: the total time the replay may spend proving claims (each claim also has its own
    box and time budget); a claim left unproved by a budget is reported as not re-checked, and the
    report is :attr:`~VerifyReport.undecided` when nothing else is wrong.  ``fast_inputs``: kind
    name -> its ``inputs`` function importable without the kind's module; for those kinds a
    recorded replay artefact is used when every oracle call re-run live gives the recorded answer
    (:mod:`softhard.solver.replay_memo`: the same report as the live path), and a valid
    certificate's live replay records one."""
    t0 = time.perf_counter()
    rep = VerifyReport(status=cert.get("status") if isinstance(cert, dict) else None)
    # the canonical texts of cert's containers, each serialised once: for the schema memo's key, the
    # validator's memo, the hashes and the diff (cert is not mutated while verify runs: tests/tamper.py)
    texts = Texts()
    try:
        schema_live = _envelope(cert, rep, texts)
        hashes = None if schema_live is False else hash_problems(cert, texts)
    except (TypeError, ValueError, RecursionError) as e:  # a dict (API) no JSON text gives: NaN, a lone
        # surrogate, a non-JSON value, a cycle, too deep (a file's are refused when read: certjson.loads)
        rep.add("<root>", f"not a JSON document: {e.__class__.__name__}: {str(e)[:200]}")
        schema_live = False
    if schema_live is False:
        rep.seconds = time.perf_counter() - t0
        return rep
    name, limit_hit = cert["kind"], False
    if name not in kinds:
        rep.add("kind", f"unknown certificate kind {name!r} (known: {', '.join(sorted(kinds))})")
    else:
        limit = replay_timeout(cert, timeout_s)
        deadline = time.perf_counter() + budget_s  # one total budget, whichever path replays
        got, key, known = _fast(fast_inputs, name, cert, limit, deadline, texts)
        try:
            live = None if got is not None else _live(kinds, name, cert, limit, deadline, known)
        except WorkLimitError as e:  # a documented work limit: not re-checked, which is not invalid
            rep.add(getattr(e, "path", None) or "source", f"could not be re-checked: {e}")
            limit_hit = True
        except SofthardError as e:
            rep.add(getattr(e, "path", None) or "source", f"cannot replay the certificate: {e}")
        except Exception as e:  # noqa: BLE001 — a tampered source can fail in many ways; report, never crash
            rep.add("source", f"cannot replay the certificate: {e.__class__.__name__}: {e}")
        else:
            if live is not None:
                got = _measured(kinds[name], cert, *live, texts=texts)
            fresh = got.fresh
            # (``solver`` is an input of the replay, as ``range`` is: taken, not re-derived; schema-checked)
            body = {k: v for k, v in cert.items() if k not in ("hashes", SOLVER_SECTION)}
            probs = name_copies(diff(body, fresh, unchecked_fields(name), texts=(texts, _fresh_texts(fresh))), body)
            replay_hit = bool(probs) and _budget_hit(fresh)
            # a claim the certifying run left unknown at its time limit may replay proved or refuted under
            # the same limit (Z3's limits are wall-clock): not decided either way, never "edited"
            stored_hit = bool(probs) and not replay_hit and only_stopped_claims(body, probs) and _budget_hit(body)
            budget = replay_hit or stored_hit
            if replay_hit:
                probs = [(p, m + " (the replay hit a solver budget — a query's time limit, a claim's box or "
                                  "time budget, or verify's total budget — so this could not be re-checked; try "
                                  "a larger --timeout or --budget)") for p, m in probs]
            elif stored_hit:
                probs = [(p, m + " (the certificate records a claim stopped by a solver budget that the replay "
                                  "decided under the same limit — wall-clock limits are not reproducible at the "
                                  "edge — so this could not be re-checked; re-certify with a larger --timeout)")
                         for p, m in probs]
            rep.problems.extend(probs)
            rep.checked.append(ARTEFACT_CHECKED if got.from_artefact else LIVE_CHECKED)
            rep.problems.extend(got.problems)
            # (an artefact's measured-check lines are the recorded replay's: it is keyed by every field they read)
            said = " (by the recorded replay)" if got.from_artefact else ""
            rep.checked.extend(c + said for c in got.checked)
            rep.undecided = budget and len(rep.problems) == len(probs)
            if key is not None and not got.from_artefact and not rep.problems and not hashes and not _budget_hit(fresh):
                with contextlib.suppress(KeyError, TypeError, ValueError, AttributeError):  # (as _fast's)
                    record(key(), got)  # a valid certificate's live replay: the artefact of its inputs
    rep.problems.extend(hashes)
    rep.undecided = (rep.undecided or (limit_hit and len(rep.problems) == 1)) and not hashes
    rep.checked.append("hashes")
    if schema_live and rep.ok:
        remember_schema_valid(cert, schema_text(), texts)
    rep.seconds = time.perf_counter() - t0
    return rep


def _fast(fast_inputs: Mapping[str, Callable[[dict], object]] | None, name: str, cert: dict,
          timeout_s: float, deadline: float, texts: Texts | None = None
          ) -> tuple[Replayed | None, Callable[[], str] | None, tuple[Callable, str, bytes] | None]:
    """``(the replay from a recorded artefact or None, the artefact key's maker or None, the replay
    memo's key or None)``: the key (made when needed: a verify of an edited copy whose replay this
    process has needs none, ISSUE 16; it raises what :func:`~.replay_memo.artefact_key` raises) when
    ``fast_inputs`` has a SymPy-free inputs function for kind ``name`` and artefacts are on
    (:mod:`softhard.solver.replay_memo`); the replay when an artefact under it re-ran every oracle
    call live with the recorded answers before ``deadline`` (``time.perf_counter()``) — unless this
    process replayed the same inputs already (:data:`_REPLAYS`: the live path reuses that replay
    without re-running anything).  As a live replay is, an artefact's replay is kept for this
    process's later verifies of the same inputs (:data:`_ARTEFACTS`: edited copies of one
    certificate share it; :func:`clear_replay_cache` forgets it).  The memo key is
    ``(the inputs function, name, its canonical key)``, for :func:`_replay`; ``texts``: the canonical
    texts of ``cert``'s containers (:class:`~.certjson.Texts`), from which the keys' texts of the
    inputs are assembled (:func:`~.certjson.assembled_text`: each section serialised once, ISSUE 16)."""
    if fast_inputs is None or name not in fast_inputs or not memo_enabled():
        return None, None, None
    try:
        fn = fast_inputs[name]
        inputs = fn(cert)
        texts = Texts() if texts is None else texts
        text = assembled_text(inputs, texts)  # = canonical(inputs)
        known = (fn, name, b"[" + canonical(name) + b"," + text + b"," + canonical(timeout_s) + b"]")
        if any(k == known[2] for _, k in _REPLAYS):  # (by any replay function: the kind is not imported here)
            return None, lambda: artefact_key(name, inputs, timeout_s, text), known
        key = artefact_key(name, inputs, timeout_s, text)
    except (KeyError, TypeError, ValueError, AttributeError):  # inputs the kind cannot read: the live path reports them
        return None, None, None
    if key not in _ARTEFACTS:
        got = lookup(key, deadline)
        if got is None:
            return None, lambda: key, known
        if len(_ARTEFACTS) >= _REPLAY_CACHE:
            _forget(_ARTEFACTS.pop(next(iter(_ARTEFACTS))).fresh)
        _ARTEFACTS[key] = got
    return _ARTEFACTS[key], lambda: key, known
