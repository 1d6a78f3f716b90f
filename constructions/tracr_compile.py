"""Compile RASP programs with Tracr and write them in softhard's Tracr export format
(docs/tracr.md, "The export format"); the inverse of :func:`softhard.constructions.tracr_load.load_tracr`.

* :func:`export_assembled` turns a live compiled model (Tracr's ``AssembledTransformerModel``,
  read by duck typing: ``params``, ``model_config``, ``residual_labels``, ``input_encoder``,
  ``output_encoder``) into the export's metadata (a JSON-ready dict) and its float64 arrays —
  the same pair :func:`~softhard.constructions.tracr_load.load_tracr` reads from ``NAME.json`` +
  ``NAME.npz``;
* :func:`compile_program` compiles ``MODULE:FUNCTION`` (e.g. ``tracr.compiler.lib:make_hist``)
  called with arguments given as text (:func:`parse_call_args`) for a vocabulary
  (:func:`parse_vocab`) and ``max_seq_len``; :func:`write_export` writes the two files.

``tracr`` (the ``[tracr]`` extra: ``tracr-pypi``, with JAX and dm-haiku) is imported only by the
functions that need it (:func:`compile_program`, :func:`rasp_outputs`, :func:`compiled_runner`,
:func:`lean_haiku_init`), so
reading exports never needs it.  Errors: :class:`~softhard.constructions.errors.ParameterError` (one line) for a bad
program name, argument, vocabulary or a program Tracr refuses to compile;
:class:`~softhard.constructions.errors.ModelFormatError` for a live object that is not a compiled
model.
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import importlib
import io
import json
import math
import random
import re
import threading
from fractions import Fraction
from itertools import product
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from .errors import ModelFormatError, ParameterError

#: the export format's version (``format_version`` in ``NAME.json``)
EXPORT_VERSION = 2
#: stored examples per export: every word when there are at most this many, else a fixed-seed sample
N_EXAMPLES = 20
#: the largest vocabulary × max_seq_len product compile accepts (Tracr's embeddings grow with both;
#: the certificate's exhaustive analysis is bounded separately)
MAX_COMPILE_SIZE = 4096

_INT = re.compile(r"^[+-]?\d+$")


def token_text(t: Any) -> str:
    """The text of a token or value as it appears in residual labels and export keys (``str``)."""
    return str(t)


def parse_vocab(text: str | Sequence) -> list:
    """A vocabulary from ``a,b,c`` / ``1,2,3`` (comma- or space-separated; items that are
    integers become ``int`` — Tracr's vocabularies are sets of any hashable values) or a
    sequence (kept).  Raises :class:`ParameterError` for an empty vocabulary or a repeated token."""
    if isinstance(text, str):
        items = [s for s in re.split(r"[,\s]+", text.strip()) if s]
        vocab = [int(s) if _INT.match(s) else s for s in items]
    else:
        vocab = list(text)
    if not vocab:
        raise ParameterError("--vocab: give at least one token (e.g. --vocab a,b,c or --vocab 1,2,3)")
    texts = [token_text(t) for t in vocab]
    if len(set(texts)) != len(texts):
        dup = next(t for t in texts if texts.count(t) > 1)
        raise ParameterError(f"--vocab: token {dup!r} appears twice")
    return vocab


def parse_call_args(items: Sequence[str], namespace: dict) -> tuple[list, dict]:
    """Positional and keyword arguments from ``[NAME=]VALUE`` texts.  ``VALUE`` is a Python
    literal (``3``, ``'a'``, ``["()", "{}"]``), else a Python expression over ``namespace``
    (for RASP: ``tokens``, ``indices``, ``rasp``, ``lambda x, y: x + y``, ``tokens == 'x'``),
    else — when it is neither (a name not in the namespace, ``(``) — the text itself as a string.
    Raises :class:`ParameterError` when an expression fails to evaluate."""
    args, kwargs = [], {}
    for raw in items:
        m = re.match(r"^([A-Za-z_]\w*)=(?!=)(.*)$", raw, re.S)
        key, text = (m.group(1), m.group(2)) if m else (None, raw)
        try:
            val = ast.literal_eval(text)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            try:
                val = eval(compile(text, "<--args>", "eval"), {"__builtins__": {}}, dict(namespace))  # noqa: S307
            except (SyntaxError, NameError):
                val = text
            except Exception as e:  # noqa: BLE001 — the user's expression: one line
                raise ParameterError(f"--args {raw!r}: {type(e).__name__}: {e}") from None
        if key is None:
            if kwargs:
                raise ParameterError(f"--args {raw!r}: a positional argument after a keyword argument")
            args.append(val)
        else:
            kwargs[key] = val
    return args, kwargs


# ---------------------------------------------------------------------------------------------
# a live compiled model -> the export (metadata, arrays)


def _arrays(model: Any, where: str) -> dict[str, np.ndarray]:
    params, cfg = model.params, model.model_config
    out: dict[str, np.ndarray] = {}

    def grab(key: str, sub: str, name: str):
        try:
            out[name] = np.asarray(params[key][sub], dtype=np.float64)
        except (KeyError, TypeError):
            raise ModelFormatError(f"{where}: params[{key!r}][{sub!r}]: missing") from None

    grab("token_embed", "embeddings", "token_embed.embeddings")
    grab("pos_embed", "embeddings", "pos_embed.embeddings")
    for li in range(int(cfg.num_layers)):
        for nm in ("query", "key", "value", "linear"):
            for s in ("w", "b"):
                grab(f"transformer/layer_{li}/attn/{nm}", s, f"layer_{li}.attn.{nm}.{s}")
        for nm in ("linear_1", "linear_2"):
            for s in ("w", "b"):
                grab(f"transformer/layer_{li}/mlp/{nm}", s, f"layer_{li}.mlp.{nm}.{s}")
    return out


def export_assembled(model: Any, *, name: str, output: str | None = None, program: Any = None,
                     mlp_exactness: int | None = None, examples: Sequence[Sequence] | None = None,
                     source: str | None = None, n_examples: int = N_EXAMPLES,
                     seed: int = 0) -> tuple[dict, dict[str, np.ndarray]]:
    """``(meta, arrays)`` of the export format (docs/tracr.md) for a live compiled model.

    ``output``: the output sop's label (its residual block; default ``program.label``, or
    inferred from the output encoder for a categorical output); ``program``: the RASP program
    (optional: with it the examples get RASP's outputs); ``examples``: input words (default:
    every word up to ``max_seq_len`` when there are at most ``n_examples``, else ``n_examples``
    drawn with ``seed``); each example stores ``rasp`` (RASP's outputs, or None without a
    program) and ``compiled`` (the model's decoded outputs, :func:`compiled_runner`, when the model
    has ``forward`` or ``apply``).
    Raises :class:`ModelFormatError` when ``model`` lacks a compiled model's attributes."""
    where = f"<live model {name}>"
    for attr in ("params", "model_config", "residual_labels", "input_encoder"):
        if not hasattr(model, attr):
            raise ModelFormatError(f"{where}: {attr}: missing (expected a tracr AssembledTransformerModel)")
    cfgo = model.model_config
    cfg = {k: int(getattr(cfgo, k)) for k in ("num_layers", "num_heads", "key_size", "mlp_hidden_size")}
    cfg["causal"] = bool(getattr(cfgo, "causal", False))
    ie = model.input_encoder
    enc = dict(getattr(ie, "encoding_map", None) or {})
    bos, pad = getattr(ie, "bos_token", None), getattr(ie, "pad_token", None)
    if not enc or bos is None:
        raise ModelFormatError(f"{where}: input_encoder: needs encoding_map and bos_token")
    vocab = sorted((t for t in enc if t not in (bos, pad)), key=lambda t: enc[t])
    labels = [str(s) for s in model.residual_labels]
    arrays = _arrays(model, where)
    oe = getattr(model, "output_encoder", None)
    dec = getattr(oe, "encoding_map", None) if oe is not None else None
    if output is None and program is not None:
        output = getattr(program, "label", None)
    if dec:
        classes = sorted(dec, key=lambda v: dec[v])
        if output is None:
            want = [token_text(c) for c in classes]
            cands = sorted({lab.split(":", 1)[0] for lab in labels if ":" in lab})
            cands = [b for b in cands if [lab.split(":", 1)[1] for lab in labels if lab.startswith(b + ":")] == want]
            if len(cands) != 1:
                raise ModelFormatError(f"{where}: output: cannot infer the output block from output_encoder; pass output=LABEL")
            output = cands[0]
        out_labels = [f"{output}:{token_text(c)}" for c in classes]
    else:
        if output is None:
            raise ModelFormatError(f"{where}: output: a numerical output's residual label must be given (output=LABEL)")
        out_labels = [output]
        classes = []
    for lab in out_labels:
        if lab not in labels:
            raise ModelFormatError(f"{where}: output: {lab!r} is not a residual label")
    max_len = arrays["pos_embed.embeddings"].shape[0] - 1
    coldness = _coldness(arrays, cfg)
    words = list(examples) if examples is not None else _example_words(vocab, max_len, n_examples, seed)
    rasp_out = rasp_outputs(program, words) if program is not None else [None] * len(words)
    run = compiled_runner(model) if words else None
    exs = []
    for w, r in zip(words, rasp_out):
        ex = {"input": [_json_value(t) for t in w], "rasp": None if r is None else [_json_value(v) for v in r]}
        if run is not None:
            ex["compiled"] = [_json_value(v) for v in run([bos] + list(w))[1:]]
        exs.append(ex)
    meta = {
        "format": "softhard-tracr-export", "format_version": EXPORT_VERSION,
        "program": name, "program_label": output, "source": source or where,
        "vocab": [_json_value(t) for t in vocab], "max_seq_len": max_len,
        "bos_token": token_text(bos), "pad_token": None if pad is None else token_text(pad),
        "input_encoding": {token_text(t): int(i) for t, i in enc.items()},
        "output_is_categorical": bool(dec), "output_residual_labels": out_labels,
        "output_encoding": {token_text(c): k for k, c in enumerate(classes)} if dec else None,
        "output_values": [_json_value(c) for c in classes] if dec else None,
        "residual_labels": labels, "d_model": len(labels), "config": cfg,
        "softmax_coldness_nominal": coldness,
        "softmax_coldness_effective": coldness / math.sqrt(cfg["key_size"]),
        "mlp_exactness": mlp_exactness, "activation": "relu", "layer_norm": bool(getattr(cfgo, "layer_norm", False)),
        "param_arrays": {k: list(v.shape) for k, v in arrays.items()},
        "examples": [e if e["rasp"] is not None else {**e, "rasp": [None] * len(e["input"])} for e in exs],
    }
    if meta["output_encoding"] is None:
        del meta["output_encoding"], meta["output_values"]
    return meta, arrays


def compiled_runner(model: Any):
    """``run(tokens) -> decoded`` (a list, one entry per position, BOS included) for a live compiled
    model: the outputs of Tracr's ``model.apply(tokens).decoded``, computed by the model's own
    forward pass (``model.forward(model.params, ids)``, batch 1) compiled once per input length
    with ``jax.jit`` instead of run op by op (half the CPU time of the 13 library programs' runs).  Categorical outputs are the same classes as ``model.apply``'s; numerical ones the
    same float32 values up to XLA's fusion of the whole pass: on the library programs of
    tests/tracr_lib.py every value bit-identical but softmax leaks below 4e-18, which differ by
    at most 19 float32 ulps (5.8e-24).  A model with ``apply`` but no ``forward`` runs its
    ``apply``; None when it has neither.  JAX is imported here (the ``[tracr]`` extra)."""
    fwd, ie = getattr(model, "forward", None), getattr(model, "input_encoder", None)
    if not callable(fwd) or ie is None or not hasattr(model, "params"):
        apply = getattr(model, "apply", None)
        return None if not callable(apply) else (lambda tokens: list(apply(list(tokens)).decoded))
    import jax
    import jax.numpy as jnp

    jf, oe = jax.jit(fwd), getattr(model, "output_encoder", None)

    def run(tokens):  # AssembledTransformerModel.apply with the jitted forward pass
        out = jf(model.params, jnp.array([ie.encode(list(tokens))]))
        decoded = out.unembedded_output[0].tolist()
        if oe:
            decoded = oe.decode(decoded)
        if ie.bos_token:
            decoded = [ie.bos_token] + decoded[1:]
        return decoded
    return run


def _coldness(arrays: dict[str, np.ndarray], cfg: dict) -> float:
    """Tracr's nominal softmax coldness: the largest ``|W_Q W_Kᵀ|`` entry over the heads (Tracr's
    selectors score selected keys at exactly the coldness); 100 (Tracr's default) when no head
    has a nonzero score."""
    best = 0.0
    K = cfg["key_size"]
    for li in range(cfg["num_layers"]):
        Q, Kw = arrays[f"layer_{li}.attn.query.w"], arrays[f"layer_{li}.attn.key.w"]
        for h in range(cfg["num_heads"]):
            s = slice(h * K, (h + 1) * K)
            best = max(best, float(np.max(np.abs(Q[:, s] @ Kw[:, s].T), initial=0.0)))
    return best if best > 0 else 100.0


def _json_value(v: Any):
    """A token or output value as JSON: numbers and strings as they are (numpy scalars unwrapped),
    anything else as its text."""
    if isinstance(v, np.generic):
        v = v.item()
    if v is None or isinstance(v, (bool, int, str)):
        return v
    if isinstance(v, float):
        return v if math.isfinite(v) else str(v)
    if isinstance(v, Fraction):
        return float(v)
    return token_text(v)


def _example_words(vocab: list, max_len: int, k: int, seed: int) -> list[tuple]:
    total = sum(len(vocab) ** L for L in range(1, max_len + 1))
    if total <= k:
        return [w for L in range(1, max_len + 1) for w in product(vocab, repeat=L)]
    rng = random.Random(seed)
    return [tuple(rng.choice(vocab) for _ in range(rng.randint(1, max_len))) for _ in range(k)]


def tracr_module(name: str, command: str = "tracr compile"):
    """The Tracr module ``name`` (e.g. ``tracr.rasp.rasp``), imported on first use: Tracr is the
    optional extra ``softhard[tracr]``.  Raises :class:`ParameterError` (one line naming the extra,
    as ``export --format torch`` and ``--workers`` do for theirs) when it is not installed."""
    try:
        return importlib.import_module(name)
    except ImportError as e:
        raise ParameterError(f"{command} needs Tracr (pip install 'softhard[tracr]'): {e}") from None


def rasp_outputs(program: Any, words: Sequence[Sequence]) -> list[list]:
    """RASP's own outputs (``rasp.evaluate``) of ``program`` on each word (tracr is imported here:
    an optional dependency; :func:`tracr_module`)."""
    rasp = tracr_module("tracr.rasp.rasp", "RASP evaluation")
    return [list(rasp.evaluate(program, list(w))) for w in words]


# ---------------------------------------------------------------------------------------------
# compiling MODULE:FUNCTION


def load_function(spec: str):
    """The callable named by ``MODULE:FUNCTION`` (e.g. ``tracr.compiler.lib:make_hist``).  Raises
    :class:`ParameterError` when the module cannot be imported or has no such callable."""
    mod_name, sep, fn_name = spec.partition(":")
    if not sep or not mod_name or not fn_name:
        raise ParameterError(f"program {spec!r}: expected MODULE:FUNCTION (e.g. tracr.compiler.lib:make_hist)")
    try:
        mod = importlib.import_module(mod_name)
    except ImportError as e:
        hint = " (install the extra: pip install 'softhard[tracr]')" if mod_name.split(".")[0] == "tracr" else ""
        raise ParameterError(f"program {spec!r}: cannot import {mod_name}: {e}{hint}") from None
    fn = getattr(mod, fn_name, None)
    if not callable(fn):
        raise ParameterError(f"program {spec!r}: {mod_name} has no callable {fn_name!r}")
    return fn


#: :func:`lean_haiku_init`'s threads: how many are inside, and Tracr's Haiku module while swapped
_LEAN_LOCK = threading.Lock()
_lean_depth = 0
_lean_real: Any = None


class _LeanHaiku:
    """Haiku as Tracr's assembler sees it inside :func:`lean_haiku_init`: every attribute is
    Haiku's but ``transform``, whose ``init`` is jitted and creates the parameters of the modules
    named ``…transformer…`` as zeros (shape and dtype as requested)."""

    def __init__(self, hk: Any, jax: Any):
        self._hk, self._jax = hk, jax

    def __getattr__(self, name: str):
        return getattr(self._hk, name)

    def transform(self, f, **kwargs):
        hk = self._hk

        def creator(next_creator, shape, dtype, init, context):
            # the parameters Tracr zeroes (module docstring).  Constant draws no key from Haiku's
            # RNG sequence: a random parameter created after one of these would get other values than
            # in Tracr's init — none exists today (the embeddings are Constant-initialised), and
            # test_lean_haiku_init_is_tracrs compares all parameters' bytes
            if "transformer" in context.module_name:
                init = hk.initializers.Constant(0.0)
            return next_creator(shape, dtype, init)

        def zero_init_f(*args, **kw):
            with hk.custom_creator(creator):
                return f(*args, **kw)
        t = hk.transform(zero_init_f, **kwargs)
        jitted = self._jax.jit(t.init)

        def init(*args, **kw):
            return jitted(*args, **kw)
        init._original_fn = t.init._original_fn  # what hk.without_apply_rng reads
        return hk.Transformed(init=init, apply=t.apply)


@contextlib.contextmanager
def lean_haiku_init():
    """Within it, Tracr's ``assemble_craft_model`` gets its model's parameters without running the
    model op by op.  Tracr builds them with ``forward.init(PRNGKey(0), [[1, 2, 3]])`` — every
    parameter drawn from Haiku's truncated normal and the whole model run at shape [1, 3], each JAX
    primitive compiled by XLA on its own — and then overwrites every parameter of a module whose
    name contains ``transformer`` with ``np.zeros_like`` before writing the compiled weights into it;
    the only initial values it keeps are the embeddings' (``hk.Embed`` of the given matrices).  Here
    (``tracr.compiler.assemble.hk`` swapped for :class:`_LeanHaiku` and restored on exit) the init
    is one ``jax.jit`` (XLA drops the unused forward pass) and those overwritten parameters are
    created as zeros: the same parameters, shapes, dtypes and embedding values bit for bit (the 13
    programs of tests/tracr_lib.py, benchmarks/README.md, ISSUE 16 twelfth pass; tested in
    tests/solver/test_tracr_lib.py), at about half the compile's CPU.  Threads: the swap is made by
    the first thread to enter and undone by the last to leave (a lock and a count), so overlapping
    uses in any order leave Tracr as it was; while one is inside, a Tracr compile in another thread
    (this context or not) gets the lean init too — the same parameters.  Needs the ``[tracr]``
    extra."""
    global _lean_depth, _lean_real
    assemble = tracr_module("tracr.compiler.assemble")
    import haiku
    import jax

    with _LEAN_LOCK:
        if _lean_depth == 0:
            _lean_real = assemble.hk
            assemble.hk = _LeanHaiku(haiku, jax)
        _lean_depth += 1
    try:
        yield
    finally:
        with _LEAN_LOCK:
            _lean_depth -= 1
            if _lean_depth == 0:
                assemble.hk, _lean_real = _lean_real, None


def compile_program(spec: str, vocab: Sequence, max_seq_len: int, args: Sequence[str] = (), *,
                    mlp_exactness: int = 100, causal: bool = False, name: str | None = None,
                    examples: Sequence[Sequence] | None = None) -> tuple[dict, dict[str, np.ndarray], Any, Any]:
    """Compile the RASP program ``spec`` (``MODULE:FUNCTION`` returning a RASP SOp, called with
    ``args`` as parsed by :func:`parse_call_args` over ``tokens``, ``indices``, ``rasp``,
    ``numerical``, ``categorical``, ``max_seq_len``) with Tracr for ``vocab`` and
    ``max_seq_len`` (BOS token ``BOS``, PAD token ``PAD``); returns ``(meta, arrays, model,
    program)``: :func:`export_assembled`'s pair, the live model and the RASP program.  Bounded: refuses ``len(vocab)·max_seq_len >``
    :data:`MAX_COMPILE_SIZE`.  Raises :class:`ParameterError` (one line) for a bad name or
    argument, a function that does not return a RASP SOp, or a program Tracr refuses.
    Tracr's Haiku init runs as :func:`lean_haiku_init` gives it (the same parameters, half the CPU)."""
    compiling = tracr_module("tracr.compiler.compiling")  # the optional extra [tracr]
    rasp = tracr_module("tracr.rasp.rasp")
    if max_seq_len < 1:
        raise ParameterError(f"--max-seq-len must be >= 1, got {max_seq_len}")
    if len(vocab) * max_seq_len > MAX_COMPILE_SIZE:
        raise ParameterError(f"vocabulary {len(vocab)} × max_seq_len {max_seq_len} exceeds the limit "
                             f"{MAX_COMPILE_SIZE} of 'tracr compile'")
    if "BOS" in [token_text(t) for t in vocab]:
        raise ParameterError("--vocab: 'BOS' is the compiler's BOS token")
    fn = load_function(spec)
    ns = {"rasp": rasp, "tokens": rasp.tokens, "indices": rasp.indices, "numerical": rasp.numerical,
          "categorical": rasp.categorical, "max_seq_len": max_seq_len, "Map": rasp.Map,
          "SequenceMap": rasp.SequenceMap, "Select": rasp.Select, "Aggregate": rasp.Aggregate,
          "Comparison": rasp.Comparison}
    a, kw = parse_call_args(args, ns)
    try:
        program = fn(*a, **kw)
    except Exception as e:  # noqa: BLE001 — the user's function: one line
        raise ParameterError(f"{spec}: calling it with {list(args)} failed: {type(e).__name__}: {e}") from None
    if not isinstance(program, rasp.SOp):
        raise ParameterError(f"{spec}: returned {type(program).__name__}, not a RASP SOp")
    try:
        with lean_haiku_init():
            model = compiling.compile_rasp_to_model(program, vocab=set(vocab), max_seq_len=max_seq_len, causal=causal,
                                                    compiler_bos="BOS", compiler_pad="PAD", mlp_exactness=mlp_exactness)
    except Exception as e:  # noqa: BLE001 — Tracr's refusal (NotImplementedError, ValueError, ...): one line
        raise ParameterError(f"{spec}: Tracr cannot compile it: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}") from None
    nm = name or fn.__name__.removeprefix("make_")
    meta, arrays = export_assembled(model, name=nm, program=program, mlp_exactness=mlp_exactness,
                                    examples=examples,
                                    source=f"tracr compile {spec} --vocab {','.join(map(token_text, vocab))} "
                                           f"--max-seq-len {max_seq_len}" + "".join(f" --args {x!r}" for x in args))
    return meta, arrays, model, program


def write_export(meta: dict, arrays: dict[str, np.ndarray], out_dir: str | Path, name: str | None = None) -> Path:
    """Write ``DIR/NAME.json`` and ``DIR/NAME.npz`` (strict JSON; the arrays float64, uncompressed);
    returns ``DIR/NAME`` — the path ``certify --tracr`` takes.  Raises :class:`ParameterError`
    when ``DIR`` cannot be created or written."""
    d = Path(out_dir)
    stem = d / (name or str(meta["program"]))
    try:
        d.mkdir(parents=True, exist_ok=True)
        buf = io.BytesIO()
        np.savez(buf, **{k: np.asarray(v, dtype=np.float64) for k, v in arrays.items()})
        stem.with_name(stem.name + ".npz").write_bytes(buf.getvalue())
        m = dict(meta, npz_sha256=hashlib.sha256(buf.getvalue()).hexdigest())
        stem.with_name(stem.name + ".json").write_text(json.dumps(m, indent=1, allow_nan=False) + "\n", encoding="utf-8")
    except OSError as e:
        raise ParameterError(f"-o {out_dir}: cannot write ({e.strerror or e})") from None
    return stem
