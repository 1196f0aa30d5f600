"""Checkpoint files in seed 002's text format, written crash-safely.

Format (seed 002 §5.2)::

    0                      <- version, always 0
    4                      <- number of entry lines
    log-format 1 0         <- one entry per line, fields separated by a space
    ...

``OffsetCheckpointFile`` entries are ``topic partition offset`` (used for
``recovery-point-offset-checkpoint``, ``replication-offset-checkpoint``,
``log-start-offset-checkpoint`` and ``cleaner-offset-checkpoint``);
``leader-epoch-checkpoint`` entries are ``epoch start_offset``.

Writes are durable and atomic (docs/ARCHITECTURE.md convention 5): write ``<name>.tmp``,
fsync it, ``os.replace`` over the file, fsync the directory. A crash leaves
either the old or the new content. Reads of malformed content raise
``CheckpointFormatError`` naming the file and the line.

One writer per file (the log manager's periodic task or the log's lock);
reads may happen from any thread.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Generic, TypeVar

from kavka.storage.errors import CheckpointFormatError, KafkaStorageError

CURRENT_VERSION = 0
RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
REPLICATION_OFFSET_CHECKPOINT = "replication-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
CLEANER_OFFSET_CHECKPOINT = "cleaner-offset-checkpoint"
LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
MAX_CHECKPOINT_BYTES = 256 << 20  # bound reads of a damaged or foreign file

T = TypeVar("T")


def fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_durably(path: Path, text: str, sync: bool = True) -> None:
    """Replace ``path`` with ``text`` atomically and (``sync``) durably;
    without ``sync`` the caller fsyncs the file and its directory later."""
    tmp = path.with_name(path.name + ".tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            data = text.encode("utf-8")
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            if sync:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
        if sync:
            fsync_dir(path.parent)
    except OSError as e:
        raise KafkaStorageError("cannot write checkpoint", path, e) from e


class CheckpointFile(Generic[T]):
    """A versioned list of entries, one per line; see the module docstring."""

    def __init__(
        self,
        path: Path,
        fields: int,
        encode: Callable[[T], str],
        decode: Callable[[list[str]], T],
        what: str,
    ) -> None:
        self.path = Path(path)
        self._fields = fields
        self._encode = encode
        self._decode = decode
        self._what = what

    def write(self, entries: Iterable[T], sync: bool = True) -> None:
        items = list(entries)
        lines = [str(CURRENT_VERSION), str(len(items))] + [self._encode(e) for e in items]
        write_durably(self.path, "\n".join(lines) + "\n", sync)

    def read(self) -> list[T]:
        """Entries in file order; [] when the file does not exist."""
        try:
            with open(self.path, "rb") as f:
                raw = f.read(MAX_CHECKPOINT_BYTES + 1)
        except FileNotFoundError:
            return []
        except OSError as e:
            raise KafkaStorageError("cannot read checkpoint", self.path, e) from e
        if len(raw) > MAX_CHECKPOINT_BYTES:
            raise self._error(0, f"file is larger than {MAX_CHECKPOINT_BYTES} bytes")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise self._error(text_line(raw, e.start), "is not UTF-8 text") from None
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        if not lines:
            raise self._error(1, "file is empty; expected the version line '0'")
        if lines[0].strip() != str(CURRENT_VERSION):
            raise self._error(1, f"unsupported version {lines[0].strip()!r}; expected {CURRENT_VERSION}")
        if len(lines) < 2:
            raise self._error(2, "missing the entry count line")
        try:
            count = int(lines[1].strip())
        except ValueError:
            raise self._error(2, f"entry count {lines[1].strip()!r} is not an integer") from None
        if count < 0 or count != len(lines) - 2:
            raise self._error(2, f"entry count says {count} but the file has {len(lines) - 2} entry lines")
        out: list[T] = []
        for n, line in enumerate(lines[2:], start=3):
            parts = line.split()
            if len(parts) != self._fields:
                raise self._error(n, f"expected {self._what}, got {line!r}")
            try:
                out.append(self._decode(parts))
            except ValueError as e:
                raise self._error(n, f"{e} in {line!r} (expected {self._what})") from None
        return out

    def _error(self, line: int, message: str) -> CheckpointFormatError:
        return CheckpointFormatError(f"malformed checkpoint, line {line}: {message}", self.path)


def text_line(raw: bytes, byte_pos: int) -> int:
    return raw.count(b"\n", 0, byte_pos) + 1


def _nonneg(s: str, name: str) -> int:
    value = int(s)
    if value < 0:
        raise ValueError(f"negative {name} {value}")
    return value


def _decode_offset(parts: list[str]) -> tuple[tuple[str, int], int]:
    return (parts[0], _nonneg(parts[1], "partition")), int(parts[2])


class OffsetCheckpointFile:
    """``topic partition offset`` per line, as a mapping from (topic, partition)."""

    def __init__(self, path: Path) -> None:
        self._file: CheckpointFile[tuple[tuple[str, int], int]] = CheckpointFile(
            Path(path), 3, lambda e: f"{e[0][0]} {e[0][1]} {e[1]}", _decode_offset, "'topic partition offset'"
        )

    @property
    def path(self) -> Path:
        return self._file.path

    def write(self, offsets: Mapping[tuple[str, int], int]) -> None:
        self._file.write(sorted(offsets.items()))

    def read(self) -> dict[tuple[str, int], int]:
        out: dict[tuple[str, int], int] = {}
        for tp, offset in self._file.read():
            out[tp] = offset
        return out


class LeaderEpochCheckpointFile:
    """``epoch start_offset`` per line, in increasing order."""

    def __init__(self, path: Path) -> None:
        self._file: CheckpointFile[tuple[int, int]] = CheckpointFile(
            Path(path),
            2,
            lambda e: f"{e[0]} {e[1]}",
            lambda p: (_nonneg(p[0], "epoch"), _nonneg(p[1], "start offset")),
            "'epoch start_offset'",
        )

    @property
    def path(self) -> Path:
        return self._file.path

    def write(self, entries: Iterable[tuple[int, int]], sync: bool = True) -> None:
        self._file.write(entries, sync)

    def read(self) -> list[tuple[int, int]]:
        return self._file.read()
