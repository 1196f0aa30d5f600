"""The transaction coordinator's answers to producers (KIP-98):
InitProducerId with a transactional id, AddPartitionsToTxn,
AddOffsetsToTxn, EndTxn. Mixed into ``TransactionCoordinator``.

Checks, in Kafka's order: ownership (NOT_COORDINATOR,
COORDINATOR_LOAD_IN_PROGRESS); the id known and the producer id its own
(INVALID_PRODUCER_ID_MAPPING); the epoch current (PRODUCER_FENCED — the
client was replaced by a newer instance or its transaction timed out);
nothing in flight for the id (CONCURRENT_TRANSACTIONS, retriable: a write
or a transaction's markers are still going on).

InitProducerId: a new id gets a fresh producer id, epoch 0, state Empty.
A known id gets its epoch bumped (a new producer id once the epoch would
pass 32767), so every older instance is fenced; if it had an Ongoing
transaction that one is first aborted under the bumped epoch and the
caller told CONCURRENT_TRANSACTIONS until the abort completed (it retries).
A v3+ request naming its current producer id and epoch (KIP-360) must name
the id's current or previous pair, else PRODUCER_FENCED.
Event loop only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kavka.common.errors import ErrorCode
from kavka.common.topic_partition import TopicPartition
from kavka.transaction.state import MAX_PRODUCER_EPOCH, TransactionMetadata, TransactionState

if TYPE_CHECKING:
    from kavka.transaction.coordinator import TransactionCoordinator

S = TransactionState


class TransactionRequests:
    """Request methods of ``TransactionCoordinator`` (see the module docstring)."""

    async def init_producer_id(self: "TransactionCoordinator", tid: str, timeout_ms: int, producer_id: int = -1,
                               producer_epoch: int = -1) -> tuple[ErrorCode, int, int]:
        err = self.ownership_error(tid)
        if err is not ErrorCode.NONE:
            return err, -1, -1
        if not 0 < timeout_ms <= self.config.max_timeout_ms:
            return ErrorCode.INVALID_TRANSACTION_TIMEOUT, -1, -1
        if tid in self.pending:
            return ErrorCode.CONCURRENT_TRANSACTIONS, -1, -1
        now = self.now_ms()
        m = self.txns.get(tid)
        if m is None:
            self.pending.add(tid)
            try:
                pid = await self.new_producer_id()
            except Exception:  # ZooKeeper unreachable: the client retries
                self.pending.discard(tid)
                return ErrorCode.COORDINATOR_NOT_AVAILABLE, -1, -1
            fresh = TransactionMetadata(tid, pid, 0, timeout_ms, S.EMPTY, frozenset(), -1, now)
            code = await self.write(fresh)
            self.pending.discard(tid)
            return (code, pid, 0) if code is ErrorCode.NONE else (code, -1, -1)
        if producer_id >= 0 and (producer_id, producer_epoch) != (m.producer_id, m.producer_epoch):
            return ErrorCode.PRODUCER_FENCED, -1, -1
        if m.state.is_preparing or m.state is S.PREPARE_EPOCH_FENCE:
            return ErrorCode.CONCURRENT_TRANSACTIONS, -1, -1
        if m.state is S.ONGOING:
            self.fence_and_abort(tid)
            return ErrorCode.CONCURRENT_TRANSACTIONS, -1, -1
        self.pending.add(tid)
        try:
            pid, epoch = m.producer_id, m.producer_epoch + 1
            if epoch > MAX_PRODUCER_EPOCH - 1:
                pid, epoch = await self.new_producer_id(), 0
            bumped = m.transition(S.EMPTY, now, producer_id=pid, producer_epoch=epoch, timeout_ms=timeout_ms,
                                  partitions=frozenset(), start_ms=-1)
            code = await self.write(bumped)
        except Exception:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, -1, -1
        finally:
            self.pending.discard(tid)
        return (code, pid, epoch) if code is ErrorCode.NONE else (code, -1, -1)

    def _check_producer(self: "TransactionCoordinator", tid: str, producer_id: int,
                        producer_epoch: int) -> tuple[ErrorCode, TransactionMetadata | None]:
        err = self.ownership_error(tid)
        if err is not ErrorCode.NONE:
            return err, None
        m = self.txns.get(tid)
        if m is None or m.producer_id != producer_id:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING, None
        if producer_epoch != m.producer_epoch:
            return ErrorCode.PRODUCER_FENCED, None
        if tid in self.pending or m.state.is_preparing:
            return ErrorCode.CONCURRENT_TRANSACTIONS, None
        if m.state is S.PREPARE_EPOCH_FENCE:
            return ErrorCode.PRODUCER_FENCED, None
        return ErrorCode.NONE, m

    async def add_partitions(self: "TransactionCoordinator", tid: str, producer_id: int, producer_epoch: int,
                             partitions: frozenset[TopicPartition]) -> ErrorCode:
        """AddPartitionsToTxn (and AddOffsetsToTxn with the group's offsets
        partition): the transaction becomes (or stays) Ongoing with them."""
        err, m = self._check_producer(tid, producer_id, producer_epoch)
        if m is None:
            return err
        if m.state is S.ONGOING and partitions <= m.partitions:
            return ErrorCode.NONE  # a retry: nothing to write
        self.pending.add(tid)
        try:
            return await self.write(m.add_partitions(partitions, self.now_ms()))
        finally:
            self.pending.discard(tid)

    async def end_txn(self: "TransactionCoordinator", tid: str, producer_id: int, producer_epoch: int,
                      commit: bool) -> ErrorCode:
        """EndTxn: answered once Prepare* is written; markers and Complete*
        follow in the background (the id stays pending until then)."""
        err = self.ownership_error(tid)
        if err is not ErrorCode.NONE:
            return err
        m = self.txns.get(tid)
        if m is None or m.producer_id != producer_id:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING
        if producer_epoch != m.producer_epoch:
            return ErrorCode.PRODUCER_FENCED
        wanted_prepare, wanted_complete = (
            (S.PREPARE_COMMIT, S.COMPLETE_COMMIT) if commit else (S.PREPARE_ABORT, S.COMPLETE_ABORT)
        )
        if m.state is wanted_complete and tid not in self.pending:
            return ErrorCode.NONE  # a retry of an EndTxn that already completed
        if m.state is wanted_prepare:
            return ErrorCode.CONCURRENT_TRANSACTIONS  # still writing markers: retry
        if m.state is S.PREPARE_EPOCH_FENCE:
            return ErrorCode.PRODUCER_FENCED
        if m.state is not S.ONGOING:
            return ErrorCode.INVALID_TXN_STATE
        if tid in self.pending:
            return ErrorCode.CONCURRENT_TRANSACTIONS
        self.pending.add(tid)
        epoch = self.owned[self.partition_of(tid)]
        prepared = m.transition(wanted_prepare, self.now_ms())
        code = await self.write(prepared, epoch)
        if code is not ErrorCode.NONE:
            self.pending.discard(tid)
            return code
        self._spawn(self._complete(tid, prepared, epoch), f"complete-{tid}")
        return ErrorCode.NONE
