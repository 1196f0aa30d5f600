"""A partition's log as replication and the API handlers see it (Kafka's
``UnifiedLog``): the ``LocalLog`` (segments, log end offset, recovery point,
roll, flush, truncation, reads) with, on top, the log start offset, the
high watermark and last stable offset, the idempotent/transactional
producer state (KIP-98), the leader-epoch cache (KIP-101) and the
validation of appends.

State beside the local log: ``log_start_offset`` (moved forward by
retention and DeleteRecords; nothing below it is readable),
``high_watermark`` (set by replication, checkpointed by the log manager),
``producer_state`` (``ProducerStateManager``) and ``leader_epoch_cache``
(``LeaderEpochFileCache``). The last stable offset is derived:
min(high watermark, first offset of the earliest open transaction).

Invariants: log_start_offset <= high_watermark <= LEO; recovery_point <=
LEO; the epoch cache has no entry starting at or past LEO and none
starting below the log start (``truncate_from_start`` moves the first one
up); the producer state covers exactly the batches below LEO.

The produce route, one pass through this class under the log's lock
(``append_as_leader``; ``replication.partition`` calls it for the produce
handler and the transaction markers):

1. ``log_append.validate_leader_batches``: checks every batch (size,
   magic, CRC32C, record count) and, through ``log_validator`` (Kafka's
   LogValidator), every record (layout, offset deltas, keys of compacted
   topics, timestamps; per-record errors for KIP-467), then assigns
   offsets from LEO and the leader epoch by patching the batch headers,
   without copying uncompressed batches (LogAppendTime and a topic
   ``compression.type`` rewrite the header or the batch);
2. ``ProducerStateManager.check_leader_append``: producer fencing,
   sequence order and the coordinator epoch of markers; a duplicate (a
   producer's retry of a batch already in the log) is answered with its
   original offsets and nothing is written (a lone batch without a
   producer id skips this and step 5: there is nothing to check or record);
3. ``maybe_roll``: a new active segment when the batches do not fit;
4. ``LocalLog.append`` -> ``LogSegment.append``: one ``pwritev`` of the
   batches to the ``.log``, an index entry every ``index.interval.bytes``
   (held in memory and written 64 at a time: ``index.index_file``), LEO
   moves;
5. ``ProducerStateManager.update_leader`` records the batches; aborts their
   markers closed are indexed in the ``.txnindex`` (``LocalLog.index_aborted``);
   the leader-epoch cache learns a new epoch's start offset;
6. outside the lock, a flush when ``flush.messages`` is reached.

A follower append (``append_as_follower``) keeps the leader's offsets and
epochs: validation of CRCs and increasing offsets, then steps 3 to 6
without the producer checks.

Thread-safety: one ``RLock`` per log guards every mutation and read (the
log manager's threads, the cleaner, the broker's event loop); the
``LocalLog`` is given the same lock and releases it around fsyncs.
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Callable
from pathlib import Path

from kavka.common.clock import Clock, SystemClock
from kavka.common.topic_partition import TopicPartition
from kavka.storage.append_origin import AppendOrigin
from kavka.storage.errors import CheckpointFormatError, KafkaStorageError, OffsetOutOfRangeError
from kavka.storage.fetch_data_info import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    MAX_TIMESTAMP,
    FetchDataInfo,
    LogOffsetMetadata,
    TimestampAndOffset,
)
from kavka.storage.file_records import Buffer
from kavka.storage.index.offset_index import INT32_MAX
from kavka.storage.index.transaction_index import AbortedTxn
from kavka.storage.leader_epoch_cache import LeaderEpochFileCache
from kavka.storage.local_log import LocalLog
from kavka.storage.log_append import (
    LogAppendInfo,
    ValidatedBatches,
    split_follower_batches,
    validate_follower_batches,
    validate_leader_batches,
)
from kavka.storage.log_config import LogConfig
from kavka.storage.log_dir_failure_channel import LogDirFailureChannel
from kavka.storage.log_dir_names import parse_topic_partition
from kavka.storage.log_loader import LogLoader
from kavka.storage.log_offsets import offset_by_timestamp, offset_of_max_timestamp
from kavka.storage.log_segments import LogSegments
from kavka.storage.log_validator import LogValidator
from kavka.storage.producer_state.end_txn_marker import coordinator_epochs
from kavka.storage.producer_state.entry import DEFAULT_PRODUCER_ID_EXPIRATION_MS, ActiveProducer
from kavka.storage.producer_state.manager import ProducerStateManager
from kavka.storage.read_buffers import ReadBuffers
from kavka.storage.segment import LogSegment

logger = logging.getLogger(__name__)
_new = tuple.__new__


class Log:
    """See the module docstring. Open with ``Log(dir, config, ...)``: loading
    and recovery (``LogLoader``, seed 002 §5.3) happen in the constructor."""

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
        producer_id_expiration_ms: int = DEFAULT_PRODUCER_ID_EXPIRATION_MS,
        failure_channel: LogDirFailureChannel | None = None,
    ) -> None:
        self.dir = Path(directory)
        self.topic_partition: TopicPartition = parse_topic_partition(self.dir.name)
        clock = clock or SystemClock()
        rng = rng or random.Random()
        self._lock = threading.RLock()
        # offset -> its LogOffsetMetadata: the high watermark's and the last
        # stable offset's, asked at every DelayedFetch check; cleared when
        # positions may change (truncation, segments removed or replaced)
        self._positions: dict[int, LogOffsetMetadata] = {}
        # the leader's last validator, remade when the config or the origin
        # changes (see log_validator: its set-up costs more than a small
        # batch's walk)
        self._validator: LogValidator | None = None
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
            clock,
            self.leader_epoch_cache,
            log_start_offset=log_start_offset,
            recovery_point=recovery_point,
            had_clean_shutdown=had_clean_shutdown,
            roll_jitter_ms=config.random_segment_jitter(rng),
        ).load()
        self.truncated_on_load = loaded.truncated_bytes
        self._local = LocalLog(
            self.dir,
            self.topic_partition,
            config,
            clock,
            rng,
            self._lock,
            LogSegments(loaded.segments),
            next_offset=loaded.next_offset,
            recovery_point=loaded.recovery_point,
            failure_channel=failure_channel,
        )
        self.leader_epoch_cache.sync_assignments_with(self._local.write_with_next_flush)
        self._log_start_offset = loaded.log_start_offset
        end = loaded.next_offset
        # Idempotent producers' state (KIP-98): from the latest snapshot plus the batches after it.
        self.producer_state = ProducerStateManager(self.dir, producer_id_expiration_ms)
        completed = self.producer_state.load(loaded.segments, end, clock.milliseconds())
        self._local.index_aborted(completed)  # aborts whose index entry was lost in a crash
        self.leader_epoch_cache.truncate_from_end(end)
        if self._log_start_offset > end:
            # Every byte on disk is below the checkpointed start: none is live.
            self.truncate_fully_and_start_at(self._log_start_offset)
        self.leader_epoch_cache.truncate_from_start(self._log_start_offset)
        self._high_watermark = min(max(high_watermark, self._log_start_offset), self._local.log_end_offset)

    # ---- state -----------------------------------------------------------------------------------
    @property
    def config(self) -> LogConfig:
        return self._local.config

    def update_config(self, config: LogConfig) -> None:
        """Dynamic topic config change (applies from the next operation)."""
        with self._lock:
            self._local.update_config(config)

    @property
    def clock(self) -> Clock:
        return self._local.clock

    @property
    def log_end_offset(self) -> int:
        return self._local.log_end_offset

    @property
    def log_start_offset(self) -> int:
        return self._log_start_offset

    @property
    def recovery_point(self) -> int:
        return self._local.recovery_point

    @property
    def high_watermark(self) -> int:
        return self._high_watermark

    @property
    def last_stable_offset(self) -> int:
        """min(high watermark, first offset of the earliest open
        transaction): read_committed consumers read below it (KIP-98)."""
        unstable = self.producer_state.first_unstable_offset()
        return self._high_watermark if unstable is None else min(self._high_watermark, unstable)

    @property
    def last_flush_ms(self) -> int:
        return self._local.last_flush_ms

    @property
    def unflushed_messages(self) -> int:
        return self._local.unflushed_messages

    @property
    def offline(self) -> bool:
        return self._local.offline

    def segments(self) -> list[LogSegment]:
        """A copy of the segments in base-offset order (the last is active)."""
        with self._lock:
            return self._local.segments.values()

    @property
    def active_segment(self) -> LogSegment:
        return self._local.segments.active

    def size_in_bytes(self) -> int:
        with self._lock:
            return self._local.segments.size_in_bytes()

    def log_end_offset_metadata(self) -> LogOffsetMetadata:
        with self._lock:
            return self._local.log_end_offset_metadata()

    def offset_metadata(self, offset: int) -> LogOffsetMetadata:
        """Where ``offset`` is (its segment and batch position; see
        ``LogOffsetMetadata``), remembered until positions may change.
        Raises ``OffsetOutOfRangeError`` outside [log start, LEO]."""
        with self._lock:
            local = self._local
            if offset >= local.log_end_offset:
                if offset > local.log_end_offset:
                    raise OffsetOutOfRangeError(f"offset {offset} is past the log end {local.log_end_offset} "
                                                f"of {self.topic_partition}")
                return local.log_end_offset_metadata()
            meta = self._positions.get(offset)
            if meta is None:
                if offset < self._log_start_offset:
                    raise OffsetOutOfRangeError(f"offset {offset} is below the log start {self._log_start_offset} "
                                                f"of {self.topic_partition}")
                if len(self._positions) >= 8:  # old high watermarks
                    self._positions.clear()
                meta = self._positions[offset] = local.offset_metadata(offset)
            return meta

    def high_watermark_metadata(self) -> LogOffsetMetadata:
        """The high watermark and where it is (see ``offset_metadata``)."""
        with self._lock:
            return self.offset_metadata(self._high_watermark)

    def last_stable_offset_metadata(self) -> LogOffsetMetadata:
        with self._lock:
            return self.offset_metadata(self.last_stable_offset)

    def segment_for(self, offset: int) -> LogSegment | None:
        """The segment whose range holds ``offset`` (floor by base offset)."""
        with self._lock:
            return self._local.segments.floor(offset)

    # ---- append (the route is in the module docstring) -------------------------------------------
    def append_as_leader(
        self, records: Buffer, leader_epoch: int, origin: AppendOrigin = AppendOrigin.CLIENT
    ) -> LogAppendInfo:
        """Validate (every record: Kafka's LogValidator, stricter for a
        client's batches than a coordinator's), assign offsets from LEO,
        stamp ``leader_epoch``, append. A refused append writes nothing."""
        local = self._local
        with self._lock:
            local.check_online()
            config = local.config
            now = local.clock.milliseconds()
            validator = self._validator
            if validator is None or validator.config is not config or validator.origin is not origin:
                validator = self._validator = LogValidator(config, self.topic_partition, now, origin)
            append_time = now if validator.log_append_time else None
            batches = validate_leader_batches(
                records, config, next_offset=local.log_end_offset, leader_epoch=leader_epoch, now_ms=now,
                topic_partition=self.topic_partition, origin=origin, validator=validator,
            )
            headers = batches.headers
            # One batch without a producer id is neither idempotent nor a
            # marker: the producer state has nothing to check or record (the
            # common plain produce, spared the calls).
            tracked = len(headers) > 1 or headers[0].producer_id >= 0
            markers = coordinator_epochs(records, headers) if tracked else None
            duplicate = self.producer_state.check_leader_append(headers, markers) if tracked else None
            if duplicate is not None:
                # A producer's retry of a batch already in the log: answer with
                # its original offsets and append nothing (KIP-98).
                return LogAppendInfo(
                    duplicate.first_offset, duplicate.last_offset, -1, -1,
                    duplicate.timestamp if append_time is not None else -1,
                    self._log_start_offset, 0, 0, 0, leader_epoch,
                )
            self.maybe_roll(batches.size, batches.max_timestamp, batches.first_offset, batches.last_offset, now)
            local.append(batches)
            if tracked:
                completed = self.producer_state.update_leader(headers, batches.first_offset, append_time, markers)
                if completed:
                    local.index_aborted(completed)
            if leader_epoch >= 0:
                self.leader_epoch_cache.assign(leader_epoch, batches.first_offset)
            # tuple.__new__: the named tuple's own __new__ is a Python call, and this runs on every produce
            info = _new(LogAppendInfo, (
                batches.first_offset,
                batches.last_offset,
                batches.max_timestamp,
                batches.offset_of_max_timestamp,
                -1 if append_time is None else append_time,
                self._log_start_offset,
                batches.record_count,
                len(headers),
                batches.size,
                leader_epoch,
            ))
        if local.unflushed_messages >= config.flush_messages:
            local.flush()
        return info

    def append_as_follower(self, records: Buffer) -> LogAppendInfo:
        """Append replicated batches keeping their offsets and epochs."""
        local = self._local
        with self._lock:
            local.check_online()
            now = local.clock.milliseconds()
            end = local.log_end_offset
            batches = validate_follower_batches(records, log_end_offset=end)
            if batches is None:
                return LogAppendInfo(end, end - 1, -1, -1, -1, self._log_start_offset, 0, 0, 0)
            self._append_follower(batches, now)
            completed = self.producer_state.update_replicated(
                batches.headers, coordinator_epochs(batches.parts[0], batches.headers)
            )
            if completed:
                local.index_aborted(completed)
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
        if local.unflushed_messages >= local.config.flush_messages:
            local.flush()
        return info

    def _append_follower(self, batches: ValidatedBatches, now: int) -> None:
        if batches.last_offset - batches.first_offset > INT32_MAX and len(batches.headers) > 1:
            # More offsets than one segment's int32 relative range: in halves,
            # so that a roll can fall between them.
            first, second = split_follower_batches(batches)
            self._append_follower(first, now)
            self._append_follower(second, now)
            return
        self.maybe_roll(batches.size, batches.max_timestamp, batches.first_offset, batches.last_offset, now)
        self._local.append(batches)

    # ---- roll ------------------------------------------------------------------------------------
    def maybe_roll(self, messages_size: int, max_timestamp: int, first_offset: int, max_offset: int, now: int) -> LogSegment:
        """Roll when the active segment is full by size, age (``segment.ms``
        minus jitter), either index, or the int32 relative offset of
        ``max_offset`` (seed 002 §5.2; Kafka's ``maybeRoll``). Called with
        the lock held."""
        local = self._local
        active = local.segments.active
        if active.should_roll(
            local.config, messages_size=messages_size, max_timestamp=max_timestamp, max_offset=max_offset, now_ms=now
        ):
            return self.roll(max(first_offset, local.log_end_offset))
        return active

    def roll(self, expected_next_offset: int | None = None) -> LogSegment:
        """A new active segment at max(expected, LEO) (see ``LocalLog.roll``);
        each roll snapshots the producer state at LEO, fsynced by the next
        flush."""
        with self._lock:
            before = self._local.segments.active
            segment = self._local.roll(expected_next_offset)
            if segment is not before:
                self._take_producer_snapshot()
                self._local.sync_with_next_flush(self.producer_state.take_unsynced())
            return segment

    def _take_producer_snapshot(self) -> None:
        """Snapshot producer state at LEO (on roll and clean shutdown)."""
        self._producer_state_io(
            lambda: self.producer_state.take_snapshot(self._local.log_end_offset, self._local.clock.milliseconds())
        )

    def _producer_state_io(self, action: Callable[[], object]) -> None:
        try:
            action()
        except KafkaStorageError as e:
            raise self._local.failed(e) from None

    # ---- flush -----------------------------------------------------------------------------------
    def flush(self, up_to_offset: int | None = None) -> bool:
        """fsync the log up to ``up_to_offset`` (LEO by default) and advance
        the recovery point; see ``LocalLog.flush``. Returns whether it did."""
        return self._local.flush(up_to_offset)

    def maybe_flush(self, now_ms: int) -> bool:
        """The periodic flusher (``flush.ms``, or a segment rolled since)."""
        return self._local.maybe_flush(now_ms)

    def active_producers(self) -> list[ActiveProducer]:
        """The producers this partition remembers (Kafka's
        UnifiedLog.activeProducers, for DescribeProducers: KIP-664)."""
        with self._lock:
            return self.producer_state.active_producers()

    def remove_expired_producers(self, now_ms: int) -> int:
        """Forget the producers idle (by their last batch's timestamp) for
        ``producer.id.expiration.ms`` that hold no open transaction (Kafka's
        PeriodicProducerExpirationCheck, KIP-854): their next batch starts
        afresh (KIP-360). Returns how many went."""
        with self._lock:
            return self.producer_state.remove_expired(now_ms)

    # ---- read ------------------------------------------------------------------------------------
    def read(
        self, start_offset: int, max_bytes: int, max_offset: int | None = None, min_one_message: bool = True,
        buffers: ReadBuffers | None = None,
    ) -> FetchDataInfo:
        """Whole batches from the one holding ``start_offset``, up to
        ``max_bytes`` (the first batch whole when ``min_one_message``: KIP-74),
        never a batch reaching ``max_offset`` (the high watermark for
        consumers). Raises ``OffsetOutOfRangeError`` outside
        [log start, LEO]. ``buffers``: where a large read lands (a Fetch's:
        ``kavka.storage.read_buffers``)."""
        with self._lock:
            local = self._local
            local.check_online()
            end = local.log_end_offset
            if start_offset > end or start_offset < self._log_start_offset:
                raise OffsetOutOfRangeError(
                    f"offset {start_offset} is outside the log range [{self._log_start_offset}, {end}] "
                    f"of {self.topic_partition}"
                )
            return local.read(start_offset, max_bytes, max_offset, min_one_message, buffers)

    def collect_aborted_transactions(self, fetch_offset: int, upper_bound_offset: int) -> list[AbortedTxn]:
        """Aborted transactions with data in [fetch_offset, upper_bound_offset)."""
        with self._lock:
            return self._local.collect_aborted_transactions(fetch_offset, upper_bound_offset)

    def fetch_offset_by_timestamp(self, timestamp: int) -> TimestampAndOffset | None:
        """ListOffsets: -2 earliest (the log start), -1 latest (LEO), -3 the
        first record with the largest timestamp (KIP-734), else the first
        record with timestamp >= ``timestamp`` (see ``log_offsets``); the
        leader epoch of the answer from the epoch cache (KIP-279)."""
        cache = self.leader_epoch_cache
        with self._lock:
            if timestamp == EARLIEST_TIMESTAMP:
                start = self._log_start_offset
                return TimestampAndOffset(-1, start, self._epoch_for(start))
            if timestamp == LATEST_TIMESTAMP:
                latest = cache.latest_epoch()
                return TimestampAndOffset(-1, self._local.log_end_offset, -1 if latest is None else latest)
            segments = self._local.segments.values()
            if timestamp == MAX_TIMESTAMP:
                return offset_of_max_timestamp(segments, self._log_start_offset, self._epoch_for)
            if timestamp < 0:
                raise ValueError(f"unsupported ListOffsets timestamp {timestamp}")
            return offset_by_timestamp(segments, self._log_start_offset, timestamp, self._epoch_for)

    def _epoch_for(self, offset: int) -> int:
        epoch = self.leader_epoch_cache.epoch_for_offset(offset)
        return -1 if epoch is None else epoch

    def end_offset_for_epoch(self, leader_epoch: int) -> tuple[int, int]:
        """KIP-101/279 answer for OffsetsForLeaderEpoch."""
        return self.leader_epoch_cache.end_offset_for(leader_epoch, self._local.log_end_offset)

    # ---- truncation (replication; KIP-101 truncation by leader epoch lands here) -----------------
    def truncate_to(self, target_offset: int) -> bool:
        """Remove every record at or after ``target_offset`` (from the start of
        the batch holding it). Returns whether anything was removed."""
        if target_offset < 0:
            raise ValueError(f"cannot truncate {self.topic_partition} to negative offset {target_offset}")
        with self._lock:
            local = self._local
            local.check_online()
            if target_offset >= local.log_end_offset:
                # No record to cut, but an epoch this replica started at its
                # log end as a leader that wrote nothing goes: the next
                # leader never heard of it, and a follower that kept it
                # would name it in every Fetch and be told it diverges
                # forever (Kafka's UnifiedLog.truncateTo does the same).
                self.leader_epoch_cache.truncate_from_end(local.log_end_offset)
                return False
            if target_offset <= local.segments.first.base_offset:
                self.truncate_fully_and_start_at(target_offset)
                return True
            local.truncate_to(target_offset)
            self._positions.clear()
            end = local.log_end_offset
            self._high_watermark = min(self._high_watermark, end)
            self._log_start_offset = min(self._log_start_offset, end)
            self.leader_epoch_cache.truncate_from_end(end)
            # The segments' own .txnindex files were cut with them.
            self._producer_state_io(
                lambda: self.producer_state.truncate_and_reload(local.segments.values(), end, local.clock.milliseconds())
            )
            return True

    def truncate_fully_and_start_at(self, new_offset: int) -> None:
        """Drop every segment and start empty at ``new_offset`` (also the new
        log start and high watermark)."""
        with self._lock:
            self._local.check_online()
            self._local.truncate_fully_and_start_at(new_offset)
            self._positions.clear()
            self._log_start_offset = new_offset
            self._high_watermark = new_offset
            self.leader_epoch_cache.clear_and_flush()
            self._producer_state_io(self.producer_state.truncate_fully)

    # ---- log start and high watermark ------------------------------------------------------------
    def update_high_watermark(self, hw: int) -> int:
        """Set by replication; clamped to [log start, LEO]."""
        with self._lock:
            self._high_watermark = min(max(hw, self._log_start_offset), self._local.log_end_offset)
            return self._high_watermark

    def maybe_increment_log_start_offset(self, new_start: int) -> bool:
        """Move the log start forward (retention, DeleteRecords); the
        segments wholly below it go at the next retention pass."""
        with self._lock:
            if new_start <= self._log_start_offset:
                return False
            if new_start > self._high_watermark:
                raise OffsetOutOfRangeError(
                    f"cannot move the log start of {self.topic_partition} to {new_start}, past the high "
                    f"watermark {self._high_watermark}"
                )
            self._log_start_offset = new_start
            self._high_watermark = max(self._high_watermark, new_start)
            self._local.raise_recovery_point(new_start)
            self.leader_epoch_cache.truncate_from_start(new_start)
            return True

    def delete_records_before(self, offset: int) -> int:
        """DeleteRecords: records below ``offset`` become unreadable and whole
        segments below it are deleted. ``offset`` must be within
        [log start, high watermark] (LEO when -1 is meant: callers resolve).
        Returns the new log start offset."""
        with self._lock:
            self._local.check_online()
            if offset < 0 or offset > self._high_watermark:
                raise OffsetOutOfRangeError(
                    f"DeleteRecords offset {offset} is outside [0, high watermark {self._high_watermark}] of "
                    f"{self.topic_partition}"
                )
            self.maybe_increment_log_start_offset(offset)
            self.delete_segments_below_log_start()
            return self._log_start_offset

    # ---- segment deletion (retention, DeleteRecords, compaction) ---------------------------------
    def delete_segments_below_log_start(self) -> int:
        """Delete segments whose every offset is below the log start."""
        with self._lock:
            doomed = self._local.segments.wholly_below(self._log_start_offset)
            self._remove_segments(doomed)
            return len(doomed)

    def delete_segments(self, doomed: list[LogSegment]) -> None:
        """Remove the given (non-active) segments; for retention and the
        cleaner. The log start moves up to the first remaining segment."""
        with self._lock:
            segments = self._local.segments
            self._local.check_online()
            if doomed and doomed[-1] is segments.active:
                raise ValueError("the active segment is never deleted; roll first")
            self._remove_segments(doomed)
            if len(segments) and segments.first.base_offset > self._log_start_offset:
                self.maybe_increment_log_start_offset(segments.first.base_offset)

    def delete_oldest_segments(self, predicate: Callable[[LogSegment, LogSegment | None], bool]) -> int:
        """Delete, oldest first, segments for which ``predicate(segment,
        next segment or None)`` holds, stopping at the first that fails it or
        that is not wholly below the high watermark (nothing not yet
        replicated is deleted); an empty active segment is never deleted, a
        non-empty one only after a roll (Kafka's ``deleteOldSegments``).
        Returns how many went."""
        with self._lock:
            if self._local.offline:
                return 0
            segments = self._local.segments.values()
            deletable: list[LogSegment] = []
            for i, segment in enumerate(segments):
                nxt = segments[i + 1] if i + 1 < len(segments) else None
                upper = nxt.base_offset if nxt is not None else self._local.log_end_offset
                if self._high_watermark < upper:
                    break
                if nxt is None and segment.size == 0:
                    break
                if not predicate(segment, nxt):
                    break
                deletable.append(segment)
            if not deletable:
                return 0
            if deletable[-1] is self._local.segments.active:
                self.roll()
            self.delete_segments(deletable)
            return len(deletable)

    def _remove_segments(self, doomed: list[LogSegment]) -> None:
        if not doomed:
            return
        self._local.remove_and_delete_segments(doomed)
        self._positions.clear()
        # Snapshots below the first remaining segment describe no batch left;
        # the one at its base is kept: the state before every remaining batch.
        first = self._local.segments.first.base_offset
        self._producer_state_io(lambda: self.producer_state.delete_snapshots_before(first))

    def delete_expired_files(self, now_ms: int) -> int:
        """Remove ``.deleted`` files whose ``file.delete.delay.ms`` has passed;
        returns how many segments were removed."""
        return self._local.delete_expired_files(now_ms)

    def pending_deletes(self) -> int:
        return self._local.pending_deletes()

    def replace_segments(
        self,
        new_segment: LogSegment,
        old_segments: list[LogSegment],
        precondition: Callable[[], None] | None = None,
    ) -> None:
        """Compaction's swap (see ``LocalLog.replace_segments``).
        ``precondition`` runs first under the log's lock and raises to call
        the swap off (the cleaner checks that nothing changed under it)."""
        with self._lock:
            if precondition is not None:
                precondition()
            self._local.replace_segments(new_segment, old_segments)
            self._positions.clear()

    # ---- lifecycle -------------------------------------------------------------------------------
    def close(self) -> None:
        """Snapshot the producer state and trim and close every segment (clean
        shutdown: the log manager flushes first and writes the clean-shutdown
        marker)."""
        with self._lock:
            if not self._local.offline and self.dir.is_dir():
                try:
                    self._take_producer_snapshot()
                except KafkaStorageError as e:  # the next load rebuilds the state from the log
                    logger.warning("no producer snapshot at close of %s: %s", self.topic_partition, e)
            self._local.close()

    def close_quietly(self) -> None:
        """Release descriptors without trimming (tests simulate a crash)."""
        with self._lock:
            self._local.close_quietly()

    def __repr__(self) -> str:
        return (
            f"Log({self.topic_partition}, start={self._log_start_offset}, end={self._local.log_end_offset}, "
            f"segments={len(self._local.segments)})"
        )
