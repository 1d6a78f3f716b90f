"""The jobs of a ``certify`` / ``verify`` command line, without running them: inputs expanded
(directories, globs), the parameter grid, each job's stable certificate name, and whether the
command line is a batch at all (the batch's rules: :mod:`.batch`).  Light — the standard library
and :mod:`softhard.constructions.errors` only — so that a single certify or verify decides it is
no batch without loading the batch runner, Dask or :mod:`concurrent.futures` (ISSUE 16)."""

from __future__ import annotations

import argparse
import contextlib
import glob
import hashlib
import itertools
import json
import os
import sys
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path

from ....constructions.errors import ParameterError
from ....constructions.paths import exists, is_dir, is_file
from ...records import Record

#: the batch runner's module, imported by name only when a command line is a batch (:func:`is_batch`):
#: it loads :mod:`softhard.solver.distributed` (Dask, :mod:`concurrent.futures`) and rich's tables
BATCH = "softhard.solver.cli.handlers.batch"
#: grid options (argparse dest) in expansion order, and the kinds that use each
GRID: dict[str, tuple[str, ...]] = {
    "regime": ("formula",), "eta": ("formula",), "beta": ("formula",), "comparator": ("formula",),
    "eps_ln": ("formula",), "n_max": ("formula", "model"), "n_min": ("formula", "model"),
    "tau": ("formula", "model"), "epsilon": ("model", "tracr"),
}
#: options that never reach a certificate (left out of a job's key, and of a certify artefact's:
#: :func:`softhard.solver.cli.handlers.certify.run_job`)
PRESENTATION = ("json", "output", "force", "resume", "workers", "scheduler", "connect_timeout", "debug", "cmd",
                "no_cache")
#: what a directory given as an input contributes, per kind
DIR_PATTERN = {"formula": "*.ltl", "model": "*.json", "tracr": "*.json", "certificate": "*.json"}
GLOB_CHARS = set("*?[")


def expand_inputs(items: list[str] | None, kind: str) -> list[str]:
    """``items`` with each directory replaced by its files matching :data:`DIR_PATTERN` and each
    glob that names no file by its matches (both sorted); anything else (a file, an inline formula,
    a Tracr export's NAME) unchanged.  Raises :class:`ParameterError` for a directory or glob
    that matches nothing."""
    out: list[str] = []
    for it in items or []:
        p = Path(it)
        if it and is_dir(p):  # ('' is no directory: Path('') is '.'; it stays an empty formula)
            found = sorted(str(x) for x in p.glob(DIR_PATTERN[kind]) if x.is_file())
            if not found:
                raise ParameterError(f"{it}: the directory has no {DIR_PATTERN[kind]} file")
            out += found
        elif GLOB_CHARS & set(it) and not exists(p) and (kind != "formula" or it.endswith(".ltl")):
            # (an inline formula may contain '*': only a pattern ending in .ltl is a formula glob)
            found = sorted(glob.glob(it))
            if not found:
                raise ParameterError(f"{it}: no file matches")
            out += found
        else:
            out.append(it)
    return out


class Job(Record):
    """One job of a batch: ``args`` is the single-input command's namespace (every grid option a
    scalar); ``label`` the input as shown; ``grid`` the values of the grid options that vary;
    ``name`` the certificate's stable file name.  (A plain record, :mod:`softhard.solver.records`:
    no dataclasses on a verify's path.)"""

    FIELDS = ("index", "args", "label", "grid", "name")
    index: int
    args: argparse.Namespace
    label: str
    grid: dict[str, object]
    name: str

    def __init__(self, index: int, args: argparse.Namespace, label: str, grid: dict[str, object] | None = None,
                 name: str = ""):
        self.index, self.args, self.label = index, args, label
        self.grid = {} if grid is None else grid
        self.name = name


def _values(v) -> tuple:
    return v if isinstance(v, tuple) else (v,)


def _source_bytes(kind: str, value: str | None) -> bytes:
    if value is None:
        return b"<default>"
    p = Path(value)
    if kind == "tracr" and not is_file(p):
        p = p.with_suffix(".json")
    if kind == "formula" and not is_file(p) and is_file(value + ".ltl"):  # (load_spec: a bare NAME reads NAME.ltl)
        p = Path(value + ".ltl")
    return p.read_bytes() if is_file(p) else value.encode()


#: options whose values are exact numbers, named by their value (``--eta 0.25`` is ``--eta 1/4``)
EXACT_OPTIONS = ("eta", "beta", "tau", "eps_ln", "epsilon")


def _name_key(a: argparse.Namespace) -> dict[str, str]:
    """The options of a job's name: every one that reaches the certificate, exact numbers by value
    and no ``--tau`` the same as ``--find-tau`` (certify's default)."""
    key = {k: str(v) for k, v in sorted(vars(a).items()) if k not in PRESENTATION + ("formula", "model", "tracr")}
    for k in EXACT_OPTIONS:
        with contextlib.suppress(KeyError, ValueError, ZeroDivisionError):
            key[k] = str(Fraction(key[k]))
    if "find_tau" in key and key.get("tau") == "None":
        key["find_tau"] = "True"
    return key


