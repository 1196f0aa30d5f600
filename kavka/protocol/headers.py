"""Request and response headers, and whole-message encode/decode.

Request header (the version is chosen per API and version by
``Api.request_header_version``):

    v0  api_key int16, api_version int16, correlation_id int32
    v1  v0 + client_id nullable string (int16 length, never compact)
    v2  v1 + tagged fields (flexible API versions, KIP-482)

Response header: v0 ``correlation_id int32``; v1 adds tagged fields
(flexible versions) — except ApiVersions, whose response header is always
v0 so that a client can read the error whatever version it asked for
(KIP-511).

Public functions take and return frames WITHOUT the int32 size prefix
(see ``kavka.protocol.framing``):

    decode_request(frame) -> (RequestHeader, body)
    encode_request(header, body) -> bytes
    decode_response(api_key, api_version, frame) -> (ResponseHeader, body)
    encode_response(api_key, api_version, correlation_id, body) -> bytes

``decode_request`` raises ``UnknownApiError`` / ``UnsupportedVersionError``
carrying the parsed header, so the broker can answer an unsupported
ApiVersions with UNSUPPORTED_VERSION and its version list at v0; any other
bad byte raises ``DecodeError``. Bytes after a request body are ignored (as
Kafka does); a response must be consumed exactly. Encode EVERY ApiVersions response that
carries an error at v0: clients (kafka-python, Kafka's own) read an
ApiVersions body with a non-zero error code as v0 whatever they asked for.

Pure functions; any thread.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from kavka.protocol import primitives as p
from kavka.protocol.budget import DecodeBudget
from kavka.protocol.buffers import Buffer
from kavka.protocol.codec import REQUEST, RESPONSE, decode_body, encode_body_parts
from kavka.protocol.errors import DecodeError, EncodeError, UnknownApiError, UnsupportedVersionError
from kavka.protocol.messages import Message
from kavka.protocol.schema import registry

_REQ_FIXED = p.INT16.size * 2 + p.INT32.size
_unpack_req = struct.Struct(">hhi")


@dataclass(frozen=True, slots=True)
class RequestHeader:
    """A decoded request header. ``client_id`` is None when absent (v0) or
    null. ``header_version`` is the form it was (or will be) encoded in."""

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None = None
    header_version: int | None = None


@dataclass(frozen=True, slots=True)
class ResponseHeader:
    correlation_id: int
    header_version: int = 0


def _best_effort_client_id(buf: memoryview) -> str | None:
    """The client id of a request we cannot decode further (v1 and v2
    headers put it at the same place); None when unreadable."""
    try:
        return p.read_nullable_string(buf, _REQ_FIXED)[0]
    except DecodeError:
        return None


def decode_request(frame: bytes | bytearray | memoryview) -> tuple[RequestHeader, Message]:
    buf = frame if isinstance(frame, memoryview) else memoryview(frame)
    if len(buf) < _REQ_FIXED:
        raise DecodeError(f"request header needs {_REQ_FIXED} bytes, frame has {len(buf)}",
                          context="request header")
    api_key, api_version, correlation_id = _unpack_req.unpack_from(buf, 0)
    a = registry().get(api_key)
    if a is None:
        header = RequestHeader(api_key, api_version, correlation_id, _best_effort_client_id(buf))
        raise UnknownApiError(f"unknown API key {api_key}", header)
    if not a.min_version <= api_version <= a.max_version:
        header = RequestHeader(api_key, api_version, correlation_id, _best_effort_client_id(buf))
        raise UnsupportedVersionError(
            f"{a.name} v{api_version} is not supported (supported: v{a.min_version}-v{a.max_version})",
            header)
    hv = a.request_header_version(api_version)
    pos = _REQ_FIXED
    client_id = None
    budget = DecodeBudget.for_request(len(buf))
    try:
        if hv >= 1:
            client_id, pos = p.read_nullable_string(buf, pos)
        if hv >= 2:
            _, pos = p.read_tagged_fields(buf, pos, budget)
    except DecodeError as e:
        e.context = f"{a.name} v{api_version} request header"
        e.path.insert(0, "client_id" if hv < 2 else "client_id/tagged_fields")
        raise
    header = RequestHeader(api_key, api_version, correlation_id, client_id, hv)
    # Bytes after the body are ignored, as Kafka's broker does: librdkafka
    # 2.16 (confluent-kafka) sends some Metadata v12 requests with 3 extra
    # bytes after the tagged fields.
    return header, decode_body(api_key, REQUEST, api_version, buf, pos, allow_trailing=True, budget=budget)


def _check_body(body: Message, api_key: int, side: str) -> None:
    if getattr(body, "API_KEY", None) != api_key or getattr(body, "SIDE", None) != side:
        raise EncodeError(f"{type(body).__name__} is not a {side} of API key {api_key}")


def encode_request(header: RequestHeader, body: Message) -> bytes:
    a = registry()[header.api_key]
    _check_body(body, header.api_key, REQUEST)
    hv = a.request_header_version(header.api_version)
    out: list[Buffer] = [_unpack_req.pack(header.api_key, header.api_version, header.correlation_id)]
    if hv >= 1:
        out.append(p.write_nullable_string(header.client_id))
    if hv >= 2:
        out.append(p.EMPTY_TAGGED_FIELDS)
    encode_body_parts(body, header.api_version, out)
    return b"".join(out)


def encode_response_parts(api_key: int, api_version: int, correlation_id: int, body: Message) -> list[Buffer]:
    """Header and body as a list of parts (records are not copied); frame
    with ``framing.frame_parts`` and send with ``writelines``."""
    a = registry()[api_key]
    _check_body(body, api_key, RESPONSE)
    out: list[Buffer] = [p.INT32.pack(correlation_id)]
    if a.response_header_version(api_version) >= 1:
        out.append(p.EMPTY_TAGGED_FIELDS)
    encode_body_parts(body, api_version, out)
    return out


def encode_response(api_key: int, api_version: int, correlation_id: int, body: Message) -> bytes:
    return b"".join(encode_response_parts(api_key, api_version, correlation_id, body))


def decode_response(api_key: int, api_version: int, frame: Buffer) -> tuple[ResponseHeader, Message]:
    buf = frame if isinstance(frame, memoryview) else memoryview(frame)
    a = registry().get(api_key)
    if a is None:
        raise DecodeError(f"unknown API key {api_key}", context="response header")
    hv = a.response_header_version(api_version)
    try:
        correlation_id, pos = p.read_int32(buf, 0)
        if hv >= 1:
            _, pos = p.read_tagged_fields(buf, pos)
    except DecodeError as e:
        e.context = f"{a.name} v{api_version} response header"
        raise
    return ResponseHeader(correlation_id, hv), decode_body(api_key, RESPONSE, api_version, buf, pos)
