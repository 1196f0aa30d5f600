"""One compaction pass over one log (Kafka's ``Cleaner``; seed 002 §5.4.2
steps (2)–(6)).

(2) Build the offset map over the dirty section [first dirty, first
    uncleanable): key -> offset of its latest record. Only whole batches go
    in; when the map cannot take the next batch the pass ends before it, so
    ``end_offset`` (the next offset after the last batch mapped) is always a
    batch boundary. The active segment is never reached (the first
    uncleanable offset is at most its base).
(3) Delete horizons (KIP-534): a batch that keeps a tombstone (null value)
    and has no horizon yet is rewritten with horizon = now +
    ``delete.retention.ms`` (attribute bit 6, the base timestamp); a later
    pass at or after the horizon drops its tombstones. This replaces the
    seed's "last-modified time of the segment" rule: file times are not
    under the injected clock and could drop a tombstone before consumers
    had ``delete.retention.ms`` to see it (KAFKA-4545).
(4) Group the segments below ``end_offset`` so each group's log fits
    ``segment.bytes``, its indexes ``segment.index.bytes`` and its offsets an
    int32 relative to the first base. Each group is copied into
    ``<first base>.log.cleaned`` (+ ``.index.cleaned``, ``.timeindex.cleaned``)
    keeping a record iff its key is non-null and no later offset for the key
    is in the map, and dropping a tombstone only past its batch's horizon.
    Batches left whole are copied byte for byte; the others are rebuilt
    (``rebuild_batch``: same base offset, last offset delta, producer
    id/epoch/base sequence, leader epoch, codec). A batch left empty is kept
    as an empty batch when it is the last batch in the cleaned range of an
    idempotent/transactional producer (its sequence state must survive) or
    the last batch of the group (so the cleaned segment spans exactly the
    group's offsets, which is what seed 002 §5.3 (4) relies on to replace
    the whole group when it finishes a ``.swap`` after a crash).
    Transactions (KIP-98, ``cleaner.transactions``): the cleaned range lies
    below the last stable offset, so every transaction with data there has
    ended, and the ``.txnindex`` files say which aborted. Aborted batches
    never enter the map (an aborted record must never hide a committed one)
    and are removed whole (an emptied one kept only as its producer's last
    batch); committed transactional records are compacted like any other.
    A marker (control batch) stays while any record of its transaction
    does — an ABORT also in the pass that removed its data, with its
    ``.txnindex`` entry carried into the cleaned segment; once none is left
    it gets a delete horizon like a tombstone and goes after it, as in
    Kafka — unless it is its producer's last batch. Entries of markers that
    go are not carried over.
(5) The cleaned segment's indexes are trimmed and everything is fsynced;
    its mtime is set to the group's latest.
(6) Under the log's lock the group is checked to be unchanged (retention,
    truncation or deletion may have raced; then the result is dropped),
    ``Log.replace_segments`` renames ``.cleaned`` to ``.swap`` and fsyncs
    the directory, renames the old segments ``.deleted``, then drops the
    suffix. A crash at any point leaves either the old
    segments or the cleaned one after loading (seed 002 §5.3 (2), (4)).

Runs on a cleaner thread; holds the log's lock only for the swap. Not
shared between threads (each thread has its own ``Cleaner`` and map).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from kavka.common.clock import Clock
from kavka.protocol.records.batch import HEADER_SIZE, RecordBatchHeader, parse_header
from kavka.protocol.records.builder import rebuild_batch
from kavka.protocol.records.reader import decode_batch
from kavka.storage.cleaner.config import Throttler
from kavka.storage.cleaner.keys import iter_keys
from kavka.storage.cleaner.manager import LogCleaningAbortedError, LogToClean
from kavka.storage.cleaner.offset_map import SkimpyOffsetMap
from kavka.storage.cleaner.segments import group_segments_by_size, iter_segment_batches
from kavka.storage.cleaner.transactions import CleanedTransactions, marker_type
from kavka.storage.errors import KafkaStorageError
from kavka.storage.log import Log
from kavka.storage.segment import (
    CLEANED_SUFFIX,
    INDEX_SUFFIX,
    LOG_SUFFIX,
    TIME_INDEX_SUFFIX,
    TXN_INDEX_SUFFIX,
    LogSegment,
    segment_file_name,
)

logger = logging.getLogger(__name__)
_CHECK_EVERY_BATCHES = 64


class BufferTooSmallError(ValueError):
    """The offset map cannot hold even one batch of the dirty section."""


@dataclass(slots=True)
class CleanerStats:
    """Counters of one pass (for logs, metrics and the benchmark)."""

    bytes_read: int = 0
    bytes_written: int = 0
    batches_read: int = 0
    records_read: int = 0
    records_kept: int = 0
    map_records: int = 0
    segments_cleaned: int = 0
    groups: int = 0


@dataclass(frozen=True, slots=True)
class CleanResult:
    end_offset: int
    delete_horizon_ms: int | None  # earliest horizon of a kept tombstone
    stats: CleanerStats = field(default_factory=CleanerStats)


StepHook = Callable[[str, Log], None]


class Cleaner:
    """Cleans one log per ``clean`` call; see the module docstring."""

    def __init__(
        self,
        offset_map: SkimpyOffsetMap,
        clock: Clock,
        *,
        io_buffer_size: int = 512 << 10,
        throttler: Throttler | None = None,
        check_aborted: Callable[[], None] | None = None,
        step_hook: StepHook | None = None,
    ) -> None:
        self.map = offset_map
        self.clock = clock
        self.io_buffer_size = io_buffer_size
        self.throttler = throttler
        self._check_aborted = check_aborted or (lambda: None)
        self._hook = step_hook or (lambda _step, _log: None)

    def _read(self, segment: LogSegment) -> Iterator[tuple[int, bytes]]:
        for pos, data in iter_segment_batches(segment, self.io_buffer_size):
            if self.throttler is not None:
                self.throttler.maybe_throttle(len(data))
            yield pos, data

    # ---- (2) the offset map ---------------------------------------------------------------
    def build_offset_map(self, log: Log, start: int, end: int, stats: CleanerStats) -> int:
        """Map the keys of whole batches in [start, end), except those of
        aborted transactions; return the offset after the last batch covered."""
        self.map.clear()
        txns = CleanedTransactions(log.collect_aborted_transactions(start, end))
        covered = start
        segments = log.segments()[:-1]  # never the active segment
        for i, seg in enumerate(segments):
            upper = segments[i + 1].base_offset if i + 1 < len(segments) else end
            if upper <= start:
                continue
            if seg.base_offset >= end:
                break
            for n, (_pos, data) in enumerate(self._read(seg)):
                if n % _CHECK_EVERY_BATCHES == 0:
                    self._check_aborted()
                header = parse_header(data)
                if header.last_offset < start:
                    continue
                if header.last_offset >= end:
                    return covered
                stats.bytes_read += header.size
                if header.is_control:
                    kind = marker_type(data) if header.producer_id >= 0 else None
                    if kind is not None:
                        txns.marker_discardable(header, kind)
                    covered = header.next_offset
                    continue
                if txns.is_aborted(header):
                    covered = header.next_offset
                    continue
                if not self.map.can_hold(header.record_count):
                    if self.map.size == 0:
                        raise BufferTooSmallError(
                            f"log.cleaner.dedupe.buffer.size holds {self.map.capacity} keys per thread, fewer "
                            f"than the {header.record_count} records of the batch at offset {header.base_offset} "
                            f"of {log.topic_partition}; raise it"
                        )
                    return covered
                put = self.map.put
                for offset, key, _tombstone in iter_keys(data):
                    if key is not None and offset >= start:
                        put(key, offset)
                stats.map_records += header.record_count
                covered = header.next_offset
        return covered

    # ---- the pass -------------------------------------------------------------------------
    def clean(self, to_clean: LogToClean) -> CleanResult:
        """Steps (2)–(6) for one log; returns the new cleaner checkpoint."""
        log = to_clean.log
        stats = CleanerStats()
        # What the segments were before the map was built: the swap checks
        # against it, so a truncation during the map pass is caught too.
        before = [(s, s.size) for s in log.segments()[:-1]]
        try:
            end = self.build_offset_map(log, to_clean.first_dirty_offset, to_clean.first_uncleanable_offset, stats)
            now = self.clock.milliseconds()
            config = log.config
            segments = [s for s, _size in before if s.base_offset < end]
            groups = group_segments_by_size(segments, end, config.segment_bytes, config.segment_index_bytes)
            ctx = _PassContext(log, end, now, now + config.delete_retention_ms, segments, before)
            for group in groups:
                self._check_aborted()
                self._clean_group(ctx, group, stats)
        except KafkaStorageError as e:
            # Retention or a deletion closed a segment we were reading: a
            # race, not a broken disk (the log itself would have gone offline).
            live = {id(seg) for seg in log.segments()}
            if not log.offline and any(id(seg) not in live for seg, _size in before):
                raise LogCleaningAbortedError(f"segments of {log.topic_partition} went away while cleaning: {e}") from e
            raise
        finally:
            self.map.clear()
        return CleanResult(end, ctx.earliest_horizon, stats)

    def _clean_group(self, ctx: _PassContext, group: list[LogSegment], stats: CleanerStats) -> None:
        log = ctx.log
        base = group[0].base_offset
        for kind in (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX):  # a leftover of an aborted pass
            (log.dir / segment_file_name(base, kind, CLEANED_SUFFIX)).unlink(missing_ok=True)
        cleaned = LogSegment(log.dir, base, log.config, ctx.log.clock, suffix=CLEANED_SUFFIX)
        try:
            group_bytes = sum(s.size for s in group)
            interval = max(log.config.index_interval_bytes + 1, HEADER_SIZE)
            needed = (2 * group_bytes // interval + 4) * 12
            if needed > log.config.segment_index_bytes:
                cleaned.resize_indexes(needed)  # trimmed again below
            self._copy_group(ctx, group, cleaned, stats)
            cleaned.on_become_inactive()
            cleaned.flush()
            mtime = max(s.log.last_modified_ms() for s in group)
            os.utime(cleaned.log.path, ns=(mtime * 1_000_000, mtime * 1_000_000))
            self._hook("cleaned-written", log)
            self._swap(ctx, cleaned, group)
        except BaseException:
            if cleaned.suffix == CLEANED_SUFFIX:
                cleaned.delete_files()
            raise
        stats.groups += 1
        stats.segments_cleaned += len(group)
        self._hook("swapped", log)

    def _swap(self, ctx: _PassContext, cleaned: LogSegment, group: list[LogSegment]) -> None:
        log = ctx.log

        def unchanged() -> None:
            # Under the log's lock (no append/truncate/retention meanwhile):
            # the group and every later segment the offset map was built from
            # must be as they were when the pass began; otherwise (retention,
            # truncation, deletion raced with us) the result is dropped.
            current = {id(s) for s in log.segments()[:-1]}
            for seg, size in ctx.sizes:
                if seg.base_offset >= group[0].base_offset and (id(seg) not in current or seg.size != size):
                    raise LogCleaningAbortedError(
                        f"segment {seg.base_offset} of {log.topic_partition} changed while it was cleaned"
                    )
            self._check_aborted()

        # .cleaned -> .swap (durable) -> old segments .deleted -> suffix
        # dropped; from the .swap on, recovery finishes the swap (§5.3 (4))
        log.replace_segments(cleaned, group, precondition=unchanged)

    def _copy_group(self, ctx: _PassContext, group: list[LogSegment], cleaned: LogSegment, stats: CleanerStats) -> None:
        # The transactions of the group's range (Kafka: per cleaned group):
        # aborted data goes, markers go once their transaction's data has.
        ctx.txns = CleanedTransactions(
            ctx.log.collect_aborted_transactions(group[0].base_offset, ctx.log.log_end_offset))
        last_dropped: tuple[RecordBatchHeader, bytes] | None = None
        n = 0
        appended = False
        for seg in group:
            for _pos, data in self._read(seg):
                n += 1
                if n % _CHECK_EVERY_BATCHES == 0:
                    self._check_aborted()
                header = parse_header(data)
                stats.batches_read += 1
                stats.bytes_read += header.size
                out = self._filter_batch(ctx, header, data, stats)
                if out is None:
                    last_dropped = (header, data)
                    continue
                last_dropped = None
                self._append(cleaned, out, stats)
                if not appended:
                    appended = True
                    self._hook("cleaned-partial", ctx.log)
        # The aborted-transaction index keeps the entries of the ABORT markers
        # kept with it (their data was removed only now: a reader that already
        # fetched it still needs them); with its marker gone an entry could make
        # a read_committed reader skip a later committed transaction.
        for txn in ctx.txns.retained_aborts:
            cleaned.txn_index.append(txn)
        if last_dropped is not None:
            # keep the group's offset range: see the module docstring, (4);
            # a marker is kept whole (a control batch always has its record)
            header, data = last_dropped
            self._append(cleaned, data if header.is_control else rebuild_batch(header, []), stats)

    def _append(self, cleaned: LogSegment, data: bytes, stats: CleanerStats) -> None:
        header = parse_header(data)
        cleaned.append(header.last_offset, header.max_timestamp, header.last_offset, [data])
        stats.bytes_written += len(data)
        if self.throttler is not None:
            self.throttler.maybe_throttle(len(data))

    def _filter_batch(self, ctx: _PassContext, header: RecordBatchHeader, data: bytes, stats: CleanerStats) -> bytes | None:
        """The batch to write for ``data`` (itself, rebuilt, empty) or None."""
        if header.is_control:
            return self._filter_marker(ctx, header, data)
        stats.records_read += header.record_count
        if ctx.txns.is_aborted(header):
            # Aborted data goes whole; the producer's last batch stays empty
            # (its sequence and epoch must survive: KIP-98).
            if ctx.is_last_batch_of_producer(header):
                return rebuild_batch(header, [])
            return None
        horizon = header.delete_horizon_ms
        tombstones_due = horizon is not None and ctx.now >= horizon
        transactional = header.is_transactional
        kept_offsets: list[int] = []
        changed = False
        keeps_tombstone = False
        get = self.map.get
        for offset, key, tombstone in iter_keys(data):  # decide on keys alone
            if key is None or get(key) > offset:
                changed = True
                continue
            if tombstone:
                if tombstones_due:
                    changed = True
                    continue
                keeps_tombstone = True
            kept_offsets.append(offset)
        if keeps_tombstone:
            if horizon is None and header.next_offset <= ctx.end_offset:
                horizon = ctx.new_horizon
                changed = True
            if horizon is not None:
                ctx.note_horizon(horizon)
        stats.records_kept += len(kept_offsets)
        if transactional and kept_offsets:
            ctx.txns.kept_committed(header.producer_id)
        if not changed:
            return data
        if kept_offsets:
            wanted = set(kept_offsets)
            kept = [rec for rec in decode_batch(data)[1] if rec.offset in wanted]
            return rebuild_batch(header, kept, delete_horizon=horizon)
        if header.producer_id >= 0 and ctx.is_last_batch_of_producer(header):
            return rebuild_batch(header, [])
        return None

    def _filter_marker(self, ctx: _PassContext, header: RecordBatchHeader, data: bytes) -> bytes | None:
        """A transaction marker: kept while its transaction keeps records;
        then stamped with a horizon and dropped past it."""
        kind = marker_type(data) if header.producer_id >= 0 else None
        if kind is None or not ctx.txns.marker_discardable(header, kind):
            return data
        horizon = header.delete_horizon_ms
        if horizon is not None:
            if ctx.now >= horizon and not ctx.is_last_batch_of_producer(header):
                return None
            ctx.note_horizon(horizon)
            return data
        if header.next_offset > ctx.end_offset:
            return data
        _h, records = decode_batch(data)
        ctx.note_horizon(ctx.new_horizon)
        return rebuild_batch(header, records, delete_horizon=ctx.new_horizon)


class _PassContext:
    """What one pass knows beyond the map: its bounds, clock reading and the
    last batch of each producer in the cleaned range (computed on first use
    by a header scan: most logs never need it)."""

    def __init__(
        self,
        log: Log,
        end_offset: int,
        now: int,
        new_horizon: int,
        segments: list[LogSegment],
        sizes: list[tuple[LogSegment, int]],
    ) -> None:
        self.log = log
        self.end_offset = end_offset
        self.now = now
        self.new_horizon = new_horizon
        self.earliest_horizon: int | None = None
        self.txns = CleanedTransactions([])  # replaced for each group
        self._segments = segments
        self.sizes = sizes  # every non-active segment and its size as the pass began
        self._producer_last: dict[int, int] | None = None

    def note_horizon(self, horizon: int) -> None:
        if self.earliest_horizon is None or horizon < self.earliest_horizon:
            self.earliest_horizon = horizon

    def is_last_batch_of_producer(self, header: RecordBatchHeader) -> bool:
        if self._producer_last is None:
            last: dict[int, int] = {}
            for seg in self._segments:
                for _pos, h in seg.log.headers_from(0):
                    if h.producer_id >= 0:
                        last[h.producer_id] = h.base_offset
            self._producer_last = last
        return self._producer_last.get(header.producer_id, header.base_offset) == header.base_offset
