"""Per-partition state of idempotent producers (Kafka's ProducerStateManager,
KIP-98), kept beside the log so that a retried batch is never written twice.

For each producer id the partition remembers its epoch and the metadata of
its last five batches (first and last sequence, first and last offset,
timestamp) — five because a producer keeps at most five requests in flight
per partition. A leader append of an idempotent batch (producer id >= 0) is
checked against it using the batch header only, records never decoded
(``append_check``: fencing by producer and coordinator epoch,
duplicates answered with their original offsets, sequence order, KIP-360's
acceptance of an unknown producer); the entries themselves are
``entry``.

Transactions (KIP-98): the first transactional batch of a producer opens
its transaction at that batch's first offset (``current_txn_first_offset``);
a control batch (a COMMIT or ABORT marker written on the coordinator's
behalf) closes it and is reported as a ``CompletedTxn`` so that the log can
index an abort. The earliest open transaction's first offset is the
partition's first unstable offset. A marker also records the epoch of the
coordinator that sent it (``end_txn_marker``), so that a leader can
refuse a marker from a zombie coordinator. The last stable offset (LSO) is
min(high watermark, first unstable offset), and read_committed consumers
read no further.

Followers and recovery apply batches without any check (the leader already
decided). Producers idle for longer than ``producer.id.expiration.ms``
(one day by default) are dropped when a snapshot is taken or state loaded.

Snapshots (``snapshot``) are written at each segment roll and
at clean shutdown (fsynced by the log's next flush, off the event loop),
named by the log end offset they describe; loading takes
the latest readable snapshot at or below the log end offset and re-reads the
batch headers after it. Truncation deletes the snapshots past the new end
and reloads; a full truncation clears everything; retention deletes the
snapshots below the first remaining segment (the one at its base offset is
kept: it is the state before every remaining batch).

Not thread-safe: the owning ``Log`` calls it under its lock.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from kavka.common.ids import ProducerEpoch, ProducerId
from kavka.protocol.records.batch import RecordBatchHeader
from kavka.storage.producer_state.append_check import check_leader_append
from kavka.storage.producer_state.end_txn_marker import NO_COORDINATOR_EPOCH, coordinator_epoch_of
from kavka.storage.producer_state.end_txn_marker import is_marker as _is_marker
from kavka.storage.producer_state.entry import (
    DEFAULT_PRODUCER_ID_EXPIRATION_MS,
    ActiveProducer,
    BatchMetadata,
    CompletedTxn,
    ProducerStateEntry,
)
from kavka.storage.producer_state.snapshot import (
    CorruptSnapshotError,
    delete_snapshot,
    list_snapshots,
    read_snapshot,
    write_snapshot,
)

if TYPE_CHECKING:
    from kavka.storage.segment import LogSegment

logger = logging.getLogger(__name__)


def _tracked(header: RecordBatchHeader) -> bool:
    return header.producer_id >= 0 and not header.is_control


class ProducerStateManager:
    """The producer states of one partition and its snapshot files; see the
    module docstring."""

    def __init__(self, directory: Path, expiration_ms: int = DEFAULT_PRODUCER_ID_EXPIRATION_MS) -> None:
        self.dir = directory
        self.expiration_ms = expiration_ms
        self.producers: dict[int, ProducerStateEntry] = {}
        # producer id -> first offset of its open transaction: the entries
        # whose current_txn_first_offset >= 0, so that the first unstable
        # offset (asked at every read_committed fetch) costs the open
        # transactions, not the producers
        self._ongoing: dict[int, int] = {}
        self._unsynced: list[Path] = []

    # ---- leader checks and updates -----------------------------------------------------------
    def check_leader_append(
        self, headers: list[RecordBatchHeader], coordinator_epochs: list[int] | None = None
    ) -> BatchMetadata | None:
        """See ``append_check.check_leader_append``."""
        return check_leader_append(self.producers, headers, coordinator_epochs)

    def update_leader(
        self, headers: list[RecordBatchHeader], first_offset: int, append_time_ms: int | None,
        coordinator_epochs: list[int] | None = None,
    ) -> list[CompletedTxn]:
        """Record appended leader batches (offsets assigned from
        ``first_offset``); return the transactions their markers closed."""
        offset = first_offset
        completed: list[CompletedTxn] = []
        for i, h in enumerate(headers):
            last = offset + h.last_offset_delta
            if h.producer_id < 0:  # neither idempotent nor a marker: nothing to remember
                offset = last + 1
                continue
            ts = h.max_timestamp if append_time_ms is None else append_time_ms
            epoch = coordinator_epochs[i] if coordinator_epochs is not None else NO_COORDINATOR_EPOCH
            self._apply(h, offset, last, ts, completed, epoch)
            offset = last + 1
        return completed

    def update_replicated(
        self, headers: Iterable[RecordBatchHeader], coordinator_epochs: list[int] | None = None
    ) -> list[CompletedTxn]:
        """Record batches as written by a leader (follower append, recovery);
        return the transactions their markers closed. A marker's coordinator
        epoch is recorded, never checked (the leader decided)."""
        completed: list[CompletedTxn] = []
        for i, h in enumerate(headers):
            epoch = coordinator_epochs[i] if coordinator_epochs is not None else NO_COORDINATOR_EPOCH
            self._apply(h, h.base_offset, h.last_offset, h.max_timestamp, completed, epoch)
        return completed

    def _apply(
        self, h: RecordBatchHeader, first: int, last: int, timestamp: int, completed: list[CompletedTxn],
        coordinator_epoch: int = NO_COORDINATOR_EPOCH,
    ) -> None:
        if _tracked(h):
            self._add(h, first, last, timestamp)
        elif _is_marker(h):
            done = self._complete_txn(h, first, timestamp, coordinator_epoch)
            if done is not None:
                completed.append(done)

    def _add(self, h: RecordBatchHeader, first_offset: int, last_offset: int, timestamp: int) -> None:
        entry = self.producers.get(h.producer_id)
        if entry is None:
            entry = self.producers[h.producer_id] = ProducerStateEntry(
                ProducerId(h.producer_id), ProducerEpoch(h.producer_epoch))
        entry.add(ProducerEpoch(h.producer_epoch), BatchMetadata(h.base_sequence, h.last_sequence, first_offset, last_offset, timestamp))
        if h.is_transactional and entry.current_txn_first_offset < 0:
            entry.current_txn_first_offset = first_offset
            self._ongoing[h.producer_id] = first_offset

    def _complete_txn(
        self, h: RecordBatchHeader, marker_offset: int, timestamp: int, coordinator_epoch: int
    ) -> CompletedTxn | None:
        """A marker closes the producer's open transaction, if any, and its
        coordinator epoch becomes the producer's. A marker may carry a
        bumped epoch (an abort on fencing, KIP-360): the entry takes it, and
        its sequence window restarts with it."""
        entry = self.producers.get(h.producer_id)
        if entry is None:
            entry = self.producers[h.producer_id] = ProducerStateEntry(
                ProducerId(h.producer_id), ProducerEpoch(h.producer_epoch))
        if coordinator_epoch != NO_COORDINATOR_EPOCH:
            entry.coordinator_epoch = coordinator_epoch
        if h.producer_epoch > entry.producer_epoch:
            entry.producer_epoch = ProducerEpoch(h.producer_epoch)
            entry.batches.clear()
        entry.last_timestamp = max(entry.last_timestamp, timestamp)
        first = entry.current_txn_first_offset
        entry.current_txn_first_offset = -1
        self._ongoing.pop(h.producer_id, None)
        if first < 0:
            return None  # a marker for a transaction with no data here (or a retried marker)
        still_open = self.first_unstable_offset()
        return CompletedTxn(h.producer_id, first, marker_offset,
                            marker_offset + 1 if still_open is None else still_open)

    def first_unstable_offset(self) -> int | None:
        """First offset of the earliest open transaction (None: all stable)."""
        return min(self._ongoing.values()) if self._ongoing else None

    def ongoing_transactions(self) -> dict[int, int]:
        """Open transactions: producer id -> first offset."""
        return dict(self._ongoing)

    def active_producers(self) -> list[ActiveProducer]:
        """Every producer this partition remembers, by producer id
        (DescribeProducers, KIP-664)."""
        return [self.producers[pid].active_producer() for pid in sorted(self.producers)]

    def last_entry(self, producer_id: int) -> ProducerStateEntry | None:
        return self.producers.get(producer_id)

    def remove_expired(self, now_ms: int) -> int:
        # A producer with an open transaction stays: its first offset holds the LSO back.
        expired = [
            pid for pid, e in self.producers.items()
            if now_ms - e.last_timestamp >= self.expiration_ms and e.current_txn_first_offset < 0
        ]
        for pid in expired:
            del self.producers[pid]
        return len(expired)

    # ---- snapshots ------------------------------------------------------------------------------
    def take_snapshot(self, offset: int, now_ms: int) -> None:
        """Write the state (which must cover every batch below ``offset``),
        without fsync: ``take_unsynced`` hands the file to the next flush."""
        self.remove_expired(now_ms)
        entries = [s for s in (e.to_snapshot() for e in self.producers.values()) if s is not None]
        self._unsynced.append(write_snapshot(self.dir, offset, entries, durable=False))

    def take_unsynced(self) -> list[Path]:
        """Snapshot files written since the last call (to fsync off the loop)."""
        paths, self._unsynced = self._unsynced, []
        return paths

    def snapshot_offsets(self) -> list[int]:
        return list_snapshots(self.dir)

    def delete_snapshots_before(self, offset: int) -> None:
        for off in list_snapshots(self.dir):
            if off < offset:
                delete_snapshot(self.dir, off)

    def delete_snapshots_after(self, offset: int) -> None:
        for off in list_snapshots(self.dir):
            if off > offset:
                delete_snapshot(self.dir, off)

    # ---- load, truncation -----------------------------------------------------------------------
    def load(self, segments: list[LogSegment], log_end_offset: int, now_ms: int) -> list[CompletedTxn]:
        """Rebuild from the latest good snapshot at or below
        ``log_end_offset`` and the batch headers after it; a corrupt snapshot
        is deleted and the next older one (or the log itself) used. Returns
        the transactions closed by markers in the scanned headers (the log
        re-indexes the aborted ones its ``.txnindex`` files lack)."""
        self.delete_snapshots_after(log_end_offset)
        self.producers = {}
        self._ongoing = {}
        start = segments[0].base_offset if segments else log_end_offset
        for off in reversed(list_snapshots(self.dir)):
            try:
                entries = read_snapshot(self.dir, off)
            except CorruptSnapshotError as e:
                logger.warning("ignoring producer snapshot: %s; rebuilding from the log", e)
                delete_snapshot(self.dir, off)
                continue
            self.producers = {e.producer_id: ProducerStateEntry.from_snapshot(e) for e in entries}
            self._ongoing = {pid: e.current_txn_first_offset for pid, e in self.producers.items()
                             if e.current_txn_first_offset >= 0}
            start = max(off, start)
            break
        completed: list[CompletedTxn] = []
        for i, segment in enumerate(segments):
            next_base = segments[i + 1].base_offset if i + 1 < len(segments) else None
            if next_base is not None and next_base <= start:
                continue
            found = segment.translate_offset(start) if segment.base_offset < start else None
            position = found[0] if found is not None else 0
            if segment.base_offset < start and found is None:
                continue
            found_batches = [(pos, h) for pos, h in segment.log.headers_from(position)
                             if start <= h.base_offset and h.last_offset < log_end_offset]
            epochs = [coordinator_epoch_of(segment.read_batch(pos, h.size)) if _is_marker(h) else NO_COORDINATOR_EPOCH
                      for pos, h in found_batches]
            completed += self.update_replicated([h for _pos, h in found_batches], epochs)
        self.remove_expired(now_ms)
        return completed

    def truncate_and_reload(self, segments: list[LogSegment], log_end_offset: int, now_ms: int) -> None:
        """After the log was cut to ``log_end_offset`` (the segments' own
        ``.txnindex`` files were cut with them)."""
        self.load(segments, log_end_offset, now_ms)

    def truncate_fully(self) -> None:
        self.producers = {}
        self._ongoing = {}
        self.delete_snapshots_after(-1)
