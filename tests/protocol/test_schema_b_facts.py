"""Schema tables of group B checked against an external oracle and for form.

Oracle: kafka-python 3.0.12, installed in the venv, which ships two
independent definitions of these APIs:
- its JSON-driven ``ApiMessage`` classes (Kafka 4.2 message definitions, read
  by kafka-python's own parser), for every version 0..max — compared field by
  field: the flat sequence of (normalised name, type) per version, tagged
  fields, nullability, ignorability and non-zero scalar defaults;
- its legacy hand-written ``kafka.protocol.old`` schemas for pre-flexible
  versions — compared as wire shape (the sequence of primitive types and
  array brackets), since their field names and nesting differ from Kafka's.

Deliberate differences are listed in ``LEGACY_DIFFERENCES`` with reasons.
The well-formedness checks hold for every table of group B: versions in
range, tagged fields only in flexible versions, nullability only where the
type admits null, unique snake_case names, defaults that fit their type.
"""

from __future__ import annotations

import importlib
import re
import warnings

import pytest

# kafka-python (a dev dependency) loads its JSON with a deprecated importlib
# call at import time; that noise is theirs, not ours.
with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    import kafka.protocol.api_message as kafka_protocol

from kavka.protocol.schema import registry
from kavka.protocol.schema.apis import acls, admin, configs, sasl, transactions
from kavka.protocol.schema.dsl import MISSING, PRIMITIVES, Api, Field, Versions


MODULES = (transactions, acls, configs, admin, sasl)
GROUP_B = {
    24: "AddPartitionsToTxn", 25: "AddOffsetsToTxn", 26: "EndTxn", 27: "WriteTxnMarkers",
    28: "TxnOffsetCommit", 29: "DescribeAcls", 30: "CreateAcls", 31: "DeleteAcls",
    32: "DescribeConfigs", 33: "AlterConfigs", 35: "DescribeLogDirs", 36: "SaslAuthenticate",
    37: "CreatePartitions", 42: "DeleteGroups", 43: "ElectLeaders", 44: "IncrementalAlterConfigs",
    45: "AlterPartitionReassignments", 46: "ListPartitionReassignments", 47: "OffsetDelete",
    60: "DescribeCluster", 61: "DescribeProducers",
}
OURS: dict[int, Api] = {a.key: a for m in MODULES for a in m.APIS}
KINDS = ("request", "response")

# (client, api key, version, kind) -> why our table differs from a client's
# hand-written schema. Each entry is asserted to still differ (stale ones fail).
LEGACY_DIFFERENCES = {
    ("kafka-python", 35, 0, "request"): "kafka-python's legacy DescribeLogDirsRequest_v0 declares "
    "topics[].partitions as a single int32; Kafka (and kafka-python's own JSON "
    "definition) has an int32 array there",
}

# (api key, kind) -> {kafka-python (path, type): Kafka's (path, type)}: where
# kafka-python patches Kafka's JSON for its own decoding. Asserted to be in use.
ORACLE_PATCHES = {
    # kafka-python renames ClusterAuthorizedOperations and decodes the int32 as
    # a set of operations ("bitfield"); on the wire it is Kafka's plain int32.
    (60, "response"): {("authorizedoperations", "bitfield"): ("clusterauthorizedoperations", "int32")},
}

_INT_RANGES = {
    "int8": (-(1 << 7), (1 << 7) - 1), "int16": (-(1 << 15), (1 << 15) - 1),
    "int32": (-(1 << 31), (1 << 31) - 1), "int64": (-(1 << 63), (1 << 63) - 1),
    "uint16": (0, (1 << 16) - 1), "uint32": (0, (1 << 32) - 1),
}
_NULLABLE_TYPES = {"string", "bytes", "records"}
_SNAKE = re.compile(r"^[a-z][a-z0-9]*(_[a-z0-9]+)*$")


def norm(name: str) -> str:
    """Compare names without case or underscores (Kafka's PascalCase vs snake_case)."""
    return name.replace("_", "").lower()


# ---------------------------------------------------------------- our walker

