"""The schema tables against kafka-python 3.0.12 (installed in the venv),
which ships Apache Kafka's own message definitions (JSON) and protocol
classes generated from them.

1. Ranges: every API both define has the same newest version (where Kavka
   stops earlier: ``KAVKA_STOPS_EARLIER``) and the same first flexible
   version.
2. Layout: for every API and version both know, the flattened layout —
   field order, name (modulo spelling), type, nullability, tag, scalar
   defaults, whether a string defaults to null, and ignorability — equals
   the one in Kafka's JSON.
3. Bytes: a random message encoded by Kavka is decoded and re-encoded by
   kafka-python's classes to the same bytes (every field's presence, order,
   type, nullability and tagging in that version agree).
4. Releases: the versions of the KIP-848 APIs match what real brokers
   advertise, as recorded in kafka-python's ``broker_version_data``.

APIs kafka-python does not define: the ZooKeeper-era inter-broker APIs
(test_schema_protocol_guide.py) and the KIP-848 / KIP-714 ones
(test_schema_kio.py).
"""

from __future__ import annotations

import importlib
import pkgutil
import warnings
from functools import cache

import pytest
from hypothesis import given

import schema_strategies as ss
from kavka.protocol.codec import encode_body
from kavka.protocol.schema import registry
from kavka.protocol.schema.dsl import MISSING, Api, Field

# kafka-python loads its JSON schemas with a deprecated importlib API
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

kp = pytest.importorskip("kafka.protocol")
kp_schemas = pytest.importorskip("kafka.protocol.schemas")
from kafka.protocol.api_message import ApiMessage  # noqa: E402

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka.protocol.broker_version_data import BROKER_API_VERSIONS  # noqa: E402

# Not in kafka-python 3.0.12: removed from Kafka with ZooKeeper in 4.0
# (checked against the protocol guide), and the next-generation group and
# client telemetry APIs (checked against kio).
NOT_IN_KAFKA_PYTHON = {4, 5, 6, 7, 68, 69, 71, 72}

# Where Kavka's table stops before Kafka's newest version (the versions
# Kavka implements; kavka/protocol/schema/apis/core.py): key -> newest.
KAVKA_STOPS_EARLIER = {0: 11, 1: 17}

# Nullable strings whose Kafka definition says ``"default": "null"`` and
# whose table leaves the default implicit — which for a nullable field is
# null too (dsl.Field) — by (API key, side, normalised path). Asserted to be
# in use.
IMPLICIT_NULL_DEFAULTS = {
    (28, "request", "groupinstanceid"),
    (37, "response", "results.errormessage"),
    (60, "response", "errormessage"),
    (60, "response", "brokers.rack"),
    (61, "response", "topics.partitions.errormessage"),
}


def _norm(name: str) -> str:
    return name.replace("_", "").lower()


# ---------------------------------------------------------------- oracles


def _kafka_python_classes() -> dict:
    for m in pkgutil.walk_packages(kp.__path__, kp.__name__ + "."):
        if m.name.split(".")[-1] in ("generate_stubs",):
            continue
        try:
            importlib.import_module(m.name)
        except Exception:  # an optional module kafka-python cannot import here
            continue
    found = {}
    stack = list(ApiMessage.__subclasses__())
    while stack:
        c = stack.pop()
        stack.extend(c.__subclasses__())
        if getattr(c, "_class_version", 1) is None:
            found[(c.API_KEY, "request" if c.is_request() else "response")] = c
    return found


ORACLE = _kafka_python_classes()
CASES = [c for c in ss.all_versions()
         if (c[0], c[1]) in ORACLE and c[2] <= ORACLE[(c[0], c[1])].max_version]
KEYS = sorted({k for k, _ in ORACLE} & set(registry()))


def _load_json(message: str) -> dict:
    # kafka-python 3.0.12 reads its JSON with importlib.resources' legacy,
    # deprecated API; the warning is theirs, not ours.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return kp_schemas.load_json(message, "kafka.protocol.schemas.resources")


@cache
def _kafka_python_message(api_name: str, kind: str):
    """Kafka's definition of ``<api_name><Request|Response>`` as kafka-python
    parses it (unpatched: its classes adjust a few fields for their own
    decoding): (top-level fields, max version)."""
    json = _load_json(api_name + kind)
    struct = kp_schemas.StructField(json)
    hi = kp_schemas.BaseField.parse_versions(json["validVersions"])[1]
    return list(struct.fields.values()), hi


# ---------------------------------------------------------------- walkers


_SCALARS = ("bool", "int8", "int16", "int32", "int64")


def _zero(f: Field) -> object:
    t = f.type
    if t == "bool":
        return False
    if t in ("int8", "int16", "int32", "int64", "uint16", "uint32"):
        return 0
    return None


def _ours(fields: tuple[Field, ...], version: int, implicit_null: set[str] = frozenset(),
          prefix: str = "") -> list[tuple]:
    """Flatten our schema at ``version``: body fields in order, then the
    tagged fields by tag; nested structs bracketed. A string in
    ``implicit_null`` (normalised paths) with no default counts as
    defaulting to null."""
    out: list[tuple] = []
    present = [f for f in fields if version in f.versions]
    body = [f for f in present if version not in f.tagged]
    tagged = sorted((f for f in present if version in f.tagged), key=lambda f: f.tag)
    for f in body + tagged:
        tag = f.tag if version in f.tagged else None
        nullable = version in f.nullable
        path = prefix + _norm(f.name)
        if f.is_struct_array or f.is_struct:
            kind = "[]{" if f.is_struct_array else "{"
            out.append((_norm(f.name), kind, nullable, tag, None, f.ignorable))
            out.extend(_ours(f.struct_fields, version, implicit_null, path + "."))
            out.append(("}",))
        else:
            if f.type in _SCALARS:
                default = _zero(f) if f.default is MISSING else f.default
            elif f.type == "string":
                implicit = f.default is MISSING and path in implicit_null
                default = "null" if f.default is None or implicit else None
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


