"""Certificate files as data: strict JSON in, canonical JSON and hashes, JSON paths, replay diffs.

Every certificate kind (formula, model file, Tracr export) is read, hashed, written and compared
by the functions here, so the file-level rules are the same for all of them (docs/certificates.md):

* **Strict reading** (:func:`load_certificate`): at most :data:`MAX_BYTES` bytes, nesting at most
  :data:`MAX_DEPTH` deep, no duplicate keys in an object, no ``NaN``/``Infinity``; every violation
  is one :class:`~softhard.constructions.errors.CertificateError` line naming the file (and the
  line:column where JSON gives one).
* **Canonical JSON** (:func:`canonical`): sorted keys, separators ``,`` and ``:``, UTF-8, no ASCII
  escaping of non-ASCII characters, NaN/Infinity refused.
* **Hashes** (:func:`compute_hashes`): SHA-256 of the canonical JSON of every top-level section,
  of every element of a top-level list (``claims[3]``), and of the whole certificate without
  ``hashes`` (``all``).  Unkeyed: they locate accidental edits; the replay catches deliberate ones.
* **JSON paths** (:func:`fmt_path`, :func:`matches`): ``search.per_bound[2].empirical``; a pattern
  may use ``[*]`` for any index and names a field together with everything under it.
* **Diffs** (:func:`diff`): every difference between a stored and a replayed certificate, by
  JSON path, except under the measured patterns.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import re
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path

from ..constructions.errors import CertificateError, ParameterError
from ..constructions.parameters import check_output_path  # (re-exported: the output file's checks)

#: largest certificate file ``load_certificate`` reads (bytes); the largest shipped one is under 2 MiB
MAX_BYTES = 64 * 1024 * 1024
#: deepest nesting of arrays/objects ``load_certificate`` accepts (certificates nest at most ~10 deep)
MAX_DEPTH = 64
#: relative tolerance for floats in a replay diff (derived floats are re-computed, possibly with
#: another BLAS or libm; every number a proof depends on is an exact rational string)
FLOAT_REL_TOL = 1e-9

HASH_SCHEME = ("sha256 over canonical JSON (sorted keys, separators ',' ':', UTF-8): one hash per top-level "
               "section, one per element of a top-level list ('claims[3]'), and 'all' over the certificate "
               "without 'hashes'")


def _depth_ok(text: str, limit: int) -> tuple[bool, int]:
    """Scan ``text`` for bracket nesting outside strings; ``(ok, offset)`` of the first too-deep one."""
    depth = 0
    in_str = esc = False
    for i, ch in enumerate(text):
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch in "[{":
            depth += 1
            if depth > limit:
                return False, i
        elif ch in "]}":
            depth -= 1
    return True, -1


def _no_duplicates(pairs: list[tuple[str, object]]) -> dict:
    out: dict = {}
    for k, v in pairs:
        if k in out:
            raise CertificateError(f"duplicate key {k!r} in one JSON object (a reader could take either value)")
        out[k] = v
    return out


def _no_constant(name: str):
    raise CertificateError(f"{name} is not JSON (certificates are strict JSON: no NaN or Infinity)")


def _finite(text: str) -> float:
    """A JSON number with a fraction or exponent as a float; one beyond float range (``1e999``,
    which Python reads as infinity) is refused: strict JSON holds no infinity."""
    v = float(text)
    if not math.isfinite(v):
        raise CertificateError(f"the number {text[:40]} is beyond float range (certificates are strict JSON: no "
                               "infinity)")
    return v


#: a ``\u`` escape of a UTF-16 surrogate: JSON text may pair them; a lone one is no character
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _nesting_within(obj, limit: int) -> bool:
    """Whether the containers of a parsed JSON value nest at most ``limit`` deep (a top-level
    container is depth 1): for valid JSON, the bracket depth :func:`_depth_ok` scans for."""
    stack = [(obj, 1)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, (dict, list)):
            if d > limit:
                return False
            stack.extend((x, d + 1) for x in (v.values() if isinstance(v, dict) else v))
    return True


def loads(text: str, where: str = "<certificate>") -> object:
    """Parse ``text`` as strict JSON (module docstring).  Raises :class:`CertificateError` with one
    line ``where[:line:col]: what``.

    Strict JSON within the depth limit and without surrogate escapes — every certificate verify
    reads — is parsed first and its nesting checked on the parsed value (ISSUE 16: the character
    scan :func:`_depth_ok` is ~3 ms of a 30 kB certificate); any other text is checked as before:
    its nesting, then its strictness, the first violation named."""
    if len(text.encode("utf-8", "surrogatepass")) > MAX_BYTES:
        raise CertificateError(f"{where}: larger than {MAX_BYTES} bytes, the most a certificate may have")
    # (any failure of the fast path: the checks below find and name it)
    with contextlib.suppress(ValueError, CertificateError, RecursionError):
        obj = json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_no_constant, parse_float=_finite)
        if _nesting_within(obj, MAX_DEPTH) and not _SURROGATE_ESCAPE.search(text):
            return obj
    ok, off = _depth_ok(text, MAX_DEPTH)
    if not ok:
        line = text.count("\n", 0, off) + 1
        col = off - (text.rfind("\n", 0, off) + 1) + 1
        raise CertificateError(f"{where}:{line}:{col}: nested deeper than {MAX_DEPTH} levels")
    try:
        obj = json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_no_constant, parse_float=_finite)
    except json.JSONDecodeError as e:
        raise CertificateError(f"{where}:{e.lineno}:{e.colno}: not valid JSON ({e.msg})") from None
    except CertificateError as e:
        raise CertificateError(f"{where}: {e}") from None
    if _SURROGATE_ESCAPE.search(text):  # (rare: only then is every string encoded once more)
        try:
            json.dumps(obj, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            raise CertificateError(f"{where}: a string holds an unpaired UTF-16 surrogate escape (\\ud800-\\udfff): "
                                   "no character, so not text") from None
    return obj


def load_certificate(path: str | os.PathLike) -> dict:
    """Read a certificate file strictly (module docstring); it must hold one JSON object.

    Raises :class:`CertificateError` (one line naming the file) for a missing, unreadable,
    oversized, non-UTF-8, too deeply nested or non-strict JSON file."""
    p = Path(path)
    try:
        size = p.stat().st_size
        if size > MAX_BYTES:
            raise CertificateError(f"{p}: {size} bytes, more than the {MAX_BYTES} a certificate may have")
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise CertificateError(f"{p}: cannot read ({getattr(e, 'strerror', None) or e})") from None
    except ValueError:  # os.stat: "embedded null byte" (found by benchmarks/fuzz.py)
        raise CertificateError(f"{p}: not a file name (it contains a NUL character)") from None
    obj = loads(text, str(p))
    if not isinstance(obj, dict):
        raise CertificateError(f"{p}: a certificate is a JSON object")
    return obj


def check_json(obj, path: tuple = ()) -> None:
    """Raise :class:`ParameterError` naming the JSON path of the first value in ``obj`` that strict
    JSON cannot hold: NaN/Infinity, a key that is not a string, or a value other than a dict,
    list/tuple, str, int, float, bool or None (a set, a Fraction, an array)."""
    if isinstance(obj, float) and not math.isfinite(obj):
        raise ParameterError(f"{fmt_path(path) or '<root>'}: {obj} cannot be written as strict JSON")
    if isinstance(obj, dict):
        for k, v in obj.items():
            if not isinstance(k, str):
                raise ParameterError(f"{fmt_path(path) or '<root>'}: key {k!r} is not a string (JSON keys are)")
            check_json(v, path + (k,))
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            check_json(v, path + (i,))
    elif not (obj is None or isinstance(obj, (str, int, float))):
        raise ParameterError(f"{fmt_path(path) or '<root>'}: a {type(obj).__name__} cannot be written as JSON")


#: the encoder ``json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
#: allow_nan=False)`` builds on every call, built once (it keeps no state between calls: the
#: circular-reference markers are made per call); verify serialises ~200 values per certificate
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def canonical(obj) -> bytes:
    """Canonical JSON bytes of ``obj`` (module docstring): ``json.dumps`` with sorted keys,
    separators ``,`` ``:``, UTF-8 (an ``int`` is its ``repr``, as json writes it); raises
    ValueError for NaN/Infinity, TypeError for a value JSON cannot hold."""
    if type(obj) is int:
        return repr(obj).encode()
    return _CANONICAL.encode(obj).encode("utf-8")


class Texts(dict):
    """The canonical texts of containers serialised while nothing may change them, by identity:
    ``id(container) -> (container, canonical bytes)`` (holding the container keeps its id from
    being reused).  verify makes one per certificate it checks — the certificate's section texts
    then serve the schema memo's key, the validator's memo, the hashes and the replay diff, each
    serialised once instead of once per use (ISSUE 16) — and keeps one per memoised replay output
    (never mutated: the replay memo already relies on that).  Use only on values nobody mutates
    while the object lives."""

    def text(self, obj) -> bytes:
        """``canonical(obj)``, remembered for a dict or list (raises what :func:`canonical` raises)."""
        if not isinstance(obj, (dict, list)):
            return canonical(obj)
        got = self.get(id(obj))
        if got is not None and got[0] is obj:
            return got[1]
        out = canonical(obj)
        self[id(obj)] = (obj, out)
        return out

    def known(self, obj, text: bytes) -> bytes:
        """Remember ``text`` as ``obj``'s canonical JSON (the caller assembled it as :func:`canonical`
        writes it) and return it."""
        if isinstance(obj, (dict, list)):
            self[id(obj)] = (obj, text)
        return text


def object_text(obj: dict, texts: Texts) -> bytes:
    """``canonical(obj)`` of a dict, assembled from its values' texts in ``texts`` (sorted keys,
    ``"key":value`` joined by ``,``: what :func:`canonical` writes, tests/solver/test_replay.py);
    a list value's text is assembled from its items' (each remembered: the hashes of a certificate's
    top-level lists are per item, :func:`compute_hashes`, so each item is serialised once; ISSUE 16);
    serialised whole when a key is not a string (json.dumps would convert or refuse it)."""
    if not all(type(k) is str for k in obj):
        return texts.text(obj)
    return texts.known(obj, b"{" + b",".join(canonical(k) + b":" + _list_or_text(obj[k], texts) for k in sorted(obj))
                       + b"}")


def _list_or_text(v, texts: Texts) -> bytes:
    """``texts.text(v)``; for a list not known yet, assembled from its items' texts (``[`` + items
    joined by ``,`` + ``]``: what :func:`canonical` writes)."""
    if type(v) is list:
        got = texts.get(id(v))
        if got is not None and got[0] is v:
            return got[1]
        return texts.known(v, b"[" + b",".join(texts.text(x) for x in v) + b"]")
    return texts.text(v)


def assembled_text(obj, texts: Texts, depth: int = 2) -> bytes:
    """``canonical(obj)`` of a value built around containers whose texts ``texts`` knows (a replay's
    inputs: sections of the certificate verify has serialised): those taken from ``texts``, the
    containers within ``depth`` levels of ``obj`` assembled around them (dicts with string keys,
    lists, tuples) without being remembered, anything else serialised whole.  Raises what
    :func:`canonical` raises."""
    if isinstance(obj, (dict, list)):
        got = texts.get(id(obj))
        if got is not None and got[0] is obj:
            return got[1]
    if depth > 0:
        if type(obj) is dict and all(type(k) is str for k in obj):
            return b"{" + b",".join(canonical(k) + b":" + assembled_text(obj[k], texts, depth - 1)
                                    for k in sorted(obj)) + b"}"
        if type(obj) in (list, tuple):
            return b"[" + b",".join(assembled_text(x, texts, depth - 1) for x in obj) + b"]"
    return canonical(obj)


def compute_hashes(cert: dict, texts: Texts | None = None) -> dict:
    """``{"algorithm", "scheme", "sections": {path: hex}, "all": hex}`` for ``cert`` (module
    docstring).  ``texts``: canonical texts already known (:class:`Texts`; filled with the
    sections')."""
    texts = Texts() if texts is None else texts
    body = {k: v for k, v in cert.items() if k != "hashes"}
    sections = {}
    for k, v in body.items():
        if isinstance(v, list):
            items = [texts.text(x) for x in v]
            for i, t in enumerate(items):
                sections[f"{k}[{i}]"] = hashlib.sha256(t).hexdigest()
            text = texts.known(v, b"[" + b",".join(items) + b"]")
        else:
            text = texts.text(v)
        sections[k] = hashlib.sha256(text).hexdigest()
    # = canonical(body): sorted keys, "key":value joined by "," (tests/solver/test_replay.py)
    whole = b"{" + b",".join(canonical(k) + b":" + texts.text(body[k]) for k in sorted(body)) + b"}"
    sections = {k: sections[k] for k in _section_order(body)}
    return {"algorithm": "sha256", "scheme": HASH_SCHEME, "sections": sections,
            "all": hashlib.sha256(whole).hexdigest()}


def _section_order(body: dict) -> list[str]:
    """The section names in the order :func:`compute_hashes` lists them (each top-level key, each
    top-level list's items right after it)."""
    out = []
    for k, v in body.items():
        out.append(k)
        if isinstance(v, list):
            out.extend(f"{k}[{i}]" for i in range(len(v)))
    return out


def hash_problems(cert: dict, texts: Texts | None = None) -> list[tuple[str, str]]:
    """Sections whose stored hash differs from the recomputed one (``(path, message)``); ``texts``
    as for :func:`compute_hashes`."""
    stored = cert.get("hashes")
    if not isinstance(stored, dict) or not isinstance(stored.get("sections"), dict):
        return [("hashes", "missing or malformed")]
    fresh = compute_hashes(cert, texts)
    probs = [(k, "content differs from what was certified (section hash mismatch): the field was edited")
             for k, h in fresh["sections"].items() if stored["sections"].get(k) != h]
    probs += [(k, "section listed in hashes is missing") for k in stored["sections"] if k not in fresh["sections"]]
    if stored.get("all") != fresh["all"] and not probs:
        probs.append(("hashes.all", "whole-certificate hash mismatch"))
    if stored.get("algorithm") != "sha256" or stored.get("scheme") != HASH_SCHEME:
        probs.append(("hashes.scheme", "not this version's hash scheme"))
    return probs


# --------------------------------------------------------------------------------------------
# JSON paths


def fmt_path(parts) -> str:
    """``("search", "per_bound", 2, "empirical")`` → ``search.per_bound[2].empirical``."""
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out


@lru_cache(maxsize=1024)
def _split(pattern: str) -> tuple:
    parts: list = []
    for tok in pattern.replace("[", ".[").split("."):
        if not tok:
            continue
        if tok.startswith("["):
            inner = tok[1:-1]
            parts.append("*" if inner == "*" else int(inner))
        else:
            parts.append(tok)
    return tuple(parts)


def matches(path: tuple, pattern: str) -> bool:
    """True when the JSON path ``path`` (a tuple of keys and indices) lies at or under ``pattern``
    (``[*]`` matches any index, ``*`` as a key any key)."""
    pat = _split(pattern)
    if len(path) < len(pat):
        return False
    for p, q in zip(path, pat):
        if q == "*":
            continue
        if p != q:
            return False
    return True


def leaves(obj, path: tuple = ()) -> Iterator[tuple[tuple, object]]:
    """Every leaf (scalar, empty list or empty object) of ``obj`` with its path, depth first."""
    if isinstance(obj, dict) and obj:
        for k, v in obj.items():
            yield from leaves(v, path + (k,))
    elif isinstance(obj, list) and obj:
        for i, v in enumerate(obj):
            yield from leaves(v, path + (i,))
    else:
        yield path, obj


def _same_scalar(a, b) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if type(a) is float or type(b) is float:
        if not isinstance(a, (int, float)) or not isinstance(b, (int, float)):
            return False
        return abs(a - b) <= FLOAT_REL_TOL * max(abs(a), abs(b)) or a == b
    return type(a) is type(b) and a == b


def diff(stored, fresh, ignore: tuple[str, ...] = (), path: tuple = (),
         texts: tuple[Texts, Texts] | None = None) -> list[tuple[str, str]]:
    """Every difference between ``stored`` and ``fresh``, as ``(json path, message)``, skipping
    paths under an ``ignore`` pattern.  Scalars compare exactly except floats (relative
    :data:`FLOAT_REL_TOL`); objects by key set and values; lists by length and elements.

    Depth first, in ``stored``'s key order then ``fresh``'s new keys.  Equal subtrees are skipped
    whole (Python ``==`` confirmed by equal canonical JSON, so ``true`` never passes for ``1``), and
    the ignore patterns are matched one path component at a time (ISSUE 16: verify's comparison
    was half of an every-edit test's time).  ``texts``: the canonical texts known of ``stored``'s and
    of ``fresh``'s containers (:class:`Texts`, filled as they are compared)."""
    live = tuple((_split(p), 0) for p in ignore)
    if any(not parts for parts, _ in live):  # the empty pattern names the root
        return []
    live = _descend_patterns(live, path)
    if live is None:
        return []
    out: list[tuple[str, str]] = []
    _diff(stored, fresh, live, path, out, (Texts(), Texts()) if texts is None else texts)
    return out


def _descend_patterns(live, keys):
    """The patterns (as ``(parts, matched count)``) still open after ``keys``; None when one of
    them is matched completely (everything below is ignored)."""
    for k in keys:
        live = _step(live, k)
        if live is None:
            return None
    return live


def _step(live, key):
    nxt = []
    for parts, d in live:
        if d >= len(parts):
            return None
        q = parts[d]
        if q == "*" or q == key:
            if d + 1 >= len(parts):
                return None
            nxt.append((parts, d + 1))
    return tuple(nxt)


def _equal(a, b, texts: tuple[Texts, Texts]) -> bool:
    """``a`` and ``b`` equal as JSON values (for containers: a sufficient test, cheap); ``texts``:
    those known of ``a``'s side and ``b``'s."""
    if a != b:
        return False
    try:
        return texts[0].text(a) == texts[1].text(b)
    except (TypeError, ValueError):  # NaN or a non-JSON value: compare element by element
        return False


def _diff(stored, fresh, live, path: tuple, out: list, texts: tuple[Texts, Texts]) -> None:
    if isinstance(stored, dict) and isinstance(fresh, dict):
        if _equal(stored, fresh, texts):
            return
        for k in stored:
            sub = _step(live, k) if live else live
            if sub is None:
                continue
            if k not in fresh:
                out.append((fmt_path(path + (k,)), "not part of the certificate the replay produces"))
            else:
                _diff(stored[k], fresh[k], sub, path + (k,), out, texts)
        for k in fresh:
            if k not in stored and (not live or _step(live, k) is not None):
                out.append((fmt_path(path + (k,)), "missing (the replay produces it)"))
        return
    if isinstance(stored, list) and isinstance(fresh, list):
        if len(stored) != len(fresh):
            out.append((fmt_path(path) or "<root>", f"has {len(stored)} item(s), the replay gives {len(fresh)}"))
            return
        if _equal(stored, fresh, texts):
            return
        for i, (a, b) in enumerate(zip(stored, fresh)):
            sub = _step(live, i) if live else live
            if sub is not None:
                _diff(a, b, sub, path + (i,), out, texts)
        return
    if isinstance(stored, (dict, list)) or isinstance(fresh, (dict, list)) or not _same_scalar(stored, fresh):
        out.append((fmt_path(path) or "<root>", _differs(stored, fresh)))


def _differs(stored, fresh, limit: int = 80) -> str:
    """``is X, the replay gives Y``; for two long texts (an SMT-LIB2 query) both shown from just
    before their first different character, so the message shows what differs."""
    if isinstance(stored, str) and isinstance(fresh, str) and max(len(stored), len(fresh)) > limit - 2:
        i = next((k for k, (a, b) in enumerate(zip(stored, fresh)) if a != b), min(len(stored), len(fresh)))
        lo = max(0, i - 20)
        return (f"differs from character {i}: is {_short_at(stored, lo, limit)}, "
                f"the replay gives {_short_at(fresh, lo, limit)}")
    return f"is {_short(stored, limit)}, the replay gives {_short(fresh, limit)}"


def _short_at(text: str, start: int, limit: int) -> str:
    """``text`` from character ``start``, as JSON, cut to about ``limit`` characters ("..." marks a cut)."""
    s = json.dumps(text[start:start + limit], ensure_ascii=False)
    return ("..." if start else "") + (s if len(text) - start <= limit else s[:-1] + '..."')


def _short(x, limit: int = 80) -> str:
    s = json.dumps(x, ensure_ascii=False, allow_nan=True)
    return s if len(s) <= limit else s[:limit - 3] + "..."


# --------------------------------------------------------------------------------------------
# writing


def write_certificate(cert: dict, path: str | os.PathLike, *, force: bool = False, force_name: str = "force=True"
                      ) -> Path:
    """Write ``cert`` atomically as strict JSON: a temporary file in the same folder, fsync, then
    rename (or hard link, so a file that appeared meanwhile is never clobbered without ``force``).

    Raises :class:`ParameterError` for a ``cert`` that is not a dict (a certificate is one JSON
    object: :func:`load_certificate` reads nothing else), an existing file (without ``force``) or a
    value that is not strict JSON (NaN/Infinity, a set, a non-string key: named by path); on any
    error the target is untouched.  ``force_name``:
    how the existing-file message names the override (the command line passes ``--force``)."""
    if not isinstance(cert, dict):
        raise ParameterError(f"write_certificate: cert must be a certificate dict (as certify returns; a "
                             f"certificate is one JSON object), got {type(cert).__name__} {repr(cert)[:40]}")
    p = check_output_path(path, force=force, force_name=force_name)
    try:
        check_json(cert)
    except ParameterError as e:
        raise ParameterError(f"write_certificate: cert: {e}") from None
    data = json.dumps(cert, indent=1, ensure_ascii=False, allow_nan=False) + "\n"
    import tempfile  # (standard library, ~3 ms: a write's only; a verify reads)

    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=str(p.parent or "."))
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp creates 0600; a certificate is an ordinary file
        if force:
            os.replace(tmp, p)
        else:
            try:
                os.link(tmp, p)
            except FileExistsError:
                raise ParameterError(f"{p}: file exists; use {force_name} to overwrite it") from None
            except OSError:  # a file system without hard links: the checked rename
                if p.exists():
                    raise ParameterError(f"{p}: file exists; use {force_name} to overwrite it") from None
                os.replace(tmp, p)
            else:
                os.unlink(tmp)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    return p
