"""Kafka's LogDirFailureChannel (KIP-112): where every piece of storage
code reports that an I/O error hit a log directory, and where the replica
manager learns, once per directory, that it must stop serving it.

A log, a segment write, a flush or a checkpoint that raises an ``OSError``
(ENOSPC, EIO, ...) calls ``maybe_add_offline_log_dir`` with the directory
of ``log.dirs`` it lives in. The first report of a directory logs the
error and queues the directory; later reports of the same directory only
log at debug level (one failing disk gives many errors). The consumer, the
replica manager's log-dir failure handler, takes directories off the queue
with ``take_next_offline_log_dir`` (blocking, for a thread) or ``poll``
(non-blocking, for the event loop, woken by the ``on_offline`` callback it
registers with ``set_listener``).

Thread-safe: I/O errors happen on the event loop (appends), on the
scheduler's threads (flushes, checkpoints) and on the cleaner's threads.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from pathlib import Path

logger = logging.getLogger(__name__)


class LogDirFailureChannel:
    """See the module docstring. ``log_dir_num`` (the number of entries of
    ``log.dirs``) bounds the queue: each directory is queued at most once."""

    def __init__(self, log_dir_num: int) -> None:
        if log_dir_num < 1:
            raise ValueError(f"log_dir_num must be >= 1, got {log_dir_num}")
        self._lock = threading.Lock()
        self._offline: dict[str, BaseException | None] = {}
        self._queue: queue.Queue[str] = queue.Queue(maxsize=log_dir_num)
        self._listener: Callable[[], None] | None = None

    @staticmethod
    def _key(log_dir: str | Path) -> str:
        return str(Path(log_dir).absolute())

    def has_offline_log_dir(self, log_dir: str | Path) -> bool:
        with self._lock:
            return self._key(log_dir) in self._offline

    def offline_log_dirs(self) -> list[str]:
        with self._lock:
            return sorted(self._offline)

    def error_of(self, log_dir: str | Path) -> BaseException | None:
        """The I/O error that took ``log_dir`` offline (None if it is online)."""
        with self._lock:
            return self._offline.get(self._key(log_dir))

    def set_listener(self, on_offline: Callable[[], None]) -> None:
        """``on_offline`` is called (from the reporting thread) after each
        newly offline directory is queued; it must only wake the consumer."""
        with self._lock:
            self._listener = on_offline
            pending = not self._queue.empty()
        if pending:
            on_offline()

    def maybe_add_offline_log_dir(self, log_dir: str | Path, message: str, error: BaseException | None) -> bool:
        """Report an I/O error in ``log_dir``; returns whether this report
        took the directory offline (the first one does)."""
        key = self._key(log_dir)
        with self._lock:
            if key in self._offline:
                logger.debug("%s (log directory %s is already offline): %s", message, key, error)
                return False
            self._offline[key] = error
            self._queue.put_nowait(key)
            listener = self._listener
        logger.error("%s; log directory %s is now offline: %s", message, key, error)
        if listener is not None:
            listener()
        return True

    def take_next_offline_log_dir(self, timeout: float | None = None) -> str | None:
        """The next newly offline directory, waiting for one (None after
        ``timeout`` seconds)."""
        try:
            return self._queue.get(timeout=timeout)
        except queue.Empty:
            return None

    def poll(self) -> str | None:
        """The next newly offline directory if there is one, without waiting."""
        try:
            return self._queue.get_nowait()
        except queue.Empty:
            return None
