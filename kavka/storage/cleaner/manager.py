"""Which log to clean next, and the cleaning state of every log (Kafka's
``LogCleanerManager``, seed 002 §5.4.2).

* ``cleaner-offset-checkpoint`` (one per log dir, seed 002's text format via
  ``OffsetCheckpointFile``): for each compacted partition, the offset up to
  which it has been cleaned. It splits the log into the clean part (below)
  and the dirty part (from there up to the first uncleanable offset).
* ``grab_filthiest_log``: among logs whose ``cleanup.policy`` contains
  ``compact`` and that nobody is cleaning or has paused, the one with the
  largest dirty ratio ``dirty bytes / (clean + dirty bytes)`` at or above
  ``min.cleanable.dirty.ratio``; a log whose oldest dirty record is older
  than ``max.compaction.lag.ms`` (KIP-354) or whose retained tombstones
  reached their delete horizon (KIP-534) is cleaned regardless of the ratio.
  The chosen log is marked in progress.
* First uncleanable offset = min(active segment base, last stable offset
  (the high watermark — the cleaner never rewrites what is not yet
  replicated — or, lower, the first offset of the earliest open transaction:
  KIP-98, an open transaction's outcome is unknown, so neither its records
  nor anything after them is cleaned), a caller bound, the base of the
  first dirty segment younger than ``min.compaction.lag.ms``).
* States (seed: LogCleaningInProgress / LogCleaningPaused / LogCleaningAborted):
  no entry = idle; IN_PROGRESS while a thread cleans; ABORTED asked to stop
  (the thread notices at its next check and the state becomes PAUSED);
  PAUSED(n) nested pauses. ``abort_and_pause_cleaning`` blocks until a
  running pass has stopped, so truncation, retention and log deletion can
  then touch the segments safely; ``resume_cleaning`` undoes one pause.
  Partitions whose cleaning failed are set aside as uncleanable (KIP-346).

Thread-safe: one lock + condition; called by cleaner threads and by the
log manager / replication threads that pause cleaning.
"""

from __future__ import annotations

import enum
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from kavka.common.topic_partition import TopicPartition
from kavka.storage.checkpoint import CLEANER_OFFSET_CHECKPOINT, OffsetCheckpointFile
from kavka.storage.errors import CheckpointFormatError, StorageError
from kavka.storage.log import Log

logger = logging.getLogger(__name__)


class LogSource(Protocol):
    """Where the cleaner finds logs (``LogManager`` satisfies it)."""

    def all_logs(self) -> dict[TopicPartition, Log]: ...

    def log_dir_of(self, topic: str, partition: int) -> Path | None: ...


class LogCleaningState(enum.Enum):
    IN_PROGRESS = "in progress"
    ABORTED = "aborted"
    PAUSED = "paused"


class LogCleaningAbortedError(StorageError):
    """Raised inside a cleaning pass when its log was asked to stop."""


@dataclass(frozen=True, slots=True)
class LogToClean:
    """A cleanable log and where its dirty section lies (seed 002 §5.4.2 (1))."""

    tp: TopicPartition
    log: Log
    first_dirty_offset: int
    first_uncleanable_offset: int
    clean_bytes: int
    dirty_bytes: int
    needs_compaction_now: bool = False

    @property
    def total_bytes(self) -> int:
        return self.clean_bytes + self.dirty_bytes

    @property
    def cleanable_ratio(self) -> float:
        return self.dirty_bytes / self.total_bytes if self.total_bytes else 0.0


@dataclass(slots=True)
class _Entry:
    state: LogCleaningState
    pauses: int = 0


@dataclass(slots=True)
class _Stats:
    max_dirty_ratio: float = 0.0
    uncleanable: dict[TopicPartition, str] = field(default_factory=dict)


