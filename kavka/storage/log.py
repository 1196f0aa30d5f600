"""A partition's log: an ordered list of segments in ``<topic>-<partition>``.

The last segment is the active one; every earlier one is immutable except
through truncation, retention and compaction. State beside the segments:
``log_end_offset`` (LEO, the next offset to assign), ``log_start_offset``
(moved forward by retention and DeleteRecords), ``recovery_point`` (every
offset below it is fsynced; recovery after a crash starts there, seed 002
§5.3), ``high_watermark`` (set by replication, checkpointed by the log
manager) and the leader-epoch cache (KIP-101).

Invariants: segment base offsets strictly increase; every batch offset in a
segment lies below the next segment's base; log_start_offset <=
high_watermark <= LEO; recovery_point <= LEO; the epoch cache has no entry at
or past LEO.

Thread-safety: one ``RLock`` per log guards every mutation and read (the
log manager's threads, the broker's event loop). ``flush`` fsyncs outside the
lock. Segments removed from the log are renamed ``.deleted`` and their files
closed and removed after ``file.delete.delay.ms`` (``delete_expired_files``),
so a read that already holds one finishes safely.
"""

from __future__ import annotations

import logging
import random
import threading
from bisect import bisect_right
from pathlib import Path

from kavka.common.clock import Clock, SystemClock
from kavka.storage.end_txn_marker import coordinator_epochs
from kavka.storage.errors import CheckpointFormatError, KafkaStorageError, LogOfflineError, OffsetOutOfRangeError
from kavka.storage.fetch_data_info import FetchDataInfo, LogOffsetMetadata, TimestampAndOffset
from kavka.storage.file_records import Buffer
from kavka.storage.leader_epoch_cache import LeaderEpochFileCache
from kavka.storage.log_append import (
    LogAppendInfo,
    ValidatedBatches,
    split_follower_batches,
    validate_follower_batches,
    validate_leader_batches,
)
from kavka.storage.log_config import LogConfig
from kavka.storage.log_loader import LogLoader
from kavka.storage.log_offsets import fetch_offset_by_timestamp
from kavka.storage.log_flush import LogFlush
from kavka.storage.log_roll import LogRoll
from kavka.storage.log_truncation import LogTruncation
from kavka.storage.offset_index import INT32_MAX
from kavka.storage.log_transactions import collect_aborted, index_aborted
from kavka.storage.producer_state import ProducerStateManager
from kavka.storage.transaction_index import AbortedTxn
from kavka.storage.segment import LogSegment
from kavka.common.topic_partition import TopicPartition
from kavka.storage.log_dir_names import parse_topic_partition

logger = logging.getLogger(__name__)


