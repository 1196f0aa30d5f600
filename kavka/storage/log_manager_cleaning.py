"""The log manager's side of the log cleaner: starting it, and everything
that must stop a cleaning pass before it touches a log's segments.

A mixin of ``LogManager`` (kept apart to keep modules small). The manager
owns one ``LogCleaner`` (``self.cleaner``, None when
``log.cleaner.enable`` is false, seed 002 §5.2) and routes through here:

* ``startup``: starts the cleaner threads; ``clean_once``: one synchronous
  round for callers that run no threads (compaction never runs in
  ``tick``).
* ``truncate_to`` / ``truncate_fully_and_start_at`` / ``delete_log``: the
  replication layer's entry points (never ``Log``'s own methods): abort and
  pause cleaning on the partition, waiting for a running pass to stop; act;
  fix the ``cleaner-offset-checkpoint`` entry (pulled back, reset, or
  dropped); resume (or forget the partition).
* ``_retention_pass``: seed 002 §5.4.1 cleanupLogs with one owner per
  policy (see ``LogManager``'s module docstring).

Never call the cleaner while holding the manager's lock: the cleaner holds
its own lock while asking the manager for its logs.
"""

from __future__ import annotations

import threading
from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING

from kavka.storage.cleaner_thread import CleanOutcome, LogCleaner
from kavka.storage.errors import KafkaStorageError
from kavka.storage.log import Log
from kavka.storage.retention import delete_old_segments
from kavka.common.topic_partition import TopicPartition
from kavka.storage.log_dir_names import delete_dir_name

if TYPE_CHECKING:
    from kavka.common.clock import Clock
    from kavka.storage.log_dir import LogDir
    from kavka.storage.log_manager_config import LogManagerConfig


