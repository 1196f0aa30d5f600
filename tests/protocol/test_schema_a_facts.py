"""Fact checks for the group-A schema tables (offsets, inter_broker, groups,
admin_topics, auth_producer).

Four independent checks:
1. Against kafka-python 3.0.12's message definitions (Kafka's own message
   descriptions as shipped in the venv): for every API both define and
   every version kafka-python knows, the flattened layout — field order,
   name (modulo spelling), type, nullability, tag, scalar defaults and
   ignorability — must agree. Deliberate differences: ``DIFFERENCES``.
2. Against the structs kafka-python (legacy ``kafka.protocol.old``) and
   aiokafka wrote by hand from the protocol guide: the sequence of wire
   types must agree. Their known errors: ``HAND_WRITTEN_ERRATA``.
3. For the ZooKeeper-era inter-broker APIs, which neither client defines,
   against the request/response grammars of the Kafka 3.9 protocol guide,
   transcribed below in the guide's own notation.
4. Well-formedness of every table: version ranges inside the API's range,
   tagged fields only in flexible versions with unique tags, nullability
   only where the type allows null, defaults of the field's type,
   snake_case unique names.
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


# ------------------------------------- inter-broker APIs vs the protocol guide

_GUIDE_TYPE = {
    "bool": "BOOLEAN", "int8": "INT8", "int16": "INT16", "int32": "INT32",
    "int64": "INT64", "uuid": "UUID", "string": "STRING", "bytes": "BYTES",
}


def _guide_type(f: Field, version: int, flexible: bool) -> str:
    t = f.type.removeprefix("[]")
    name = _GUIDE_TYPE[t]
    if t in ("string", "bytes"):
        if version in f.nullable:
            name = "NULLABLE_" + name
        if flexible:
            name = "COMPACT_" + name
    return name


def _guide(fields: tuple[Field, ...], version: int, flexible: bool, head: str, indent: str = "") -> list[str]:
    """Render a struct at ``version`` in the protocol guide's grammar: the
    body fields (arrays in brackets, ``_tagged_fields`` closing every
    flexible struct), then one line per field, nested structs indented."""
    body = [f for f in fields if version in f.versions and version not in f.tagged]
    names = [f"[{f.name}]" if f.is_array else f.name for f in body]
    if flexible:
        names.append("_tagged_fields")
    lines = [f"{indent}{head} => {' '.join(names)}".rstrip()]
    for f in body:
        if f.is_struct_array or f.is_struct:
            lines += _guide(f.struct_fields, version, flexible, f.name, indent + "  ")
        else:
            lines.append(f"{indent}  {f.name} => {_guide_type(f, version, flexible)}")
    return lines


# Grammars as the Kafka 3.9 protocol guide prints them (its field names:
# PartitionEpoch was ZkVersion before KIP-704, hence the 3.9 spelling).
GUIDE = {
    (4, "request", 0): """
LeaderAndIsr Request (Version: 0) => controller_id controller_epoch [ungrouped_partition_states] [live_leaders]
  controller_id => INT32
  controller_epoch => INT32
  ungrouped_partition_states => topic_name partition_index controller_epoch leader leader_epoch [isr] partition_epoch [replicas]
    topic_name => STRING
    partition_index => INT32
    controller_epoch => INT32
    leader => INT32
    leader_epoch => INT32
    isr => INT32
    partition_epoch => INT32
    replicas => INT32
  live_leaders => broker_id host_name port
    broker_id => INT32
    host_name => STRING
    port => INT32
""",
    (4, "request", 2): """
LeaderAndIsr Request (Version: 2) => controller_id controller_epoch broker_epoch [topic_states] [live_leaders]
  controller_id => INT32
  controller_epoch => INT32
  broker_epoch => INT64
  topic_states => topic_name [partition_states]
    topic_name => STRING
    partition_states => partition_index controller_epoch leader leader_epoch [isr] partition_epoch [replicas] is_new
      partition_index => INT32
      controller_epoch => INT32
      leader => INT32
      leader_epoch => INT32
      isr => INT32
      partition_epoch => INT32
      replicas => INT32
      is_new => BOOLEAN
  live_leaders => broker_id host_name port
    broker_id => INT32
    host_name => STRING
    port => INT32
