"""Values of model files: exact numbers, indices (labels, symbols), matrices and vectors (dense,
``npz:`` or sparse), and the parsing context that names the file and field in every message.

:mod:`softhard.constructions.modelfile` documents the format; this module holds the readers every
part of it shares.  Each reader raises :class:`~softhard.constructions.errors.ModelFormatError`
with one line: file, field, what was expected.
"""

from __future__ import annotations

import json
import math
import re
from fractions import Fraction
from typing import Sequence

import numpy as np

from .errors import ModelFormatError
from .hard_model import zeros

#: largest d_model and number of entries of a declared (sparse) array: an exact object array holds a
#: pointer per entry (2^24 entries: 128 MiB); dense lists and npz arrays are bounded by their file
MAX_ENTRIES = 1 << 24
#: largest decimal exponent of a number written as a string ("1e-300"): 10^10000 is a 33000-bit integer,
#: 10^(10^9) would take minutes and gigabytes to build exactly
MAX_EXPONENT = 10_000
_EXPONENT = re.compile(r"[eE]\s*([+-]?\d+)\s*$")


# ---------------------------------------------------------------------------------------------
# parsing and validation


class Ctx:
    """Parsing context: the file name (for messages), residual labels, the npz archive."""

    def __init__(self, path: str, npz: dict | None):
        self.path = path
        self.npz = npz
        self.used: set[str] = set()
        self.labels: list[str] = []
        self.alphabet: tuple[str, ...] = ()

    def err(self, where: str, msg: str) -> ModelFormatError:
        return ModelFormatError(f"{self.path}: {where}: {msg}")


def exact(x, ctx: Ctx, where: str) -> Fraction:
    """The exact value (a Fraction) of a number field (JSON number: its exact binary value; string:
    an exact rational); raises :class:`ModelFormatError` naming ``where``.  Its nearest double (what the float runtime uses) must be
    finite, so ``10**400`` or ``"1e400"`` is an error here, not an OverflowError in a run."""
    f = exact_value_of(x, ctx, where)
    try:
        float(f)
    except OverflowError:
        shown = x if not isinstance(x, int) or abs(x) < 10**30 else f"about 10^{len(str(abs(x))) - 1}"
        raise ctx.err(where, f"{shown} is beyond the float64 range (magnitude below about 1.8e308): the float "
                             f"runtime holds every weight as its nearest double") from None
    return f


def exact_value_of(x, ctx: Ctx, where: str) -> Fraction:
    """:func:`exact` without the float64 range check."""
    if isinstance(x, bool) or x is None:
        raise ctx.err(where, f"expected a number, got {json.dumps(x)}")
    if isinstance(x, int):
        return Fraction(x)
    if isinstance(x, float):
        if not math.isfinite(x):
            raise ctx.err(where, f"contains a non-finite number ({x}): NaN and infinities are not allowed")
        return Fraction(x)
    if isinstance(x, str):
        s = x.strip()
        if s.lower() in ("nan", "inf", "+inf", "-inf", "infinity", "-infinity"):
            raise ctx.err(where, f"contains a non-finite number ({s}): NaN and infinities are not allowed")
        m = _EXPONENT.search(s)
        if m and abs(int(m.group(1))) > MAX_EXPONENT:
            raise ctx.err(where, f"{x!r}: decimal exponent beyond +-{MAX_EXPONENT}")
        try:
            return Fraction(s)
        except (ValueError, ZeroDivisionError):
            raise ctx.err(where, f"{x!r} is not a number (use a JSON number or an exact rational like \"1/3\")") from None
    raise ctx.err(where, f"expected a number, got {type(x).__name__}")


