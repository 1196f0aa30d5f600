"""Replication throttling (seed 002 §8, KIP-73), ``kavka.replication.quota``:
the ``ReplicationQuota`` token bucket both sides use, the throttled-replicas
settings parsed and validated as topic configs, ``LeaderReplicationQuota``'s rule (throttled partition, quota
exceeded, follower out of the ISR), and the replica manager's fetch path
honouring it — immediate answers, delayed fetches, in-sync followers,
consumers and dynamic rate changes."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kavka.common.config import ConfigError
from kavka.common.errors import ErrorCode
from kavka.common.throttled_replicas import ThrottledReplicas
from kavka.common.topic_partition import TopicPartition
from kavka.replication.quota import UNLIMITED_RATE, LeaderReplicationQuota, ReplicationQuota, follower_throttled
from kavka.replication.replica_manager import ReplicaManager, ReplicaManagerConfig
from kavka.replication.requests import FetchIsolation, FetchParams, FetchPartition, FetchPartitionData
from kavka.replication.state import BrokerEndPoint
from kavka.storage.log_config import LogConfig

from .conftest import LAG_MS, REPLICATION_SETTINGS, TP, MemoryIsrZnodes, RecordingIsrListener, batch, log_config, state

LIVE = {b: BrokerEndPoint(b, "127.0.0.1", 9090 + b) for b in (1, 2, 3)}
TP1 = TopicPartition("orders", 1)
LEADER = "leader.replication.throttled.replicas"
FOLLOWER = "follower.replication.throttled.replicas"
RATE = 1000  # bytes/s; one batch below is a little more than that
BIG = 1 << 20


def big_batch() -> bytes:
    return batch(5, b"v" * 200)


# ---- the topic configs -----------------------------------------------------------------------------
pairs = st.frozensets(st.tuples(st.integers(0, 10_000), st.integers(0, 10_000)), max_size=20)


@REPLICATION_SETTINGS
@given(pairs=pairs)
def test_throttled_replicas_round_trip_through_the_topic_config(pairs):
    text = ",".join(f"{p}:{b}" for p, b in sorted(pairs))
    config = LogConfig.from_props({LEADER: text, FOLLOWER: text})
    for parsed in (config.leader_throttled, config.follower_throttled):
        assert parsed == ThrottledReplicas(pairs=pairs)
        assert all(parsed.throttles(p, b) for p, b in pairs)
    assert LogConfig.from_props(config.to_props()) == config


def test_wildcard_and_empty_values():
    config = LogConfig.from_props({LEADER: "*", FOLLOWER: ""})
    assert config.leader_throttled.throttles(7, 3) and config.leader_throttled.all_replicas
    assert config.follower_throttled.empty and not config.follower_throttled.throttles(0, 0)
    assert LogConfig().leader_throttled.empty  # the default throttles nothing
    assert ThrottledReplicas.parse(" 0:1 , 2:3 ") == ThrottledReplicas(pairs=frozenset({(0, 1), (2, 3)}))


@pytest.mark.parametrize("bad", ["0-1", "0:", ":1", "a:1", "0:1:2", "*,0:1", "-1:2", "٣:1"])
def test_bad_values_are_refused_naming_the_key_and_entry(bad):
    with pytest.raises(ConfigError) as e:
        LogConfig.from_props({LEADER: bad})
    message = str(e.value)
    assert LEADER in message and ("partition:broker" in message or "stand alone" in message)
    with pytest.raises(ValueError):
        ThrottledReplicas.parse(bad)


# ---- the token bucket ----------------------------------------------------------------------------------
def test_throttled_replicas_parse():
    assert ThrottledReplicas.parse("*").throttles(3, 9)
    t = ThrottledReplicas.parse(" 0:1, 2:3 ")
    assert t.throttles(0, 1) and t.throttles(2, 3) and not t.throttles(0, 3)
    assert not ThrottledReplicas.parse(None).throttles(0, 1)
    assert not ThrottledReplicas.parse("").throttles(0, 1)
    with pytest.raises(ValueError, match="partition:broker"):
        ThrottledReplicas.parse("0-1")


def test_quota_unlimited_never_exceeds():
    q = ReplicationQuota(UNLIMITED_RATE)
    q.record(1 << 40, 0.0)
    assert not q.exceeded(0.0) and q.seconds_until_available(0.0) == 0.0


@REPLICATION_SETTINGS
@given(rate=st.integers(1, 10_000), events=st.lists(st.tuples(st.floats(0, 3), st.integers(0, 50_000)), max_size=30))
def test_quota_admits_at_most_rate_per_second_plus_one_burst(rate, events):
    """Bytes recorded while not exceeded never outrun rate * elapsed + burst
    + the last admitted fetch (a fetch is admitted whole, as in Kafka)."""
    q = ReplicationQuota(rate, 0.0)
    now, admitted, biggest = 0.0, 0, 0
    for dt, size in events:
        now += dt
        if not q.exceeded(now):
            q.record(size, now)
            admitted += size
            biggest = max(biggest, size)
        assert admitted <= rate * now + rate + biggest
    wait = q.seconds_until_available(now)
    assert not q.exceeded(now + wait + 1e-6)


def test_quota_rate_change_applies_at_once():
    q = ReplicationQuota(1000, 0.0)
    q.record(3000, 0.0)
    assert q.exceeded(1.0) and not q.exceeded(2.01)
    q.set_rate(UNLIMITED_RATE, 2.5)
    q.record(10**9, 2.5)
    assert not q.exceeded(2.5)


# ---- the quota's rule, on its own --------------------------------------------------------------------
def fake_partition(partition: int, isr: tuple[int, ...], leader_list: str, follower_list: str = ""):
    config = LogConfig.from_props({LEADER: leader_list, FOLLOWER: follower_list})
    return SimpleNamespace(topic_partition=TopicPartition("t", partition), isr=isr, log=SimpleNamespace(config=config))


def test_should_throttle_needs_a_rate_a_listed_replica_an_exceeded_quota_and_an_out_of_sync_follower():
    now = [0.0]
    rate = [UNLIMITED_RATE]
    quota = LeaderReplicationQuota(1, lambda: rate[0], lambda: now[0])
    listed = fake_partition(0, (1, 3), "0:1")
    other_broker = fake_partition(0, (1, 3), "0:2")  # names a different leader broker
    data = {listed.topic_partition: FetchPartitionData(ErrorCode.NONE, records=b"x" * 5000)}
    get = {listed.topic_partition: listed}.get

    assert not quota.active and quota.record(data, get) == 0  # unlimited: nothing recorded
    rate[0] = RATE
    assert quota.active and not quota.should_throttle(listed, 2)  # a full bucket
    assert quota.record(data, get) == 5000
    assert quota.should_throttle(listed, 2)  # out of the ISR, exceeded
    assert not quota.should_throttle(listed, 3)  # in the ISR: never held back
    assert not quota.should_throttle(other_broker, 2)
    now[0] += 3.5  # 3500 of the 4000 tokens owed are back
    assert quota.should_throttle(listed, 2)
    now[0] += 1.0
    assert not quota.should_throttle(listed, 2)
    quota.record(data, get)
    rate[0] = UNLIMITED_RATE  # dynamic config removed: effective at once
    assert not quota.should_throttle(listed, 2)


@REPLICATION_SETTINGS
@given(
    rate=st.integers(1, 50_000),
    steps=st.lists(st.tuples(st.floats(0, 2), st.integers(1, 40_000), st.booleans()), min_size=1, max_size=40),
)
def test_bytes_served_to_an_out_of_sync_follower_stay_within_the_rate(rate, steps):
    """Whatever the fetch sizes and spacing, the bytes a throttled,
    out-of-sync follower receives never exceed rate * elapsed + one second
    of burst + the last response admitted whole (Kafka admits whole
    responses too); in-sync fetches of the partition count against it."""
    now = [0.0]
    quota = LeaderReplicationQuota(1, lambda: rate, lambda: now[0])
    p = fake_partition(0, (1, 3), "*")
    get = {p.topic_partition: p}.get
    served = 0
    largest = 0
    for dt, size, from_isr in steps:
        now[0] += dt
        replica = 3 if from_isr else 2
        if quota.should_throttle(p, replica):
            continue
        quota.record({p.topic_partition: FetchPartitionData(ErrorCode.NONE, records=b"r" * size)}, get)
        served += size
        largest = max(largest, size)
        assert served <= rate * now[0] + rate + largest or from_isr
    assert quota.recorded_bytes == served


def test_follower_throttled_reads_the_follower_list_for_this_broker():
    p = fake_partition(0, (1,), "", "0:2,1:3")
    parts = {TP: p}
    assert follower_throttled(2, parts.get)(TP) and not follower_throttled(3, parts.get)(TP)
    assert not follower_throttled(2, parts.get)(TP1)  # not hosted here


# ---- the replica manager's fetch path -----------------------------------------------------------------
def make_rm(log_manager, clock, rate: list[int]) -> ReplicaManager:
    return ReplicaManager(
        1, log_manager, ReplicaManagerConfig(replica_lag_time_max_ms=LAG_MS),
        isr_writer=MemoryIsrZnodes(), isr_change_listener=RecordingIsrListener(), clock=clock,
        leader_quota=LeaderReplicationQuota(1, lambda: rate[0], lambda: clock.milliseconds() / 1000),
    )


def follower(replica_id: int, max_wait_ms: int = 0) -> FetchParams:
    return FetchParams(replica_id, max_wait_ms, 1, BIG, FetchIsolation.LOG_END)


def lead_throttled(rm, log_manager, leader_list: str = "0:1") -> None:
    """Broker 1 leads orders-0 and orders-1 (replicas 1, 2, 3; ISR 1, 3)
    with 4 big batches in each, all of them replicated to broker 3 (so the
    HW is at the end and broker 2, at 0, is not caught up); the leader list
    as given."""
    rm.become_leader_or_follower(0, 1, [state(1, 0, (1, 3), (1, 2, 3)), state(1, 0, (1, 3), (1, 2, 3), tp=TP1)], LIVE)
    log_manager.update_topic_config("orders", log_config(**{LEADER: leader_list}))
    for tp in (TP, TP1):
        p = rm.get_partition(tp)
        for _ in range(4):
            p.append_records_to_leader(big_batch(), 1)
        end = p.log.log_end_offset
        p.update_follower_fetch_state(3, end, 0, rm.clock.milliseconds(), end)
        assert p.maybe_increment_hw() and p.log.high_watermark == end


def one_batch(offset: int) -> FetchPartition:
    return FetchPartition(offset, 100)  # smaller than a batch: exactly one batch (KIP-74)


async def test_out_of_sync_follower_gets_offsets_but_no_records_while_exceeded(log_manager, clock):
    rate = [RATE]
    rm = make_rm(log_manager, clock, rate)
    lead_throttled(rm, log_manager)
    size = len(big_batch())
    first = await rm.fetch_messages(follower(2), {TP: one_batch(0)})
    assert len(first[TP].records) == size and rm.leader_quota.recorded_bytes == size
    held = await rm.fetch_messages(follower(2), {TP: one_batch(5), TP1: one_batch(0)})
    assert held[TP].error is ErrorCode.NONE and held[TP].records == b""
    assert held[TP].high_watermark == first[TP].high_watermark and held[TP].log_start_offset == 0
    # The unthrottled partition is served as usual (and its one batch may
    # exceed the limits: the held-back partition took none of them, KIP-74).
    assert len(held[TP1].records) == size
    assert rm.leader_quota.recorded_bytes == size  # orders-1 is not throttled on broker 1
    assert rm.get_partition(TP).replica(2).log_end_offset == 5  # its fetch offset still counts
    # In sync, a consumer: never held back.
    assert len((await rm.fetch_messages(follower(3), {TP: one_batch(0)}))[TP].records) == size
    consumer = FetchParams(-1, 0, 1, BIG, FetchIsolation.LOG_END)
    assert len((await rm.fetch_messages(consumer, {TP: one_batch(0)}))[TP].records) == size
    # The bucket refills at RATE: a second and a half later the follower is served again.
    clock.advance(1500)
    assert len((await rm.fetch_messages(follower(2), {TP: one_batch(5)}))[TP].records) == size
    # The rate removed (dynamic broker config): served at once.
    assert (await rm.fetch_messages(follower(2), {TP: one_batch(10)}))[TP].records == b""
    rate[0] = UNLIMITED_RATE
    assert len((await rm.fetch_messages(follower(2), {TP: one_batch(10)}))[TP].records) == size


async def test_held_back_bytes_leave_the_request_budget_to_other_partitions(log_manager, clock):
    rm = make_rm(log_manager, clock, [RATE])
    lead_throttled(rm, log_manager)
    await rm.fetch_messages(follower(2), {TP: one_batch(0)})  # exceed the quota
    size = len(big_batch())
    params = FetchParams(2, 0, 1, size, FetchIsolation.LOG_END)  # room for one batch in all
    answer = await rm.fetch_messages(params, {TP: FetchPartition(5, BIG), TP1: FetchPartition(0, BIG)})
    assert answer[TP].records == b"" and len(answer[TP1].records) == size


async def test_leader_list_naming_another_broker_does_not_throttle_here(log_manager, clock):
    rm = make_rm(log_manager, clock, [1])
    lead_throttled(rm, log_manager, "0:2,1:3")
    for offset in (0, 5, 10):
        assert (await rm.fetch_messages(follower(2), {TP: one_batch(offset)}))[TP].records != b""
    assert rm.leader_quota.recorded_bytes == 0


async def test_delayed_follower_fetch_is_not_completed_by_held_back_bytes(log_manager, clock):
    rm = make_rm(log_manager, clock, [RATE])
    lead_throttled(rm, log_manager, "*")
    await rm.fetch_messages(follower(2), {TP: one_batch(0)})
    waiting = asyncio.ensure_future(rm.fetch_messages(follower(2, max_wait_ms=50), {TP: one_batch(5)}))
    await asyncio.sleep(0)
    assert not waiting.done() and rm.fetch_purgatory.delayed == 1
    await rm.append_records(1000, 1, {TP: big_batch()})  # new data: still nothing it may have
    await asyncio.sleep(0)
    assert not waiting.done()
    answer = await asyncio.wait_for(waiting, 5)  # answered at its max wait, empty
    assert answer[TP].error is ErrorCode.NONE and answer[TP].records == b""
    # An in-sync follower's delayed fetch completes on the append as usual.
    end = rm.get_partition(TP).log.log_end_offset
    waiting = asyncio.ensure_future(rm.fetch_messages(follower(3, max_wait_ms=30_000), {TP: one_batch(end)}))
    await asyncio.sleep(0)
    await rm.append_records(1000, 1, {TP: big_batch()})
    assert (await asyncio.wait_for(waiting, 5))[TP].records != b""
