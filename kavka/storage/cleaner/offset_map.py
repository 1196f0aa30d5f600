"""The log cleaner's offset map: key -> offset of the latest record with
that key in the dirty section being cleaned (Kafka's ``SkimpyOffsetMap``,
seed 002 §5.4.2 (2): "这里的 Key 并不是消息实际的 Key，而是 Key 进行 MD5 操作后的
Hash 值").

Capacity follows Kafka's arithmetic exactly, so a ``server.properties``
tuned for Kafka cleans the same number of keys per pass::

    slots    = dedupe_buffer_bytes // (HASH_SIZE + 8)     # 16-byte hash + 8-byte offset
    capacity = int(slots * load_factor)                   # log.cleaner.io.buffer.load.factor, 0.9

``put`` refuses nothing; the cleaner asks ``can_hold(n)`` before each batch
and ends the pass at the last batch that fit (``latest_offset`` + 1), as
Kafka does when the map fills up.

Key form. Keys of 16 bytes or more are stored as their MD5 digest (what
Kafka stores; no other 16-byte hash in ``hashlib`` is faster). Keys shorter than 16
bytes are stored as themselves: exact (no collision is possible), cheaper
than any hash, and never equal to a digest because their length differs.
Either way an entry is charged as 16 + 8 bytes against the budget.

Memory. The table is a Python dict for speed (a hand-written open
addressing table over ``array`` is several times slower per put). The budget
therefore bounds the number of entries, not the bytes: CPython spends about
125-135 bytes per entry (tracemalloc: the dict slot, the key object, the
int), so the
real footprint is ~5.5x ``log.cleaner.dedupe.buffer.size``; size the setting
accordingly (``memory_estimate`` reports it).

One map per cleaner thread, reused across passes (``clear``); not shared.
"""

from __future__ import annotations

import hashlib

HASH_SIZE = 16  # MD5 digest size; the charge per key
OFFSET_SIZE = 8
ENTRY_SIZE = HASH_SIZE + OFFSET_SIZE
# Measured on CPython 3.11/3.12 (dict slot + 16-byte bytes object + int);
# used only for ``memory_estimate``.
PYTHON_BYTES_PER_ENTRY = 130


class OffsetMapError(ValueError):
    """Invalid map sizing (a budget too small for one entry)."""


def key_hash(key: bytes) -> bytes:
    """The stored form of ``key``: itself when shorter than 16 bytes, else
    its MD5 digest (see the module docstring)."""
    if len(key) < HASH_SIZE:
        return key
    return hashlib.md5(key).digest()


class SkimpyOffsetMap:
    """Bounded map from a key's stored form to the latest offset seen."""

    __slots__ = ("capacity", "slots", "_map", "_latest_offset", "lookups", "hits")

    def __init__(self, dedupe_buffer_bytes: int, load_factor: float = 0.9) -> None:
        if not 0.0 < load_factor <= 1.0:
            raise OffsetMapError(f"log.cleaner.io.buffer.load.factor {load_factor} must be in (0, 1]")
        self.slots = dedupe_buffer_bytes // ENTRY_SIZE
        self.capacity = int(self.slots * load_factor)
        if self.capacity < 1:
            raise OffsetMapError(
                f"log.cleaner.dedupe.buffer.size {dedupe_buffer_bytes} holds no entry of {ENTRY_SIZE} bytes "
                f"at load factor {load_factor}; raise it"
            )
        self._map: dict[bytes, int] = {}
        self._latest_offset = -1
        self.lookups = 0
        self.hits = 0

    # ---- writing (building the map over the dirty section) ------------------------------
    def put(self, key: bytes, offset: int) -> None:
        """Record ``offset`` as the latest for ``key`` (offsets only grow
        during one pass). The caller checked ``can_hold`` first."""
        self._map[key_hash(key)] = offset
        if offset > self._latest_offset:
            self._latest_offset = offset

    def put_hashed(self, hashed: bytes, offset: int) -> None:
        """``put`` for a key already in stored form (``key_hash``)."""
        self._map[hashed] = offset
        if offset > self._latest_offset:
            self._latest_offset = offset

    def update_latest_offset(self, offset: int) -> None:
        """Note that the pass covered ``offset`` even without a key there
        (control batches, transactional batches, keyless records)."""
        if offset > self._latest_offset:
            self._latest_offset = offset

    def can_hold(self, more: int) -> bool:
        """Whether ``more`` new keys would still fit (counting each as new)."""
        return len(self._map) + more <= self.capacity

    # ---- reading (cleaning) ---------------------------------------------------------------
    def get(self, key: bytes) -> int:
        """The latest offset recorded for ``key``, or -1."""
        self.lookups += 1
        found = self._map.get(key_hash(key), -1)
        if found >= 0:
            self.hits += 1
        return found

    @property
    def size(self) -> int:
        return len(self._map)

    @property
    def latest_offset(self) -> int:
        """Largest offset put (or noted); -1 when empty."""
        return self._latest_offset

    @property
    def utilization(self) -> float:
        return len(self._map) / self.slots if self.slots else 0.0

    def memory_estimate(self) -> int:
        """Approximate bytes CPython uses for the current entries."""
        return len(self._map) * PYTHON_BYTES_PER_ENTRY

    def clear(self) -> None:
        self._map.clear()
        self._latest_offset = -1
        self.lookups = 0
        self.hits = 0

    def __len__(self) -> int:
        return len(self._map)

    def __repr__(self) -> str:
        return f"SkimpyOffsetMap(size={len(self._map)}, capacity={self.capacity})"
