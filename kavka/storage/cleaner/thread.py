"""``LogCleaner``: the cleaner threads of a broker (seed 002 §5.4.2: created
by the log manager when ``log.cleaner.enable`` is true, ``log.cleaner.threads``
of them, each running ``cleanOrSleep``).

Each thread loops: ask the ``LogCleanerManager`` for the filthiest log,
clean it with its own ``Cleaner`` and offset map (the dedupe buffer is split
evenly between threads), record the new cleaner checkpoint; then apply
retention to every compacted log (``compact``: only segments below the log
start, moved by DeleteRecords; ``compact,delete``: time and size too), each
marked in progress meanwhile so retention and cleaning never overlap on a
log, as Kafka's cleaner thread does; sleep ``log.cleaner.backoff.ms`` when
there was nothing to do (``wakeup`` cuts the sleep short).
``clean_once`` runs one such round synchronously (tests, or a caller
without threads).

A failed pass (I/O error, corrupt batch, a map too small for one batch)
marks the partition uncleanable (KIP-346) and the thread goes on with the
others; an aborted pass (the log was paused, truncated, or changed under
it) simply ends.

Thread-safe: the manager is shared, everything else is per thread.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kavka.common.clock import Clock, SystemClock
from kavka.common.topic_partition import TopicPartition
from kavka.protocol.records.batch import InvalidRecordBatch
from kavka.storage.cleaner.cleaner import BufferTooSmallError, Cleaner, CleanerStats, StepHook
from kavka.storage.cleaner.config import LogCleanerConfig, Throttler
from kavka.storage.cleaner.manager import LogCleanerManager, LogCleaningAbortedError, LogSource
from kavka.storage.cleaner.offset_map import SkimpyOffsetMap
from kavka.storage.errors import KafkaStorageError, StorageError
from kavka.storage.log import Log
from kavka.storage.log_dir_failure_channel import LogDirFailureChannel
from kavka.storage.retention import delete_old_segments

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class CleanOutcome:
    """What one round did: the log cleaned (if any), its new checkpoint,
    counters, and how many segments retention deleted."""

    tp: TopicPartition | None
    end_offset: int | None
    stats: CleanerStats | None
    retention_deleted: int = 0
    error: str | None = None


class LogCleaner:
    """See the module docstring."""

    def __init__(
        self,
        source: LogSource,
        config: LogCleanerConfig | None = None,
        *,
        clock: Clock | None = None,
        step_hook: StepHook | None = None,
        bound_of: Callable[[TopicPartition], int | None] | None = None,
        failure_channel: LogDirFailureChannel | None = None,
    ) -> None:
        self.config = config or LogCleanerConfig()
        self._failure_channel = failure_channel
        self.clock = clock or SystemClock()
        self.manager = LogCleanerManager(source)
        self.throttler = Throttler(self.config.max_io_bytes_per_second)
        self._step_hook = step_hook
        self._bound_of = bound_of
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._sync_cleaner: Cleaner | None = None
        self._current: dict[int, TopicPartition] = {}
        self._wake = threading.Event()

    def _new_cleaner(self) -> Cleaner:
        offset_map = SkimpyOffsetMap(self.config.dedupe_buffer_per_thread, self.config.io_buffer_load_factor)

        def check_aborted() -> None:
            if self._stop.is_set() and self._threads:
                raise LogCleaningAbortedError("the log cleaner is shutting down")
            tp = self._current.get(threading.get_ident())
            if tp is not None:
                self.manager.check_cleaning_aborted(tp)

        return Cleaner(
            offset_map,
            self.clock,
            io_buffer_size=self.config.io_buffer_size,
            throttler=self.throttler,
            check_aborted=check_aborted,
            step_hook=self._step_hook,
        )

    # ---- one round ---------------------------------------------------------------------------
    def clean_once(self, cleaner: Cleaner | None = None) -> CleanOutcome:
        """Clean the filthiest log (if any is cleanable), then apply retention
        to ``compact,delete`` logs."""
        if cleaner is None:
            if self._sync_cleaner is None:
                self._sync_cleaner = self._new_cleaner()
            cleaner = self._sync_cleaner
        outcome = self._clean_filthiest(cleaner)
        deleted = self._retention()
        return CleanOutcome(outcome.tp, outcome.end_offset, outcome.stats, deleted, outcome.error)

    def _clean_filthiest(self, cleaner: Cleaner) -> CleanOutcome:
        now = self.clock.milliseconds()
        to_clean = self.manager.grab_filthiest_log(now, self._bound_of)
        if to_clean is None:
            return CleanOutcome(None, None, None)
        tp = to_clean.tp
        me = threading.get_ident()
        self._current[me] = tp
        end_offset = horizon = stats = error = None
        try:
            result = cleaner.clean(to_clean)
            end_offset, horizon, stats = result.end_offset, result.delete_horizon_ms, result.stats
            logger.info(
                "cleaned %s up to offset %d: %d -> %d bytes in %d groups",
                tp, end_offset, stats.bytes_read, stats.bytes_written, stats.groups,
            )
        except LogCleaningAbortedError as e:
            logger.info("%s", e)
        except (StorageError, InvalidRecordBatch, BufferTooSmallError, OSError) as e:
            error = f"{type(e).__name__}: {e}"
            logger.error("cleaning %s failed, marking it uncleanable: %s", tp, error)
            self.manager.mark_uncleanable(tp, error)
            if isinstance(e, (KafkaStorageError, OSError)) and self._failure_channel is not None:
                # KIP-112: an I/O error fails the log's directory, as Kafka's cleaner does
                self._failure_channel.maybe_add_offline_log_dir(
                    to_clean.log.dir.parent, f"Failed to clean up log for {tp} due to an I/O error",
                    e.__cause__ if isinstance(e, KafkaStorageError) and e.__cause__ else e)
        finally:
            self._current.pop(me, None)
            self.manager.done_cleaning(tp, end_offset, horizon)
        return CleanOutcome(tp, end_offset, stats, 0, error)

    def _retention(self) -> int:
        logs = self.manager.deletable_logs()
        deleted = 0
        now = self.clock.milliseconds()
        try:
            for tp, log in logs:
                try:
                    deleted += delete_old_segments(log, now)
                except StorageError as e:
                    logger.error("retention of %s failed: %s", tp, e)
        finally:
            self.manager.done_deleting([tp for tp, _ in logs])
        return deleted

    # ---- threads ---------------------------------------------------------------------------
    def startup(self) -> None:
        """Start ``log.cleaner.threads`` threads (nothing if disabled)."""
        if not self.config.enable or self._threads:
            return
        self._stop.clear()
        for i in range(self.config.threads):
            t = threading.Thread(target=self._run, name=f"kavka-log-cleaner-{i}", daemon=True)
            self._threads.append(t)
            t.start()

    @property
    def running(self) -> bool:
        """Whether cleaner threads were started and not shut down."""
        return bool(self._threads)

    @property
    def stopping(self) -> bool:
        """Whether ``shutdown`` has begun (running passes abort at their next check)."""
        return self._stop.is_set()

    def wakeup(self) -> None:
        """End the backoff sleep of idle threads (a log became cleanable)."""
        self._wake.set()

    def _run(self) -> None:
        cleaner = self._new_cleaner()
        while not self._stop.is_set():
            try:
                outcome = self.clean_once(cleaner)
            except Exception:  # keep the thread alive; the failure is logged
                logger.exception("log cleaner round failed")
                outcome = CleanOutcome(None, None, None)
            if outcome.tp is None and not self._stop.is_set():
                self._wake.wait(self.config.backoff_ms / 1000)
                self._wake.clear()

    def reconfigure(self, config: LogCleanerConfig, timeout_s: float | None = None) -> bool:
        """A live change of ``log.cleaner.*`` (Kafka's LogCleaner.reconfigure):
        the threads stop (aborting a running pass, which the next one
        resumes from the checkpoint) and start again with the new thread
        count, buffers and I/O throttle; the partitions' cleaning states are
        kept. Blocks while threads stop: call it off the event loop. Returns
        whether anything changed."""
        if config == self.config:
            return False
        was_running = self.running
        if was_running and not self.shutdown(timeout_s):
            logger.warning("log cleaner threads did not stop within %s s; reconfiguring anyway", timeout_s)
        self.config = config
        self.throttler = Throttler(config.max_io_bytes_per_second)
        self._sync_cleaner = None
        if was_running:
            self._threads = []
            self.startup()
        logger.info("log cleaner reconfigured: %s", config)
        return True

    def shutdown(self, timeout_s: float | None = None) -> bool:
        """Stop the threads: running passes are aborted at their next check
        (their partitions are left as they were: not paused). Returns
        whether every thread ended within ``timeout_s``."""
        self._stop.set()  # a running pass sees it at its next abort check
        self._wake.set()
        for t in self._threads:
            t.join(timeout_s)
        self._threads = [t for t in self._threads if t.is_alive()]
        return not self._threads

    # ---- hooks for truncation / deletion (Kafka's LogManager calls these) -------------------
    def abort_and_pause_cleaning(self, tp: TopicPartition, timeout_s: float | None = None) -> bool:
        return self.manager.abort_and_pause_cleaning(tp, timeout_s)

    def resume_cleaning(self, tp: TopicPartition) -> None:
        self.manager.resume_cleaning(tp)

    def abort_cleaning(self, tp: TopicPartition, log_dir: Path | None = None) -> None:
        """Stop and forget ``tp`` and drop its cleaner checkpoint entry (in
        ``log_dir`` when the partition has already left the source)."""
        self.manager.abort_cleaning(tp)
        self.manager.update_checkpoint(tp, None, log_dir)

    def forget_partition(self, tp: TopicPartition) -> None:
        """Stop and forget ``tp``: its pause, delete horizon and uncleanable
        mark (its log left the broker; the checkpoint entry is dropped
        separately)."""
        self.manager.abort_cleaning(tp)

    def pause_cleaning_for_non_compacted(self) -> list[tuple[TopicPartition, Log]]:
        """The logs whose policy lacks ``compact``, each paused for the log
        manager's retention pass; resume each with ``resume_cleaning``."""
        return self.manager.pause_cleaning_for_non_compacted()

    def deletable_logs(self) -> list[tuple[TopicPartition, Log]]:
        """Compacted logs marked in progress for a retention pass; give them
        back with ``done_deleting``."""
        return self.manager.deletable_logs()

    def done_deleting(self, tps: list[TopicPartition]) -> None:
        self.manager.done_deleting(tps)

    def maybe_truncate_checkpoint(self, tp: TopicPartition, offset: int) -> None:
        self.manager.maybe_truncate_checkpoint(tp, offset)

    def update_checkpoint(self, tp: TopicPartition, offset: int | None, log_dir: Path | None = None) -> None:
        self.manager.update_checkpoint(tp, offset, log_dir)