def _implicit_null(key: int, kind: str) -> set[str]:
    return {path for k, s, path in IMPLICIT_NULL_DEFAULTS if (k, s) == (key, kind)}


# ------------------------------------------------------------------ ranges


def test_kafka_python_defines_every_api_but_the_listed_ones():
    assert set(registry()) - {k for k, _ in ORACLE} == NOT_IN_KAFKA_PYTHON
    assert {0, 1, 3, 18} <= {k for k, _, _ in CASES}


@pytest.mark.parametrize("key", KEYS)
def test_ranges_and_flexible_versions_match_kafka_python(key):
    a = registry()[key]
    for kind in ("Request", "Response"):
        json = _load_json(a.name + kind)
        lo, hi = kp_schemas.BaseField.parse_versions(json["validVersions"])
        assert a.min_version == 0
        assert a.max_version == KAVKA_STOPS_EARLIER.get(key, hi), f"{a.name}{kind}: kafka-python knows up to v{hi}"
        if key in KAVKA_STOPS_EARLIER:
            assert a.max_version < hi
        flex = kp_schemas.BaseField.parse_versions(json["flexibleVersions"])
        expected = None if flex == (-1, -1) else flex[0]
        assert a.flexible_from == expected, f"{a.name}{kind} flexible from"
        # kafka-python's generated classes say the same as its JSON
        cls = ORACLE[(key, kind.lower())]
        assert cls.max_version == hi
        theirs_flex = cls._flexible_versions
        assert (None if theirs_flex is None or theirs_flex == (-1, -1) else theirs_flex[0]) == expected


def test_versions_match_what_real_brokers_advertise():
    # kafka-python's record of each release's ApiVersions answer. Telemetry
    # (71, 72) is only advertised with a metrics reporter configured, so it
    # is absent there; kio's version modules cover it (test_schema_kio.py).
    releases = {v: apis for v, apis in BROKER_API_VERSIONS.items() if v >= (3, 9)}
    assert (3, 9) in releases and (4, 0) in releases
    assert releases[(3, 9)][68] == releases[(3, 9)][69] == (0, 0)
    for key in (68, 69):
        newest = max(apis[key][1] for apis in releases.values() if key in apis)
        assert (registry()[key].min_version, registry()[key].max_version) == (0, newest)


# ------------------------------------------------------------------ layout


def _layout_cases():
    for key in KEYS:
        a = registry()[key]
        for kind in ("request", "response"):
            _, hi = _kafka_python_message(a.name, kind.capitalize())
            for v in range(0, min(hi, a.max_version) + 1):
                yield pytest.param(key, kind, v, id=f"{a.name}-{kind}-v{v}")


@pytest.mark.parametrize("key,kind,version", list(_layout_cases()))
def test_layout_matches_kafka_python(key, kind, version):
    a: Api = registry()[key]
    theirs_fields, _ = _kafka_python_message(a.name, kind.capitalize())
    ours = _ours(getattr(a, kind), version, _implicit_null(key, kind))
    assert ours == _theirs(theirs_fields, version)


def test_implicit_null_defaults_are_still_needed():
    """Each entry is a field whose layout would differ without it."""
    for key, kind, path in sorted(IMPLICIT_NULL_DEFAULTS):
        a = registry()[key]
        theirs_fields, hi = _kafka_python_message(a.name, kind.capitalize())
        others = _implicit_null(key, kind) - {path}
        assert any(_ours(getattr(a, kind), v, others) != _theirs(theirs_fields, v)
                   for v in range(0, min(hi, a.max_version) + 1)), (key, kind, path)


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


# ------------------------------------------------------------------- bytes


@pytest.mark.parametrize("case", CASES, ids=[ss.case_id(c) for c in CASES])
def test_kafka_python_reads_what_kavka_writes(case):
    key, side, version = case
    oracle = ORACLE[(key, side)]

    @ss.budget()
    @given(ss.message(key, side, version))
    def check(msg):
        if key == 18 and side == "response" and version > 0:
            # kafka-python (like Kafka's clients) reads an ApiVersions
            # response carrying an error as v0: see the test below.
            msg.error_code = 0
        ours = encode_body(msg, version)
        decoded = oracle.decode(ours, version=version)
        decoded._header = None  # decoded without a header; kafka-python expects the slot set
        theirs = decoded.encode(version=version)
        assert bytes(theirs) == ours

    check()


def test_api_versions_error_is_read_as_v0():
    """KIP-511: a broker answers an unsupported ApiVersions version with
    UNSUPPORTED_VERSION and its version list encoded at v0, which is how
    clients read any ApiVersions response carrying an error."""
    from kavka.protocol.headers import encode_response
    from kavka.protocol.messages import ApiVersionsResponse as R

    body = R(error_code=35, api_keys=[R.ApiKeys(api_key=18, min_version=0, max_version=4)])
    frame = encode_response(18, 0, 99, body)
    theirs = ORACLE[(18, "response")].decode(frame[4:], version=4)
    assert theirs.error_code == 35
    assert [(k.api_key, k.min_version, k.max_version) for k in theirs.api_keys] == [(18, 0, 4)]
