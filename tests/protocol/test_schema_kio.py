"""The schema tables of the APIs kafka-python 3.0.12 does not define
(KIP-848 next-generation groups, KIP-714 client telemetry) against kio
0.6.5 (a dev dependency): Python data classes generated from Kafka's
message definitions by a generator independent of Kavka's, one class per
version, with its own (Rust) reader and writer.
- Versions: kio's version modules, and which of them are flexible.
- Layout: for every version, the flattened sequence of (normalised name,
  type, nullability, tag) must equal kio's, and non-zero scalar defaults
  must agree.
- Bytes: random messages drawn from Kavka's tables are encoded by Kavka,
  read by kio (every byte consumed, same values), written back by kio to
  the same bytes, and kio's bytes decode in Kavka to the same message.
- Real clients: every golden frame of these APIs (tests/protocol/golden/,
  confluent-kafka) decodes to the same values in Kavka and in kio.
What real brokers advertise for these APIs is checked in
test_schema_kafka_python.py (kafka-python's ``broker_version_data``).

Deliberate differences from kio's representation, normalised away: kio
names time fields without the ``_ms`` suffix (``throttle_time``), types
error codes as an enum (so random error codes are mapped onto codes kio
knows before crossing over) and holds the zero UUID as None.
"""

from __future__ import annotations

import dataclasses
import datetime
import importlib
import io
import json
import pkgutil
import re
import typing
import uuid
from pathlib import Path

import pytest
from hypothesis import given
from kio.schema.errors import ErrorCode
from kio.schema.request_header.v2.header import RequestHeader as KioRequestHeader
from kio.schema.response_header.v1.header import ResponseHeader as KioResponseHeader
from kio.serial import entity_reader, entity_writer

import schema_strategies as ss
from kavka.protocol.codec import REQUEST, RESPONSE, decode_body, encode_body
from kavka.protocol.headers import decode_request, decode_response
from kavka.protocol.schema import registry
from kavka.protocol.schema.dsl import MISSING, Api

# API key -> (name, kio's package): the APIs kafka-python does not define
# beyond the ZooKeeper-era ones (test_schema_kafka_python.py asserts which).
KIO_APIS = {
    68: ("ConsumerGroupHeartbeat", "consumer_group_heartbeat"),
    69: ("ConsumerGroupDescribe", "consumer_group_describe"),
    71: ("GetTelemetrySubscriptions", "get_telemetry_subscriptions"),
    72: ("PushTelemetry", "push_telemetry"),
}
OURS: dict[int, Api] = {key: registry()[key] for key in KIO_APIS}
SIDES = (REQUEST, RESPONSE)
GOLDEN = Path(__file__).parent / "golden"

# kio's kafka_type -> our primitive type.
_KIO_TYPES = {"error_code": "int16", "timedelta_i32": "int32", "timedelta_i64": "int64",
              "datetime_i64": "int64"}
_TIME_TYPES = {"timedelta_i32", "timedelta_i64", "datetime_i64"}
_ZERO_UUID = uuid.UUID(int=0)
_SCALARS = {"bool", "int8", "int16", "int32", "int64", "uint16", "uint32"}


def norm(name: str) -> str:
    return name.replace("_", "").lower()


# ------------------------------------------------------------------ kio side

def kio_versions(key: int) -> list[int]:
    package = importlib.import_module(f"kio.schema.{KIO_APIS[key][1]}")
    return sorted(int(m.name[1:]) for m in pkgutil.iter_modules(package.__path__)
                  if re.fullmatch(r"v\d+", m.name))


def kio_class(key: int, side: str, version: int) -> type:
    name, snake = KIO_APIS[key]
    module = importlib.import_module(f"kio.schema.{snake}.v{version}.{side}")
    return getattr(module, f"{name}{side.capitalize()}")


def _unwrap(annotation) -> tuple[object, bool]:
    """(annotation without None, whether None was allowed)."""
    args = typing.get_args(annotation)
    if type(None) in args and typing.get_origin(annotation) is not tuple:
        rest = [a for a in args if a is not type(None)]
        assert len(rest) == 1, f"unexpected union {annotation}"
        return rest[0], True
    return annotation, False


