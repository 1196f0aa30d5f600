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
did not change), splits the request into what to read and what to skip
(``split``), and carries the marks of this answer back out (``found``:
``note`` after the read, ``forget`` for a parked fetch's re-read), which
the session keeps for the next request.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping
from typing import TYPE_CHECKING

from kavka.common.errors import ErrorCode
from kavka.common.topic_partition import TopicPartition
from kavka.replication.requests import FetchPartition, LogReadResult

if TYPE_CHECKING:
    from kavka.replication.partition import Partition

GetPartition = Callable[[TopicPartition], "Partition | None"]


class QuietPartitions:
    """See the module docstring."""

    __slots__ = ("known", "found")

    def __init__(self, known: Mapping[TopicPartition, Hashable]) -> None:
        self.known = known
        self.found: dict[TopicPartition, Hashable] = {}

    def split(
        self, partitions: Mapping[TopicPartition, FetchPartition], get_partition: GetPartition
    ) -> tuple[Mapping[TopicPartition, FetchPartition], dict[TopicPartition, FetchPartition]]:
        """(the partitions to read, those skipped): a partition is skipped
        when its state still has the mark the session noted."""
        known = self.known
        if not known:
            return partitions, {}
        to_read: dict[TopicPartition, FetchPartition] = {}
        skipped: dict[TopicPartition, FetchPartition] = {}
        found = self.found
        for tp, req in partitions.items():
            mark = known.get(tp)
            partition = get_partition(tp) if mark is not None else None
            if partition is not None and partition.fetch_state_mark() == mark:
                skipped[tp] = req
                found[tp] = mark
            else:
                to_read[tp] = req
        return to_read, skipped

    def note(self, results: Mapping[TopicPartition, LogReadResult], get_partition: GetPartition) -> None:
        """A read the follower's fetch state is recorded after: the mark of
        each partition it read quietly, and none for the others."""
        found = self.found
        for tp, result in results.items():
            partition = get_partition(tp) if is_quiet_read(result) else None
            if partition is not None:
                found[tp] = partition.fetch_state_mark()
            else:
                found.pop(tp, None)

    def forget(self, partitions: Iterable[TopicPartition]) -> None:
        """A read nothing is recorded after (a parked fetch's answer): no
        mark for these, so the next fetch reads them."""
        for tp in partitions:
            self.found.pop(tp, None)


def is_quiet_read(result: LogReadResult) -> bool:
    """A read that found nothing and had nothing to report, with the
    follower at the log end: the same request reads the same while the
    partition's state stays."""
    return (result.error is ErrorCode.NONE and not result.records and result.diverging_epoch is None
            and result.preferred_read_replica < 0 and result.fetch_offset == result.leader_end_offset)