""",
    (4, "request", 7): """
LeaderAndIsr Request (Version: 7) => controller_id is_kraft_controller controller_epoch broker_epoch type [topic_states] [live_leaders] _tagged_fields
  controller_id => INT32
  is_kraft_controller => BOOLEAN
  controller_epoch => INT32
  broker_epoch => INT64
  type => INT8
  topic_states => topic_name topic_id [partition_states] _tagged_fields
    topic_name => COMPACT_STRING
    topic_id => UUID
    partition_states => partition_index controller_epoch leader leader_epoch [isr] partition_epoch [replicas] [adding_replicas] [removing_replicas] is_new leader_recovery_state _tagged_fields
      partition_index => INT32
      controller_epoch => INT32
      leader => INT32
      leader_epoch => INT32
      isr => INT32
      partition_epoch => INT32
      replicas => INT32
      adding_replicas => INT32
      removing_replicas => INT32
      is_new => BOOLEAN
      leader_recovery_state => INT8
  live_leaders => broker_id host_name port _tagged_fields
    broker_id => INT32
    host_name => COMPACT_STRING
    port => INT32
""",
    (4, "response", 0): """
LeaderAndIsr Response (Version: 0) => error_code [partition_errors]
  error_code => INT16
  partition_errors => topic_name partition_index error_code
    topic_name => STRING
    partition_index => INT32
    error_code => INT16
""",
    (4, "response", 5): """
LeaderAndIsr Response (Version: 5) => error_code [topics] _tagged_fields
  error_code => INT16
  topics => topic_id [partition_errors] _tagged_fields
    topic_id => UUID
    partition_errors => partition_index error_code _tagged_fields
      partition_index => INT32
      error_code => INT16
""",
    (5, "request", 0): """
StopReplica Request (Version: 0) => controller_id controller_epoch delete_partitions [ungrouped_partitions]
  controller_id => INT32
  controller_epoch => INT32
  delete_partitions => BOOLEAN
  ungrouped_partitions => topic_name partition_index
    topic_name => STRING
    partition_index => INT32
""",
    (5, "request", 2): """
StopReplica Request (Version: 2) => controller_id controller_epoch broker_epoch delete_partitions [topics] _tagged_fields
  controller_id => INT32
  controller_epoch => INT32
  broker_epoch => INT64
  delete_partitions => BOOLEAN
  topics => name [partition_indexes] _tagged_fields
    name => COMPACT_STRING
    partition_indexes => INT32
""",
    (5, "request", 4): """
StopReplica Request (Version: 4) => controller_id is_kraft_controller controller_epoch broker_epoch [topic_states] _tagged_fields
  controller_id => INT32
  is_kraft_controller => BOOLEAN
  controller_epoch => INT32
  broker_epoch => INT64
  topic_states => topic_name [partition_states] _tagged_fields
    topic_name => COMPACT_STRING
    partition_states => partition_index leader_epoch delete_partition _tagged_fields
      partition_index => INT32
      leader_epoch => INT32
      delete_partition => BOOLEAN
""",
    (5, "response", 4): """
StopReplica Response (Version: 4) => error_code [partition_errors] _tagged_fields
  error_code => INT16
  partition_errors => topic_name partition_index error_code _tagged_fields
    topic_name => COMPACT_STRING
    partition_index => INT32
    error_code => INT16
""",
    (6, "request", 0): """
UpdateMetadata Request (Version: 0) => controller_id controller_epoch [ungrouped_partition_states] [live_brokers]
  controller_id => INT32
  controller_epoch => INT32
  ungrouped_partition_states => topic_name partition_index controller_epoch leader leader_epoch [isr] zk_version [replicas]
    topic_name => STRING
    partition_index => INT32
    controller_epoch => INT32
    leader => INT32
    leader_epoch => INT32
    isr => INT32
    zk_version => INT32
    replicas => INT32
  live_brokers => id v0_host v0_port
    id => INT32
    v0_host => STRING
    v0_port => INT32
""",
    (6, "request", 3): """
