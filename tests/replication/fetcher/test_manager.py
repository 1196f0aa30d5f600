"""The replica fetcher against in-process leaders (``harness``):
catching up and acks=-1 through running fetch tasks, fetcher bookkeeping
(num.replica.fetchers, idle fetchers, moves between leaders), errors and
back-off, OFFSET_OUT_OF_RANGE both ways, and the follower throttle."""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace

import pytest

from kavka.common.errors import ErrorCode
from kavka.common.topic_partition import TopicPartition
from kavka.replication.fetcher.assignments import FetcherKey
from kavka.replication.fetcher.state import FetchPhase
from kavka.replication.quota import UNLIMITED_RATE

from ..conftest import TP, batch, state
from .harness import Cluster


async def eventually(predicate) -> None:
    """Until ``predicate()`` holds; fails after 10 s."""
    deadline = time.monotonic() + 10.0
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached in time"
        await asyncio.sleep(0.01)


async def test_running_fetchers_catch_up_and_complete_acks_all(tmp_path, clock):
    c = Cluster(tmp_path, clock, (1, 2, 3), wait_max_ms=100, autostart=True, now=time.monotonic)
    other = TopicPartition("orders", 1)
    c.leader_and_isr([state(1, 0, (1, 2, 3)), state(2, 0, (2, 1, 3), tp=other)])
    for _ in range(20):
        answer = await asyncio.wait_for(c[1].rm.append_records(30_000, -1, {TP: batch(5)}), 10)
        assert answer[TP].error is ErrorCode.NONE
        await c[2].rm.append_records(30_000, 1, {other: batch(2)})
    await eventually(lambda: all(c[i].log(other).log_end_offset == 40 for i in (1, 3)))
    assert c[1].batches(TP) == c[2].batches(TP) == c[3].batches(TP)
    assert len(c[1].batches(TP)) == 20
    await eventually(lambda: all(c[i].log(TP).high_watermark == 100 for i in (2, 3)))
    assert c[1].batches(other) == c[2].batches(other) == c[3].batches(other)
    # broker 3 follows two leaders: one fetcher for each
    assert {k.broker_id for k in c[3].fetchers.runners()} == {1, 2}
    await c.close()


async def test_partitions_spread_over_num_replica_fetchers_and_idle_fetchers_stop(tmp_path, clock):
    c = Cluster(tmp_path, clock, (1, 2), num_fetchers=3)
    tps = [TopicPartition("t", p) for p in range(12)]
    c.leader_and_isr([state(1, 0, (1, 2), tp=tp) for tp in tps])
    runners = c[2].fetchers.runners()
    assert set(runners) <= {FetcherKey(1, f) for f in range(3)} and len(runners) > 1
    assert sum(r.partition_count() for r in runners.values()) == 12
    for tp in tps:
        assert c[2].runner(tp) is runners[c[2].fetchers.key_for(tp, 1)]
    # Broker 2 takes over every partition: it stops fetching them and the fetchers go.
    c.leader_and_isr([state(2, 1, (2, 1), tp=tp, zk_version=0) for tp in tps], to=[2])
    assert c[2].fetchers.runners() == {} and c[2].fetchers.partitions() == {}
    await c.close()


async def test_a_live_num_replica_fetchers_change_respreads_partitions_keeping_their_progress(tmp_path, clock):
    """Kafka's resizeThreadPool: the partitions leave their fetchers with
    their progress and are spread by hash over the new count."""
    c = Cluster(tmp_path, clock, (1, 2), num_fetchers=1)
    tps = [TopicPartition("t", p) for p in range(12)]
    c.leader_and_isr([state(1, 0, (1, 2), tp=tp) for tp in tps])
    assert set(c[2].fetchers.runners()) == {FetcherKey(1, 0)}
    progress = {tp: c[2].runner(tp).fetch_state(tp) for tp in tps}
    c[2].fetchers.resize_thread_pool(4)
    runners = c[2].fetchers.runners()
    assert c[2].fetchers.num_fetchers == 4 and len(runners) > 1
    assert set(runners) <= {FetcherKey(1, f) for f in range(4)}
    assert sum(r.partition_count() for r in runners.values()) == 12
    for tp in tps:
        assert c[2].runner(tp) is runners[c[2].fetchers.key_for(tp, 1)]
        assert c[2].runner(tp).fetch_state(tp) == progress[tp]
    c[2].fetchers.resize_thread_pool(1)
    assert set(c[2].fetchers.runners()) == {FetcherKey(1, 0)}
    assert c[2].fetchers.runners()[FetcherKey(1, 0)].partition_count() == 12
    with pytest.raises(ValueError, match="num.replica.fetchers"):
        c[2].fetchers.resize_thread_pool(0)
    await c.close()


