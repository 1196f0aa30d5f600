"""What the capture proxy (``tools/capture_frames.py``) changes or flags in
the traffic between the clients and Tansu, and why.

Only two things are changed, both so that a client gets far enough to send
the requests we want to record; the client's own request bytes are always
stored as sent, and a changed response is stored as the client received it,
marked ``rewritten_by_proxy`` with the reason:

- kcat's ApiVersions v3 response loses Tansu's default-valued tagged fields
  (librdkafka 2.0.2 cannot read them);
- aiokafka's InitProducerId v0 request, which Tansu 0.6 refuses, goes to
  Tansu as v4 and the answer comes back to aiokafka as v0, so that
  aiokafka's idempotent and transactional producers run.

``broker_fault`` names responses Tansu got wrong, which stay in the
capture as frames a decoder must reject.

Pure functions over bytes.
"""

from __future__ import annotations

import struct

API_VERSIONS_TAGS_DROPPED = "default-valued tagged fields dropped for librdkafka 2.0.2"
INIT_PRODUCER_ID_BRIDGE = "tansu answered this InitProducerId v0 request at v4; fields copied into v0"


def _uvarint(buf: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7


def _skip_tags(buf: bytes, pos: int) -> int:
    count, pos = _uvarint(buf, pos)
    for _ in range(count):
        _, pos = _uvarint(buf, pos)
        size, pos = _uvarint(buf, pos)
        pos += size
    return pos


def strip_api_versions_tags(payload: bytes) -> bytes:
    """ApiVersions v3+ response with its top-level tagged fields dropped.

    librdkafka before 2.2 (kcat on Debian is 2.0.2) fails with "Read
    underflow" on the default-valued tags Tansu writes (SupportedFeatures,
    FinalizedFeaturesEpoch, FinalizedFeatures, ZkMigrationReady); every tag
    Tansu sends there holds its default, so dropping them changes no value.
    Layout: correlation id, error code, compact array of (key, min, max,
    tags), throttle time, tags — the response header is v0 for ApiVersions."""
    pos = 4 + 2
    count, pos = _uvarint(payload, pos)
    for _ in range(max(count - 1, 0)):
        pos = _skip_tags(payload, pos + 6)
    pos += 4
    return payload[:pos] + b"\0"


def _write_uvarint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def init_producer_id_v0_as_v4(payload: bytes) -> bytes:
    """InitProducerId v0 request (header v1; transactional_id nullable
    string, transaction_timeout_ms) re-encoded at v4 (header v2, compact
    string, producer id and epoch -1 as for a new producer, tagged fields).
    Tansu 0.6 answers v0 with error -1 because v0 has no producer id/epoch."""
    (corr,) = struct.unpack_from(">i", payload, 4)
    pos = 8
    (client_len,) = struct.unpack_from(">h", payload, pos)
    pos += 2 + max(client_len, 0)
    header_rest = payload[8:pos]  # the client id, as sent
    (txn_len,) = struct.unpack_from(">h", payload, pos)
    pos += 2
    if txn_len < 0:
        txn = _write_uvarint(0)
    else:
        txn = _write_uvarint(txn_len + 1) + payload[pos:pos + txn_len]
        pos += txn_len
    timeout = payload[pos:pos + 4]
    return (struct.pack(">hhi", 22, 4, corr) + header_rest + b"\0"
            + txn + timeout + struct.pack(">qh", -1, -1) + b"\0")


def init_producer_id_v4_response_as_v0(payload: bytes) -> bytes:
    """InitProducerId v4 response (header v1) as v0: correlation id,
    throttle, error code, producer id, producer epoch."""
    pos = _skip_tags(payload, 4)
    return payload[:4] + payload[pos:pos + 4 + 2 + 8 + 2]


def broker_fault(api_key: int, api_version: int, payload: bytes) -> str | None:
    """Why a response from Tansu is malformed, for the ones we know; such
    frames are kept (a decoder must reject them) but marked."""
    # OffsetFetch v3-v5 response: correlation id, throttle, topics array,
    # error code — at least 14 bytes.
    if api_key == 9 and 3 <= api_version <= 5 and len(payload) < 14:
        return ("Tansu 0.6 leaves out the topics array when the request asks for "
                "all topics (null); aiokafka drops the connection")
    return None


