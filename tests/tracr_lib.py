"""The 13 programs of Tracr's library (``tracr.compiler.lib``) at small sizes: the command-line
arguments of ``softhard tracr compile`` for each (shared by tests/solver/test_tracr_lib.py and
the table in docs/tracr.md)."""

from __future__ import annotations

#: name -> (MODULE:FUNCTION, --vocab, --max-seq-len, --args)
LIB = {
    "length": ("tracr.compiler.lib:make_length", "a,b,c", 4, []),
    "reverse": ("tracr.compiler.lib:make_reverse", "a,b,c", 4, ["tokens"]),
    "pair_balance": ("tracr.compiler.lib:make_pair_balance", "(,),x", 4, ["tokens", "(", ")"]),
    "shuffle_dyck": ("tracr.compiler.lib:make_shuffle_dyck", "(,),x", 4, ['["()"]']),
    "shuffle_dyck2": ("tracr.compiler.lib:make_shuffle_dyck2", "(,),{,}", 3, []),
    "hist": ("tracr.compiler.lib:make_hist", "a,b,c", 4, []),
    "sort_unique": ("tracr.compiler.lib:make_sort_unique", "1,2,3", 4, ["tokens", "tokens"]),
    "sort": ("tracr.compiler.lib:make_sort", "1,2,3", 4, ["tokens", "tokens", "max_seq_len=4", "min_key=1"]),
    "sort_freq": ("tracr.compiler.lib:make_sort_freq", "a,b,c", 4, ["max_seq_len=4"]),
    "frac_prevs": ("tracr.compiler.lib:make_frac_prevs", "x,y", 4, ["tokens=='x'"]),
    "count": ("tracr.compiler.lib:make_count", "a,b", 4, ["tokens", "a"]),
    "count_less_freq": ("tracr.compiler.lib:make_count_less_freq", "a,b", 4, ["n=2"]),
    "nary_sequencemap": ("tracr.compiler.lib:make_nary_sequencemap", "1,2", 3,
                         ["lambda x, y: x + y", "tokens", "indices"]),
}


def cli_args(name: str, out: str) -> list[str]:
    """``softhard tracr compile ...`` arguments (after ``tracr compile``) for program ``name``."""
    spec, vocab, n, args = LIB[name]
    return [spec, "--vocab", vocab, "--max-seq-len", str(n), "-o", out, "--name", name] + (["--args", *args] if args else [])