async def test_follower_appends_unchanged_and_follows_hw_and_log_start(tmp_path, clock):
    c = Cluster(tmp_path, clock)
    c.leader_and_isr([state(1, 0, (1,), (1, 2))], to=[1])
    c.leader_and_isr([state(1, 0, (1,), (1, 2))], to=[2])
    for _ in range(4):
        await c[1].rm.append_records(30_000, 1, {TP: batch(3)})
    runner = c[2].runner(TP)
    assert runner.fetch_state(TP).phase is FetchPhase.TRUNCATING  # empty log: nothing to ask
    while await runner.run_once():
        if c[2].log(TP).log_end_offset == 12 and c[2].log(TP).high_watermark == 12:
            break
    assert c[2].batches(TP) == c[1].batches(TP)
    assert "OffsetsForLeaderEpoch" not in c[2].calls()  # no epoch recorded yet: nothing to check
    # DeleteRecords on the leader: the follower's log start follows.
    assert c[1].rm.delete_records({TP: 6})[TP].low_watermark == 6
    await runner.run_once()
    assert c[2].log(TP).log_start_offset == 6
    await c.close()


async def test_fencing_errors_back_off_until_the_next_leader_and_isr(tmp_path, clock):
    c = Cluster(tmp_path, clock, backoff_ms=1000)
    c.leader_and_isr([state(1, 0, (1, 2))])
    await c[1].rm.append_records(30_000, 1, {TP: batch(2)})
    # The leader moves to epoch 1 (broker 2 has not heard): FENCED_LEADER_EPOCH.
    c.znodes.versions[TP] = 1
    c.leader_and_isr([state(1, 1, (1, 2), zk_version=1)], to=[1])
    runner = c[2].runner(TP)
    assert await runner.run_once()
    st = runner.fetch_state(TP)
    assert st.delayed_until > c.now() and c[2].log(TP).log_end_offset == 0
    assert not await runner.run_once()  # backing off: nothing sent
    clock.advance(1000)
    assert await runner.run_once()  # retried, fenced again
    assert runner.fetch_state(TP).delayed_until > c.now()
    # Broker 2 learns of epoch 1: a fresh state, fetched at once.
    c.leader_and_isr([state(1, 1, (1, 2), zk_version=1)], to=[2])
    runner = c[2].runner(TP)
    while c[2].log(TP).log_end_offset < 2:
        assert await runner.run_once()
    assert c[2].batches(TP) == c[1].batches(TP)
    await c.close()


async def test_unreachable_leader_backs_off_and_reconnects(tmp_path, clock):
    c = Cluster(tmp_path, clock, wait_max_ms=20, autostart=True, now=time.monotonic, backoff_ms=30)
    c[1].reachable = False
    c.leader_and_isr([state(1, 0, (1, 2))])
    await c[1].rm.append_records(30_000, 1, {TP: batch(4)})
    await asyncio.sleep(0.2)
    assert c[2].log(TP).log_end_offset == 0
    c[1].reachable = True
    await eventually(lambda: c[2].log(TP).log_end_offset == 4)
    assert c[2].fetchers.runner_for(TP)._task is not None and not c[2].fetchers.runner_for(TP)._task.done()
    await c.close()


@pytest.mark.parametrize("start", [8, 7])
async def test_out_of_range_below_the_leaders_log_start_starts_over_there(tmp_path, clock, start):
    """DeleteRecords moved the leader's log start past our log end; 7 is
    inside the batch 6-7: the follower starts at that batch, then follows
    the leader's log start."""

    c = Cluster(tmp_path, clock)
    c.leader_and_isr([state(1, 0, (1,), (1, 2))], to=[1])
    for _ in range(5):
        await c[1].rm.append_records(30_000, 1, {TP: batch(2)})
    c[1].rm.delete_records({TP: start})
    c.leader_and_isr([state(1, 0, (1,), (1, 2))], to=[2])
    runner = c[2].runner(TP)
    for _ in range(4):
        await runner.run_once()
    log = c[2].log(TP)
    assert (log.log_start_offset, log.log_end_offset) == (start, 10)
    assert c[2].batches(TP) == c[1].batches(TP)
    assert c[2].calls().count("ListOffsets") == 2  # latest, then earliest
    await c.close()


