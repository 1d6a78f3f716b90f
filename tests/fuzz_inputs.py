"""Fuzzed command lines for ``softhard`` (issue 15): hypothesis strategies over formulas, words,
option values, model files and certificates, and one in-process runner that classifies what a
command line did.  Shared by ``tests/solver/test_fuzz_cli.py`` (a bounded number of examples in
CI) and ``benchmarks/fuzz.py`` (>= 10^5 inputs).

A command line *fails* the fuzz when it prints a Python traceback, exits with a status outside
{0, 1, 2} (3 is an internal error, README "Exit status"), lets an exception or ``SystemExit``
escape :func:`softhard.solver.cli.main`, reports bad input (exit 2) in more than one line, or,
with ``--json``, prints something that is not strict JSON (NaN, Infinity).

``big=False`` (the test) keeps every size an input can ask for small (words <= 12 symbols,
lengths <= 40 for the commands that run transformers), except where the command must answer
symbolically or refuse (``bound --n-max 10**60``).  ``big=True`` (the benchmark) also draws
huge lengths, counts and limits for every command: those must be refused by a budget or handled
within it.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import signal
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import strategies as st

from softhard.solver.cli import main

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
MODEL_FILE = EXAMPLES / "models" / "ab_subsequence.json"
FORMULA_FILES = sorted(str(p) for p in EXAMPLES.glob("*.ltl"))

# ---------------------------------------------------------------------------------------------
# option values

#: values an attacker or a newcomer types for a number: valid, boundary, huge, malformed
NUMBER_TEXT = ["0", "1", "-1", "2", "1/2", "1/4", "1/3", "0.25", "3/7", "1/1000", "1e-3", "1e-300", "1e300",
               "1e-400", "1e400", "nan", "NaN", "inf", "-inf", "", " ", "1/0", "0/0", "abc", "1/8.2", "8.2/3",
               "0.49999999999999999999999", "0.5", "0.4999", "2^10", "10**3", "9" * 40, "1e60", "1e-60",
               "1000000000000000000", "-0", "+1", "0x10", "1_000", "½", "١", "1/-4", "--1", "1e", ".5", "5.",
               "1/4/2", "1 / 4", "\u00a01", "1e-16", "4503599627370497"]
#: lengths (``--n-max``, ``--n-min``); the big ones only with ``big=True`` for commands that run
SMALL_LENGTHS = ["1", "2", "3", "5", "8", "12", "20", "40", "0", "-1", "x", "1.5", "1e3", ""]
BIG_LENGTHS = ["1000", "4097", "100000", "1000000", "10" + "0" * 16, "1" + "0" * 18, "1" + "0" * 60, "9" * 400]
SYMBOLS = "ab01"


def number_values() -> st.SearchStrategy[str]:
    """One text for a numeric option: a listed value or a random fraction/decimal/garbage."""
    return st.one_of(st.sampled_from(NUMBER_TEXT),
                     st.builds(lambda p, q: f"{p}/{q}", st.integers(-5, 10**6), st.integers(-2, 10**6)),
                     st.floats(allow_nan=True, allow_infinity=True).map(repr),
                     st.text(alphabet="0123456789./-+eE_ x", max_size=8))


def rarely(common: st.SearchStrategy, rare: st.SearchStrategy, one_in: int = 25) -> st.SearchStrategy:
    """``rare`` about once in ``one_in`` draws, else ``common`` (huge sizes are each a slow run).
    The rare branch is an unremarkable residue: hypothesis favours the ends of a range (0, the
    maximum), which would make "rare" frequent."""
    return st.integers(0, 1000).flatmap(lambda i: rare if i % one_in == 3 else common)


def length_values(big: bool) -> st.SearchStrategy[str]:
    small = st.sampled_from(SMALL_LENGTHS)
    return rarely(small, st.sampled_from(BIG_LENGTHS)) if big else small


# ---------------------------------------------------------------------------------------------
# formulas and words

_ATOMS = ["a", "b", "0", "1", "true", "false", '"ab"', "c"]
_UNARY = ["!", "Y ", "X ", "P ", "H ", "F ", "G "]
_BINARY = [" S ", " U ", " & ", " | ", " -> "]
_COUNTS = ["#a > #b", "#a - 2*#b >= 0", "#(a & Y b) = 1", "odd(#a)", "even(#1)", "3*#a < #b + 2", "#a != 0",
           "4000000000000000000*#a >= 1", "#a >= 9007199254740993", "#(#a > #b) = 0", "0.5*#a > 1"]


def well_formed() -> st.SearchStrategy[str]:
    """Formula text from the grammar (temporal operators, Boolean connectives, counting)."""
    leaves = st.one_of(st.sampled_from(_ATOMS), st.sampled_from(_COUNTS).map(lambda s: f"({s})"))
    return st.recursive(leaves, lambda inner: st.one_of(
        st.builds(lambda op, f: f"{op}{f}", st.sampled_from(_UNARY), inner),
        st.builds(lambda f, op, g: f"({f}{op}{g})", inner, st.sampled_from(_BINARY), inner)), max_leaves=6)


def formulas() -> st.SearchStrategy[str]:
    """A formula argument: well formed, mutated, random text, or a file name (real or not)."""
    mutated = st.builds(lambda f, i, s: f[:i] + s + f[i + 1:], well_formed(), st.integers(0, 30),
                        st.sampled_from(["(", ")", "#", "*", "", "Y", "&&", "\x00", "é", "9" * 30, "\n"]))
    return st.one_of(well_formed(), well_formed(), mutated,
                     st.text(alphabet="abY XSUHPFG!&|()#<>=*+-0123456789\"'.e", max_size=16),
                     st.sampled_from(FORMULA_FILES + ["tomita9", "missing.ltl", "examples", "/", "."]))


def words(big: bool = False) -> st.SearchStrategy[str]:
    """An input word: characters (some outside every alphabet), or space-separated symbols."""
    w = st.text(alphabet="ab01() xz", max_size=12)
    if big:
        w = rarely(w, st.builds(lambda c, k: c * k, st.sampled_from("ab01"), st.integers(13, 5000)))
    return w


# ---------------------------------------------------------------------------------------------
# files (model files, certificates): written into one temporary folder per process

_TMP = Path(tempfile.mkdtemp(prefix="softhard-fuzz-"))


def tmp_path_for(name: str) -> Path:
    """A path in this process's temporary fuzz folder."""
    return _TMP / name