def our_type(f: Field) -> str:
    if f.is_struct_array:
        return "[]struct"
    if f.is_struct:
        return "struct"
    return f.type


def our_fields(fields, version: int, flexible: bool, prefix: str = ""):
    """Yield (path, type, tag-or-None, field) for every field present in
    ``version``, depth first; tag is set when the field rides in the tagged block."""
    for f in fields:
        if version not in f.versions:
            continue
        path = prefix + norm(f.name)
        tag = f.tag if flexible and version in f.tagged else None
        yield path, our_type(f), tag, f
        if f.is_struct_array or f.is_struct:
            yield from our_fields(f.struct_fields, version, flexible, path + ".")


def our_default(f: Field):
    if f.default is not MISSING:
        return f.default
    return False if f.type == "bool" else 0


# ----------------------------------------------------------- oracle: JSON

def _kafka_python_classes() -> dict[tuple[int, str], type]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        for name in ("producer.transaction", "admin.acl", "admin.configs", "admin.cluster",
                     "admin.topics", "admin.groups", "admin.transactions", "sasl", "consumer.group"):
            importlib.import_module(f"kafka.protocol.{name}")

    def subclasses(cls):
        for sub in cls.__subclasses__():
            yield sub
            yield from subclasses(sub)

    found = {}
    for cls in subclasses(kafka_protocol.ApiMessage):
        js = getattr(cls, "_json", None)
        if js and cls._class_version is None and js["apiKey"] in GROUP_B:
            found[(js["apiKey"], js["type"])] = cls
    return found


ORACLE = _kafka_python_classes()


def their_type(f) -> str:
    if f.is_struct_array():
        return "[]struct"
    if f.is_struct():
        return "struct"
    return f.type_str


def their_fields(fields, version: int, flexible: bool, prefix: str = ""):
    for f in fields or ():  # kafka-python BaseField objects, in wire order
        if not f.for_version_q(version):
            continue
        path = prefix + norm(f.name)
        tag = f.tag if flexible and f.tagged_field_q(version) else None
        yield path, their_type(f), tag, f
        if f.is_struct_array() or f.is_struct():
            yield from their_fields(f._fields, version, flexible, path + ".")


def their_scalar_default(f, typ: str):
    """The oracle's default from its JSON text (kafka-python's parsed default is
    lost on fields it patches): ints in decimal or hex, booleans as text."""
    raw = f._json.get("default", "")
    if typ == "bool":
        return raw if isinstance(raw, bool) else str(raw).lower() == "true"
    if isinstance(raw, int):
        return raw
    return int(raw, 16) if raw.lower().startswith("0x") else int(raw or 0)


def oracle_cases():
    for key in sorted(GROUP_B):
        for kind in KINDS:
            cls = ORACLE.get((key, kind))
            if cls is None:
                continue
            for version in range(0, cls.max_version + 1):
                yield pytest.param(key, kind, version, id=f"{GROUP_B[key]}-{kind}-v{version}")


def test_oracle_defines_every_api_of_group_b():
    assert {k for k, _ in ORACLE} == set(GROUP_B)


@pytest.mark.parametrize("key", sorted(GROUP_B))
def test_version_range_and_flexible_from_match_the_oracle(key):
    ours = OURS[key]
    for kind in KINDS:
        cls = ORACLE[(key, kind)]
        assert ours.max_version == cls.max_version, f"{ours.name} {kind}: latest version"
        flex = cls._flexible_versions
        theirs_flex = None if flex is None or flex == (-1, -1) else flex[0]
        assert ours.flexible_from == theirs_flex, f"{ours.name} {kind}: first flexible version"


