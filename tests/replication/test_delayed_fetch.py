"""DelayedFetch against a real log: it completes when the bytes between the
fetch offset's position and the end it may read to (HW, LSO or LEO) reach
``min_bytes`` — counted from log positions, each partition at most its
``max_bytes`` — or at once on a truncation below the fetch offset or a
segment rolled past it; and a check reads nothing from the log."""

from __future__ import annotations

import asyncio

import pytest

from kavka.common.topic_partition import TopicPartition
from kavka.protocol.records.builder import SimpleRecord, build_batch
from kavka.protocol.records.control import ControlRecordType, build_control_batch
from kavka.replication.delayed_fetch import DelayedFetch, read_from_local_log
from kavka.replication.purgatory import DelayedOperationPurgatory
from kavka.replication.requests import FetchIsolation, FetchParams, FetchPartition
from kavka.storage.append_origin import AppendOrigin
from kavka.storage.file_records import FileRecords
from kavka.storage.log import Log

from .conftest import T0, TP, batch, log_config, make_partition, state

MiB = 1 << 20
ONE = batch(1, b"x" * 200)
SIZE = len(ONE)


def delayed(partition, isolation: FetchIsolation, fetch_offset: int, min_bytes: int, max_bytes: int = MiB,
            replica_id: int = -1) -> DelayedFetch:
    """A fetch parked as the replica manager parks one: read once, then
    waiting from where that read started."""
    params = FetchParams(replica_id, 30_000, min_bytes, 50 * MiB, isolation)
    partitions = {TP: FetchPartition(fetch_offset, max_bytes)}

    def read(some=partitions):
        return read_from_local_log(lambda tp: partition, lambda tp: None, params, some)

    first = read()
    future = asyncio.get_running_loop().create_future()
    return DelayedFetch(params, partitions, {TP: partition.leader_epoch}, lambda tp: partition, read, future,
                        start={tp: r.fetch_offset_metadata for tp, r in first.items()})


def leader(log, clock, replicas=(1,)):
    p = make_partition(log, clock)
    p.make_leader(state(1, 0, replicas))
    return p


async def test_completes_when_the_bytes_below_the_high_watermark_reach_min_bytes(log, clock):
    p = leader(log, clock)
    p.append_records_to_leader(ONE, required_acks=1)
    op = delayed(p, FetchIsolation.HIGH_WATERMARK, 1, min_bytes=3 * SIZE)
    assert not op.try_complete()
    p.append_records_to_leader(ONE, required_acks=1)
    p.append_records_to_leader(ONE, required_acks=1)
    assert log.high_watermark == 3 and not op.try_complete()  # 2 batches
    p.append_records_to_leader(ONE, required_acks=1)
    assert op.try_complete()
    answer = await op.future
    assert len(answer[TP].records) == 3 * SIZE


async def test_bytes_past_the_high_watermark_do_not_count(log, clock):
    p = leader(log, clock, replicas=(1, 2))  # the follower holds the HW back
    op = delayed(p, FetchIsolation.HIGH_WATERMARK, 0, min_bytes=SIZE)
    for _ in range(5):
        p.append_records_to_leader(ONE, required_acks=1)
    assert log.log_end_offset == 5 and log.high_watermark == 0 and not op.try_complete()
    p.update_follower_fetch_state(2, 2, 0, clock.milliseconds(), 5)
    p.maybe_increment_hw()
    assert log.high_watermark == 2 and op.try_complete()
    assert len((await op.future)[TP].records) == 2 * SIZE


async def test_a_follower_counts_to_the_log_end(log, clock):
    p = leader(log, clock, replicas=(1, 2))
    op = delayed(p, FetchIsolation.LOG_END, 0, min_bytes=2 * SIZE, replica_id=2)
    p.append_records_to_leader(ONE, required_acks=1)
    assert not op.try_complete()
    p.append_records_to_leader(ONE, required_acks=1)
    assert op.try_complete()


async def test_each_partition_counts_at_most_its_max_bytes(log, clock):
    p = leader(log, clock)
    op = delayed(p, FetchIsolation.HIGH_WATERMARK, 0, min_bytes=2 * SIZE, max_bytes=SIZE)
    for _ in range(10):
        p.append_records_to_leader(ONE, required_acks=1)
    assert not op.try_complete()  # 10 batches there, but the partition may give one


async def test_read_committed_waits_for_the_last_stable_offset(log, clock):
    p = leader(log, clock)
    op = delayed(p, FetchIsolation.TXN_COMMITTED, 0, min_bytes=1)
    txn = build_batch([SimpleRecord(b"k", b"v", T0)], producer_id=7, producer_epoch=0, base_sequence=0,
                      is_transactional=True)
    p.append_records_to_leader(txn, required_acks=1)
    p.append_records_to_leader(ONE, required_acks=1)
    assert log.high_watermark == 2 and p.last_stable_offset() == 0 and not op.try_complete()
    p.append_records_to_leader(build_control_batch(ControlRecordType.COMMIT, 7, 0, 0, T0), required_acks=1,
                               origin=AppendOrigin.COORDINATOR)
    assert p.last_stable_offset() == 3 and op.try_complete()