def job_name(kind: str, a: argparse.Namespace) -> str:
    """The stable certificate file name of a job (module docstring): ``STEM[.REGIME].HASH8.json``;
    STEM is the input file's stem (also of a bare ``DIR/NAME`` that reads ``DIR/NAME.ltl``), ``default``
    for the embedded example, or ``inline-`` and an inline formula's runs of ASCII letters and digits
    joined by ``_`` (``a U !b`` → ``inline-a_U_b``), at most 40 characters."""
    src = {"formula": a.formula, "model": a.model, "tracr": a.tracr}[kind]
    key = _name_key(a)
    digest = hashlib.sha256(json.dumps({"kind": kind, "key": key}, sort_keys=True).encode()
                            + hashlib.sha256(_source_bytes(kind, src)).digest()).hexdigest()[:8]
    if src is None:
        stem = "default"
    elif is_file(src) or kind != "formula" or is_file(src + ".ltl"):  # (a bare NAME reads NAME.ltl: _source_bytes)
        stem = Path(src).stem
    else:  # an inline formula: its letters and digits, so that two in one batch are told apart by name
        words = "_".join("".join(ch if ch.isascii() and ch.isalnum() else " " for ch in src).split())
        stem = f"inline-{words}" if words else "inline"
    stem = "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in stem)[:40]
    return f"{stem}.{a.regime}.{digest}.json" if kind == "formula" else f"{stem}.{digest}.json"


def certify_jobs(args: argparse.Namespace, kind_of: Callable[[argparse.Namespace], str]) -> list[Job]:
    """Every job of a ``certify`` command line (module docstring): the inputs times the grid.
    ``kind_of``: the source's kind of a one-input namespace (its checks raise for bad mixes)."""
    formulas = expand_inputs(args.formula or [], "formula")
    models = expand_inputs(args.model, "model")
    tracrs = expand_inputs(args.tracr, "tracr")
    probe = argparse.Namespace(**{**vars(args), "formula": formulas[0] if formulas else None,
                                  "model": models[0] if models else None, "tracr": tracrs[0] if tracrs else None})
    kind = kind_of(probe)
    inputs = {"formula": formulas or [None], "model": models, "tracr": tracrs}[kind]
    varying, fixed = [], {}
    for dest, kinds in GRID.items():
        vals = _values(getattr(args, dest))
        if len(vals) > 1 and kind not in kinds:
            raise ParameterError(f"--{dest.replace('_', '-')} has several values but does not apply to this kind of "
                                 f"input ({kind})")
        if len(vals) > 1:
            varying.append(dest)
        fixed[dest] = vals[0]
    comparators = _values(args.comparator) if kind == "formula" else ()
    if kind == "formula" and args.eps_ln is not None and "ln" not in comparators:
        raise ParameterError("argument --eps-ln: the layer-norm epsilon applies only with --comparator ln")
    jobs, seen, repeated = [], set(), 0
    combos = itertools.product(inputs, *(_values(getattr(args, d)) for d in varying))
    for src, *vals in combos:
        a = argparse.Namespace(**{**vars(args), **fixed, "formula": None, "model": None, "tracr": None})
        setattr(a, kind, src)
        for d, v in zip(varying, vals):
            setattr(a, d, v)
        if kind == "formula" and a.comparator != "ln":  # --eps-ln applies to the grid's ln jobs only
            a.eps_ln = None
        label = "<embedded tomita4>" if src is None else str(src)
        name = job_name(kind, a)
        if name in seen:  # the same input and options again (a repeated file, 1e2 and 100): run once
            repeated += 1
            continue
        seen.add(name)
        jobs.append(Job(index=len(jobs), args=a, label=label, grid=dict(zip(varying, vals)), name=name))
    if repeated:
        print(f"softhard: {repeated} job(s) repeated another (the same input and options) and run once",
              file=sys.stderr)
    return jobs


def is_batch(args: argparse.Namespace, n_jobs: int) -> bool:
    """Whether a command line is a batch: several jobs, ``--resume``, Dask, or ``-o`` naming a
    directory (an existing one, or a path ending in '/')."""
    out = getattr(args, "output", None)
    return (n_jobs > 1 or getattr(args, "resume", False) or args.workers is not None or args.scheduler is not None
            or bool(out and (is_dir(out) or out.endswith(("/", os.sep)))))


def output_dir(path: str | None) -> Path | None:
    """The batch's output directory (created when missing, its parent must exist)."""
    if path is None:
        return None
    p = Path(path)
    if exists(p) and not is_dir(p):
        raise ParameterError(f"{p}: is a file; a batch writes one certificate per job into a directory (-o DIR)")
    if not exists(p):
        if p.suffix.lower() == ".json":
            raise ParameterError(f"{p}: a batch writes one certificate per job into a directory (-o DIR/), and this "
                                 "names a .json file; give a directory")
        if not is_dir(p.parent):
            raise ParameterError(f"{p.parent}: no such directory")
        try:
            p.mkdir()
        except OSError as e:  # e.g. a name longer than the file system allows
            raise ParameterError(f"{p}: cannot create the directory ({e.strerror or e})") from None
    return p
