"""Fact checks for the group-A schema tables (offsets, inter_broker, groups,
admin_topics, auth_producer).

Checks against external oracles (the ZooKeeper-era APIs are checked
against the protocol guide in ``test_schema_a_guide.py``; the tables'
well-formedness in ``test_schema_a_wellformed.py``):
1. Against kafka-python 3.0.12's message definitions (Kafka's own message
   descriptions as shipped in the venv): for every API both define and
   every version kafka-python knows, the flattened layout — field order,
   name (modulo spelling), type, nullability, tag, scalar defaults and
   ignorability — must agree. Deliberate differences: ``DIFFERENCES``.
2. Against the structs kafka-python (legacy ``kafka.protocol.old``) and
   aiokafka wrote by hand from the protocol guide: the sequence of wire
   types must agree. Their known errors: ``HAND_WRITTEN_ERRATA``.
"""

from __future__ import annotations

import re
import warnings
from functools import cache

import pytest

from kavka.protocol.schema import registry
from kavka.protocol.schema.dsl import MISSING, Api, Field
from kavka.protocol.schema.apis import admin_topics, auth_producer, groups, inter_broker, offsets

kp_schemas = pytest.importorskip("kafka.protocol.schemas")


GROUP_A = {
    2: ("ListOffsets", offsets),
    4: ("LeaderAndIsr", inter_broker),
    5: ("StopReplica", inter_broker),
    6: ("UpdateMetadata", inter_broker),
    7: ("ControlledShutdown", inter_broker),
    8: ("OffsetCommit", offsets),
    9: ("OffsetFetch", offsets),
    10: ("FindCoordinator", groups),
    11: ("JoinGroup", groups),
    12: ("Heartbeat", groups),
    13: ("LeaveGroup", groups),
    14: ("SyncGroup", groups),
    15: ("DescribeGroups", groups),
    16: ("ListGroups", groups),
    17: ("SaslHandshake", auth_producer),
    19: ("CreateTopics", admin_topics),
    20: ("DeleteTopics", admin_topics),
    21: ("DeleteRecords", offsets),
    22: ("InitProducerId", auth_producer),
    23: ("OffsetForLeaderEpoch", offsets),
}

# The oldest and newest version Kavka's table must cover: v0 (the protocol
# guide documents every API from v0, Kafka 4.0 merely stopped serving some)
# up to Kafka 4.x for live APIs, Kafka 3.9 for the ZooKeeper-only ones.
EXPECTED_RANGE = {
    2: (0, 11), 4: (0, 7), 5: (0, 4), 6: (0, 8), 7: (0, 3), 8: (0, 10),
    9: (0, 10), 10: (0, 6), 11: (0, 9), 12: (0, 4), 13: (0, 5), 14: (0, 5),
    15: (0, 6), 16: (0, 5), 17: (0, 1), 19: (0, 7), 20: (0, 6), 21: (0, 2),
    22: (0, 6), 23: (0, 4),
}

# Deliberate differences from kafka-python's definitions, keyed by
# (api key, "request"/"response"), with the reason. Empty: none needed.
DIFFERENCES: dict[tuple[int, str], str] = {}

# APIs kafka-python 3.0.12 does not define (removed from Kafka with
# ZooKeeper in 4.0); checked against the protocol guide instead.
NOT_IN_KAFKA_PYTHON = {4, 5, 6, 7}


def _norm(name: str) -> str:
    return name.replace("_", "").lower()


# ---------------------------------------------------------------- walkers


_SCALARS = ("bool", "int8", "int16", "int32", "int64")


def _zero(f: Field) -> object:
    t = f.type
    if t == "bool":
        return False
    if t in ("int8", "int16", "int32", "int64", "uint16", "uint32"):
        return 0
    return None


def _ours(fields: tuple[Field, ...], version: int) -> list[tuple]:
    """Flatten our schema at ``version``: body fields in order, then the
    tagged fields by tag; nested structs bracketed."""
    out: list[tuple] = []
    present = [f for f in fields if version in f.versions]
    body = [f for f in present if version not in f.tagged]
    tagged = sorted((f for f in present if version in f.tagged), key=lambda f: f.tag)
    for f in body + tagged:
        tag = f.tag if version in f.tagged else None
        nullable = version in f.nullable
        if f.is_struct_array or f.is_struct:
            kind = "[]{" if f.is_struct_array else "{"
            out.append((_norm(f.name), kind, nullable, tag, None, f.ignorable))
            out.extend(_ours(f.struct_fields, version))
            out.append(("}",))
        else:
            if f.type in _SCALARS:
                default = _zero(f) if f.default is MISSING else f.default
            elif f.type == "string":
                default = "null" if f.default is None else None
            else:
                default = None
            out.append((_norm(f.name), f.type, nullable, tag, default, f.ignorable))
    return out


