"""The results of a gap analysis (:mod:`softhard.constructions.gaps`): per head the minimum score
gap, per output the rounding margin, and the report that holds them (THEORY §2, §6).  Plain data
with exact values (``Fraction``) and their JSON; a lower module so that the analysis and the
split of its exhaustive enumeration (:mod:`softhard.constructions.gap_tasks`) share it."""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

import mpmath


@dataclass
class HeadGap:
    """Gap of one head over the analysed inputs (exact).

    * ``gap``: the gap the bound uses — AHA: min of ``s* − max_{j∉A} s_j``; UHA: 0 if some row has
      a tied maximum, else the same; None if no row ever had a competitor;
    * ``word``/``row``: an input and query row (1-based position) attaining ``gap``;
    * ``ties_max``: the largest argmax set seen (AHA ties add the distortion term of THEORY §6);
    * ``gap_untied`` (+ ``word_untied``/``row_untied``): the gap to the non-maximal positions
      ignoring ties (what a UHA tie-break has to stay below);
    * ``rows_uniform`` / ``rows_unique`` / ``rows_tied``: query rows (≥ 1, every analysed input)
      whose argmax set is the whole mask (all scores equal: soft attention is the AHA average
      exactly), has one element, or has ≥ 2 elements with a competitor outside it (a row the
      ball engine cannot decide counts as tied); ``word_tied``/``row_tied``: the first tied row.
      The head is **uniform-tieless** (:attr:`tieless`) when no row is tied — the condition of the
      paper's first version (arXiv 2412.09925v1) for simulating AHA; THEORY §6;
    * ``f64_sep`` (+ ``f64_word``/``f64_row``): the smallest float64 separation
      ``gap_i / (2·c·A_i)`` over the analysed rows with a competitor (:func:`float64_separation`;
      ``f64_checked`` False when the engine has no exact scores: layer norms); ``f64_fail``: rows
      with separation ≤ 1 (float64 may round the argmax and its nearest competitor together).
    """

    name: str
    layer: int
    mask: str
    rule: str
    gap: Fraction | None = None
    word: tuple[str, ...] | None = None
    row: int = -1
    ties_max: int = 0
    gap_untied: Fraction | None = None
    word_untied: tuple[str, ...] | None = None
    row_untied: int = -1
    rows_uniform: int = 0
    rows_unique: int = 0
    rows_tied: int = 0
    word_tied: tuple[str, ...] | None = None
    row_tied: int = -1
    f64_sep: Fraction | None = None
    f64_word: tuple[str, ...] | None = None
    f64_row: int = -1
    f64_fail: int = 0
    f64_checked: bool = False

    @property
    def tieless(self) -> bool:
        """Every analysed row uniform or with a unique maximum (uniform-tieless, THEORY §6)."""
        return self.rows_tied == 0

    def tieless_json(self) -> dict:
        """The uniform-tieless check as JSON: the verdict, the row counts, the first tied row."""
        return {"tieless": self.tieless,
                "rows": {"uniform": int(self.rows_uniform), "unique_max": int(self.rows_unique),
                         "tied": int(self.rows_tied)},
                "tied_at": None if self.word_tied is None else {"word": list(self.word_tied), "row": self.row_tied}}

    def float64_json(self) -> dict | None:
        """The float64 separation over the analysed rows (None when not checked: a layer-norm model)."""
        if not self.f64_checked:
            return None
        return {"separation": fs(self.f64_sep), "separation_decimal": fd(self.f64_sep),
                "attained_by": None if self.f64_word is None else {"word": list(self.f64_word), "row": self.f64_row},
                "rows_failing": int(self.f64_fail)}

    def to_json(self) -> dict:
        return {"head": self.name, "layer": self.layer, "mask": self.mask, "rule": self.rule,
                "gap": fs(self.gap), "gap_decimal": fd(self.gap),
                "attained_by": None if self.word is None else {"word": list(self.word), "row": self.row},
                "ties_max": int(self.ties_max), "gap_untied": fs(self.gap_untied),
                "gap_untied_decimal": fd(self.gap_untied), **self.tieless_json(), "float64": self.float64_json()}


