"""Fetch from follower (KIP-392) in the replica manager: the leader's
replica selector answers ``preferred_read_replica`` instead of reading,
only naming in-sync followers that hold the fetch offset and are alive on
the client's listener; a follower serves a v11+ consumer below its own
high watermark, waits in its purgatory until its fetcher moves the high
watermark, and refuses or empties what Kafka does. The selectors
themselves: Kafka's RackAwareReplicaSelector and LeaderSelector, and
``replica.selector.class`` refusing unknown names."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kavka.common.broker_config import KafkaConfig
from kavka.common.config import ConfigError
from kavka.common.errors import ErrorCode
from kavka.protocol.records.batch import iter_batches
from kavka.replication.replica_manager import ReplicaManager, ReplicaManagerConfig
from kavka.replication.replica_selector import (
    ClientMetadata,
    LeaderSelector,
    PartitionView,
    RackAwareReplicaSelector,
    ReplicaView,
    replica_selector,
)
from kavka.replication.requests import FetchIsolation, FetchParams, FetchPartition
from kavka.replication.state import BrokerEndPoint

from .conftest import LAG_MS, TP, MemoryIsrZnodes, RecordingIsrListener, batch, state

LIVE = {b: BrokerEndPoint(b, "127.0.0.1", 9090 + b) for b in (1, 2, 3)}
RACKS = {1: "r1", 2: "r2", 3: "r3"}
RACK_AWARE = RackAwareReplicaSelector()


def make_rm(log_manager, clock, broker_id=1, selector=RACK_AWARE, alive=(1, 2, 3)) -> ReplicaManager:
    return ReplicaManager(
        broker_id, log_manager, ReplicaManagerConfig(replica_lag_time_max_ms=LAG_MS),
        isr_writer=MemoryIsrZnodes(), isr_change_listener=RecordingIsrListener(), clock=clock,
        replica_selector=selector,
        replica_rack=lambda b, listener: (b in alive and listener == "PLAINTEXT", RACKS.get(b)))


def consumer(rack: str | None, max_wait_ms: int = 0, isolation=FetchIsolation.HIGH_WATERMARK) -> FetchParams:
    client = None if rack is None else ClientMetadata(rack, "c", "127.0.0.1", "PLAINTEXT")
    return FetchParams(-1, max_wait_ms, 1, 1 << 20, isolation, client_metadata=client)


def follower(replica_id: int) -> FetchParams:
    return FetchParams(replica_id, 0, 1, 1 << 20, FetchIsolation.LOG_END)


async def leader_with_in_sync_followers(rm, clock, records=4):
    rm.become_leader_or_follower(0, 1, [state(1, 0, (1, 2, 3))], LIVE)
    await rm.append_records(1000, 1, {TP: batch(records)})
    for f in (2, 3):
        await rm.fetch_messages(follower(f), {TP: FetchPartition(records, 1 << 20)})
    assert rm.get_partition(TP).log.high_watermark == records


# ---- the leader's answer ----------------------------------------------------------------------------
async def test_leader_sends_a_racked_consumer_to_the_follower_in_its_rack(log_manager, clock):
    rm = make_rm(log_manager, clock)
    await leader_with_in_sync_followers(rm, clock)
    data = await rm.fetch_messages(consumer("r2"), {TP: FetchPartition(0, 1 << 20)})
    d = data[TP]
    assert d.error is ErrorCode.NONE and d.preferred_read_replica == 2 and d.records == b""
    assert d.high_watermark == 4 and d.log_start_offset == 0
    # in the leader's rack, without a rack, with a rack nobody is in, an old
    # consumer (no client metadata): read here
    for rack in ("r1", "", "r9", None):
        d = (await rm.fetch_messages(consumer(rack), {TP: FetchPartition(0, 1 << 20)}))[TP]
        assert d.preferred_read_replica == -1 and d.records, rack


async def test_a_preferred_replica_answer_does_not_wait_in_the_purgatory(log_manager, clock):
    rm = make_rm(log_manager, clock)
    await leader_with_in_sync_followers(rm, clock)
    data = await asyncio.wait_for(rm.fetch_messages(consumer("r3", max_wait_ms=30_000),
                                                    {TP: FetchPartition(4, 1 << 20)}), 5)
    assert data[TP].preferred_read_replica == 3 and rm.fetch_purgatory.delayed == 0


async def test_only_in_sync_alive_followers_holding_the_offset_are_chosen(log_manager, clock):
    rm = make_rm(log_manager, clock, alive=(1, 3))
    rm.become_leader_or_follower(0, 1, [state(1, 0, (1, 3), (1, 2, 3))], LIVE)  # 2 out of the ISR
    await rm.append_records(1000, 1, {TP: batch(4)})
    await rm.fetch_messages(follower(2), {TP: FetchPartition(4, 1 << 20)})  # caught up, not yet in the ISR write
    await rm.fetch_messages(follower(3), {TP: FetchPartition(2, 1 << 20)})  # 3 holds offsets < 2 only
    p = rm.get_partition(TP)
    assert 2 not in p.isr
    d = (await rm.fetch_messages(consumer("r2"), {TP: FetchPartition(0, 1 << 20)}))[TP]
    assert d.preferred_read_replica == -1  # out of sync (and not alive on the listener)
    d = (await rm.fetch_messages(consumer("r3"), {TP: FetchPartition(3, 1 << 20)}))[TP]
    assert d.preferred_read_replica == -1  # 3's log ends at 2
    d = (await rm.fetch_messages(consumer("r3"), {TP: FetchPartition(1, 1 << 20)}))[TP]
    assert d.preferred_read_replica == 3


async def test_no_selector_and_the_leader_selector_never_redirect(log_manager, clock):
    for selector in (None, LeaderSelector()):
        rm = make_rm(log_manager, clock, selector=selector)
        await leader_with_in_sync_followers(rm, clock)
        d = (await rm.fetch_messages(consumer("r2"), {TP: FetchPartition(0, 1 << 20)}))[TP]
        assert d.preferred_read_replica == -1 and d.records
        rm.stop_replicas(0, 1, [TP], delete=True)


# ---- the follower's side --------------------------------------------------------------------------
async def follower_rm(log_manager, clock, leader_hw: int, records: int = 4) -> ReplicaManager:
    rm = make_rm(log_manager, clock, broker_id=2)
    rm.become_leader_or_follower(0, 1, [state(1, 0, (1, 2))], LIVE)
    p = rm.get_partition(TP)
    p.append_records_to_follower(batch(records))
    p.update_follower_high_watermark(leader_hw)
    return rm


async def test_a_follower_serves_a_v11_consumer_below_its_high_watermark(log_manager, clock):
    rm = await follower_rm(log_manager, clock, leader_hw=3)
    d = (await rm.fetch_messages(consumer("r2"), {TP: FetchPartition(0, 1 << 20)}))[TP]
    # one batch of 4 records straddles the HW: it is not returned
    assert d.error is ErrorCode.NONE and d.high_watermark == 3 and d.preferred_read_replica == -1
    rm.get_partition(TP).update_follower_high_watermark(4)
    d = (await rm.fetch_messages(consumer("r2"), {TP: FetchPartition(0, 1 << 20)}))[TP]
    assert [h.last_offset for _, h in iter_batches(d.records)] == [3] and d.high_watermark == 4
    # read_committed: bounded by the follower's last stable offset too
    d = (await rm.fetch_messages(consumer("r2", isolation=FetchIsolation.TXN_COMMITTED),
                                 {TP: FetchPartition(0, 1 << 20)}))[TP]
    assert d.records and d.last_stable_offset == 4
    # an old consumer (no KIP-392 metadata) may read the leader only
    d = (await rm.fetch_messages(consumer(None), {TP: FetchPartition(0, 1 << 20)}))[TP]
    assert d.error is ErrorCode.NOT_LEADER_OR_FOLLOWER


async def test_a_consumer_ahead_of_the_follower(log_manager, clock):
    rm = await follower_rm(log_manager, clock, leader_hw=4)
    # with its leader epoch: OFFSET_OUT_OF_RANGE, the consumer asks the leader
    d = (await rm.fetch_messages(consumer("r2"), {TP: FetchPartition(9, 1 << 20, current_leader_epoch=0)}))[TP]
    assert d.error is ErrorCode.OFFSET_OUT_OF_RANGE
    # without one (v11 without KIP-320: maybe stale metadata): empty, retried
    d = (await rm.fetch_messages(consumer("r2"), {TP: FetchPartition(9, 1 << 20)}))[TP]
    assert d.error is ErrorCode.NONE and d.records == b""
    # a newer epoch than the follower knows, an older one: the KIP-320 errors
    d = (await rm.fetch_messages(consumer("r2"), {TP: FetchPartition(0, 1 << 20, current_leader_epoch=1)}))[TP]
    assert d.error is ErrorCode.UNKNOWN_LEADER_EPOCH
    rm.become_leader_or_follower(0, 1, [state(3, 2, (3, 2), (1, 2, 3))], LIVE)
    d = (await rm.fetch_messages(consumer("r2"), {TP: FetchPartition(0, 1 << 20, current_leader_epoch=0)}))[TP]
    assert d.error is ErrorCode.FENCED_LEADER_EPOCH


async def test_a_consumer_waiting_on_a_follower_is_answered_when_its_high_watermark_moves(log_manager, clock):
    rm = await follower_rm(log_manager, clock, leader_hw=0)
    waiting = asyncio.ensure_future(rm.fetch_messages(consumer("r2", max_wait_ms=30_000),
                                                      {TP: FetchPartition(0, 1 << 20)}))
    await asyncio.sleep(0)
    assert not waiting.done() and rm.fetch_purgatory.delayed == 1
    rm.get_partition(TP).update_follower_high_watermark(4)
    rm.complete_delayed_requests(TP)  # what the fetcher does when it moved the HW
    d = (await asyncio.wait_for(waiting, 5))[TP]
    assert d.error is ErrorCode.NONE and [h.last_offset for _, h in iter_batches(d.records)] == [3]
    # the follower stops hosting the partition: a waiting consumer is answered at once
    waiting = asyncio.ensure_future(rm.fetch_messages(consumer("r2", max_wait_ms=30_000),
                                                      {TP: FetchPartition(4, 1 << 20)}))
    await asyncio.sleep(0)
    rm.stop_replicas(0, 1, [TP], delete=False)
    rm.complete_delayed_requests(TP)
    d = (await asyncio.wait_for(waiting, 5))[TP]
    assert d.error in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)


async def test_list_offsets_and_offsets_for_leader_epoch_stay_with_the_leader(log_manager, clock):
    rm = await follower_rm(log_manager, clock, leader_hw=4)
    with pytest.raises(Exception) as e:
        rm.fetch_offset_for_timestamp(TP, -1, FetchIsolation.HIGH_WATERMARK)
    assert getattr(e.value, "code", None) is ErrorCode.NOT_LEADER_OR_FOLLOWER
    with pytest.raises(Exception) as e:
        rm.last_offset_for_leader_epoch(TP, -1, 0)
    assert getattr(e.value, "code", None) is ErrorCode.NOT_LEADER_OR_FOLLOWER


# ---- the selectors ------------------------------------------------------------------------------
def view(*replicas, leader=1):
    views = [ReplicaView(b, rack, leo, lag) for b, rack, leo, lag in replicas]
    return PartitionView(views, next(v for v in views if v.broker_id == leader))


def test_rack_aware_selector_is_kafkas():
    s = RackAwareReplicaSelector()
    c = lambda rack: ClientMetadata(rack)  # noqa: E731
    v = view((1, "a", 10, 0), (2, "b", 9, 5), (3, "b", 10, 50), (4, "c", 10, 0))
    assert s.select(c("b"), v).broker_id == 3  # the most caught up in b
    assert s.select(c("a"), v).broker_id == 1  # the leader is in a
    assert s.select(c("z"), v).broker_id == 1  # nobody in z
    assert s.select(c(""), v).broker_id == 1  # no rack
    v = view((1, "a", 10, 0), (2, "b", 10, 5), (3, "b", 10, 50))
    assert s.select(c("b"), v).broker_id == 2  # same end: the most recently caught up
    assert LeaderSelector().select(c("b"), v).broker_id == 1


@given(st.lists(st.tuples(st.sampled_from("abc"), st.integers(0, 9), st.integers(0, 99)), min_size=1, max_size=6),
       st.sampled_from(["", "a", "b", "c", "z"]))
def test_rack_aware_selector_picks_the_clients_rack_when_it_can(followers, rack):
    v = view((1, "a", 9, 0), *((i + 2, r, leo, lag) for i, (r, leo, lag) in enumerate(followers)))
    chosen = RackAwareReplicaSelector().select(ClientMetadata(rack), v)
    in_rack = [r for r in v.replicas if r.rack == rack]
    if not rack or not in_rack or v.leader in in_rack:
        assert chosen == v.leader
    else:
        assert chosen in in_rack and chosen.log_end_offset == max(r.log_end_offset for r in in_rack)


def test_replica_selector_class_names():
    assert replica_selector("replica.selector.class", None) is None
    assert isinstance(replica_selector("k", "org.apache.kafka.common.replica.RackAwareReplicaSelector"),
                      RackAwareReplicaSelector)
    assert isinstance(replica_selector("k", "org.apache.kafka.common.replica.LeaderSelector"), LeaderSelector)
    with pytest.raises(ConfigError, match="replica.selector.class"):
        KafkaConfig.from_props({"broker.id": "1", "zookeeper.connect": "z:2181",
                                "replica.selector.class": "com.example.NearestSelector"})
    config = KafkaConfig.from_props({"broker.id": "1", "zookeeper.connect": "z:2181",
                                     "replica.selector.class": "org.apache.kafka.common.replica.RackAwareReplicaSelector"})
    assert config["replica.selector.class"].endswith("RackAwareReplicaSelector")