class LogManagerCleaning:
    """The cleaner half of ``LogManager``. Uses this state of the manager
    (declared for readers and type checkers):"""

    cleaner: LogCleaner | None
    config: "LogManagerConfig"
    clock: "Clock"
    _lock: threading.RLock
    _logs: dict[TopicPartition, Log]
    _dir_of: dict[TopicPartition, "LogDir"]
    _pending_dir_deletes: list[tuple[int, Path]]
    _shut_down: bool
    # and the methods ``get_log``, ``all_logs`` and ``_guard`` of ``LogManager``.

    # ---- the cleaner threads -------------------------------------------------------------------
    def startup(self) -> None:
        """Start the cleaner threads (seed 002 §5.2 startup()); the periodic
        jobs are the caller's to schedule through ``tick``."""
        if self._shut_down:
            raise RuntimeError("the log manager was shut down; open a new one")
        if self.cleaner is not None:
            self.cleaner.startup()

    def clean_once(self) -> CleanOutcome:
        """One synchronous cleaner round (compact the filthiest log, then
        retention of compacted logs) for callers that run no cleaner threads;
        safe beside running threads (a log is cleaned by one at a time)."""
        if self.cleaner is None:
            raise RuntimeError("log.cleaner.enable is false: this log manager has no cleaner")
        return self.cleaner.clean_once()

    # ---- truncation and deletion (the replication layer's entry points) ------------------------
    def truncate_to(self, tp: TopicPartition, offset: int) -> bool:
        """Truncate the partition's log to ``offset`` (follower truncation,
        KIP-101). The replication layer calls this, never ``Log.truncate_to``:
        when the cut reaches below the active segment (the only part the
        cleaner never reads), any cleaning pass on the partition is aborted
        and waited out first, and the cleaner checkpoint is pulled back to
        the new active segment's base so re-appended offsets count as dirty
        (Kafka's truncateTo). Returns whether anything was removed; False for
        a partition this manager does not have."""
        log = self.get_log(tp.topic, tp.partition)  # type: ignore[attr-defined]
        if log is None:
            return False
        cleaner = self.cleaner
        if cleaner is None or offset >= log.active_segment.base_offset:
            return log.truncate_to(offset)
        cleaner.abort_and_pause_cleaning(tp)
        try:
            truncated = log.truncate_to(offset)
            if truncated:
                cleaner.maybe_truncate_checkpoint(tp, log.active_segment.base_offset)
            return truncated
        finally:
            cleaner.resume_cleaning(tp)

    def truncate_fully_and_start_at(self, tp: TopicPartition, offset: int) -> bool:
        """Empty the partition's log and start it at ``offset`` (a follower
        whose leader's log starts past its end). The replication layer calls
        this, never the ``Log`` method: cleaning is aborted and waited out
        first and the cleaner checkpoint reset to ``offset``. Returns False
        for a partition this manager does not have."""
        log = self.get_log(tp.topic, tp.partition)  # type: ignore[attr-defined]
        if log is None:
            return False
        cleaner = self.cleaner
        if cleaner is None:
            log.truncate_fully_and_start_at(offset)
            return True
        cleaner.abort_and_pause_cleaning(tp)
        try:
            log.truncate_fully_and_start_at(offset)
            cleaner.update_checkpoint(tp, offset if log.config.compact else None)
            return True
        finally:
            cleaner.resume_cleaning(tp)

    def delete_log(self, topic: str, partition: int) -> bool:
        """Remove the partition (StopReplica with delete, topic deletion: the
        replication layer calls this): stop any cleaning pass on it and wait
        for it to end, drop its cleaner checkpoint entry (a partition
        re-created later starts dirty), close it, rename its directory
        ``<topic>-<partition>.<uuid>-delete`` and remove that after
        ``log.segment.delete.delay.ms`` (or at the next startup). Returns
        False for a partition this manager does not have."""
        tp = TopicPartition(topic, partition)
        with self._lock:
            if tp not in self._logs:
                return False
        cleaner = self.cleaner
        if cleaner is not None:
            # Paused, not idle, while it leaves the table: no thread grabs it.
            cleaner.abort_and_pause_cleaning(tp)
        try:
            with self._lock:
                log = self._logs.pop(tp, None)
                d = self._dir_of.pop(tp, None)
            if log is None or d is None:
                return False  # a concurrent delete_log won
            if cleaner is not None:
                cleaner.update_checkpoint(tp, None, d.path)
            log.close()
            renamed = d.path / delete_dir_name(tp)
            try:
                log.dir.rename(renamed)
            except OSError as e:
                raise KafkaStorageError("cannot rename the deleted log's directory", log.dir, e) from e
        finally:
            if cleaner is not None:
                cleaner.manager.abort_cleaning(tp)  # forget its pause, horizons, uncleanable mark
        due = self.clock.milliseconds() + self.config.file_delete_delay_ms
        with self._lock:
            self._pending_dir_deletes.append((due, renamed))
        return True

    # ---- retention (seed 002 §5.4.1) -----------------------------------------------------------
    def _retention_pass(self, now: int) -> int:
        """cleanupLogs with the owners of ``LogManager``'s docstring:
        non-compacted logs here with cleaning paused; compacted logs here
        only while no cleaner thread runs (marked in progress meanwhile)."""
        cleaner = self.cleaner
        if cleaner is None:
            return self._delete_old_segments(list(self.all_logs().items()), now)  # type: ignore[attr-defined]
        paused = cleaner.manager.pause_cleaning_for_non_compacted()
        try:
            deleted = self._delete_old_segments(paused, now)
        finally:
            for tp, _log in paused:
                with suppress(ValueError):  # delete_log forgot the partition meanwhile
                    cleaner.resume_cleaning(tp)
        if not cleaner.running:
            compacted = cleaner.manager.deletable_logs()
            try:
                deleted += self._delete_old_segments(compacted, now)
            finally:
                cleaner.manager.done_deleting([tp for tp, _log in compacted])
        return deleted

    def _delete_old_segments(self, logs: list[tuple[TopicPartition, Log]], now: int) -> int:
        guard = self._guard  # type: ignore[attr-defined]
        return sum(guard(tp, lambda log=log: delete_old_segments(log, now), 0) for tp, log in logs)