def _kio_default(f: dataclasses.Field):
    d = f.default
    if d is dataclasses.MISSING:
        return MISSING
    if isinstance(d, datetime.timedelta):
        return round(d / datetime.timedelta(milliseconds=1))
    return d


def kio_fields(cls: type, prefix: str = ""):
    """Yield (path, type, nullable, tag, default, is_time) per wire field, depth first."""
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        annotation, nullable = _unwrap(hints[f.name])
        array = typing.get_origin(annotation) is tuple
        element = typing.get_args(annotation)[0] if array else annotation
        kafka_type = f.metadata.get("kafka_type")
        path = prefix + norm(f.name)
        tag = f.metadata.get("tag")
        if kafka_type is None:  # a nested entity or an array of them
            typ = "[]struct" if array else "struct"
            yield path, typ, nullable, tag, _kio_default(f), False
            yield from kio_fields(element, path + ".")
            continue
        prim = _KIO_TYPES.get(kafka_type, kafka_type)
        if prim == "uuid" and not array:
            nullable = False  # kio holds the zero UUID as None; UUIDs are never null
        yield (path, ("[]" + prim) if array else prim, nullable, tag, _kio_default(f),
               kafka_type in _TIME_TYPES)


def kio_plain(value):
    """A kio entity as plain nested dicts keyed by normalised field names."""
    if dataclasses.is_dataclass(value):
        out = {}
        for f in dataclasses.fields(value):
            name = norm(f.name)
            if f.metadata.get("kafka_type") in _TIME_TYPES:
                name += "ms"
            out[name] = kio_plain(getattr(value, f.name))
        return out
    if isinstance(value, tuple):
        return [kio_plain(v) for v in value]
    if isinstance(value, datetime.timedelta):
        return round(value / datetime.timedelta(milliseconds=1))
    if isinstance(value, ErrorCode):
        return int(value.value)
    if value is None:
        return None
    if isinstance(value, (bool, str, bytes, uuid.UUID)):
        return value
    return int(value)


def kio_read(cls: type, data: bytes):
    entity, size = entity_reader(cls)(data, 0)
    assert size == len(data), f"kio read {size} of {len(data)} bytes"
    return entity


def kio_write(cls: type, entity) -> bytes:
    buf = io.BytesIO()
    entity_writer(cls)(buf, entity)
    return buf.getvalue()


# ------------------------------------------------------------------ our side

def our_fields(fields, version: int, prefix: str = ""):
    for f in fields:
        if version not in f.versions:
            continue
        path = prefix + norm(f.name)
        typ = "[]struct" if f.is_struct_array else "struct" if f.is_struct else f.type
        tag = f.tag if version in f.tagged else None
        yield path, typ, version in f.nullable, tag, f
        if f.is_struct_array or f.is_struct:
            yield from our_fields(f.struct_fields, version, path + ".")


def our_plain(msg, fields, version: int):
    """A Kavka message as plain nested dicts, like ``kio_plain``; kio stores
    the zero UUID as None."""
    out = {}
    for f in fields:
        if version not in f.versions:
            continue
        v = getattr(msg, f.name)
        if v is not None and f.is_struct_array:
            v = [our_plain(e, f.struct_fields, version) for e in v]
        elif v is not None and f.is_struct:
            v = our_plain(v, f.struct_fields, version)
        elif isinstance(v, list):
            v = list(v)
        elif v == _ZERO_UUID and f.type == "uuid":
            v = None
        elif isinstance(v, memoryview):
            v = bytes(v)
        out[norm(f.name)] = v
    return out


_KNOWN_CODES = sorted(c.value for c in ErrorCode)


def known_error_codes(msg, fields, version: int) -> None:
    """Map every error code onto one kio's enum knows (in place), keeping the draw's variety."""
    for f in fields:
        if version not in f.versions:
            continue
        v = getattr(msg, f.name)
        if f.name == "error_code":
            setattr(msg, f.name, _KNOWN_CODES[v % len(_KNOWN_CODES)])
        elif v is not None and f.is_struct_array:
            for e in v:
                known_error_codes(e, f.struct_fields, version)
        elif v is not None and f.is_struct:
            known_error_codes(v, f.struct_fields, version)


