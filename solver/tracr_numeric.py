"""Tracr certificates, step 3: the numeric confirmation (measured) and its consistency checks (THEORY §7).

* :func:`confirm_examples`: the export's stored examples — the exact hard forward pass decoded
  against the stored RASP and numpy-hard outputs, the float64 soft pass at the compiled
  temperature against the hard one and the stored numpy-soft and JAX outputs;
* :func:`confirm_all_words`: every word up to ``max_seq_len`` run hard (exact) and soft (float64)
  against the bound, the attaining words re-run in 50-digit arithmetic (:func:`mp_error`).

Both are *measured*: a certificate's ``numeric`` section is not re-derived by the replay.
:func:`check_numeric` (verify) re-runs the examples (cheap; deterministic up to float64
rounding) and checks the all-words rows against each other and against the re-derived bound.
"""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import numpy as np

from ..bounds.derive import evaluate
from ..bounds.tracr import fs
from ..constructions.errors import SofthardError
from ..constructions.exact import ExactEngine, to_float
from ..constructions.gaps import all_tokens
from ..constructions.engine import forward
from ..constructions.transformer import Transformer
from .certjson import canonical, diff
from .replay import VerifyReport
from .tracr_analysis import Analysis

#: absolute float64 allowance of an all-words observation against its bound (outputs are O(1))
ALL_WORDS_ALLOWANCE = 2.0**-40 * 2
#: absolute tolerance of a re-run example's float64 deviations against the stored ones (verify)
EXAMPLE_FLOAT_TOL = 1e-9
#: the example deviations compared with EXAMPLE_FLOAT_TOL (the rest of the section exactly)
_EXAMPLE_FLOATS = ("max_abs_soft_minus_stored_numpy_soft", "max_abs_soft_minus_stored_jax_float32",
                   "max_abs_hard_minus_stored_numpy_hard")


def compiled_inv_tau_float(an: Analysis) -> float:
    """The compiled effective coldness ``c/sqrt(key_size)`` as a float (numeric runs)."""
    return float(an.coldness) / math.sqrt(int(an.info["key_size"]))


def _exact_engine(an: Analysis) -> ExactEngine:
    """The exact hard engine of ``an``'s model (built once per analysis: its exact weights)."""
    if "exact_engine" not in an.cache:
        an.cache["exact_engine"] = ExactEngine(an.hm)
    return an.cache["exact_engine"]


def _float_model(an: Analysis) -> Transformer:
    """The float64 transformer of ``an``'s model (:meth:`HardModel.transformer`, built once per
    analysis: every example and the all-words runs use the same one)."""
    if "float_model" not in an.cache:
        an.cache["float_model"] = an.hm.transformer()
    return an.cache["float_model"]


def _wkey(w: tuple) -> tuple:
    """A word as a memo key: each token with its type (``1``, ``1.0`` and ``True`` are equal as
    dict keys but not the same token)."""
    return tuple((type(t), t) for t in w)


def _exact_outputs(an: Analysis, words: list[tuple[str, ...]]) -> dict[tuple, np.ndarray]:
    """The exact hard output rows ``(L, k)`` (Fractions) of each word, by :func:`_wkey` (one batch
    per length: exact, so batching changes no value)."""
    hm = an.hm
    eng = _exact_engine(an)
    o = hm.outputs[0]
    out = {}
    by: dict[int, list] = {}
    for w in words:
        by.setdefault(len(w), []).append(w)
    for L, ws in by.items():
        tok = np.array([hm.encode(w) for w in ws], dtype=np.int64)
        x = eng.run(tok).x
        for b, w in enumerate(ws):
            out[_wkey(w)] = np.array([[Fraction(int(v), x.den) for v in x.num[b, i, o.coords]] for i in range(1, L + 1)],
                              dtype=object)
    return out


def _decode(an: Analysis, row) -> object:
    o = an.hm.outputs[0]
    if o.type == "categorical":
        return o.classes[int(np.argmax(np.asarray([float(v) for v in row])))]
    return row[0]


def value_tolerance(an: Analysis) -> Fraction:
    """The tolerance for comparing a numerical output's exact hard value with a stored float (RASP's
    or Tracr's): the output's margin — half the smallest distance between two distinct hard values
    over every word up to max_seq_len — so a stored number within it of the exact value identifies
    that value in the output's value set; 1/2 when the set has one value."""
    m = an.stats.outputs[an.hm.outputs[0].name].margin
    return m if m is not None and m > 0 else Fraction(1, 2)


