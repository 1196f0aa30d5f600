"""The decode budget (``kavka.protocol.budget``): no request frame of n
bytes builds more than ``AMPLIFICATION * n + ALLOWANCE`` bytes of objects
(measured with tracemalloc, whatever the frame holds), the hostile frames
that used to amplify 36x are refused before their elements are built, and
the requests real clients send decode at any size."""

from __future__ import annotations

import struct
import tracemalloc
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import schema_strategies as ss
from kavka.protocol import messages as M
from kavka.protocol.budget import ALLOWANCE, AMPLIFICATION, DecodeBudget, DecodeBudgetError
from kavka.protocol.codec import REQUEST, decode_body, encode_body
from kavka.protocol.errors import DecodeError
from kavka.protocol.headers import RequestHeader, decode_request, encode_request
from kavka.protocol.messages import Message, camel
from kavka.protocol.schema import registry


def bound(frame_size: int) -> int:
    return AMPLIFICATION * frame_size + ALLOWANCE


def peak_of(fn: Callable[[], Any]) -> tuple[int, BaseException | None]:
    """Peak traced memory while ``fn`` runs, and the DecodeError it raised."""
    tracemalloc.start()
    try:
        try:
            fn()
            error = None
        except DecodeError as e:
            error = e
        return tracemalloc.get_traced_memory()[1], error
    finally:
        tracemalloc.stop()


def metadata_v1_frame(names: int, name: bytes = b"") -> bytes:
    header = struct.pack(">hhih", 3, 1, 7, 0)  # Metadata v1, client id ""
    return header + struct.pack(">i", names) + (struct.pack(">h", len(name)) + name) * names


def test_a_frame_of_a_million_empty_topic_names_is_refused_before_building_them():
    frame = metadata_v1_frame(1_000_000)  # 2 MB; decoded, 72 MB of structs
    decode_request(metadata_v1_frame(1))  # compile the plan outside the measure
    peak, error = peak_of(lambda: decode_request(frame))
    assert isinstance(error, DecodeBudgetError)
    assert "Metadata v1 request: topics: an array of 1000000 structs" in str(error)
    assert f"budget of {bound(len(frame)):,}" in str(error)
    assert peak < 64 * 1024  # nothing of the array was built


def test_the_budget_holds_just_below_its_limit_and_refuses_just_above():
    lo, hi = 0, 1
    while _used(metadata_v1_frame(hi)) <= bound(len(metadata_v1_frame(hi))):
        lo, hi = hi, hi * 2
    while hi - lo > 1:  # the largest count of empty names within budget
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if _used(metadata_v1_frame(mid)) <= bound(len(metadata_v1_frame(mid))) else (lo, mid)
    assert lo > 1000
    assert len(decode_request(metadata_v1_frame(lo))[1].topics) == lo
    with pytest.raises(DecodeBudgetError):
        decode_request(metadata_v1_frame(hi))


def _used(frame: bytes) -> int:
    """What decoding ``frame`` (a Metadata v1 request) charges."""
    b = DecodeBudget.unlimited()
    decode_body(3, REQUEST, 1, memoryview(frame)[10:], budget=b)
    return b.used


