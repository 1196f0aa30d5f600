"""ReplicaManager: LeaderAndIsr steps (stale controller / leader epochs, not
assigned, leaders and followers, fetchers), StopReplica, produce with acks,
delayed produce and fetch, ISR writes and their conflicts."""

from __future__ import annotations

import asyncio

from kavka.common.errors import ErrorCode
from kavka.common.topic_partition import TopicPartition
from kavka.protocol.records.batch import iter_batches
from kavka.replication.fetcher.assignments import FetcherAssignments
from kavka.replication.quiet_partitions import QuietPartitions
from kavka.replication.replica_manager import ReplicaManager, ReplicaManagerConfig
from kavka.replication.requests import FetchIsolation, FetchParams, FetchPartition
from kavka.replication.state import BrokerEndPoint
from kavka.storage.fetch_data_info import LATEST_TIMESTAMP

from .conftest import LAG_MS, TP, MemoryIsrZnodes, RecordingIsrListener, batch, log_config, state

LIVE = {b: BrokerEndPoint(b, "127.0.0.1", 9090 + b) for b in (1, 2, 3)}
TP1 = TopicPartition("orders", 1)


def make_rm(log_manager, clock, broker_id: int = 1, broker_alive=None, **config) -> ReplicaManager:
    return ReplicaManager(
        broker_id,
        log_manager,
        ReplicaManagerConfig(replica_lag_time_max_ms=LAG_MS, **config),
        isr_writer=MemoryIsrZnodes(),
        isr_change_listener=RecordingIsrListener(),
        clock=clock,
        broker_alive=broker_alive,
    )


def consumer(max_wait_ms: int = 0, min_bytes: int = 1) -> FetchParams:
    return FetchParams(-1, max_wait_ms, min_bytes, 1 << 20, FetchIsolation.HIGH_WATERMARK)


def follower(replica_id: int, max_wait_ms: int = 0) -> FetchParams:
    return FetchParams(replica_id, max_wait_ms, 1, 1 << 20, FetchIsolation.LOG_END)


async def settle(rm: ReplicaManager) -> None:
    await asyncio.sleep(0)
    await rm.isr_updates.drain()


# ---- LeaderAndIsr ------------------------------------------------------------------------------
def test_stale_controller_epoch_changes_nothing(log_manager, clock):
    rm = make_rm(log_manager, clock)
    ok = rm.become_leader_or_follower(0, 5, [state(1, 0, (1,))], LIVE)
    assert ok.error == ErrorCode.NONE and ok.partition_errors == {TP: ErrorCode.NONE}
    stale = rm.become_leader_or_follower(0, 4, [state(2, 1, (2, 1))], LIVE)
    assert stale.error == ErrorCode.STALE_CONTROLLER_EPOCH
    assert stale.partition_errors == {TP: ErrorCode.STALE_CONTROLLER_EPOCH}
    assert rm.get_partition(TP).is_leader and rm.controller_epoch == 5
    stop = rm.stop_replicas(0, 3, [TP], delete=True)
    assert stop.error == ErrorCode.STALE_CONTROLLER_EPOCH and rm.get_partition(TP) is not None