def index(x, axis: str, size: int, ctx: Ctx, where: str) -> int:
    """An index (in ``[0, size)``; raises :class:`ModelFormatError` otherwise) on ``axis`` ("residual", "token" or "plain"): int, or a label/symbol."""
    if isinstance(x, bool):
        raise ctx.err(where, f"index {x!r} is not an integer or label")
    if isinstance(x, int):
        if not 0 <= x < size:
            raise ctx.err(where, f"index {x} is out of range [0, {size})")
        return x
    if isinstance(x, str):
        if axis == "residual":
            if x not in ctx.labels:
                raise ctx.err(where, f"{x!r} is not a residual label (labels: {', '.join(ctx.labels)})")
            k, what = ctx.labels.index(x), "coordinate"
        elif axis == "token":
            if x != "BOS" and x not in ctx.alphabet:
                raise ctx.err(where, f"{x!r} is neither BOS nor a symbol of the alphabet")
            k, what = (0 if x == "BOS" else ctx.alphabet.index(x) + 1), "row"
        else:
            raise ctx.err(where, f"index {x!r} must be an integer")
        if not k < size:
            raise ctx.err(where, f"{x!r} is {what} {k}, outside the declared size {size}")
        return k
    raise ctx.err(where, f"index {x!r} must be an integer" + (" or a label" if axis != "plain" else ""))


def check_shape(got_shape: tuple, shape: tuple, axes: tuple, ctx: Ctx, where: str) -> None:
    """An array's shape against the expected one (``None``: free); raises :class:`ModelFormatError`."""
    for k, (got, want) in enumerate(zip(got_shape, shape)):
        if want is not None and got != want:
            dim = ("rows", "columns")[k] if len(got_shape) == 2 else "entries"
            hint = " (d_model)" if axes[k] == "residual" else ""
            raise ctx.err(where, f"expected {want} {dim}{hint}, got {got} (shape {tuple(got_shape)})")


def check_declared(declared: list[int], shape: tuple, axes: tuple, ctx: Ctx, where: str, field: str) -> None:
    """A sparse array's declared shape, before anything is allocated: as expected, and at most
    :data:`MAX_ENTRIES` entries."""
    check_shape(tuple(declared), shape, axes, ctx, where)
    if math.prod(declared) > MAX_ENTRIES:
        raise ctx.err(where + field, f"declares {' x '.join(map(str, declared))} entries, more than this reader's "
                                     f"limit of {MAX_ENTRIES} (2^24) per array")


def _fill_entries(out: np.ndarray, obj: dict, dims: list[int], axes: tuple, ctx: Ctx, where: str) -> np.ndarray:
    """``out`` (zeros of shape ``dims``) with the sparse ``obj["entries"]`` written in: each entry
    ``[i, value]`` (a vector) or ``[i, j, value]`` (a matrix), indices checked against ``dims`` by
    :func:`index`, values exact (:func:`exact`).  Raises :class:`ModelFormatError` naming the entry."""
    form = "[i, value]" if len(dims) == 1 else "[i, j, value]"
    ents = obj.get("entries", [])
    if not isinstance(ents, list):
        raise ctx.err(where + ".entries", f"expected a list of {form}")
    for t, e in enumerate(ents):
        w = f"{where}.entries[{t}]"
        if not isinstance(e, list) or len(e) != len(dims) + 1:
            raise ctx.err(w, f"expected {form}")
        at = tuple(index(e[k], axes[k], dims[k], ctx, w) for k in range(len(dims)))
        out[at] = exact(e[-1], ctx, w)
    return out


