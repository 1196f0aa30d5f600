"""``TransactionCoordinator``: owns the transactional ids whose
``__transaction_state`` partition this broker leads (KIP-98), loads them
when it becomes leader, drops them when it stops, and drives each
transaction's end: PrepareCommit/PrepareAbort written, then the markers
written to every partition of the transaction (``MarkerWriter`` seam: the
server sends WriteTxnMarkers to the partition leaders), then
CompleteCommit/CompleteAbort written.

Ownership per partition: LOADING (COORDINATOR_LOAD_IN_PROGRESS) -> OWNED,
with the partition's leader epoch as the coordinator epoch stamped in the
markers; a partition not owned answers NOT_COORDINATOR. Failover: a newly
elected coordinator loads the latest value of every id, owns the partition
once all it read is committed (a value above the high watermark could be
lost with this leader after a retried AddPartitionsToTxn was answered from
it), and resumes the markers of every transaction found in a Prepare state.

Every change of an id's metadata is written (``TransactionLog`` seam,
acks=-1) before it takes effect in memory; while the write is in flight the
id is *pending* and other requests for it get CONCURRENT_TRANSACTIONS
(retriable).

Its answers to producers: InitProducerId with a transactional id,
AddPartitionsToTxn, AddOffsetsToTxn (the group's offsets partition joins
the transaction) and EndTxn. To operators (KIP-664): ``describe`` one
owned id (DescribeTransactions) and ``list_transactions`` of every owned
id, filtered by state, producer id and duration (ListTransactions).

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
A v3+ request naming its producer id and epoch (KIP-360) must name the
id's current pair, else PRODUCER_FENCED.

Everything runs on the broker's event loop; the log scan of a load runs in
a thread.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from kavka.common.errors import ErrorCode
from kavka.common.ids import NO_PRODUCER_EPOCH, NO_PRODUCER_ID, ProducerEpoch, ProducerId
from kavka.common.linear_regex import RegexError, compile_linear
from kavka.common.topic_partition import TopicPartition
from kavka.protocol.records import SimpleRecord, build_batch, iter_batches, iter_records
from kavka.transaction.records import InvalidTransactionRecord, decode_key, decode_value, encode_key, encode_value
from kavka.transaction.state import MAX_PRODUCER_EPOCH, TransactionMetadata, TransactionState, partition_for

log = logging.getLogger("kavka.transaction")

TRANSACTION_STATE_TOPIC = "__transaction_state"
S = TransactionState


class TransactionLog(Protocol):
    """Where the coordinator's records go: ``append`` writes one batch to a
    ``__transaction_state`` partition and returns once the ISR has it (or
    the error); ``read_all`` yields its raw batches (from a worker thread);
    ``wait_committed`` returns once what a load read is committed (False
    when ``still_wanted`` gives the load up)."""

    async def append(self, partition: int, batch: bytes) -> ErrorCode: ...

    def read_all(self, partition: int) -> Iterator[bytes]: ...

    async def wait_committed(self, partition: int, still_wanted: Callable[[], bool]) -> bool: ...


class CoordinatorFencedError(Exception):
    """A partition leader refused a marker with TRANSACTION_COORDINATOR_FENCED:
    a coordinator with a newer epoch already wrote markers for the producer
    there, so this one is a zombie for the transaction and stops (Kafka
    cancels the remaining markers the same way)."""


class MarkerWriter(Protocol):
    """Writes one transaction's markers to the leaders of ``partitions``;
    returns when every partition has it or is gone (deleted topic), retrying
    leader changes meanwhile. ``still_owner`` tells it when to give up
    (this broker stopped coordinating the transaction). Raises
    ``CoordinatorFencedError`` when a leader knows a newer coordinator epoch."""

    async def write_markers(self, producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int,
                            partitions: frozenset[TopicPartition], still_owner: Callable[[], bool]) -> None: ...


@dataclass(frozen=True, slots=True)
class TransactionConfig:
    num_partitions: int = 50
    max_timeout_ms: int = 900_000
    abort_timed_out_interval_ms: int = 10_000  # Kafka's default cleanup interval
    id_expiration_ms: int = 604_800_000
    retry_backoff_ms: int = 100  # first pause before retrying a failed marker/state write
    max_retry_backoff_ms: int = 5_000  # the pause doubles up to this

    @classmethod
    def from_broker(cls, cfg: Any) -> TransactionConfig:
        return cls(cfg["transaction.state.log.num.partitions"], cfg["transaction.max.timeout.ms"],
                   abort_timed_out_interval_ms=cfg["transaction.abort.timed.out.transaction.cleanup.interval.ms"],
                   id_expiration_ms=cfg["transactional.id.expiration.ms"])


class TransactionCoordinator:
    """See the module docstring. ``on_elected`` / ``on_resigned`` from the
    LeaderAndIsr path; the handlers call the request methods."""

    def __init__(self, broker_id: int, config: TransactionConfig, txn_log: TransactionLog,
                 markers: MarkerWriter, new_producer_id: Callable[[], Awaitable[ProducerId]]) -> None:
        self.broker_id = broker_id
        self.config = config
        self.txn_log = txn_log
        self.markers = markers
        self.new_producer_id = new_producer_id
        self.txns: dict[str, TransactionMetadata] = {}
        self.pending: set[str] = set()
        self.owned: dict[int, int] = {}  # partition -> coordinator epoch
        self.loading: dict[int, int] = {}
        self._tasks: set[asyncio.Task] = set()
        self._tasks_of: dict[int, set[asyncio.Task]] = {}  # the tasks of each owned partition's tenure
        self._expiry_task: asyncio.Task | None = None

    # -- time and ownership -------------------------------------------------------------------
    @staticmethod
    def now_ms() -> int:
        return int(time.time() * 1000)

    def partition_of(self, transactional_id: str) -> int:
        return partition_for(transactional_id, self.config.num_partitions)

    def ownership_error(self, transactional_id: str | None) -> ErrorCode:
        """NONE when this broker coordinates the id now."""
        if not transactional_id:
            return ErrorCode.INVALID_REQUEST
        p = self.partition_of(transactional_id)
        if p in self.loading:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        if p not in self.owned:
            return ErrorCode.NOT_COORDINATOR
        return ErrorCode.NONE

    def _spawn(self, coro, name: str, partition: int) -> None:
        """Run ``coro`` as work of this broker's tenure of ``partition``:
        losing the partition cancels it (``_end_tenure``)."""
        task = asyncio.get_running_loop().create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        of_partition = self._tasks_of.setdefault(partition, set())
        of_partition.add(task)
        task.add_done_callback(of_partition.discard)

    def _end_tenure(self, partition: int) -> None:
        """Stop every task of this broker's tenure of ``partition``. Checking
        the coordinator epoch is not enough: a broker that fenced itself
        while its ZooKeeper session was in doubt and got the same session
        back leads again at the same leader epoch, reloads the partition,
        and a completion of the previous tenure still retrying would then
        write its stale Complete* over a transaction begun since (the
        transaction's partitions would never get their markers)."""
        for task in self._tasks_of.pop(partition, ()):
            task.cancel()

    # -- requests (InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn) -----------------------
    async def init_producer_id(self, tid: str, timeout_ms: int, producer_id: ProducerId = NO_PRODUCER_ID,
                               producer_epoch: ProducerEpoch = NO_PRODUCER_EPOCH) -> tuple[ErrorCode, int, int]:
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
            fresh = TransactionMetadata(tid, pid, ProducerEpoch(0), timeout_ms, S.EMPTY, frozenset(), -1, now)
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

    def _check_producer(self, tid: str, producer_id: int,
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

    async def add_partitions(self, tid: str, producer_id: int, producer_epoch: int,
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

    async def end_txn(self, tid: str, producer_id: int, producer_epoch: int,
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
        self._spawn(self._complete(tid, prepared, epoch), f"complete-{tid}", self.partition_of(tid))
        return ErrorCode.NONE

    # -- what operators see (KIP-664) ---------------------------------------------------------------
    def describe(self, tid: str) -> tuple[ErrorCode, TransactionMetadata | None]:
        """DescribeTransactions of one id (Kafka's handleDescribeTransactions):
        INVALID_REQUEST for "", NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS
        when this broker does not own it (yet), TRANSACTIONAL_ID_NOT_FOUND
        when it owns no such id (or the id is being expired)."""
        err = self.ownership_error(tid)
        if err is not ErrorCode.NONE:
            return err, None
        m = self.txns.get(tid)
        if m is None or m.state is S.DEAD:
            return ErrorCode.TRANSACTIONAL_ID_NOT_FOUND, None
        return ErrorCode.NONE, m

    def list_transactions(self, producer_ids: frozenset[int], state_names: frozenset[str], duration_ms: int,
                          now_ms: int, id_pattern: str | None = None,
                          ) -> tuple[ErrorCode, list[str], list[TransactionMetadata]]:
        """ListTransactions over every id this broker owns (Kafka's
        TransactionStateManager.listTransactionStates): COORDINATOR_LOAD_IN_PROGRESS
        while any partition loads; else the ids matching every given filter
        (an empty filter matches all; ``duration_ms`` < 0 none): a producer id
        of ``producer_ids``, a state named in ``state_names`` (the names no
        state has are returned, and match nothing), running for longer than
        ``duration_ms`` since the transaction started (KIP-994), a
        transactional id matched whole by ``id_pattern`` (KIP-1152; None or
        empty: no filter; one RE2 cannot compile: INVALID_REGULAR_EXPRESSION).
        Dead ids, being expired, are never listed."""
        if self.loading:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, [], []
        try:
            pattern = compile_linear(id_pattern) if id_pattern else None
        except RegexError:
            return ErrorCode.INVALID_REGULAR_EXPRESSION, [], []
        states = {n: TransactionState.from_kafka_name(n) for n in state_names}
        unknown = sorted(n for n, state in states.items() if state is None)
        wanted = {state for state in states.values() if state is not None}
        found = []
        for tid in sorted(self.txns):
            m = self.txns[tid]
            if m.state is S.DEAD or self.partition_of(tid) not in self.owned:
                continue
            if producer_ids and m.producer_id not in producer_ids:
                continue
            if state_names and m.state not in wanted:
                continue
            if duration_ms >= 0 and now_ms - m.start_ms <= duration_ms:
                continue
            if pattern is not None and not pattern.fullmatch(tid):
                continue
            found.append(m)
        return ErrorCode.NONE, unknown, found

    # -- leadership ------------------------------------------------------------------------------
    def on_elected(self, partition: int, leader_epoch: int) -> None:
        if self.owned.get(partition) == leader_epoch or self.loading.get(partition) == leader_epoch:
            return
        self.owned.pop(partition, None)
        # Tasks of the previous tenure stop; what they held pending is
        # reloaded (and resumed) under the new one.
        self._end_tenure(partition)
        self._forget(partition)
        self.loading[partition] = leader_epoch
        self._spawn(self._load(partition, leader_epoch), f"load-transactions-{partition}", partition)
        if self._expiry_task is None:
            self._expiry_task = asyncio.get_running_loop().create_task(self._abort_timed_out_loop(),
                                                                       name="transaction-timeouts")

    def on_resigned(self, partition: int) -> None:
        self.loading.pop(partition, None)
        self.owned.pop(partition, None)
        self._end_tenure(partition)
        self._forget(partition)
        log.info("unloaded the transactions of %s-%d", TRANSACTION_STATE_TOPIC, partition)

    def _forget(self, partition: int) -> None:
        for tid in [t for t in self.txns if self.partition_of(t) == partition]:
            del self.txns[tid]
        self.pending -= {t for t in self.pending if self.partition_of(t) == partition}

    async def _load(self, partition: int, epoch: int) -> None:
        try:
            found = await asyncio.to_thread(self._scan, partition)
        except Exception:
            log.exception("loading %s-%d failed", TRANSACTION_STATE_TOPIC, partition)
            if self.loading.get(partition) == epoch:
                del self.loading[partition]
            return
        if self.loading.get(partition) != epoch:
            return  # resigned (or re-elected) meanwhile
        # Served only once committed: a transaction's partitions read from
        # the tail above the high watermark could vanish with this leader
        # after a retried AddPartitionsToTxn was answered from them.
        if not await self.txn_log.wait_committed(partition, lambda: self.loading.get(partition) == epoch):
            if self.loading.get(partition) == epoch:  # the partition is gone
                del self.loading[partition]
            return
        for tid, m in found.items():
            self.txns[tid] = m
        del self.loading[partition]
        self.owned[partition] = epoch
        log.info("loaded %d transactional ids of %s-%d", len(found), TRANSACTION_STATE_TOPIC, partition)
        for tid, m in found.items():
            if m.state.is_preparing or m.state is S.PREPARE_EPOCH_FENCE:
                self._resume(tid, epoch)

    def _scan(self, partition: int) -> dict[str, TransactionMetadata]:
        latest: dict[str, TransactionMetadata | None] = {}
        for chunk in self.txn_log.read_all(partition):
            view = memoryview(chunk)
            for pos, header in iter_batches(view):
                if header.is_control:
                    continue
                for record in iter_records(view[pos:]):
                    if record.key is None:
                        continue
                    try:
                        tid = decode_key(bytes(record.key))
                        latest[tid] = None if record.value is None else decode_value(tid, bytes(record.value))
                    except InvalidTransactionRecord as e:
                        log.warning("skipping record at offset %d of %s-%d: %s", record.offset,
                                    TRANSACTION_STATE_TOPIC, partition, e)
        return {tid: m for tid, m in latest.items() if m is not None and m.state is not S.DEAD}

    def _resume(self, tid: str, epoch: int) -> None:
        m = self.txns[tid]
        self.pending.add(tid)
        if m.state is S.PREPARE_EPOCH_FENCE:
            self._spawn(self._abort_fenced(tid, epoch), f"fence-{tid}", self.partition_of(tid))
        else:
            self._spawn(self._complete(tid, m, epoch), f"complete-{tid}", self.partition_of(tid))

    # -- persistence -----------------------------------------------------------------------------
    async def write(self, m: TransactionMetadata, coordinator_epoch: int | None = None) -> ErrorCode:
        """Write ``m`` and, on success, make it the id's value; nothing is
        written unless this broker owns the id's partition (at
        ``coordinator_epoch`` when given). Kafka's mapping of append errors
        to what a transactional client retries."""
        tid = m.transactional_id
        partition = self.partition_of(tid)
        epoch = self.owned.get(partition)
        if epoch is None or (coordinator_epoch is not None and coordinator_epoch != epoch):
            return ErrorCode.NOT_COORDINATOR
        record = SimpleRecord(encode_key(tid), encode_value(m), self.now_ms())
        code = await self.txn_log.append(partition, build_batch([record]))
        if code in (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.NOT_ENOUGH_REPLICAS,
                    ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND, ErrorCode.REQUEST_TIMED_OUT):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if code in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.KAFKA_STORAGE_ERROR):
            return ErrorCode.NOT_COORDINATOR
        if code is not ErrorCode.NONE:
            return ErrorCode.UNKNOWN_SERVER_ERROR
        if self.owned.get(partition) != epoch:
            return ErrorCode.NOT_COORDINATOR  # resigned while the write was in flight
        self.txns[tid] = m
        return ErrorCode.NONE

    # -- ending a transaction ------------------------------------------------------------------------
    async def _complete(self, tid: str, prepared: TransactionMetadata, epoch: int) -> None:
        """Markers, then Complete*: the second half of EndTxn (and of an
        abort by timeout or fencing), by the coordinator of ``epoch`` (which
        wrote the Prepare*). ``tid`` is pending throughout. Nothing may
        leave the transaction stuck in Prepare* while this broker still
        coordinates it (KIP-98: the markers must eventually be written):
        a failing marker writer or state write is retried with a growing
        pause; only losing the ``__transaction_state`` partition (or a new
        coordinator epoch) stops it, and the next coordinator resumes."""
        partition = self.partition_of(tid)
        commit = prepared.state is S.PREPARE_COMMIT

        def still_owner() -> bool:
            return self.owned.get(partition) == epoch

        try:
            backoff = self._backoff()
            while still_owner():
                try:
                    await self.markers.write_markers(prepared.producer_id, prepared.producer_epoch, commit, epoch,
                                                     prepared.partitions, still_owner)
                    break
                except CoordinatorFencedError as e:
                    log.warning("markers of %r refused: %s; a newer coordinator owns the transaction", tid, e)
                    return
                except Exception:
                    log.exception("writing the markers of %r failed; retrying", tid)
                    await asyncio.sleep(next(backoff))
            if not still_owner():
                return
            done = prepared.transition(S.COMPLETE_COMMIT if commit else S.COMPLETE_ABORT, self.now_ms(),
                                       partitions=frozenset())
            await self._write_until_done(done, epoch)
        finally:
            # A task of an ended tenure leaves ``pending`` to the new one.
            if self.owned.get(partition) == epoch and asyncio.current_task() in self._tasks_of.get(partition, ()):
                self.pending.discard(tid)

    def _backoff(self) -> Iterator[float]:
        """Pauses in seconds: retry.backoff doubling up to its maximum."""
        ms = self.config.retry_backoff_ms
        while True:
            yield ms / 1000
            ms = min(ms * 2, self.config.max_retry_backoff_ms)

    async def _write_until_done(self, m: TransactionMetadata, epoch: int) -> bool:
        """Write ``m`` as coordinator of ``epoch``, retrying any failure
        (an ISR below min.insync.replicas, a timeout) while this broker
        still owns the partition at that epoch; False once it does not."""
        partition = self.partition_of(m.transactional_id)
        backoff = self._backoff()
        while self.owned.get(partition) == epoch:
            code = await self.write(m, epoch)
            if code is ErrorCode.NONE:
                return True
            if self.owned.get(partition) != epoch:
                break
            log.warning("writing state %s of %r failed: %s; retrying", m.state.name, m.transactional_id, code.name)
            await asyncio.sleep(next(backoff))
        log.info("no longer coordinator of %r (epoch %d): the next coordinator resumes its transaction",
                 m.transactional_id, epoch)
        return False

    async def _abort_fenced(self, tid: str, epoch: int) -> None:
        """Abort a transaction whose producer was fenced (new instance or
        timeout) under its bumped epoch. ``tid`` is already pending."""
        m = self.txns.get(tid)
        if m is None:
            self.pending.discard(tid)
            return
        prepared = m.transition(S.PREPARE_ABORT, self.now_ms())
        if not await self._write_until_done(prepared, epoch):
            return
        await self._complete(tid, prepared, epoch)

    def fence_and_abort(self, tid: str) -> bool:
        """Start aborting an Ongoing transaction under epoch + 1 (the old
        producer instance gets PRODUCER_FENCED from then on). The id is
        pending from now until the abort completed."""
        m = self.txns.get(tid)
        if m is None or m.state is not S.ONGOING or tid in self.pending:
            return False
        epoch = self.owned.get(self.partition_of(tid))
        if epoch is None:
            return False
        self.pending.add(tid)
        self._spawn(self._fence(tid, m, epoch), f"fence-{tid}", self.partition_of(tid))
        return True

    async def _fence(self, tid: str, m: TransactionMetadata, epoch: int) -> None:
        fenced = m.transition(S.PREPARE_EPOCH_FENCE, self.now_ms(), producer_epoch=m.producer_epoch + 1)
        code = await self.write(fenced, epoch)
        if code is ErrorCode.NONE:
            await self._abort_fenced(tid, epoch)
        else:
            self.pending.discard(tid)

    async def _abort_timed_out_loop(self) -> None:
        interval = self.config.abort_timed_out_interval_ms / 1000
        while True:
            await asyncio.sleep(interval)
            self.abort_timed_out(self.now_ms())
            try:
                await self.expire_transactional_ids(self.now_ms())
            except Exception:
                log.exception("transactional id expiry failed")

    async def expire_transactional_ids(self, now_ms: int) -> list[str]:
        """Remove owned ids with no open transaction idle for
        ``transactional.id.expiration.ms``: a tombstone, then gone (a
        later InitProducerId starts the id afresh with a new producer id)."""
        idle = [tid for tid, m in self.txns.items()
                if self.partition_of(tid) in self.owned and tid not in self.pending and m.state.is_complete
                and now_ms - m.last_update_ms >= self.config.id_expiration_ms]
        expired = []
        for tid in idle:
            partition = self.partition_of(tid)
            epoch = self.owned.get(partition)
            self.pending.add(tid)
            try:
                record = SimpleRecord(encode_key(tid), None, now_ms)
                code = await self.txn_log.append(partition, build_batch([record]))
            finally:
                self.pending.discard(tid)
            if code is ErrorCode.NONE and self.owned.get(partition) == epoch and self.txns.get(tid) is not None:
                del self.txns[tid]
                expired.append(tid)
        return expired

    def abort_timed_out(self, now_ms: int) -> list[str]:
        """Fence and abort every owned Ongoing transaction past its timeout."""
        expired = [tid for tid, m in self.txns.items()
                   if self.partition_of(tid) in self.owned and tid not in self.pending and m.has_expired(now_ms)]
        for tid in expired:
            log.info("aborting the transaction of %r: older than its timeout", tid)
            self.fence_and_abort(tid)
        return expired

    async def shutdown(self) -> None:
        tasks = [*self._tasks, *([self._expiry_task] if self._expiry_task else [])]
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._expiry_task = None
