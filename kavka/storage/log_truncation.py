"""Truncation, log-start movement and segment removal of a ``Log``.

A mixin of ``Log`` (kept apart to keep modules small): truncation for
replication (``truncate_to``: KIP-101 truncation by leader epoch lands here;
``truncate_fully_and_start_at``), the log start offset (retention,
DeleteRecords), and taking segments out of the log: renamed ``.deleted`` at
once, files removed after ``file.delete.delay.ms`` (seed 002 §5.4.1), or
swapped for a compacted segment (``replace_segments``, seed 002 §5.4.2 (6)).

Every method takes the log's lock; see ``Log`` for the invariants.
"""

from __future__ import annotations

from kavka.storage.checkpoint import fsync_dir
from kavka.storage.errors import KafkaStorageError, OffsetOutOfRangeError
from kavka.storage.log_state import LogState
from kavka.storage.segment import DELETED_SUFFIX, SWAP_SUFFIX, LogSegment


class LogTruncation(LogState):
    """The truncation and deletion half of ``Log``. It works on the
    log's state declared in ``LogState``."""

    # ---- truncation and log start ----------------------------------------------------------
    def truncate_to(self, target_offset: int) -> bool:
        """Remove every record at or after ``target_offset`` (from the start of
        the batch holding it). Returns whether anything was removed."""
        if target_offset < 0:
            raise ValueError(f"cannot truncate {self.topic_partition} to negative offset {target_offset}")
        with self._lock:
            self._check_online()
            if target_offset >= self._next_offset:
                return False
            if target_offset <= self._segments[0].base_offset:
                self.truncate_fully_and_start_at(target_offset)
                return True
            doomed = [s for s in self._segments if s.base_offset > target_offset]
            self._remove_segments(doomed)
            segment = self._segments[-1]
            try:
                _removed, cut_base = segment.truncate_to(target_offset)
            except KafkaStorageError as e:
                raise self._failed(e) from None
            self._next_offset = target_offset if cut_base is None else min(target_offset, cut_base)
            self._after_truncation()
            return True

    def truncate_fully_and_start_at(self, new_offset: int) -> None:
        """Drop every segment and start empty at ``new_offset``."""
        with self._lock:
            self._check_online()
            self._remove_segments(list(self._segments))
            segment = self._new_segment(new_offset)
            self._segments, self._bases = [segment], [new_offset]
            self._dir_needs_fsync = True
            self._next_offset = new_offset
            self._log_start_offset = new_offset
            self._recovery_point = new_offset
            self._high_watermark = new_offset
            self.leader_epoch_cache.clear_and_flush()
            self._producer_state_io(self.producer_state.truncate_fully)

    def _after_truncation(self) -> None:
        end = self._next_offset
        self._recovery_point = min(self._recovery_point, end)
        self._high_watermark = min(self._high_watermark, end)
        self._log_start_offset = min(self._log_start_offset, end)
        self.leader_epoch_cache.truncate_from_end(end)
        self._producer_state_io(
            lambda: self.producer_state.truncate_and_reload(self._segments, end, self._clock.milliseconds())
        )

    def _producer_state_io(self, action) -> None:
        try:
            action()
        except KafkaStorageError as e:
            raise self._failed(e) from None

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
            self._recovery_point = max(self._recovery_point, min(new_start, self._next_offset))
            self.leader_epoch_cache.truncate_from_start(new_start)
            return True

    def delete_records_before(self, offset: int) -> int:
        """DeleteRecords: records below ``offset`` become unreadable and whole
        segments below it are deleted. ``offset`` must be within
        [log start, high watermark] (LEO when -1 is meant: callers resolve).
        Returns the new log start offset."""
        with self._lock:
            self._check_online()
            if offset < 0 or offset > self._high_watermark:
                raise OffsetOutOfRangeError(
                    f"DeleteRecords offset {offset} is outside [0, high watermark {self._high_watermark}] of "
                    f"{self.topic_partition}"
                )
            self.maybe_increment_log_start_offset(offset)
            self.delete_segments_below_log_start()
            return self._log_start_offset

    def delete_segments_below_log_start(self) -> int:
        """Delete segments whose every offset is below the log start."""
        with self._lock:
            doomed = [
                s for i, s in enumerate(self._segments[:-1]) if self._bases[i + 1] <= self._log_start_offset
            ]
            self._remove_segments(doomed)
            if doomed:
                self._producer_state_io(lambda: self.producer_state.delete_snapshots_before(self._bases[0]))
            return len(doomed)

    def update_high_watermark(self, hw: int) -> int:
        """Set by replication; clamped to [log start, LEO]."""
        with self._lock:
            self._high_watermark = min(max(hw, self._log_start_offset), self._next_offset)
            return self._high_watermark

    # ---- segment removal (retention, truncation, compaction) ----------------------------------
    def _remove_segments(self, doomed: list[LogSegment]) -> None:
        """Take segments out of the log and rename their files ``.deleted``;
        files are removed after ``file.delete.delay.ms``."""
        if not doomed:
            return
        ids = {id(s) for s in doomed}
        keep = [s for s in self._segments if id(s) not in ids]
        self._segments, self._bases = keep, [s.base_offset for s in keep]
        due = self._clock.milliseconds() + self._config.file_delete_delay_ms
        for segment in doomed:
            try:
                segment.change_suffix(DELETED_SUFFIX)
            except KafkaStorageError as e:
                raise self._failed(e) from None
            self._pending_deletes.append((due, segment))
        if self._config.file_delete_delay_ms == 0:
            self.delete_expired_files(due)

    def delete_segments(self, doomed: list[LogSegment]) -> None:
        """Remove the given (non-active) segments; for retention and the cleaner."""
        with self._lock:
            self._check_online()
            if doomed and doomed[-1] is self._segments[-1]:
                raise ValueError("the active segment is never deleted; roll first")
            self._remove_segments(doomed)
            if doomed:
                self._producer_state_io(lambda: self.producer_state.delete_snapshots_before(self._bases[0]))
            if self._segments and self._segments[0].base_offset > self._log_start_offset:
                self.maybe_increment_log_start_offset(self._segments[0].base_offset)

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
        with self._lock:
            self._check_online()
            present = {id(s) for s in self._segments}
            if any(id(s) not in present for s in old_segments):
                raise ValueError("replace_segments: an old segment is no longer part of the log")
            if any(s is self._segments[-1] for s in old_segments):
                raise ValueError("replace_segments: the active segment is never replaced")
            try:
                new_segment.on_become_inactive()
                new_segment.flush()
                new_segment.change_suffix(SWAP_SUFFIX)
                fsync_dir(self.dir)
                self._remove_segments([s for s in old_segments if s is not new_segment])
                new_segment.change_suffix("")
                fsync_dir(self.dir)
            except KafkaStorageError as e:
                raise self._failed(e) from None
            except OSError as e:
                raise self._failed(KafkaStorageError("segment swap failed", new_segment.log.path, e)) from None
            segments = sorted(self._segments + [new_segment], key=lambda s: s.base_offset)
            self._segments, self._bases = segments, [s.base_offset for s in segments]
            self._dir_needs_fsync = True
