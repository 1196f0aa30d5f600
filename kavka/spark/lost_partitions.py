"""Which partitions of a streaming query are gone, and the offsets a
micro-batch may end at: the data-loss decision of ``latestOffset``.

Spark's Kafka source counts two things as data loss (reported under
``failOnDataLoss``, else dropped with a warning): partitions the query was
reading that are no longer there (topic deleted, or no longer covered by
the subscription), and a partition whose latest offset went below the
query's position (a topic deleted and recreated under the same name).

What "no longer there" means is Kavka's Metadata answer, checked against a
real cluster: a partition whose leader is dead is still listed, with
LEADER_NOT_AVAILABLE, leader -1 and its replicas in offline_replicas, and
so is every partition of a topic in the middle of a leader election; a
deleted topic is answered with UNKNOWN_TOPIC_OR_PARTITION and no
partitions (and is absent from an all-topics answer). A broker that has
not yet had its first UpdateMetadata answers with controller -1 and knows
no topics. So a partition is gone only when a *complete* answer (one from
a broker that knows the controller) lists its topic without error and
without the partition, says UNKNOWN_TOPIC_OR_PARTITION for the topic, or
the subscription no longer covers it. Other topic errors, and failed or
timed-out requests (which raise before a listing exists), prove nothing:
such partitions keep their place, so a broker failover never looks like
loss.

A latest offset below the position is loss, not a lagging new leader:
Kavka's ListOffsets answers OFFSET_NOT_AVAILABLE while a new leader's high
watermark is below the start of its epoch (KIP-207), so "latest" never
goes back across a leader change; the stream reader still asks twice
before it believes a rewind.

``DataLossError`` and ``data_loss_message`` are how any part of a read
reports lost offsets (the stream's planner here, an executor's
``range_reader``).

Pure values and functions; any process.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kavka.common.topic_partition import TopicPartition


class DataLossError(RuntimeError):
    """Offsets a query needs are gone from the partition."""


def data_loss_message(tp: TopicPartition, detail: str) -> str:
    return (f"{detail} in {tp}: some data may have been lost because it is no longer in Kavka (removed by "
            "retention or DeleteRecords, or the topic was deleted or truncated) before the query read it. "
            "If the query should skip lost data and go on, set the source option 'failOnDataLoss' to 'false'.")


@dataclass(frozen=True, slots=True)
class PartitionListing:
    """The partitions a subscription covers according to one Metadata answer.

    ``partitions``: covered and listed now (leaderless ones included).
    ``unsure_topics``: topics the answer said nothing certain about (a
    topic-level error other than UNKNOWN_TOPIC_OR_PARTITION).
    ``complete``: the answering broker knew the controller; when False the
    answer proves no absence at all."""

    partitions: frozenset[TopicPartition]
    unsure_topics: frozenset[str] = frozenset()
    complete: bool = True

    def lacks(self, tp: TopicPartition) -> bool:
        """True when this answer shows ``tp`` is gone."""
        return self.complete and tp.topic not in self.unsure_topics and tp not in self.partitions


@dataclass(frozen=True, slots=True)
class Rewound:
    """A partition whose latest offset is below the query's position."""

    topic_partition: TopicPartition
    position: int
    latest: int

    def __str__(self) -> str:
        return f"{self.topic_partition} (offset went back from {self.position} to {self.latest})"


@dataclass(frozen=True, slots=True)
class OffsetCheck:
    """The outcome of ``check_offsets``.

    ``offsets``: where the batch may end, for every partition that is
    neither gone nor rewound (a partition without a latest offset but not
    shown gone stays at its position). ``gone`` and ``rewound`` are sorted;
    both are data loss."""

    offsets: dict[TopicPartition, int]
    gone: tuple[TopicPartition, ...]
    rewound: tuple[Rewound, ...]

    @property
    def lost(self) -> bool:
        return bool(self.gone or self.rewound)

    def message(self) -> str:
        """The error (or warning) text naming the partitions and the option."""
        parts = []
        if self.gone:
            parts.append(f"partitions {', '.join(map(str, self.gone))} are gone (topic deleted, or no longer "
                         "covered by the subscription)")
        if self.rewound:
            parts.append(f"partitions {', '.join(map(str, self.rewound))} start again below the query's position "
                         "(topic deleted and recreated)")
        return ("; ".join(parts) + ". Some data may have been missed. If the query should drop those partitions "
                "(a recreated one is then read again from its earliest offset) and go on, set the source option "
                "'failOnDataLoss' to 'false'.")


def check_offsets(position: Mapping[TopicPartition, int], latest: Mapping[TopicPartition, int],
                  listing: PartitionListing) -> OffsetCheck:
    """Decide which of the query's partitions (``position``: the batch's
    start) are gone or rewound, and the batch's end offsets otherwise.
    ``latest`` holds the latest offsets of the listed partitions (new ones
    included). Pure; the result's ``offsets`` hold no partition the listing
    lacks and no rewound one, and every other partition of ``position`` and
    ``latest``."""
    gone = sorted(tp for tp in position if listing.lacks(tp))
    rewound = sorted((Rewound(tp, position[tp], off) for tp, off in latest.items()
                      if tp in position and off < position[tp] and tp not in gone),
                     key=lambda r: r.topic_partition)
    dropped = set(gone) | {r.topic_partition for r in rewound}
    # A new partition (not yet read) that the answer lacks was listed by an
    # earlier answer (Trigger.AvailableNow freezes its latest offsets once):
    # nothing of it was read, so it is left out without a report.
    offsets = {tp: off for tp, off in latest.items() if tp not in dropped and not listing.lacks(tp)}
    for tp, off in position.items():
        if tp not in dropped:
            offsets.setdefault(tp, off)  # not listed, but not shown gone either: keep its place
    return OffsetCheck(offsets, tuple(gone), tuple(rewound))

