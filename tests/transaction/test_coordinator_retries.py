"""A transaction never stalls in Prepare* while its coordinator lives
(KIP-98): a marker writer that fails, and state writes refused for a while
(an ISR under min.insync.replicas), are retried until the transaction is
Complete*; losing the ``__transaction_state`` partition stops the work (no
Complete* written by the old coordinator), and a leader reporting a newer
coordinator epoch (TRANSACTION_COORDINATOR_FENCED) stops it too."""

from __future__ import annotations

import asyncio
import itertools

from kavka.common.errors import ErrorCode
from kavka.protocol.records import iter_batches, iter_records
from kavka.transaction.coordinator import CoordinatorFencedError, TransactionConfig, TransactionCoordinator
from kavka.transaction.records import decode_value
from kavka.transaction.state import TransactionState, partition_for

from .test_coordinator import TID, A, B, Markers, MemoryLog, owned, settle

S = TransactionState
FAST = TransactionConfig(num_partitions=4, retry_backoff_ms=2, max_retry_backoff_ms=8)


def coordinator(txn_log, markers) -> TransactionCoordinator:
    ids = itertools.count(1000)

    async def new_pid() -> int:
        return next(ids)

    return TransactionCoordinator(1, FAST, txn_log, markers, new_pid)


class FlakyMarkers(Markers):
    """Raises (a broken connection, an unexpected answer) ``failures`` times first."""

    def __init__(self, failures: int, error: Exception | None = None) -> None:
        super().__init__()
        self.failures = failures
        self.error = error or ConnectionResetError("leader went away")
        self.calls = 0
        self._called = asyncio.Event()

    async def write_markers(self, pid, epoch, commit, coordinator_epoch, partitions, still_owner) -> None:
        self.calls += 1
        self._called.set()
        if self.calls <= self.failures:
            raise self.error
        await super().write_markers(pid, epoch, commit, coordinator_epoch, partitions, still_owner)

    async def called(self, times: int) -> None:
        """Until ``write_markers`` has been called ``times`` times."""
        while self.calls < times:
            self._called.clear()
            await self._called.wait()


class RefusingLog(MemoryLog):
    """Refuses writes of a given state ``refusals`` times (NOT_ENOUGH_REPLICAS)."""

    def __init__(self, state: TransactionState, refusals: int) -> None:
        super().__init__()
        self.state, self.refusals, self.refused = state, refusals, 0

    async def append(self, partition: int, batch: bytes) -> ErrorCode:
        view = memoryview(batch)
        for pos, _h in iter_batches(view):
            for r in iter_records(view[pos:]):
                if r.value is not None and decode_value(TID, bytes(r.value)).state is self.state \
                        and self.refused < self.refusals:
                    self.refused += 1
                    return ErrorCode.NOT_ENOUGH_REPLICAS
        return await super().append(partition, batch)


async def ongoing(c: TransactionCoordinator) -> tuple[int, int]:
    _, pid, epoch = await c.init_producer_id(TID, 60_000)
    assert await c.add_partitions(TID, pid, epoch, frozenset({A, B})) is ErrorCode.NONE
    return pid, epoch


async def test_failing_marker_writer_is_retried_until_complete():
    markers = FlakyMarkers(failures=3)
    c = await owned(coordinator(MemoryLog(), markers))
    pid, epoch = await ongoing(c)
    assert await c.end_txn(TID, pid, epoch, True) is ErrorCode.NONE
    await settle(c)
    assert markers.calls == 4 and markers.written == [(pid, epoch, True, 7, frozenset({A, B}))]
    assert c.txns[TID].state is S.COMPLETE_COMMIT
    await c.shutdown()


async def test_refused_completion_write_is_retried():
    txn_log = RefusingLog(S.COMPLETE_ABORT, refusals=3)
    c = await owned(coordinator(txn_log, Markers()))
    pid, epoch = await ongoing(c)
    assert await c.end_txn(TID, pid, epoch, False) is ErrorCode.NONE
    await settle(c)
    assert txn_log.refused == 3 and c.txns[TID].state is S.COMPLETE_ABORT
    assert await c.init_producer_id(TID, 60_000) == (ErrorCode.NONE, pid, epoch + 1)  # not stuck
    await c.shutdown()


async def test_refused_prepare_abort_of_a_fenced_producer_is_retried():
    txn_log = RefusingLog(S.PREPARE_ABORT, refusals=2)
    markers = Markers()
    c = await owned(coordinator(txn_log, markers))
    pid, epoch = await ongoing(c)
    assert (await c.init_producer_id(TID, 60_000))[0] is ErrorCode.CONCURRENT_TRANSACTIONS
    await settle(c)
    assert txn_log.refused == 2 and c.txns[TID].state is S.COMPLETE_ABORT
    assert markers.written == [(pid, epoch + 1, False, 7, frozenset({A, B}))]
    await c.shutdown()