class Log(LogRoll, LogFlush, LogTruncation):
    """See the module docstring. Open with ``Log(dir, config, ...)``: loading
    and recovery (``LogLoader``) happen in the constructor."""

    def __init__(
        self,
        directory: Path | str,
        config: LogConfig,
        *,
        clock: Clock | None = None,
        log_start_offset: int = 0,
        recovery_point: int = 0,
        high_watermark: int = 0,
        had_clean_shutdown: bool = False,
        rng: random.Random | None = None,
    ) -> None:
        self.dir = Path(directory)
        self.topic_partition: TopicPartition = parse_topic_partition(self.dir.name)
        self._config = config
        self._clock = clock or SystemClock()
        self._rng = rng or random.Random()
        self._lock = threading.RLock()
        self._offline: KafkaStorageError | None = None
        self._pending_deletes: list[tuple[int, LogSegment]] = []
        self.dir.mkdir(parents=True, exist_ok=True)
        try:
            self.leader_epoch_cache = LeaderEpochFileCache(self.dir)
        except CheckpointFormatError as e:
            # Re-learn every epoch from the batches themselves: a full
            # recovery scan assigns them again (segment_recovery).
            logger.warning("%s; recovering %s fully to rebuild it", e, self.dir)
            self.leader_epoch_cache = LeaderEpochFileCache(self.dir, persist=False)
            self.leader_epoch_cache.enable_persistence()
            recovery_point, had_clean_shutdown = 0, False
        loaded = LogLoader(
            self.dir,
            config,
            self._clock,
            self.leader_epoch_cache,
            log_start_offset=log_start_offset,
            recovery_point=recovery_point,
            had_clean_shutdown=had_clean_shutdown,
            roll_jitter_ms=config.random_segment_jitter(self._rng),
        ).load()
        self.truncated_on_load = loaded.truncated_bytes
        self._segments: list[LogSegment] = loaded.segments
        self._bases: list[int] = [s.base_offset for s in self._segments]
        self._next_offset = loaded.next_offset
        self._log_start_offset = loaded.log_start_offset
        self._recovery_point = loaded.recovery_point
        self._last_flush_ms = self._clock.milliseconds()
        self._dir_needs_fsync = False
        self._roll_flush_offset: int | None = None
        # Idempotent producers' state (KIP-98): from the latest snapshot plus the batches after it.
        self.producer_state = ProducerStateManager(self.dir)
        completed = self.producer_state.load(self._segments, self._next_offset, self._clock.milliseconds())
        index_aborted(self.segment_for, completed)  # aborts whose index entry was lost in a crash
        self.leader_epoch_cache.truncate_from_end(self._next_offset)
        if self._log_start_offset > self._next_offset:
            # Every byte on disk is below the checkpointed start: none is live.
            self.truncate_fully_and_start_at(self._log_start_offset)
        self.leader_epoch_cache.truncate_from_start(self._log_start_offset)
        self._high_watermark = min(max(high_watermark, self._log_start_offset), self._next_offset)

    # ---- state -------------------------------------------------------------------------
    @property
    def config(self) -> LogConfig:
        return self._config

    def update_config(self, config: LogConfig) -> None:
        """Dynamic topic config change (applies from the next operation)."""
        with self._lock:
            self._config = config

    @property
    def clock(self) -> Clock:
        return self._clock

    @property
    def log_end_offset(self) -> int:
        return self._next_offset

    @property
    def log_start_offset(self) -> int:
        return self._log_start_offset

    @property
    def recovery_point(self) -> int:
        return self._recovery_point

    @property
    def high_watermark(self) -> int:
        return self._high_watermark

    @property
    def last_stable_offset(self) -> int:
        """min(high watermark, first offset of the earliest open
        transaction): read_committed consumers read below it (KIP-98)."""
        unstable = self.producer_state.first_unstable_offset()
        return self._high_watermark if unstable is None else min(self._high_watermark, unstable)

    def collect_aborted_transactions(self, fetch_offset: int, upper_bound_offset: int) -> list[AbortedTxn]:
        """Aborted transactions with data in [fetch_offset, upper_bound_offset)."""
        with self._lock:
            return collect_aborted(self._segments, fetch_offset, upper_bound_offset)

    @property
    def last_flush_ms(self) -> int:
        return self._last_flush_ms

    @property
    def unflushed_messages(self) -> int:
        return self._next_offset - self._recovery_point

    @property
    def offline(self) -> bool:
        return self._offline is not None

    def segments(self) -> list[LogSegment]:
        with self._lock:
            return list(self._segments)

    @property
    def active_segment(self) -> LogSegment:
        return self._segments[-1]

    def size_in_bytes(self) -> int:
        with self._lock:
            return sum(s.size for s in self._segments)

    def log_end_offset_metadata(self) -> LogOffsetMetadata:
        with self._lock:
            active = self._segments[-1]
            return LogOffsetMetadata(self._next_offset, active.base_offset, active.size)

    def _check_online(self) -> None:
        if self._offline is not None:
            raise LogOfflineError(f"log {self.topic_partition} is offline after: {self._offline}", self.dir)

    def _failed(self, error: KafkaStorageError) -> KafkaStorageError:
        """Kafka takes a log dir offline on an I/O error; this log stops."""
        self._offline = error
        logger.error("log %s is now offline: %s", self.topic_partition, error)
        return error

    def segment_for(self, offset: int) -> LogSegment | None:
        """The segment whose range holds ``offset`` (floor by base offset)."""
        i = bisect_right(self._bases, offset) - 1
        return self._segments[i] if i >= 0 else None

    # ---- append ------------------------------------------------------------------------
    def append_as_leader(self, records: Buffer, leader_epoch: int) -> LogAppendInfo:
        """Validate, assign offsets from LEO, stamp ``leader_epoch``, append."""
        with self._lock:
            self._check_online()
            now = self._clock.milliseconds()
            batches = validate_leader_batches(
                records, self._config, next_offset=self._next_offset, leader_epoch=leader_epoch, now_ms=now
            )
            markers = coordinator_epochs(records, batches.headers)
            duplicate = self.producer_state.check_leader_append(batches.headers, markers)
            if duplicate is not None:
                # A producer's retry of a batch already in the log: answer with
                # its original offsets and append nothing (KIP-98).
                return LogAppendInfo(
                    duplicate.first_offset, duplicate.last_offset, -1, -1,
                    duplicate.timestamp if self._config.log_append_time else -1,
                    self._log_start_offset, 0, 0, 0, leader_epoch,
                )
            self._append(batches, now)
            completed = self.producer_state.update_leader(
                batches.headers, batches.first_offset, now if self._config.log_append_time else None, markers
            )
            if completed:
                index_aborted(self.segment_for, completed)
            if leader_epoch >= 0:
                self.leader_epoch_cache.assign(leader_epoch, batches.first_offset)
            info = LogAppendInfo(  # positional: this runs on every produce
                batches.first_offset,
                batches.last_offset,
                batches.max_timestamp,
                batches.offset_of_max_timestamp,
                now if self._config.log_append_time else -1,
                self._log_start_offset,
                batches.record_count,
                len(batches.headers),
                batches.size,
                leader_epoch,
            )
        self._maybe_flush_by_messages()
        return info

    def append_as_follower(self, records: Buffer) -> LogAppendInfo:
        """Append replicated batches keeping their offsets and epochs."""
        with self._lock:
            self._check_online()
            now = self._clock.milliseconds()
            batches = validate_follower_batches(records, log_end_offset=self._next_offset)
            if batches is None:
                return LogAppendInfo(
                    self._next_offset, self._next_offset - 1, -1, -1, -1, self._log_start_offset, 0, 0, 0
                )
            self._append_follower(batches, now)
            completed = self.producer_state.update_replicated(
                batches.headers, coordinator_epochs(batches.parts[0], batches.headers)
            )
            if completed:
                index_aborted(self.segment_for, completed)
            for header in batches.headers:
                if header.partition_leader_epoch >= 0:
                    self.leader_epoch_cache.assign(header.partition_leader_epoch, header.base_offset)
            info = LogAppendInfo(
                first_offset=batches.first_offset,
                last_offset=batches.last_offset,
                max_timestamp=batches.max_timestamp,
                offset_of_max_timestamp=batches.offset_of_max_timestamp,
                log_append_time=-1,
                log_start_offset=self._log_start_offset,
                record_count=batches.record_count,
                batch_count=len(batches.headers),
                valid_bytes=batches.size,
                last_leader_epoch=batches.headers[-1].partition_leader_epoch,
            )
        self._maybe_flush_by_messages()
        return info

    def _append_follower(self, batches: ValidatedBatches, now: int) -> None:
        if batches.last_offset - batches.first_offset > INT32_MAX and len(batches.headers) > 1:
            first, second = split_follower_batches(batches)
            self._append_follower(first, now)
            self._append_follower(second, now)
            return
        self._append(batches, now)

    def _append(self, batches: ValidatedBatches, now: int) -> None:
        segment = self.maybe_roll(batches.size, batches.max_timestamp, batches.first_offset, batches.last_offset, now)
        try:
            segment.append(batches.last_offset, batches.max_timestamp, batches.offset_of_max_timestamp, batches.parts)
        except KafkaStorageError as e:
            raise self._failed(e) from None
        self._next_offset = batches.last_offset + 1

    # ---- read --------------------------------------------------------------------------
    def read(
        self, start_offset: int, max_bytes: int, max_offset: int | None = None, min_one_message: bool = True
    ) -> FetchDataInfo:
        """Whole batches from the one holding ``start_offset``, up to
        ``max_bytes`` (the first batch whole when ``min_one_message``: KIP-74),
        never a batch reaching ``max_offset`` (the high watermark for
        consumers). Raises ``OffsetOutOfRangeError`` outside
        [log start, LEO]."""
        with self._lock:
            self._check_online()
            end = self._next_offset
            if start_offset == end:
                active = self._segments[-1]
                return FetchDataInfo(LogOffsetMetadata(end, active.base_offset, active.size), b"")
            if start_offset > end or start_offset < self._log_start_offset:
                raise OffsetOutOfRangeError(
                    f"offset {start_offset} is outside the log range [{self._log_start_offset}, {end}] "
                    f"of {self.topic_partition}"
                )
            limit_segment, limit_position = None, None
            if max_offset is not None and max_offset < end:
                if max_offset <= start_offset:
                    return FetchDataInfo(LogOffsetMetadata(start_offset), b"")
                limit_segment = self.segment_for(max_offset)
                if limit_segment is not None:
                    found = limit_segment.translate_offset(max_offset)
                    limit_position = found[0] if found is not None else limit_segment.size
            i = max(bisect_right(self._bases, start_offset) - 1, 0)
            for segment in self._segments[i:]:
                max_position = limit_position if segment is limit_segment else None
                fetched = segment.read(start_offset, max_bytes, max_position, min_one_message)
                if fetched is not None:
                    meta = LogOffsetMetadata(start_offset, segment.base_offset, fetched.position)
                    return FetchDataInfo(meta, fetched.records, fetched.first_entry_incomplete)
                if segment is limit_segment:
                    break
            return FetchDataInfo(LogOffsetMetadata(start_offset), b"")

    # ---- lifecycle ---------------------------------------------------------------------
    def close(self) -> None:
        """Trim and close every segment (clean shutdown: the log manager
        flushes first and writes the clean-shutdown marker)."""
        with self._lock:
            if self._offline is None and self.dir.is_dir():
                try:
                    self._take_producer_snapshot()
                except KafkaStorageError as e:  # the next load rebuilds the state from the log
                    logger.warning("no producer snapshot at close of %s: %s", self.topic_partition, e)
            for segment in self._segments:
                segment.close()
            for _t, segment in self._pending_deletes:
                segment.close_quietly()  # the .deleted files go at next startup
            self._pending_deletes = []

    def close_quietly(self) -> None:
        """Release descriptors without trimming (tests simulate a crash)."""
        with self._lock:
            for segment in self._segments:
                segment.close_quietly()
            for _t, segment in self._pending_deletes:
                segment.close_quietly()

    def fetch_offset_by_timestamp(self, timestamp: int) -> TimestampAndOffset | None:
        """ListOffsets: -2 earliest, -1 latest, -3 max timestamp, else the
        first record with timestamp >= ``timestamp`` (see ``log_offsets``)."""
        return fetch_offset_by_timestamp(self, timestamp)

    def end_offset_for_epoch(self, leader_epoch: int) -> tuple[int, int]:
        """KIP-101/279 answer for OffsetsForLeaderEpoch."""
        return self.leader_epoch_cache.end_offset_for(leader_epoch, self._next_offset)

    def __repr__(self) -> str:
        return (
            f"Log({self.topic_partition}, start={self._log_start_offset}, end={self._next_offset}, "
            f"segments={len(self._segments)})"
        )