def _fetch(version: int, partitions: int) -> M.FetchRequest:
    Q = M.FetchRequest
    topics = max(1, partitions // 100)
    per = min(partitions, 100)
    return Q(replica_id=-1, max_wait_ms=500, min_bytes=1, max_bytes=52428800, session_id=0, session_epoch=-1,
             topics=[Q.Topics(topic=f"topic-{t}" if version < 13 else "",
                              topic_id=uuid.UUID(int=t + 1) if version >= 13 else uuid.UUID(int=0),
                              partitions=[Q.Topics.Partitions(
                                  partition=p, fetch_offset=10**6 + p, log_start_offset=0,
                                  partition_max_bytes=1048576, current_leader_epoch=3 if version >= 9 else -1,
                                  last_fetched_epoch=3 if version >= 12 else -1) for p in range(per)])
                     for t in range(topics)])


def _metadata(version: int, topics: int) -> M.MetadataRequest:
    R = M.MetadataRequest
    return R(topics=[R.Topics(name=f"t-{i:05d}") for i in range(topics)], allow_auto_topic_creation=version < 4)


def _offset_commit(version: int, partitions: int) -> M.OffsetCommitRequest:
    O = M.OffsetCommitRequest
    return O(group_id="group-1", generation_id_or_member_epoch=5, member_id="rdkafka-" + "0" * 36,
             topics=[O.Topics(name=f"topic-{t}", partitions=[
                 O.Topics.Partitions(partition_index=p, committed_offset=10**9 + p, committed_metadata="")
                 for p in range(100)]) for t in range(partitions // 100)])


def _offset_fetch(version: int, partitions: int) -> M.OffsetFetchRequest:
    F = M.OffsetFetchRequest
    return F(group_id="group-1", topics=[F.Topics(name=f"topic-{t}", partition_indexes=list(range(100)))
                                         for t in range(partitions // 100)])


def _list_offsets(version: int, partitions: int) -> M.ListOffsetsRequest:
    L = M.ListOffsetsRequest
    return L(replica_id=-1, topics=[L.Topics(name=f"topic-{t}", partitions=[
        L.Topics.Partitions(partition_index=p, timestamp=-1) for p in range(100)]) for t in range(partitions // 100)])


def _produce(version: int, partitions: int) -> M.ProduceRequest:
    P = M.ProduceRequest
    batch = bytes(61)
    return P(acks=-1, timeout_ms=30000, topic_data=[P.TopicData(name=f"topic-{t}", partition_data=[
        P.TopicData.PartitionData(index=p, records=batch) for p in range(100)]) for t in range(partitions // 100)])


def _leader_and_isr(version: int, partitions: int) -> M.LeaderAndIsrRequest:
    # The controller's full state to a broker after a failure: every partition, RF 3.
    L = M.LeaderAndIsrRequest
    return L(controller_id=1, controller_epoch=3, broker_epoch=10**6, topic_states=[
        L.TopicStates(topic_name=f"failover-{t:04d}", topic_id=uuid.UUID(int=t + 1), partition_states=[
            L.TopicStates.PartitionStates(partition_index=p, controller_epoch=3, leader=1, leader_epoch=2, isr=[0, 1],
                                          partition_epoch=5, replicas=[0, 1, 2], is_new=False)
            for p in range(100)]) for t in range(partitions // 100)],
        live_leaders=[L.LiveLeaders(broker_id=i, host_name="127.0.0.1", port=40000 + i) for i in range(3)])


def _update_metadata(version: int, partitions: int) -> M.UpdateMetadataRequest:
    U = M.UpdateMetadataRequest
    return U(controller_id=1, controller_epoch=3, broker_epoch=10**6, topic_states=[
        U.TopicStates(topic_name=f"failover-{t:04d}", topic_id=uuid.UUID(int=t + 1), partition_states=[
            U.TopicStates.PartitionStates(partition_index=p, controller_epoch=3, leader=1, leader_epoch=2, isr=[0, 1],
                                          zk_version=5, replicas=[0, 1, 2])
            for p in range(100)]) for t in range(partitions // 100)])


def _stop_replica(version: int, partitions: int) -> M.StopReplicaRequest:
    S = M.StopReplicaRequest
    return S(controller_id=1, controller_epoch=3, broker_epoch=10**6, topic_states=[
        S.TopicStates(topic_name=f"failover-{t:04d}", partition_states=[
            S.TopicStates.PartitionStates(partition_index=p, leader_epoch=2) for p in range(100)])
        for t in range(partitions // 100)])


# What the clients Kavka serves send, at sizes well past the allowance (so
# the factor decides, at least 1.9x and mostly 5-15x): the librdkafka/Java
# versions and the older ones of aiokafka and kafka-python; and what Kavka's
# controller sends its brokers (the versions it speaks,
# kavka.controller.broker_transport) for a cluster of 10,000 partitions.
LEGITIMATE = [
    ("Fetch", 1, v, _fetch, 20_000) for v in (4, 11, 12, 16)
] + [
    ("Metadata", 3, v, _metadata, 25_000) for v in (1, 9, 12)
] + [
    ("OffsetCommit", 8, v, _offset_commit, 20_000) for v in (2, 8)
] + [
    ("OffsetFetch", 9, v, _offset_fetch, 20_000) for v in (1, 7)
] + [
    ("ListOffsets", 2, v, _list_offsets, 20_000) for v in (1, 7)
] + [
    ("Produce", 0, v, _produce, 10_000) for v in (3, 9)
] + [
    ("LeaderAndIsr", 4, v, _leader_and_isr, 10_000) for v in (2, 5)
] + [
    ("UpdateMetadata", 6, v, _update_metadata, 10_000) for v in (5, 7)
] + [
    ("StopReplica", 5, 3, _stop_replica, 10_000)
]


@pytest.mark.parametrize("name,key,version,make,count", LEGITIMATE,
                         ids=[f"{c[0]}-v{c[2]}-{c[4]}" for c in LEGITIMATE])
def test_large_requests_of_real_clients_decode(name, key, version, make, count):
    body = make(version, count)
    frame = encode_request(RequestHeader(key, version, 1, "rdkafka"), body)
    assert len(frame) * AMPLIFICATION > ALLOWANCE  # the factor decides, not the allowance
    decode_request(frame)  # compiled outside the measure
    peak, error = peak_of(lambda: decode_request(frame))
    assert error is None, error
    assert peak <= bound(len(frame))


# ---- the property: whatever the frame, the bound holds ---------------------------------------

REQUEST_KEYS = sorted(registry())


def _lists(msg: Message, version: int) -> Iterator[tuple[Message, str]]:
    """(owner, field name) of every list a message tree holds in ``version``."""
    for name in msg.FIELDS:
        if not any(version in f.versions for f in msg.SCHEMA[name]):
            continue
        value = getattr(msg, name)
        if isinstance(value, list):
            yield msg, name
            for el in value:
                if isinstance(el, Message):
                    yield from _lists(el, version)
        elif isinstance(value, Message):
            yield from _lists(value, version)


_SMALLEST = {"int8": 0, "int16": 0, "int32": 0, "int64": 0, "uint16": 0, "uint32": 0, "float64": 0.0,
             "bool": False, "uuid": uuid.UUID(int=0), "string": "", "bytes": b""}


def _smallest_element(owner: Message, name: str) -> Any:
    """The cheapest-to-encode element of ``owner.name``: a struct of
    defaults or a zero primitive (the most objects per byte)."""
    field = owner.SCHEMA[name][0]
    if field.is_struct_array:
        return getattr(type(owner), camel(name))()
    return _SMALLEST[field.type_name[2:]]


@pytest.mark.parametrize("key", REQUEST_KEYS, ids=[registry()[k].name for k in REQUEST_KEYS])
def test_no_request_frame_builds_more_than_the_bound(key):
    """Random requests of every API and version, one or two of their
    arrays (nested ones too) filled with up to 40,000 copies of their
    smallest element or of a drawn one (non-ASCII strings included):
    decoded or refused, the peak memory stays within the bound."""
    a = registry()[key]

    @ss.budget(0.5)
    @given(st.data(), st.integers(a.min_version, a.max_version))
    def check(data, version):
        msg = data.draw(ss.message(key, REQUEST, version))
        room = 40_000  # copies in all: the second fill shares the first's elements
        for _ in range(data.draw(st.integers(1, 2))):
            lists = list(_lists(msg, version))
            if not lists or room < 2:
                break
            owner, name = data.draw(st.sampled_from(lists))
            current = getattr(owner, name)
            element = _smallest_element(owner, name) if not current or data.draw(st.booleans()) else current[0]
            copies = data.draw(st.integers(0, room))
            setattr(owner, name, [element] * copies)
            room //= max(copies, 1)
        frame = encode_request(RequestHeader(key, version, 1, "c"), msg)
        decode_request(encode_request(RequestHeader(key, version, 1, "c"), type(msg)()))  # compile
        peak, error = peak_of(lambda: decode_request(frame))
        assert error is None or isinstance(error, DecodeBudgetError), error
        assert peak <= bound(len(frame)), (len(frame), peak, error)

    check()


def test_unknown_tagged_fields_in_a_request_header_are_charged():
    """A flexible header carrying 100,000 empty tagged fields (a dict of
    100k entries, ~40x the frame) is refused before they are built."""
    tags = b"".join(_uvarint(t) + b"\x00" for t in range(100_000))
    body = encode_body(M.ApiVersionsRequest(client_software_name="x", client_software_version="1"), 3)
    frame = struct.pack(">hhih", 18, 3, 1, 1) + b"c" + _uvarint(100_000) + tags + body
    peak, error = peak_of(lambda: decode_request(frame))
    assert isinstance(error, DecodeBudgetError)
    assert peak <= bound(len(frame))


def test_unknown_tagged_fields_in_a_body_are_charged():
    tags = b"".join(_uvarint(t) + b"\x00" for t in range(100_000))
    frame = struct.pack(">hhih", 18, 3, 1, 1) + b"c" + b"\x00" + b"\x02x\x021" + _uvarint(100_000) + tags
    peak, error = peak_of(lambda: decode_request(frame))
    assert isinstance(error, DecodeBudgetError)
    assert "tagged field" in str(error)
    assert peak <= bound(len(frame))


def _uvarint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def test_responses_are_decoded_without_a_budget():
    R = M.MetadataResponse
    resp = R(topics=[R.Topics(name="", partitions=[]) for _ in range(50_000)])
    data = encode_body(resp, 1)
    assert len(decode_body(3, "response", 1, memoryview(data)).topics) == 50_000
