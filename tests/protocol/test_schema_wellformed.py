"""Every schema table is well-formed, checked once for all of them: each API
in the module that says it holds it, version ranges from v0 and inside
the API's range, tagged fields only in flexible versions with unique
tags, nullability only where the type allows null and only where the
field exists, defaults of the field's type (non-null wherever null cannot
be written, never the zero value spelled out), snake_case names unique per
struct, every version compiles and a message built from defaults alone
round-trips in every version.

These are rules of Kavka's DSL, not facts about Kafka: the facts are checked
against their oracles in the other ``test_schema_*`` modules (the protocol
guide, kafka-python's message definitions, the clients' hand-written
structs, kio) and by ``test_golden_frames.py``.
"""

from __future__ import annotations

import re

import pytest

from kavka.protocol.codec import decode_body, encode_body, plan_for
from kavka.protocol.messages import REQUEST, RESPONSE, request_class, response_class
from kavka.protocol.schema import registry
from kavka.protocol.schema.apis import (
    acls,
    admin,
    admin_topics,
    auth_producer,
    client_quotas,
    configs,
    core,
    groups,
    inter_broker,
    next_gen_groups,
    offsets,
    sasl,
    scram_credentials,
    telemetry,
    transactions,
)
from kavka.protocol.schema.dsl import _OPEN, MISSING, PRIMITIVES, Api, F, Field, S, V, Versions, api

APIS = sorted(registry().values(), key=lambda a: a.key)
SIDES = (REQUEST, RESPONSE)

# Which module holds which API (kavka/protocol/schema/apis/): one module per
# family of APIs, each named for what its APIs do.
MODULES = {
    core: {0: "Produce", 1: "Fetch", 3: "Metadata", 18: "ApiVersions"},
    offsets: {2: "ListOffsets", 8: "OffsetCommit", 9: "OffsetFetch", 21: "DeleteRecords",
              23: "OffsetForLeaderEpoch"},
    inter_broker: {4: "LeaderAndIsr", 5: "StopReplica", 6: "UpdateMetadata", 7: "ControlledShutdown"},
    groups: {10: "FindCoordinator", 11: "JoinGroup", 12: "Heartbeat", 13: "LeaveGroup", 14: "SyncGroup",
             15: "DescribeGroups", 16: "ListGroups"},
    auth_producer: {17: "SaslHandshake", 22: "InitProducerId"},
    admin_topics: {19: "CreateTopics", 20: "DeleteTopics", 75: "DescribeTopicPartitions"},
    transactions: {24: "AddPartitionsToTxn", 25: "AddOffsetsToTxn", 26: "EndTxn", 27: "WriteTxnMarkers",
                   28: "TxnOffsetCommit", 65: "DescribeTransactions", 66: "ListTransactions"},
    acls: {29: "DescribeAcls", 30: "CreateAcls", 31: "DeleteAcls"},
    configs: {32: "DescribeConfigs", 33: "AlterConfigs", 44: "IncrementalAlterConfigs"},
    admin: {35: "DescribeLogDirs", 37: "CreatePartitions", 42: "DeleteGroups", 43: "ElectLeaders",
            45: "AlterPartitionReassignments", 46: "ListPartitionReassignments", 47: "OffsetDelete",
            60: "DescribeCluster", 61: "DescribeProducers"},
    sasl: {36: "SaslAuthenticate"},
    client_quotas: {48: "DescribeClientQuotas", 49: "AlterClientQuotas"},
    scram_credentials: {50: "DescribeUserScramCredentials", 51: "AlterUserScramCredentials"},
    next_gen_groups: {68: "ConsumerGroupHeartbeat", 69: "ConsumerGroupDescribe"},
    telemetry: {71: "GetTelemetrySubscriptions", 72: "PushTelemetry"},
}

_INT_RANGE = {
    "int8": (-(2**7), 2**7 - 1), "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1),
    "uint16": (0, 2**16 - 1), "uint32": (0, 2**32 - 1),
}
_NULLABLE_TYPES = ("string", "bytes", "records")
_SNAKE = re.compile(r"^[a-z][a-z0-9]*(_[a-z0-9]+)*$")

