"""What a log does with transaction markers (KIP-98): index the aborted
transactions their markers close, and collect the aborted transactions a
read_committed fetch range overlaps.

An abort is indexed in the ``.txnindex`` of the segment holding its ABORT
marker, so a fetch from offset F finds every abort whose marker is at or
after F by reading the segment holding F and the ones after it (a marker
may lie past the range while its data lies inside); it stops early at an
entry whose LSO reached the fetch's upper bound (no transaction still open
at that point can have data inside the range).

Only markers are decoded (one small record each); data batches stay opaque.
Plain functions over segments; the owning ``Log`` calls them under its lock.
"""

from __future__ import annotations

from typing import Callable, Iterable

from kavka.protocol.records.control import ControlRecordType, parse_control_record
from kavka.protocol.records.reader import iter_records
from kavka.storage.errors import StorageError
from kavka.storage.producer_state.entry import CompletedTxn
from kavka.storage.segment import LogSegment
from kavka.storage.index.transaction_index import AbortedTxn


class MissingMarkerError(StorageError):
    """The producer state reported a marker at an offset the log lacks."""


def marker_kind(segment: LogSegment, offset: int) -> ControlRecordType:
    """COMMIT or ABORT: the marker batch at ``offset`` in ``segment``."""
    found = segment.translate_offset(offset)
    if found is None or found[1].base_offset != offset or not found[1].is_control:
        raise MissingMarkerError(f"no control batch at offset {offset} in segment {segment.base_offset}")
    position, header = found
    record = next(iter(iter_records(segment.read_batch(position, header.size))))
    return parse_control_record(record).kind


def index_aborted(segment_for: Callable[[int], LogSegment | None], completed: Iterable[CompletedTxn]) -> int:
    """Append the aborted ones of ``completed`` to their marker's segment's
    index, skipping any already there (a reload re-reports markers after the
    producer snapshot). Returns how many entries were added."""
    added = 0
    for txn in completed:
        segment = segment_for(txn.marker_offset)
        if segment is None:
            raise MissingMarkerError(f"no segment holds the marker at offset {txn.marker_offset}")
        last = segment.txn_index.last_offset
        if last is not None and txn.marker_offset <= last:
            continue
        if marker_kind(segment, txn.marker_offset) is ControlRecordType.ABORT:
            segment.txn_index.append(
                AbortedTxn(txn.producer_id, txn.first_offset, txn.marker_offset, txn.last_stable_offset)
            )
            added += 1
    return added


def collect_aborted(segments: list[LogSegment], fetch_offset: int, upper_bound_offset: int) -> list[AbortedTxn]:
    """Aborted transactions with data in [fetch_offset, upper_bound_offset),
    in marker order; ``segments`` in base-offset order."""
    out: list[AbortedTxn] = []
    for i, segment in enumerate(segments):
        next_base = segments[i + 1].base_offset if i + 1 < len(segments) else None
        if next_base is not None and next_base <= fetch_offset:
            continue  # every marker here is below the fetch offset
        search = segment.txn_index.collect_aborted(fetch_offset, upper_bound_offset)
        out += search.aborted
        if search.complete:
            break
    return out
