"""How the consumer turns one partition's fetched bytes into records:
position inside a batch, control batches, aborted transactions
(read_committed), and a batch too large for the fetch size. No network:
``_partition_data`` is fed FetchResponse partitions built here."""

from __future__ import annotations

import asyncio

import pytest

from kavka.client.cluster import Cluster
from kavka.client.consumer import Consumer
from kavka.common.errors import ErrorCode
from kavka.common.topic_partition import TopicPartition
from kavka.protocol.messages import FetchResponse
from kavka.protocol.records import ControlRecordType, SimpleRecord, build_batch, build_control_batch

TP = TopicPartition("t", 0)
P = FetchResponse.Responses.Partitions


def batch(base: int, values: list[bytes], pid: int = -1, txn: bool = False) -> bytes:
    return build_batch([SimpleRecord(None, v, 1000 + i) for i, v in enumerate(values)], base_offset=base,
                       producer_id=pid, producer_epoch=0 if pid >= 0 else -1,
                       base_sequence=0 if pid >= 0 else -1, is_transactional=txn)


def consume(data: bytes, position: int, hw: int, *, isolation: int = 0, aborted=(), max_bytes=1 << 20):
    consumer = Consumer(Cluster("127.0.0.1:9"), isolation_level=isolation, max_partition_fetch_bytes=max_bytes)
    consumer.assign([TP])
    consumer.seek(TP, position)
    part = P(partition_index=0, high_watermark=hw, records=data, aborted_transactions=[
        P.AbortedTransactions(producer_id=pid, first_offset=off) for pid, off in aborted])
    out = []
    asyncio.run(consumer._partition_data(TP, part, out))
    return [(r.offset, r.value) for r in out], consumer.position(TP), consumer.high_watermarks[TP]


def test_records_below_the_position_are_skipped_and_position_moves_past_the_batch():
    data = batch(0, [b"a", b"b", b"c"]) + batch(3, [b"d"])
    assert consume(data, 1, 4) == ([(1, b"b"), (2, b"c"), (3, b"d")], 4, 4)


def test_a_trailing_partial_batch_is_left_for_the_next_fetch():
    data = batch(0, [b"a"]) + batch(1, [b"b"])[:-5]
    assert consume(data, 0, 2) == ([(0, b"a")], 1, 2)


def test_control_batches_advance_the_position_only():
    data = batch(0, [b"a"], pid=7, txn=True) + build_control_batch(ControlRecordType.COMMIT, 7, 0, 0, 5,
                                                                    base_offset=1)
    assert consume(data, 0, 2) == ([(0, b"a")], 2, 2)


def test_read_committed_drops_aborted_transactions():
    data = (batch(0, [b"x1", b"x2"], pid=7, txn=True)
            + batch(2, [b"ok"])
            + build_control_batch(ControlRecordType.ABORT, 7, 0, 0, 5, base_offset=3)
            + batch(4, [b"y"], pid=7, txn=True))
    committed = consume(data, 0, 5, isolation=1, aborted=[(7, 0)])
    assert committed == ([(2, b"ok"), (4, b"y")], 5, 5)
    uncommitted = consume(data, 0, 5, isolation=0, aborted=[(7, 0)])
    assert [v for _, v in uncommitted[0]] == [b"x1", b"x2", b"ok", b"y"]


def test_a_batch_larger_than_the_fetch_size_is_a_clear_error():
    data = batch(0, [b"z" * 100])[:40]
    with pytest.raises(Exception, match="max_partition_fetch_bytes") as info:
        consume(data, 0, 1, max_bytes=40)
    assert info.value.code == ErrorCode.MESSAGE_TOO_LARGE