# Where a table departs from a rule below on purpose, by field path; each
# entry is asserted to still be needed, so a fixed table shrinks the list.
#
# A single (non-array) struct may be null only where Kafka's message
# definition says so: the member's assignment is null when unchanged.
NULLABLE_STRUCTS = {"ConsumerGroupHeartbeatResponse.assignment", "DescribeTopicPartitionsRequest.cursor",
                    "DescribeTopicPartitionsResponse.next_cursor"}
# Explicit defaults equal to the type's zero value, kept where the table
# spells out Kafka's documented value for readability.
ZERO_DEFAULTS = {
    "FetchRequest.isolation_level", "FetchRequest.session_id", "FetchResponse.session_id",
    "MetadataResponse.topics.is_internal", "ApiVersionsResponse.zk_migration_ready",
}
# Fields of a struct that Kafka's definition shares between versions of its
# parent: they exist (in their own versions) only where the parent does not.
OUTSIDE_PARENT = {
    "LeaderAndIsrRequest.ungrouped_partition_states.adding_replicas",
    "LeaderAndIsrRequest.ungrouped_partition_states.removing_replicas",
    "LeaderAndIsrRequest.ungrouped_partition_states.leader_recovery_state",
    "LeaderAndIsrRequest.topic_states.partition_states.topic_name",
    "LeaderAndIsrResponse.topics.partition_errors.topic_name",
    "UpdateMetadataRequest.topic_states.partition_states.topic_name",
}
# Requests that carry no field at all in some versions (the request is the
# question): (API key, side) -> those versions.
EMPTY_VERSIONS = {(16, REQUEST): range(0, 4), (18, REQUEST): range(0, 3)}


def _zero(f: Field) -> object:
    return False if f.type == "bool" else 0


def _problems(a: Api, fields: tuple[Field, ...], where: str, parent: Versions | None = None,
              allowed: set[str] | None = None) -> list[str]:
    """Every rule a struct of ``a`` breaks, as readable strings. ``parent``:
    the versions of the enclosing struct field (None at the top level);
    ``allowed`` collects the listed exceptions this struct relies on."""
    found: list[str] = []
    allowed = set() if allowed is None else allowed
    span = Versions(a.min_version, a.max_version)
    if parent is not None:
        span = Versions(max(span.lo, parent.lo), min(span.hi, parent.hi))
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
        elif parent is not None and (v.lo > span.hi or v.hi < span.lo):
            if at in OUTSIDE_PARENT:
                allowed.add(at)
            else:
                found.append(f"{at}: versions {v} outside its parent's {span}")
        if not f.nullable.empty:
            if not (v.lo <= f.nullable.lo and f.nullable.hi <= v.hi):
                found.append(f"{at}: nullable {f.nullable} not within versions {v}")
            if f.is_struct and not f.is_struct_array:
                if at in NULLABLE_STRUCTS:
                    allowed.add(at)
                else:
                    found.append(f"{at}: a single struct cannot be null")
            elif not (f.is_array or f.type in _NULLABLE_TYPES):
                found.append(f"{at}: type {f.type} cannot be null")
        if (f.tag is None) != f.tagged.empty:
            found.append(f"{at}: tag and tagged versions must come together")
        if f.tag is not None:
            if f.tag < 0:
                found.append(f"{at}: negative tag {f.tag}")
            if a.flexible_from is None or f.tagged.lo < a.flexible_from:
                found.append(f"{at}: tagged in {f.tagged}, not all flexible")
            if not (v.lo <= f.tagged.lo and f.tagged.hi <= v.hi):
                found.append(f"{at}: tagged {f.tagged} not within versions {v}")
            if f.tag in tags:
                found.append(f"{at}: tag {f.tag} also used by {tags[f.tag]}")
            tags[f.tag] = f.name
        if not (f.is_struct or f.is_struct_array) and f.type.removeprefix("[]") not in PRIMITIVES:
            found.append(f"{at}: unknown type {f.type}")
        if f.default is not MISSING:
            t = f.type
            if f.default is None:
                if f.nullable.empty:
                    found.append(f"{at}: default null but never nullable")
            elif t in _INT_RANGE or t == "bool":
                lo, hi = _INT_RANGE.get(t, (0, 1))
                if t == "bool" and type(f.default) is not bool:
                    found.append(f"{at}: default {f.default!r} is not a bool")
                elif t != "bool" and (type(f.default) is not int or not lo <= f.default <= hi):
                    found.append(f"{at}: default {f.default!r} is not an {t}")
                elif f.default == _zero(f):
                    if at in ZERO_DEFAULTS:
                        allowed.add(at)
                    else:
                        found.append(f"{at}: default {f.default!r} is the zero value: leave it out")
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
            found += _problems(a, f.struct_fields, at, Versions(max(span.lo, v.lo), min(span.hi, v.hi)), allowed)
    return found