def array(obj, ctx: Ctx, where: str, ndim: int, shape: tuple, axes: tuple = ("plain", "plain")) -> np.ndarray:
    """Parse a MATRIX (ndim 2) or VECTOR (ndim 1) into an exact object array.

    ``shape``: expected sizes (None = free).  Raises :class:`ModelFormatError` naming ``where``.
    """
    what = "matrix" if ndim == 2 else "vector"
    if isinstance(obj, str) and obj.startswith("npz:"):
        name = obj[4:]
        if ctx.npz is None:
            raise ctx.err(where, f"refers to {obj!r} but the file names no \"arrays\" archive")
        if name not in ctx.npz:
            raise ctx.err(where, f"array {name!r} is not in the archive (has: {', '.join(sorted(ctx.npz)) or 'none'})")
        ctx.used.add(name)
        a = np.asarray(ctx.npz[name])
        if a.dtype.kind not in "fiub":
            raise ctx.err(where, f"array {name!r} has non-numeric dtype {a.dtype}")
        if a.ndim != ndim:
            raise ctx.err(where, f"expected a {ndim}-d array, got shape {a.shape}")
        a = a.astype(np.float64)
        if not np.all(np.isfinite(a)):
            bad = tuple(int(i) for i in np.argwhere(~np.isfinite(a))[0])
            raise ctx.err(where, f"contains a non-finite number at {list(bad)}: NaN and infinities are not allowed")
        out = np.array([Fraction(float(x)) for x in a.ravel()], dtype=object).reshape(a.shape)
    elif isinstance(obj, dict):
        keys = set(obj)
        if ndim == 2:
            allowed = {"shape", "entries"}
            if keys - allowed or "shape" not in obj:
                raise ctx.err(where, "a sparse matrix is {\"shape\": [rows, cols], \"entries\": [[i, j, value], ...]}")
            shp = obj["shape"]
            if (not isinstance(shp, list) or len(shp) != 2
                    or not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in shp)):
                raise ctx.err(where + ".shape", f"expected [rows, cols] (non-negative integers), got {json.dumps(shp)}")
            check_declared(shp, shape, axes, ctx, where, ".shape")
            out = _fill_entries(zeros(tuple(shp)), obj, shp, axes, ctx, where)
        else:
            allowed = {"size", "entries"}
            if keys - allowed or "size" not in obj:
                raise ctx.err(where, "a sparse vector is {\"size\": s, \"entries\": [[i, value], ...]}")
            sz = obj["size"]
            if not isinstance(sz, int) or isinstance(sz, bool) or sz < 0:
                raise ctx.err(where + ".size", f"expected a non-negative integer, got {json.dumps(sz)}")
            check_declared([sz], shape, axes, ctx, where, ".size")
            out = _fill_entries(zeros(sz), obj, [sz], axes, ctx, where)
    elif isinstance(obj, list):
        if ndim == 1:
            out = np.array([exact(x, ctx, f"{where}[{i}]") for i, x in enumerate(obj)] or [], dtype=object)
            out = out.reshape(len(obj))
        else:
            rows = []
            width = None
            for i, r in enumerate(obj):
                if not isinstance(r, list):
                    raise ctx.err(f"{where}[{i}]", f"expected a row (list of numbers), got {type(r).__name__}")
                if width is None:
                    width = len(r)
                elif len(r) != width:
                    raise ctx.err(f"{where}[{i}]", f"row has {len(r)} entries, row 0 has {width} (ragged matrix)")
                rows.append([exact(x, ctx, f"{where}[{i}][{j}]") for j, x in enumerate(r)])
            out = zeros((len(rows), width or 0))
            for i, r in enumerate(rows):
                for j, x in enumerate(r):
                    out[i, j] = x
    else:
        raise ctx.err(where, f"expected a {what} (nested list, \"npz:NAME\" or sparse object), got "
                             f"{type(obj).__name__}")
    check_shape(out.shape, shape, axes, ctx, where)
    return out


def check_keys(obj: dict, allowed: Sequence[str], ctx: Ctx, where: str, required: Sequence[str] = ()) -> None:
    """``obj`` is an object with only ``allowed`` fields and every ``required`` one; raises
    :class:`ModelFormatError` naming ``where`` and the field otherwise."""
    if not isinstance(obj, dict):
        raise ctx.err(where, f"expected an object, got {type(obj).__name__}")
    for k in obj:
        if k not in allowed:
            raise ctx.err(where, f"unknown field {k!r} (expected one of: {', '.join(allowed)})")
    for k in required:
        if k not in obj:
            raise ctx.err(where, f"missing required field {k!r}")
