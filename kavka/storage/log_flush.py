"""Flushing a ``Log`` (seed 002 §5.3: the recovery point): fsync every
segment holding offsets from the recovery point up to a target, the
producer snapshots written since the last flush and, after a roll or a
new file, the directory; then advance the recovery point. The periodic
flusher calls ``maybe_flush`` (``flush.ms`` elapsed, or a segment rolled
since: Kafka flushes a rolled segment right away); appends call
``_maybe_flush_by_messages`` (``flush.messages``).

A mixin of ``Log`` (kept apart to keep modules small). The fsyncs run
outside the log's lock (a segment removed meanwhile is skipped); the
bookkeeping before and after runs under it. An fsync failure takes the
log offline (``KafkaStorageError``).
"""

from __future__ import annotations

from kavka.storage.checkpoint import fsync_dir
from kavka.storage.errors import KafkaStorageError
from kavka.storage.log_state import LogState
from kavka.storage.producer_state.snapshot import fsync_file


class LogFlush(LogState):
    """The flushing part of ``Log``. It works on the
    log's state declared in ``LogState``."""

    def flush(self, up_to_offset: int | None = None) -> bool:
        """fsync every segment holding offsets in [recovery point, up_to) (LEO
        by default) and advance the recovery point. Returns whether it did."""
        with self._lock:
            self._check_online()
            target = self._next_offset if up_to_offset is None else min(up_to_offset, self._next_offset)
            if target <= self._recovery_point and not self._dir_needs_fsync:
                return False
            start = self._recovery_point
            todo = [
                s
                for i, s in enumerate(self._segments)
                if s.base_offset < target and (i + 1 == len(self._segments) or self._bases[i + 1] > start)
            ]
            fsync_directory, self._dir_needs_fsync = self._dir_needs_fsync, False
            snapshots = self.producer_state.take_unsynced()
            fsync_directory = fsync_directory or bool(snapshots)
        try:
            for snapshot in snapshots:
                fsync_file(snapshot)
            for segment in todo:
                try:
                    segment.flush()
                except (KafkaStorageError, OSError):
                    with self._lock:
                        if any(s is segment for s in self._segments):
                            raise
                    # removed (and maybe closed) meanwhile: nothing to make durable
            if fsync_directory:
                fsync_dir(self.dir)
        except KafkaStorageError as e:
            with self._lock:
                raise self._failed(e) from None
        except OSError as e:
            with self._lock:
                raise self._failed(KafkaStorageError("fsync failed", self.dir, e)) from None
        with self._lock:
            self._recovery_point = max(self._recovery_point, min(target, self._next_offset))
            self._last_flush_ms = self._clock.milliseconds()
            if self._roll_flush_offset is not None and self._roll_flush_offset <= self._recovery_point:
                self._roll_flush_offset = None
        return True

    def _maybe_flush_by_messages(self) -> None:
        if self.unflushed_messages >= self._config.flush_messages:
            self.flush()

    def maybe_flush(self, now_ms: int) -> bool:
        """The periodic flusher: ``flush.ms`` since the last flush, or the
        segment rolled since (Kafka flushes a rolled segment right away)."""
        with self._lock:
            due = now_ms - self._last_flush_ms >= self._config.flush_ms and self.unflushed_messages > 0
            rolled = self._roll_flush_offset
        if due:
            return self.flush()
        if rolled is not None:
            return self.flush(rolled)
        return False
