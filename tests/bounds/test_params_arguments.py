"""Params checks its arguments as every parameter: an unknown keyword, too many positional
arguments or a field given twice is a ParameterError naming it (not Python's TypeError), and
``help(softhard.Params)`` explains the fields (it showed "(module docstring)" and an issue number)."""

from __future__ import annotations

import pydoc
from fractions import Fraction

import pytest

import softhard
from softhard.bounds.params import Params
from softhard.constructions.errors import ParameterError

FIELDS = ("regime", "beta", "eta", "epsilon", "eps_ln", "comparator", "inv_tau", "construction", "schedule")


def test_an_unknown_keyword_names_it_and_the_fields():
    with pytest.raises(ParameterError) as e:
        Params(bogus=1)
    msg = str(e.value)
    assert msg.startswith("Params: unknown keyword argument bogus; it accepts ")
    assert sorted(msg.split("it accepts ")[1].split(", ")) == sorted(FIELDS)
    with pytest.raises(ParameterError, match="unknown keyword argument bogus"):
        Params().with_(bogus=1)


def test_positional_misuse_is_a_parameter_error():
    with pytest.raises(ParameterError, match="Params: too many positional arguments"):
        Params("T", "1/4", "1/4", None, None, None, None, None, None, "extra")
    with pytest.raises(ParameterError, match="Params: multiple values for argument 'regime'"):
        Params("T", regime="U")
    p = Params("U", "1/8", "1/3")  # positional in field order still works
    assert (p.regime, p.beta, p.eta) == ("U", Fraction(1, 8), Fraction(1, 3))


def test_help_explains_the_fields():
    text = pydoc.render_doc(softhard.Params, renderer=pydoc.plaintext)
    assert "(module docstring)" not in text and "issue" not in text.lower()
    for f in FIELDS:
        assert f"``{f}``" in text, f
    assert "regime: 'str | None' = 'T'" in text  # the signature, not (*args, **kwargs)