async def test_out_of_range_past_the_leaders_end_truncates_to_it(tmp_path, clock):
    """An unclean leader with less data than us (hw mode, so no epoch check
    catches it first): OFFSET_OUT_OF_RANGE, then truncate to its log end."""

    c = Cluster(tmp_path, clock, (1, 2, 3), mode="hw")
    c.leader_and_isr([state(2, 0, (2,), (2, 1, 3))])
    await c[2].rm.append_records(30_000, 1, {TP: batch(1)})
    while c[3].log(TP).log_end_offset < 1:
        await c[3].runner(TP).run_once()
    for _ in range(2):
        await c[2].rm.append_records(30_000, 1, {TP: batch(1)})
    while c[1].log(TP).high_watermark < 3:
        await c[1].runner(TP).run_once()
    # Broker 2 dies; broker 3, out of the ISR with one record, leads (unclean election).
    c[2].reachable = False
    c.znodes.versions[TP] = 1
    c.leader_and_isr([state(3, 1, (3,), (2, 1, 3), zk_version=1)], to=[3, 1])
    assert c[1].log(TP).log_end_offset == 3  # hw mode: truncated to its HW, 3
    runner = c[1].runner(TP)
    await runner.run_once()
    assert c[1].log(TP).log_end_offset == 1
    assert c[1].calls()[-2:] == ["Fetch", "ListOffsets"]
    await c[3].rm.append_records(30_000, 1, {TP: batch(1, b"after")})
    await runner.run_once()
    assert c[1].batches(TP) == c[3].batches(TP)
    await c.close()


async def test_follower_throttle_leaves_lagging_throttled_replicas_out_while_over_quota(tmp_path, clock):
    """seed 002 §8: follower.replication.throttled.rate over the replicas named
    in follower.replication.throttled.replicas; unthrottled partitions go on."""

    slow, fast = TopicPartition("moving", 0), TopicPartition("steady", 0)
    c = Cluster(tmp_path, clock, throttled=lambda tp: tp.topic == "moving", throttled_rate=1000)
    c.leader_and_isr([state(1, 0, (1,), (1, 2), tp=slow), state(1, 0, (1,), (1, 2), tp=fast)])
    for _ in range(4):
        await c[1].rm.append_records(30_000, 1, {slow: batch(10, b"x" * 200), fast: batch(1)})
    c.fetcher_config = replace(c.fetcher_config, fetch_max_bytes=1)  # one batch per partition per fetch
    runner = c[2].runner(slow)
    assert runner is c[2].runner(fast)
    await runner.run_once()  # first fetch of each: the quota is spent at once
    assert c[2].log(slow).log_end_offset == 10 and c[2].fetchers.quota.exceeded(c.now())
    for _ in range(5):  # a response gives one partition more than max bytes (KIP-74): one at a time
        await runner.run_once()
    assert c[2].log(slow).log_end_offset == 10 and c[2].log(fast).log_end_offset == 4
    clock.advance(int(c[2].fetchers.quota.seconds_until_available(c.now()) * 1000) + 1)
    await runner.run_once()
    assert c[2].log(slow).log_end_offset == 20
    # The rate is dynamic: lifting it lets the replica catch up at once.
    c.fetcher_config = replace(c.fetcher_config, fetch_max_bytes=1 << 20, throttled_rate=UNLIMITED_RATE)
    for _ in range(3):
        await runner.run_once()
    assert c[2].batches(slow) == c[1].batches(slow)
    await c.close()


async def test_partitions_take_turns_at_the_front_of_the_fetch(tmp_path, clock):
    """Only the first partition with data may exceed the byte limits
    (KIP-74); fetched partitions move to the back so none starves."""

    tps = [TopicPartition("turns", p) for p in range(3)]
    c = Cluster(tmp_path, clock)
    c.fetcher_config = replace(c.fetcher_config, fetch_max_bytes=1)
    c.leader_and_isr([state(1, 0, (1,), (1, 2), tp=tp) for tp in tps])
    for _ in range(2):
        await c[1].rm.append_records(30_000, 1, {tp: batch(2) for tp in tps})
    runner = c[2].runner(tps[0])
    for _ in range(3):
        await runner.run_once()
    assert [c[2].log(tp).log_end_offset for tp in tps] == [2, 2, 2]
    for _ in range(3):
        await runner.run_once()
    assert [c[2].batches(tp) for tp in tps] == [c[1].batches(tp) for tp in tps]
    await c.close()


async def test_an_idle_fetcher_wakes_for_new_partitions(tmp_path, clock):
    """A fetcher whose only partition backs off (fenced) sleeps for the
    back-off; a partition added meanwhile is fetched without waiting it out."""

    c = Cluster(tmp_path, clock, wait_max_ms=20, autostart=True, now=time.monotonic, backoff_ms=60_000)
    other = TopicPartition("orders", 1)
    c.leader_and_isr([state(1, 0, (1, 2))])
    c.znodes.versions[TP] = 1
    c.leader_and_isr([state(1, 1, (1, 2), zk_version=1)], to=[1])  # broker 2 is now fenced on TP
    await eventually(lambda: c[2].runner(TP).fetch_state(TP).delayed_until > time.monotonic())
    await asyncio.sleep(0.05)  # the fetcher is asleep
    c.leader_and_isr([state(1, 0, (1, 2), tp=other)])
    await c[1].rm.append_records(30_000, 1, {other: batch(3)})
    await eventually(lambda: c[2].log(other).log_end_offset == 3)
    await c.close()
