"""Request/response headers and whole-message encode/decode."""

import struct

import pytest

from kavka.protocol.errors import DecodeError, EncodeError, UnknownApiError, UnsupportedVersionError
from kavka.protocol.headers import (
    RequestHeader,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
)
from kavka.protocol.messages import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    MetadataRequest,
    MetadataResponse,
    ProduceRequest,
)


def test_request_header_v1_layout():
    # Metadata v1 is not flexible: header v1, non-compact nullable client id
    frame = encode_request(RequestHeader(3, 1, 42, "cli"), MetadataRequest(topics=None))
    assert frame[:8] == struct.pack(">hhi", 3, 1, 42)
    assert frame[8:13] == b"\x00\x03cli"
    assert frame[13:] == b"\xff\xff\xff\xff"  # null topic array = all topics
    header, body = decode_request(frame)
    assert header == RequestHeader(3, 1, 42, "cli", 1)
    assert body.topics is None


def test_request_header_v2_keeps_client_id_non_compact():
    frame = encode_request(RequestHeader(18, 3, 7, "me"), ApiVersionsRequest(
        client_software_name="kavka", client_software_version="1"))
    # client id int16-prefixed, then an empty tagged-field block
    assert frame[8:13] == b"\x00\x02me\x00"
    header, body = decode_request(frame)
    assert (header.client_id, header.header_version) == ("me", 2)
    assert body.client_software_name == "kavka"


def test_null_client_id():
    frame = encode_request(RequestHeader(18, 0, 1, None), ApiVersionsRequest())
    assert decode_request(frame)[0].client_id is None


def test_request_header_tagged_fields_are_skipped():
    frame = bytearray(encode_request(RequestHeader(18, 3, 7, "me"), ApiVersionsRequest()))
    frame[12:13] = b"\x01\x07\x02hi"  # one unknown header tag
    header, body = decode_request(bytes(frame))
    assert header.correlation_id == 7 and body == ApiVersionsRequest()


def test_api_versions_response_header_is_always_v0():
    body = ApiVersionsResponse(api_keys=[ApiVersionsResponse.ApiKeys(api_key=0, max_version=11)])
    frame = encode_response(18, 3, 5, body)
    assert frame[:4] == struct.pack(">i", 5)
    assert frame[4:6] == b"\x00\x00"  # error code right after the correlation id
    header, decoded = decode_response(18, 3, frame)
    assert header.header_version == 0 and decoded == body


def test_flexible_response_header_v1_has_tagged_fields():
    frame = encode_response(3, 9, 5, MetadataResponse())
    assert frame[:5] == struct.pack(">i", 5) + b"\x00"
    assert decode_response(3, 9, frame)[0].header_version == 1


def test_non_flexible_response_header_v0():
    frame = encode_response(3, 8, 5, MetadataResponse())
    assert frame[4:8] == b"\x00\x00\x00\x00"  # throttle_time_ms follows directly
    assert decode_response(3, 8, frame)[0].header_version == 0


def test_unsupported_version_carries_header_for_kip_511():
    frame = bytearray(encode_request(RequestHeader(18, 3, 11, "librdkafka"), ApiVersionsRequest()))
    frame[2:4] = struct.pack(">h", 77)
    with pytest.raises(UnsupportedVersionError) as info:
        decode_request(bytes(frame))
    h = info.value.header
    assert (h.api_key, h.api_version, h.correlation_id, h.client_id) == (18, 77, 11, "librdkafka")
    assert info.value.code == 35
    # the answer: UNSUPPORTED_VERSION and our versions, at v0
    answer = encode_response(18, 0, h.correlation_id, ApiVersionsResponse(
        error_code=35, api_keys=[ApiVersionsResponse.ApiKeys(api_key=18, min_version=0, max_version=4)]))
    assert decode_response(18, 0, answer)[1].error_code == 35


def test_unknown_api_key():
    frame = struct.pack(">hhi", 9999, 0, 3) + b"\x00\x01x"
    with pytest.raises(UnknownApiError) as info:
        decode_request(frame)
    assert info.value.header.correlation_id == 3 and info.value.header.client_id == "x"
    assert isinstance(info.value, DecodeError)


def test_short_frame():
    with pytest.raises(DecodeError, match="request header needs 8 bytes"):
        decode_request(b"\x00\x00\x00")


def test_error_names_api_version_and_path():
    R = ProduceRequest
    body = R(acks=-1, timeout_ms=5, topic_data=[R.TopicData(name="t", partition_data=[
        R.TopicData.PartitionData(index=i, records=b"x" * 20) for i in range(4)])])
    frame = bytearray(encode_request(RequestHeader(0, 8, 1, "c"), body))
    # the last partition's records length: claim 1,000,000 bytes
    pos = len(frame) - 20 - 4
    frame[pos:pos + 4] = struct.pack(">i", 1_000_000)
    with pytest.raises(DecodeError) as info:
        decode_request(bytes(frame))
    assert str(info.value) == ("Produce v8 request: topic_data[0].partition_data[3].records: "
                               "length 1000000 exceeds 20 remaining bytes")


def test_trailing_bytes_after_a_request_are_ignored_as_kafka_does():
    # confluent-kafka 2.16 (librdkafka) sent this Metadata v12 request: 3
    # bytes follow the body's tagged fields.
    frame = bytes.fromhex("0003000c00000005000772646b61666b610000000000010000")
    header, body = decode_request(frame)
    assert (header.correlation_id, header.client_id) == (5, "rdkafka")
    assert body.topics is None and body.allow_auto_topic_creation is False


def test_trailing_bytes_after_a_response_are_rejected():
    frame = encode_response(18, 0, 1, ApiVersionsResponse()) + b"\x00"
    with pytest.raises(DecodeError, match="1 bytes left over"):
        decode_response(18, 0, frame)


def test_body_must_match_the_api():
    with pytest.raises(EncodeError):
        encode_request(RequestHeader(3, 1, 1, "c"), ApiVersionsRequest())
    with pytest.raises(EncodeError):
        encode_response(18, 0, 1, ApiVersionsRequest())
