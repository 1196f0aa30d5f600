"""The transaction coordinator against an in-memory log and marker writer:
producer ids and epochs, fencing, commit and abort with markers, timeouts,
and a new coordinator resuming a transaction's markers after failover."""

from __future__ import annotations

import asyncio
import itertools

import pytest

from kavka.common.errors import ErrorCode
from kavka.common.topic_partition import TopicPartition
from kavka.transaction.coordinator import TransactionConfig, TransactionCoordinator
from kavka.transaction.state import TransactionState, partition_for
from tests.commit_gate import CommitGate

S = TransactionState
A, B = TopicPartition("out", 0), TopicPartition("out", 1)
TID = "app-1"


class MemoryLog:
    def __init__(self) -> None:
        self.batches: dict[int, list[bytes]] = {}

    async def append(self, partition: int, batch: bytes) -> ErrorCode:
        self.batches.setdefault(partition, []).append(batch)
        return ErrorCode.NONE

    def read_all(self, partition: int):
        yield from self.batches.get(partition, [])

    async def wait_committed(self, partition, still_wanted) -> bool:
        return still_wanted()  # every append here is committed at once


class Markers:
    def __init__(self, hold: bool = False) -> None:
        self.written: list[tuple[int, int, bool, int, frozenset]] = []
        self.release = asyncio.Event()
        if not hold:
            self.release.set()

    async def write_markers(self, pid, epoch, commit, coordinator_epoch, partitions, still_owner) -> None:
        await self.release.wait()
        if still_owner():
            self.written.append((pid, epoch, commit, coordinator_epoch, partitions))


def coordinator(txn_log=None, markers=None) -> TransactionCoordinator:
    ids = itertools.count(1000)

    async def new_pid() -> int:
        return next(ids)

    return TransactionCoordinator(1, TransactionConfig(num_partitions=4), txn_log or MemoryLog(),
                                  markers or Markers(), new_pid)


async def owned(c: TransactionCoordinator, epoch: int = 7) -> TransactionCoordinator:
    c.on_elected(partition_for(TID, 4), epoch)
    for _ in range(100):
        if c.ownership_error(TID) is ErrorCode.NONE:
            return c
        await asyncio.sleep(0.01)
    raise AssertionError("never loaded")


async def settle(c: TransactionCoordinator) -> None:
    for _ in range(200):
        if not c.pending:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"still pending: {c.pending}")


def test_partition_for_matches_group_hash():
    from kavka.group.state import partition_for as group_partition_for

    for s in ["", "a", "transactional-id-λ", "x" * 100]:
        assert partition_for(s, 50) == group_partition_for(s, 50)


async def test_not_owned_and_epochs_bump():
    c = coordinator()
    assert (await c.init_producer_id(TID, 60_000))[0] is ErrorCode.NOT_COORDINATOR
    await owned(c)
    assert await c.init_producer_id(TID, 60_000) == (ErrorCode.NONE, 1000, 0)
    assert await c.init_producer_id(TID, 60_000) == (ErrorCode.NONE, 1000, 1)
    assert (await c.init_producer_id(TID, 10**9))[0] is ErrorCode.INVALID_TRANSACTION_TIMEOUT
    assert (await c.init_producer_id(TID, 60_000, 1000, 0))[0] is ErrorCode.PRODUCER_FENCED
    await c.shutdown()


@pytest.mark.parametrize("commit", [True, False])
async def test_end_txn_writes_markers_then_completes(commit):
    markers = Markers()
    c = await owned(coordinator(markers=markers))
    _, pid, epoch = await c.init_producer_id(TID, 60_000)
    assert await c.add_partitions(TID, pid, epoch, frozenset({A})) is ErrorCode.NONE
    assert await c.add_partitions(TID, pid, epoch, frozenset({B})) is ErrorCode.NONE
    assert await c.end_txn(TID, pid, epoch, commit) is ErrorCode.NONE
    await settle(c)
    assert markers.written == [(pid, epoch, commit, 7, frozenset({A, B}))]
    assert c.txns[TID].state is (S.COMPLETE_COMMIT if commit else S.COMPLETE_ABORT)
    assert await c.end_txn(TID, pid, epoch, commit) is ErrorCode.NONE  # retried EndTxn
    assert await c.end_txn(TID, pid, epoch, not commit) is ErrorCode.INVALID_TXN_STATE
    await c.shutdown()