async def test_losing_the_partition_stops_the_retries():
    markers = FlakyMarkers(failures=10**6)
    txn_log = MemoryLog()
    c = await owned(coordinator(txn_log, markers))
    pid, epoch = await ongoing(c)
    assert await c.end_txn(TID, pid, epoch, True) is ErrorCode.NONE
    await markers.called(3)
    c.on_resigned(partition_for(TID, 4))
    calls = markers.calls
    await asyncio.sleep(0.05)
    assert markers.calls <= calls + 1 and not c._tasks  # stopped, no task left behind
    states = [decode_value(TID, bytes(r.value)).state for b in txn_log.batches[partition_for(TID, 4)]
              for pos, _h in iter_batches(memoryview(b)) for r in iter_records(memoryview(b)[pos:])]
    assert states[-1] is S.PREPARE_COMMIT  # the next coordinator completes it
    await c.shutdown()


async def test_reelection_with_a_new_epoch_resumes_under_it():
    markers = FlakyMarkers(failures=5)
    c = await owned(coordinator(MemoryLog(), markers))
    pid, epoch = await ongoing(c)
    assert await c.end_txn(TID, pid, epoch, True) is ErrorCode.NONE
    await markers.called(2)
    await owned(c, epoch=8)  # the same broker elected again, at a new leader epoch
    await settle(c)
    assert markers.written == [(pid, epoch, True, 8, frozenset({A, B}))]
    assert c.txns[TID].state is S.COMPLETE_COMMIT
    await c.shutdown()


async def test_a_fenced_coordinator_stops_sending_markers():
    markers = FlakyMarkers(failures=10**6, error=CoordinatorFencedError("newer coordinator epoch 9"))
    c = await owned(coordinator(MemoryLog(), markers))
    pid, epoch = await ongoing(c)
    assert await c.end_txn(TID, pid, epoch, True) is ErrorCode.NONE
    await asyncio.sleep(0.05)
    assert markers.calls == 1 and c.txns[TID].state is S.PREPARE_COMMIT
    await c.shutdown()


class LandsButTimesOut(MemoryLog):
    """Writes a Complete* but answers REQUEST_TIMED_OUT ``times`` times (the
    ISR did not confirm in time: the record is in the log all the same)."""

    def __init__(self, times: int) -> None:
        super().__init__()
        self.times = times

    async def append(self, partition: int, batch: bytes) -> ErrorCode:
        await super().append(partition, batch)
        view = memoryview(batch)
        for pos, _h in iter_batches(view):
            for r in iter_records(view[pos:]):
                if r.value is not None and decode_value(TID, bytes(r.value)).state in (S.COMPLETE_COMMIT, S.COMPLETE_ABORT) \
                        and self.times:
                    self.times -= 1
                    return ErrorCode.REQUEST_TIMED_OUT
        return ErrorCode.NONE


async def test_the_same_epoch_again_stops_the_previous_tenures_retries():
    # A broker that fenced itself (its ZooKeeper session in doubt) and got
    # the session back leads again at the same leader epoch: the completion
    # still retrying from before must not write its Complete* over the
    # transaction the producer began since the reload.
    txn_log = LandsButTimesOut(times=10**6)
    slow = TransactionConfig(num_partitions=4, retry_backoff_ms=100, max_retry_backoff_ms=100)
    c = await owned(TransactionCoordinator(1, slow, txn_log, Markers(), coordinator(txn_log, Markers()).new_producer_id))
    pid, epoch = await ongoing(c)
    assert await c.end_txn(TID, pid, epoch, True) is ErrorCode.NONE
    await asyncio.sleep(0.02)  # the Complete* landed, answered as timed out; its retry waits 100 ms
    partition = partition_for(TID, 4)
    c.on_resigned(partition)
    txn_log.times = 0
    await owned(c)  # the same epoch, 7
    assert c.txns[TID].state is S.COMPLETE_COMMIT
    _, pid2, epoch2 = await c.init_producer_id(TID, 60_000)
    assert await c.add_partitions(TID, pid2, epoch2, frozenset({A})) is ErrorCode.NONE
    await asyncio.sleep(0.25)  # past the old retry's pause
    assert c.txns[TID].state is S.ONGOING and c.txns[TID].producer_epoch == epoch2
    last = [decode_value(TID, bytes(r.value)) for b in txn_log.batches[partition]
            for pos, _h in iter_batches(memoryview(b)) for r in iter_records(memoryview(b)[pos:])][-1]
    assert last.state is S.ONGOING and last.producer_epoch == epoch2
    await c.shutdown()
