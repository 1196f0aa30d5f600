"""One entry of ``log.dirs``: its ``.lock``, clean-shutdown marker and
checkpoint files (seed 002 §5.2).

* ``.lock``: held with an exclusive, non-blocking ``flock`` for the life of
  the log manager; a second broker on the same directory fails at once with
  ``LogDirLockedError`` naming it. The file itself is left in place on
  shutdown (unlinking a lock file lets two processes lock two different
  inodes); the lock dies with the process.
* ``.kafka_cleanshutdown``: written (durably) after a clean shutdown,
  consumed (deleted) once the logs have loaded; its absence at startup means
  "recover from the recovery points" (RecoveringFromUncleanShutdown).
* ``recovery-point-offset-checkpoint``, ``replication-offset-checkpoint``,
  ``log-start-offset-checkpoint`` (``cleaner-offset-checkpoint`` belongs to
  the cleaner): ``OffsetCheckpointFile``s.

Used by ``LogManager`` only.
"""

from __future__ import annotations

import fcntl
import logging
import os
from pathlib import Path

from kavka.common.topic_partition import TopicPartition
from kavka.storage.checkpoint import (
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    OffsetCheckpointFile,
    fsync_dir,
)
from kavka.storage.errors import CheckpointFormatError, KafkaStorageError, LogDirLockedError

LOCK_FILE = ".lock"
CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"

logger = logging.getLogger(__name__)


class LogDir:
    """See the module docstring."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path).absolute()
        self._lock_fd = -1
        self.recovery_points = OffsetCheckpointFile(self.path / RECOVERY_POINT_CHECKPOINT)
        self.replication_offsets = OffsetCheckpointFile(self.path / REPLICATION_OFFSET_CHECKPOINT)
        self.log_start_offsets = OffsetCheckpointFile(self.path / LOG_START_OFFSET_CHECKPOINT)

    def lock(self) -> None:
        try:
            self.path.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as e:
            raise KafkaStorageError("cannot create the log directory or its .lock file", self.path, e) from e
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise LogDirLockedError(
                "log directory is locked by another process (is another broker using the same log.dirs?)",
                self.path,
            ) from None
        self._lock_fd = fd

    def unlock(self) -> None:
        if self._lock_fd >= 0:
            fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
            os.close(self._lock_fd)
            self._lock_fd = -1

    @property
    def locked(self) -> bool:
        return self._lock_fd >= 0

    # ---- clean shutdown marker ------------------------------------------------------------
    def had_clean_shutdown(self) -> bool:
        return (self.path / CLEAN_SHUTDOWN_FILE).exists()

    def write_clean_shutdown(self) -> None:
        try:
            fd = os.open(self.path / CLEAN_SHUTDOWN_FILE, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
            fsync_dir(self.path)
        except OSError as e:
            raise KafkaStorageError("cannot write the clean shutdown marker", self.path, e) from e

    def consume_clean_shutdown(self) -> None:
        (self.path / CLEAN_SHUTDOWN_FILE).unlink(missing_ok=True)

    # ---- checkpoints ---------------------------------------------------------------------
    @staticmethod
    def read_offsets(checkpoint: OffsetCheckpointFile) -> dict[TopicPartition, int]:
        """A checkpoint's offsets; a malformed file is reported (file and
        line) and treated as empty, which is safe: recovery points fall back
        to 0 (full recovery), log start offsets to the first segment."""
        try:
            raw = checkpoint.read()
        except CheckpointFormatError as e:
            logger.warning("ignoring %s: %s", checkpoint.path, e)
            return {}
        return {TopicPartition(t, p): off for (t, p), off in raw.items()}

    @staticmethod
    def write_offsets(checkpoint: OffsetCheckpointFile, offsets: dict[TopicPartition, int]) -> None:
        checkpoint.write({(tp.topic, tp.partition): off for tp, off in offsets.items()})
