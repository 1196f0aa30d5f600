"""The comparison core of ``kavka replica-verification``: given what each
replica of one partition returned from the same fetch offset, walk their
record batches in lockstep and say how far they agree.

A replica's batches are taken only below *its own* high watermark (a
follower's HW is min(leader HW, its LEO), seed 002 §6.4), so everything
compared is committed and must be byte-identical on every replica: the
leader's batches are copied unchanged by followers (DESIGN "batches are
opaque"). Batches are compared by (base offset, last offset) and by the
CRC32C stored in their header; each batch's CRC is also recomputed, so a
damaged copy is reported even where the stored CRCs agree.

Outcomes:
- batches with different offset ranges: the logs diverged at that offset;
  nothing after it can be compared (``fatal``; Kafka's tool exits there);
- a batch that cannot be parsed: the same, nothing after it can be read;
- same offsets, different stored CRC, or a stored CRC that does not match
  the bytes: a mismatch; the walk goes on past it.

Pure functions over bytes; any thread.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from kavka.protocol.records.batch import (
    CRC_START,
    HEADER_SIZE,
    LOG_OVERHEAD,
    InvalidRecordBatch,
    crc32c,
    peek_size,
    validate_batch,
)


@dataclass(frozen=True, slots=True)
class BatchInfo:
    """One batch of one replica: offsets, stored CRC, and why it is damaged
    (None when its bytes match its CRC). An unparseable batch has offsets
    -1 and ``unreadable`` set."""

    base_offset: int
    last_offset: int
    crc: int
    damage: str | None = None
    unreadable: bool = False


@dataclass(frozen=True, slots=True)
class ReplicaFetch:
    """What one replica returned: its high watermark and its batches below it."""

    high_watermark: int
    batches: tuple[BatchInfo, ...]


@dataclass(frozen=True, slots=True)
class Mismatch:
    """A disagreement among replicas at ``offset`` (one line of output)."""

    partition: str
    offset: int
    detail: str
    fatal: bool = False

    def describe(self) -> str:
        return f"partition {self.partition} {self.detail}"


@dataclass(frozen=True, slots=True)
class Comparison:
    """The result of one walk: the first offset not yet verified, how many
    batches were compared, and the mismatches found."""

    next_offset: int
    batches: int
    mismatches: tuple[Mismatch, ...] = field(default=())

    @property
    def fatal(self) -> bool:
        return any(m.fatal for m in self.mismatches)


def batches_below(records: bytes | memoryview, high_watermark: int) -> tuple[BatchInfo, ...]:
    """The whole batches of ``records`` that end below ``high_watermark``.
    A trailing partial batch (the fetch size cut it) is left out; a batch
    that cannot be parsed ends the list as an ``unreadable`` entry."""
    buf = memoryview(records)
    out: list[BatchInfo] = []
    pos, end = 0, len(buf)
    while end - pos >= LOG_OVERHEAD:
        size = peek_size(buf, pos)
        if size is not None and size >= HEADER_SIZE and pos + size > end:
            break  # cut by the fetch size: the next round reads it whole
        try:
            header = validate_batch(buf, pos, check_crc=False)
        except InvalidRecordBatch as e:
            out.append(BatchInfo(-1, -1, -1, damage=str(e), unreadable=True))
            break
        if header.last_offset >= high_watermark:
            break
        actual = crc32c(buf[pos + CRC_START: pos + header.size])
        damage = None if actual == header.crc else (
            f"stored CRC {header.crc:#010x} but its bytes give {actual:#010x}")
        out.append(BatchInfo(header.base_offset, header.last_offset, header.crc, damage))
        pos += header.size
    return tuple(out)


def compare(partition: str, offset: int, replicas: Mapping[int, ReplicaFetch]) -> Comparison:
    """Walk the replicas' batches in lockstep from ``offset`` while every
    replica has one more batch below its HW (see the module docstring).
    The lowest replica id is the reference the others are compared with."""
    ids = sorted(replicas)
    found: list[Mismatch] = []
    compared = 0
    i = 0
    while ids and all(i < len(replicas[r].batches) for r in ids):
        ref_id = ids[0]
        ref = replicas[ref_id].batches[i]
        at = ref.base_offset if ref.base_offset >= 0 else offset
        for r in ids:
            b = replicas[r].batches[i]
            if b.unreadable:
                found.append(Mismatch(partition, at, f"at offset {at}: replica {r}'s batch cannot be read: "
                                                     f"{b.damage}", fatal=True))
                return Comparison(offset, compared, tuple(found))
        for r in ids[1:]:
            b = replicas[r].batches[i]
            if (b.base_offset, b.last_offset) != (ref.base_offset, ref.last_offset):
                found.append(Mismatch(
                    partition, at,
                    f"diverged at offset {at}: replica {ref_id}'s batch holds offsets {ref.base_offset}-"
                    f"{ref.last_offset} but replica {r}'s holds {b.base_offset}-{b.last_offset}", fatal=True))
                return Comparison(offset, compared, tuple(found))
        for r in ids:
            b = replicas[r].batches[i]
            if b.damage is not None:
                found.append(Mismatch(partition, at, f"has a damaged batch at offset {at} on replica {r}: "
                                                     f"{b.damage}"))
        for r in ids[1:]:
            b = replicas[r].batches[i]
            if b.crc != ref.crc:
                found.append(Mismatch(
                    partition, at,
                    f"has unmatched checksum at offset {at}; replica {ref_id}'s checksum {ref.crc}; "
                    f"replica {r}'s checksum {b.crc}"))
        compared += 1
        offset = ref.last_offset + 1
        i += 1
    return Comparison(offset, compared, tuple(found))


def lag(offset: int, replicas: Mapping[int, ReplicaFetch]) -> int:
    """How far verification trails the highest high watermark."""
    return max((r.high_watermark for r in replicas.values()), default=offset) - offset
