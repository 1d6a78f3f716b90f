"""Edit every field of a real certificate, one at a time, the way an attacker would (issue 12).

Each edit changes one leaf (a boolean flipped, a number changed, a string changed — an exact
rational to another rational) or deletes one list item or object key, then recomputes the
(unkeyed, documented) hashes, so only the replay can catch it.  Fields under the kind's measured
patterns are skipped: they are the documented exceptions.
"""

from __future__ import annotations

import hashlib
import json
import re
from fractions import Fraction

from softhard.solver.certjson import HASH_SCHEME, canonical, compute_hashes, fmt_path, matches
from softhard.solver.replay import unchecked_fields

_RATIONAL = re.compile(r"^-?[0-9]+(/[0-9]+)?$")


def _edited(v):
    if isinstance(v, bool):
        return not v
    if isinstance(v, int):
        return v + 1
    if isinstance(v, float):
        return v * 1.5 + 1.0
    if isinstance(v, str):
        if _RATIONAL.match(v):
            x = Fraction(v)
            y = x + Fraction(1, x.denominator) if x != 0 else Fraction(1, 7)
            return f"{y.numerator}/{y.denominator}" if y.denominator != 1 else str(y.numerator)
        return v + " (edited)"
    if v is None:
        return 1
    if isinstance(v, list):  # an empty list
        return [0]
    return {"edited": 1}  # an empty object


