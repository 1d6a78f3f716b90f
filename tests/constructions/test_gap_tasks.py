"""The split of an exhaustive enumeration into tasks (issue 18): the tasks' words are exactly
every word in product order, and the gap analysis merged from many small tasks equals a
word-by-word reference computed here."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from softhard.constructions import gap_tasks
from softhard.constructions.exact import ExactEngine
from softhard.constructions.gaps import analyse_gaps
from softhard.constructions.modelfile import parse_model
from softhard.constructions.words import count_words
from softhard.constructions.random_models import random_model_doc


@pytest.mark.parametrize("k,n_max,chunks", [(2, 9, 1), (3, 5, 2), (2, 12, None)])
def test_tasks_cover_every_word_once_in_product_order(k, n_max, chunks, monkeypatch):
    monkeypatch.setattr(gap_tasks, "CHUNK", 16)
    tasks = gap_tasks.exhaustive_tasks(k, n_max, chunks)
    assert tasks == gap_tasks.exhaustive_tasks(k, n_max, chunks)  # deterministic
    for n in range(1, n_max + 1):
        got = [tuple(r) for t in tasks if t[0] == n for blk in gap_tasks.task_tokens(k, t) for r in blk.tolist()]
        assert got == list(itertools.product(range(1, k + 1), repeat=n))
        # the blocks are the whole length's blocks (all_tokens), cut at the same places
        blocks = [blk.tolist() for t in tasks if t[0] == n for blk in gap_tasks.task_tokens(k, t)]
        assert blocks == [b.tolist() for b in gap_tasks.all_tokens(k, n)]
    assert sum(t[2] - t[1] for t in tasks) == count_words(k, n_max) == sum(k**n for n in range(1, n_max + 1))


def uha_model(seed: int):
    """A random model whose heads alternate AHA / rightmost UHA (ties are frequent: small weights)."""
    doc = random_model_doc(seed, layers=2, heads=2, alphabet_size=2, width=6)
    for L in doc["layers"]:
        for i, h in enumerate(L["heads"]):
            h["rule"] = "AHA" if i % 2 == 0 else "UHA-rightmost"
    return parse_model(doc).canonical()


def reference(hm, n_max: int) -> dict:
    """Per head, word by word in product order and row by row: the first (word, row) attaining the
    minimum gap (0 for a UHA tie), the first attaining the minimum gap to non-maximal positions,
    and the largest tie set (THEORY §6) — one word per exact run, no batching, no merging."""
    eng = ExactEngine(hm)
    out = {h.name: {"gap": None, "at": None, "untied": None, "at_untied": None, "ties": 0} for h in hm.all_heads()}
    for n in range(1, n_max + 1):
        for w in itertools.product(range(1, len(hm.alphabet) + 1), repeat=n):
            run = eng.run(np.array([w], dtype=np.int64))
            word = tuple(hm.alphabet[t - 1] for t in w)
            for name, rows in run.heads.items():
                r = out[name]
                for i in range(1, n + 1):
                    r["ties"] = max(r["ties"], int(rows.ties[0, i]))
                    g, u = rows.gap(0, i), rows.aha_gap(0, i)
                    if g is not None and (r["gap"] is None or g < r["gap"]):
                        r["gap"], r["at"] = g, (word, i)
                    if u is not None and (r["untied"] is None or u < r["untied"]):
                        r["untied"], r["at_untied"] = u, (word, i)
    return out


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_many_small_tasks_equal_the_word_by_word_reference(seed, monkeypatch):
    hm = uha_model(seed)
    n_max = 7
    ref = reference(hm, n_max)
    whole = analyse_gaps(hm, n_max, method="exhaustive")
    monkeypatch.setattr(gap_tasks, "CHUNK", 8)
    monkeypatch.setattr(gap_tasks, "TASK_CHUNKS", 1)
    assert len(gap_tasks.exhaustive_tasks(2, n_max)) == sum(-(-2**n // 8) for n in range(1, n_max + 1)) == 33
    split = analyse_gaps(hm, n_max, method="exhaustive")
    for rep in (whole, split):
        assert rep.words == 2**(n_max + 1) - 2
        for name, r in ref.items():
            hg = rep.heads[name]
            assert (hg.gap, (hg.word, hg.row) if hg.word else None) == (r["gap"], r["at"]), name
            assert (hg.gap_untied, (hg.word_untied, hg.row_untied)) == (r["untied"], r["at_untied"]), name
            assert hg.ties_max == r["ties"]
    j1, j2 = whole.to_json(), split.to_json()
    j1.pop("seconds"), j2.pop("seconds")
    assert j1 == j2
