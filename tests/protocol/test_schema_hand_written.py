"""The schema tables against the structs kafka-python (legacy
``kafka.protocol.old``) and aiokafka (``aiokafka.protocol``, which decodes
what Kavka sends) wrote by hand from the protocol guide, not generated from
Kafka's JSON: an oracle independent of the one in
test_schema_kafka_python.py.

Their field names and nesting differ from Kafka's, so what is compared is
the sequence of wire types per version: arrays and nested structs
bracketed, the tagged-field block of every flexible struct as ``tags``.
Spellings that are the same bytes on the wire are made equal first:
``records`` is ``bytes``, and an array of one-field structs (outside
flexible versions) is an array of that field. Where a hand-written struct
is wrong and Kavka follows Kafka: ``HAND_WRITTEN_ERRATA``, each asserted to
still differ exactly so.
"""

from __future__ import annotations

import difflib
import importlib
import inspect
import pkgutil
import re
import warnings

import pytest

from kavka.protocol.schema import registry
from kavka.protocol.schema.dsl import Field

pytest.importorskip("kafka.protocol.old")
pytest.importorskip("aiokafka.protocol")

_PACKAGES = ("kafka.protocol.old", "aiokafka.protocol")
_CLASS_NAME = re.compile(r"^\w+(Request|Response)_v(\d+)$")


def _hand_written() -> list[tuple[str, int, str, int, object]]:
    """(module, api key, "request"/"response", version, schema) for every
    hand-written struct of an API in Kavka's registry."""
    reg = registry()
    found = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        modules = [importlib.import_module(f"{package}.{info.name}")
                   for package in _PACKAGES
                   for info in pkgutil.iter_modules(importlib.import_module(package).__path__)]
    for module in modules:
        for cls_name, cls in inspect.getmembers(module, inspect.isclass):
            m = _CLASS_NAME.match(cls_name)
            key = getattr(cls, "API_KEY", None)
            if m is None or key not in reg or cls.__module__ != module.__name__ or not hasattr(cls, "SCHEMA"):
                continue
            # The class name carries the version: some legacy classes
            # inherit a wrong API_VERSION (ListGroupsRequest_v2 says 1 in
            # both libraries) while their schema is right.
            found.append((module.__name__, key, m.group(1).lower(), int(m.group(2)), cls.SCHEMA))
    return sorted(found, key=lambda c: c[:4])