def cases():
    for key in sorted(KIO_APIS):
        for side in SIDES:
            for version in range(OURS[key].min_version, OURS[key].max_version + 1):
                yield pytest.param(key, side, version, id=f"{KIO_APIS[key][0]}-{side}-v{version}")


# --------------------------------------------------------------------- tests

def test_kio_apis_are_registered_by_name():
    assert {k: a.name for k, a in OURS.items()} == {k: n for k, (n, _) in KIO_APIS.items()}


@pytest.mark.parametrize("key", sorted(KIO_APIS), ids=lambda k: KIO_APIS[k][0])
def test_versions_match_kio(key):
    api = OURS[key]
    assert kio_versions(key) == list(range(api.min_version, api.max_version + 1))
    for version in kio_versions(key):
        for side in SIDES:
            assert kio_class(key, side, version).__flexible__ == api.is_flexible(version)


@pytest.mark.parametrize("key,side,version", list(cases()))
def test_layout_matches_kio(key, side, version):
    api = OURS[key]
    ours = list(our_fields(getattr(api, side), version))
    theirs = list(kio_fields(kio_class(key, side, version)))
    their_names = [p + "ms" if time else p for p, _, _, _, _, time in theirs]
    assert [p for p, *_ in ours] == their_names
    assert [(t, n, tag) for _, t, n, tag, _ in ours] == [(t, n, tag) for _, t, n, tag, _, _ in theirs]
    for (path, typ, nullable, _, f), (_, _, _, _, default, _) in zip(ours, theirs, strict=True):
        if nullable:
            assert f.default in (None, MISSING) and default in (None, MISSING), f"{path}: default"
        elif typ in _SCALARS:
            zero = False if typ == "bool" else 0
            mine = zero if f.default is MISSING else f.default
            assert mine == (zero if default is MISSING else default), f"{path}: default"


@pytest.mark.parametrize("key,side,version", list(cases()))
def test_kio_reads_and_writes_what_kavka_writes(key, side, version):
    api = OURS[key]
    fields = getattr(api, side)
    cls = kio_class(key, side, version)

    @ss.budget(2)
    @given(ss.message(key, side, version))
    def check(msg):
        known_error_codes(msg, fields, version)
        data = encode_body(msg, version)
        entity = kio_read(cls, data)
        assert kio_plain(entity) == our_plain(msg, fields, version)
        again = kio_write(cls, entity)
        assert again == data
        assert decode_body(key, side, version, memoryview(again)) == msg

    check()


def _golden_frames():
    out = []
    for path in sorted(GOLDEN.glob("*.frames")):
        for line_no, line in enumerate(path.read_text().splitlines(), 1):
            f = json.loads(line)
            if f["api_key"] in KIO_APIS and "broker_fault" not in f:
                out.append(pytest.param(f, id=f"{path.stem}-line{line_no}-{f['api_name']}-{f['dir']}"))
    return out


GOLDEN_C = _golden_frames()


def test_golden_frames_include_the_kio_apis():
    # confluent-kafka sent ConsumerGroupDescribe and GetTelemetrySubscriptions
    # (golden/README.md); a recapture that lost them would shrink this file.
    seen = {(p.values[0]["api_key"], p.values[0]["dir"]) for p in GOLDEN_C}
    assert {(69, "request"), (69, "response"), (71, "request"), (71, "response")} <= seen


@pytest.mark.parametrize("frame", GOLDEN_C)
def test_real_client_frames_decode_alike_in_kio(frame):
    data = bytes.fromhex(frame["hex"])
    key, version, side = frame["api_key"], frame["api_version"], frame["dir"]
    api = OURS[key]
    if side == REQUEST:
        _, body = decode_request(data)
        _, header_size = entity_reader(KioRequestHeader)(data, 0)
    else:
        _, body = decode_response(key, version, data)
        _, header_size = entity_reader(KioResponseHeader)(data, 0)
    entity = kio_read(kio_class(key, side, version), data[header_size:])
    assert kio_plain(entity) == our_plain(body, getattr(api, side), version)