UpdateMetadata Request (Version: 3) => controller_id controller_epoch [ungrouped_partition_states] [live_brokers]
  controller_id => INT32
  controller_epoch => INT32
  ungrouped_partition_states => topic_name partition_index controller_epoch leader leader_epoch [isr] zk_version [replicas]
    topic_name => STRING
    partition_index => INT32
    controller_epoch => INT32
    leader => INT32
    leader_epoch => INT32
    isr => INT32
    zk_version => INT32
    replicas => INT32
  live_brokers => id [endpoints] rack
    id => INT32
    endpoints => port host listener security_protocol
      port => INT32
      host => STRING
      listener => STRING
      security_protocol => INT16
    rack => NULLABLE_STRING
""",
    (6, "request", 8): """
UpdateMetadata Request (Version: 8) => controller_id is_kraft_controller controller_epoch broker_epoch [topic_states] [live_brokers] _tagged_fields
  controller_id => INT32
  is_kraft_controller => BOOLEAN
  controller_epoch => INT32
  broker_epoch => INT64
  topic_states => topic_name topic_id [partition_states] _tagged_fields
    topic_name => COMPACT_STRING
    topic_id => UUID
    partition_states => partition_index controller_epoch leader leader_epoch [isr] zk_version [replicas] [offline_replicas] _tagged_fields
      partition_index => INT32
      controller_epoch => INT32
      leader => INT32
      leader_epoch => INT32
      isr => INT32
      zk_version => INT32
      replicas => INT32
      offline_replicas => INT32
  live_brokers => id [endpoints] rack _tagged_fields
    id => INT32
    endpoints => port host listener security_protocol _tagged_fields
      port => INT32
      host => COMPACT_STRING
      listener => COMPACT_STRING
      security_protocol => INT16
    rack => COMPACT_NULLABLE_STRING
""",
    (6, "response", 8): """
UpdateMetadata Response (Version: 8) => error_code _tagged_fields
  error_code => INT16
""",
    (7, "request", 0): """
ControlledShutdown Request (Version: 0) => broker_id
  broker_id => INT32
""",
    (7, "request", 3): """
ControlledShutdown Request (Version: 3) => broker_id broker_epoch _tagged_fields
  broker_id => INT32
  broker_epoch => INT64
""",
    (7, "response", 3): """
ControlledShutdown Response (Version: 3) => error_code [remaining_partitions] _tagged_fields
  error_code => INT16
  remaining_partitions => topic_name partition_index _tagged_fields
    topic_name => COMPACT_STRING
    partition_index => INT32
""",
}


@pytest.mark.parametrize("key,kind,version", sorted(GUIDE), ids=lambda p: str(p))
def test_inter_broker_grammar_matches_protocol_guide(key, kind, version):
    a = registry()[key]
    head = f"{a.name} {kind.capitalize()} (Version: {version})"
    ours = _guide(getattr(a, kind), version, a.is_flexible(version), head)
    assert ours == GUIDE[(key, kind, version)].strip().splitlines()


def test_update_metadata_v8_carries_type_as_tag_0():
    """The migration's full/incremental marker travels as tagged field 0
    (KIP-866), so it is absent from the v8 grammar above."""
    (t,) = [f for f in registry()[6].request if f.name == "type"]
    assert (t.tag, str(t.tagged), t.type) == (0, "8+", "int8")


def test_controlled_shutdown_v0_has_header_without_client_id():
    a = registry()[7]
    assert [a.request_header_version(v) for v in range(4)] == [0, 1, 1, 2]


# ----------------------------------------------------------- well-formedness

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
            else:
                found.append(f"{at}: default given for type {t}")
        if f.is_struct_array or f.is_struct:
            if not f.struct_fields:
                found.append(f"{at}: empty struct")
            found += _problems(a, f.struct_fields, at)
    return found


@pytest.mark.parametrize("key", sorted(GROUP_A))
def test_table_is_well_formed(key):
    a = registry()[key]
    assert a.min_version <= a.max_version
    if a.flexible_from is not None:
        assert a.min_version <= a.flexible_from <= a.max_version
    problems = _problems(a, a.request, f"{a.name}Request") + _problems(a, a.response, f"{a.name}Response")
    assert problems == []


def test_well_formedness_rules_can_fail():
    """Each rule of ``_problems`` catches the mistake it is written for."""
    from kavka.protocol.schema.dsl import F, api

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
    ):
        assert expected in text
