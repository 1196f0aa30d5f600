"""Typed errors raised by the storage layer.

Every error carries ``code_name``: the name of the Kafka error code a
request handler must answer with (``MESSAGE_TOO_LARGE``, ``CORRUPT_MESSAGE``,
``OFFSET_OUT_OF_RANGE``, ``KAFKA_STORAGE_ERROR`` ...). The names are the
members of ``kavka.common.errors.ErrorCode``; handlers map them with
``ErrorCode[err.code_name]`` (DESIGN.md convention 6), so the storage layer
does not depend on the response codec.

Pure exceptions; any thread.
"""

from __future__ import annotations

import os


class StorageError(Exception):
    """Base of every storage error; ``code_name`` names the Kafka error code."""

    code_name: str = "UNKNOWN_SERVER_ERROR"


class KafkaStorageError(StorageError):
    """An I/O error (disk full, read-only file system, EIO ...) while touching
    ``path``. The log was left consistent: nothing half-written is served.
    Kafka answers KAFKA_STORAGE_ERROR and takes the log directory offline."""

    code_name = "KAFKA_STORAGE_ERROR"

    def __init__(self, message: str, path: str | os.PathLike[str] | None = None, cause: OSError | None = None) -> None:
        self.path = None if path is None else os.fspath(path)
        self.errno = None if cause is None else cause.errno
        detail = f" ({cause.strerror or cause})" if cause is not None else ""
        where = f" on {self.path}" if self.path is not None else ""
        super().__init__(f"{message}{where}{detail}")


class LogDirLockedError(KafkaStorageError):
    """Another process holds the ``.lock`` of a log directory."""


class CheckpointFormatError(KafkaStorageError):
    """A checkpoint file (offsets or leader epochs) is malformed; the message
    names the file and the line."""


class MessageTooLargeError(StorageError):
    """A batch is larger than ``max.message.bytes`` (KIP-74 sizes are whole
    batches)."""

    code_name = "MESSAGE_TOO_LARGE"


class RecordListTooLargeError(StorageError):
    """The records of one append are larger than ``segment.bytes``: they
    could never fit a segment."""

    code_name = "RECORD_LIST_TOO_LARGE"


class CorruptMessageError(StorageError):
    """A batch failed its size, magic or CRC32C check."""

    code_name = "CORRUPT_MESSAGE"


class InvalidRecordError(StorageError):
    """A well-formed batch the broker must still refuse (no records, offset
    delta disagreeing with the record count ...)."""

    code_name = "INVALID_RECORD"


class InvalidTimestampError(StorageError):
    """A CreateTime batch whose timestamps are further from the broker's clock
    than ``message.timestamp.difference.max.ms``."""

    code_name = "INVALID_TIMESTAMP"


class OffsetOutOfRangeError(StorageError):
    """A read or a DeleteRecords offset outside [log start offset, log end
    offset]."""

    code_name = "OFFSET_OUT_OF_RANGE"


class UnexpectedAppendOffsetError(StorageError):
    """A follower append whose offsets go backwards (below the log end offset
    or not increasing inside the appended bytes)."""

    code_name = "UNKNOWN_SERVER_ERROR"

    def __init__(self, message: str, first_offset: int, last_offset: int) -> None:
        self.first_offset = first_offset
        self.last_offset = last_offset
        super().__init__(message)


class LogOfflineError(KafkaStorageError):
    """The log (or its directory) failed an I/O operation earlier and was
    taken offline; it refuses further work until the broker restarts."""
