"""DelayedProduce: an acks=-1 produce waiting for the ISR (seed 002 §6.3, §6.5).

Created by the replica manager when acks is -1, the request carried data
and at least one partition's append succeeded. Per partition it waits until
the leader's high watermark reaches the partition's last appended offset + 1
(``Partition.check_enough_replicas_reach_offset``): then the partition is
answered NONE, or NOT_ENOUGH_REPLICAS_AFTER_APPEND when the ISR shrank below
``min.insync.replicas``, or NOT_LEADER_OR_FOLLOWER when this broker stopped
leading (or the append's leader epoch ended) meanwhile, KAFKA_STORAGE_ERROR
when the partition's log directory failed (KIP-112). Partitions whose
append already failed are answered with that error at once. Partitions
still waiting at the timeout (``timeout_ms`` of the request) are answered
REQUEST_TIMED_OUT — the records may still become committed later, which is
why clients treat it as indeterminate.

The answer is delivered by resolving ``future`` with
``{tp: ProducePartitionResult}``. Watched under every partition of the
request; checked after appends, HW moves and leadership changes, one
partition at a time (``try_complete_key``: the others' answers stand).

Event loop only.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Hashable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from kavka.common.errors import ErrorCode
from kavka.common.topic_partition import TopicPartition
from kavka.replication.purgatory import DelayedOperation
from kavka.replication.requests import ProducePartitionResult

if TYPE_CHECKING:
    from kavka.replication.partition import Partition


@dataclass(slots=True)
class ProducePartitionStatus:
    """One partition's progress. ``required_offset``: last offset + 1;
    ``leader_epoch``: the epoch the records were appended in;
    ``acks_pending``: still waiting; ``result``: the answer so far."""

    required_offset: int
    leader_epoch: int
    result: ProducePartitionResult
    acks_pending: bool


class DelayedProduce(DelayedOperation):
    """See the module docstring."""

    def __init__(
        self,
        timeout_ms: int,
        statuses: dict[TopicPartition, ProducePartitionStatus],
        get_partition: Callable[[TopicPartition], Partition | None],
        future: asyncio.Future[dict[TopicPartition, ProducePartitionResult]],
        missing_partition_error: Callable[[TopicPartition], ErrorCode] | None = None,
    ) -> None:
        super().__init__(timeout_ms)
        self.statuses = statuses
        self._get_partition = get_partition
        # why a partition is no longer hosted here (KAFKA_STORAGE_ERROR for a
        # failed log directory, KIP-112); NOT_LEADER_OR_FOLLOWER by default
        self._missing_error = missing_partition_error or (lambda tp: ErrorCode.NOT_LEADER_OR_FOLLOWER)
        self.future = future
        self._pending = 0  # partitions still acks_pending
        for status in statuses.values():
            if status.acks_pending:
                self._pending += 1
                # What the client hears if the timeout comes first.
                status.result = replace(
                    status.result, error=ErrorCode.REQUEST_TIMED_OUT,
                    error_message="the in-sync replicas did not all acknowledge before the timeout",
                )

    def try_complete(self) -> bool:
        for tp, status in self.statuses.items():
            if status.acks_pending:
                self._check(tp, status)
        return self._pending == 0 and self.force_complete()

    def try_complete_key(self, key: Hashable) -> bool:
        if not isinstance(key, TopicPartition) or key not in self.statuses:
            return self.try_complete()
        status = self.statuses[key]
        if status.acks_pending:
            self._check(key, status)
        return self._pending == 0 and self.force_complete()

    def _check(self, tp: TopicPartition, status: ProducePartitionStatus) -> None:
        partition = self._get_partition(tp)
        if partition is None:
            done, error = True, self._missing_error(tp)
        else:
            done, error = partition.check_enough_replicas_reach_offset(status.required_offset, status.leader_epoch)
        if done:
            status.acks_pending = False
            self._pending -= 1
            message = None if error is ErrorCode.NONE else f"{tp}: {error.message}"
            status.result = replace(status.result, error=error, error_message=message)

    def on_complete(self) -> None:
        if not self.future.done():
            self.future.set_result({tp: s.result for tp, s in self.statuses.items()})

    def __repr__(self) -> str:
        pending = [str(tp) for tp, s in self.statuses.items() if s.acks_pending]
        return f"DelayedProduce(timeout={self.delay_ms}ms, pending={pending})"
