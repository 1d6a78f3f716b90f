"""solver/certjson.py's strict reading: :func:`loads` parses first and checks the nesting on the
parsed value (ISSUE 16); every text gives what the scan-then-parse order gives — the same value, or
the same one-line error naming the first violation (nesting before strictness)."""

from __future__ import annotations

import json

import pytest

from softhard.constructions.errors import CertificateError
from softhard.solver import certjson

DEEP = certjson.MAX_DEPTH


def _scan_then_parse(text: str, where: str):
    """The reading as it was: the character scan, then the strict parse."""
    ok, off = certjson._depth_ok(text, DEEP)
    if not ok:
        line = text.count("\n", 0, off) + 1
        col = off - (text.rfind("\n", 0, off) + 1) + 1
        raise CertificateError(f"{where}:{line}:{col}: nested deeper than {DEEP} levels")
    try:
        return json.loads(text, object_pairs_hook=certjson._no_duplicates, parse_constant=certjson._no_constant)
    except json.JSONDecodeError as e:
        raise CertificateError(f"{where}:{e.lineno}:{e.colno}: not valid JSON ({e.msg})") from None
    except CertificateError as e:
        raise CertificateError(f"{where}: {e}") from None


def _outcome(f, text):
    try:
        return "value", f(text, "c.json")
    except (CertificateError, ValueError) as e:
        return type(e).__name__, str(e)


TEXTS = {
    "nested to the limit": "[" * DEEP + "]" * DEEP,
    "one deeper": "[" * (DEEP + 1) + "]" * (DEEP + 1),
    "deeper and broken later": '{"a":\n' + "[" * (DEEP + 1) + "1,,]",
    "brackets in strings": json.dumps({"s": "[" * 500, "t": ["{\\\"" * 3]}),
    "far too deep": "[" * 100000,
    "a duplicate key": '{"a": 1, "b": [{"a": 2, "a": 3}]}',
    "NaN": '{"x": NaN}',
    "broken": '{"x": [1, 2}',
    "a scalar": "17",
    "huge integer": "[" + "9" * 5000 + "]",
}


@pytest.mark.parametrize("name", list(TEXTS))
def test_loads_gives_what_the_scan_then_parse_gives(name):
    text = TEXTS[name]
    assert _outcome(certjson.loads, text) == _outcome(_scan_then_parse, text)


def test_a_written_certificate_reads_as_before():
    cert = {"schema": "x", "claims": [{"queries": [{"smtlib": "(assert (> n 1))"}]}] * 3, "nested": [[[[1]]]]}
    text = json.dumps(cert, indent=1)
    assert certjson.loads(text) == _scan_then_parse(text, "c") == cert
