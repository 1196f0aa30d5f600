"""KIP-112 in the replica manager (Kafka's ReplicaManager.handleLogDirFailure):
a write error in one of two log directories takes that directory's
partitions offline — produce, fetch, ListOffsets, LeaderAndIsr and
StopReplica answer KAFKA_STORAGE_ERROR, their fetchers stop — the other
directory's partitions keep serving, and the controller is told once by a
log dir event; the last directory failing halts the broker."""

from __future__ import annotations

import asyncio
import dataclasses
import errno
import os
from pathlib import Path

import pytest

from kavka.common.errors import ErrorCode, KafkaError
from kavka.common.topic_partition import TopicPartition
from kavka.replication.replica_manager import ReplicaManager, ReplicaManagerConfig
from kavka.replication.requests import FetchIsolation, FetchParams, FetchPartition
from kavka.replication.state import BrokerEndPoint
from kavka.storage.fetch_data_info import LATEST_TIMESTAMP
from kavka.storage.log_manager import LogManager
from kavka.storage.log_manager_config import LogManagerConfig

from .conftest import LAG_MS, TP, MemoryIsrZnodes, RecordingIsrListener, batch, log_config, state

LIVE = {b: BrokerEndPoint(b, "127.0.0.1", 9090 + b) for b in (1, 2, 3)}
TP1 = TopicPartition("orders", 1)
TP2 = TopicPartition("orders", 2)
WAIT = 20.0


class RecordingNotifier:
    def __init__(self, fail_first: int = 0) -> None:
        self.events: list[int] = []
        self.fail_first = fail_first

    async def log_dir_failed(self, broker_id: int) -> None:
        if self.fail_first:
            self.fail_first -= 1
            raise ConnectionError("zookeeper unreachable")
        self.events.append(broker_id)


@pytest.fixture
def two_dirs(tmp_path: Path, clock):
    a, b = (tmp_path / "disk-a").absolute(), (tmp_path / "disk-b").absolute()
    halts: list[int] = []
    manager = LogManager(LogManagerConfig(log_dirs=(str(a), str(b))), log_config(), clock=clock, halt=halts.append)
    yield manager, a, b, halts
    manager.shutdown()


def _rm(manager, clock, notifier) -> ReplicaManager:
    return ReplicaManager(1, manager, ReplicaManagerConfig(replica_lag_time_max_ms=LAG_MS),
                          isr_writer=MemoryIsrZnodes(), isr_change_listener=RecordingIsrListener(), clock=clock,
                          log_dir_event_notifier=notifier)


def _enospc_on(monkeypatch, path_part: str) -> None:
    real = os.pwritev

    def pwritev(fd, buffers, *args):
        if path_part in os.readlink(f"/proc/self/fd/{fd}"):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(fd, buffers, *args)

    monkeypatch.setattr(os, "pwritev", pwritev)


async def _until(predicate, what: str) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + WAIT
    while not predicate():
        assert loop.time() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.01)


def consumer() -> FetchParams:
    return FetchParams(-1, 0, 1, 1 << 20, FetchIsolation.HIGH_WATERMARK)


async def test_a_failed_directory_stops_serving_its_partitions_only(two_dirs, clock, monkeypatch):
    manager, a, b, halts = two_dirs
    notifier = RecordingNotifier()
    rm = _rm(manager, clock, notifier)
    # TP leads in disk-a, TP1 leads in disk-b, TP2 follows broker 2 in disk-a.
    r = rm.become_leader_or_follower(0, 1, [state(1, 0, (1,), (1, 2)), state(1, 0, (1,), (1, 2), tp=TP1),
                                            state(2, 0, (2, 1), tp=TP2)], LIVE)
    assert r.partition_errors == {TP: 0, TP1: 0, TP2: 0}
    assert [rm.get_partition(tp).log.dir.parent for tp in (TP, TP1, TP2)] == [a, b, a]
    assert TP2 in rm.fetcher_manager.partitions()
    rm.start()
    try:
        _enospc_on(monkeypatch, "disk-a")
        first = await rm.append_records(1000, 1, {TP: batch(2), TP1: batch(2)})
        monkeypatch.undo()
        assert first[TP].error is ErrorCode.KAFKA_STORAGE_ERROR and first[TP1].error is ErrorCode.NONE
        await _until(lambda: notifier.events, "the log dir event")
        assert notifier.events == [1]
        assert rm.offline_partitions() == [TP, TP2]
        assert rm.get_partition(TP) is None and TP2 not in rm.fetcher_manager.partitions()
        # Produce, fetch and ListOffsets answer KAFKA_STORAGE_ERROR for the offline partitions.
        again = await rm.append_records(1000, -1, {TP: batch(1), TP1: batch(1)})
        assert again[TP].error is ErrorCode.KAFKA_STORAGE_ERROR and "log directory is offline" in again[TP].error_message
        assert again[TP1].error is ErrorCode.NONE
        fetched = await rm.fetch_messages(consumer(), {TP: FetchPartition(0, 1 << 20), TP1: FetchPartition(0, 1 << 20)})
        assert fetched[TP].error is ErrorCode.KAFKA_STORAGE_ERROR and fetched[TP1].error is ErrorCode.NONE
        with pytest.raises(KafkaError) as e:
            rm.fetch_offset_for_timestamp(TP, LATEST_TIMESTAMP, None)
        assert e.value.code is ErrorCode.KAFKA_STORAGE_ERROR
        # The controller's LeaderAndIsr learns which replicas are offline.
        lai = rm.become_leader_or_follower(0, 1, [state(2, 1, (2,), (1, 2)), state(1, 1, (1,), (1, 2), tp=TP1),
                                                  state(1, 1, (1, 2), tp=TP2)], LIVE)
        assert lai.partition_errors == {TP: ErrorCode.KAFKA_STORAGE_ERROR, TP1: 0, TP2: ErrorCode.KAFKA_STORAGE_ERROR}
        assert rm.get_partition(TP) is None
        stop = rm.stop_replicas(0, 1, [TP], delete=False)
        assert stop.partition_errors == {TP: ErrorCode.KAFKA_STORAGE_ERROR}
        assert halts == [] and manager.live_log_dirs == [b]
        # A second error report of the same directory changes nothing.
        assert await rm.handle_log_dir_failure(a) == []
        assert notifier.events == [1]
    finally:
        await rm.shutdown()


