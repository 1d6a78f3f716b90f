"""Random hard-attention transformers with planted gaps (THEORY §6; issue 5 item 5).

:func:`random_model_doc` draws a model document (the JSON format of
:mod:`softhard.constructions.modelfile`) with quantised weights: token embeddings in {−1, 0, 1},
attention and MLP weights multiples of 1/4, bounded positional features ``j/n`` and ``(−1)^j``,
random masks, AHA heads, and *numerical* outputs (no clean-up rounding, so the soft error is
visible at the output).  :func:`plant_gaps` then rescales every head's scores (its ``scale``
field, an exact rational) so that its exact minimum gap over all words of length ≤ N is exactly
the requested γ — the planted gap — layer by layer (rescaling a head changes no argmax set, hence
no hard activation, so later layers' gaps are measured on the final model).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from .gaps import analyse_gaps
from .modelfile import parse_model
from .transformer import MASKS


def _q(rng, shape, levels=(-2, -1, 0, 0, 1, 2), step=Fraction(1, 4)) -> list:
    a = rng.choice(levels, size=shape)
    return [[str(Fraction(int(v)) * step) for v in row] for row in np.atleast_2d(a)]


def random_model_doc(seed: int, *, layers: int = 2, width: int = 8, heads: int = 1, alphabet_size: int = 2,
                     key_dim: int = 2, hidden: int = 4, masks=MASKS, positional: bool = True) -> dict:
    """A random model document (module docstring).  ``width`` = d_model ≥ 4."""
    rng = np.random.default_rng(seed)
    d = width
    alph = [chr(ord("a") + i) for i in range(alphabet_size)]
    labels = [f"x{i}" for i in range(d)]
    E = rng.integers(-1, 2, size=(alphabet_size + 1, d)).astype(int)
    E[0] = 0
    E[0, 0] = 1  # a BOS marker
    doc = {"format": "softhard-model", "version": 1, "name": f"random-{seed}-L{layers}-d{d}-h{heads}",
           "description": "random quantised hard-attention transformer (softhard.constructions.random_models)",
           "alphabet": alph, "d_model": d, "residual": labels, "n_layers": layers,
           "token_embedding": E.tolist()}
    if positional:
        doc["positional"] = {"features": [{"family": "j/n", "coordinate": labels[1]},
                                          {"family": "(-1)^j", "coordinate": labels[2], "coefficient": "1/2"}]}
    ls = []
    for li in range(layers):
        hs = []
        for hi in range(heads):
            hs.append({"name": f"L{li}H{hi}", "W_Q": _q(rng, (d, key_dim)), "W_K": _q(rng, (d, key_dim)),
                       "W_V": _q(rng, (d, key_dim)), "W_O": _q(rng, (key_dim, d)),
                       "mask": str(rng.choice(list(masks))), "rule": "AHA"})
        mlp = {"name": f"L{li}MLP", "W1": _q(rng, (d, hidden)), "b1": _q(rng, (1, hidden))[0],
               "W2": _q(rng, (hidden, d), levels=(-1, 0, 0, 1)), "b2": ["0"] * d}
        ls.append({"heads": hs, "mlp": [mlp]})
    doc["layers"] = ls
    doc["outputs"] = [{"name": "y0", "type": "numerical", "coordinate": labels[-1]},
                      {"name": "y1", "type": "numerical", "coordinate": labels[-2]}]
    return doc


def plant_gaps(doc: dict, gap: Fraction, n_max: int, *, exhaustive_limit: int = 50_000) -> dict | None:
    """Set every head's ``scale`` so that its exact minimum gap over all words of length ≤ ``n_max``
    equals ``gap``.  Returns the new document, or None when some head never has a competitor
    outside its argmax set or has a near-zero gap (then no gap can be planted)."""
    doc = {**doc, "layers": [{**L, "heads": [dict(h) for h in L["heads"]]} for L in doc["layers"]]}
    rep = analyse_gaps(parse_model(doc).canonical(), n_max, exhaustive_limit=exhaustive_limit, method="exhaustive")
    for L in doc["layers"]:
        for h in L["heads"]:
            g = rep.heads[h["name"]].gap
            if g is None or g <= 0:
                return None
            old = Fraction(str(h.get("scale", "1")))
            new = old * gap / g
            h["scale"] = f"{new.numerator}/{new.denominator}"
    return doc
