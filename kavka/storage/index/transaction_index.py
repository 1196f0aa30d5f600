"""The aborted-transaction index of one segment: ``<base>.txnindex``
(KIP-98), read by read_committed fetches to tell consumers which producers'
records to drop.

Disk format, as Kafka's: a sequence of fixed 34-byte big-endian entries, one
per transaction aborted by an ABORT marker in this segment, in the order the
markers were appended::

    version             int16  (0)
    producer_id         int64
    first_offset        int64  first offset of the transaction's data
    last_offset         int64  offset of the ABORT marker
    last_stable_offset  int64  the partition's LSO after the abort

Invariants: ``last_offset`` never decreases from one entry to the next (an
append out of order is refused with ``TransactionIndexError``); the file
exists only once an abort was appended (most segments have none). A torn
tail (size not a multiple of 34) or an entry of an unknown version is cut
on open; the log's producer-state scan re-adds the aborts after its
snapshot that the file lacks.

Not thread-safe: the owning ``Log`` calls it under its lock; fetches read
``collect_aborted`` under the same lock.
"""

from __future__ import annotations

import logging
import os
import struct
from dataclasses import dataclass
from pathlib import Path

from kavka.storage.errors import StorageError

logger = logging.getLogger(__name__)

TXN_INDEX_SUFFIX = ".txnindex"
ABORTED_TXN_VERSION = 0
_ENTRY = struct.Struct(">hqqqq")
ENTRY_SIZE = _ENTRY.size  # 34


class TransactionIndexError(StorageError):
    """An entry that would break the index's order, or an unreadable entry."""


@dataclass(frozen=True, slots=True)
class AbortedTxn:
    """One aborted transaction: ``producer_id``'s records in
    [first_offset, last_offset] are to be skipped by read_committed readers."""

    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int
    version: int = ABORTED_TXN_VERSION

    def encode(self) -> bytes:
        return _ENTRY.pack(self.version, self.producer_id, self.first_offset, self.last_offset,
                           self.last_stable_offset)

    @classmethod
    def decode(cls, data: bytes | memoryview, pos: int = 0) -> AbortedTxn:
        version, pid, first, last, lso = _ENTRY.unpack_from(data, pos)
        if version != ABORTED_TXN_VERSION:
            raise TransactionIndexError(f"aborted-transaction entry at byte {pos} has version {version}; "
                                        f"only {ABORTED_TXN_VERSION} is known")
        return cls(pid, first, last, lso, version)


@dataclass(frozen=True, slots=True)
class AbortedTxnSearch:
    """The aborted transactions of one segment overlapping a fetch range;
    ``complete``: an entry's LSO reached the range's upper bound, so later
    segments cannot hold another overlapping one."""

    aborted: list[AbortedTxn]
    complete: bool


class TransactionIndex:
    """The ``.txnindex`` of the segment starting at ``base_offset``; see the
    module docstring. Entries are kept in memory too (a segment holds few
    aborts; the file is bounded by the segment's markers)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.entries: list[AbortedTxn] = []
        if path.exists():
            self.entries = self._read()

    @classmethod
    def for_segment(cls, directory: Path, base_offset: int, suffix: str = "") -> TransactionIndex:
        return cls(directory / f"{base_offset:020d}{TXN_INDEX_SUFFIX}{suffix}")

    def _read(self) -> list[AbortedTxn]:
        data = self.path.read_bytes()
        whole = len(data) - len(data) % ENTRY_SIZE
        if whole != len(data):
            logger.warning("cutting a torn tail of %d bytes from %s", len(data) - whole, self.path)
            os.truncate(self.path, whole)
        entries: list[AbortedTxn] = []
        for pos in range(0, whole, ENTRY_SIZE):
            try:
                entries.append(AbortedTxn.decode(data, pos))
            except TransactionIndexError as e:
                # Keep the good prefix: a read_committed reader still gets every abort before it.
                logger.warning("cutting %s at byte %d: %s", self.path, pos, e)
                os.truncate(self.path, pos)
                break
        return entries

    @property
    def last_offset(self) -> int | None:
        return self.entries[-1].last_offset if self.entries else None

    def append(self, txn: AbortedTxn) -> None:
        last = self.last_offset
        if last is not None and txn.last_offset < last:
            raise TransactionIndexError(
                f"aborted transaction ending at {txn.last_offset} appended after one ending at {last} in "
                f"{self.path.name}; markers must be indexed in log order"
            )
        with open(self.path, "ab") as f:
            f.write(txn.encode())
        self.entries.append(txn)

    def collect_aborted(self, fetch_offset: int, upper_bound_offset: int) -> AbortedTxnSearch:
        """Aborted transactions with data in [fetch_offset, upper_bound_offset)."""
        found = [t for t in self.entries if t.last_offset >= fetch_offset and t.first_offset < upper_bound_offset]
        complete = any(t.last_stable_offset >= upper_bound_offset for t in self.entries)
        return AbortedTxnSearch(found, complete)

    def truncate_to(self, offset: int) -> None:
        """Drop entries whose marker is at or past ``offset`` (log truncation)."""
        kept = [t for t in self.entries if t.last_offset < offset]
        if len(kept) == len(self.entries):
            return
        self.entries = kept
        if self.path.exists():
            os.truncate(self.path, len(kept) * ENTRY_SIZE)

    def reset(self) -> None:
        """Empty the index (before a rebuild from the log)."""
        self.entries = []
        self.path.unlink(missing_ok=True)

    def flush(self) -> None:
        if self.path.exists():
            with open(self.path, "rb+") as f:
                os.fsync(f.fileno())

    def rename(self, path: Path) -> None:
        if self.path.exists():
            os.replace(self.path, path)
        self.path = path

    def delete_file(self) -> None:
        self.path.unlink(missing_ok=True)