@pytest.mark.parametrize("key,kind,version", list(oracle_cases()))
def test_fields_match_the_oracle(key, kind, version):
    api = OURS[key]
    assert api.min_version <= version <= api.max_version
    flexible = api.is_flexible(version)
    ours = list(our_fields(getattr(api, kind), version, flexible))
    theirs = list(their_fields(ORACLE[(key, kind)]._struct._fields, version, flexible))
    patches = ORACLE_PATCHES.get((key, kind), {})
    used = [(p, t) for p, t, _, _ in theirs if (p, t) in patches]
    assert len(used) == len(patches), f"stale ORACLE_PATCHES entry for {(key, kind)}"
    theirs = [(*patches.get((p, t), (p, t)), tag, f) for p, t, tag, f in theirs]

    # Body order is the wire order; tagged fields are compared by tag.
    assert [(p, t) for p, t, tag, _ in ours if tag is None] == \
        [(p, t) for p, t, tag, _ in theirs if tag is None]
    assert sorted((p, t, tag) for p, t, tag, _ in ours if tag is not None) == \
        sorted((p, t, tag) for p, t, tag, _ in theirs if tag is not None)

    their_by_path = {p: f for p, _, _, f in theirs}
    for path, typ, _, f in ours:
        other = their_by_path[path]
        assert (version in f.nullable) == other.nullable_for_version_q(version), f"{path}: nullable"
        assert f.ignorable == bool(other._ignorable), f"{path}: ignorable"
        if typ in _INT_RANGES or typ == "bool":
            assert our_default(f) == their_scalar_default(other, typ), f"{path}: default"


# ------------------------------------- oracle: hand-written client schemas

def _struct_classes(package: str, request_base: str, response_base: str):
    """(key, version, kind) -> struct class of a client's hand-written schemas."""
    import pkgutil

    pkg = importlib.import_module(package)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        for info in pkgutil.iter_modules(pkg.__path__):
            importlib.import_module(f"{package}.{info.name}")
    api = importlib.import_module(f"{package}.api")

    def subclasses(cls):
        for sub in cls.__subclasses__():
            yield sub
            yield from subclasses(sub)

    found = {}
    for base, kind in ((request_base, "request"), (response_base, "response")):
        for cls in subclasses(getattr(api, base)):
            key = getattr(cls, "API_KEY", None)
            if key in GROUP_B and hasattr(cls, "API_VERSION") and hasattr(cls, "SCHEMA"):
                found[(key, cls.API_VERSION, kind)] = cls
    return found


# kafka-python's pre-JSON schemas, and aiokafka's (which decodes what Kavka sends).
LEGACY = {
    "kafka-python": _struct_classes("kafka.protocol.old", "Request", "Response"),
    "aiokafka": _struct_classes("aiokafka.protocol", "RequestStruct", "Response"),
}
_LEGACY_PRIMITIVE = {
    "Int8": "int8", "Int16": "int16", "Int32": "int32", "Int64": "int64", "Boolean": "bool",
    "String": "string", "CompactString": "string", "Bytes": "bytes", "CompactBytes": "bytes",
}


def legacy_shape(item) -> list[str]:
    """Wire shape of a client's hand-written type: primitives, brackets for arrays.
    Compact and classic encodings have the same shape; tag buffers have none."""
    name = item.__name__ if isinstance(item, type) else type(item).__name__
    if name == "Schema":
        return [tok for f in item.fields for tok in legacy_shape(f)]
    if name in ("Array", "CompactArray"):
        return ["[", *legacy_shape(item.array_of), "]"]
    if name == "TaggedFields":
        return []
    return [_LEGACY_PRIMITIVE[name]]


def our_shape(fields, version: int) -> list[str]:
    out: list[str] = []
    for f in fields:
        if version not in f.versions or version in f.tagged:
            continue
        if f.is_struct_array:
            out += ["[", *our_shape(f.struct_fields, version), "]"]
        elif f.is_struct:
            out += our_shape(f.struct_fields, version)
        elif f.type.startswith("[]"):
            out += ["[", f.type[2:], "]"]
        else:
            out.append(f.type)
    return out


def legacy_cases():
    for client, classes in LEGACY.items():
        for key, version, kind in sorted(classes):
            yield pytest.param(client, key, version, kind,
                               id=f"{client}-{GROUP_B[key]}-{kind}-v{version}")