async def test_the_event_is_written_again_while_zookeeper_refuses_it(two_dirs, clock, monkeypatch):
    manager, a, _b, _halts = two_dirs
    monkeypatch.setattr("kavka.replication.replica_manager._LOG_DIR_EVENT_RETRY_S", 0.01)
    notifier = RecordingNotifier(fail_first=2)
    rm = _rm(manager, clock, notifier)
    rm.become_leader_or_follower(0, 1, [state(1, 0, (1,))], LIVE)
    assert await rm.handle_log_dir_failure(a) == [TP]
    assert notifier.events == [1]
    await rm.shutdown()


async def test_the_last_directory_failing_halts_the_broker(tmp_path, clock):
    halts: list[int] = []
    only = (tmp_path / "only").absolute()
    manager = LogManager(LogManagerConfig(log_dirs=(str(only),)), log_config(), clock=clock, halt=halts.append)
    notifier = RecordingNotifier()
    rm = _rm(manager, clock, notifier)
    rm.become_leader_or_follower(0, 1, [state(1, 0, (1,))], LIVE)
    manager.failure_channel.maybe_add_offline_log_dir(only, "Error while appending", OSError(errno.EIO, "eio"))
    rm.start()
    try:
        await _until(lambda: halts, "the halt")
        assert halts == [1]
    finally:
        await rm.shutdown()
        manager.shutdown()


async def test_an_existing_replica_is_not_recreated_empty_while_a_directory_is_offline(tmp_path, clock):
    bad, good = (tmp_path / "bad").absolute(), (tmp_path / "good").absolute()
    bad.write_bytes(b"a failed disk's mount point")
    manager = LogManager(LogManagerConfig(log_dirs=(str(bad), str(good))), log_config(), clock=clock, halt=[].append)
    rm = _rm(manager, clock, RecordingNotifier())
    try:
        existing = state(1, 3, (1, 2), (1, 2))  # isNew false: the replica was hosted here before
        fresh = dataclasses.replace(state(1, 0, (1, 2), (1, 2), tp=TP1), is_new=True)
        r = rm.become_leader_or_follower(0, 1, [existing, fresh], LIVE)
        assert r.partition_errors == {TP: ErrorCode.KAFKA_STORAGE_ERROR, TP1: ErrorCode.NONE}
        assert rm.offline_partitions() == [TP] and rm.get_partition(TP1).log.dir.parent == good
        produced = await rm.append_records(1000, 1, {TP: batch(1)})
        assert produced[TP].error is ErrorCode.KAFKA_STORAGE_ERROR
    finally:
        await rm.shutdown()
        manager.shutdown()


async def test_a_waiting_acks_all_produce_answers_storage_error_when_its_directory_fails(two_dirs, clock):
    manager, a, _b, _halts = two_dirs
    rm = _rm(manager, clock, RecordingNotifier())
    rm.become_leader_or_follower(0, 1, [state(1, 0, (1, 2), (1, 2))], LIVE)  # a follower must acknowledge
    assert rm.get_partition(TP).log.dir.parent == a
    waiting = asyncio.ensure_future(rm.append_records(30_000, -1, {TP: batch(1)}))
    await asyncio.sleep(0)
    assert not waiting.done()
    await rm.handle_log_dir_failure(a)
    answered = await asyncio.wait_for(waiting, WAIT)
    assert answered[TP].error is ErrorCode.KAFKA_STORAGE_ERROR  # not acknowledged: the client retries elsewhere
    await rm.shutdown()
