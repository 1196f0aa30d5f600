"""Codec semantics beyond round trips: defaults, tagged fields, fields a
version lacks, null handling, zero-copy records and error paths."""

import struct
import uuid

import pytest

from kavka.protocol.codec import REQUEST, RESPONSE, decode_body, encode_body
from kavka.protocol.errors import DecodeError, EncodeError
from kavka.protocol.messages import (
    FetchRequest,
    FetchResponse,
    MetadataRequest,
    MetadataResponse,
    ProduceRequest,
    ProduceResponse,
    request_class,
    response_class,
)

P = ProduceResponse.Responses.PartitionResponses


def test_naming_scheme_and_constructor_defaults():
    assert request_class(0) is ProduceRequest and response_class(1) is FetchResponse
    assert ProduceResponse.Responses.PartitionResponses.__qualname__ == \
        "ProduceResponse.Responses.PartitionResponses"
    p = P(index=3)
    assert (p.error_code, p.log_append_time_ms, p.log_start_offset, p.error_message) == (0, -1, -1, None)
    assert p.record_errors == [] and p.current_leader.leader_id == -1
    assert P().record_errors is not P().record_errors  # fresh mutable defaults
    assert MetadataResponse.Topics().topic_authorized_operations == -(2**31)
    assert FetchRequest.Topics().topic_id == uuid.UUID(int=0)
    with pytest.raises(TypeError):
        P(no_such_field=1)


def test_default_tagged_fields_are_not_written():
    """librdkafka < 2.2 misreads default-valued tags: send an empty block."""
    body = ProduceResponse(responses=[ProduceResponse.Responses(name="t", partition_responses=[P(index=0)])])
    data = encode_body(body, 10)
    # record_errors (empty: 0x01), error_message (null: 0x00), EMPTY partition
    # tag block, topic tag block, throttle_time_ms, top-level tag block
    assert data.endswith(b"\x01\x00" + b"\x00" + b"\x00" + b"\x00\x00\x00\x00" + b"\x00")
    moved = P(index=0, error_code=6, current_leader=P.CurrentLeader(leader_id=2, leader_epoch=7))
    body.responses[0].partition_responses = [moved]
    data = encode_body(body, 10)
    tag = b"\x01\x00\x09" + struct.pack(">ii", 2, 7) + b"\x00"  # 1 tag: #0, 9 bytes
    assert tag in data
    assert decode_body(0, RESPONSE, 10, data).responses[0].partition_responses[0] == moved


def test_unknown_tags_are_kept_and_written_back():
    data = bytearray(encode_body(FetchRequest(max_wait_ms=1, topics=[]), 12))
    assert data[-1] == 0
    data[-1:] = b"\x01\x09\x03abc"  # unknown tag 9 at top level
    decoded = decode_body(1, REQUEST, 12, bytes(data))
    assert decoded._unknown_tags == {9: b"abc"}
    assert encode_body(decoded, 12) == bytes(data)


def test_field_absent_in_version_must_keep_its_default_unless_ignorable():
    # preferred_read_replica (v11+) is not ignorable
    resp = FetchResponse(responses=[FetchResponse.Responses(topic="t", partitions=[
        FetchResponse.Responses.Partitions(preferred_read_replica=2)])])
    with pytest.raises(EncodeError) as info:
        encode_body(resp, 10)
    assert "Fetch v10 response: responses[0].partitions[0].preferred_read_replica" in str(info.value)
    assert encode_body(resp, 11)
    # log_start_offset (v5+) is ignorable: silently dropped at v4
    resp.responses[0].partitions[0].preferred_read_replica = -1
    resp.responses[0].partitions[0].log_start_offset = 99
    assert decode_body(1, RESPONSE, 4, encode_body(resp, 4)).responses[0].partitions[0].log_start_offset == -1


def test_null_only_where_the_version_allows_it():
    with pytest.raises(EncodeError, match="does not allow null"):
        encode_body(MetadataRequest(topics=None), 0)
    assert decode_body(3, REQUEST, 1, encode_body(MetadataRequest(topics=None), 1)).topics is None
    with pytest.raises(EncodeError, match="null"):
        encode_body(ProduceResponse(responses=[ProduceResponse.Responses(name=None)]), 3)
    # a null array where the version forbids it, on the wire
    with pytest.raises(DecodeError, match="null array"):
        decode_body(3, REQUEST, 0, b"\xff\xff\xff\xff")


def test_records_decode_as_zero_copy_views():
    batch = b"B" * 100
    body = ProduceRequest(acks=1, timeout_ms=1, topic_data=[ProduceRequest.TopicData(name="t", partition_data=[
        ProduceRequest.TopicData.PartitionData(index=0, records=batch)])])
    data = memoryview(encode_body(body, 9))
    records = decode_body(0, REQUEST, 9, data).topic_data[0].partition_data[0].records
    assert isinstance(records, memoryview) and records.obj is data.obj and records == batch


def test_values_out_of_range_are_encode_errors_with_a_path():
    body = ProduceRequest(acks=70000, timeout_ms=1)
    with pytest.raises(EncodeError, match="Produce v3 request: acks"):
        encode_body(body, 3)
    with pytest.raises(EncodeError, match="topic_data"):
        encode_body(ProduceRequest(topic_data=[ProduceRequest.TopicData(name=5)]), 3)


def test_tagged_field_errors_name_the_field():
    ok = encode_body(FetchRequest(cluster_id="c"), 12)
    # cluster_id is tag 0 at the top level: make its declared size larger than its value
    i = ok.index(b"\x01\x00\x02\x02c")
    bad = ok[:i] + b"\x01\x00\x03\x02c\x00" + ok[i + 5:]
    with pytest.raises(DecodeError, match="cluster_id: tagged field 0 declares 3 bytes but its value has 2"):
        decode_body(1, REQUEST, 12, bad)


def test_unsupported_version_in_codec():
    with pytest.raises(DecodeError, match="outside supported"):
        decode_body(0, REQUEST, 99, b"")
    with pytest.raises(EncodeError):
        encode_body(ProduceRequest(), 99)


def test_messages_compare_by_value_and_repr():
    a = FetchRequest(max_wait_ms=5)
    assert a == FetchRequest(max_wait_ms=5) and a != FetchRequest(max_wait_ms=6)
    assert "max_wait_ms=5" in repr(a)
    assert a.to_dict()["max_wait_ms"] == 5


def test_default_valued_tags_a_peer_sent_are_re_sent():
    """Byte-exact re-encoding of a decoded message: a broker that sends a
    default-valued tag gets it back; a message we build does not send it."""
    from kavka.protocol.headers import decode_response, encode_response
    from kavka.protocol.messages import ApiVersionsResponse

    built = ApiVersionsResponse(error_code=0, api_keys=[])
    canonical = encode_response(18, 3, 1, built)
    assert canonical.endswith(b"\x00\x00\x00\x00" + b"\x00")  # throttle, then no tags
    # finalized_features_epoch (tag 1) sent explicitly at its default, -1
    peer = canonical[:-1] + b"\x01\x01\x08" + struct.pack(">q", -1)
    _, decoded = decode_response(18, 3, peer)
    assert decoded == built
    assert encode_response(18, 3, 1, decoded) == peer
