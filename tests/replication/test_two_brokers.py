"""Two replica managers (brokers 1 and 2) with a follower loop written by
hand — the calls the follower fetcher makes — to show the leader side end
to end: acks=-1 completes through a real follower log, and after a
leadership change the old leader truncates by leader epoch (KIP-101) and
the logs end identical."""

from __future__ import annotations

import asyncio
from pathlib import Path

from kavka.common.errors import ErrorCode
from kavka.protocol.records.batch import iter_batches
from kavka.replication.replica_manager import ReplicaManager, ReplicaManagerConfig
from kavka.replication.requests import FetchIsolation, FetchParams, FetchPartition
from kavka.replication.state import BrokerEndPoint
from kavka.storage.log_manager import LogManager
from kavka.storage.log_manager_config import LogManagerConfig

from .conftest import LAG_MS, TP, MemoryIsrZnodes, RecordingIsrListener, batch, log_config, state

LIVE = {b: BrokerEndPoint(b, "127.0.0.1", 9090 + b) for b in (1, 2)}


def broker(broker_id: int, root: Path, clock, znodes: MemoryIsrZnodes) -> ReplicaManager:
    manager = LogManager(LogManagerConfig(log_dirs=(str(root / f"b{broker_id}"),)), log_config(), clock=clock)
    return ReplicaManager(
        broker_id,
        manager,
        ReplicaManagerConfig(replica_lag_time_max_ms=LAG_MS),
        isr_writer=znodes,
        isr_change_listener=RecordingIsrListener(),
        clock=clock,
    )


async def replicate_once(follower: ReplicaManager, leader: ReplicaManager) -> int:
    """One fetch round of ``follower`` from ``leader``; returns bytes appended."""
    p = follower.get_partition(TP)
    params = FetchParams(follower.broker_id, 0, 1, 1 << 20, FetchIsolation.LOG_END)
    req = FetchPartition(p.log.log_end_offset, 1 << 20, p.leader_epoch, log_start_offset=p.log.log_start_offset)
    data = (await leader.fetch_messages(params, {TP: req}))[TP]
    assert data.error is ErrorCode.NONE, data
    if data.records:
        p.append_records_to_follower(data.records)
    p.update_follower_high_watermark(data.high_watermark)
    return len(data.records)


def batches(rm: ReplicaManager) -> list[tuple[int, int, int]]:
    log = rm.get_partition(TP).log
    return [(h.base_offset, h.partition_leader_epoch, h.crc) for _, h in iter_batches(log.read(0, 1 << 24).records)]


async def test_acks_all_and_epoch_truncation_across_two_brokers(tmp_path, clock):
    znodes = MemoryIsrZnodes()
    b1, b2 = broker(1, tmp_path, clock, znodes), broker(2, tmp_path, clock, znodes)
    b1.become_leader_or_follower(0, 1, [state(1, 0, (1, 2))], LIVE)
    b2.become_leader_or_follower(0, 1, [state(1, 0, (1, 2))], LIVE)
    assert b2.fetcher_manager.fetch_state(TP).leader == LIVE[1]

    produce = asyncio.ensure_future(b1.append_records(30_000, -1, {TP: batch(3)}))
    await asyncio.sleep(0)
    await replicate_once(b2, b1)  # copies offsets 0-2
    assert not produce.done()
    await replicate_once(b2, b1)  # tells the leader it has them: HW 3
    assert (await asyncio.wait_for(produce, 5))[TP].error is ErrorCode.NONE
    await replicate_once(b2, b1)
    assert b2.get_partition(TP).log.high_watermark == 3

    # Broker 1 appends two more that broker 2 never copies, then loses leadership.
    await b1.append_records(30_000, 1, {TP: batch(2)})
    znodes.versions[TP] = 1  # the controller's write of leader 2, epoch 1
    b2.become_leader_or_follower(0, 2, [state(2, 1, (2,), (1, 2), zk_version=1)], LIVE)
    await b2.append_records(30_000, 1, {TP: batch(1, b"new leader")})
    b1.become_leader_or_follower(0, 2, [state(2, 1, (2,), (1, 2), zk_version=1)], LIVE)
    fetch_state = b1.fetcher_manager.fetch_state(TP)
    assert fetch_state.leader == LIVE[2] and fetch_state.truncate_first

    # The follower asks for the end of its latest epoch (0) and truncates there.
    old = b1.get_partition(TP)
    epoch = old.log.leader_epoch_cache.latest_epoch()
    answer = b2.last_offset_for_leader_epoch(TP, 1, epoch)
    assert (answer.epoch, answer.end_offset) == (0, 3)
    old.log.truncate_to(min(answer.end_offset, old.log.log_end_offset))
    while await replicate_once(b1, b2):
        pass
    assert batches(b1) == batches(b2)
    assert [e for _, e, _ in batches(b1)] == [0, 1]
    await b2.isr_updates.drain()  # broker 1 caught up: the leader added it back
    assert b2.get_partition(TP).isr == (2, 1) and znodes.versions[TP] == 2

    # Fetch v12: a follower still holding the stale tail is told where it diverged.
    stale = FetchPartition(5, 1 << 20, 1, last_fetched_epoch=0)
    params = FetchParams(1, 0, 1, 1 << 20, FetchIsolation.LOG_END)
    diverged = (await b2.fetch_messages(params, {TP: stale}))[TP]
    assert diverged.diverging_epoch is not None and diverged.diverging_epoch.end_offset == 3

    for rm in (b1, b2):
        await rm.shutdown()
        rm.log_manager.shutdown()
