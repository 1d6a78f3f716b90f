"""Reading a JSON input file (model files, Tracr exports' metadata): one reader, one set of
messages, and a nesting limit checked before Python's recursive decoder could overflow its stack
(issue 15: a deeply nested model file crashed with RecursionError)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from .errors import ModelFormatError

#: deepest nesting accepted in an input JSON file (a model document is about 6 levels deep; a
#: certificate embedding it allows 64, solver/certjson.MAX_DEPTH)
MAX_JSON_DEPTH = 32

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_BRACKETS = re.compile(r"[\[\]{}]")


def nesting_depth(text: str) -> int:
    """The deepest bracket nesting of JSON ``text`` outside strings (malformed text: an
    over-estimate is harmless, the decoder then names the error)."""
    depth = best = 0
    for m in _BRACKETS.finditer(_STRING.sub('""', text)):
        depth += 1 if m.group() in "[{" else -1
        best = max(best, depth)
    return best


def read_json_file(p: Path, what: str) -> tuple[bytes, object]:
    """``(raw bytes, parsed JSON)`` of the file ``p`` (``what``: how to name it in a message, e.g.
    "a model file").  Raises :class:`ModelFormatError` with one line naming the file for an
    unreadable file, non-UTF-8 text, nesting deeper than :data:`MAX_JSON_DEPTH` or invalid JSON
    (with line:column)."""
    try:
        raw = p.read_bytes()
    except OSError as e:
        raise ModelFormatError(f"{p}: cannot read ({e.strerror or e})") from None
    except ValueError:  # "embedded null byte" (found by benchmarks/fuzz.py)
        raise ModelFormatError(f"{p}: not a file name (it contains a NUL character)") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ModelFormatError(f"{p}: not UTF-8 text ({what} is JSON)") from None
    if nesting_depth(text) > MAX_JSON_DEPTH:
        raise ModelFormatError(f"{p}: nested deeper than {MAX_JSON_DEPTH} levels ({what} is a shallow JSON document)")
    try:
        return raw, json.loads(text)
    except json.JSONDecodeError as e:
        raise ModelFormatError(f"{p}:{e.lineno}:{e.colno}: not valid JSON ({e.msg})") from None


def other_document(doc: object, expected: str) -> str | None:
    """What a parsed JSON ``doc`` is when it is one of softhard's other inputs rather than
    ``expected`` ("model", "tracr" or "certificate"), as a clause for a one-line message: "a softhard
    certificate (check it with softhard verify FILE)"; None when it looks like none of them (the
    caller's own checks then name what is wrong).  Recognised by the fields each kind must have:
    a certificate's ``schema`` and ``kind``, a model file's ``format`` "softhard-model", a Tracr
    export's ``program`` and ``input_encoding``."""
    if not isinstance(doc, dict):
        return None
    kinds = {
        "certificate": ("a softhard certificate (check it with softhard verify FILE)",
                        "schema" in doc and "kind" in doc),
        "model": ("a softhard model file (certify it with softhard certify --model FILE)",
                  doc.get("format") == "softhard-model"),
        "tracr": ("a Tracr export's metadata (certify it with softhard certify --tracr NAME)",
                  "program" in doc and "input_encoding" in doc),
    }
    for kind, (text, found) in kinds.items():
        if kind != expected and found:
            return text
    return None
