"""solver/records.py: the records a verify's path uses instead of dataclasses (ISSUE 16) behave as
the dataclasses they replaced — compared with dataclass twins defined here: the same repr, the same
equality, unhashable (hashable and read-only when frozen), a fresh list or dict per default."""

from __future__ import annotations

from dataclasses import field, make_dataclass

import pytest

from softhard.solver import balls, replay, replay_memo
from softhard.solver.cli.handlers import jobs
from softhard.solver.cli.options import UsageErrors


def LIST():
    return field(default_factory=list)


def DICT():
    return field(default_factory=dict)


#: record -> (its dataclass twin's fields, the fewest arguments, more arguments)
CASES = {
    replay.VerifyReport: ([("problems", list, LIST()), ("checked", list, LIST()), ("status", str, None),
                           ("seconds", float, 0.0), ("undecided", bool, False)],
                          {}, {"problems": [("a", "b")], "status": "ok", "seconds": 1.5}),
    replay_memo.Replayed: ([("fresh", dict), ("problems", list, LIST()), ("checked", list, LIST()),
                            ("transcript", list, LIST()), ("from_artefact", bool, False)],
                           {"fresh": {}}, {"fresh": {"x": 1}, "checked": ["c"], "from_artefact": True}),
    balls.ArbResult: ([("status", str), ("boxes", int), ("seconds", float), ("counterexample", int, None),
                       ("value", str, None), ("reason", str, "")], {"status": "proved", "boxes": 3, "seconds": 0.1},
                      {"status": "refuted", "boxes": 2, "seconds": 0.2, "counterexample": 7, "value": "0.3"}),
    jobs.Job: ([("index", int), ("args", object), ("label", str), ("grid", dict, DICT()), ("name", str, "")],
               {"index": 0, "args": None, "label": "x"}, {"index": 1, "args": None, "label": "y", "name": "n"}),
    UsageErrors: ([("json", bool, False)], {}, {"json": True}),
}


@pytest.mark.parametrize("cls", list(CASES), ids=lambda c: c.__name__)
def test_records_behave_as_their_dataclass_twins(cls):
    spec, least, more = CASES[cls]
    twin = make_dataclass(cls.__name__, spec)
    for kw in (least, more):
        assert repr(cls(**kw)) == repr(twin(**kw))
        assert cls(**kw) == cls(**kw) and twin(**kw) == twin(**kw)
    assert (cls(**least) == cls(**more)) is (twin(**least) == twin(**more)) is False
    assert cls(**least) != twin(**least)  # another class: never equal, as two dataclasses
    for obj in (cls(**least), twin(**least)):
        with pytest.raises(TypeError):
            hash(obj)
    a, b = cls(**least), cls(**least)
    for name in ("problems", "checked", "transcript", "grid"):
        if hasattr(a, name):
            assert getattr(a, name) == {} or getattr(a, name) == []
            assert getattr(a, name) is not getattr(b, name)  # a fresh default each


def test_kind_is_frozen_and_hashable_as_its_dataclass_twin():
    def f(*a):
        return a

    twin = make_dataclass("Kind", [("name", str), ("inputs", object), ("replay", object),
                                   ("check_measured", object, None)], frozen=True)
    k, t = replay.Kind("formula", f, f), twin("formula", f, f)
    assert repr(k) == repr(t) and k == replay.Kind(name="formula", inputs=f, replay=f, check_measured=None)
    assert k != replay.Kind("model", f, f) and t != twin("model", f, f)
    assert hash(k) == hash(replay.Kind("formula", f, f)) and hash(t) == hash(twin("formula", f, f))
    for obj in (k, t):
        with pytest.raises(AttributeError):
            obj.name = "model"
        with pytest.raises(AttributeError):
            del obj.inputs
