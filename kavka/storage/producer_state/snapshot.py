"""Producer-state snapshot files: ``<20-digit offset>.snapshot`` beside the
segments of a partition (Kafka's ProducerStateManager format, version 1).

The name is the log offset the snapshot describes: the state of every
producer after every batch below that offset (the map end offset). Layout,
all big-endian::

    version                   int16  (1)
    crc                       uint32 CRC32C of every byte after this field
    entry count               int32
    entries, each 46 bytes:
        producer_id               int64
        producer_epoch            int16
        last_sequence             int32
        last_offset               int64
        offset_delta              int32  (last offset - first offset of the last batch)
        timestamp                 int64  (max timestamp of the last batch)
        coordinator_epoch         int32  (-1: no transaction marker seen)
        current_txn_first_offset  int64  (-1: no open transaction)

Only each producer's last batch is kept (as Kafka does): after a restart
older duplicates are recognised only for the batches re-read from the log
after the snapshot. A file whose size, version or CRC is wrong raises
``CorruptSnapshotError``; the caller ignores that snapshot and rebuilds the
state from the log.

Pure encode/decode functions plus durable file writes; any thread.
"""

from __future__ import annotations

import os
import re
import struct
from dataclasses import dataclass
from pathlib import Path

from kavka.protocol.records.batch import crc32c
from kavka.storage.checkpoint import fsync_dir
from kavka.storage.errors import KafkaStorageError, StorageError

SNAPSHOT_SUFFIX = ".snapshot"
SNAPSHOT_FILE = re.compile(r"^(\d{20})\.snapshot$")
SNAPSHOT_VERSION = 1
_HEAD = struct.Struct(">hI")  # version, crc
_COUNT = struct.Struct(">i")
_ENTRY = struct.Struct(">qhiqiqiq")
ENTRY_SIZE = _ENTRY.size  # 46
_MAX_FILE = 64 * 1024 * 1024  # far above any real snapshot; bounds a read of a damaged file


class CorruptSnapshotError(StorageError):
    """A snapshot file that cannot be trusted (size, version or CRC)."""


@dataclass(frozen=True, slots=True)
class SnapshotEntry:
    """One producer's row in a snapshot (see the module docstring)."""

    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_offset: int
    offset_delta: int
    timestamp: int
    coordinator_epoch: int = -1
    current_txn_first_offset: int = -1


def snapshot_file_name(offset: int) -> str:
    return f"{offset:020d}{SNAPSHOT_SUFFIX}"


def encode_snapshot(entries: list[SnapshotEntry]) -> bytes:
    body = bytearray(_COUNT.pack(len(entries)))
    for e in entries:
        body += _ENTRY.pack(
            e.producer_id,
            e.producer_epoch,
            e.last_sequence,
            e.last_offset,
            e.offset_delta,
            e.timestamp,
            e.coordinator_epoch,
            e.current_txn_first_offset,
        )
    return _HEAD.pack(SNAPSHOT_VERSION, crc32c(body)) + bytes(body)


def decode_snapshot(data: bytes, name: str = "snapshot") -> list[SnapshotEntry]:
    if len(data) < _HEAD.size + _COUNT.size:
        raise CorruptSnapshotError(f"{name}: {len(data)} bytes is shorter than a snapshot header")
    version, crc = _HEAD.unpack_from(data, 0)
    if version != SNAPSHOT_VERSION:
        raise CorruptSnapshotError(f"{name}: version {version} is not supported; supported: {SNAPSHOT_VERSION}")
    body = memoryview(data)[_HEAD.size :]
    if crc32c(body) != crc:
        raise CorruptSnapshotError(f"{name}: CRC mismatch (stored {crc:#010x}, computed {crc32c(body):#010x})")
    (count,) = _COUNT.unpack_from(body, 0)
    if count < 0 or _COUNT.size + count * ENTRY_SIZE != len(body):
        raise CorruptSnapshotError(f"{name}: {count} entries do not fill {len(body)} bytes of body")
    return [SnapshotEntry(*_ENTRY.unpack_from(body, _COUNT.size + i * ENTRY_SIZE)) for i in range(count)]


def list_snapshots(directory: Path) -> list[int]:
    """Offsets of the snapshot files in ``directory``, ascending."""
    try:
        names = os.listdir(directory)
    except OSError as e:
        raise KafkaStorageError("cannot list snapshots", directory, e) from e
    return sorted(int(m.group(1)) for m in map(SNAPSHOT_FILE.match, names) if m is not None)


def read_snapshot(directory: Path, offset: int) -> list[SnapshotEntry]:
    path = directory / snapshot_file_name(offset)
    try:
        with open(path, "rb") as f:
            data = f.read(_MAX_FILE + 1)
    except OSError as e:
        raise CorruptSnapshotError(f"{path}: unreadable ({e.strerror or e})") from e
    if len(data) > _MAX_FILE:
        raise CorruptSnapshotError(f"{path}: larger than {_MAX_FILE} bytes")
    return decode_snapshot(data, str(path))


def write_snapshot(directory: Path, offset: int, entries: list[SnapshotEntry], *, durable: bool = True) -> Path:
    """Write through a temp file and a rename; when ``durable``, fsync the
    file and the directory too. A non-durable snapshot lost or torn by a
    crash is detected by its CRC (or missing) and the state is rebuilt from
    an older one and the log, so the fsync may be deferred (``fsync_file``
    from a flush thread): roll and shutdown stay cheap on the event loop."""
    path = directory / snapshot_file_name(offset)
    tmp = path.with_name(path.name + ".tmp")
    data = encode_snapshot(entries)
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
        if durable:
            fsync_dir(directory)
    except OSError as e:
        raise KafkaStorageError("cannot write producer snapshot", path, e) from e
    return path


def fsync_file(path: Path) -> None:
    """fsync a snapshot written without it; a file deleted meanwhile is fine."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return
    except OSError as e:
        raise KafkaStorageError("cannot open producer snapshot", path, e) from e
    try:
        os.fsync(fd)
    except OSError as e:
        raise KafkaStorageError("cannot fsync producer snapshot", path, e) from e
    finally:
        os.close(fd)


def delete_snapshot(directory: Path, offset: int) -> None:
    try:
        (directory / snapshot_file_name(offset)).unlink(missing_ok=True)
    except OSError as e:
        raise KafkaStorageError("cannot delete producer snapshot", directory / snapshot_file_name(offset), e) from e