async def test_zombie_is_fenced_and_its_transaction_aborted():
    markers = Markers()
    c = await owned(coordinator(markers=markers))
    _, pid, epoch = await c.init_producer_id(TID, 60_000)
    await c.add_partitions(TID, pid, epoch, frozenset({A}))
    # A new instance: the open transaction is aborted under epoch + 1 first.
    assert (await c.init_producer_id(TID, 60_000))[0] is ErrorCode.CONCURRENT_TRANSACTIONS
    await settle(c)
    assert markers.written == [(pid, epoch + 1, False, 7, frozenset({A}))]
    assert await c.init_producer_id(TID, 60_000) == (ErrorCode.NONE, pid, epoch + 2)
    assert await c.add_partitions(TID, pid, epoch, frozenset({B})) is ErrorCode.PRODUCER_FENCED
    assert await c.end_txn(TID, pid, epoch, True) is ErrorCode.PRODUCER_FENCED
    assert await c.add_partitions(TID, 999, epoch + 2, frozenset({B})) is ErrorCode.INVALID_PRODUCER_ID_MAPPING
    await c.shutdown()


async def test_timed_out_transaction_is_aborted_and_producer_fenced():
    markers = Markers()
    c = await owned(coordinator(markers=markers))
    _, pid, epoch = await c.init_producer_id(TID, 1000)
    await c.add_partitions(TID, pid, epoch, frozenset({A}))
    start = c.txns[TID].start_ms
    assert c.abort_timed_out(start + 1000) == []
    assert c.abort_timed_out(start + 1001) == [TID]
    await settle(c)
    assert c.txns[TID].state is S.COMPLETE_ABORT and markers.written[0][2] is False
    assert await c.end_txn(TID, pid, epoch, True) is ErrorCode.PRODUCER_FENCED
    await c.shutdown()


async def test_new_coordinator_resumes_markers_of_a_prepared_transaction():
    txn_log, stuck = MemoryLog(), Markers(hold=True)
    old = await owned(coordinator(txn_log, stuck))
    _, pid, epoch = await old.init_producer_id(TID, 60_000)
    await old.add_partitions(TID, pid, epoch, frozenset({A, B}))
    assert await old.end_txn(TID, pid, epoch, True) is ErrorCode.NONE  # PrepareCommit written
    old.on_resigned(partition_for(TID, 4))  # the broker lost leadership before the markers
    stuck.release.set()
    markers = Markers()
    new = await owned(coordinator(txn_log, markers), epoch=8)
    await settle(new)
    assert markers.written == [(pid, epoch, True, 8, frozenset({A, B}))]
    assert new.txns[TID].state is S.COMPLETE_COMMIT and stuck.written == []
    # and the completed state is what a third coordinator loads
    third = await owned(coordinator(txn_log), epoch=9)
    assert third.txns[TID].state is S.COMPLETE_COMMIT and not third.txns[TID].partitions
    for c in (old, new, third):
        await c.shutdown()


async def test_idle_transactional_id_expires_with_a_tombstone():
    txn_log = MemoryLog()
    c = await owned(coordinator(txn_log))
    _, pid, epoch = await c.init_producer_id(TID, 60_000)
    idle_since = c.txns[TID].last_update_ms
    assert await c.expire_transactional_ids(idle_since + 1000) == []
    assert await c.expire_transactional_ids(idle_since + c.config.id_expiration_ms) == [TID]
    assert TID not in c.txns
    reloaded = await owned(coordinator(txn_log), epoch=8)
    assert TID not in reloaded.txns
    for x in (c, reloaded):
        await x.shutdown()


async def test_describe_owned_ids_and_errors():
    c = coordinator()
    assert c.describe(TID) == (ErrorCode.NOT_COORDINATOR, None)
    assert c.describe("") == (ErrorCode.INVALID_REQUEST, None)
    await owned(c)
    assert c.describe(TID) == (ErrorCode.TRANSACTIONAL_ID_NOT_FOUND, None)
    _, pid, epoch = await c.init_producer_id(TID, 60_000)
    await c.add_partitions(TID, pid, epoch, frozenset({A, B}))
    code, m = c.describe(TID)
    assert code is ErrorCode.NONE and m is not None
    assert (m.producer_id, m.producer_epoch, m.state.kafka_name, m.timeout_ms, m.partitions) == (
        pid, epoch, "Ongoing", 60_000, frozenset({A, B}))
    assert m.start_ms > 0
    await c.shutdown()


