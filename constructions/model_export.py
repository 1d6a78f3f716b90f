"""Export a float :class:`~softhard.constructions.transformer.Transformer` (e.g. a temporal-logic
construction) as a model document (:mod:`softhard.constructions.modelfile`), and write documents.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from .errors import ModelFormatError
from .hard_model import zeros
from .modelfile import FORMAT, VERSION
from .positional import PEFeature, family_value
from .transformer import MLP, Transformer


#: positional names of :mod:`softhard.constructions.weights` → (coordinate, family) pairs
_KNOWN_PE = {
    "pos=j/n, rpos=(n+1-j)/n": (("pos", "j/n"), ("rpos", "(n+1-j)/n")),
    "pos=j, rpos=n+1-j": (("pos", "j"), ("rpos", "n+1-j")),
}


def _num(x: float):
    x = float(x)
    return int(x) if x.is_integer() and abs(x) < 2**53 else x


def _mat(a: np.ndarray) -> list:
    return [[_num(v) for v in row] for row in np.asarray(a, dtype=np.float64)]


def export_transformer(tr: Transformer, *, name: str = "exported", description: str = "",
                       table_n_max: int | None = None, at: str = "all") -> dict:
    """Export a float :class:`Transformer` (e.g. a temporal-logic construction) to a model
    document (dict, JSON-ready).

    The positional embedding is written as named families when ``tr.positional_name`` is one of
    the constructions' (``pos=j/n, rpos=(n+1-j)/n`` → ``j/n`` and ``(n+1-j)/n``; regime U →
    ``j`` and ``n+1-j``), otherwise as a table up to ``table_n_max`` (which must then be given,
    and the embedding must not depend on n).  Every output coordinate becomes a boolean output
    read at ``at``.  Raises :class:`ModelFormatError` if the positional embedding cannot be
    represented.
    """
    d = tr.d
    doc: dict[str, Any] = {"format": FORMAT, "version": VERSION, "name": name, "description": description,
                           "alphabet": list(tr.alphabet), "d_model": d, "residual": list(tr.labels),
                           "n_layers": len(tr.blocks), "token_embedding": _mat(tr.token_embedding)}
    known = _KNOWN_PE.get(tr.positional_name)
    if known is not None:
        feats = []
        for coord, fam in known:
            if coord not in tr.labels:
                raise ModelFormatError(f"export: positional coordinate {coord!r} missing")
            feats.append({"family": fam, "coordinate": coord})
        # check the families reproduce the embedding
        for n in (1, 2, 7):
            P = tr.positional(n)
            Q = np.zeros_like(P)
            for coord, fam in known:
                f = PEFeature(family=fam, vector=zeros(d))
                Q[1:, tr.labels.index(coord)] = [float(family_value(f, j, n)) for j in range(1, n + 1)]
            if not np.array_equal(P, Q):
                raise ModelFormatError(f"export: positional embedding {tr.positional_name!r} does not match its families")
        doc["positional"] = {"features": feats}
    else:
        if table_n_max is None:
            raise ModelFormatError(f"export: positional embedding {tr.positional_name!r} is not a known family; "
                                   "give table_n_max to export it as a table")
        T = tr.positional(table_n_max)
        for n in (1, max(1, table_n_max // 2)):
            if not np.array_equal(tr.positional(n), T[: n + 1]):
                raise ModelFormatError("export: the positional embedding depends on n; it cannot be written as a table")
        if np.any(T):
            doc["positional"] = {"table": _mat(T)}
    layers = []
    for blk in tr.blocks:
        for m in blk.mlps:
            if not isinstance(m, MLP):  # e.g. the layer norm of an ``ln`` comparator (counting)
                raise ModelFormatError(f"export: sublayer {m.name!r} ({type(m).__name__}) is not a ReLU MLP; "
                                       "the model format has no layer normalisation")
        heads = [{"name": h.name, "W_Q": _mat(h.W_Q), "W_K": _mat(h.W_K), "W_V": _mat(h.W_V), "W_O": _mat(h.W_O),
                  "mask": h.mask, "rule": h.rule} for h in blk.heads]
        mlps = [{"name": m.name, "W1": _mat(m.W1), "b1": [_num(v) for v in m.b1], "W2": _mat(m.W2),
                 "b2": [_num(v) for v in m.b2]} for m in blk.mlps]
        layers.append({"heads": heads, "mlp": mlps})
    doc["layers"] = layers
    doc["outputs"] = [{"name": lab, "type": "boolean", "coordinate": lab, "at": at} for lab in tr.outputs]
    return doc


def write_model(doc: dict, path: str | os.PathLike) -> Path:
    """Write a model document as indented JSON (floats via ``repr``: exact round trip)."""
    p = Path(path)
    p.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    return p