@pytest.mark.parametrize("client,key,version,kind", list(legacy_cases()))
def test_wire_shape_matches_client_schemas(client, key, version, kind):
    ours = our_shape(getattr(OURS[key], kind), version)
    theirs = legacy_shape(LEGACY[client][(key, version, kind)].SCHEMA)
    if (client, key, version, kind) in LEGACY_DIFFERENCES:
        assert ours != theirs, f"stale LEGACY_DIFFERENCES entry {(client, key, version, kind)}"
    else:
        assert ours == theirs


def test_client_schemas_cover_the_versions_below_kafka_4_floor():
    # DescribeAcls/DescribeConfigs/DescribeLogDirs v0 left Kafka in 4.0; the
    # hand-written schemas still check them independently of Kafka's JSON.
    assert {(29, 0, "request"), (32, 0, "response"), (35, 0, "response")} <= set(LEGACY["kafka-python"])
    assert {(29, 0, "response"), (32, 0, "response")} <= set(LEGACY["aiokafka"])


# ------------------------------------------------------------ well-formedness

def test_modules_expose_exactly_group_b():
    assert {k: a.name for k, a in OURS.items()} == GROUP_B
    reg = registry()
    for key, api in OURS.items():
        assert reg[key] is api


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.__name__.rsplit(".", 1)[-1])
def test_module_docstring_says_what_and_cites_kips(module):
    assert module.__doc__ and "KIP-" in module.__doc__


def _check_fields(api: Api, fields, parent: Versions, where: str) -> None:
    span = Versions(max(parent.lo, api.min_version), min(parent.hi, api.max_version))
    tags: set[int] = set()
    for f in fields:
        at = f"{where}.{f.name}"
        assert _SNAKE.match(f.name), f"{at}: not snake_case"
        v = f.versions
        assert not v.empty and v.lo <= span.hi and v.hi >= span.lo, f"{at}: versions {v} outside {span}"
        if not f.nullable.empty:
            assert f.versions.lo <= f.nullable.lo and f.nullable.hi <= f.versions.hi, f"{at}: nullable"
            assert f.is_array or f.type in _NULLABLE_TYPES, f"{at}: {f.type} cannot be null"
        if f.tag is not None or not f.tagged.empty:
            assert f.tag is not None and not f.tagged.empty, f"{at}: tag without tagged versions"
            assert api.flexible_from is not None and f.tagged.lo >= api.flexible_from, \
                f"{at}: tagged outside flexible versions"
            assert f.versions.lo <= f.tagged.lo and f.tagged.hi <= f.versions.hi, f"{at}: tagged"
            assert f.tag >= 0 and f.tag not in tags, f"{at}: tag {f.tag} reused"
            tags.add(f.tag)
        if f.default is not MISSING:
            if f.type == "bool":
                assert isinstance(f.default, bool), f"{at}: default"
            else:
                low, high = _INT_RANGES[f.type]
                assert isinstance(f.default, int) and low <= f.default <= high, f"{at}: default"
            assert f.default != our_default(Field(f.name, f.type, f.versions)), \
                f"{at}: default equal to the zero value is noise"
        if isinstance(f.type, str):
            assert f.type.removeprefix("[]") in PRIMITIVES
        else:
            assert f.struct_fields, f"{at}: empty struct"
            _check_fields(api, f.struct_fields, Versions(max(span.lo, v.lo), min(span.hi, v.hi)), at)
    # Names are unique among the fields that coexist in a version.
    for version in range(span.lo, span.hi + 1):
        names = [f.name for f in fields if version in f.versions]
        assert len(names) == len(set(names)), f"{where} v{version}: duplicate names"


@pytest.mark.parametrize("key", sorted(GROUP_B))
def test_tables_are_well_formed(key):
    api = OURS[key]
    assert 0 == api.min_version <= api.max_version
    if api.flexible_from is not None:
        assert api.min_version <= api.flexible_from <= api.max_version
    full = Versions(api.min_version, api.max_version)
    for kind in KINDS:
        _check_fields(api, getattr(api, kind), full, f"{api.name}.{kind}")
        for version in range(api.min_version, api.max_version + 1):
            assert any(version in f.versions for f in getattr(api, kind)), \
                f"{api.name} {kind} v{version} has no fields"
