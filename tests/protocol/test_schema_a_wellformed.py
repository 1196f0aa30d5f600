"""Well-formedness of the group-A schema tables: version ranges inside the
API's range, tagged fields only in flexible versions with unique tags,
nullability only where the type allows null and only where the field
exists, defaults of the field's type (and non-null wherever null cannot be
written), snake_case names unique per struct.
"""

from __future__ import annotations

import re

import pytest

from kavka.protocol.schema import registry
from kavka.protocol.schema.dsl import MISSING, Api, Field, F, api
from kavka.protocol.schema.apis import admin_topics, auth_producer, groups, inter_broker, offsets

GROUP_A_KEYS = sorted(
    a.key for m in (offsets, inter_broker, groups, admin_topics, auth_producer) for a in m.APIS
)

_INT_RANGE = {
    "int8": (-(2**7), 2**7 - 1), "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1),
    "uint16": (0, 2**16 - 1), "uint32": (0, 2**32 - 1),
}
_NULLABLE_TYPES = ("string", "bytes", "records")
_SNAKE = re.compile(r"^[a-z][a-z0-9]*(_[a-z0-9]+)*$")


def _problems(a: Api, fields: tuple[Field, ...], where: str) -> list[str]:
    """Every rule a struct of ``a`` breaks, as readable strings."""
    found: list[str] = []
    names = [f.name for f in fields]
    for dup in {n for n in names if names.count(n) > 1}:
        found.append(f"{where}: field name {dup!r} used twice")
    tags: dict[int, str] = {}
    for f in fields:
        at = f"{where}.{f.name}"
        v = f.versions
        if not _SNAKE.match(f.name):
            found.append(f"{at}: not snake_case")
        if v.empty or v.lo > a.max_version or v.hi < a.min_version:
            found.append(f"{at}: versions {v} outside {a.min_version}-{a.max_version}")
        if not f.nullable.empty:
            if not (v.lo <= f.nullable.lo and f.nullable.hi <= v.hi):
                found.append(f"{at}: nullable {f.nullable} not within versions {v}")
            if not (f.is_array or f.is_struct or f.type in _NULLABLE_TYPES):
                found.append(f"{at}: type {f.type} cannot be null")
        if (f.tag is None) != f.tagged.empty:
            found.append(f"{at}: tag and tagged versions must come together")
        if f.tag is not None:
            if a.flexible_from is None or f.tagged.lo < a.flexible_from:
                found.append(f"{at}: tagged in {f.tagged}, not all flexible")
            if not (v.lo <= f.tagged.lo and f.tagged.hi <= v.hi):
                found.append(f"{at}: tagged {f.tagged} not within versions {v}")
            if f.tag in tags:
                found.append(f"{at}: tag {f.tag} also used by {tags[f.tag]}")
            tags[f.tag] = f.name
        if f.default is not MISSING:
            t = f.type
            if f.default is None:
                if f.nullable.empty:
                    found.append(f"{at}: default null but never nullable")
            elif t in _INT_RANGE:
                lo, hi = _INT_RANGE[t]
                if type(f.default) is not int or not lo <= f.default <= hi:
                    found.append(f"{at}: default {f.default!r} is not an {t}")
            elif t == "bool":
                if type(f.default) is not bool:
                    found.append(f"{at}: default {f.default!r} is not a bool")
            elif t == "string":
                if not isinstance(f.default, str):
                    found.append(f"{at}: default {f.default!r} is not a string")
            elif f.is_array:
                if f.default != []:
                    found.append(f"{at}: an array's default can only be empty or null")
            else:
                found.append(f"{at}: default given for type {t}")
        partly_nullable = not f.nullable.empty and (f.nullable.lo, f.nullable.hi) != (v.lo, v.hi)
        if partly_nullable and (f.default is MISSING or f.default is None):
            # Kavka's default for a nullable field is null, which cannot be
            # written in the versions where the field is not nullable.
            found.append(f"{at}: nullable only in {f.nullable} of {v}: needs a non-null default")
        if f.is_struct_array or f.is_struct:
            if not f.struct_fields:
                found.append(f"{at}: empty struct")
            found += _problems(a, f.struct_fields, at)
    return found


def test_group_a_has_twenty_apis():
    assert len(GROUP_A_KEYS) == len(set(GROUP_A_KEYS)) == 20


@pytest.mark.parametrize("key", GROUP_A_KEYS)
def test_table_is_well_formed(key):
    a = registry()[key]
    assert a.min_version <= a.max_version
    if a.flexible_from is not None:
        assert a.min_version <= a.flexible_from <= a.max_version
    problems = _problems(a, a.request, f"{a.name}Request") + _problems(a, a.response, f"{a.name}Response")
    assert problems == []


def test_well_formedness_rules_can_fail():
    """Each rule of ``_problems`` catches the mistake it is written for."""

    bad = api(
        99, "Bad", "0-3", "2+",
        request=[
            F("tagged_too_early", "int32", "1+", tag=0, tagged="1+"),
            F("same_tag", "int32", "2+", tag=0, tagged="2+"),
            F("int_nullable", "int32", "0+", nullable="0+"),
            F("NotSnake", "int16", "0+"),
            F("beyond", "int16", "4+"),
            F("wide_default", "int8", "0+", default=300),
            F("null_default", "string", "0+", default=None),
            F("twice", "bool", "0"),
            F("twice", "bool", "1+"),
            F("partly_nullable", "string", "0+", nullable="2+"),
            F("array_default", "[]int32", "0+", default=[1]),
        ],
        response=[],
    )
    text = "\n".join(_problems(bad, bad.request, "BadRequest"))
    for expected in (
        "tagged_too_early: tagged in 1+, not all flexible",
        "same_tag: tag 0 also used by tagged_too_early",
        "int_nullable: type int32 cannot be null",
        "NotSnake: not snake_case",
        "beyond: versions 4+ outside 0-3",
        "wide_default: default 300 is not an int8",
        "null_default: default null but never nullable",
        "field name 'twice' used twice",
        "partly_nullable: nullable only in 2+ of 0+: needs a non-null default",
        "array_default: an array's default can only be empty or null",
    ):
        assert expected in text


def _default_cases():
    for key in GROUP_A_KEYS:
        a = registry()[key]
        for side in ("request", "response"):
            for v in range(a.min_version, a.max_version + 1):
                yield pytest.param(key, side, v, id=f"{a.name}-{side}-v{v}")


@pytest.mark.parametrize("key,side,version", list(_default_cases()))
def test_default_message_encodes_in_every_version(key, side, version):
    """A message built from the schema's defaults alone must be writable
    in every version and read back equal (what a handler relies on when it
    fills in only the fields it knows)."""
    from kavka.protocol.codec import decode_body, encode_body
    from kavka.protocol.messages import request_class, response_class

    cls = request_class(key) if side == "request" else response_class(key)
    data = encode_body(cls(), version)
    assert decode_body(key, side, version, memoryview(data)) == cls()