def test_stale_leader_epoch_and_unassigned_partition(log_manager, clock):
    rm = make_rm(log_manager, clock)
    rm.become_leader_or_follower(0, 1, [state(1, 3, (1, 2))], LIVE)
    again = rm.become_leader_or_follower(0, 1, [state(2, 3, (2, 1)), state(3, 0, (3,), tp=TP1)], LIVE)
    assert again.partition_errors == {TP: ErrorCode.STALE_CONTROLLER_EPOCH, TP1: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    assert rm.get_partition(TP).is_leader and rm.get_partition(TP1) is None
    assert log_manager.get_log("orders", 1) is None
    older = rm.become_leader_or_follower(0, 2, [state(2, 2, (2, 1))], LIVE)
    assert older.partition_errors == {TP: ErrorCode.STALE_CONTROLLER_EPOCH}
    newer = rm.become_leader_or_follower(0, 2, [state(2, 4, (2, 1))], LIVE)
    assert newer.partition_errors == {TP: ErrorCode.NONE} and not rm.get_partition(TP).is_leader


def test_held_leader_epochs_are_one_state_change_line_and_older_ones_one_each(log_manager, clock, caplog):
    """A new controller re-sends every replica's state: the partitions whose
    leader epoch the broker already holds are answered STALE_CONTROLLER_EPOCH
    each but logged in one line; an older epoch still gets its own warning."""
    rm = make_rm(log_manager, clock)
    tps = [TopicPartition("orders", p) for p in range(6)]
    rm.become_leader_or_follower(0, 1, [state(1, 3, (1, 2), tp=tp) for tp in tps], LIVE)
    caplog.clear()
    with caplog.at_level("INFO", logger="kavka.state.change"):
        again = rm.become_leader_or_follower(
            1, 2, [state(1, 3, (1, 2), tp=tp) for tp in tps[:5]] + [state(1, 2, (1, 2), tp=tps[5])], LIVE)
    assert again.partition_errors == dict.fromkeys(tps, ErrorCode.STALE_CONTROLLER_EPOCH)
    lines = [r.getMessage() for r in caplog.records if r.name == "kavka.state.change"]
    held = [line for line in lines if "kept its state of 5 partitions" in line]
    older = [line for line in lines if "leader epoch 2 is older than the current 3" in line]
    assert len(lines) == 2 and len(held) == 1 and len(older) == 1
    assert "orders-0" in held[0] and "orders-5" not in held[0] and "orders-5" in older[0]


def test_followers_get_fetchers_from_live_leaders(log_manager, clock):
    rm = make_rm(log_manager, clock)
    fetchers = rm.fetcher_manager
    assert isinstance(fetchers, FetcherAssignments)
    rm.become_leader_or_follower(0, 1, [state(2, 0, (2, 1)), state(3, 0, (3, 1), tp=TP1)], {2: LIVE[2]})
    assigned = fetchers.partitions()
    assert set(assigned) == {TP}  # leader 3 is not alive: no fetcher for TP1
    assert assigned[TP].leader == LIVE[2] and assigned[TP].leader_epoch == 0 and assigned[TP].truncate_first
    rm.become_leader_or_follower(0, 1, [state(1, 1, (1, 2))], LIVE)  # becomes leader: fetcher removed
    assert fetchers.partitions() == {} and fetchers.fetchers() == {}


def test_hw_truncation_mode_truncates_on_becoming_follower(log_manager, clock):
    for mode, expected_leo in (("hw", 3), ("leader-epoch", 5)):
        tp = TopicPartition(f"t-{mode}", 0)
        rm = make_rm(log_manager, clock, truncation_mode=mode)
        rm.become_leader_or_follower(0, 1, [state(1, 0, (1, 2), tp=tp)], LIVE)
        p = rm.get_partition(tp)
        p.append_records_to_leader(batch(3), 1)
        p.update_follower_fetch_state(2, 3, 0, clock.milliseconds(), 3)
        p.maybe_increment_hw()
        p.append_records_to_leader(batch(2), 1)
        rm.become_leader_or_follower(0, 1, [state(2, 1, (2, 1), tp=tp)], LIVE)
        assert p.log.log_end_offset == expected_leo, mode
        fetch_state = rm.fetcher_manager.fetch_state(tp)
        assert fetch_state.fetch_offset == expected_leo and fetch_state.truncate_first == (mode != "hw")


def test_stop_replica_with_delete_removes_the_log(log_manager, clock):
    rm = make_rm(log_manager, clock)
    rm.become_leader_or_follower(0, 1, [state(2, 0, (2, 1)), state(1, 0, (1,), tp=TP1)], LIVE)
    result = rm.stop_replicas(0, 1, [TP, TP1], delete=False)
    assert result.partition_errors == {TP: ErrorCode.NONE, TP1: ErrorCode.NONE}
    assert rm.get_partition(TP) is None and log_manager.get_log("orders", 0) is not None
    assert rm.fetcher_manager.partitions() == {}
    rm.stop_replicas(0, 1, [TP], delete=True)
    assert log_manager.get_log("orders", 0) is None


# ---- produce ---------------------------------------------------------------------------------------
async def test_produce_acks_0_and_1_answer_at_once_and_bad_input(log_manager, clock):
    rm = make_rm(log_manager, clock)
    rm.become_leader_or_follower(0, 1, [state(1, 0, (1,))], LIVE)
    r = await rm.append_records(1000, 1, {TP: batch(2)})
    assert r[TP].error is ErrorCode.NONE and r[TP].base_offset == 0
    r = await rm.append_records(1000, 0, {TP: batch(1)})
    assert r[TP].base_offset == 2
    r = await rm.append_records(1000, 2, {TP: batch(1)})
    assert r[TP].error is ErrorCode.INVALID_REQUIRED_ACKS
    r = await rm.append_records(1000, 1, {TP1: batch(1), TopicPartition("__consumer_offsets", 0): batch(1)})
    assert r[TP1].error is ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert r[TopicPartition("__consumer_offsets", 0)].error is ErrorCode.INVALID_TOPIC_EXCEPTION
    r = await rm.append_records(1000, 1, {TP: b"\x00" * 70})
    assert r[TP].error is ErrorCode.CORRUPT_MESSAGE


async def test_acks_all_waits_for_the_follower_then_succeeds(log_manager, clock):
    rm = make_rm(log_manager, clock)
    rm.become_leader_or_follower(0, 1, [state(1, 0, (1, 2))], LIVE)
    produce = asyncio.ensure_future(rm.append_records(30_000, -1, {TP: batch(3)}))
    await asyncio.sleep(0)
    assert not produce.done() and rm.produce_purgatory.delayed == 1
    await rm.fetch_messages(follower(2), {TP: FetchPartition(0, 1 << 20)})
    await asyncio.sleep(0)
    assert not produce.done()  # the follower has the records now, but the leader learns it next fetch
    await rm.fetch_messages(follower(2), {TP: FetchPartition(3, 1 << 20)})
    result = await asyncio.wait_for(produce, 5)
    assert result[TP].error is ErrorCode.NONE and result[TP].base_offset == 0
    assert rm.get_partition(TP).log.high_watermark == 3


async def test_a_dead_follower_out_of_the_isr_at_the_same_epoch_completes_acks_all(log_manager, clock):
    """The controller takes a dead broker's replica out of the ISR without
    a new leader epoch (a newer znode version): the leader takes the ISR
    and answers the acks=all produce that waited for the dead follower."""
    rm = make_rm(log_manager, clock)
    rm.become_leader_or_follower(0, 1, [state(1, 0, (1, 2, 3), zk_version=0)], LIVE)
    produce = asyncio.ensure_future(rm.append_records(30_000, -1, {TP: batch(3)}))
    await asyncio.sleep(0)
    assert rm.produce_purgatory.delayed == 1
    await rm.fetch_messages(follower(2), {TP: FetchPartition(0, 1 << 20)})
    await rm.fetch_messages(follower(2), {TP: FetchPartition(3, 1 << 20)})
    await asyncio.sleep(0)
    assert not produce.done()  # broker 3 (dead, still in the ISR) holds the HW
    result = rm.become_leader_or_follower(0, 1, [state(1, 0, (1, 2), (1, 2, 3), zk_version=1)], LIVE)
    assert result.partition_errors == {TP: ErrorCode.NONE}
    p = rm.get_partition(TP)
    assert (p.leader_epoch, p.isr, p.zk_version) == (0, (1, 2), 1)
    assert (await asyncio.wait_for(produce, 5))[TP].error is ErrorCode.NONE
    assert p.log.high_watermark == 3


def test_a_follower_keeps_its_fetch_when_only_the_isr_changed(log_manager, clock):
    """Following at the same epoch, a newer state (the ISR lost a dead
    broker) changes no fetcher: the follower does not start over."""
    rm = make_rm(log_manager, clock)
    fetchers = rm.fetcher_manager
    assert isinstance(fetchers, FetcherAssignments)
    rm.become_leader_or_follower(0, 1, [state(2, 0, (2, 1, 3), zk_version=0)], LIVE)
    before = fetchers.partitions()[TP]
    result = rm.become_leader_or_follower(0, 1, [state(2, 0, (2, 1), (2, 1, 3), zk_version=1)], LIVE)
    assert result.partition_errors == {TP: ErrorCode.NONE}
    assert fetchers.partitions()[TP] is before
    assert rm.get_partition(TP).zk_version == 1


async def test_only_a_follower_on_a_live_broker_joins_the_isr(log_manager, clock):
    """Kafka's isReplicaIsrEligible (KIP-841): a broker the metadata cache
    does not name alive (declared dead, yet still fetching) catches up but
    is not added; once alive again it is."""
    alive = {1, 2}
    rm = make_rm(log_manager, clock, broker_alive=lambda b: b in alive)
    rm.become_leader_or_follower(0, 1, [state(1, 0, (1,), (1, 2, 3))], LIVE)
    await rm.append_records(1000, 1, {TP: batch(2)})
    await rm.fetch_messages(follower(3), {TP: FetchPartition(2, 1 << 20)})
    await settle(rm)
    assert rm.get_partition(TP).isr == (1,) and rm.isr_updates.expands == 0
    alive.add(3)
    await rm.fetch_messages(follower(3), {TP: FetchPartition(2, 1 << 20)})
    await settle(rm)
    assert rm.get_partition(TP).isr == (1, 3)


async def test_a_follower_refused_as_not_alive_joins_once_alive_though_its_fetches_are_skipped(log_manager, clock):
    """Its partition quiet, the follower's next fetches skip the read
    (kavka.replication.quiet_partitions): what the read would propose, the
    skip proposes, so the broker joins once the cache names it alive."""
    alive = {1, 2}
    rm = make_rm(log_manager, clock, broker_alive=lambda b: b in alive)
    rm.become_leader_or_follower(0, 1, [state(1, 0, (1,), (1, 2, 3))], LIVE)
    await rm.append_records(1000, 1, {TP: batch(2)})
    quiet = QuietPartitions({})
    await rm.fetch_messages(follower(3), {TP: FetchPartition(2, 1 << 20)}, quiet)
    await settle(rm)
    assert rm.get_partition(TP).isr == (1,) and TP in quiet.found
    alive.add(3)
    again = QuietPartitions(quiet.found)
    answer = await rm.fetch_messages(follower(3), {TP: FetchPartition(2, 1 << 20)}, again)
    assert TP not in answer  # skipped, not read
    await settle(rm)
    assert rm.get_partition(TP).isr == (1, 3)


async def test_a_follower_fetch_rechecks_delayed_requests_only_where_the_hw_moved(log_manager, clock):
    # Kafka's Partition.updateFollowerFetchState: a re-check walks every
    # partition of each parked fetch, so one per partition of every follower
    # fetch would cost partitions x partitions per fetch.
    rm = make_rm(log_manager, clock)
    rm.become_leader_or_follower(0, 1, [state(1, 0, (1, 2, 3)), state(1, 0, (1, 2, 3), tp=TP1)], LIVE)
    await rm.append_records(1000, 1, {TP: batch(2)})
    parked = asyncio.ensure_future(rm.fetch_messages(follower(3, 30_000), {TP: FetchPartition(2, 1 << 20),
                                                                          TP1: FetchPartition(0, 1 << 20)}))
    consumer_waits = asyncio.ensure_future(rm.fetch_messages(consumer(30_000), {TP: FetchPartition(0, 1 << 20)}))
    await asyncio.sleep(0)
    checked: list[TopicPartition] = []
    check = rm.fetch_purgatory.check_and_complete

    def counting(tp: TopicPartition) -> int:
        checked.append(tp)
        return check(tp)

    rm.fetch_purgatory.check_and_complete = counting  # type: ignore[method-assign]
    await rm.fetch_messages(follower(2), {TP: FetchPartition(0, 1 << 20), TP1: FetchPartition(0, 1 << 20)})
    assert checked == []  # follower 2 fetched from 0: no HW moved, nothing re-checked
    assert rm.get_partition(TP).log.high_watermark == 0
    # Follower 3 (parked at 2) and now follower 2 hold offsets 0-1: TP's HW moves, TP1's does not.
    await rm.fetch_messages(follower(2), {TP: FetchPartition(2, 1 << 20), TP1: FetchPartition(0, 1 << 20)})
    assert checked == [TP] and rm.get_partition(TP).log.high_watermark == 2
    data = await asyncio.wait_for(consumer_waits, 5)  # woken by the HW move, not by its timeout
    assert [h.last_offset for _, h in iter_batches(data[TP].records)] == [1]
    await rm.fetch_messages(follower(2), {TP: FetchPartition(2, 1 << 20), TP1: FetchPartition(0, 1 << 20)})
    assert checked == [TP]  # the same offsets again: nothing moved, nothing re-checked
    assert not parked.done()  # follower 3's parked fetch: nothing new past offset 2
    parked.cancel()


async def test_acks_all_times_out(log_manager, clock):
    rm = make_rm(log_manager, clock)
    rm.become_leader_or_follower(0, 1, [state(1, 0, (1, 2))], LIVE)
    result = await asyncio.wait_for(rm.append_records(30, -1, {TP: batch(1)}), 5)
    assert result[TP].error is ErrorCode.REQUEST_TIMED_OUT and result[TP].base_offset == 0
    assert rm.produce_purgatory.expired_count == 1
    result = await asyncio.wait_for(rm.append_records(-5, -1, {TP: batch(1)}), 5)  # a negative timeout: none
    assert result[TP].error is ErrorCode.REQUEST_TIMED_OUT and result[TP].base_offset == 1


async def test_acks_all_min_insync_before_and_leadership_loss_after(log_manager, clock):
    log_manager.update_topic_config("orders", log_config(**{"min.insync.replicas": 2}))
    rm = make_rm(log_manager, clock)
    rm.become_leader_or_follower(0, 1, [state(1, 0, (1,), (1, 2)), state(1, 0, (1, 2), tp=TP1)], LIVE)
    r = await rm.append_records(30_000, -1, {TP: batch(1)})
    assert r[TP].error is ErrorCode.NOT_ENOUGH_REPLICAS
    assert rm.get_partition(TP).log.log_end_offset == 0
    produce = asyncio.ensure_future(rm.append_records(30_000, -1, {TP1: batch(1)}))
    await asyncio.sleep(0)
    rm.become_leader_or_follower(0, 1, [state(2, 1, (2, 1), tp=TP1)], LIVE)
    result = await asyncio.wait_for(produce, 5)
    assert result[TP1].error is ErrorCode.NOT_LEADER_OR_FOLLOWER


async def test_acks_all_after_isr_shrinks_below_min_insync(log_manager, clock):
    log_manager.update_topic_config("orders", log_config(**{"min.insync.replicas": 2}))
    rm = make_rm(log_manager, clock)
    rm.become_leader_or_follower(0, 1, [state(1, 0, (1, 2))], LIVE)
    produce = asyncio.ensure_future(rm.append_records(30_000, -1, {TP: batch(1)}))
    await asyncio.sleep(0)
    clock.advance(LAG_MS + 1)
    assert rm.maybe_shrink_isrs() == 1
    result = await asyncio.wait_for(produce, 5)
    assert result[TP].error is ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
    assert rm.get_partition(TP).isr == (1,)


# ---- ISR writes -------------------------------------------------------------------------------------
async def test_isr_expand_is_written_and_propagated(log_manager, clock):
    rm = make_rm(log_manager, clock)
    rm.become_leader_or_follower(0, 1, [state(1, 0, (1,), (1, 2))], LIVE)
    await rm.append_records(1000, 1, {TP: batch(2)})
    await rm.fetch_messages(follower(2), {TP: FetchPartition(2, 1 << 20)})
    await settle(rm)
    p = rm.get_partition(TP)
    assert p.isr == (1, 2) and p.zk_version == 1 and rm.isr_updates.expands == 1
    writer = rm.isr_updates._writer
    assert [(tp, s.leader_and_isr.isr) for tp, s in writer.writes] == [(TP, (1, 2))]
    assert not await rm.isr_updates.maybe_propagate()  # within the blackout
    clock.advance(5_000)
    assert await rm.isr_updates.maybe_propagate()
    assert rm.isr_updates._listener.published == [[TP]]


async def test_isr_write_conflict_fences_the_old_leader(log_manager, clock):
    rm = make_rm(log_manager, clock)
    stopped: list[list[TopicPartition]] = []
    rm.add_leadership_listener(stopped.append)  # the coordinators unload what stops leading
    rm.become_leader_or_follower(0, 1, [state(1, 0, (1, 2, 3))], LIVE)
    rm.isr_updates._writer.versions[TP] = 5  # the controller moved the znode on (seed 001 #3)
    produce = asyncio.ensure_future(rm.append_records(30_000, -1, {TP: batch(1)}))
    await asyncio.sleep(0)
    clock.advance(LAG_MS + 1)
    rm.maybe_shrink_isrs()
    await settle(rm)
    p = rm.get_partition(TP)
    assert not p.is_leader and p.isr == (1, 2, 3)
    assert stopped == [[TP]]
    result = await asyncio.wait_for(produce, 5)
    assert result[TP].error is ErrorCode.NOT_LEADER_OR_FOLLOWER
    again = await rm.append_records(1000, 1, {TP: batch(1)})
    assert again[TP].error is ErrorCode.NOT_LEADER_OR_FOLLOWER


async def test_isr_write_failure_is_retried(log_manager, clock):
    rm = make_rm(log_manager, clock)
    rm.become_leader_or_follower(0, 1, [state(1, 0, (1, 2))], LIVE)
    rm.isr_updates._writer.unreachable = True
    clock.advance(LAG_MS + 1)
    rm.maybe_shrink_isrs()
    await settle(rm)
    p = rm.get_partition(TP)
    assert p.is_leader and p.isr == (1, 2) and p.pending_isr is None
    rm.isr_updates._writer.unreachable = False
    assert rm.under_replicated_partitions() == []
    rm.maybe_shrink_isrs()
    await settle(rm)
    assert p.isr == (1,) and rm.isr_updates.shrinks == 1 and rm.isr_updates.expands == 0
    assert rm.under_replicated_partitions() == [TP]


class SilentThenAnsweringWriter(MemoryIsrZnodes):
    """The first write never answers (a request kazoo lost), later ones do."""

    def __init__(self) -> None:
        super().__init__()
        self.attempts = 0

    async def write_isr(self, tp, leader_and_isr, zk_version):
        self.attempts += 1
        if self.attempts == 1:
            await asyncio.Event().wait()
        return await super().write_isr(tp, leader_and_isr, zk_version)


async def test_an_isr_write_without_an_answer_is_given_up_and_retried(log_manager, clock, caplog):
    rm = ReplicaManager(1, log_manager, ReplicaManagerConfig(replica_lag_time_max_ms=LAG_MS, isr_write_timeout_ms=50),
                        isr_writer=SilentThenAnsweringWriter(), isr_change_listener=RecordingIsrListener(),
                        clock=clock)
    rm.become_leader_or_follower(0, 1, [state(1, 0, (1, 2))], LIVE)
    clock.advance(LAG_MS + 1)
    assert rm.maybe_shrink_isrs() == 1
    await asyncio.wait_for(settle(rm), 5)  # bounded by the write timeout, not for ever
    p = rm.get_partition(TP)
    assert p.is_leader and p.isr == (1, 2) and p.pending_isr is None
    assert any("got no answer within 50 ms" in r.getMessage() for r in caplog.records)
    assert rm.maybe_shrink_isrs() == 1  # the next check proposes again
    await settle(rm)
    assert p.isr == (1,) and p.zk_version == 1 and rm.isr_updates.shrinks == 1


# ---- fetch --------------------------------------------------------------------------------------------
async def test_delayed_fetch_completes_on_append_and_on_timeout(log_manager, clock):
    rm = make_rm(log_manager, clock)
    rm.become_leader_or_follower(0, 1, [state(1, 0, (1,))], LIVE)
    waiting = asyncio.ensure_future(rm.fetch_messages(consumer(30_000), {TP: FetchPartition(0, 1 << 20)}))
    await asyncio.sleep(0)
    assert not waiting.done() and rm.fetch_purgatory.delayed == 1
    await rm.append_records(1000, 1, {TP: batch(2)})
    data = await asyncio.wait_for(waiting, 5)
    assert [h.last_offset for _, h in iter_batches(data[TP].records)] == [1]
    assert data[TP].high_watermark == 2
    empty = await asyncio.wait_for(rm.fetch_messages(consumer(30), {TP: FetchPartition(2, 1 << 20)}), 5)
    assert empty[TP].error is ErrorCode.NONE and empty[TP].records == b""


async def test_delayed_fetch_answers_on_leadership_change(log_manager, clock):
    rm = make_rm(log_manager, clock)
    rm.become_leader_or_follower(0, 1, [state(1, 0, (1,), (1, 2))], LIVE)
    waiting = asyncio.ensure_future(rm.fetch_messages(consumer(30_000), {TP: FetchPartition(0, 1 << 20)}))
    await asyncio.sleep(0)
    rm.become_leader_or_follower(0, 1, [state(2, 1, (2, 1))], LIVE)
    data = await asyncio.wait_for(waiting, 5)
    assert data[TP].error is ErrorCode.NOT_LEADER_OR_FOLLOWER


async def test_consumer_fetch_between_hw_and_leo_is_empty_and_beyond_is_out_of_range(log_manager, clock):
    rm = make_rm(log_manager, clock)
    rm.become_leader_or_follower(0, 1, [state(1, 0, (1, 2))], LIVE)
    await rm.append_records(1000, 1, {TP: batch(4)})
    data = await rm.fetch_messages(consumer(), {TP: FetchPartition(2, 1 << 20)})
    assert data[TP].error is ErrorCode.NONE and data[TP].records == b"" and data[TP].high_watermark == 0
    data = await rm.fetch_messages(consumer(), {TP: FetchPartition(9, 1 << 20), TP1: FetchPartition(0, 10)})
    assert data[TP].error is ErrorCode.OFFSET_OUT_OF_RANGE
    assert data[TP1].error is ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


async def test_request_max_bytes_spreads_over_partitions(log_manager, clock):
    rm = make_rm(log_manager, clock)
    rm.become_leader_or_follower(0, 1, [state(1, 0, (1,)), state(1, 0, (1,), tp=TP1)], LIVE)
    await rm.append_records(1000, 1, {TP: batch(1, b"x" * 500), TP1: batch(1, b"y" * 500)})
    params = FetchParams(-1, 0, 1, 100, FetchIsolation.HIGH_WATERMARK)
    data = await rm.fetch_messages(params, {TP: FetchPartition(0, 100), TP1: FetchPartition(0, 100)})
    assert len(data[TP].records) > 500  # the first batch whole (KIP-74)
    assert data[TP1].records == b""  # nothing left of the request's max_bytes


async def test_offsets_and_delete_records(log_manager, clock):
    rm = make_rm(log_manager, clock)
    rm.become_leader_or_follower(0, 1, [state(1, 0, (1,))], LIVE)
    await rm.append_records(1000, 1, {TP: batch(3)})
    await rm.append_records(1000, 1, {TP: batch(3)})
    assert rm.fetch_offset_for_timestamp(TP, LATEST_TIMESTAMP, FetchIsolation.HIGH_WATERMARK).offset == 6
    assert rm.last_offset_for_leader_epoch(TP, 0, 0).end_offset == 6
    deleted = rm.delete_records({TP: 3, TP1: 0})
    assert deleted[TP].error is ErrorCode.NONE and deleted[TP].low_watermark == 3
    assert deleted[TP1].error is ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert rm.delete_records({TP: 99})[TP].error is ErrorCode.OFFSET_OUT_OF_RANGE
    data = await rm.fetch_messages(consumer(), {TP: FetchPartition(0, 1 << 20)})
    assert data[TP].error is ErrorCode.OFFSET_OUT_OF_RANGE and data[TP].log_start_offset == 3


async def test_background_tasks_start_and_shutdown_answers_waiters(log_manager, clock):
    rm = make_rm(log_manager, clock)
    rm.become_leader_or_follower(0, 1, [state(1, 0, (1, 2))], LIVE)
    rm.start()
    produce = asyncio.ensure_future(rm.append_records(60_000, -1, {TP: batch(1)}))
    fetch = asyncio.ensure_future(rm.fetch_messages(consumer(60_000, 10_000), {TP: FetchPartition(0, 1 << 20)}))
    await asyncio.sleep(0)
    await rm.shutdown()
    assert (await produce)[TP].error is ErrorCode.REQUEST_TIMED_OUT
    assert (await fetch)[TP].error is ErrorCode.NONE


# ---- what the broker's Fetch and WriteTxnMarkers handlers ask -----------------------------------
def test_topic_ids_from_leader_and_isr_resolve_until_the_topic_is_deleted(log_manager, clock):
    rm = make_rm(log_manager, clock)
    tid = state(1, 0, (1,)).topic_id
    assert tid is not None and rm.topic_name(tid) is None
    rm.become_leader_or_follower(0, 1, [state(1, 0, (1,))], LIVE)
    assert rm.topic_name(tid) == TP.topic and rm.get_partition(TP).topic_id == tid
    rm.stop_replicas(0, 1, [TP], delete=False)  # stopped, not deleted: still known
    assert rm.topic_name(tid) == TP.topic
    rm.become_leader_or_follower(0, 1, [state(1, 1, (1,))], LIVE)
    rm.stop_replicas(0, 1, [TP], delete=True)
    assert rm.topic_name(tid) is None


async def test_a_marker_closes_nothing_unless_a_transaction_is_open(log_manager, clock):
    from kavka.protocol.records.builder import build_batch
    from kavka.protocol.records.control import ControlRecordType, build_control_batch
    from kavka.protocol.records.record import SimpleRecord

    TP2 = TopicPartition("orders", 2)
    rm = make_rm(log_manager, clock)
    rm.become_leader_or_follower(0, 1, [state(1, 0, (1,)), state(2, 0, (2, 1), tp=TP2)], LIVE)
    assert not rm.marker_closes_nothing(TP, 7, 0, 0)  # an unknown producer: written, it fences late writes
    assert not rm.marker_closes_nothing(TP1, 7, 0, 0)  # not hosted: the append answers
    assert not rm.marker_closes_nothing(TP2, 7, 0, 0)  # followed here: the append answers NOT_LEADER_OR_FOLLOWER
    txn = build_batch([SimpleRecord(b"k", b"v", 1)], producer_id=7, producer_epoch=0, base_sequence=0,
                      is_transactional=True)
    assert (await rm.append_records(1000, 1, {TP: txn}))[TP].error is ErrorCode.NONE
    assert not rm.marker_closes_nothing(TP, 7, 0, 3)  # open: the marker closes it
    marker = build_control_batch(ControlRecordType.COMMIT, 7, 0, 3, 2)
    assert (await rm.append_records(1000, 1, {TP: marker}, internal_topics_allowed=True))[TP].error is ErrorCode.NONE
    assert rm.marker_closes_nothing(TP, 7, 0, 3)  # a retry of the same marker
    assert not rm.marker_closes_nothing(TP, 7, 1, 4)  # a newer epoch with nothing open: written, it fences epoch 0
    assert not rm.marker_closes_nothing(TP, 7, 0, 2)  # a zombie coordinator: the append fences it
    # The coordinator aborts a timed-out transaction under a bumped epoch
    # before the transaction's write reached this partition: the marker is
    # written, and the late write at the old epoch is refused instead of
    # opening a transaction no marker would close (KIP-890's hanging transaction).
    abort = build_control_batch(ControlRecordType.ABORT, 7, 1, 4, 3)
    assert (await rm.append_records(1000, 1, {TP: abort}, internal_topics_allowed=True))[TP].error is ErrorCode.NONE
    late = build_batch([SimpleRecord(b"k", b"late", 4)], producer_id=7, producer_epoch=0, base_sequence=1,
                       is_transactional=True)
    refused = (await rm.append_records(1000, 1, {TP: late}))[TP].error
    assert refused in (ErrorCode.INVALID_PRODUCER_EPOCH, ErrorCode.PRODUCER_FENCED), refused
    assert rm.get_partition(TP).log.producer_state.last_entry(7).current_txn_first_offset < 0