async def test_list_transactions_filters_as_kafka():
    c = coordinator()
    # other ids that hash to the same partition as TID, so one election owns all
    same = [t for t in (f"app-{i}" for i in range(2, 200)) if partition_for(t, 4) == partition_for(TID, 4)][:2]
    await owned(c)
    _, pid, epoch = await c.init_producer_id(TID, 60_000)
    await c.add_partitions(TID, pid, epoch, frozenset({A}))
    _, pid2, _ = await c.init_producer_id(same[0], 60_000)
    assert [m.transactional_id for m in c.list_transactions(frozenset(), frozenset(), -1, c.now_ms())[2]] == sorted(
        [TID, same[0]])
    code, unknown, found = c.list_transactions(frozenset(), frozenset({"Ongoing", "Bogus"}), -1, c.now_ms())
    assert (code, unknown, [m.transactional_id for m in found]) == (ErrorCode.NONE, ["Bogus"], [TID])
    assert [m.transactional_id for m in c.list_transactions(frozenset({pid2}), frozenset(), -1, c.now_ms())[2]] == [
        same[0]]
    # KIP-994: only transactions running longer than the duration
    start = c.txns[TID].start_ms
    assert [m.transactional_id for m in c.list_transactions(
        frozenset(), frozenset({"Ongoing"}), 1000, start + 1000)[2]] == []
    assert [m.transactional_id for m in c.list_transactions(
        frozenset(), frozenset({"Ongoing"}), 1000, start + 1001)[2]] == [TID]
    # an unknown state filter matches nothing
    assert c.list_transactions(frozenset(), frozenset({"Bogus"}), -1, c.now_ms())[2] == []
    # KIP-1152: the id must match the pattern whole; empty or None: no filter
    def matching(pattern: str | None) -> tuple[ErrorCode, list[str]]:
        code, _, found = c.list_transactions(frozenset(), frozenset(), -1, c.now_ms(), pattern)
        return code, [m.transactional_id for m in found]
    assert matching(same[0]) == (ErrorCode.NONE, [same[0]])
    assert matching("app") == (ErrorCode.NONE, [])  # a prefix is not a whole match
    assert matching("app-.*") == matching("") == matching(None) == (ErrorCode.NONE, sorted([TID, same[0]]))
    assert matching("(a+)+$") == (ErrorCode.NONE, [])  # RE2: linear time, no catastrophic backtracking
    assert matching("app-[") == (ErrorCode.INVALID_REGULAR_EXPRESSION, [])
    assert matching("(?=x)") == (ErrorCode.INVALID_REGULAR_EXPRESSION, [])  # lookahead: not RE2 syntax
    c.on_elected(partition_for(TID, 4), 8)  # re-election: loading again
    assert c.list_transactions(frozenset(), frozenset(), -1, c.now_ms())[0] is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    await c.shutdown()


def test_state_names_are_kafkas():
    assert [s.kafka_name for s in S] == ["Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit",
                                         "CompleteAbort", "Dead", "PrepareEpochFence"]
    assert all(S.from_kafka_name(s.kafka_name) is s for s in S)
    assert S.from_kafka_name("ongoing") is None


class UncommittedTailLog(MemoryLog):
    """A log whose tail is not committed until ``gate`` opens."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = CommitGate()

    async def wait_committed(self, partition, still_wanted) -> bool:
        return await self.gate.wait(still_wanted)


async def test_a_reload_serves_nothing_until_what_it_read_is_committed():
    """Re-elected at a new leader epoch, the coordinator reloads its log up
    to its end, where a partition's addition may not be committed yet: it
    answers COORDINATOR_LOAD_IN_PROGRESS until it is, so a retried
    AddPartitionsToTxn is never answered from a value the next leader may
    not have; given up when it resigns meanwhile."""
    txn_log = UncommittedTailLog()
    txn_log.gate.opened.set()
    c = await owned(coordinator(txn_log))
    _, pid, epoch = await c.init_producer_id(TID, 60_000)
    assert await c.add_partitions(TID, pid, epoch, frozenset({A, B})) is ErrorCode.NONE
    txn_log.gate.opened.clear()
    c.on_elected(partition_for(TID, 4), 8)  # the same leader at a new epoch: a reload
    await asyncio.sleep(0.05)
    assert c.ownership_error(TID) is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    assert await c.add_partitions(TID, pid, epoch, frozenset({A})) is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    c.on_resigned(partition_for(TID, 4))
    await asyncio.sleep(0.05)
    assert c.ownership_error(TID) is ErrorCode.NOT_COORDINATOR and TID not in c.txns
    c.on_elected(partition_for(TID, 4), 9)
    await asyncio.sleep(0.05)
    assert c.ownership_error(TID) is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    txn_log.gate.opened.set()
    await owned(c, epoch=9)
    assert await c.add_partitions(TID, pid, epoch, frozenset({A})) is ErrorCode.NONE  # committed now
    await c.shutdown()