def _nodes(obj, path=()):
    yield path, obj
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _nodes(v, path + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _nodes(v, path + (i,))


def _path_copy(base: dict, path: tuple):
    """``base`` with a fresh copy of every container on ``path`` from the root down to the edited
    node's parent; everything off the path is shared with ``base`` (which nothing may mutate:
    :func:`edits` checks at the end that ``base`` is unchanged)."""
    root = dict(base)
    obj = root
    for p in path[:-1]:
        child = obj[p]
        obj[p] = child = dict(child) if isinstance(child, dict) else list(child)
        obj = child
    return root, obj


class _Hasher:
    """``compute_hashes`` of the edited copies of one base certificate, re-serialising only what an
    edit changed: the canonical text of an object is ``{`` + its ``"key":text`` pairs in sorted
    key order, joined by ``,`` + ``}`` (a list's: ``[`` + its items' texts + ``]``), so the text of an
    edited copy is assembled from the texts of the containers it shares with the base (remembered
    by identity: the base is alive and unmutated while its copies are used, :func:`edits` checks
    that) and of the fresh containers on the edited path.  Every ``check_every``-th copy, and the
    first copy that edits each top-level section, is also hashed by ``compute_hashes`` and must
    agree (an assertion), so a drift from the real scheme fails the test instead of hiding a miss.
    (Recomputing every section of every copy was ~10 of the ~95 s CPU of the Tracr edit test.)"""

    def __init__(self, base: dict, check_every: int = 97):
        self._base_ids: dict[int, bytes] = {}
        self._sha: dict[int, str] = {}
        self._keep = base  # the remembered ids stay valid while base is alive
        self._checked: set = set()
        self._count = 0
        self._every = check_every
        self._remember(base)

    def _remember(self, obj) -> bytes:
        if isinstance(obj, dict):
            text = b"{" + b",".join(canonical(k) + b":" + self._remember(obj[k]) for k in sorted(obj)) + b"}"
        elif isinstance(obj, list):
            text = b"[" + b",".join(self._remember(v) for v in obj) + b"]"
        else:
            return canonical(obj)
        self._base_ids[id(obj)] = text
        return text

    def _text(self, obj) -> bytes:
        if isinstance(obj, (dict, list)):
            known = self._base_ids.get(id(obj))
            if known is not None:
                return known
            if isinstance(obj, dict):
                return b"{" + b",".join(canonical(k) + b":" + self._text(obj[k]) for k in sorted(obj)) + b"}"
            return b"[" + b",".join(self._text(v) for v in obj) + b"]"
        return canonical(obj)

    def _digest(self, obj, text: bytes) -> str:
        if id(obj) in self._base_ids:  # a shared (unedited) container: its hash is the base's
            h = self._sha.get(id(obj))
            if h is None:
                h = self._sha[id(obj)] = hashlib.sha256(text).hexdigest()
            return h
        return hashlib.sha256(text).hexdigest()

    def __call__(self, cert: dict, section: str) -> dict:
        """The ``hashes`` field of the edited copy ``cert`` (its edit lies in top-level ``section``)."""
        body = {k: v for k, v in cert.items() if k != "hashes"}
        sections, texts, order = {}, {}, []
        for k, v in body.items():
            order.append(k)
            texts[k] = self._text(v)
            if isinstance(v, list):
                for i, x in enumerate(v):
                    sections[f"{k}[{i}]"] = self._digest(x, self._text(x))
                    order.append(f"{k}[{i}]")
            sections[k] = self._digest(v, texts[k])
        whole = b"{" + b",".join(canonical(k) + b":" + texts[k] for k in sorted(texts)) + b"}"
        out = {"algorithm": "sha256", "scheme": HASH_SCHEME, "sections": {k: sections[k] for k in order},
               "all": hashlib.sha256(whole).hexdigest()}
        self._count += 1
        if section not in self._checked or self._count % self._every == 0:
            self._checked.add(section)
            assert out == compute_hashes(cert), f"tests/tamper.py's hashes differ from compute_hashes ({section})"
        return out


def edits(cert: dict, kind: str, *, deletions: bool = True):
    """Yield ``(path, description, edited certificate)`` for every edit outside the measured fields
    and annotations and outside ``hashes`` (the hashes of each edited certificate are recomputed).

    Each edited certificate is a copy of ``cert`` as read from a file (one JSON round trip: no
    sub-object shared with ``cert``, none shared inside it) in which the containers on the edited
    path are copied afresh and the rest is shared between the yielded certificates; a verify that
    mutated its input fails the check, once all edits are consumed, that the base is unchanged.
    (A full JSON round trip per edit gives the same certificates: it was 10 of the 18 s that
    tests/solver/test_tracr_certify.py spent building its 4,504 edits.)"""
    measured = unchecked_fields(kind)
    base = json.loads(json.dumps(cert))  # as read from a file: no shared sub-objects
    text = json.dumps(base)
    hashes = _Hasher({k: v for k, v in base.items() if k != "hashes"})
    body = {k: v for k, v in base.items() if k != "hashes"}
    for path, v in _nodes(body):
        if not path or any(matches(path, p) for p in measured):
            continue
        changes = []
        if not isinstance(v, (dict, list)) or not v:
            changes.append(("changed", _edited(v)))
        if deletions:
            changes.append(("deleted", None))
        for what, new in changes:
            c2, parent = _path_copy(base, path)
            if what == "deleted":
                del parent[path[-1]]
            else:
                parent[path[-1]] = new
            c2["hashes"] = hashes(c2, path[0])
            yield path, what, c2
    # the yielded copies share their unedited parts with base: whoever used them (verify) must not
    # have mutated them, else a later edit would have been built on a changed certificate
    assert json.dumps(base) == text, "an edited certificate's shared (unedited) part was mutated"


#: replay settings of every kind (``solver``: the certifying run's per-query time limit): the replay
#: runs under the stored value, so an edited (or deleted: 20 s) limit under which every claim comes
#: out the same is the certificate ``certify --timeout`` with that limit writes — accepted, by design
#: (tests/solver/test_verify_limits.py checks that the replay uses the stored value)
SETTINGS = ("solver", "solver.timeout_s")


def undetected(cert: dict, kind: str, verify, *, deletions: bool = True, inputs: tuple[str, ...] = (),
               only=None) -> list[str]:
    """The edits ``verify`` accepts or does not locate: an edit must make the certificate invalid
    (except an edit of a replay setting, :data:`SETTINGS`, that changes no outcome), and, unless it
    lies under one of the ``inputs`` patterns (source and parameters, which show up in the fields
    derived from them), one reported problem must name its path or a path above or below it.
    ``only``: a predicate on the edited certificate; the edits it refuses are not verified here
    (the caller says where they are)."""
    bad = []
    for path, what, c2 in edits(cert, kind, deletions=deletions):
        if only is not None and not only(c2):
            continue
        rep = verify(c2)
        where = fmt_path(path)
        if rep.ok and where in SETTINGS:
            continue
        if rep.ok:
            bad.append(f"{where} {what}: accepted")
            continue
        if any(matches(path, p) for p in inputs):
            continue
        named = [f for f, _ in rep.problems]
        if not any(f == where or f.startswith(where + ".") or f.startswith(where + "[") or where.startswith(f + ".")
                   or where.startswith(f + "[") or f in ("<root>", "schema") for f in named):
            bad.append(f"{where} {what}: rejected but located at {named[:3]}")
    return bad


def section_edits(cert: dict, section: str):
    """Yield ``(path text, "changed" | "deleted", edited certificate)`` for every edit *inside* one
    top-level ``section`` — measured fields included (what :func:`edits` skips): each leaf changed,
    each key/item deleted, the hashes recomputed.  The copies are built as :func:`edits` builds
    them (the containers on the edited path fresh, the rest shared with one JSON round trip of
    ``cert``, checked unchanged once all edits are consumed)."""
    base = json.loads(json.dumps(cert))
    text = json.dumps(base)
    hashes = _Hasher({k: v for k, v in base.items() if k != "hashes"})
    for path, v in _nodes(base[section], (section,)):
        if len(path) == 1:
            continue
        for what in ("changed", "deleted"):
            if what == "changed" and isinstance(v, (dict, list)) and v:
                continue
            c2, parent = _path_copy(base, path)
            if what == "deleted":
                del parent[path[-1]]
            else:
                parent[path[-1]] = _edited(v)
            c2["hashes"] = hashes(c2, section)
            yield fmt_path(path), what, c2
    assert json.dumps(base) == text, "an edited certificate's shared (unedited) part was mutated"
