"""Hypothesis strategies built from the schema tables themselves.

``message(api_key, side, version)`` draws a random, valid message of any
API at any version: every field present in that version gets a random value
of its type (None where the version allows null), tagged fields are either
left at their default or set, and fields absent in the version keep their
defaults. Used by the round-trip, fuzz and oracle tests, so a new table in
``kavka/protocol/schema/apis/`` is covered without writing a test for it.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from kavka.protocol.messages import FRESH, camel, default_of, message_class
from kavka.protocol.schema import registry
from kavka.protocol.schema.dsl import Field

# Examples per property in ``make test`` (a shared 2-core machine); raise
# with KAVKA_PROTOCOL_EXAMPLES=300 for a deeper local run.
EXAMPLES = int(os.environ.get("KAVKA_PROTOCOL_EXAMPLES", "12"))


def budget(factor: float = 1.0) -> settings:
    """Hypothesis settings for the protocol tests (only theirs: no global
    profile, so other test packages keep their own)."""
    return settings(max_examples=max(1, int(EXAMPLES * factor)), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


_INT_RANGES = {
    "int8": (-(1 << 7), (1 << 7) - 1), "int16": (-(1 << 15), (1 << 15) - 1),
    "int32": (-(1 << 31), (1 << 31) - 1), "int64": (-(1 << 63), (1 << 63) - 1),
    "uint16": (0, (1 << 16) - 1), "uint32": (0, (1 << 32) - 1),
}


def _scalar(t: str) -> st.SearchStrategy:
    if t in _INT_RANGES:
        lo, hi = _INT_RANGES[t]
        return st.one_of(st.integers(lo, hi), st.sampled_from([lo, hi, 0, -1 if lo < 0 else 1]))
    if t == "bool":
        return st.booleans()
    if t == "float64":
        return st.floats(allow_nan=False)
    if t == "uuid":
        return st.uuids()
    if t == "string":
        return st.text(max_size=12)
    if t in ("bytes", "records"):
        return st.binary(max_size=24)
    raise ValueError(t)


def value(cls: type, f: Field, version: int, flexible: bool, depth: int) -> st.SearchStrategy:
    if f.is_struct_array:
        child = struct(getattr(cls, camel(f.name)), f.struct_fields, version, flexible, depth + 1)
        base = st.lists(child, max_size=3 if depth < 2 else 1)
    elif f.is_struct:
        base = struct(getattr(cls, camel(f.name)), f.struct_fields, version, flexible, depth + 1)
    elif f.type.startswith("[]"):
        base = st.lists(_scalar(f.type[2:]), max_size=4)
    else:
        base = _scalar(f.type)
    if version in f.nullable:
        base = st.one_of(st.none(), base)
    if flexible and f.tag is not None and version in f.tagged:
        d = default_of(f)
        if d is FRESH:
            d = [] if f.is_array else getattr(cls, camel(f.name))()
        base = st.one_of(st.just(d), base)
    return base


def struct(cls: type, fields: tuple[Field, ...], version: int, flexible: bool, depth: int = 0):
    strategies = {f.name: value(cls, f, version, flexible, depth) for f in fields if version in f.versions}
    return st.fixed_dictionaries(strategies).map(lambda kw: cls(**kw))


def message(api_key: int, side: str, version: int) -> st.SearchStrategy:
    a = registry()[api_key]
    fields = a.request if side == "request" else a.response
    return struct(message_class(api_key, side), fields, version, a.is_flexible(version))


def all_versions() -> list[tuple[int, str, int]]:
    """Every (api key, side, version) the registry declares."""
    out = []
    for key, a in sorted(registry().items()):
        for v in range(a.min_version, a.max_version + 1):
            out.append((key, "request", v))
            out.append((key, "response", v))
    return out


def case_id(case: tuple[int, str, int]) -> str:
    key, side, v = case
    return f"{registry()[key].name}-{side}-v{v}"