def _table_problems(a: Api, allowed: set[str]) -> list[str]:
    found = []
    for side, fields in ((REQUEST, a.request), (RESPONSE, a.response)):
        found += _problems(a, fields, f"{a.name}{side.capitalize()}", allowed=allowed)
        empty = EMPTY_VERSIONS.get((a.key, side), range(0))
        for version in range(a.min_version, a.max_version + 1):
            if not any(version in f.versions for f in fields) and version not in empty:
                found.append(f"{a.name}{side.capitalize()} v{version}: no fields")
    return found


# --------------------------------------------------------- registry, modules


def test_every_api_lives_in_its_module():
    reg = registry()
    assert sorted(reg) == sorted(k for keys in MODULES.values() for k in keys)
    for module, apis in MODULES.items():
        assert {a.key: a.name for a in module.APIS} == apis, module.__name__
        for a in module.APIS:
            assert reg[a.key] is a


@pytest.mark.parametrize("module", list(MODULES), ids=lambda m: m.__name__.rsplit(".", 1)[-1])
def test_module_docstring_says_what_and_cites_kips(module):
    assert module.__doc__ and "KIP-" in module.__doc__


# ------------------------------------------------------------ each table


@pytest.mark.parametrize("a", APIS, ids=[a.name for a in APIS])
def test_api_header(a: Api):
    assert re.fullmatch(r"[A-Z][A-Za-z0-9]*", a.name)
    assert 0 == a.min_version <= a.max_version < _OPEN
    if a.flexible_from is not None:
        assert a.min_version <= a.flexible_from <= a.max_version


@pytest.mark.parametrize("a", APIS, ids=[a.name for a in APIS])
def test_table_is_well_formed(a: Api):
    assert _table_problems(a, set()) == []


def test_listed_exceptions_are_still_needed():
    allowed: set[str] = set()
    for a in APIS:
        _table_problems(a, allowed)
    assert allowed == NULLABLE_STRUCTS | ZERO_DEFAULTS | OUTSIDE_PARENT
    for (key, side), versions in EMPTY_VERSIONS.items():
        fields = getattr(registry()[key], side)
        for version in versions:
            assert not any(version in f.versions for f in fields), (key, side, version)


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
            F("zero_default", "int32", "0+", default=0),
            Field("odd_type", "int24", V("0+")),  # F() itself refuses unknown types
            F("negative_tag", "int32", "2+", tag=-1, tagged="2+"),
            F("nullable_struct", S(F("x", "int8", "0+")), "0+", nullable="0+"),
            F("late", [F("early", "int8", "0")], "2+"),
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
        "zero_default: default 0 is the zero value: leave it out",
        "odd_type: unknown type int24",
        "negative_tag: negative tag -1",
        "nullable_struct: a single struct cannot be null",
        "late.early: versions 0 outside its parent's 2-3",
    ):
        assert expected in text
    assert _table_problems(bad, set())[-1] == "BadResponse v3: no fields"


@pytest.mark.parametrize("a", APIS, ids=[a.name for a in APIS])
def test_every_version_compiles(a: Api):
    for v in range(a.min_version, a.max_version + 1):
        for side in SIDES:
            decode, encode, source = plan_for(a.key, side, v)
            assert callable(decode) and callable(encode) and source


def _default_cases():
    for a in APIS:
        for side in SIDES:
            for v in range(a.min_version, a.max_version + 1):
                yield pytest.param(a.key, side, v, id=f"{a.name}-{side}-v{v}")


@pytest.mark.parametrize("key,side,version", list(_default_cases()))
def test_default_message_encodes_in_every_version(key, side, version):
    """A message built from the schema's defaults alone must be writable
    in every version and read back equal (what a handler relies on when it
    fills in only the fields it knows)."""
    cls = request_class(key) if side == REQUEST else response_class(key)
    data = encode_body(cls(), version)
    assert decode_body(key, side, version, memoryview(data)) == cls()