def first_uncleanable_offset(log: Log, first_dirty: int, now_ms: int, bound: int | None = None) -> int:
    """See the module docstring."""
    segments = log.segments()
    candidates = [segments[-1].base_offset, log.last_stable_offset]
    if bound is not None:
        candidates.append(bound)
    lag = log.config.min_compaction_lag_ms
    if lag > 0:
        for i, seg in enumerate(segments[:-1]):
            if segments[i + 1].base_offset <= first_dirty:
                continue  # wholly clean
            if seg.largest_timestamp() > now_ms - lag:
                candidates.append(seg.base_offset)
                break
    return min(candidates)


def _bytes_between(log: Log, start: int, end: int) -> int:
    """Bytes of the segments overlapping [start, end) (Kafka's logSegments)."""
    if end <= start:
        return 0
    segments = log.segments()
    total = 0
    for i, seg in enumerate(segments):
        upper = segments[i + 1].base_offset if i + 1 < len(segments) else log.log_end_offset + 1
        if seg.base_offset < end and upper > start:
            total += seg.size
    return total


class LogCleanerManager:
    """See the module docstring."""

    def __init__(self, source: LogSource) -> None:
        self.source = source
        self._lock = threading.Condition(threading.RLock())
        self._states: dict[TopicPartition, _Entry] = {}
        self._delete_horizons: dict[TopicPartition, int] = {}
        self._stats = _Stats()

    # ---- checkpoints -------------------------------------------------------------------------
    def _checkpoint_file(self, directory: Path) -> OffsetCheckpointFile:
        return OffsetCheckpointFile(Path(directory) / CLEANER_OFFSET_CHECKPOINT)

    def _log_dirs(self) -> dict[Path, list[TopicPartition]]:
        out: dict[Path, list[TopicPartition]] = {}
        for tp, log in self.source.all_logs().items():
            d = self.source.log_dir_of(tp.topic, tp.partition) or log.dir.parent
            out.setdefault(Path(d), []).append(tp)
        return out

    def read_checkpoints(self, directory: Path) -> dict[TopicPartition, int]:
        """A malformed file is reported and treated as empty: every log is
        then dirty from its start, which only costs work."""
        try:
            raw = self._checkpoint_file(directory).read()
        except CheckpointFormatError as e:
            logger.warning("ignoring %s", e)
            return {}
        return {TopicPartition(t, p): off for (t, p), off in raw.items()}

    def all_cleaner_checkpoints(self) -> dict[TopicPartition, int]:
        out: dict[TopicPartition, int] = {}
        for d in self._log_dirs():
            out.update(self.read_checkpoints(d))
        return out

    def update_checkpoint(self, tp: TopicPartition, offset: int | None, directory: Path | None = None) -> None:
        """Set (or with None remove) one partition's cleaned-up-to offset,
        rewriting its directory's file durably (temp, fsync, rename).
        ``directory`` names the log dir of a partition already taken out of
        the source (log deletion drops its entry that way); entries of
        partitions the source no longer has are dropped on every rewrite."""
        with self._lock:
            dirs = self._log_dirs()
            if directory is None:
                directory = next((d for d, tps in dirs.items() if tp in tps), None)
            if directory is None:
                return
            directory = Path(directory)
            current = self.read_checkpoints(directory)
            live = set(dirs.get(directory, []))
            current = {k: v for k, v in current.items() if k in live}
            if offset is None:
                current.pop(tp, None)
            else:
                current[tp] = offset
            self._checkpoint_file(directory).write({(k.topic, k.partition): v for k, v in current.items()})

    def maybe_truncate_checkpoint(self, tp: TopicPartition, offset: int) -> None:
        """After the log was truncated to ``offset``: the checkpoint must not
        point past it (Kafka's maybeTruncateCheckpoint)."""
        with self._lock:
            current = self.all_cleaner_checkpoints().get(tp)
            if current is not None and current > offset:
                self.update_checkpoint(tp, offset)

    # ---- choosing a log ------------------------------------------------------------------------
    def cleanable_offsets(self, log: Log, checkpoint: int | None, now_ms: int, bound: int | None = None) -> tuple[int, int, bool]:
        """(first dirty offset, first uncleanable offset, needs compaction now)."""
        start = log.log_start_offset
        first_dirty = start if checkpoint is None else checkpoint
        if first_dirty < start:
            first_dirty = start
        elif first_dirty > log.log_end_offset:
            logger.warning(
                "cleaner checkpoint %d of %s is past its log end %d; cleaning from the log start",
                first_dirty, log.topic_partition, log.log_end_offset,
            )
            first_dirty = start
        uncleanable = first_uncleanable_offset(log, first_dirty, now_ms, bound)
        forced = False
        max_lag = log.config.max_compaction_lag_ms
        if max_lag < (1 << 63) - 1 and first_dirty < uncleanable:
            holding = [s for s in log.segments() if s.base_offset <= first_dirty]  # a consistent copy
            first = holding[-1].first_batch_header() if holding else None
            forced = first is not None and 0 <= first.max_timestamp < now_ms - max_lag
        return first_dirty, uncleanable, forced

    def grab_filthiest_log(
        self, now_ms: int, bound_of: Callable[[TopicPartition], int | None] | None = None
    ) -> LogToClean | None:
        """Pick the dirtiest eligible log and mark it in progress (seed 002
        §5.4.2 (1)). ``bound_of(tp)`` may give an extra upper bound (LSO)."""
        with self._lock:
            checkpoints = self.all_cleaner_checkpoints()
            candidates: list[LogToClean] = []
            for tp, log in self.source.all_logs().items():
                if not log.config.compact or tp in self._states or tp in self._stats.uncleanable or log.offline:
                    continue
                bound = bound_of(tp) if bound_of is not None else None
                first_dirty, uncleanable, forced = self.cleanable_offsets(log, checkpoints.get(tp), now_ms, bound)
                horizon = self._delete_horizons.get(tp)
                forced = forced or (horizon is not None and horizon <= now_ms)
                candidates.append(
                    LogToClean(
                        tp,
                        log,
                        first_dirty,
                        uncleanable,
                        _bytes_between(log, log.log_start_offset, first_dirty),
                        _bytes_between(log, first_dirty, uncleanable),
                        forced,
                    )
                )
            if not candidates:
                return None
            self._stats.max_dirty_ratio = max(c.cleanable_ratio for c in candidates)
            urgent = [c for c in candidates if c.needs_compaction_now and c.total_bytes > 0]
            pool = urgent or [
                c
                for c in candidates
                if c.dirty_bytes > 0 and c.cleanable_ratio >= c.log.config.min_cleanable_dirty_ratio
            ]
            if not pool:
                return None
            chosen = max(pool, key=lambda c: c.cleanable_ratio)
            self._states[chosen.tp] = _Entry(LogCleaningState.IN_PROGRESS)
            return chosen

    def deletable_logs(self) -> list[tuple[TopicPartition, Log]]:
        """Compacted logs (``compact`` or ``compact,delete``) nobody is
        cleaning or has paused, marked in progress so retention can run on
        them without overlapping a cleaning pass (Kafka's cleaner thread does
        the same); give them back with ``done_deleting``. Retention deletes
        only below the log start of a pure ``compact`` log (DeleteRecords)."""
        with self._lock:
            out = []
            for tp, log in self.source.all_logs().items():
                if log.config.compact and tp not in self._states and not log.offline:
                    self._states[tp] = _Entry(LogCleaningState.IN_PROGRESS)
                    out.append((tp, log))
            return out

    def pause_cleaning_for_non_compacted(self) -> list[tuple[TopicPartition, Log]]:
        """The logs whose policy lacks ``compact``, each paused (Kafka's
        pauseCleaningForNonCompactedPartitions): the log manager's retention
        pass runs on them, and a topic switched to ``compact`` meanwhile is
        not cleaned under it. Undo with ``resume_cleaning`` for each."""
        with self._lock:
            out = [(tp, log) for tp, log in self.source.all_logs().items() if not log.config.compact]
            for tp, _log in out:
                self.abort_and_pause_cleaning(tp)
            return out

    def done_deleting(self, tps: list[TopicPartition]) -> None:
        for tp in tps:
            self._finish(tp)

    # ---- state machine -----------------------------------------------------------------------
    def state_of(self, tp: TopicPartition) -> LogCleaningState | None:
        with self._lock:
            entry = self._states.get(tp)
            return None if entry is None else entry.state

    def done_cleaning(self, tp: TopicPartition, end_offset: int | None, delete_horizon_ms: int | None = None) -> None:
        """A pass ended; ``end_offset`` (None: aborted or failed) becomes the
        cleaner checkpoint. Wakes whoever waits in ``abort_and_pause_cleaning``."""
        with self._lock:
            if end_offset is not None:
                self.update_checkpoint(tp, end_offset)
            if delete_horizon_ms is None:
                self._delete_horizons.pop(tp, None)
            else:
                self._delete_horizons[tp] = delete_horizon_ms
            self._finish(tp)

    def _finish(self, tp: TopicPartition) -> None:
        with self._lock:
            entry = self._states.get(tp)
            if entry is None:
                return
            if entry.state is LogCleaningState.IN_PROGRESS:
                del self._states[tp]
            elif entry.state is LogCleaningState.ABORTED:
                entry.state = LogCleaningState.PAUSED
                entry.pauses = max(entry.pauses, 1)
            self._lock.notify_all()

    def check_cleaning_aborted(self, tp: TopicPartition) -> None:
        """Called by the cleaning pass between units of work."""
        with self._lock:
            entry = self._states.get(tp)
            if entry is not None and entry.state is LogCleaningState.ABORTED:
                raise LogCleaningAbortedError(f"cleaning of {tp} was aborted")

    def abort_and_pause_cleaning(self, tp: TopicPartition, timeout_s: float | None = None) -> bool:
        """Stop any pass on ``tp`` and keep the cleaner off it until
        ``resume_cleaning``. Returns False if a running pass did not stop
        within ``timeout_s`` (it is still marked aborted)."""
        with self._lock:
            entry = self._states.get(tp)
            if entry is None:
                self._states[tp] = _Entry(LogCleaningState.PAUSED, 1)
                return True
            if entry.state is LogCleaningState.PAUSED:
                entry.pauses += 1
                return True
            entry.state = LogCleaningState.ABORTED
            entry.pauses += 1
            ok = self._lock.wait_for(lambda: self._states[tp].state is LogCleaningState.PAUSED, timeout_s)
            return bool(ok)

    def abort_cleaning(self, tp: TopicPartition) -> None:
        """Stop and forget ``tp`` (the log is being deleted)."""
        self.abort_and_pause_cleaning(tp)
        with self._lock:
            self._states.pop(tp, None)
            self._delete_horizons.pop(tp, None)
            self._stats.uncleanable.pop(tp, None)

    def resume_cleaning(self, tp: TopicPartition) -> None:
        with self._lock:
            entry = self._states.get(tp)
            if entry is None or entry.state is not LogCleaningState.PAUSED:
                raise ValueError(f"cleaning of {tp} is not paused (state {entry.state.value if entry else 'idle'})")
            entry.pauses -= 1
            if entry.pauses <= 0:
                del self._states[tp]

    def mark_uncleanable(self, tp: TopicPartition, reason: str) -> None:
        """KIP-346: a pass failed; skip the partition until it is resumed."""
        with self._lock:
            self._stats.uncleanable[tp] = reason

    def uncleanable_partitions(self) -> dict[TopicPartition, str]:
        with self._lock:
            return dict(self._stats.uncleanable)

    def clear_uncleanable(self, tp: TopicPartition) -> None:
        with self._lock:
            self._stats.uncleanable.pop(tp, None)

    @property
    def max_dirty_ratio(self) -> float:
        return self._stats.max_dirty_ratio