@dataclass
class OutputMargin:
    """Smallest rounding margin of one output over the analysed inputs (exact; None for numerical)."""

    name: str
    type: str
    margin: Fraction | None = None
    word: tuple[str, ...] | None = None
    row: int = -1

    def to_json(self) -> dict:
        return {"output": self.name, "type": self.type, "margin": fs(self.margin), "margin_decimal": fd(self.margin),
                "attained_by": None if self.word is None else {"word": list(self.word), "row": self.row}}


@dataclass
class LNVariance:
    """Smallest variance of one layer norm's input over the analysed inputs (every row, BOS
    included; a rigorous lower bound from the ball engine, :mod:`softhard.constructions.exact_balls`),
    with the word and row attaining it: the premise of the norm's local Lipschitz bound."""

    name: str
    var: Fraction | None = None
    word: tuple[str, ...] | None = None
    row: int = -1

    def to_json(self) -> dict:
        return {"layernorm": self.name, "variance_min": fs(self.var), "variance_min_decimal": fd(self.var),
                "attained_by": None if self.word is None else {"word": list(self.word), "row": self.row}}


@dataclass
class GapReport:
    """Result of :func:`analyse_gaps`.

    ``method``: "exhaustive" (every word of length 1..n_max: the minima are established) or
    "searched" (the minima over the ``words`` inputs tried; not a proof); ``lengths``: the lengths
    evaluated; ``heads``/``outputs``: per head / output; ``notes``: caveats.
    """

    method: str
    n_max: int
    alphabet_size: int
    words: int
    lengths: list[int]
    heads: dict[str, HeadGap]
    outputs: dict[str, OutputMargin]
    seconds: float = 0.0
    seed: int | None = None
    notes: list[str] = field(default_factory=list)
    layernorms: dict[str, LNVariance] = field(default_factory=dict)

    @property
    def exhaustive(self) -> bool:
        return self.method == "exhaustive"

    def zero_gap(self) -> list[HeadGap]:
        """Heads with gap 0 on some analysed input: not simulable by softmax this way (THEORY §6)."""
        return [h for h in self.heads.values() if h.gap is not None and h.gap <= 0]

    @property
    def simulable(self) -> bool:
        return not self.zero_gap()

    def to_json(self) -> dict:
        out = {"method": self.method, "n_max": self.n_max, "alphabet_size": self.alphabet_size,
               "words": self.words, "lengths": self.lengths if len(self.lengths) <= 40 else
               [self.lengths[0], "...", self.lengths[-1]],
               "heads": [h.to_json() for h in self.heads.values()],
               "outputs": [o.to_json() for o in self.outputs.values()],
               "simulable": self.simulable, "seconds": round(self.seconds, 4), "seed": self.seed,
               "notes": list(self.notes)}
        if self.layernorms:
            out["layernorms"] = [v.to_json() for v in self.layernorms.values()]
        return out


#: unit roundoff of float64
U64 = Fraction(1, 2**53)


def float64_rounding_constant(d: int, k: int) -> Fraction:
    """``c`` with ``|fl(s_ij) − s_ij| ≤ c·A_i`` for a score ``s_ij = scale·(x_i W_Q)·(x_j W_K)``
    computed in float64 from the exact residual (shapes: x (d,), W_Q, W_K (d, k)), where
    ``A_i = scale·(|x_i||W_Q|)·max_j(|x_j||W_K|)``: rounding x and the weights (2u each side), the two
    length-d products (γ_d each), the length-k dot product (γ_k) and the scale (u) give
    ``(2d + k + 5)·u`` to first order (Higham, *Accuracy and Stability*, §3.1); the factor 101/100
    covers the higher-order terms (γ_m = mu/(1 − mu) ≤ 1.01·mu for mu ≤ 1/101).  Exact."""
    return Fraction(101, 100) * (2 * d + k + 5) * U64


def fs(x: Fraction | None) -> str | None:
    """``x`` as exact text (``"p/q"`` or ``"p"``), None for None."""
    if x is None:
        return None
    return f"{x.numerator}/{x.denominator}" if x.denominator != 1 else str(x.numerator)


def fd(x: Fraction | None) -> str | None:
    """``x`` as a 12-digit decimal, None for None."""
    if x is None:
        return None
    with mpmath.workdps(30):
        return mpmath.nstr(mpmath.mpf(x.numerator) / x.denominator, 12)
