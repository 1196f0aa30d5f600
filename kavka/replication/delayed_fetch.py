"""Fetch reads across partitions, and DelayedFetch (seed 000 §Follower 从
Leader Fetch 数据 step 5, seed 002 §6.6).

``read_from_local_log`` reads every partition of a Fetch in request order
within the request's ``max_bytes``: each partition gets at most its own
``max_bytes`` and what the request has left; the first partition that
returns data may exceed the limits by one whole batch (KIP-74) unless the
request asked for a hard limit. A partition the leader's replication
quota holds back (``throttled``, seed 002 §8 / KIP-73: ``quota.LeaderReplicationQuota``)
answers with its offsets but no records and takes none of the budget.

A consumer's Fetch v11+ the leader's replica selector sends elsewhere
(``preferred_read_replica``, KIP-392) reads nothing for that partition: the
answer names the replica to read from, with the leader's offsets.

``DelayedFetch`` is a fetch that found fewer than ``min_bytes`` and may
wait up to ``max_wait_ms``. It completes early when, for any of its
partitions, this broker no longer hosts it or stopped leading it (a fetch
that may read a follower, KIP-392, keeps waiting on a follower, whose high
watermark moves as its fetcher hears the leader's), the leader
epoch changed, the log was truncated below the fetch offset or rolled a
segment past it, or when the bytes now readable (up to the HW for
consumers, the last stable offset for read_committed, the LEO for
followers) reach ``min_bytes`` — bytes of partitions the leader quota
holds back do not count, so such a fetch waits out ``max_wait_ms``. The
bytes are counted from log positions (``LogOffsetMetadata``: segment and
byte position of the fetch offset and of the end), not by reading: a check
costs the same whatever ``min_bytes`` is. Completing re-reads, so the
answer holds what is there at that moment (the timeout answers the same
way): every partition, unless the read that parked the fetch found nothing
at all (a follower's idle fetch of every partition it follows, every half
second: re-reading them all doubled the leader's work); then only those
the purgatory checked since (an append, a HW or leadership move, an
offline log directory: nothing else gives a partition something to read),
the others keeping that first answer, whose log start offset (retention
and DeleteRecords move it without a check) reaches the fetcher with its
next fetch. A follower's partitions that were not read at all
(``kavka.replication.quiet_partitions``) count nothing until checked and
are answered only when checked since.

Event loop only.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Collection, Hashable, Mapping
from typing import TYPE_CHECKING

from kavka.common.errors import ErrorCode
from kavka.common.topic_partition import TopicPartition
from kavka.replication.purgatory import DelayedOperation
from kavka.replication.requests import FetchIsolation, FetchParams, FetchPartition, FetchPartitionData, LogReadResult
from kavka.storage.errors import StorageError
from kavka.storage.fetch_data_info import LogOffsetMetadata
from kavka.storage.read_buffers import ReadBuffers

if TYPE_CHECKING:
    from kavka.replication.partition import Partition

GetPartition = Callable[[TopicPartition], "Partition | None"]
Throttled = Callable[["Partition"], bool]
# KIP-392: the answer sending the consumer to another replica instead of
# reading (no records, the leader's offsets), or None to read here.
PreferredReadReplica = Callable[["Partition", FetchPartition], "LogReadResult | None"]


def read_from_local_log(
    get_partition: GetPartition,
    missing_error: Callable[[TopicPartition], ErrorCode],
    params: FetchParams,
    partitions: Mapping[TopicPartition, FetchPartition],
    throttled: Throttled | None = None,
    preferred_read_replica: PreferredReadReplica | None = None,
    buffers: ReadBuffers | None = None,
) -> dict[TopicPartition, LogReadResult]:
    """Read every partition (see the module docstring); ``buffers``: where
    large reads land (``kavka.storage.read_buffers``)."""
    limit = params.max_bytes
    min_one_message = not params.hard_max_bytes_limit
    out: dict[TopicPartition, LogReadResult] = {}
    for tp, req in partitions.items():
        partition = get_partition(tp)
        if partition is None:
            error = missing_error(tp)
            out[tp] = LogReadResult(error, fetch_offset=req.fetch_offset, error_message=f"{tp}: {error.message}")
            continue
        preferred = preferred_read_replica(partition, req) if preferred_read_replica is not None else None
        if preferred is not None:
            out[tp] = preferred
            continue
        result = partition.read_records(
            req.fetch_offset,
            max(0, min(req.max_bytes, limit)),
            params.isolation,
            params.replica_id,
            req.current_leader_epoch,
            req.last_fetched_epoch,
            min_one_message,
            params.fetch_only_from_leader,
            buffers,
        )
        if result.records and throttled is not None and throttled(partition):
            result = dataclasses.replace(result, records=b"")
        size = len(result.records)
        if size:
            min_one_message = False
        limit = max(0, limit - size)
        out[tp] = result
    return out


def _end_metadata(partition: Partition, isolation: FetchIsolation) -> LogOffsetMetadata:
    """How far a fetch of ``isolation`` may read now, with its position: the
    log end (followers), the last stable offset (read_committed) or the
    high watermark (remembered by the log until it moves)."""
    log = partition.log
    if isolation is FetchIsolation.LOG_END:
        return log.log_end_offset_metadata()
    if isolation is FetchIsolation.TXN_COMMITTED:
        return log.last_stable_offset_metadata()
    return log.high_watermark_metadata()


class DelayedFetch(DelayedOperation):
    """See the module docstring. ``leader_epochs``: each partition's leader
    epoch when the fetch arrived; ``start``: where each partition's read
    started (``LogReadResult.fetch_offset_metadata``; None or without a
    position: looked up once, at the first check); ``read`` re-reads every
    partition.

    A check costs no log read (Kafka's DelayedFetch.tryComplete): per
    partition it compares the start with the end the fetch may read to
    (``_end_metadata``). The fetch completes at once when the end is below
    the start (truncated), when they are on different segments (the end
    rolled past, or the start was removed: the bytes between are not
    counted, the answer re-reads), and otherwise when the bytes between,
    each partition counting at most its ``max_bytes``, reach
    ``min_bytes``. The purgatory's check of one partition re-counts that
    partition alone (``try_complete_key``)."""

    def __init__(
        self,
        params: FetchParams,
        partitions: Mapping[TopicPartition, FetchPartition],
        leader_epochs: Mapping[TopicPartition, int],
        get_partition: GetPartition,
        read: Callable[[Mapping[TopicPartition, FetchPartition]], dict[TopicPartition, LogReadResult]],
        future: asyncio.Future[dict[TopicPartition, FetchPartitionData]],
        throttled: Throttled | None = None,
        start: Mapping[TopicPartition, LogOffsetMetadata | None] | None = None,
        first: Mapping[TopicPartition, LogReadResult] | None = None,
        quiet: Collection[TopicPartition] = (),
    ) -> None:
        super().__init__(params.max_wait_ms)
        self.params = params
        self.partitions = dict(partitions)
        self.leader_epochs = dict(leader_epochs)
        self._get_partition = get_partition
        self._read = read
        self.future = future
        self._throttled = throttled
        self._start: dict[TopicPartition, LogOffsetMetadata | None] = dict(start or {})
        # each partition's bytes toward min_bytes at its last check, and their sum
        self._counted: dict[TopicPartition, int] = {}
        self._accumulated = 0
        # The read that parked the fetch, kept when it found nothing: the
        # answer re-reads only the partitions checked since (``_touched``),
        # or all of them after a full check past the first.
        self._first = dict(first) if first is not None and not any(r.records for r in first.values()) else None
        self._touched: set[TopicPartition] = set()
        self._checked = False
        # partitions not read at all (kavka.replication.quiet_partitions):
        # nothing new at the log end; counted 0 until checked, and left out
        # of the answer unless checked since
        self._quiet = quiet

    def _start_of(self, tp: TopicPartition, partition: Partition, fetch_offset: int) -> LogOffsetMetadata:
        meta = self._start.get(tp)
        if meta is None or meta.message_offset_only or meta.message_offset != fetch_offset:
            meta = self._start[tp] = partition.log.offset_metadata(fetch_offset)
        return meta

    def try_complete(self) -> bool:
        if self._checked:
            self._first = None  # checked as a whole: read as a whole
        first_check = not self._checked
        self._checked = True
        self._counted.clear()
        self._accumulated = 0
        quiet = self._quiet if first_check else ()
        for tp, req in self.partitions.items():
            if tp not in quiet and self._count(tp, req):
                return self.force_complete()
        return False

    def try_complete_key(self, key: Hashable) -> bool:
        """Re-count ``key`` alone: the other partitions' counts stand until
        their own check (the purgatory checks a partition after each change
        to it), so a check costs one partition, not every partition of a
        follower's fetch."""
        if not isinstance(key, TopicPartition) or key not in self.partitions:
            return self.try_complete()
        self._touched.add(key)
        return self._count(key, self.partitions[key]) and self.force_complete()

    def _count(self, tp: TopicPartition, req: FetchPartition) -> bool:
        """Count ``tp``'s bytes toward ``min_bytes`` in place of its
        previous count; whether the fetch should complete now."""
        counted = self._bytes_of(tp, req)
        if counted is None:
            return True
        self._accumulated += counted - self._counted.get(tp, 0)
        self._counted[tp] = counted
        return self._accumulated >= self.params.min_bytes

    def _bytes_of(self, tp: TopicPartition, req: FetchPartition) -> int | None:
        """What ``tp`` adds toward ``min_bytes`` now, or None when the fetch
        must complete at once whatever the others hold."""
        partition = self._get_partition(tp)
        if partition is None or (self.params.fetch_only_from_leader and not partition.is_leader):
            return None
        if partition.leader_epoch != self.leader_epochs.get(tp, partition.leader_epoch):
            return None
        try:
            end = _end_metadata(partition, self.params.isolation)
            if end.message_offset == req.fetch_offset:
                return 0  # nothing new (even if the segment just rolled)
            if end.message_offset < req.fetch_offset:
                return None  # truncated below the fetch offset
            start = self._start_of(tp, partition, req.fetch_offset)
        except StorageError:  # the log went offline, or moved past the fetch offset
            return None
        if not start.on_same_segment(end):
            if end.on_older_segment(start) or not self._held_back(partition):
                return None
            return 0
        if self._held_back(partition):
            return 0
        return min(end.position_diff(start), max(req.max_bytes, 0))

    def _held_back(self, partition: Partition) -> bool:
        """The leader's replication quota holds this partition back: its
        bytes do not count (seed 002 §8)."""
        return self._throttled is not None and self._throttled(partition)

    def on_complete(self) -> None:
        if self.future.done():
            return
        try:
            results = self._answer()
        except Exception as e:  # deliver the failure rather than leave the request hanging
            self.future.set_exception(e)
            return
        self.future.set_result({tp: r.to_partition_data() for tp, r in results.items()})

    def _answer(self) -> dict[TopicPartition, LogReadResult]:
        first = self._first
        if first is None:
            return self._read(self.partitions)
        changed = {tp: req for tp, req in self.partitions.items() if tp in self._touched}
        fresh = self._read(changed) if changed else {}
        out: dict[TopicPartition, LogReadResult] = {}
        for tp in self.partitions:
            result = fresh[tp] if tp in fresh else first.get(tp)
            if result is not None:  # else a quiet partition nothing touched: left out
                out[tp] = result
        return out

    def __repr__(self) -> str:
        return f"DelayedFetch(replica={self.params.replica_id}, partitions={[str(tp) for tp in self.partitions]})"