async def test_a_truncation_below_the_fetch_offset_completes_it(log, clock):
    p = leader(log, clock, replicas=(1, 2))
    for _ in range(4):
        p.append_records_to_leader(ONE, required_acks=1)
    op = delayed(p, FetchIsolation.LOG_END, 4, min_bytes=MiB, replica_id=2)
    assert not op.try_complete()
    log.truncate_to(2)
    assert op.try_complete()


async def test_a_segment_rolled_past_the_fetch_offset_completes_it(log, clock):
    p = leader(log, clock)
    p.append_records_to_leader(ONE, required_acks=1)
    op = delayed(p, FetchIsolation.HIGH_WATERMARK, 1, min_bytes=MiB)
    log.roll()
    assert not op.try_complete()  # rolled, nothing new: the same offset on the new segment
    p.append_records_to_leader(ONE, required_acks=1)
    assert op.try_complete()  # the bytes are on a newer segment than the fetch offset


async def test_a_fetch_parked_at_the_high_watermark_with_a_lagging_follower(log, clock):
    """The read at the HW (below the LEO) knows no position; it is looked
    up once, and the HW's position is remembered by the log until it moves."""
    p = leader(log, clock, replicas=(1, 2))
    for _ in range(3):
        p.append_records_to_leader(ONE, required_acks=1)
    p.update_follower_fetch_state(2, 1, 0, clock.milliseconds(), 3)
    p.maybe_increment_hw()
    assert log.high_watermark == 1
    op = delayed(p, FetchIsolation.HIGH_WATERMARK, 1, min_bytes=2 * SIZE)
    assert not op.try_complete()
    p.update_follower_fetch_state(2, 3, 0, clock.milliseconds(), 3)
    p.maybe_increment_hw()
    assert op.try_complete()
    assert len((await op.future)[TP].records) == 2 * SIZE


@pytest.mark.parametrize("min_bytes", [2 * SIZE * 50, MiB])
async def test_a_check_reads_nothing_from_the_log(log: Log, clock, monkeypatch, min_bytes):
    """Kafka compares positions (O(1) per check); re-reading up to
    ``min_bytes`` at every append made each check cost what it waited for."""
    p = leader(log, clock)
    p.append_records_to_leader(ONE, required_acks=1)
    op = delayed(p, FetchIsolation.HIGH_WATERMARK, 1, min_bytes=min_bytes)
    reads: list[int] = []
    real_read = FileRecords.read
    monkeypatch.setattr(FileRecords, "read", lambda self, pos, size: reads.append(size) or real_read(self, pos, size))
    for _ in range(100):
        p.append_records_to_leader(ONE, required_acks=1)
        reads_before = len(reads)
        done = op.try_complete()
        assert len(reads) == reads_before or done, "a check read the log"
        if done:
            break
    assert op.future.done() == (min_bytes <= 100 * SIZE)


async def test_a_check_of_one_partition_recounts_that_partition_alone(tmp_path, clock):
    """A follower's fetch spans every partition its leader serves; the
    purgatory checks it once per partition that changed. Each check
    re-counts that partition (no double counting), the sum over partitions
    reaching ``min_bytes`` completes it, and the others are not looked at."""
    tps = [TopicPartition("orders", i) for i in range(3)]
    logs = [Log(tmp_path / f"orders-{i}", log_config(), clock=clock) for i in range(3)]
    try:
        parts = {tp: leader(log, clock, replicas=(1, 2)) for tp, log in zip(tps, logs, strict=True)}
        looked_up: list[TopicPartition] = []

        def get_partition(tp):
            looked_up.append(tp)
            return parts[tp]

        params = FetchParams(2, 30_000, 2 * SIZE, 50 * MiB, FetchIsolation.LOG_END)
        partitions = {tp: FetchPartition(0, MiB) for tp in tps}
        future = asyncio.get_running_loop().create_future()
        op = DelayedFetch(params, partitions, {tp: 0 for tp in tps}, get_partition,
                          lambda some: read_from_local_log(get_partition, lambda tp: None, params, some), future)
        purgatory: DelayedOperationPurgatory[TopicPartition] = DelayedOperationPurgatory("Fetch")
        assert not purgatory.try_complete_else_watch(op, tps)
        parts[tps[0]].append_records_to_leader(ONE, required_acks=1)
        looked_up.clear()
        assert purgatory.check_and_complete(tps[0]) == 0
        assert purgatory.check_and_complete(tps[0]) == 0  # counted once, however often checked
        assert looked_up == [tps[0], tps[0]]
        parts[tps[2]].append_records_to_leader(ONE, required_acks=1)
        assert purgatory.check_and_complete(tps[2]) == 1
        answer = await future
        assert [len(answer[tp].records) for tp in tps] == [SIZE, 0, SIZE]
    finally:
        for log in logs:
            log.close()


