"""Typed errors raised by the storage layer.

Every error is a ``kavka.common.errors.KafkaError`` whose ``code`` is the
Kafka error code a request handler must answer with (MESSAGE_TOO_LARGE,
CORRUPT_MESSAGE, OFFSET_OUT_OF_RANGE, KAFKA_STORAGE_ERROR ...), so handlers
turn any of them into a per-partition code (docs/ARCHITECTURE.md convention 6).

Pure exceptions; any thread.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from kavka.common.errors import ErrorCode, KafkaError


class StorageError(KafkaError):
    """Base of every storage error; ``code`` is the Kafka error code."""

    code = ErrorCode.UNKNOWN_SERVER_ERROR


class KafkaStorageError(StorageError):
    """An I/O error (disk full, read-only file system, EIO ...) while touching
    ``path``. The log was left consistent: nothing half-written is served.
    Kafka answers KAFKA_STORAGE_ERROR and takes the log directory offline."""

    code = ErrorCode.KAFKA_STORAGE_ERROR

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

    code = ErrorCode.MESSAGE_TOO_LARGE


class RecordListTooLargeError(StorageError):
    """The records of one append are larger than ``segment.bytes``: they
    could never fit a segment."""

    code = ErrorCode.RECORD_LIST_TOO_LARGE


class CorruptMessageError(StorageError):
    """A batch failed its size, magic or CRC32C check."""

    code = ErrorCode.CORRUPT_MESSAGE


@dataclass(frozen=True, slots=True)
class RecordError:
    """One refused record (KIP-467): ``batch_index`` is the record's index in
    its batch; goes back in Produce v8+'s ``record_errors``."""

    batch_index: int
    message: str


class InvalidRecordError(StorageError):
    """A batch the broker must refuse although its CRC holds: no records, an
    offset delta disagreeing with the record count, records that do not
    follow the v2 layout, a keyless record on a compacted topic (Kafka's
    LogValidator). ``record_errors`` names the records at fault, when known."""

    code = ErrorCode.INVALID_RECORD

    def __init__(self, message: str | None = None, record_errors: tuple[RecordError, ...] = ()) -> None:
        self.record_errors = record_errors
        super().__init__(message)


class InvalidTimestampError(StorageError):
    """A CreateTime record outside ``message.timestamp.before.max.ms`` /
    ``after.max.ms`` of the broker's clock (KIP-937), or a producer that set
    LogAppendTime itself. ``record_errors`` names the records at fault."""

    code = ErrorCode.INVALID_TIMESTAMP

    def __init__(self, message: str | None = None, record_errors: tuple[RecordError, ...] = ()) -> None:
        self.record_errors = record_errors
        super().__init__(message)


class OffsetOutOfRangeError(StorageError):
    """A read or a DeleteRecords offset outside [log start offset, log end
    offset]."""

    code = ErrorCode.OFFSET_OUT_OF_RANGE


class UnexpectedAppendOffsetError(StorageError):
    """A follower append whose offsets go backwards (below the log end offset
    or not increasing inside the appended bytes)."""

    code = ErrorCode.UNKNOWN_SERVER_ERROR

    def __init__(self, message: str, first_offset: int, last_offset: int) -> None:
        self.first_offset = first_offset
        self.last_offset = last_offset
        super().__init__(message)


class LogOfflineError(KafkaStorageError):
    """The log (or its directory) failed an I/O operation earlier and was
    taken offline; it refuses further work until the broker restarts."""