def _leaf_paths(obj, path=()):
    yield path
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _leaf_paths(v, path + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _leaf_paths(v, path + (i,))


#: JSON values put in place of a field: wrong types, boundary and huge numbers, deep nesting
JSON_VALUES = [None, True, False, 0, -1, 1, 2**31, 2**63, 2**64 + 1, 10**400, 1e308, -1e308, 0.5, 1e-320, "x", "",
               "BOS", "1/0", "nan", [], {}, [[]], [0] * 5, {"shape": [10**9, 10**9], "entries": []},
               {"shape": [3, 9], "entries": [[99, 99, 1]]}, [[1, 2, 3]], "a" * 1000]


def mutate_json(doc, index: int, value):
    """``doc`` (a parsed JSON document, not modified) with its ``index``-th node (pre-order, modulo
    the node count; 0 = the root) replaced by ``value`` or, when ``value`` is ``"<delete>"``,
    deleted."""
    doc = json.loads(json.dumps(doc))
    paths = list(_leaf_paths(doc))
    path = paths[index % len(paths)]
    if not path:
        return value if value != "<delete>" else {}
    parent = doc
    for p in path[:-1]:
        parent = parent[p]
    if value == "<delete>":
        del parent[path[-1]]
    else:
        parent[path[-1]] = value
    return doc


def json_file_texts(base_text: str) -> st.SearchStrategy[str]:
    """The text of a JSON file derived from ``base_text``: one field replaced or deleted, the text
    truncated, garbage appended, a key repeated, NaN, deep nesting, or random bytes."""
    base = json.loads(base_text)
    field_edit = st.builds(lambda i, v: json.dumps(mutate_json(base, i, v)), st.integers(0, 10**6),
                           st.sampled_from(JSON_VALUES + ["<delete>"] * 4))
    return st.one_of(
        field_edit, field_edit, field_edit,
        st.integers(0, len(base_text)).map(lambda i: base_text[:i]),
        st.sampled_from(["", "{}", "[]", "null", "NaN", '{"a": NaN}', '{"format": "softhard-model"}',
                         "[" * 100 + "]" * 100, "[" * 100000, '{"a":1,"a":2}', "\ufeff{}", '"' + "x" * 1000,
                         '{"schema": "softhard-certificate", "schema_version": 2}', "1e999"]),
        st.builds(lambda k, v: base_text.replace(f'"{k}"', f'"{k}": {v}, "{k}"', 1),
                  st.sampled_from(["status", "kind", "alphabet", "layers", "name"]), st.sampled_from(["1", '"x"'])),
        st.text(max_size=40))


def write_text(name: str, text: str) -> str:
    """Write ``text`` (UTF-8, lone surrogates escaped) to ``name`` in the fuzz folder; its path."""
    p = tmp_path_for(name)
    p.write_bytes(text.encode("utf-8", "surrogatepass"))
    return str(p)


# ---------------------------------------------------------------------------------------------
# command lines


def _opt(name: str, values: st.SearchStrategy[str]) -> st.SearchStrategy[list[str]]:
    return values.map(lambda v: [name, v])


def formula_options(big: bool) -> st.SearchStrategy[list[str]]:
    """A few of the construction's options (each possibly malformed)."""
    one = st.one_of(
        _opt("--regime", st.sampled_from(["T", "U", "P", "X", "t", ""])),
        _opt("--alphabet", st.sampled_from(["ab", "a", "01", "", "aa", "ab()", "é", "a b"])),
        _opt("--eta", number_values()), _opt("--beta", number_values()),
        _opt("--comparator", st.sampled_from(["ln", "head", "pe", "x"])),
        _opt("--eps-ln", number_values()),
        st.just(["--json"]), st.just(["--help"]), st.just(["--bogus"]))
    return st.lists(one, max_size=3).map(lambda xs: [a for x in xs for a in x])


def run_argv(big: bool) -> st.SearchStrategy[list[str]]:
    tau = st.one_of(st.just([]), _opt("--tau", number_values()))
    return st.builds(lambda f, w, o, t: ["run", f, w, *o, *t], formulas(), words(big), formula_options(big), tau)


def bound_argv(big: bool) -> st.SearchStrategy[list[str]]:
    n = st.one_of(st.just([]), _opt("--n-max", st.sampled_from(SMALL_LENGTHS + BIG_LENGTHS)))
    return st.builds(lambda f, o, k: ["bound", f, *o, *k], formulas(), formula_options(big), n)


def confirm_argv(big: bool) -> st.SearchStrategy[list[str]]:
    sizes = st.lists(st.one_of(_opt("--n-max", length_values(big)),
                               _opt("--random", st.sampled_from(["0", "1", "5", "-1"] + (["10" * 9] if big else []))),
                               _opt("--exhaustive-len", st.sampled_from(["0", "2", "4", "x"] + (["30"] if big else []))),
                               _opt("--seed", st.sampled_from(["0", "7", "-1", "9" * 30])),
                               _opt("--tau", number_values())), max_size=3)
    # bounded by default: a small --n-max, few random words, short exhaustive words
    return st.builds(lambda f, o, s: ["confirm", f, "--n-max", "12", "--random", "3", "--exhaustive-len", "3",
                                      *o, *[a for x in s for a in x]], formulas(), formula_options(big), sizes)


def certify_argv(big: bool) -> st.SearchStrategy[list[str]]:
    how = st.one_of(_opt("--tau", number_values()), st.just(["--find-tau"]), st.just([]))
    extra = st.lists(st.one_of(_opt("--n-max", st.sampled_from(SMALL_LENGTHS + BIG_LENGTHS)),
                               _opt("--n-min", length_values(big)), st.just(["--range-only"]),
                               _opt("--timeout", st.sampled_from(["5", "0", "nan", "inf", "-1", "1e9", "x"]))),
                     max_size=2)
    return st.builds(lambda f, o, h, e: ["certify", f, "--n-max", "8", "--no-numeric", "--timeout", "5", *o, *h,
                                         *[a for x in e for a in x]],
                     formulas(), formula_options(big), how, extra)


def model_argv(big: bool) -> st.SearchStrategy[list[str]]:
    """``gap``, ``run --model``, ``certify --model`` and ``hahn --model`` on a (mutated) model file."""
    base = MODEL_FILE.read_text()

    def build(text, cmd, n, w, opts, k):
        path = write_text(f"model{k}.json", text)
        if cmd == "gap":  # a searched analysis evaluates --search-words words (default 20000): fewer here
            return ["gap", "--model", path, "--n-max", n, "--search-words", "500", *opts]
        if cmd == "run":
            return ["run", "--model", path, w, *opts[:2]]
        if cmd == "hahn":
            return ["hahn", "--model", path, "--tau", "1/4"]
        return ["certify", "--model", path, "--n-max", n, "--epsilon", "1/4", "--find-tau", "--no-numeric",
                "--timeout", "5"]

    opts = st.lists(st.one_of(
        _opt("--method", st.sampled_from(["auto", "exhaustive", "searched", "x"])),
        _opt("--exhaustive-limit", st.sampled_from(["0", "10", "-1"] + (["9" * 30] if big else []))),
        _opt("--search-words", st.sampled_from(["0", "5", "-3"])),
        _opt("--search-max-len", st.sampled_from(["0", "3", "x"] + (["9" * 12] if big else []))),
        _opt("--tie-break", st.sampled_from(["auto", "off"])), st.just(["--json"])), max_size=2)
    n = st.sampled_from(["1", "3", "5", "0", "x"])
    if big:
        n = rarely(n, st.sampled_from(BIG_LENGTHS + ["20", "45"]))
    return st.builds(build, st.one_of(st.just(base), json_file_texts(base)),
                     rarely(st.sampled_from(["gap", "gap", "run", "hahn"]), st.just("certify"), 8 if big else 5),
                     n, words(big),
                     opts.map(lambda xs: [a for x in xs for a in x]), st.integers(0, 3))


def verify_argv(cert_texts: tuple[str, ...]) -> st.SearchStrategy[list[str]]:
    """``verify`` of a mutated certificate (one of ``cert_texts``), a missing file, a folder."""
    files = st.builds(lambda t, k: write_text(f"cert{k}.json", t),
                      st.one_of(*[json_file_texts(c) for c in cert_texts]), st.integers(0, 3))
    paths = st.one_of(files, files, files, st.sampled_from(["missing.json", str(_TMP), str(MODEL_FILE)]))
    opts = st.lists(st.one_of(_opt("--timeout", st.sampled_from(["5", "0", "nan"])), st.just(["--json"]),
                              _opt("--budget", st.sampled_from(["30", "0", "-1", "1e12"]))), max_size=2)
    return st.builds(lambda p, o: ["verify", p, *[a for x in o for a in x]], paths, opts)


def hahn_argv(big: bool) -> st.SearchStrategy[list[str]]:
    return st.builds(lambda f, o, t, c: ["hahn", f, *o, "--tau", t, "--timeout", "5", *c], formulas(),
                     formula_options(big), number_values(),
                     st.sampled_from([[], ["--change-at", "n-3"], ["--change-at", "x"], ["--change-at", "99"],
                                      ["--check", "--n-check-max", "50"]]))


def raw_argv() -> st.SearchStrategy[list[str]]:
    """Command lines of random tokens (mostly usage errors)."""
    tok = st.one_of(st.sampled_from(["run", "bound", "confirm", "certify", "verify", "gap", "hahn", "--json",
                                     "--help", "--debug", "--tau", "--n-max", "--model", "--tracr", "--",
                                     "-", "a", "Y a", "ab"]), st.text(max_size=6))
    return st.lists(tok, max_size=6)


def argvs(cert_texts: tuple[str, ...], *, big: bool = False) -> st.SearchStrategy[list[str]]:
    """One fuzzed ``softhard`` command line (``cert_texts``: real certificates to mutate)."""
    if big:  # the benchmark: cheap command lines more often (certify and model certificates cost seconds)
        return st.one_of(run_argv(big), run_argv(big), run_argv(big), bound_argv(big), confirm_argv(big),
                         rarely(raw_argv(), certify_argv(big), 3), model_argv(big), verify_argv(cert_texts),
                         hahn_argv(big), raw_argv())
    return st.one_of(run_argv(big), run_argv(big), bound_argv(big), confirm_argv(big), certify_argv(big),
                     model_argv(big), model_argv(big), verify_argv(cert_texts), hahn_argv(big), raw_argv())


# ---------------------------------------------------------------------------------------------
# running one command line


@dataclass
class Outcome:
    """What one command line did: exit status (None when something escaped), stdout, stderr,
    seconds, and ``problem`` (None when it behaved; else why it fails the fuzz)."""

    argv: list[str]
    code: int | None
    out: str
    err: str
    seconds: float
    problem: str | None = None
    notes: list[str] = field(default_factory=list)


def message_lines(err: str) -> list[str]:
    """The lines of ``err`` that are not progress lines (``softhard: [12 s] step``, printed off a
    terminal by runs longer than about 2 s)."""
    return [ln for ln in err.strip().splitlines() if not re.match(r"softhard: \[\d+ s\] ", ln)]


BATCH_LINE = re.compile(r"\[\d+/\d+\] .+ \(\d+\.\d\d s\)$")


def is_batch(out: str, err: str) -> bool:
    """Whether a run was a batch (several inputs or ``verify DIR``): one ``[k/N] INPUT: STATUS
    (0.00 s)`` line per input on stderr, or (with ``--json``) JSON lines ending in a summary."""
    lines = message_lines(err)
    if lines and BATCH_LINE.match(lines[0]):
        return True
    last = out.strip().splitlines()[-1:] if out.strip() else []
    return bool(last) and last[0].startswith('{"summary": ')


def bad_input_lines_ok(out: str, err: str) -> bool:
    """A bad input is reported in one line; a batch in one line per input (``[k/N] FILE: INVALID
    (0.00 s)``) or, with ``--json``, one JSON row per input, each row's ``error`` one line."""
    lines = message_lines(err)
    if is_batch(out, err):
        return all(BATCH_LINE.match(ln) for ln in lines)
    return len(lines) == 1


def strict_json(out: str, batch: bool) -> None:
    """Parse ``out`` as one strict JSON document, or (a batch) as strict JSON lines; raises
    ValueError naming the first problem."""
    docs = out.strip().splitlines() if batch else [out]
    for doc in docs:
        row = json.loads(doc, parse_constant=_reject_constant)
        if batch and isinstance(row, dict) and "\n" in str(row.get("error") or ""):
            raise ValueError(f"a batch row's error is not one line: {row['error'][:200]!r}")


def _reject_constant(name):
    raise ValueError(f"not strict JSON: {name}")


class Deadline(BaseException):
    """Raised by the SIGALRM timer of :func:`run_cli` (a BaseException, so that ``main``'s
    ``except Exception`` does not turn it into exit 3)."""


def _alarm(signum, frame):
    raise Deadline()


def run_cli(argv: list[str], *, deadline_s: float | None = None) -> Outcome:
    """Run ``softhard.solver.cli.main(argv)`` in this process with stdout/stderr captured and
    classify the result (module docstring).  ``deadline_s``: a per-call wall-clock deadline
    (SIGALRM, main thread only); a call that exceeds it is stopped and fails the fuzz."""
    out, err = io.StringIO(), io.StringIO()
    t0 = time.perf_counter()
    code, problem = None, None
    old = signal.signal(signal.SIGALRM, _alarm) if deadline_s else None
    cwd = os.getcwd()
    os.chdir(_TMP)  # files a command line names relatively (or writes) stay in the fuzz folder
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            if deadline_s:
                signal.setitimer(signal.ITIMER_REAL, deadline_s)
            code = main(list(argv))
        except Deadline:
            problem = f"exceeded the per-call deadline of {deadline_s:g} s"
        except BaseException:  # noqa: BLE001 — anything escaping main is a failure of the fuzz
            problem = "escaped main: " + traceback.format_exc()
        finally:
            if deadline_s:
                signal.setitimer(signal.ITIMER_REAL, 0)
                signal.signal(signal.SIGALRM, old)
            os.chdir(cwd)
    o = Outcome(list(argv), code, out.getvalue(), err.getvalue(), time.perf_counter() - t0)
    if problem is None:
        if "Traceback (most recent call last)" in o.err or "Traceback (most recent call last)" in o.out:
            problem = "a traceback was printed"
        elif code not in (0, 1, 2):
            problem = f"exit status {code}: {o.err.strip()[-500:]}"
        elif code == 2 and not bad_input_lines_ok(o.out, o.err):
            problem = f"bad input reported in {len(message_lines(o.err))} lines: {o.err[-500:]!r}"
        elif "--json" in argv and "--help" not in argv and "-h" not in argv and o.out.strip():
            try:
                strict_json(o.out, is_batch(o.out, o.err))
            except ValueError as e:
                problem = f"--json output is not strict JSON: {e}"
    o.problem = problem
    return o
