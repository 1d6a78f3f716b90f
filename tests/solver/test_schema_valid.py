"""The shipped certificate schema is a valid JSON Schema draft 2020-12 (verify no longer re-checks
it at run time, ISSUE 16), and the validator verify uses rejects what the schema forbids."""

from __future__ import annotations

import jsonschema
import pytest

from softhard.solver import replay


def test_shipped_schema_is_valid_draft_2020_12():
    jsonschema.Draft202012Validator.check_schema(replay.schema())


def test_validator_is_the_schema_s_and_rejects_a_wrong_type():
    v = replay.validator()
    assert v.schema == replay.schema()
    with pytest.raises(jsonschema.ValidationError):
        v.validate([])  # a certificate is an object
