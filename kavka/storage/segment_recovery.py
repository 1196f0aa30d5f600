"""Recovery scan of one segment's ``.log`` (seed 002 §5.3 (3) and (5)).

Walks every batch from position 0 reading the file in large chunks,
validates each (size fits the file and is at least a header, magic 2,
CRC32C, base offset >= the previous batch's next offset and >= the segment's
base, last offset representable relative to the base), rebuilds the sparse
indexes as appends would have, and re-learns leader epochs into the epoch
cache. It stops at the first invalid batch; the caller truncates there.

Given the segment's parts (its ``FileRecords`` and two indexes), not the
segment: ``LogSegment.recover`` builds one and applies the result. Called
under the log's lock (or during load, before the log is shared).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from kavka.protocol.records.batch import (
    CRC_START,
    HEADER_SIZE,
    LOG_OVERHEAD,
    Compression,
    InvalidRecordBatch,
    RecordBatchHeader,
    crc32c,
    parse_header,
    peek_size,
    validate_batch,
)
from kavka.storage.file_records import FileRecords
from kavka.storage.index.offset_index import INT32_MAX, OffsetIndex
from kavka.storage.index.time_index import NO_TIMESTAMP, TimeIndex, TimestampOffset

CHUNK_BYTES = 2 << 20  # a few MiB: stays in cache between the read copy and the CRC


class EpochAssigner(Protocol):
    """The part of ``LeaderEpochFileCache`` recovery needs."""

    def latest_epoch(self) -> int | None: ...

    def assign(self, epoch: int, start_offset: int) -> bool: ...


@dataclass(frozen=True, slots=True)
class RecoveryResult:
    valid_bytes: int
    max_timestamp: TimestampOffset
    bytes_since_last_index_entry: int
    batches: int


class SegmentRecovery:
    """One pass over a segment's ``.log``, rebuilding its (reset) indexes;
    see the module docstring."""

    def __init__(
        self,
        log: FileRecords,
        offset_index: OffsetIndex,
        time_index: TimeIndex,
        base_offset: int,
        index_interval_bytes: int,
        epoch_cache: EpochAssigner | None,
    ) -> None:
        self.log = log
        self.offset_index = offset_index
        self.time_index = time_index
        self.base_offset = base_offset
        self.index_interval_bytes = index_interval_bytes
        self.epoch_cache = epoch_cache
        self._buf = bytearray()  # the read buffer of ``run``
        self._chunk_start = 0
        self._chunk_len = 0

    def _validate_streaming(self, position: int, size: int) -> RecordBatchHeader | None:
        """Validate a batch larger than the read buffer with an incremental
        CRC32C, so a damaged length field never makes us allocate what it
        claims. None when invalid."""
        log = self.log
        raw = log.read(position, HEADER_SIZE)
        try:
            header = parse_header(raw)
        except InvalidRecordBatch:
            return None
        if header.record_count < 0 or header.last_offset_delta < 0 or header.compression > Compression.ZSTD:
            return None
        crc = 0
        pos, end = position + CRC_START, position + size
        while pos < end:
            chunk = log.read(pos, min(CHUNK_BYTES, end - pos))
            if not chunk:
                return None
            crc = crc32c(chunk, crc)
            pos += len(chunk)
        return header if crc == header.crc else None

    def _refill(self, position: int, need: int, file_size: int) -> bool:
        """Read from ``position`` into the buffer (grown to ``need`` bytes if
        a batch is larger); False when fewer than ``need`` bytes came back."""
        if need > len(self._buf):
            self._buf = bytearray(need)
        want = min(len(self._buf), file_size - position)
        view = memoryview(self._buf)
        try:
            self._chunk_len = self.log.read_into(view[:want], position)
        finally:
            view.release()
        self._chunk_start = position
        return self._chunk_len >= need

    def run(self) -> RecoveryResult:
        log, oi, ti = self.log, self.offset_index, self.time_index
        file_size = log.size
        base = self.base_offset
        interval = self.index_interval_bytes
        valid = 0
        last_index_entry = 0
        next_expected = base
        max_ts = TimestampOffset(NO_TIMESTAMP, base)
        batches = 0
        self._buf = bytearray(min(CHUNK_BYTES, max(file_size, LOG_OVERHEAD)))  # never grows past CHUNK_BYTES
        self._chunk_start, self._chunk_len = 0, 0
        while file_size - valid >= LOG_OVERHEAD:
            rel = valid - self._chunk_start
            if self._chunk_len - rel < LOG_OVERHEAD:
                if not self._refill(valid, LOG_OVERHEAD, file_size):
                    break
                rel = 0
            view = memoryview(self._buf)
            size = peek_size(view[: self._chunk_len], rel)
            if size is None or size < HEADER_SIZE or size > file_size - valid:
                break
            if size > CHUNK_BYTES:
                view.release()
                header = self._validate_streaming(valid, size)
                self._chunk_len = 0  # resume reading after this batch
                if header is None:
                    break
            else:
                if rel + size > self._chunk_len:
                    view.release()
                    if not self._refill(valid, size, file_size):
                        break
                    rel = 0
                    view = memoryview(self._buf)
                try:
                    header = validate_batch(view[rel : rel + size])
                except InvalidRecordBatch:
                    break
                finally:
                    view.release()
            if header.base_offset < next_expected or header.last_offset - base > INT32_MAX:
                break
            if header.max_timestamp > max_ts.timestamp:
                max_ts = TimestampOffset(header.max_timestamp, header.last_offset)
            if valid - last_index_entry > interval:
                if oi.is_full():
                    oi.resize(oi.length * 2)
                oi.append(header.last_offset, valid)
                if ti.is_full():
                    ti.resize(ti.length * 2)
                ti.maybe_append(max_ts.timestamp, max_ts.offset)
                last_index_entry = valid
            cache = self.epoch_cache
            if cache is not None and header.partition_leader_epoch >= 0:
                latest = cache.latest_epoch()
                if latest is None or header.partition_leader_epoch > latest:
                    cache.assign(header.partition_leader_epoch, header.base_offset)
            valid += size
            next_expected = header.next_offset
            batches += 1
        return RecoveryResult(valid, max_ts, valid - last_index_entry, batches)
