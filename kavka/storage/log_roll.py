"""Rolling a ``Log``'s active segment (seed 002 §5.2; Kafka's
``Log.roll``/``maybeRoll``): a new active segment when the current one is
full by size, age (``segment.ms`` minus jitter), either index, or when an
offset would not fit its int32 relative range; an empty active segment is
replaced rather than kept. Each roll snapshots the producer state at the
log end (fsynced by the next flush) and marks the directory and the rolled
segment for the flusher.

A mixin of ``Log`` (kept apart to keep modules small); every method runs
under the log's lock (``roll`` takes it; ``maybe_roll`` is called with it).
"""

from __future__ import annotations

from kavka.storage.errors import KafkaStorageError
from kavka.storage.log_state import LogState
from kavka.storage.segment import LogSegment


class LogRoll(LogState):
    """The rolling part of ``Log``. It works on the
    log's state declared in ``LogState``."""

    def maybe_roll(self, messages_size: int, max_timestamp: int, first_offset: int, max_offset: int, now: int) -> LogSegment:
        """Roll when the active segment is full by size, age (segment.ms minus
        jitter), either index, or the int32 relative offset of ``max_offset``."""
        active = self._segments[-1]
        if active.should_roll(
            self._config, messages_size=messages_size, max_timestamp=max_timestamp, max_offset=max_offset, now_ms=now
        ):
            return self.roll(max(first_offset, self._next_offset))
        return active

    def roll(self, expected_next_offset: int | None = None) -> LogSegment:
        """Make a new active segment at max(expected, LEO) and trim the old
        one. An empty active segment is replaced rather than kept."""
        with self._lock:
            self._check_online()
            new_base = max(expected_next_offset or 0, self._next_offset)
            active = self._segments[-1]
            if active.size == 0:
                if active.base_offset == new_base:
                    return active
                self._segments.pop()
                self._bases.pop()
                active.delete_files()
            else:
                active.on_become_inactive()
                self._roll_flush_offset = new_base
            segment = self._new_segment(new_base)
            self._segments.append(segment)
            self._bases.append(new_base)
            self._dir_needs_fsync = True
            self._take_producer_snapshot()
            return segment

    def _take_producer_snapshot(self) -> None:
        """Snapshot producer state at LEO (on roll and clean shutdown)."""
        try:
            self.producer_state.take_snapshot(self._next_offset, self._clock.milliseconds())
        except KafkaStorageError as e:
            raise self._failed(e) from None

    def _new_segment(self, base_offset: int) -> LogSegment:
        try:
            return LogSegment(
                self.dir,
                base_offset,
                self._config,
                self._clock,
                roll_jitter_ms=self._config.random_segment_jitter(self._rng),
                preallocate=self._config.preallocate,
            )
        except (OSError, KafkaStorageError) as e:
            err = e if isinstance(e, KafkaStorageError) else KafkaStorageError("cannot create segment", self.dir, e)
            raise self._failed(err) from None