class ThreeLogs:
    """Three partitions led here (replicas 1, 2), a follower fetch over all of
    them parked as the replica manager parks one, and the reads it makes."""

    def __init__(self, tmp_path, clock, min_bytes: int = 1) -> None:
        self.tps = [TopicPartition("orders", i) for i in range(3)]
        self.logs = [Log(tmp_path / f"orders-{i}", log_config(), clock=clock) for i in range(3)]
        self.parts = {tp: leader(log, clock, replicas=(1, 2)) for tp, log in zip(self.tps, self.logs, strict=True)}
        self.params = FetchParams(2, 30_000, min_bytes, 50 * MiB, FetchIsolation.LOG_END)
        self.reads: list[list[TopicPartition]] = []

    def read(self, some):
        self.reads.append(list(some))
        return read_from_local_log(self.parts.get, lambda tp: None, self.params, some)

    def park(self, purgatory) -> DelayedFetch:
        partitions = {tp: FetchPartition(self.parts[tp].log.log_end_offset, MiB) for tp in self.tps}
        first = self.read(partitions)
        self.reads.clear()
        op = DelayedFetch(self.params, partitions, {tp: 0 for tp in self.tps}, self.parts.get, self.read,
                          asyncio.get_running_loop().create_future(),
                          start={tp: r.fetch_offset_metadata for tp, r in first.items()}, first=first)
        assert not purgatory.try_complete_else_watch(op, self.tps)
        return op

    def close(self) -> None:
        for log in self.logs:
            log.close()


async def test_an_idle_fetch_answers_at_its_timeout_without_reading_again(tmp_path, clock):
    """A follower's fetch of every partition it follows, parked with
    nothing to read, is answered from that first read when nothing changed:
    re-reading thousands of partitions each half second doubled an idle
    leader's work."""
    logs = ThreeLogs(tmp_path, clock)
    try:
        op = logs.park(DelayedOperationPurgatory("Fetch"))
        op.force_complete()  # what the timeout does
        answer = await op.future
        assert logs.reads == [] and [len(answer[tp].records) for tp in logs.tps] == [0, 0, 0]
    finally:
        logs.close()


async def test_the_answer_re_reads_the_partitions_that_changed_and_keeps_the_others(tmp_path, clock):
    logs = ThreeLogs(tmp_path, clock)
    try:
        purgatory: DelayedOperationPurgatory[TopicPartition] = DelayedOperationPurgatory("Fetch")
        op = logs.park(purgatory)
        logs.parts[logs.tps[1]].append_records_to_leader(ONE, required_acks=1)
        assert purgatory.check_and_complete(logs.tps[1]) == 1
        answer = await op.future
        assert logs.reads == [[logs.tps[1]]]
        assert [len(answer[tp].records) for tp in logs.tps] == [0, SIZE, 0]
        assert list(answer) == logs.tps  # request order
    finally:
        logs.close()


async def test_a_fetch_parked_with_some_bytes_re_reads_every_partition(tmp_path, clock):
    logs = ThreeLogs(tmp_path, clock, min_bytes=3 * SIZE)
    try:
        partitions = {tp: FetchPartition(0, MiB) for tp in logs.tps}
        logs.parts[logs.tps[0]].append_records_to_leader(ONE, required_acks=1)
        first = logs.read(partitions)
        logs.reads.clear()
        op = DelayedFetch(logs.params, partitions, {tp: 0 for tp in logs.tps}, logs.parts.get, logs.read,
                          asyncio.get_running_loop().create_future(),
                          start={tp: r.fetch_offset_metadata for tp, r in first.items()}, first=first)
        op.force_complete()
        await op.future
        assert logs.reads == [logs.tps]
    finally:
        logs.close()


async def test_a_read_at_the_log_end_reads_nothing_from_the_log(log, clock, monkeypatch):
    p = leader(log, clock, replicas=(1, 2))
    p.append_records_to_leader(ONE, required_acks=1)
    monkeypatch.setattr(Log, "read", lambda *a, **k: pytest.fail("read the log at its end"))
    result = p.read_records(1, MiB, FetchIsolation.LOG_END, replica_id=2, current_leader_epoch=0, last_fetched_epoch=0)
    assert result.records == b"" and result.high_watermark == 0 and result.leader_end_offset == 1
    assert result.fetch_offset_metadata == log.log_end_offset_metadata()
