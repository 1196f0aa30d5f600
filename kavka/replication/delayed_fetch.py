"""Fetch reads across partitions, and DelayedFetch (seed 000 §Follower 从
Leader Fetch 数据 step 5, seed 002 §6.6).

``read_from_local_log`` reads every partition of a Fetch in request order
within the request's ``max_bytes``: each partition gets at most its own
``max_bytes`` and what the request has left; the first partition that
returns data may exceed the limits by one whole batch (KIP-74) unless the
request asked for a hard limit. A partition the leader's replication
quota holds back (``throttled``, seed 002 §8 / KIP-73: ``quota.LeaderReplicationQuota``)
answers with its offsets but no records and takes none of the budget.

``DelayedFetch`` is a fetch that found fewer than ``min_bytes`` and may
wait up to ``max_wait_ms``. It completes early when, for any of its
partitions, this broker stopped leading or no longer hosts it, the leader
epoch changed, the log was truncated below the fetch offset, or when the
bytes now readable (up to the HW for consumers, the LEO for followers)
reach ``min_bytes`` — bytes of partitions the leader quota holds back do
not count, so such a fetch waits out ``max_wait_ms``. Completing re-reads
every partition, so the answer holds what is there at that moment; the
timeout answers the same way.

Event loop only.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from kavka.common.errors import ErrorCode
from kavka.common.topic_partition import TopicPartition
from kavka.replication.purgatory import DelayedOperation
from kavka.replication.requests import FetchIsolation, FetchParams, FetchPartition, FetchPartitionData, LogReadResult
from kavka.storage.errors import StorageError

if TYPE_CHECKING:
    from kavka.replication.partition import Partition

GetPartition = Callable[[TopicPartition], "Partition | None"]
Throttled = Callable[["Partition"], bool]


def read_from_local_log(
    get_partition: GetPartition,
    missing_error: Callable[[TopicPartition], ErrorCode],
    params: FetchParams,
    partitions: Mapping[TopicPartition, FetchPartition],
    throttled: Throttled | None = None,
) -> dict[TopicPartition, LogReadResult]:
    """Read every partition (see the module docstring)."""
    limit = params.max_bytes
    min_one_message = not params.hard_max_bytes_limit
    out: dict[TopicPartition, LogReadResult] = {}
    for tp, req in partitions.items():
        partition = get_partition(tp)
        if partition is None:
            error = missing_error(tp)
            out[tp] = LogReadResult(error, fetch_offset=req.fetch_offset, error_message=f"{tp}: {error.message}")
            continue
        result = partition.read_records(
            req.fetch_offset,
            max(0, min(req.max_bytes, limit)),
            params.isolation,
            params.replica_id,
            req.current_leader_epoch,
            req.last_fetched_epoch,
            min_one_message,
        )
        if result.records and throttled is not None and throttled(partition):
            result = dataclasses.replace(result, records=b"")
        size = len(result.records)
        if size:
            min_one_message = False
        limit = max(0, limit - size)
        out[tp] = result
    return out


def _readable_bytes(partition: Partition, req: FetchPartition, isolation: FetchIsolation, want: int) -> int | None:
    """Bytes readable from the fetch offset now, read up to ``want``; None
    when the fetch must be answered at once (the log was truncated below
    the fetch offset or can no longer be read there)."""
    log = partition.log
    if isolation is FetchIsolation.LOG_END:
        end, limit = log.log_end_offset, None
    elif isolation is FetchIsolation.TXN_COMMITTED:
        end = limit = partition.last_stable_offset()
    else:
        end = limit = log.high_watermark
    if req.fetch_offset > end:
        return None
    if req.fetch_offset == end:
        return 0
    try:
        info = log.read(req.fetch_offset, max(1, min(req.max_bytes, want)), limit, True)
    except StorageError:
        return None
    return len(info.records)


class DelayedFetch(DelayedOperation):
    """See the module docstring. ``leader_epochs``: each partition's leader
    epoch when the fetch arrived; ``read`` re-reads every partition."""

    def __init__(
        self,
        params: FetchParams,
        partitions: Mapping[TopicPartition, FetchPartition],
        leader_epochs: Mapping[TopicPartition, int],
        get_partition: GetPartition,
        read: Callable[[], dict[TopicPartition, LogReadResult]],
        future: asyncio.Future[dict[TopicPartition, FetchPartitionData]],
        throttled: Throttled | None = None,
    ) -> None:
        super().__init__(params.max_wait_ms)
        self.params = params
        self.partitions = dict(partitions)
        self.leader_epochs = dict(leader_epochs)
        self._get_partition = get_partition
        self._read = read
        self.future = future
        self._throttled = throttled

    def try_complete(self) -> bool:
        accumulated = 0
        for tp, req in self.partitions.items():
            partition = self._get_partition(tp)
            if partition is None or (self.params.fetch_only_from_leader and not partition.is_leader):
                return self.force_complete()
            if partition.leader_epoch != self.leader_epochs.get(tp, partition.leader_epoch):
                return self.force_complete()
            readable = _readable_bytes(partition, req, self.params.isolation, self.params.min_bytes - accumulated)
            if readable is None:
                return self.force_complete()
            if self._throttled is None or not self._throttled(partition):
                accumulated += readable
            if accumulated >= self.params.min_bytes:
                return self.force_complete()
        return False

    def on_complete(self) -> None:
        if self.future.done():
            return
        try:
            results = self._read()
        except Exception as e:  # deliver the failure rather than leave the request hanging
            self.future.set_exception(e)
            return
        self.future.set_result({tp: r.to_partition_data() for tp, r in results.items()})

    def __repr__(self) -> str:
        return f"DelayedFetch(replica={self.params.replica_id}, partitions={[str(tp) for tp in self.partitions]})"
