"""Per-partition leader-epoch cache and its ``leader-epoch-checkpoint`` file.

An ordered list of ``EpochEntry(epoch, start_offset)``: the first offset each
leader epoch wrote. Both columns strictly increase. The file (in the
partition directory) has seed 002's checkpoint format with ``epoch
start_offset`` lines and is rewritten on every change: durably at once on
truncation; on a new epoch (``assign``), once ``sync_assignments_with`` is
set, neither written nor fsynced by ``assign`` itself: it hands
``take_pending`` to the log, whose periodic flusher (every second, on a
background thread), flush and close write the file and whose flush makes
it durable before the recovery point passes the epoch's records. Kafka
(KAFKA-15046) leaves only the fsync to later; the write goes too here
because a broker takes over thousands of partitions in one LeaderAndIsr,
on its one event loop: a new leader's LeaderAndIsr, and a follower's first
batch of each epoch, paid a file creation and rename per partition (2-3
ms each on a loaded machine: 80% of a survivor's loop for 5,000 partitions
at a controller failover). A crash (even a kill -9) before the file is
written loses at most entries that recovery re-learns from the batches
above the recovery point, and the start of an epoch that wrote nothing.

This is the KIP-101 fix for the seed's truncate-to-HW design (which can
lose a committed record or leave replicas diverged): a follower asks the
leader for the end offset of its latest epoch (``end_offset_for``, KIP-279
semantics) and truncates there, not to its high watermark. The cache is truncated together
with the log (``truncate_from_end`` on log truncation, ``truncate_from_start``
when the log start offset moves).

Thread-safe (own lock): the log appends under its lock while replication
reads from the event loop. A deferred write copies the entries under that
lock (``take_pending``) and writes the file holding only ``_file_lock``,
which serializes every write of the file: the event loop's reads
(``end_offset_for`` on every follower fetch, the log's offsets under the
log's lock) never wait for the disk. A failover hands the flusher a write
per partition whose epoch changed (thousands, 2-3 ms each on a loaded
disk), and a read of a partition that waited for one stalled the loop. A
copy older than what the file already holds is not written (``_version``:
a truncation's durable write may land between the copy and its write).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from kavka.storage.checkpoint import LEADER_EPOCH_CHECKPOINT, LeaderEpochCheckpointFile

UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1


@dataclass(frozen=True, slots=True)
class EpochEntry:
    epoch: int
    start_offset: int


# A copy of a cache's entries waiting to be written (``take_pending``):
# calling it writes the file unless a newer version is already there and
# returns the file, for the caller to fsync. Raises ``KafkaStorageError``.
PendingWrite = Callable[[], list[Path]]


class LeaderEpochFileCache:
    """See the module docstring."""

    def __init__(self, directory: Path, *, persist: bool = True) -> None:
        self._checkpoint = LeaderEpochCheckpointFile(Path(directory) / LEADER_EPOCH_CHECKPOINT)
        self._persist = persist
        self._defer_write: Callable[[Callable[[], PendingWrite | None]], None] | None = None
        self._unwritten = False  # entries assigned since the file was last written
        self._lock = threading.RLock()
        # Serializes the file's writes; taken after ``_lock`` when both are held.
        self._file_lock = threading.Lock()
        self._version = 0  # bumped by every change of the entries
        self._written_version = 0  # the version the file holds (under _file_lock)
        self._entries: list[EpochEntry] = []
        if persist:
            for epoch, start in self._checkpoint.read():
                self._append_checked(EpochEntry(epoch, start))

    def enable_persistence(self) -> None:
        """Start writing the checkpoint (after building a cache in memory
        instead of reading a malformed file); writes the current entries."""
        with self._lock:
            self._persist = True
            self._flush()

    @property
    def path(self) -> Path:
        return self._checkpoint.path

    def _append_checked(self, entry: EpochEntry) -> None:
        if self._entries:
            last = self._entries[-1]
            if entry.epoch <= last.epoch or entry.start_offset < last.start_offset:
                # A damaged file: keep what is consistent; the log's own
                # batches re-teach later epochs on recovery.
                return
        self._entries.append(entry)

    def sync_assignments_with(self, defer_write: Callable[[Callable[[], PendingWrite | None]], None]) -> None:
        """From now on ``assign`` only marks the file stale and hands
        ``take_pending`` to ``defer_write`` (the log's; see the module
        docstring)."""
        self._defer_write = defer_write

    def _flush(self, deferred: bool = False) -> None:
        """Called under ``_lock`` after every change of the entries."""
        self._version += 1
        if not self._persist:
            return
        if deferred and self._defer_write is not None:
            if not self._unwritten:
                self._unwritten = True
                self._defer_write(self.take_pending)
            return
        with self._file_lock:
            self._checkpoint.write((e.epoch, e.start_offset) for e in self._entries)
            self._written_version = self._version
        self._unwritten = False

    def take_pending(self) -> PendingWrite | None:
        """The entries as they are now, for a write of the file (without
        fsync) outside every lock the event loop takes; None if ``assign``
        changed nothing since the file was last written."""
        with self._lock:
            if not self._unwritten:
                return None
            self._unwritten = False
            return partial(self._write_version, self._version, [(e.epoch, e.start_offset) for e in self._entries])

    def _write_version(self, version: int, entries: list[tuple[int, int]]) -> list[Path]:
        with self._file_lock:
            if version > self._written_version:
                self._checkpoint.write(entries, sync=False)
                self._written_version = version
        return [self._checkpoint.path]

    def write_pending(self) -> list[Path]:
        """Write the file now, without fsync, if ``assign`` changed the
        entries since it was last written; the files written (for the
        caller to fsync)."""
        pending = self.take_pending()
        return pending() if pending is not None else []

    # ---- queries ------------------------------------------------------------------
    def entries(self) -> list[EpochEntry]:
        with self._lock:
            return list(self._entries)

    def latest_epoch(self) -> int | None:
        with self._lock:
            return self._entries[-1].epoch if self._entries else None

    def latest_entry(self) -> EpochEntry | None:
        with self._lock:
            return self._entries[-1] if self._entries else None

    def earliest_entry(self) -> EpochEntry | None:
        with self._lock:
            return self._entries[0] if self._entries else None

    def epoch_for_offset(self, offset: int) -> int | None:
        """The epoch whose range contains ``offset`` (None before the first)."""
        with self._lock:
            found = None
            for e in self._entries:
                if e.start_offset <= offset:
                    found = e.epoch
                else:
                    break
            return found

    def end_offset_for(self, requested_epoch: int, log_end_offset: int) -> tuple[int, int]:
        """KIP-101/279: ``(largest epoch <= requested, end offset of it)``.

        The end offset of an epoch is the start offset of the next larger
        epoch, or the log end offset for the latest epoch. A requested epoch
        below every known one answers (requested, start of the first known
        epoch); above the latest, or with an empty cache, (-1, -1)."""
        with self._lock:
            if requested_epoch == UNDEFINED_EPOCH or not self._entries:
                return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
            latest = self._entries[-1]
            if requested_epoch == latest.epoch:
                return requested_epoch, log_end_offset
            floor: EpochEntry | None = None
            for e in self._entries:
                if e.epoch <= requested_epoch:
                    floor = e
                    continue
                # e is the first entry with a larger epoch
                return (requested_epoch if floor is None else floor.epoch), e.start_offset
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET

    # ---- mutations ------------------------------------------------------------------
    def assign(self, epoch: int, start_offset: int) -> bool:
        """Record that ``epoch`` starts at ``start_offset``. Entries that would
        break monotonicity (epoch >= it, or start >= it) are dropped first,
        as a new leader's history overrides a stale tail. Same epoch at a
        later offset changes nothing. Returns whether the cache changed."""
        if epoch < 0 or start_offset < 0:
            return False
        # Every append asks, nearly always in the current epoch: that answer
        # needs no lock (the list is replaced or appended to, never shrunk
        # in place, and its last item is read in one step).
        entries = self._entries
        if entries:
            last = entries[-1]
            if last.epoch == epoch and start_offset >= last.start_offset:
                return False
        with self._lock:
            if self._entries:
                last = self._entries[-1]
                if last.epoch == epoch and start_offset >= last.start_offset:
                    return False
            self._entries = [e for e in self._entries if e.epoch < epoch and e.start_offset < start_offset]
            self._entries.append(EpochEntry(epoch, start_offset))
            self._flush(deferred=True)
            return True

    def truncate_from_end(self, end_offset: int) -> bool:
        """Drop entries starting at or after ``end_offset`` (log truncation)."""
        with self._lock:
            if end_offset < 0 or not self._entries or self._entries[-1].start_offset < end_offset:
                return False
            self._entries = [e for e in self._entries if e.start_offset < end_offset]
            self._flush()
            return True

    def truncate_from_start(self, start_offset: int) -> bool:
        """The log now starts at ``start_offset``: drop epochs wholly before
        it and move the epoch containing it to start there."""
        with self._lock:
            if start_offset < 0 or not self._entries or self._entries[0].start_offset >= start_offset:
                return False
            keep_from = 0
            for i, e in enumerate(self._entries):
                if e.start_offset <= start_offset:
                    keep_from = i
            kept = self._entries[keep_from:]
            kept[0] = EpochEntry(kept[0].epoch, start_offset)
            self._entries = kept
            self._flush()
            return True

    def clear_and_flush(self) -> None:
        with self._lock:
            self._entries = []
            self._flush()

    def flush(self) -> None:
        with self._lock:
            self._flush()
