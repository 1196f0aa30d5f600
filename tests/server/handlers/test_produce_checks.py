"""The Produce handler's per-partition checks before the log (Kafka's
ProduceRequest.validateRecords): exactly one batch of magic 2 per
partition, no zstd before v7; and the response carries record_errors from
v8 only (KIP-467), encodable at every version."""

from __future__ import annotations

import pytest

from kavka.common.errors import ErrorCode
from kavka.common.topic_partition import TopicPartition
from kavka.protocol.headers import decode_response, encode_response
from kavka.protocol.messages import ProduceResponse
from kavka.protocol.records import Compression, SimpleRecord, build_batch
from kavka.server.handlers.produce import check_one_batch

TP = TopicPartition("t", 0)
ONE = build_batch([SimpleRecord(b"k", b"v", 0)])


def test_one_batch_of_magic_2_passes():
    assert check_one_batch(3, ONE, TP) is None
    assert check_one_batch(11, memoryview(ONE), TP) is None


def test_two_batches_for_one_partition_are_refused():
    code, message = check_one_batch(9, ONE + ONE, TP)
    assert code is ErrorCode.INVALID_RECORD
    assert message == "Produce requests with version 9 are only allowed to contain exactly one record batch per " \
                      "partition (t-0)"


def test_another_magic_is_refused():
    old = bytearray(ONE)
    old[16] = 1
    code, message = check_one_batch(5, bytes(old), TP)
    assert code is ErrorCode.INVALID_RECORD and "magic version 2" in message


@pytest.mark.parametrize("version, refused", [(3, True), (6, True), (7, False), (11, False)])
def test_zstd_needs_version_7(version, refused):
    zstd = build_batch([SimpleRecord(b"k", b"v", 0)], compression=Compression.ZSTD)
    result = check_one_batch(version, zstd, TP)
    assert (result is not None and result[0] is ErrorCode.UNSUPPORTED_COMPRESSION_TYPE) == refused


def test_partial_or_short_batches_are_left_to_the_log():
    # the log names these (CORRUPT_MESSAGE for a partial batch)
    assert check_one_batch(9, ONE[:-3], TP) is None
    assert check_one_batch(9, ONE[:20], TP) is None


@pytest.mark.parametrize("version", [3, 7, 8, 9, 11])
def test_a_response_with_record_errors_encodes_at_its_version(version):
    R = ProduceResponse
    part = R.Responses.PartitionResponses(index=0, error_code=int(ErrorCode.INVALID_RECORD), base_offset=-1,
                                          error_message="bad")
    if version >= 8:
        part.record_errors = [R.Responses.PartitionResponses.RecordErrors(batch_index=3,
                                                                          batch_index_error_message="why")]
    body = encode_response(0, version, 1, R(responses=[R.Responses(name="t", partition_responses=[part])]))
    _header, back = decode_response(0, version, body)
    got = back.responses[0].partition_responses[0]
    assert got.error_code == ErrorCode.INVALID_RECORD
    assert [(e.batch_index, e.batch_index_error_message) for e in got.record_errors] == (
        [(3, "why")] if version >= 8 else [])
