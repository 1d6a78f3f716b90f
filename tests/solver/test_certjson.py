"""solver/certjson.py's strict reading: :func:`loads` parses first and checks the nesting on the
parsed value (ISSUE 16); every text gives what the full check gives (the character scan, then the
strict parse: the path :func:`loads` takes for any text the first parse does not accept) — the same
value, or the same one-line error naming the first violation (nesting before strictness)."""

from __future__ import annotations

import json

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from softhard.constructions.errors import CertificateError
from softhard.solver import certjson

DEEP = certjson.MAX_DEPTH

TEXTS = {
    "nested to the limit": "[" * DEEP + "]" * DEEP,
    "one deeper": "[" * (DEEP + 1) + "]" * (DEEP + 1),
    "deeper and broken later": '{"a":\n' + "[" * (DEEP + 1) + "1,,]",
    "brackets in strings": json.dumps({"s": "[" * 500, "t": ["{\\\"" * 3]}),
    "far too deep": "[" * 100000,
    "a duplicate key": '{"a": 1, "b": [{"a": 2, "a": 3}]}',
    "NaN": '{"x": NaN}',
    "beyond float range": '{"x": [1.5, 1e999]}',
    "a paired surrogate escape": '{"x": "\\ud83d\\ude00"}',
    "a lone surrogate escape": '{"x": "\\ud800"}',
    "broken": '{"x": [1, 2}',
    "a scalar": "17",
    "huge integer": "[" + "9" * 5000 + "]",
    "a certificate's shape": json.dumps({"schema": "x", "claims": [{"queries": [{"smtlib": "(> n 1)"}]}] * 3,
                                         "nested": [[[[1.25]]]]}, indent=1),
}


def _outcome(text):
    try:
        return "value", certjson.loads(text, "c.json")
    except (CertificateError, ValueError) as e:
        return type(e).__name__, str(e)


@pytest.mark.parametrize("name", list(TEXTS))
def test_loads_gives_what_the_full_check_gives(name, monkeypatch):
    got = _outcome(TEXTS[name])
    monkeypatch.setattr(certjson, "_nesting_within", lambda obj, limit: False)  # the first parse accepts nothing
    assert got == _outcome(TEXTS[name])


def test_assembled_texts_are_the_canonical_ones():
    """verify's replay keys and the certificate's texts assembled from known parts (ISSUE 16) are
    byte for byte what :func:`canonical` writes: a wrapper around known sections and unknown values
    (nested, tuples, non-ASCII, floats, a non-string key), and a dict with a list section."""
    sec = {"b": [1, 2.5, {"τ": "1/3"}], "a": True}
    texts = certjson.Texts()
    texts.text(sec)
    for obj in (["tracr", [sec, {"z": None, "y": (1, [2, {"x": 1e16}])}, sec["b"]], 20.0],
                {"k": sec, "n": {1: "int key"}}, [], {}, "plain", 3):
        assert certjson.assembled_text(obj, texts) == certjson.canonical(obj)
    cert = {"claims": [{"id": 1}, {"id": 2, "w": [0.1]}], "sec": sec, "n": 0}
    t2 = certjson.Texts()
    assert certjson.object_text(cert, t2) == certjson.canonical(cert)
    assert t2.text(cert["claims"][1]) == certjson.canonical(cert["claims"][1])
    with pytest.raises(ValueError):
        certjson.assembled_text([sec, float("nan")], texts)


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.integers(min_value=-10**40, max_value=10**40)
    | st.floats(allow_nan=True, allow_infinity=True) | st.text(),
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=6), kids, max_size=4),
    max_leaves=20)


@settings(max_examples=400, deadline=None, derandomize=True)
@given(_JSON)
@example(-(10**40)).via("a top-level int beyond int64: the repr shortcut")
@example(True).via("a bool is an int subclass: the encoder's true, not repr's True")
def test_canonical_is_json_dumps_with_the_canonical_settings(obj):
    """canonical (one encoder built once, an int's repr) writes what ``json.dumps`` with sorted keys,
    separators ``,`` ``:``, no ASCII escaping and no NaN/Infinity writes, and refuses what it refuses."""
    try:
        want = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode("utf-8")
    except ValueError:
        with pytest.raises(ValueError):
            certjson.canonical(obj)
        return
    assert certjson.canonical(obj) == want