def _theirs(fields, version: int) -> list[tuple]:
    """Flatten kafka-python's field objects at ``version`` the same way."""
    out: list[tuple] = []
    present = [f for f in fields if f.for_version_q(version)]
    body = [f for f in present if not f.tagged_field_q(version)]
    tagged = sorted((f for f in present if f.tagged_field_q(version)), key=lambda f: f.tag)
    for f in body + tagged:
        tag = f.tag if f.tagged_field_q(version) else None
        nullable = f.nullable_for_version_q(version)
        if f.is_struct_array() or f.is_struct():
            kind = "[]{" if f.is_struct_array() else "{"
            inner = f.array_of if f.is_struct_array() else f
            out.append((_norm(f.name), kind, nullable, tag, None, bool(f._ignorable)))
            out.extend(_theirs(list(inner.fields.values()), version))
            out.append(("}",))
        else:
            type_str = f._type_str  # the schema's type name, "[]" kept for arrays
            if type_str in _SCALARS:
                default = f.default
            elif type_str == "string":
                default = "null" if f.default is None else None
            else:
                default = None
            out.append((_norm(f.name), type_str, nullable, tag, default, bool(f._ignorable)))
    return out


def _load_json(message: str) -> dict:
    # kafka-python 3.0.12 reads its JSON with importlib.resources' legacy,
    # deprecated API; the warning is theirs, not ours.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return kp_schemas.load_json(message, "kafka.protocol.schemas.resources")


@cache
def _kafka_python_message(api_name: str, kind: str):
    """kafka-python's parsed definition of ``<api_name><Request|Response>``:
    (top-level fields, max version)."""
    json = _load_json(api_name + kind)
    struct = kp_schemas.StructField(json)
    hi = kp_schemas.BaseField.parse_versions(json["validVersions"])[1]
    return list(struct.fields.values()), hi


# ------------------------------------------------------ registry and ranges


def test_group_a_apis_are_registered_from_their_modules():
    reg = registry()
    for key, (name, module) in GROUP_A.items():
        assert key in reg, f"API {key} ({name}) missing from the registry"
        assert reg[key].name == name
        assert reg[key] in module.APIS, f"{name} should live in {module.__name__}"


@pytest.mark.parametrize("key", sorted(GROUP_A))
def test_version_range_covers_v0_to_latest(key):
    a = registry()[key]
    assert (a.min_version, a.max_version) == EXPECTED_RANGE[key]


@pytest.mark.parametrize("key", sorted(set(GROUP_A) - NOT_IN_KAFKA_PYTHON))
def test_ranges_and_flexible_versions_match_kafka_python(key):
    a = registry()[key]
    for kind in ("Request", "Response"):
        json = _load_json(a.name + kind)
        lo, hi = kp_schemas.BaseField.parse_versions(json["validVersions"])
        assert a.max_version == hi, f"{a.name}{kind}: kafka-python knows up to v{hi}"
        flex = kp_schemas.BaseField.parse_versions(json["flexibleVersions"])
        expected = None if flex == (-1, -1) else flex[0]
        assert a.flexible_from == expected, f"{a.name}{kind} flexible from"


# ------------------------------------------------- layouts vs kafka-python


def _cases():
    for key in sorted(set(GROUP_A) - NOT_IN_KAFKA_PYTHON):
        a = registry()[key]
        for kind in ("request", "response"):
            _, hi = _kafka_python_message(a.name, kind.capitalize())
            for v in range(0, min(hi, a.max_version) + 1):
                yield pytest.param(key, kind, v, id=f"{a.name}-{kind}-v{v}")


@pytest.mark.parametrize("key,kind,version", list(_cases()))
def test_layout_matches_kafka_python(key, kind, version):
    a: Api = registry()[key]
    theirs_fields, _ = _kafka_python_message(a.name, kind.capitalize())
    ours = _ours(getattr(a, kind), version)
    theirs = _theirs(theirs_fields, version)
    if (key, kind) in DIFFERENCES:
        assert ours != theirs, f"listed difference no longer exists: {DIFFERENCES[(key, kind)]}"
        return
    assert ours == theirs


def test_walker_detects_a_difference():
    """The comparison must be able to fail: a schema with one type changed
    flattens differently from kafka-python's."""
    a = registry()[11]
    theirs_fields, _ = _kafka_python_message("JoinGroup", "Request")
    altered = tuple(
        Field(f.name, "int64", f.versions, f.nullable, f.default, f.tag, f.tagged, f.ignorable)
        if f.name == "session_timeout_ms" else f
        for f in a.request
    )
    assert _ours(altered, 5) != _theirs(theirs_fields, 5)
    assert _ours(a.request, 5) == _theirs(theirs_fields, 5)


# ---------------------------- wire types vs hand-written client definitions
#
# kafka-python's legacy ``kafka.protocol.old`` structs and aiokafka's
# ``aiokafka.protocol`` structs were written by hand from the protocol
# guide (not generated from Kafka's JSON): a second, independent oracle.
# Their field names differ from Kafka's, so only the sequence of wire
# types is compared (arrays and nested structs bracketed, the tagged-field
# block of flexible versions as "tags").

