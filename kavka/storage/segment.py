"""One log segment: ``<base>.log`` + ``<base>.index`` + ``<base>.timeindex``
(+ ``<base>.txnindex``, the aborted transactions, once one is indexed).

Files are named by the 20-digit zero-padded base offset (the first offset
the segment may hold), optionally with a suffix: ``.deleted`` (waiting for
``file.delete.delay.ms``), ``.cleaned`` (a compaction result being
written), ``.swap`` (a compaction result replacing older segments) — seed
002 §5.3. The ``.log`` holds v2 batches exactly as on the wire; the indexes
are sparse (an entry every ``index.interval.bytes``, seed 002 §5.3 (3)).

Invariants: batch offsets strictly increase and every offset - base fits an
int32; the index entries point at real batch starts; the time index's last
entry (or the in-memory maximum) is the segment's largest timestamp.

The two indexes are ``LazyIndex``es (``kavka.storage.index.lazy_index``):
opened and mapped on first use, never at load when the log shut down
cleanly and never for an empty index (a lookup there is answered from the
segment's base), and released again when the segment stops being written
(``on_become_inactive``), so that an idle segment holds one descriptor, its
``.log``. The active segment's indexes are opened writable, sized to
``segment.index.bytes``, by the first index entry or lookup that needs them.

Not thread-safe: the owning ``Log`` serialises mutations under its lock.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from kavka.common.clock import Clock
from kavka.protocol.records.batch import LOG_OVERHEAD, InvalidRecordBatch, RecordBatchHeader
from kavka.storage.errors import KafkaStorageError
from kavka.storage.file_records import Buffer, FileRecords
from kavka.storage.index.index_file import IndexEnds, IndexFile, read_index_ends
from kavka.storage.index.lazy_index import LazyIndex
from kavka.storage.index.offset_index import ENTRY as OFFSET_ENTRY
from kavka.storage.index.offset_index import ENTRY_SIZE as OFFSET_ENTRY_SIZE
from kavka.storage.index.offset_index import INT32_MAX, OffsetIndex, OffsetPosition
from kavka.storage.index.time_index import ENTRY as TIME_ENTRY
from kavka.storage.index.time_index import ENTRY_SIZE as TIME_ENTRY_SIZE
from kavka.storage.index.time_index import NO_TIMESTAMP, TimeIndex, TimestampOffset

# TXN_INDEX_SUFFIX is re-exported: the segment's file suffixes are named together here
from kavka.storage.index.transaction_index import TXN_INDEX_SUFFIX as TXN_INDEX_SUFFIX
from kavka.storage.index.transaction_index import TransactionIndex
from kavka.storage.log_config import LogConfig
from kavka.storage.read_buffers import ReadBuffers
from kavka.storage.segment_recovery import EpochAssigner, SegmentRecovery

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
DELETED_SUFFIX = ".deleted"
CLEANED_SUFFIX = ".cleaned"
SWAP_SUFFIX = ".swap"
_INT32 = struct.Struct(">i")
_new = tuple.__new__  # a named tuple on the append path, without its Python-level __new__
# A read's tail past its last indexed batch up to this size is read at once
# to find the last whole batch; a longer tail is walked batch by batch.
_TAIL_READ_BYTES = 64 * 1024


def segment_file_name(base_offset: int, kind: str, suffix: str = "") -> str:
    return f"{base_offset:020d}{kind}{suffix}"


@dataclass(frozen=True, slots=True)
class FetchSlice:
    """Whole batches read from one segment. ``position`` is where the first
    batch starts; ``first_entry_incomplete``: the first batch was larger than
    the byte limit and ``min_one_message`` was false, so nothing was read."""

    records: bytes | memoryview  # a view of a ReadBuffers buffer when the read was given one
    base_offset: int  # the segment's base offset
    position: int
    first_entry_incomplete: bool = False


class CorruptIndexError(ValueError):
    """An index failed its load-time sanity check; it is rebuilt."""


class LogSegment:
    """A ``.log`` file with its two indexes. See the module docstring."""

    def __init__(
        self,
        directory: Path,
        base_offset: int,
        config: LogConfig,
        clock: Clock,
        *,
        suffix: str = "",
        roll_jitter_ms: int = 0,
        preallocate: bool = False,
        active: bool = True,
    ) -> None:
        """``active``: a segment to be written (a new one); a loaded one is
        opened inactive and made active by ``become_active``."""
        self.directory = directory
        self.base_offset = base_offset
        self.clock = clock
        self.index_interval_bytes = config.index_interval_bytes
        self.max_index_size = config.segment_index_bytes
        self.roll_jitter_ms = roll_jitter_ms
        self.suffix = suffix
        self.log = FileRecords(
            directory / segment_file_name(base_offset, LOG_SUFFIX, suffix),
            preallocate_bytes=config.segment_bytes if preallocate else 0,
        )
        try:
            self.lazy_offset_index: LazyIndex[OffsetIndex] = LazyIndex(
                OffsetIndex,
                directory / segment_file_name(base_offset, INDEX_SUFFIX, suffix),
                base_offset,
                self.max_index_size,
                writable=active,
            )
            self.lazy_time_index: LazyIndex[TimeIndex] = LazyIndex(
                TimeIndex,
                directory / segment_file_name(base_offset, TIME_INDEX_SUFFIX, suffix),
                base_offset,
                self.max_index_size,
                writable=active,
            )
            self.txn_index = TransactionIndex(directory / segment_file_name(base_offset, TXN_INDEX_SUFFIX, suffix))
        except BaseException:
            self.close_quietly()
            raise
        self.created_ms = clock.milliseconds()
        self.bytes_since_last_index_entry = 0
        self._max_timestamp_so_far: TimestampOffset | None = None  # read from the time index when first asked
        self._rolling_based_timestamp: int | None = None
        # on_become_inactive ran and nothing was written since: close() has
        # nothing to record, and must not open the indexes to find that out
        self._inactive = not active

    # ---- the indexes ----------------------------------------------------------
    @property
    def offset_index(self) -> OffsetIndex:
        """The offset index, opened on first use."""
        return self.lazy_offset_index.get()

    @property
    def time_index(self) -> TimeIndex:
        """The time index, opened on first use."""
        return self.lazy_time_index.get()

    @property
    def max_timestamp_so_far(self) -> TimestampOffset:
        """The largest batch timestamp and its offset (the time index's last
        entry until an append says more)."""
        found = self._max_timestamp_so_far
        if found is None:
            found = self._time_index_last_entry()
            self._max_timestamp_so_far = found
        return found

    @max_timestamp_so_far.setter
    def max_timestamp_so_far(self, value: TimestampOffset) -> None:
        self._max_timestamp_so_far = value

    def _time_index_last_entry(self) -> TimestampOffset:
        if self.lazy_time_index.known_empty:
            return TimestampOffset(NO_TIMESTAMP, self.base_offset)
        return self.time_index.last_entry

    def _offset_lookup(self, offset: int) -> OffsetPosition:
        """The offset index's lookup; an empty index is not opened for it."""
        if self.lazy_offset_index.known_empty:
            return OffsetPosition(self.base_offset, 0)
        return self.offset_index.lookup(offset)

    def _indexes_full(self) -> bool:
        # the time index keeps a slot for the roll's final entry: room for one needs two
        return self.lazy_offset_index.is_full(OFFSET_ENTRY_SIZE) or self.lazy_time_index.is_full(2 * TIME_ENTRY_SIZE)

    def become_active(self) -> None:
        """The loaded segment that is appended to: its indexes are opened
        writable, at ``segment.index.bytes``, when first used."""
        self._inactive = False
        for lazy in (self.lazy_offset_index, self.lazy_time_index):
            lazy.writable = True
            lazy.resize(self.max_index_size)

    def release_indexes(self) -> None:
        """Unmap the indexes and close their descriptors (a segment no longer
        written, once checked); the next lookup opens them again."""
        for lazy in (self.lazy_offset_index, self.lazy_time_index):
            lazy.writable = False
            lazy.unload()

    # ---- facts ----------------------------------------------------------------
    @property
    def size(self) -> int:
        return self.log.size

    def can_convert_to_relative_offset(self, offset: int) -> bool:
        return 0 <= offset - self.base_offset <= INT32_MAX

    def largest_timestamp(self) -> int:
        """Seed 002 §5.4.1: the time index's largest timestamp when > 0, else
        the ``.log`` file's mtime (which a reassignment may have reset)."""
        if self.max_timestamp_so_far.timestamp > 0:
            return self.max_timestamp_so_far.timestamp
        return self.log.last_modified_ms()

    def read_next_offset(self) -> int:
        """The offset after the last batch: last index entry, then a scan."""
        return self.scan_tail()[0]

    def scan_tail(self) -> tuple[int, int]:
        """(next offset, end position of the last readable batch header
        chain) from the last index entry; an end short of the file size means
        the tail is not a batch (headers only, no CRC)."""
        start = self._offset_lookup(2**63 - 1).position
        next_offset, end = self.base_offset, start
        for pos, header in self.log.headers_from(start):
            next_offset, end = header.next_offset, pos + header.size
        return next_offset, end

    def last_batch(self) -> tuple[int, RecordBatchHeader] | None:
        """Position and header of the last batch (scan from the last index entry)."""
        found = None
        for pos, header in self.log.headers_from(self._offset_lookup(2**63 - 1).position):
            found = (pos, header)
        return found

    def index_end_hint(self) -> int:
        """The largest offset the on-disk indexes claim this segment holds
        (-1 if they claim none). Read before recovery rebuilds them."""
        hint = -1
        oi = self._index_ends(self.lazy_offset_index, OFFSET_ENTRY_SIZE)
        if oi.entries:
            hint = self.base_offset + OFFSET_ENTRY.unpack(oi.last)[0]
        ti = self._index_ends(self.lazy_time_index, TIME_ENTRY_SIZE)
        if ti.entries:
            hint = max(hint, self.base_offset + TIME_ENTRY.unpack(ti.last)[1])
        return hint

    @staticmethod
    def _index_ends(lazy: LazyIndex[OffsetIndex] | LazyIndex[TimeIndex], entry_size: int) -> IndexEnds:
        """The ends of an index for a load-time check: read from the file
        when it is not loaded (no mapping), else from the loaded index."""
        if not lazy.loaded:
            ends = read_index_ends(lazy.path, entry_size)
            if ends is not None:
                return ends
        index: IndexFile = lazy.get()
        view, n = index.view(), index.entries
        first = bytes(view[:entry_size]) if n else b""
        last = bytes(view[(n - 1) * entry_size : n * entry_size]) if n else b""
        return IndexEnds(index.length, n, first, last)

    def first_batch_header(self) -> RecordBatchHeader | None:
        for _pos, header in self.log.headers_from(0):
            return header
        return None

    # ---- append -----------------------------------------------------------------
    def append(self, largest_offset: int, largest_timestamp: int, offset_of_max_timestamp: int, parts: list[Buffer]) -> int:
        """Append already-validated batches whose last offset is
        ``largest_offset``; return their position. The caller (``Log``) has
        rolled first if they would not fit (size, index, relative offset).
        On an I/O error nothing of the append remains visible (the log bytes
        are cut back, index entries dropped) and ``KafkaStorageError`` names
        the file."""
        # Every produce runs this: each index is fetched once, and the facts
        # read through properties elsewhere are read directly.
        if not 0 <= largest_offset - self.base_offset <= INT32_MAX:
            raise ValueError(f"offset {largest_offset} does not fit segment {self.base_offset}")
        log = self.log
        position = log.size
        written = log.append(parts)
        self._inactive = False
        max_ts = self._max_timestamp_so_far
        if max_ts is None:
            max_ts = self.max_timestamp_so_far
        if largest_timestamp > max_ts.timestamp:
            max_ts = _new(TimestampOffset, (largest_timestamp, offset_of_max_timestamp))
        if self.bytes_since_last_index_entry > self.index_interval_bytes:
            oi, ti = self.lazy_offset_index.get(), self.lazy_time_index.get()
            oi_entries, ti_entries = oi.entries, ti.entries
            oi_last, ti_last = oi.last_offset, ti.last_entry
            path = oi.path
            try:
                oi.append(largest_offset, position)
                path = ti.path
                ti.maybe_append(max_ts.timestamp, max_ts.offset)
            except OSError as e:
                oi.restore(oi_entries, oi_last)
                ti.restore(ti_entries, ti_last)
                log.truncate_quietly(position)
                raise KafkaStorageError("index append failed, the append was undone", path, e) from e
            self.bytes_since_last_index_entry = written
        else:
            self.bytes_since_last_index_entry += written
        if self._rolling_based_timestamp is None and position == 0:
            self._rolling_based_timestamp = largest_timestamp
        self._max_timestamp_so_far = max_ts
        return position

    # ---- lookups --------------------------------------------------------------------
    def translate_offset(self, offset: int, starting_position: int = 0) -> tuple[int, RecordBatchHeader] | None:
        """Position and header of the first batch whose last offset >= offset."""
        position = max(self._offset_lookup(offset).position, starting_position)
        for pos, header in self.log.headers_from(position):
            if header.last_offset >= offset:
                return pos, header
        return None

    def read(
        self, start_offset: int, max_size: int, max_position: int | None = None, min_one_message: bool = False,
        buffers: ReadBuffers | None = None,
    ) -> FetchSlice | None:
        """Whole batches from the one containing ``start_offset``, at most
        ``max_size`` bytes (or the first batch whole if ``min_one_message``),
        never at or past ``max_position``. None: the offset is past this
        segment. ``buffers``: where a large read lands (``FileRecords.read``)."""
        found = self.translate_offset(start_offset)
        if found is None:
            return None
        position, header = found
        limit = self.log.size if max_position is None else min(max_position, self.log.size)
        if position >= limit or max_size <= 0 and not min_one_message:
            return FetchSlice(b"", self.base_offset, position)
        if header.size > max_size:
            if not min_one_message or position + header.size > limit:
                return FetchSlice(b"", self.base_offset, position, first_entry_incomplete=True)
            return FetchSlice(self._read(position, header.size, buffers), self.base_offset, position)
        end = self._whole_batches_end(position, position + min(max_size, limit - position))
        return FetchSlice(self._read(position, end - position, buffers), self.base_offset, position)

    def _read(self, position: int, size: int, buffers: ReadBuffers | None) -> bytes | memoryview:
        return self.log.read(position, size) if buffers is None else self.log.read(position, size, buffers)

    def _whole_batches_end(self, position: int, window_end: int) -> int:
        """End of the last batch that lies whole in [position, window_end),
        ``position`` being a batch start. Found before reading the window,
        so that the window is read once at its exact length (no slice copy
        of up to a megabyte), and from the last indexed batch in the window
        onward only: everything between two batch starts is whole batches.
        That tail is at most ``index.interval.bytes`` plus one batch when
        batches are small (read at once and walked in memory); when it is
        larger, the batches are large and few (walked by their size fields)."""
        indexed = (
            None if self.lazy_offset_index.known_empty else self.offset_index.last_position_at_or_below(window_end)
        )
        start = indexed if indexed is not None and indexed > position else position
        if window_end - start <= _TAIL_READ_BYTES:
            return start + whole_batches_length(self.log.read(start, window_end - start))
        pos = start
        while True:
            size = self.log.batch_size_at(pos)
            if size is None or size < LOG_OVERHEAD or pos + size > window_end:
                return pos
            pos += size

    def batches_by_timestamp(self, timestamp: int, starting_offset: int) -> Iterator[tuple[int, RecordBatchHeader]]:
        """Batches with max timestamp >= ``timestamp`` and last offset >=
        ``starting_offset``, in offset order, from where the time index and
        offset index say the first one can be."""
        if self.lazy_time_index.known_empty:
            entry = TimestampOffset(NO_TIMESTAMP, self.base_offset)
        else:
            entry = self.time_index.lookup(timestamp)
        position = self._offset_lookup(max(entry.offset, starting_offset)).position
        for pos, header in self.log.headers_from(position):
            if header.max_timestamp >= timestamp and header.last_offset >= starting_offset:
                yield pos, header

    def read_batch(self, position: int, size: int) -> bytes:
        return self.log.read(position, size)

    # ---- roll ------------------------------------------------------------------------
    def rolling_based_timestamp(self) -> int | None:
        if self._rolling_based_timestamp is None and self.log.size > 0:
            first = self.first_batch_header()
            self._rolling_based_timestamp = first.max_timestamp if first else None
        return self._rolling_based_timestamp

    def time_waited_for_roll(self, now_ms: int, message_timestamp: int) -> int:
        """Age of the segment for ``segment.ms``: by record time when the first
        batch has a timestamp, else by wall time since creation."""
        first = self.rolling_based_timestamp()
        if first is not None and first >= 0:
            return message_timestamp - first
        return now_ms - self.created_ms

    def should_roll(
        self, config: LogConfig, *, messages_size: int, max_timestamp: int, max_offset: int, now_ms: int
    ) -> bool:
        # Runs on every append: the cheap tests first, the age test last
        # (time_waited_for_roll inlined).
        size = self.log.size
        if (
            size > config.segment_bytes - messages_size
            or self._indexes_full()
            or not 0 <= max_offset - self.base_offset <= INT32_MAX
        ):
            return True
        if size == 0:
            return False
        first = self._rolling_based_timestamp
        if first is None:
            first = self.rolling_based_timestamp()
        waited = max_timestamp - first if first is not None and first >= 0 else now_ms - self.created_ms
        return waited > config.segment_ms - self.roll_jitter_ms

    def on_become_inactive(self) -> None:
        """On roll: index the last batch and record the final largest
        timestamp (so the indexes say where the segment ends: recovery uses
        that as evidence of lost data), then trim the files and release the
        indexes (the next lookup maps them again, read-only). Nothing to do
        when it ran and nothing was written since (a segment loaded after a
        clean shutdown: its files were finished when it rolled)."""
        if self._inactive:
            return
        for lazy in (self.lazy_offset_index, self.lazy_time_index):
            lazy.writable = False
        last = self.last_batch()
        oi = self.offset_index
        if last is not None and (oi.entries == 0 or last[1].last_offset > oi.last_offset) and not oi.is_full():
            oi.append(last[1].last_offset, last[0])
        ts = self.max_timestamp_so_far
        if ts.timestamp > self.time_index.last_entry.timestamp:
            self.time_index.maybe_append(ts.timestamp, max(ts.offset, self.time_index.last_entry.offset), skip_full_check=True)
        self.offset_index.trim_to_valid_size()
        self.time_index.trim_to_valid_size()
        self.log.trim()
        self.release_indexes()
        self._inactive = True

    def resize_indexes(self, size: int) -> None:
        """Size both indexes to ``size`` (when they are opened, if they are not)."""
        self.lazy_offset_index.resize(size)
        self.lazy_time_index.resize(size)

    # ---- recovery and truncation ----------------------------------------------------
    def sanity_check(self) -> None:
        """Cheap load-time checks (Kafka's, plus: the last offset-index entry
        points at a real batch with that last offset). Raises
        ``CorruptIndexError``. Reads the ends of an index that is not loaded
        with ``pread`` (a clean segment's indexes stay unmapped)."""
        oi_path, ti_path = self.lazy_offset_index.path, self.lazy_time_index.path
        oi = self._index_ends(self.lazy_offset_index, OFFSET_ENTRY_SIZE)
        ti = self._index_ends(self.lazy_time_index, TIME_ENTRY_SIZE)
        for path, ends, size in ((oi_path, oi, OFFSET_ENTRY_SIZE), (ti_path, ti, TIME_ENTRY_SIZE)):
            if ends.length % size:
                raise CorruptIndexError(f"{path} length {ends.length} is not a multiple of {size}")
        base = self.base_offset
        if oi.entries:
            rel, pos = OFFSET_ENTRY.unpack(oi.last)
            last = OffsetPosition(base + rel, pos)
            rel, pos = OFFSET_ENTRY.unpack(oi.first)
            first = OffsetPosition(base + rel, pos)
            if (
                last.offset < self.base_offset
                or first.offset > last.offset
                or not 0 <= first.position <= last.position < self.log.size
            ):
                raise CorruptIndexError(f"{oi_path} last entry {last} is outside the segment")
            try:
                header = next((h for _p, h in self.log.headers_from(last.position)), None)
            except InvalidRecordBatch:
                header = None
            if header is None or header.last_offset != last.offset:
                raise CorruptIndexError(f"{oi_path} last entry {last} does not point at a batch ending there")
        if ti.entries:
            ts, rel = TIME_ENTRY.unpack(ti.first)
            t_first = TimestampOffset(ts, base + rel)
            ts, rel = TIME_ENTRY.unpack(ti.last)
            t_last = TimestampOffset(ts, base + rel)
            if (
                t_last.offset < self.base_offset
                or t_first.timestamp > t_last.timestamp
                or t_first.offset > t_last.offset
            ):
                raise CorruptIndexError(f"{ti_path} entries {t_first}..{t_last} are not monotonic")
            if oi.entries:
                next_offset = base
                for _pos, header in self.log.headers_from(last.position):
                    next_offset = header.next_offset
                if t_last.offset > next_offset - 1:
                    raise CorruptIndexError(f"{ti_path} last entry {t_last} is past the end of the segment")

    def recover(self, epoch_cache: EpochAssigner | None = None) -> int:
        """Rebuild both indexes from the ``.log``, validating every batch
        (size, magic, CRC32C, increasing offsets that fit this segment);
        truncate at the first bad batch. Returns the bytes truncated."""
        self._inactive = False
        self.offset_index.reset()
        self.time_index.reset()
        self.offset_index.resize(self.max_index_size)
        self.time_index.resize(self.max_index_size)
        result = SegmentRecovery(
            self.log, self.offset_index, self.time_index, self.base_offset, self.index_interval_bytes, epoch_cache
        ).run()
        self.max_timestamp_so_far = result.max_timestamp
        self.bytes_since_last_index_entry = result.bytes_since_last_index_entry
        truncated = self.log.truncate_to(result.valid_bytes) if result.valid_bytes < self.log.size else 0
        # Aborts whose markers were cut go; the producer-state scan re-adds
        # any the index lacks (KIP-98 recovery).
        self.txn_index.truncate_to(self.read_next_offset())
        if self.max_timestamp_so_far.timestamp > self.time_index.last_entry.timestamp:
            self.time_index.maybe_append(
                self.max_timestamp_so_far.timestamp, self.max_timestamp_so_far.offset, skip_full_check=True
            )
        return truncated

    def truncate_to(self, offset: int) -> tuple[int, int | None]:
        """Remove every batch with last offset >= ``offset`` (from the start of
        the batch containing it). Returns the bytes removed and the base
        offset of the first removed batch (None when nothing was removed)."""
        found = self.translate_offset(offset)
        if found is None:
            return 0, None
        position, header = found
        self._inactive = False
        for lazy in (self.lazy_offset_index, self.lazy_time_index):
            lazy.writable = True  # the log's end is here now: appends follow
        self.offset_index.truncate_to(header.base_offset)
        self.time_index.truncate_to(header.base_offset)
        self.txn_index.truncate_to(header.base_offset)
        self.offset_index.resize(self.max_index_size)
        self.time_index.resize(self.max_index_size)
        removed = self.log.truncate_to(position)
        self.bytes_since_last_index_entry = 0
        if self.log.size == 0:
            self.created_ms = self.clock.milliseconds()
            self._rolling_based_timestamp = None
        self.max_timestamp_so_far = self._max_timestamp_after_truncation()
        return removed, header.base_offset

    def _max_timestamp_after_truncation(self) -> TimestampOffset:
        best = TimestampOffset(NO_TIMESTAMP, self.base_offset)
        start = self._time_index_last_entry()
        if start.timestamp > NO_TIMESTAMP:
            best = start
        position = self._offset_lookup(start.offset).position
        for _pos, header in self.log.headers_from(position):
            if header.max_timestamp > best.timestamp:
                best = TimestampOffset(header.max_timestamp, header.last_offset)
        return best

    # ---- lifecycle ---------------------------------------------------------------------
    def write_pending_index_entries(self) -> None:
        """Write the index entries held in memory (``IndexFile``): under the
        owning log's lock, before a ``flush`` that may run outside it."""
        self.lazy_offset_index.write_pending()
        self.lazy_time_index.write_pending()

    def flush(self) -> None:
        """fsync the files (what was written: see ``write_pending_index_entries``)."""
        self.log.flush()
        self.lazy_offset_index.flush()
        self.lazy_time_index.flush()
        self.txn_index.flush()

    def close(self) -> None:
        """Record the final timestamp entry, trim the indexes, close."""
        try:
            if not self.log.closed and not self._inactive:
                self.on_become_inactive()
        finally:
            self.lazy_offset_index.close()
            self.lazy_time_index.close()
            self.log.close()

    def close_quietly(self) -> None:
        for part in ("lazy_offset_index", "lazy_time_index", "log"):
            obj = getattr(self, part, None)
            if obj is not None:
                obj.close_quietly()

    def change_suffix(self, new: str) -> None:
        """Rename the three files from suffix ``old`` to ``new``; the index
        files are renamed first, so a crash leaves the ``.log`` with the old
        suffix (the unit recovery reasons about)."""
        for lazy, kind in ((self.lazy_offset_index, INDEX_SUFFIX), (self.lazy_time_index, TIME_INDEX_SUFFIX)):
            lazy.rename_to(self.directory / segment_file_name(self.base_offset, kind, new))
        self.txn_index.rename(self.directory / segment_file_name(self.base_offset, TXN_INDEX_SUFFIX, new))
        self.log.rename_to(self.directory / segment_file_name(self.base_offset, LOG_SUFFIX, new))
        self.suffix = new

    def delete_files(self) -> None:
        self.lazy_offset_index.delete_file()
        self.lazy_time_index.delete_file()
        self.txn_index.delete_file()
        self.log.delete_file()

    def __repr__(self) -> str:
        return f"LogSegment(base={self.base_offset}, size={self.log.size}, suffix={self.suffix!r})"


def whole_batches_length(data: bytes | memoryview) -> int:
    """Length of the longest prefix of ``data`` made of whole batches."""
    pos, n = 0, len(data)
    while n - pos >= 12:
        size = _INT32.unpack_from(data, pos + 8)[0] + 12
        if size < 12 or pos + size > n:
            break
        pos += size
    return pos
