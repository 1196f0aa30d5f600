"""Every API table in the registry is well-formed: consistent version
ranges, tags only in flexible versions, nullability within the field's
versions, defaults of the field's type, and every version compiles."""

import re
import uuid

import pytest

from kavka.protocol.codec import plan_for
from kavka.protocol.messages import REQUEST, RESPONSE
from kavka.protocol.schema import registry
from kavka.protocol.schema.dsl import _OPEN, MISSING, Api, Field, Versions

APIS = sorted(registry().values(), key=lambda a: a.key)
SNAKE = re.compile(r"^[a-z][a-z0-9]*(_[a-z0-9]+)*$")
INT_RANGES = {
    "int8": 8, "int16": 16, "int32": 32, "int64": 64,
}


def within(inner: Versions, outer: Versions) -> bool:
    return inner.empty or (outer.lo <= inner.lo and inner.hi <= outer.hi)


def walk(fields: tuple[Field, ...], path: str):
    for f in fields:
        yield f"{path}{f.name}", f, fields
        if f.is_struct_array or f.is_struct:
            yield from walk(f.struct_fields, f"{path}{f.name}.")


def default_ok(f: Field) -> bool:
    d = f.default
    if d is MISSING:
        return True
    if d is None:
        return not f.nullable.empty
    if f.is_array:
        return d == []
    t = f.type
    if t in INT_RANGES:
        bits = INT_RANGES[t]
        return type(d) is int and -(1 << bits - 1) <= d < (1 << bits - 1)
    if t in ("uint16", "uint32"):
        return type(d) is int and 0 <= d < (1 << int(t[4:]))
    return {"bool": bool, "float64": float, "string": str, "uuid": uuid.UUID,
            "bytes": bytes, "records": bytes}.get(t) is type(d)


@pytest.mark.parametrize("a", APIS, ids=[a.name for a in APIS])
def test_api_header(a: Api):
    assert re.fullmatch(r"[A-Z][A-Za-z0-9]*", a.name)
    assert 0 <= a.min_version <= a.max_version < _OPEN
    assert a.flexible_from is None or a.flexible_from >= 0


@pytest.mark.parametrize("a", APIS, ids=[a.name for a in APIS])
def test_fields(a: Api):
    problems = []
    for side, fields in ((REQUEST, a.request), (RESPONSE, a.response)):
        for path, f, siblings in walk(fields, f"{side}."):
            if not SNAKE.match(f.name):
                problems.append(f"{path}: name is not snake_case")
            if f.versions.empty:
                problems.append(f"{path}: present in no version")
            if not within(f.nullable, f.versions):
                problems.append(f"{path}: nullable {f.nullable} outside versions {f.versions}")
            if (f.tag is None) != f.tagged.empty:
                problems.append(f"{path}: tag and tagged versions must come together")
            if not f.tagged.empty:
                if not within(f.tagged, f.versions):
                    problems.append(f"{path}: tagged {f.tagged} outside versions {f.versions}")
                if a.flexible_from is None or f.tagged.lo < a.flexible_from:
                    problems.append(f"{path}: tagged in non-flexible versions ({f.tagged})")
            if f.is_struct and not f.struct_fields or f.is_struct_array and not f.struct_fields:
                problems.append(f"{path}: empty struct")
            if not default_ok(f):
                problems.append(f"{path}: default {f.default!r} does not fit type {f.type!r}")
            for g in siblings:
                if g is f:
                    break
                overlap = max(f.versions.lo, g.versions.lo) <= min(f.versions.hi, g.versions.hi)
                if g.name == f.name and overlap:
                    problems.append(f"{path}: defined twice in versions {f.versions} and {g.versions}")
                if (f.tag is not None and g.tag == f.tag and
                        max(f.tagged.lo, g.tagged.lo) <= min(f.tagged.hi, g.tagged.hi)):
                    problems.append(f"{path}: tag {f.tag} also used by {g.name}")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("a", APIS, ids=[a.name for a in APIS])
def test_every_version_compiles(a: Api):
    for v in range(a.min_version, a.max_version + 1):
        for side in (REQUEST, RESPONSE):
            decode, encode, source = plan_for(a.key, side, v)
            assert callable(decode) and callable(encode) and source


def test_core_apis_are_registered():
    reg = registry()
    assert (reg[0].name, reg[0].max_version, reg[0].flexible_from) == ("Produce", 11, 9)
    assert (reg[1].name, reg[1].max_version, reg[1].flexible_from) == ("Fetch", 16, 12)
    assert (reg[3].name, reg[3].max_version, reg[3].flexible_from) == ("Metadata", 12, 9)
    assert (reg[18].name, reg[18].max_version, reg[18].flexible_from) == ("ApiVersions", 4, 3)
