"""The segments of a partition on this broker's disk and what only they
decide (Kafka's ``LocalLog``): the log end offset, the recovery point,
appending to the active segment, rolling, flushing, truncating, reading,
removing and swapping segments, and the aborted-transaction indexes.

State: the ``LogSegments`` (ordered, the last one active); ``log_end_offset``
(LEO, the next offset to assign); ``recovery_point`` (every offset below
it is fsynced; recovery after a crash starts there, seed 002 §5.3); when
it last flushed and what its next flush must also make durable (the
directory after a new file, producer snapshots written at a roll); the
segments renamed ``.deleted`` and waiting out ``file.delete.delay.ms``
(seed 002 §5.4.1); and whether an I/O error took the log offline: this
log stops (``LogOfflineError``) and reports its directory to the
``LogDirFailureChannel``, which takes the whole directory offline (KIP-112).

The log start offset, high watermark, producer state and leader-epoch
cache are not here: ``Log`` keeps them on top and tells this class where
to cut.

Invariants: recovery_point <= LEO; every batch offset in a segment lies
below the next segment's base; the active segment's indexes have room.

Thread-safety: guarded by the lock the owning ``Log`` gives it. Every
method expects the caller to hold that lock, except ``flush``,
``maybe_flush`` and ``delete_expired_files``, which take it themselves and
release it around fsyncs and file removals (a segment removed meanwhile is
skipped; a reader that already holds a removed segment finishes safely,
since its files go only after the delay).
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from pathlib import Path

from kavka.common.clock import Clock
from kavka.common.topic_partition import TopicPartition
from kavka.protocol.records.control import ControlRecordType, parse_control_record
from kavka.protocol.records.reader import iter_records
from kavka.storage.checkpoint import fsync_dir
from kavka.storage.errors import KafkaStorageError, LogOfflineError, StorageError
from kavka.storage.fetch_data_info import FetchDataInfo, LogOffsetMetadata
from kavka.storage.flush_stats import LOG_FLUSH_STATS
from kavka.storage.index.transaction_index import AbortedTxn
from kavka.storage.log_append import ValidatedBatches
from kavka.storage.log_config import LogConfig
from kavka.storage.log_dir_failure_channel import LogDirFailureChannel
from kavka.storage.log_segments import LogSegments
from kavka.storage.producer_state.entry import CompletedTxn
from kavka.storage.producer_state.snapshot import fsync_file
from kavka.storage.read_buffers import ReadBuffers
from kavka.storage.segment import DELETED_SUFFIX, SWAP_SUFFIX, LogSegment

logger = logging.getLogger(__name__)


class MissingMarkerError(StorageError):
    """The producer state reported a marker at an offset the log lacks."""


class LocalLog:
    """See the module docstring. Built by ``Log`` from what ``LogLoader``
    loaded."""

    def __init__(
        self,
        directory: Path,
        topic_partition: TopicPartition,
        config: LogConfig,
        clock: Clock,
        rng: random.Random,
        lock: threading.RLock,
        segments: LogSegments,
        *,
        next_offset: int,
        recovery_point: int,
        failure_channel: LogDirFailureChannel | None = None,
    ) -> None:
        self.dir = directory
        self._failure_channel = failure_channel
        self.topic_partition = topic_partition
        self.config = config
        self.clock = clock
        self.segments = segments
        self._rng = rng
        self._lock = lock
        self._next_offset = next_offset
        self._recovery_point = recovery_point
        self._last_flush_ms = clock.milliseconds()
        self._dir_needs_fsync = False
        self._unsynced_files: list[Path] = []  # fsynced by the next flush
        # What takes a copy of a file the next flush writes first (the copy is
        # written outside the lock). A deque: a new leader's epoch is handed
        # over from the event loop without the log's lock (its append and
        # the flusher's popleft are each atomic; nothing handed over is lost).
        self._unwritten: deque[Callable[[], Callable[[], list[Path]] | None]] = deque()
        # Held from taking those copies until their files are written and
        # registered for fsync: a flush cannot collect its files (and pass
        # their records with the recovery point) while a write is in flight.
        self._writing = threading.Lock()
        self._roll_flush_offset: int | None = None  # a roll's end, flushed at the next maybe_flush
        self._pending_deletes: list[tuple[int, LogSegment]] = []  # (due ms, segment renamed .deleted)
        self._offline: KafkaStorageError | None = None

    # ---- state -----------------------------------------------------------------------------------
    def update_config(self, config: LogConfig) -> None:
        """A dynamic topic config change, used from the next operation on."""
        self.config = config

    @property
    def log_end_offset(self) -> int:
        return self._next_offset

    @property
    def recovery_point(self) -> int:
        return self._recovery_point

    @property
    def last_flush_ms(self) -> int:
        return self._last_flush_ms

    @property
    def unflushed_messages(self) -> int:
        return self._next_offset - self._recovery_point

    def log_end_offset_metadata(self) -> LogOffsetMetadata:
        active = self.segments.active
        return LogOffsetMetadata(self._next_offset, active.base_offset, active.size)

    def offset_metadata(self, offset: int) -> LogOffsetMetadata:
        """Where ``offset`` (within [first base, LEO]: the caller checks the
        range) is: its segment and the position of the batch holding it,
        or the segment's end when no batch there reaches it (Kafka's
        convertToOffsetMetadata). One index lookup and a header scan of at
        most ``index.interval.bytes``."""
        if offset >= self._next_offset:
            return self.log_end_offset_metadata()
        segment = self.segments.floor(offset)
        if segment is None:
            segment = self.segments.first
        found = segment.translate_offset(offset)
        position = found[0] if found is not None else segment.size
        return LogOffsetMetadata(offset, segment.base_offset, position)

    def raise_recovery_point(self, offset: int) -> None:
        """Everything below ``offset`` needs no recovery (the log start moved
        past it); never beyond LEO."""
        self._recovery_point = max(self._recovery_point, min(offset, self._next_offset))

    # ---- offline ---------------------------------------------------------------------------------
    @property
    def offline(self) -> bool:
        return self._offline is not None

    def check_online(self) -> None:
        if self._offline is not None:
            raise LogOfflineError(f"log {self.topic_partition} is offline after: {self._offline}", self.dir)

    def failed(self, error: KafkaStorageError) -> KafkaStorageError:
        """Take the log offline after an I/O error and report its log
        directory (the parent of the partition's directory) as failed
        (KIP-112: a failed disk takes every log on it offline); returns the
        error to raise."""
        self._offline = error
        logger.error("log %s is now offline: %s", self.topic_partition, error)
        if self._failure_channel is not None:
            self._failure_channel.maybe_add_offline_log_dir(
                self.dir.parent, f"Error while writing to the log of {self.topic_partition}", error.__cause__ or error)
        return error

    # ---- append and roll -------------------------------------------------------------------------
    def append(self, batches: ValidatedBatches) -> None:
        """Write validated batches to the active segment (rolled first by the
        caller when they would not fit) and move LEO past them."""
        try:
            self.segments.active.append(
                batches.last_offset, batches.max_timestamp, batches.offset_of_max_timestamp, batches.parts
            )
        except KafkaStorageError as e:
            raise self.failed(e) from None
        self._next_offset = batches.last_offset + 1

    def roll(self, expected_next_offset: int | None = None) -> LogSegment:
        """Make a new active segment at max(expected, LEO), trimming the old
        one (its end is flushed by the next ``maybe_flush``: Kafka flushes a
        rolled segment right away). An empty active segment is replaced
        rather than kept; one already at that base is returned as it is."""
        self.check_online()
        new_base = max(expected_next_offset or 0, self._next_offset)
        active = self.segments.active
        if active.size == 0:
            if active.base_offset == new_base:
                return active
            self.segments.pop_active()
            active.delete_files()
        else:
            active.on_become_inactive()
            self._roll_flush_offset = new_base
        segment = self._new_segment(new_base)
        self.segments.append(segment)
        self._dir_needs_fsync = True
        return segment

    def _new_segment(self, base_offset: int) -> LogSegment:
        try:
            return LogSegment(
                self.dir,
                base_offset,
                self.config,
                self.clock,
                roll_jitter_ms=self.config.random_segment_jitter(self._rng),
                preallocate=self.config.preallocate,
            )
        except (OSError, KafkaStorageError) as e:
            err = e if isinstance(e, KafkaStorageError) else KafkaStorageError("cannot create segment", self.dir, e)
            raise self.failed(err) from None

    # ---- flush (seed 002 §5.3: the recovery point) -----------------------------------------------
    def sync_with_next_flush(self, paths: Iterable[Path]) -> None:
        """Files written without fsync (producer snapshots, the leader-epoch
        checkpoint after a new epoch) that the next flush makes durable with
        their directory, off the event loop."""
        self._unsynced_files.extend(paths)

    def write_with_next_flush(self, take: Callable[[], Callable[[], list[Path]] | None]) -> None:
        """A file (the leader-epoch checkpoint after a new epoch) that the
        periodic flusher, the next flush or close writes, off the event
        loop: ``take`` (called under the log's lock) returns a write of the
        file as it is then, or None; the write (run outside the lock)
        returns what it wrote, for the flush to fsync."""
        self._unwritten.append(take)

    def _take_unwritten(self) -> list[Callable[[], list[Path]]]:
        """Under the log's lock (and ``_writing``): copies of the files
        handed to ``write_with_next_flush``. A copy taken with the log end
        holds the epochs of every record below it (an append assigns its
        epoch under the lock)."""
        writes = []
        unwritten = self._unwritten
        while unwritten:
            write = unwritten.popleft()()
            if write is not None:
                writes.append(write)
        return writes

    def _write(self, writes: list[Callable[[], list[Path]]]) -> list[Path]:
        """Run the writes (outside the log's lock, under ``_writing``); a
        failure takes the log offline."""
        written: list[Path] = []
        for write in writes:
            try:
                written.extend(write())
            except KafkaStorageError as e:
                with self._lock:
                    raise self.failed(e) from None
        return written

    def write_pending(self) -> None:
        """Write the files handed to ``write_with_next_flush`` now, for the
        next flush to fsync. The event loop's reads, which take the log's
        lock, do not wait for the disk: the files are copied under the lock
        and written outside it. A failure takes the log offline."""
        with self._writing:
            with self._lock:
                writes = self._take_unwritten()
            if writes:
                written = self._write(writes)
                with self._lock:
                    self._unsynced_files.extend(written)

    def flush(self, up_to_offset: int | None = None) -> bool:
        """fsync every segment holding offsets in [recovery point, up_to)
        (LEO by default), the files handed to ``sync_with_next_flush`` and,
        after a new file, the directory; then advance the recovery point.
        The files handed to ``write_with_next_flush`` are written first,
        as they are when the target is taken: the recovery point passes an
        epoch's records only once its checkpoint is written and fsynced.
        Returns whether it did anything. An fsync failure takes the log
        offline."""
        with self._writing:
            with self._lock:
                self.check_online()
                writes = self._take_unwritten()
                target = self._next_offset if up_to_offset is None else min(up_to_offset, self._next_offset)
            written = self._write(writes) if writes else []
            with self._lock:
                self._unsynced_files.extend(written)
        return self._flush_to(target)

    def _flush_to(self, target: int) -> bool:
        """``flush`` once the files pending at ``target`` are written and
        registered for fsync (the fsyncs run outside the log's lock)."""
        with self._lock:
            if target <= self._recovery_point and not self._dir_needs_fsync and not self._unsynced_files:
                return False
            todo = self.segments.overlapping(self._recovery_point, target)
            try:
                for segment in todo:  # the fsyncs below run outside the lock
                    segment.write_pending_index_entries()
            except OSError as e:
                raise self.failed(KafkaStorageError("index write failed", self.dir, e)) from None
            files, self._unsynced_files = self._unsynced_files, []
            fsync_directory = self._dir_needs_fsync or bool(files)
            self._dir_needs_fsync = False
        started = time.monotonic_ns()
        try:
            for path in files:
                fsync_file(path)
            for segment in todo:
                try:
                    segment.flush()
                except (KafkaStorageError, OSError):
                    with self._lock:
                        if self.segments.contains(segment):
                            raise
                    # removed (and maybe closed) meanwhile: nothing to make durable
            if fsync_directory:
                fsync_dir(self.dir)
        except KafkaStorageError as e:
            with self._lock:
                raise self.failed(e) from None
        except OSError as e:
            with self._lock:
                raise self.failed(KafkaStorageError("fsync failed", self.dir, e)) from None
        LOG_FLUSH_STATS.record_ns(time.monotonic_ns() - started)
        with self._lock:
            self._recovery_point = max(self._recovery_point, min(target, self._next_offset))
            self._last_flush_ms = self.clock.milliseconds()
            if self._roll_flush_offset is not None and self._roll_flush_offset <= self._recovery_point:
                self._roll_flush_offset = None
        return True

    def maybe_flush(self, now_ms: int) -> bool:
        """The periodic flusher: ``flush.ms`` since the last flush, or the
        segment rolled since (Kafka flushes a rolled segment right away)."""
        if self._unwritten and self._offline is None:
            self.write_pending()
        with self._lock:
            due = now_ms - self._last_flush_ms >= self.config.flush_ms and self.unflushed_messages > 0
            rolled = self._roll_flush_offset
        if due:
            return self.flush()
        if rolled is not None:
            return self.flush(rolled)
        return False

    # ---- truncation ------------------------------------------------------------------------------
    def truncate_to(self, target_offset: int) -> None:
        """Remove every batch at or after ``target_offset`` (from the start of
        the batch holding it), which lies past the first segment's base and
        below LEO."""
        self.remove_and_delete_segments(self.segments.higher_than(target_offset))
        try:
            _removed, cut_base = self.segments.active.truncate_to(target_offset)
        except KafkaStorageError as e:
            raise self.failed(e) from None
        self._next_offset = target_offset if cut_base is None else min(target_offset, cut_base)
        self._recovery_point = min(self._recovery_point, self._next_offset)

    def truncate_fully_and_start_at(self, new_offset: int) -> None:
        """Drop every segment and start empty at ``new_offset``."""
        self.remove_and_delete_segments(self.segments.values())
        self.segments.append(self._new_segment(new_offset))
        self._dir_needs_fsync = True
        self._next_offset = new_offset
        self._recovery_point = new_offset

    # ---- segment removal (retention, truncation, compaction) -------------------------------------
    def remove_and_delete_segments(self, doomed: list[LogSegment]) -> None:
        """Take segments out of the log and rename their files ``.deleted``;
        the files are removed after ``file.delete.delay.ms``."""
        if not doomed:
            return
        self.segments.remove(doomed)
        due = self.clock.milliseconds() + self.config.file_delete_delay_ms
        for segment in doomed:
            try:
                segment.change_suffix(DELETED_SUFFIX)
            except KafkaStorageError as e:
                raise self.failed(e) from None
            self._pending_deletes.append((due, segment))
        if self.config.file_delete_delay_ms == 0:
            self.delete_expired_files(due)

    def delete_expired_files(self, now_ms: int) -> int:
        """Remove ``.deleted`` files whose delay has passed; returns how many
        segments were removed."""
        with self._lock:
            due = [(t, s) for t, s in self._pending_deletes if t <= now_ms]
            self._pending_deletes = [(t, s) for t, s in self._pending_deletes if t > now_ms]
        for _t, segment in due:
            segment.delete_files()
        return len(due)

    def pending_deletes(self) -> int:
        return len(self._pending_deletes)

    def replace_segments(self, new_segment: LogSegment, old_segments: list[LogSegment]) -> None:
        """Compaction's swap (seed 002 §5.4.2 (6)): ``new_segment`` was written
        with suffix ``.cleaned``; it is trimmed and fsynced, renamed ``.swap``
        (the directory fsynced, so the swap is durable before anything old
        goes), put in the log in place of ``old_segments`` (renamed
        ``.deleted``), then its suffix is dropped. A crash between the steps
        is repaired on load by seed 002 §5.3 (2) and (4). The old segments
        must be in the log and never include the active segment."""
        self.check_online()
        if any(not self.segments.contains(s) for s in old_segments):
            raise ValueError("replace_segments: an old segment is no longer part of the log")
        if any(s is self.segments.active for s in old_segments):
            raise ValueError("replace_segments: the active segment is never replaced")
        try:
            new_segment.on_become_inactive()
            new_segment.flush()
            new_segment.change_suffix(SWAP_SUFFIX)
            fsync_dir(self.dir)
            self.remove_and_delete_segments([s for s in old_segments if s is not new_segment])
            new_segment.change_suffix("")
            fsync_dir(self.dir)
        except KafkaStorageError as e:
            raise self.failed(e) from None
        except OSError as e:
            raise self.failed(KafkaStorageError("segment swap failed", new_segment.log.path, e)) from None
        self.segments.add(new_segment)
        self._dir_needs_fsync = True

    # ---- read ------------------------------------------------------------------------------------
    def read(self, start_offset: int, max_bytes: int, max_offset: int | None, min_one_message: bool,
             buffers: ReadBuffers | None = None) -> FetchDataInfo:
        """Whole batches from the one holding ``start_offset`` (within
        [first base, LEO]: the caller checks the range), up to ``max_bytes``
        (the first batch whole when ``min_one_message``: KIP-74), never a
        batch reaching ``max_offset``; ``buffers``: where a large read lands
        (``kavka.storage.read_buffers``)."""
        end = self._next_offset
        if start_offset == end:
            active = self.segments.active
            return FetchDataInfo(LogOffsetMetadata(end, active.base_offset, active.size), b"")
        limit_segment, limit_position = None, None
        if max_offset is not None and max_offset < end:
            if max_offset <= start_offset:
                return FetchDataInfo(LogOffsetMetadata(start_offset), b"")
            limit_segment = self.segments.floor(max_offset)
            if limit_segment is not None:
                found = limit_segment.translate_offset(max_offset)
                limit_position = found[0] if found is not None else limit_segment.size
        for segment in self.segments.from_floor(start_offset):
            max_position = limit_position if segment is limit_segment else None
            fetched = segment.read(start_offset, max_bytes, max_position, min_one_message, buffers)
            if fetched is not None:
                meta = LogOffsetMetadata(start_offset, segment.base_offset, fetched.position)
                return FetchDataInfo(meta, fetched.records, fetched.first_entry_incomplete)
            if segment is limit_segment:
                break
        return FetchDataInfo(LogOffsetMetadata(start_offset), b"")

    # ---- aborted transactions (KIP-98 .txnindex) -------------------------------------------------
    def index_aborted(self, completed: Iterable[CompletedTxn]) -> int:
        """Append the aborted ones of ``completed`` (transactions their
        markers closed) to the ``.txnindex`` of the segment holding the
        marker, skipping any already there (a reload re-reports markers
        after the producer snapshot). Only markers are decoded (one small
        record each). Returns how many entries were added.

        An abort is indexed at its marker so that a fetch from offset F finds
        every abort whose marker is at or after F in the segment holding F
        and the ones after it (a marker may lie past the range while its
        data lies inside)."""
        added = 0
        for txn in completed:
            segment = self.segments.floor(txn.marker_offset)
            if segment is None:
                raise MissingMarkerError(f"no segment holds the marker at offset {txn.marker_offset}")
            last = segment.txn_index.last_offset
            if last is not None and txn.marker_offset <= last:
                continue
            if _marker_kind(segment, txn.marker_offset) is ControlRecordType.ABORT:
                segment.txn_index.append(
                    AbortedTxn(txn.producer_id, txn.first_offset, txn.marker_offset, txn.last_stable_offset)
                )
                added += 1
        return added

    def collect_aborted_transactions(self, fetch_offset: int, upper_bound_offset: int) -> list[AbortedTxn]:
        """Aborted transactions with data in [fetch_offset, upper_bound_offset),
        in marker order: from the segment holding ``fetch_offset`` on, stopping
        at an entry whose LSO reached the upper bound (no transaction still
        open there can have data inside the range)."""
        out: list[AbortedTxn] = []
        for segment in self.segments.from_floor(fetch_offset):
            search = segment.txn_index.collect_aborted(fetch_offset, upper_bound_offset)
            out += search.aborted
            if search.complete:
                break
        return out

    # ---- lifecycle -------------------------------------------------------------------------------
    def close(self) -> None:
        """Trim and close every segment; segments waiting to be deleted are
        closed too (their ``.deleted`` files go at the next startup), the
        files still to write are written."""
        if self._offline is None and self.dir.is_dir():
            # Not ``write_pending``: the caller holds the log's lock, which
            # ``_writing`` must not be taken under (a flush takes them in the
            # other order). A write in flight is ordered by the file's own lock.
            with self._lock:
                writes = self._take_unwritten()
            self._write(writes)
        self._unwritten.clear()
        for segment in self.segments:
            segment.close()
        self._close_pending_deletes()

    def close_quietly(self) -> None:
        """Release descriptors without trimming (tests simulate a crash)."""
        self._unwritten.clear()
        for segment in self.segments:
            segment.close_quietly()
        self._close_pending_deletes()

    def _close_pending_deletes(self) -> None:
        for _t, segment in self._pending_deletes:
            segment.close_quietly()
        self._pending_deletes = []


def _marker_kind(segment: LogSegment, offset: int) -> ControlRecordType:
    """COMMIT or ABORT: the marker batch at ``offset`` in ``segment``."""
    found = segment.translate_offset(offset)
    if found is None or found[1].base_offset != offset or not found[1].is_control:
        raise MissingMarkerError(f"no control batch at offset {offset} in segment {segment.base_offset}")
    position, header = found
    record = next(iter(iter_records(segment.read_batch(position, header.size))))
    return parse_control_record(record).kind