def _same_value(decoded, rasp, categorical: bool, tol: Fraction) -> bool:
    """A decoded hard value equals a stored RASP value: categorical — the same class text;
    numerical — the stored number lies within ``tol`` (:func:`value_tolerance`, strictly) of the
    exact value, so it names the same member of the output's value set (bools are 0/1).  RASP's
    None (no value at that position) is not compared."""
    if rasp is None:
        return True
    if categorical:
        return str(decoded) == str(rasp)
    try:
        r = Fraction(float(rasp))
    except (TypeError, ValueError, OverflowError):
        return False
    return abs(Fraction(decoded) - r) < tol


def _word_runs(an: Analysis, w: tuple, exact: dict | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The passes of one input word at the compiled temperature: its exact hard output rows
    (:func:`_exact_outputs`, ``(L, k)`` Fractions; taken from ``exact`` when there) and its float64
    soft output rows (``(L, k)``), memoised on ``an`` by word (:func:`_wkey`): both are functions of the model and
    the word alone, so examples that differ only in their stored outputs (verify's edited copies
    of a certificate) share them.  Raises what the passes raise for a word the model cannot read."""
    runs, k = an.cache.setdefault("word_runs", {}), _wkey(w)
    got = runs.get(k)
    if got is None:
        hm = an.hm
        tr = _float_model(an)
        cols = [tr.labels.index(hm.labels[c]) for c in hm.outputs[0].coords]
        ex = exact[k] if exact and k in exact else _exact_outputs(an, [w])[k]
        soft_x = forward(tr, tr.encode([list(w)]), mode="soft", inv_tau=compiled_inv_tau_float(an)).x[0][1:, cols]
        got = runs[k] = (ex, soft_x)
    return got


def _example(an: Analysis, e: dict, exact: dict | None = None, key: bytes | None = None) -> tuple[dict, dict]:
    """One stored example re-run: its row and its float64 deviations (memoised on ``an``);
    ``exact``: exact hard outputs by word already computed (:func:`_exact_outputs`); ``key``: its
    canonical JSON, if computed."""
    cache = an.cache.setdefault("examples", {})
    key = canonical(e) if key is None else key
    if key in cache:
        return cache[key]
    o = an.hm.outputs[0]
    cat = o.type == "categorical"
    lam = compiled_inv_tau_float(an)
    w = tuple(e["input"])
    ex, soft_x = _word_runs(an, w, exact)
    hard = [_decode(an, r) for r in ex]
    soft = [_decode(an, r) for r in soft_x]
    has_rasp = any(v is not None for v in e["rasp"])
    tol = value_tolerance(an)
    h_ok = all(_same_value(a, r, cat, tol) for a, r in zip(hard, e["rasp"], strict=True)) if has_rasp else None
    dev = {k: None for k in _EXAMPLE_FLOATS}
    if cat:
        s_ok = all(str(a) == str(b) for a, b in zip(soft, hard))
        for k in ("numpy_soft", "compiled_jax"):
            if e.get(k) is not None:
                s_ok = s_ok and all(str(a) == str(b) for a, b in zip(soft, e[k], strict=True))
        nh_ok = (all(str(a) == str(b) for a, b in zip(hard, e["numpy_hard"], strict=True))
                 if e.get("numpy_hard") is not None else None)
    else:
        bound = float(evaluate(an.bound.outputs[o.name], n_value=len(w), inv_tau=lam))
        s_ok = all(abs(float(s) - float(h)) <= bound + 1e-12 for s, h in zip(soft_x[:, 0], hard))
        hard_f = np.array([float(h) for h in hard])
        for k, ref, name in (("numpy_soft", soft_x[:, 0], "max_abs_soft_minus_stored_numpy_soft"),
                             ("compiled_jax", soft_x[:, 0], "max_abs_soft_minus_stored_jax_float32"),
                             ("numpy_hard", hard_f, "max_abs_hard_minus_stored_numpy_hard")):
            if e.get(k) is not None:
                stored = np.asarray(e[k], dtype=float)
                if stored.shape != ref.shape:
                    raise ValueError(f"{k} has {stored.size} value(s) for {len(w)} position(s)")
                dev[name] = float(np.max(np.abs(ref - stored)))
        nh_ok = None if dev["max_abs_hard_minus_stored_numpy_hard"] is None else \
            dev["max_abs_hard_minus_stored_numpy_hard"] <= EXAMPLE_FLOAT_TOL
    row = {"input": list(w), "hard": [str(v) if cat else fs(v) for v in hard], "hard_equals_rasp": h_ok,
           "hard_equals_numpy_hard": nh_ok, "soft_agrees": s_ok}
    cache[key] = (row, dev)
    return row, dev


def confirm_examples(an: Analysis, examples: list[dict] | None = None) -> dict:
    """The stored examples (default: the export's, ``an.info["examples"]``): exact hard forward
    decoded vs the RASP outputs (must be equal; numerical: the exact rational's nearest double
    equals the stored value) and the stored numpy hard outputs; soft forward at the compiled
    temperature (float64) vs the hard one (categorical: the same class; numerical: within the
    bound) and the stored numpy soft and JAX outputs (categorical: the same class; numerical:
    the largest deviation reported).  Raises KeyError/TypeError/ValueError/ParameterError for a
    malformed example."""
    exs = [e for e in (an.info.get("examples") if examples is None else examples) or [] if e.get("input")]
    o = an.hm.outputs[0]
    if not exs:
        return {"count": 0, "hard_reproduced": None, "numpy_hard_reproduced": None, "soft_reproduced": None,
                "rows": []}
    done, runs = an.cache.get("examples", {}), an.cache.get("word_runs", {})
    try:  # the exact passes of the words not yet run, one batch per length (exact: batching changes no value)
        keys = [canonical(e) for e in exs]
        words = (tuple(e["input"]) for e, k in zip(exs, keys) if k not in done)
        exact = _exact_outputs(an, list({_wkey(w): w for w in words if _wkey(w) not in runs}.values()))
    except (SofthardError, KeyError, TypeError, ValueError, IndexError):
        keys, exact = [None] * len(exs), None  # a malformed example: each runs alone, the first bad one raises
    rows, devs = zip(*(_example(an, e, exact, k) for e, k in zip(exs, keys)))
    num = o.type == "numerical"

    def worst(k):
        vals = [d[k] for d in devs if d[k] is not None]
        return max(vals) if num and vals else None
    out = {"count": len(exs),
           "hard_reproduced": all(r["hard_equals_rasp"] is not False for r in rows),
           "numpy_hard_reproduced": all(r["hard_equals_numpy_hard"] is not False for r in rows),
           "soft_reproduced": all(r["soft_agrees"] for r in rows)}
    out.update({k: worst(k) for k in _EXAMPLE_FLOATS})
    out.update(inv_tau_float=compiled_inv_tau_float(an), rows=list(rows),
               note=("hard: exact rational forward pass, decoded (categorical: argmax class; numerical: the value, "
                     "which the stored RASP value must approach closer than the output's margin (half the smallest "
                     "distance between distinct hard values: it then names the same value) and the stored numpy hard "
                     "value to 1e-9; RASP's None is not compared); soft: float64 at the compiled temperature"),
               value_tolerance=None if not num else fs(value_tolerance(an)))
    return out


def examples_ok(ex: dict) -> bool:
    return (ex["hard_reproduced"] is not False and ex["numpy_hard_reproduced"] is not False
            and ex["soft_reproduced"] is not False)


def _mp_layers(an: Analysis, dps: int) -> list:
    """The model's weights as ``dps``-digit mpf values (memoised on ``an``): per layer its heads
    ``(mask, scale, W_Q, W_K, W_V W_O)`` and MLPs ``(W1, b1, W2, b2)``, each matrix by its columns,
    each column the list of its non-zero entries ``(row, value)`` (what :func:`_mp_mul` sums)."""
    key = ("mp_layers", dps)
    if key not in an.cache:
        hm = an.hm
        with mpmath.workdps(dps):
            def q(v: Fraction) -> mpmath.mpf:
                return mpmath.mpf(v.numerator) / v.denominator

            def cols(a: np.ndarray) -> list[list[tuple[int, mpmath.mpf]]]:
                return [[(r, q(a[r, c])) for r in range(a.shape[0]) if a[r, c] != 0] for c in range(a.shape[1])]
            an.cache[key] = [([(h.mask, q(h.scale), cols(h.W_Q), cols(h.W_K), cols(h.vo())) for h in hs],
                              [(cols(m.W1), [q(v) for v in m.b1], cols(m.W2), [q(v) for v in m.b2]) for m in ms])
                             for hs, ms in zip(hm.heads, hm.mlps)]
    return an.cache[key]


def _mp_mul(x: list[list], cols: list[list[tuple[int, mpmath.mpf]]]) -> list[list]:
    """``x · W`` (rows of mpf times a matrix given by its sparse columns, :func:`_mp_layers`): each
    entry one ``mpmath.fdot`` (exact products, one rounding) over the non-zero weights — the value
    ``mpmath.matrix`` multiplication gives (its ``fdot`` skips the zero products exactly)."""
    fdot = mpmath.fdot
    return [[fdot([(row[r], v) for r, v in col]) for col in cols] for row in x]


def mp_error(an: Analysis, word: tuple[str, ...], inv_tau, dps: int = 50) -> mpmath.mpf:
    """``max_i |soft − hard|`` over the output coordinates of ``word``, the soft forward pass in
    ``dps``-digit arithmetic (mpmath) against the exact hard one — resolves errors far below
    float64 resolution (THEORY §7).  Shapes: ``word`` of length n ≤ max_seq_len; the residual
    stream ``(n+1, d)``.  Each operation is the one of a dense ``mpmath.matrix`` evaluation (same
    roundings, same order; zero weights skipped, which changes no value: tested against it)."""
    hm = an.hm
    o = hm.outputs[0]
    ex = _exact_outputs(an, [word])[_wkey(word)]
    layers = _mp_layers(an, dps)
    with mpmath.workdps(dps):
        zero = mpmath.mpf(0)
        lam = mpmath.mpf(inv_tau.numerator) / inv_tau.denominator if isinstance(inv_tau, Fraction) else mpmath.mpf(inv_tau)
        N = len(word) + 1
        d = hm.d
        E = hm.token_embedding
        P = hm.positional_exact(len(word))
        ids = [0] + hm.encode(word)
        x = []
        for i, t in enumerate(ids):
            row = []
            for a in range(d):
                v = E[t, a] + P[i, a]
                row.append(mpmath.mpf(v.numerator) / v.denominator)
            x.append(row)
        for heads, mlps in layers:
            if heads:
                upd = [[zero] * d for _ in range(N)]
                for mask, sc, WQ, WK, VO in heads:
                    Q, K, V = _mp_mul(x, WQ), _mp_mul(x, WK), _mp_mul(x, VO)
                    kq = len(WQ)
                    written = [b for b in range(d) if VO[b]]  # a zero column of W_V W_O writes exactly 0
                    for i in range(N):
                        js = [0] if i == 0 else [j for j in range(N) if _att(mask, i, j)]
                        Qi = Q[i]
                        s = [sc * sum(Qi[c] * K[j][c] for c in range(kq)) for j in js]
                        top = max(s)
                        w = [mpmath.exp(lam * (v - top)) for v in s]
                        z = sum(w)
                        for b in written:
                            upd[i][b] += sum(wk * V[j][b] for wk, j in zip(w, js)) / z
                x = [[a + u if u else a for a, u in zip(xr, ur)] for xr, ur in zip(x, upd)]  # a + 0 is a
            for W1, b1, W2, b2 in mlps:
                pre = _mp_mul(x, W1)
                pre = [[max(p + c, 0) for p, c in zip(row, b1)] for row in pre]
                out = _mp_mul(pre, W2)
                x = [[a + t if (t := u + c) else a for a, u, c in zip(xr, ur, b2)] for xr, ur in zip(x, out)]
        err = mpmath.mpf(0)
        for i in range(1, N):
            for k, c in enumerate(o.coords):
                v = ex[i - 1][k]
                err = max(err, abs(x[i][c] - mpmath.mpf(v.numerator) / v.denominator))
        return +err


def _att(mask: str, i: int, j: int) -> bool:
    if j == 0:
        return True
    return {"none": True, "past": j <= i, "strict_past": j < i, "future": j >= i, "strict_future": j > i}[mask]


#: the fixed description of the all-words runs (verify compares it)
ALL_WORDS_NOTE = ("observed = max over words and positions of |soft - hard| on the output coordinates; float64 "
                  "cannot resolve errors below ~1e-15 (THEORY §7): those rows say resolved_in_float64 = false and the "
                  "attaining words are re-run with 50 digits (high_precision)")
#: how many words the 50-digit re-run takes at most (:func:`confirm_all_words`)
MP_WORDS = 16


def _mp_candidates(alphabet, L: int, worst: set[tuple]) -> list[tuple]:
    """The words re-run with 50 digits at the longest length ``L``: the float64 worst words
    ``worst`` and every ``s t…t`` and ``s…s t`` (s ≠ t), sorted, at most :data:`MP_WORDS`."""
    cands = set(worst)
    for s_ in alphabet:
        for t_ in alphabet:
            if s_ != t_:
                cands.add((s_,) + (t_,) * (L - 1))
                cands.add((s_,) * (L - 1) + (t_,))
    return sorted(cands)[:MP_WORDS]


def confirm_all_words(an: Analysis, inv_taus: list[float] | None = None) -> dict:
    """Every word up to max_seq_len run hard (exact) and soft (float64) at the compiled temperature
    (and at ``inv_taus``): per length the largest observed output error against the bound there,
    their ratio, the word attaining it.  At the longest length, the float64 worst words and the
    words ``s t…t`` and ``s…s t`` (at most :data:`MP_WORDS`) are re-run with the soft pass in 50-digit
    arithmetic (:func:`mp_error`): errors below float64 resolution are measured there."""
    hm = an.hm
    tr = _float_model(an)
    eng = _exact_engine(an)
    o = hm.outputs[0]
    cols = [tr.labels.index(hm.labels[c]) for c in o.coords]
    lam_c = compiled_inv_tau_float(an)
    lams = [lam_c] + [x for x in (inv_taus or []) if x != lam_c]
    k = len(hm.alphabet)
    per = {lam: [] for lam in lams}
    violations = 0
    mismatched = 0
    for L in range(1, an.n_table + 1):
        best = {lam: (-1.0, None, None) for lam in lams}
        stored = an.stats.hard_outputs.get((o.name, L))  # the analysis' exact passes over these very chunks
        for ci, tok in enumerate(all_tokens(k, L)):
            got = stored[ci] if stored is not None and ci < len(stored) else None
            if got is not None:
                hard = got[1][got[0]]
            else:
                hard = to_float(eng.run(tok).x)[:, 1:, :][..., o.coords]
            for lam in lams:
                soft = forward(tr, tok, mode="soft", inv_tau=lam).x[:, 1:, cols]
                diff = np.abs(soft - hard).max(axis=2)
                b, i = np.unravel_index(int(np.argmax(diff)), diff.shape)
                if diff[b, i] > best[lam][0]:
                    best[lam] = (float(diff[b, i]), tuple(hm.alphabet[int(t) - 1] for t in tok[b]), int(i) + 1)
                if lam == lam_c and o.type == "categorical":
                    mismatched += int(np.sum(np.argmax(soft, -1) != np.argmax(hard, -1)))
        for lam in lams:
            obs, w, row = best[lam]
            bd = float(evaluate(an.bound.outputs[o.name], n_value=L, inv_tau=lam))
            resolved = obs > 1e-14
            if obs > bd + ALL_WORDS_ALLOWANCE:
                violations += 1
            per[lam].append({"n": L, "words": k**L, "observed": obs, "bound": bd,
                             "ratio": (obs / bd) if bd > 0 and resolved else None,
                             "resolved_in_float64": resolved, "word": " ".join(w), "row": row})
    hp = []
    L = an.n_table
    cands = _mp_candidates(hm.alphabet, L, {tuple(r["word"].split()) for lam in lams for r in per[lam] if r["n"] == L})
    for lam in lams:
        best = None
        for w in cands:
            v = mp_error(an, w, Fraction(lam))
            if best is None or v > best[0]:
                best = (v, w)
        bd = evaluate(an.bound.outputs[o.name], n_value=L, inv_tau=Fraction(lam))
        hp.append({"inv_tau": lam, "n": L, "words_tried": len(cands), "word": " ".join(best[1]),
                   "observed_mp50": mpmath.nstr(best[0], 15), "bound": mpmath.nstr(bd, 15),
                   "ratio": float(best[0] / bd) if bd > 0 else None})
    return {"families": {"exhaustive": sum(k**L for L in range(1, an.n_table + 1))},
            "per_inv_tau": [{"inv_tau": lam, "compiled": lam == lam_c, "rows": per[lam]} for lam in lams],
            "high_precision": hp, "violations": violations, "mismatched_outputs": mismatched,
            "ok": violations == 0 and mismatched == 0 and all(h["ratio"] is None or h["ratio"] <= 1 + 1e-9 for h in hp),
            "note": ALL_WORDS_NOTE}


# --------------------------------------------------------------------------------------------
# verify: consistency of the measured section


def check_numeric(num: dict | None, examples: list[dict], an: Analysis, rep: VerifyReport) -> None:
    """Consistency of a certificate's measured ``numeric`` section (``examples``: the stored
    examples it was run on): the examples re-run and compared (exact fields exactly, float64
    deviations within :data:`EXAMPLE_FLOAT_TOL`), the all-words rows checked against each other
    and the re-derived bound (:func:`check_all_words`), and ``ok`` against both."""
    if num is None:
        return
    try:
        fresh = confirm_examples(an, examples)
    except (SofthardError, KeyError, TypeError, ValueError, IndexError, AttributeError, ArithmeticError) as e:
        rep.add("source.tracr.examples", f"cannot re-run the stored examples ({e.__class__.__name__}: {e})")
    else:
        stored = num["examples"]
        rep.problems.extend(diff(stored, fresh, _EXAMPLE_FLOATS, ("numeric", "examples")))
        for k in _EXAMPLE_FLOATS:
            a, b = stored.get(k), fresh.get(k)
            if (a is None) != (b is None) or (a is not None and not (isinstance(a, (int, float))
                                                                   and abs(a - b) <= EXAMPLE_FLOAT_TOL)):
                rep.add(f"numeric.examples.{k}", f"is {a!r}, re-running the stored examples gives {b!r}")
        rep.checked.append("stored examples re-run")
    check_all_words(rep, num["all_words"], an)
    ok = examples_ok(num["examples"]) and num["all_words"]["ok"]
    if num["ok"] is not ok:
        rep.add("numeric.ok", f"is {num['ok']!r} but the examples and the all-words runs give {ok!r}")


def _bound_at(an: Analysis, n, inv_tau) -> mpmath.mpf:
    """The output's bound at ``(n, 1/τ)`` (:func:`~softhard.bounds.derive.evaluate`), memoised on
    ``an`` for an int n and an int, float or Fraction 1/τ (verify re-checks the same rows of every
    edited copy of a certificate; other values are evaluated as given)."""
    expr = an.bound.outputs[an.hm.outputs[0].name]
    if type(n) is not int or type(inv_tau) not in (int, float, Fraction):
        return evaluate(expr, n_value=n, inv_tau=inv_tau)
    memo = an.cache.setdefault("bound_at", {})
    key = (n, type(inv_tau), inv_tau)
    if key not in memo:
        memo[key] = evaluate(expr, n_value=n, inv_tau=inv_tau)
    return memo[key]


def check_all_words(rep: VerifyReport, aw: dict, an: Analysis) -> None:
    """Consistency of the stored all-words runs (not re-run): the families and lengths, the
    compiled temperature, each row's bound re-evaluated at its (n, 1/τ), its ratio equal to
    observed/bound, its word one of that length over the alphabet and its row a position in it,
    the violation count equal to the rows whose observation exceeds the bound beyond the
    allowance used by :func:`confirm_all_words`, the 50-digit rows' bounds and ratios,
    their words (:func:`_mp_candidates` of the stored rows: the count and the attaining word among
    them), the fixed note, and ``ok``."""
    o = an.hm.outputs[0]
    N, k = an.n_table, len(an.hm.alphabet)
    alph = set(an.hm.alphabet)
    if aw["families"] != {"exhaustive": sum(k**L for L in range(1, N + 1))}:
        rep.add("numeric.all_words.families", f"is {aw['families']!r}, not every word of length <= {N}")
    viol = 0
    per = aw.get("per_inv_tau") or []
    for j, p in enumerate(per):
        if p["compiled"] is not (j == 0) or (j == 0 and p["inv_tau"] != compiled_inv_tau_float(an)):
            rep.add(f"numeric.all_words.per_inv_tau[{j}]", "the first run (only) is at the compiled temperature")
        rows = p.get("rows") or []
        if [(r["n"], r["words"]) for r in rows] != [(L, k**L) for L in range(1, N + 1)]:
            rep.add(f"numeric.all_words.per_inv_tau[{j}].rows", f"not one row per length 1..{N} with every word")
        for i, r in enumerate(rows):
            where = f"numeric.all_words.per_inv_tau[{j}].rows[{i}]"
            bd = float(_bound_at(an, r["n"], p["inv_tau"]))
            if abs(bd - r["bound"]) > 1e-12 * max(abs(bd), 1e-300):
                rep.add(f"{where}.bound", f"stored {r['bound']!r} but the bound at n = {r['n']} is {bd!r}")
            want = (r["observed"] / r["bound"]) if r["bound"] > 0 and r["resolved_in_float64"] else None
            if (want is None) != (r["ratio"] is None) or (want is not None and abs(want - r["ratio"]) > 1e-9 * max(1.0, want)):
                rep.add(f"{where}.ratio", f"stored {r['ratio']!r} but observed/bound gives {want!r}")
            if r["resolved_in_float64"] != (r["observed"] > 1e-14):
                rep.add(f"{where}.resolved_in_float64", "does not match the observed value")
            w = r["word"].split(" ")
            if len(w) != r["n"] or not set(w) <= alph:
                rep.add(f"{where}.word", f"is not a word of length {r['n']} over the alphabet")
            elif not 1 <= r["row"] <= r["n"]:
                rep.add(f"{where}.row", f"{r['row']!r} is not a position of a word of length {r['n']}")
            viol += r["observed"] > r["bound"] + ALL_WORDS_ALLOWANCE
    if viol != aw.get("violations"):
        rep.add("numeric.all_words.violations", f"stored {aw.get('violations')!r} but the stored rows show {viol}")
    if o.type != "categorical" and aw["mismatched_outputs"] != 0:
        rep.add("numeric.all_words.mismatched_outputs", "counted only for a categorical output")
    if aw["note"] != ALL_WORDS_NOTE:
        rep.add("numeric.all_words.note", "is not the fixed description")
    hp = aw.get("high_precision") or []
    cands = _mp_candidates(an.hm.alphabet, N, {tuple(r["word"].split(" ")) for p in per for r in p.get("rows") or []
                                               if r["n"] == N})
    if [h["inv_tau"] for h in hp] != [p["inv_tau"] for p in per]:
        rep.add("numeric.all_words.high_precision", "not one 50-digit run per temperature of the all-words runs")
    for j, h in enumerate(hp):
        where = f"numeric.all_words.high_precision[{j}]"
        bd = _bound_at(an, N, Fraction(h["inv_tau"]))
        if h["n"] != N or h["bound"] != mpmath.nstr(bd, 15):
            rep.add(f"{where}.bound", f"stored {h['bound']!r} at n = {h['n']}, but the bound at n = {N} is "
                                      f"{mpmath.nstr(bd, 15)}")
        if h["words_tried"] != len(cands) or tuple(h["word"].split(" ")) not in cands:
            rep.add(f"{where}.words_tried" if h["words_tried"] != len(cands) else f"{where}.word",
                    f"the 50-digit run takes the {len(cands)} words of the rows and the pairs s t…t, s…s t, "
                    f"and its word is one of them (stored {h['words_tried']!r}, {h['word']!r})")
        want = float(mpmath.mpf(h["observed_mp50"]) / bd) if bd > 0 else None
        if (want is None) != (h["ratio"] is None) or (want is not None and abs(want - h["ratio"]) > 1e-9 * max(1.0, want)):
            rep.add(f"{where}.ratio", f"stored {h['ratio']!r} but observed_mp50/bound gives {want!r}")
    ok = viol == 0 and aw["mismatched_outputs"] == 0 and all(h["ratio"] is None or h["ratio"] <= 1 + 1e-9 for h in hp)
    if aw["ok"] is not ok:
        rep.add("numeric.all_words.ok", f"is {aw['ok']!r} but the rows give {ok!r}")
    rep.checked.append("all-words numeric rows consistent")