def _hand_types(t) -> list[str]:
    kind = (t if isinstance(t, type) else type(t)).__name__
    simple = {"Int8": "int8", "Int16": "int16", "Int32": "int32", "Int64": "int64",
              "Boolean": "bool", "String": "string", "CompactString": "string", "Float64": "float64",
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
            out.append("bytes" if f.type == "records" else f.type)  # records: bytes on the wire
    if flexible:
        out.append("tags")
    return out


def _wire(tokens: list[str]) -> list[str]:
    """An array of one-field structs is an array of that field on the wire
    (no tag buffer in between): fold ``[]{ x }`` into ``[]x``, innermost first."""
    out: list[str] = []
    for t in tokens:
        out.append(t)
        if t == "}" and len(out) >= 3 and out[-3] == "[]{" and out[-2] not in ("[]{", "}", "tags"):
            inner = out[-2]
            del out[-3:]
            out.append("[]" + inner)
    return out


def _differences(ours: list[str], theirs: list[str]) -> list[tuple[tuple[str, ...], tuple[str, ...]]]:
    """Where the two type sequences differ: (ours, theirs) per differing run."""
    matcher = difflib.SequenceMatcher(a=ours, b=theirs, autojunk=False)
    return [(tuple(ours[i1:i2]), tuple(theirs[j1:j2]))
            for op, i1, i2, j1, j2 in matcher.get_opcodes() if op != "equal"]


_HAND = _hand_written()

# Where a hand-written struct is wrong on the wire and Kavka follows Kafka:
# (module, key, kind, version) -> its differences, as ``_differences`` gives them.
_DESCRIBE_ACLS_V2 = (
    # Both libraries declare DescribeAcls v2 (flexible since KIP-482) with
    # compact strings but no tagged-field buffers.
    [(("tags",), ())],  # request
    [(("tags",), ()), (("tags",), ()), (("tags",), ())],  # response: each struct's
)
HAND_WRITTEN_ERRATA = {
    # aiokafka declares current_leader_epoch (KIP-320) as INT64; Kafka, the
    # protocol guide and kafka-python say INT32. aiokafka itself only sends
    # ListOffsets v3, so its bug never reaches a broker.
    ("aiokafka.protocol.offset", 2, "request", 4): [(("int32",), ("int64",))],
    ("aiokafka.protocol.offset", 2, "request", 5): [(("int32",), ("int64",))],
    # kafka-python's legacy DescribeLogDirsRequest_v0 declares
    # topics[].partitions as a single int32; Kafka (and kafka-python's own
    # JSON definition) has an int32 array there.
    ("kafka.protocol.old.admin", 35, "request", 0): [(("[]int32",), ("int32",))],
    ("kafka.protocol.old.admin", 29, "request", 2): _DESCRIBE_ACLS_V2[0],
    ("kafka.protocol.old.admin", 29, "response", 2): _DESCRIBE_ACLS_V2[1],
    ("aiokafka.protocol.admin", 29, "request", 2): _DESCRIBE_ACLS_V2[0],
    ("aiokafka.protocol.admin", 29, "response", 2): _DESCRIBE_ACLS_V2[1],
}


def test_hand_written_oracles_were_found():
    modules = {m.split(".")[0] for m, *_ in _HAND}
    assert modules == {"kafka", "aiokafka"}
    assert len(_HAND) > 400
    # Every API in the registry but these has hand-written structs: the
    # ZooKeeper-era and KIP-848/KIP-714 APIs, and a few newer admin ones.
    assert set(registry()) - {k for _, k, *_ in _HAND} == {4, 5, 6, 7, 27, 44, 47, 49, 50, 51, 60, 61, 65, 66, 68, 69, 71, 72, 75}


def test_hand_written_structs_cover_the_versions_below_kafka_4_floor():
    # DescribeAcls/DescribeConfigs/DescribeLogDirs v0 left Kafka in 4.0; the
    # hand-written schemas still check them independently of Kafka's JSON.
    def cases(library: str) -> set[tuple[int, int, str]]:
        return {(k, v, kind) for m, k, kind, v, _ in _HAND if m.split(".")[0] == library}

    assert {(29, 0, "request"), (32, 0, "response"), (35, 0, "response")} <= cases("kafka")
    assert {(29, 0, "response"), (32, 0, "response")} <= cases("aiokafka")


def test_wire_spellings_fold_only_what_is_the_same_on_the_wire():
    assert _wire(["[]{", "string", "}", "bool"]) == ["[]string", "bool"]
    assert _wire(["[]{", "string", "int32", "[]{", "[]int32", "}", "}"]) == ["[]{", "string", "int32", "[][]int32", "}"]
    assert _wire(["[]{", "string", "tags", "}"]) == ["[]{", "string", "tags", "}"]
    assert _differences(["a", "b", "tags"], ["a", "c"]) == [(("b", "tags"), ("c",))]


@pytest.mark.parametrize(
    "module,key,kind,version,schema", _HAND,
    ids=[f"{m.split('.')[0]}-{registry()[k].name}-{kind}-v{v}" for m, k, kind, v, _ in _HAND],
)
def test_wire_types_match_hand_written_structs(module, key, kind, version, schema):
    a = registry()[key]
    assert a.min_version <= version <= a.max_version
    ours = _wire(_our_types(getattr(a, kind), version, a.is_flexible(version)))
    theirs = _wire(_hand_types(schema))
    assert _differences(ours, theirs) == HAND_WRITTEN_ERRATA.get((module, key, kind, version), [])
