"""DelayedProduce: each partition is answered once the high watermark
reaches its last offset + 1 (or with the error that ended its wait), the
whole produce once every partition is; a check of one partition looks at
that partition alone."""

from __future__ import annotations

import asyncio

from kavka.common.errors import ErrorCode
from kavka.common.topic_partition import TopicPartition
from kavka.replication.delayed_produce import DelayedProduce, ProducePartitionStatus
from kavka.replication.purgatory import DelayedOperationPurgatory
from kavka.replication.requests import ProducePartitionResult


class FakePartition:
    """The high watermark and leader epoch ``check_enough_replicas_reach_offset`` reads."""

    def __init__(self) -> None:
        self.high_watermark = 0
        self.leader_epoch = 0
        self.checks = 0

    def check_enough_replicas_reach_offset(self, required_offset: int, leader_epoch: int) -> tuple[bool, ErrorCode]:
        self.checks += 1
        if leader_epoch != self.leader_epoch:
            return True, ErrorCode.NOT_LEADER_OR_FOLLOWER
        return self.high_watermark >= required_offset, ErrorCode.NONE


def produce(partitions: dict[TopicPartition, FakePartition]) -> DelayedProduce:
    statuses = {tp: ProducePartitionStatus(1, 0, ProducePartitionResult(ErrorCode.NONE, 0), True) for tp in partitions}
    future = asyncio.get_running_loop().create_future()
    return DelayedProduce(30_000, statuses, partitions.get, future)  # type: ignore[arg-type]


async def test_completes_when_the_last_partition_reaches_its_offset():
    parts = {TopicPartition("t", i): FakePartition() for i in range(3)}
    purgatory: DelayedOperationPurgatory[TopicPartition] = DelayedOperationPurgatory("Produce")
    op = produce(parts)
    assert not purgatory.try_complete_else_watch(op, list(parts))
    for i, (tp, partition) in enumerate(parts.items()):
        partition.high_watermark = 1
        assert purgatory.check_and_complete(tp) == (1 if i == 2 else 0)
    answer = await op.future
    assert {r.error for r in answer.values()} == {ErrorCode.NONE}


async def test_a_check_of_one_partition_asks_that_partition_alone():
    """A produce to every partition a leader serves is checked once per
    partition whose HW moved: walking all of them at each check cost
    partitions x partitions per request."""
    parts = {TopicPartition("t", i): FakePartition() for i in range(1000)}
    purgatory: DelayedOperationPurgatory[TopicPartition] = DelayedOperationPurgatory("Produce")
    op = produce(parts)
    purgatory.try_complete_else_watch(op, list(parts))
    assert all(p.checks == 1 for p in parts.values())  # the first, full check
    for tp, partition in parts.items():
        partition.high_watermark = 1
        purgatory.check_and_complete(tp)
    assert all(p.checks == 2 for p in parts.values())
    assert op.is_completed


async def test_each_partition_keeps_the_answer_that_ended_its_wait():
    a, b = TopicPartition("t", 0), TopicPartition("t", 1)
    parts = {a: FakePartition(), b: FakePartition()}
    purgatory: DelayedOperationPurgatory[TopicPartition] = DelayedOperationPurgatory("Produce")
    op = produce(parts)
    purgatory.try_complete_else_watch(op, [a, b])
    parts[a].leader_epoch = 1  # a's leadership ended: answered now, not waited for
    assert purgatory.check_and_complete(a) == 0
    parts[a].leader_epoch = 0  # a later check of a cannot change its answer
    purgatory.check_and_complete(a)
    parts[b].high_watermark = 1
    assert purgatory.check_and_complete(b) == 1
    answer = await op.future
    assert answer[a].error is ErrorCode.NOT_LEADER_OR_FOLLOWER and answer[b].error is ErrorCode.NONE
