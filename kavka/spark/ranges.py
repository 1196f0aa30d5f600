"""Offset ranges: the unit of work of a read, and how a read is cut into
Spark partitions.

An ``OffsetRange`` is ``[start, end)`` of one topic-partition. A read plans
one range per topic-partition; with ``minPartitions`` larger than that
count, ranges are split (each into pieces in proportion to its size, as
Spark's Kafka source does) so that there are at least
``minPartitions`` pieces when the offsets allow it. Pieces of one range are
contiguous, do not overlap and cover it exactly.

``OffsetRangePartition`` is the ``InputPartition`` handed to an executor;
it pickles (plain ints and strings).

Pure; any process.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from pyspark.sql.datasource import InputPartition

from kavka.common.topic_partition import TopicPartition


@dataclass(frozen=True, slots=True)
class OffsetRange:
    topic: str
    partition: int
    start: int
    end: int

    @property
    def size(self) -> int:
        return max(0, self.end - self.start)

    @property
    def topic_partition(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)


class OffsetRangePartition(InputPartition):
    """One Spark input partition: one offset range (``value``)."""

    def __init__(self, offset_range: OffsetRange) -> None:
        super().__init__(offset_range)
        self.offset_range = offset_range


def plan_ranges(starts: Mapping[TopicPartition, int], ends: Mapping[TopicPartition, int]) -> list[OffsetRange]:
    """One range per topic-partition present in both maps, sorted."""
    return [OffsetRange(tp.topic, tp.partition, starts[tp], ends[tp]) for tp in sorted(starts) if tp in ends]


def split_ranges(ranges: Iterable[OffsetRange], min_partitions: int | None) -> list[OffsetRange]:
    """Empty ranges dropped; then, if ``min_partitions`` exceeds the count,
    each range is cut into ``ceil(size * min_partitions / total)`` nearly
    equal pieces (never more pieces than offsets), so there are at least
    ``min_partitions`` pieces whenever there are that many offsets."""
    kept = [r for r in ranges if r.size > 0]
    if not min_partitions or len(kept) >= min_partitions:
        return kept
    total = sum(r.size for r in kept)
    out: list[OffsetRange] = []
    for r in kept:
        pieces = min(r.size, max(1, -(-r.size * min_partitions // total)))
        step, extra = divmod(r.size, pieces)
        start = r.start
        for i in range(pieces):
            end = start + step + (1 if i < extra else 0)
            out.append(OffsetRange(r.topic, r.partition, start, end))
            start = end
    return out
