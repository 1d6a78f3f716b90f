"""The JSON Schema of certificates and verify's validator of it (:mod:`.replay`), whose memo skips
the parts of a certificate already found valid (ISSUE 16: verify of many edited copies of one
certificate re-validated the unedited parts every time).  No SymPy; jsonschema is imported by the
validator only.
"""

from __future__ import annotations

import contextvars
import hashlib
import json
import os
from functools import lru_cache

from .certjson import Texts, canonical

SCHEMA_FILE = "certificate-2.schema.json"


@lru_cache(maxsize=1)
def schema_text() -> str:
    """The schema's text (package data), read from this package's directory — where
    ``importlib.resources.files("softhard.solver")`` reads it for a package on the file system —
    else (a package in a zip) through importlib.resources (~5 ms of every verify's start-up when
    imported: ISSUE 16)."""
    try:
        with open(os.path.join(os.path.dirname(__file__), "schema", SCHEMA_FILE), encoding="utf-8") as fh:
            return fh.read()
    except OSError:
        from importlib import resources  # (standard library)

        return resources.files("softhard.solver").joinpath("schema", SCHEMA_FILE).read_text("utf-8")


def schema() -> dict:
    """The JSON Schema of certificates (draft 2020-12), one for every kind."""
    return json.loads(schema_text())


@lru_cache(maxsize=1)
def validator() -> "jsonschema.Draft202012Validator":  # noqa: F821 - imported lazily
    """The schema's validator (jsonschema is imported here, by verify only: ~0.1 s of every
    certify's start-up otherwise).  The schema is package data: that it is a valid draft 2020-12
    schema is tested (tests/solver/test_schema_valid.py), not re-checked by every verify
    (``check_schema`` was ~0.1 s CPU of each; ISSUE 16)."""
    import jsonschema  # third-party, heavy; verify's schema check only

    base = jsonschema.Draft202012Validator
    _BASE_KEYWORDS.update(items=base.VALIDATORS["items"], additionalProperties=base.VALIDATORS["additionalProperties"])
    _BASE_KEYWORDS.update({"$ref": base.VALIDATORS["$ref"]})
    _REFS.clear()
    return jsonschema.validators.extend(base, {"properties": _memo_properties, "items": _memo_items,
                                               "additionalProperties": _memo_additional,
                                               "$ref": _memo_ref})(schema())


#: (id of a subschema, SHA-256 of the canonical JSON of a property value, array item or extra property
#: value) -> that subschema, for the values found valid under it (the schema has local ``$ref`` s only,
#: no ``$id``, ``$dynamicRef``, ``format`` or ``unevaluated*``: a value's validity under a subschema
#: depends on the two alone).  Digests, not texts: 4096 entries of a Tracr certificate's sections would
#: otherwise hold megabytes each in a long-running process.
_VALID: dict[tuple[int, bytes], dict] = {}
_VALID_MAX = 4096
#: the canonical texts of the certificate being validated by verify (:class:`~.certjson.Texts`:
#: its sections' texts serve the memo's keys, the hashes and the diff alike), or None
CURRENT_TEXTS: contextvars.ContextVar[Texts | None] = contextvars.ContextVar("softhard_schema_texts", default=None)


def _descend(validator, value, subschema, **where):
    """``validator.descend(value, subschema, **where)``, skipping a non-empty object or array value
    already found valid under the same subschema (verify of many edited copies of one certificate
    re-validates the unedited parts: ISSUE 16).  The same errors, in the same order: only a value
    that yielded none is remembered, and an invalid one is validated afresh every time."""
    key = None
    if isinstance(value, (dict, list)) and value and isinstance(subschema, dict):
        texts = CURRENT_TEXTS.get()
        try:
            text = canonical(value) if texts is None else texts.text(value)
            key = (id(subschema), hashlib.sha256(text).digest())  # a digest: the memo holds no texts
        except (TypeError, ValueError):  # NaN/Infinity or a non-JSON value: validated as it is
            key = None
        if key is not None and _VALID.get(key) is subschema:
            return
    if isinstance(subschema, dict) and "$id" not in subschema and validator._ref_resolver is None:
        # (jsonschema's own descend would resolve in the subschema as a resource: without an $id,
        # Resolver.in_subresource returns the current resolver, which is passed directly)
        where["resolver"] = validator._resolver
    errors = list(validator.descend(value, subschema, **where))
    if key is not None and not errors:
        if len(_VALID) >= _VALID_MAX:
            _VALID.clear()
        _VALID[key] = subschema
    yield from errors


def _memo_properties(validator, properties, instance, schema):
    """jsonschema's ``properties`` keyword, each value through :func:`_descend`."""
    if not validator.is_type(instance, "object"):
        return
    for prop, subschema in properties.items():
        if prop in instance:
            yield from _descend(validator, instance[prop], subschema, path=prop, schema_path=prop)


def _memo_items(validator, items, instance, schema):
    """jsonschema's draft 2020-12 ``items`` keyword (4.x), each item under a schema object through
    :func:`_descend` (a boolean ``items``: jsonschema's own)."""
    if not isinstance(items, dict):
        yield from _BASE_KEYWORDS["items"](validator, items, instance, schema)
        return
    if not validator.is_type(instance, "array"):
        return
    for index in range(len(schema.get("prefixItems", [])), len(instance)):
        yield from _descend(validator, instance[index], items, path=index)


def _memo_additional(validator, aP, instance, schema):
    """jsonschema's ``additionalProperties`` keyword (4.x), each extra value under a schema object
    through :func:`_descend`, in jsonschema's order (a set's); a boolean: jsonschema's own."""
    if not isinstance(aP, dict):
        yield from _BASE_KEYWORDS["additionalProperties"](validator, aP, instance, schema)
        return
    if not validator.is_type(instance, "object"):
        return
    from jsonschema._utils import find_additional_properties  # third-party (see validator)

    for extra in set(find_additional_properties(instance, schema)):
        yield from _descend(validator, instance[extra], aP, path=extra)


#: jsonschema's draft 2020-12 keyword functions that the memo's ones delegate to (set by validator)
_BASE_KEYWORDS: dict = {}


#: local reference (``#/$defs/...``) -> what the validator's resolver gave for it (contents and
#: resolver): the schema holds no ``$id`` but the root's and no ``$dynamicRef``, so every local
#: reference resolves to the same subschema wherever it is met (filled by :func:`_memo_ref`,
#: emptied when :func:`validator` builds the validator)
_REFS: dict[str, tuple] = {}


def _memo_ref(validator, ref, instance, schema):
    """jsonschema's ``$ref`` keyword (4.x, ``referencing``), a local reference's resolution looked
    up once (Resolver.lookup was ~8 % of verify's CPU on edited copies of a Tracr certificate);
    any other reference, or a validator with a legacy ``RefResolver``: jsonschema's own."""
    if not (isinstance(ref, str) and ref.startswith("#")) or validator._ref_resolver is not None:
        yield from _BASE_KEYWORDS["$ref"](validator, ref, instance, schema)
        return
    got = _REFS.get(ref)
    if got is None:
        resolved = validator._resolver.lookup(ref)  # (every reference of the schema resolves: test_schema_valid)
        got = _REFS[ref] = (resolved.contents, resolved.resolver)
    yield from validator.descend(instance, got[0], resolver=got[1])