_HAND_WRITTEN_MODULES = (
    "kafka.protocol.old.admin", "kafka.protocol.old.commit",
    "kafka.protocol.old.find_coordinator", "kafka.protocol.old.group",
    "kafka.protocol.old.init_producer_id", "kafka.protocol.old.list_offsets",
    "kafka.protocol.old.offset_for_leader_epoch", "kafka.protocol.old.sasl_handshake",
    "aiokafka.protocol.admin", "aiokafka.protocol.commit",
    "aiokafka.protocol.coordination", "aiokafka.protocol.group",
    "aiokafka.protocol.offset", "aiokafka.protocol.transaction",
)
_CLASS_NAME = re.compile(r"^\w+(Request|Response)_v(\d+)$")


def _hand_written() -> list[tuple[str, int, str, int, object]]:
    """(module, api key, "request"/"response", version, schema) for every
    hand-written struct of a group-A API."""
    import importlib
    import inspect

    found = []
    for name in _HAND_WRITTEN_MODULES:
        module = importlib.import_module(name)
        for cls_name, cls in inspect.getmembers(module, inspect.isclass):
            m = _CLASS_NAME.match(cls_name)
            key = getattr(cls, "API_KEY", None)
            if m is None or key not in GROUP_A or cls.__module__ != name:
                continue
            # The class name carries the version: some legacy classes
            # inherit a wrong API_VERSION (kafka-python's ListGroupsRequest_v2
            # says 1) while their schema is right.
            found.append((name, key, m.group(1).lower(), int(m.group(2)), cls.SCHEMA))
    return found


def _hand_types(t) -> list[str]:
    kind = (t if isinstance(t, type) else type(t)).__name__
    simple = {"Int8": "int8", "Int16": "int16", "Int32": "int32", "Int64": "int64",
              "Boolean": "bool", "String": "string", "CompactString": "string",
              "Bytes": "bytes", "CompactBytes": "bytes", "UUID": "uuid",
              # kafka-python's view of an int32 bit set (authorized operations).
              "BitField": "int32"}
    if kind in simple:
        return [simple[kind]]
    if kind == "TaggedFields":
        return ["tags"]
    if kind == "Schema":
        out = []
        for sub in t.fields:
            out += _hand_types(sub)
        return out
    if kind in ("Array", "CompactArray"):
        inner = t.array_of
        inner_kind = (inner if isinstance(inner, type) else type(inner)).__name__
        if inner_kind == "Schema":
            return ["[]{", *_hand_types(inner), "}"]
        return ["[]" + _hand_types(inner)[0]]
    raise AssertionError(f"unexpected hand-written type {kind}")


def _our_types(fields: tuple[Field, ...], version: int, flexible: bool) -> list[str]:
    out: list[str] = []
    for f in fields:
        if version not in f.versions or version in f.tagged:
            continue
        if f.is_struct_array:
            out += ["[]{", *_our_types(f.struct_fields, version, flexible), "}"]
        elif f.is_struct:
            out += _our_types(f.struct_fields, version, flexible)
        else:
            out.append(f.type)
    if flexible:
        out.append("tags")
    return out


_HAND = _hand_written()

# Where a hand-written struct is wrong on the wire and Kavka follows Kafka:
# (module, key, kind, version) -> the (ours, theirs) type pairs that differ.
HAND_WRITTEN_ERRATA = {
    # aiokafka declares current_leader_epoch (KIP-320) as INT64; Kafka, the
    # protocol guide and kafka-python say INT32. aiokafka itself only sends
    # ListOffsets v3, so its bug never reaches a broker.
    ("aiokafka.protocol.offset", 2, "request", 4): [("int32", "int64")],
    ("aiokafka.protocol.offset", 2, "request", 5): [("int32", "int64")],
}


def test_hand_written_oracles_were_found():
    modules = {m.split(".")[0] for m, *_ in _HAND}
    assert modules == {"kafka", "aiokafka"}
    assert len(_HAND) > 150


@pytest.mark.parametrize(
    "module,key,kind,version,schema", _HAND,
    ids=[f"{m.split('.')[0]}-{GROUP_A[k][0]}-{kind}-v{v}" for m, k, kind, v, _ in _HAND],
)
def test_wire_types_match_hand_written_structs(module, key, kind, version, schema):
    a = registry()[key]
    assert a.min_version <= version <= a.max_version
    ours = _our_types(getattr(a, kind), version, a.is_flexible(version))
    theirs = _hand_types(schema)
    errata = HAND_WRITTEN_ERRATA.get((module, key, kind, version))
    if errata is None:
        assert ours == theirs
    else:
        assert len(ours) == len(theirs)
        assert [(o, t) for o, t in zip(ours, theirs) if o != t] == errata
