"""Fetch size limits against real logs: ``fetch.max.bytes`` caps what any
Fetch gets (consumers and followers) and the ``min_bytes`` it waits for,
each partition stays within its ``partition_max_bytes``, the first batch
goes whole even when larger than every limit (KIP-74), and the log is read
no further than the answer needs."""

from __future__ import annotations

import asyncio

import pytest

from kavka.protocol.records.batch import iter_batches
from kavka.replication.requests import FetchIsolation, FetchParams, FetchPartition
from kavka.storage.file_records import FileRecords

from .conftest import TP, batch, state
from .test_replica_manager import LIVE, TP1, make_rm

MiB = 1 << 20


def sizes(records: bytes) -> list[int]:
    return [h.size for _, h in iter_batches(records)]


async def leader_with(rm, partitions, batches: int, value_size: int) -> int:
    """Make broker 1 the only replica of ``partitions``, append ``batches``
    batches of one record each; returns one batch's size."""
    rm.become_leader_or_follower(0, 1, [state(1, 0, (1,), tp=tp) for tp in partitions], LIVE)
    one = batch(1, b"x" * value_size)
    for _ in range(batches):
        await rm.append_records(1000, 1, {tp: one for tp in partitions})
    return len(one)


def consumer(max_bytes: int = 50 * MiB, min_bytes: int = 1, max_wait_ms: int = 0) -> FetchParams:
    return FetchParams(-1, max_wait_ms, min_bytes, max_bytes, FetchIsolation.HIGH_WATERMARK)


async def test_fetch_max_bytes_caps_a_request_asking_for_more(log_manager, clock):
    rm = make_rm(log_manager, clock, fetch_max_bytes=1024)
    size = await leader_with(rm, [TP, TP1], 10, 200)
    data = await rm.fetch_messages(consumer(), {TP: FetchPartition(0, MiB), TP1: FetchPartition(0, MiB)})
    got = sizes(data[TP].records) + sizes(data[TP1].records)
    assert sum(got) <= 1024 and len(got) == 1024 // size
    assert sizes(data[TP].records) == [size] * (1024 // size)  # whole batches, in partition order


async def test_fetch_max_bytes_applies_to_followers(log_manager, clock):
    rm = make_rm(log_manager, clock, fetch_max_bytes=2048)
    rm.become_leader_or_follower(0, 1, [state(1, 0, (1, 2))], LIVE)
    one = batch(1, b"x" * 200)
    for _ in range(30):
        await rm.append_records(1000, 1, {TP: one})
    params = FetchParams(2, 0, 1, 10 * MiB, FetchIsolation.LOG_END)
    data = await rm.fetch_messages(params, {TP: FetchPartition(0, 10 * MiB)})
    assert 2048 - len(one) < len(data[TP].records) <= 2048


async def test_the_first_batch_goes_whole_even_past_every_limit(log_manager, clock):
    """KIP-74: a batch larger than fetch.max.bytes, the request's max_bytes
    and the partition's max bytes is returned, alone, so the consumer
    makes progress; the partitions after it get nothing."""
    rm = make_rm(log_manager, clock, fetch_max_bytes=1024)
    size = await leader_with(rm, [TP, TP1], 2, 5000)
    data = await rm.fetch_messages(consumer(max_bytes=2000), {TP: FetchPartition(0, 100), TP1: FetchPartition(0, MiB)})
    assert sizes(data[TP].records) == [size] and size > 5000
    assert data[TP1].records == b""


async def test_partition_max_bytes_bounds_each_partition(log_manager, clock):
    rm = make_rm(log_manager, clock)
    size = await leader_with(rm, [TP, TP1], 10, 200)
    data = await rm.fetch_messages(consumer(), {TP: FetchPartition(0, 3 * size), TP1: FetchPartition(0, size + 1)})
    assert sizes(data[TP].records) == [size] * 3
    assert sizes(data[TP1].records) == [size]


async def test_min_bytes_above_fetch_max_bytes_waits_only_for_fetch_max_bytes(log_manager, clock):
    """Kafka caps the bytes a fetch waits for at what it may return."""
    rm = make_rm(log_manager, clock, fetch_max_bytes=1024)
    size = await leader_with(rm, [TP], 2, 200)
    waiting = asyncio.ensure_future(rm.fetch_messages(consumer(min_bytes=MiB, max_wait_ms=60_000),
                                                      {TP: FetchPartition(0, MiB)}))
    await asyncio.sleep(0)
    assert not waiting.done()  # 2 batches < 1024 bytes
    for _ in range(1024 // size):
        await rm.append_records(1000, 1, {TP: batch(1, b"x" * 200)})
    data = await asyncio.wait_for(waiting, 5)  # answered long before max_wait_ms
    assert 1024 - size < len(data[TP].records) <= 1024


async def test_a_small_fetch_reads_little_of_a_large_log(log_manager, clock, monkeypatch):
    rm = make_rm(log_manager, clock, fetch_max_bytes=4096)
    await leader_with(rm, [TP], 4000, 500)  # ~2.3 MB in the log
    read: list[int] = []
    real_read = FileRecords.read

    def counting_read(self, position: int, size: int) -> bytes:
        data = real_read(self, position, size)
        read.append(len(data))
        return data

    monkeypatch.setattr(FileRecords, "read", counting_read)
    data = await rm.fetch_messages(consumer(), {TP: FetchPartition(1000, MiB)})
    assert 0 < len(data[TP].records) <= 4096
    # the window once to find its last whole batch, once to answer, and
    # batch headers from the nearest index entry
    assert sum(read) <= 2 * 4096 + 4096 + 64 * 20, read


def test_fetch_max_bytes_is_read_from_the_broker_config():
    from kavka.common.broker_config import KafkaConfig
    from kavka.replication.replica_manager import ReplicaManagerConfig

    config = KafkaConfig.from_props({"zookeeper.connect": "localhost:2181", "fetch.max.bytes": "4096"})
    assert ReplicaManagerConfig.from_broker(config).fetch_max_bytes == 4096
    assert ReplicaManagerConfig.from_broker(
        KafkaConfig.from_props({"zookeeper.connect": "localhost:2181"})).fetch_max_bytes == 55 * MiB
    with pytest.raises(ValueError, match="fetch.max.bytes"):
        ReplicaManagerConfig(fetch_max_bytes=100)
