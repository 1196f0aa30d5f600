"""The partitions of a follower's fetch session that need not be read again.

A follower sends its leader one Fetch after another (seed 000 §Follower 从
Leader Fetch 数据), and with an incremental session (KIP-227) a request
carries only the partitions whose fetch state changed. The leader still
read every partition of the session on each Fetch, as Kafka's does: while
nothing is written, a leader of thousands of partitions spent most of its
time answering "nothing new" to its followers, twice a second each.

A partition whose last read in the session was quiet (``is_quiet_read``:
no error, no records, no divergence, the follower at the log end) and
whose request and state (``Partition.fetch_state_mark``) have not changed
since would be read the same: it is skipped. What the read records for the
follower is recorded without it (its fetch time, so the ISR keeps seeing it
caught up; the fetch count of the topic), and the answer leaves it out, as
an incremental answer leaves out every partition with nothing to say. A
fetch that waits (``DelayedFetch``) still waits on the skipped partitions:
an append to one completes it, and the answer reads that partition.

A mark is noted only by a read after which the follower's fetch state is
recorded, because what that recording does (propose the follower for the
ISR, move the high watermark) depends on the state the mark holds: a
parked fetch's re-read when it completes records nothing, so it drops the
marks of the partitions it reads, which the next fetch then reads.

``QuietPartitions`` carries the session's marks into
``ReplicaManager.fetch_messages`` (``known``: only partitions this request
did not change) and the marks of this answer back out (``found``), which
the session keeps for the next request.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping

from kavka.common.errors import ErrorCode
from kavka.common.topic_partition import TopicPartition
from kavka.replication.requests import LogReadResult


class QuietPartitions:
    """See the module docstring."""

    __slots__ = ("known", "found")

    def __init__(self, known: Mapping[TopicPartition, Hashable]) -> None:
        self.known = known
        self.found: dict[TopicPartition, Hashable] = {}


def is_quiet_read(result: LogReadResult) -> bool:
    """A read that found nothing and had nothing to report, with the
    follower at the log end: the same request reads the same while the
    partition's state stays."""
    return (result.error is ErrorCode.NONE and not result.records and result.diverging_epoch is None
            and result.preferred_read_replica < 0 and result.fetch_offset == result.leader_end_offset)
