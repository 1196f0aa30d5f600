"""Partition reassignment through AlterPartitionReassignments /
ListPartitionReassignments with real broker processes (seed 000 §Partition
重新分配). A target already in the ISR completes at once (steps 5-11: the
leader moves, the removed replica is stopped and its log deleted); a target
with new brokers stays listed as in progress until they join the ISR."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal

import pytest

from kavka.client.cluster import Cluster
from kavka.client.consumer import Consumer
from kavka.client.producer import Producer
from kavka.common.errors import ErrorCode
from kavka.common.topic_partition import TopicPartition
from kavka.protocol.messages import AlterPartitionReassignmentsRequest as Alter
from kavka.protocol.messages import ListPartitionReassignmentsRequest as List

from .cluster_zk import assignment, controller_id, create_topic, request, states, zk_call

pytestmark = pytest.mark.cluster

CONFIG = {"replica.lag.time.max.ms": "120000", "auto.leader.rebalance.enable": "false"}
# A controller's state-change.log line for a write of t-0's leader and ISR.
WRITTEN = re.compile(r"Partition t-0 leader and isr written \(([^)]*)\): leader (-?\d+), leader epoch \d+, isr (\[[\d, ]*\])")


def _alter(cluster, broker: int, topic: str, partition: int, replicas):
    body = Alter(topics=[Alter.Topics(name=topic, partitions=[Alter.Topics.Partitions(partition_index=partition, replicas=replicas)])])
    return request(cluster, broker, body)


def test_reassignment_within_the_isr_completes_and_deletes_the_removed_replica(make_cluster) -> None:
    cluster = make_cluster(brokers=4, config=CONFIG)
    create_topic(cluster, "t", {0: [0, 1, 2], 1: [1, 2, 3]})
    ctl = controller_id(cluster)
    other = next(b for b in cluster.brokers if b != ctl)
    refused = _alter(cluster, other, "t", 0, [2, 1])
    assert refused.error_code == ErrorCode.NOT_CONTROLLER
    log_dir = cluster.brokers[0].directory / "logs" / "t-0"
    cluster.wait_for(log_dir.exists, 30, "broker 0 to host t-0")
    ok = _alter(cluster, ctl, "t", 0, [2, 1])
    assert ok.error_code == 0 and [p.error_code for p in ok.responses[0].partitions] == [0]
    cluster.wait_for(lambda: assignment(cluster, "t")["partitions"]["0"] == [2, 1], 30, "AR = RAR in ZooKeeper")
    state = states(cluster, "t", [0])[0]
    assert state["leader"] == 2 and sorted(state["isr"]) == [1, 2]
    cluster.wait_for(lambda: not log_dir.exists(), 30, "broker 0 to delete its replica of t-0 (StopReplica with delete)")
    listed = request(cluster, ctl, List(topics=None))
    assert listed.error_code == 0 and listed.topics == []


def test_reassignment_to_new_brokers_is_listed_in_progress(make_cluster) -> None:
    """Broker 3 is paused (SIGSTOP) so it cannot catch up: the reassignment
    stays in phase A, listed with its adding/removing replicas, until cancelled."""
    cluster = make_cluster(brokers=4, config=CONFIG)
    create_topic(cluster, "t", {0: [0, 1]})
    ctl = controller_id(cluster)
    bad = _alter(cluster, ctl, "t", 0, [0, 9])
    assert bad.responses[0].partitions[0].error_code == ErrorCode.INVALID_REPLICA_ASSIGNMENT
    paused = 3 if ctl != 3 else 2
    target = [2, 3]
    os.kill(cluster.brokers[paused].process.pid, signal.SIGSTOP)
    try:
        assert _alter(cluster, ctl, "t", 0, target).responses[0].partitions[0].error_code == 0
        cluster.wait_for(lambda: assignment(cluster, "t")["partitions"]["0"] == [0, 1, 2, 3], 30, "AR = OAR + RAR")
        node = assignment(cluster, "t")
        assert node["adding_replicas"] == {"0": [2, 3]} and node["removing_replicas"] == {"0": [0, 1]}
        listed = request(cluster, ctl, List(topics=[List.Topics(name="t", partition_indexes=[0])]))
        (p,) = listed.topics[0].partitions
        assert (list(p.replicas), list(p.adding_replicas), list(p.removing_replicas)) == ([0, 1, 2, 3], [2, 3], [0, 1])
        # Cancelled: back to OAR.
        assert _alter(cluster, ctl, "t", 0, None).responses[0].partitions[0].error_code == 0
        cluster.wait_for(lambda: assignment(cluster, "t")["partitions"]["0"] == [0, 1], 30, "AR = OAR again")
        assert request(cluster, ctl, List(topics=None)).topics == []
    finally:
        os.kill(cluster.brokers[paused].process.pid, signal.SIGCONT)


def test_seed_table_on_six_brokers_under_live_traffic(make_cluster) -> None:
    """Seed 000's example, brokers numbered from 0: OAR {0,1,2} -> RAR
    {3,4,5} through /admin/reassign_partitions while a producer (acks=all)
    keeps writing; the followers really replicate. AR goes {0,1,2} ->
    {0,...,5} -> {3,4,5}, the leadership moves 0 -> 3 without a gap, and
    every acknowledged record is read back from the new leader."""
    cluster = make_cluster(brokers=6, config={"auto.leader.rebalance.enable": "false"})
    create_topic(cluster, "t", {0: [0, 1, 2]})
    seen: list[tuple[tuple[int, ...], int]] = []

    def observe() -> tuple[list[int], dict]:
        ar = assignment(cluster, "t")["partitions"]["0"]
        state = states(cluster, "t", [0])[0]
        row = (tuple(ar), state["leader"])
        if not seen or seen[-1] != row:
            seen.append(row)
        return ar, state

    async def body() -> list[int]:
        async with Cluster(cluster.bootstrap, retry_backoff_ms=50) as client:
            acked: list[int] = []
            async with Producer(client, acks=-1, linger_ms=2) as producer:

                async def produce(lo: int, hi: int) -> None:
                    for i in range(lo, hi):
                        await producer.send_and_wait("t", b"r-%d" % i, partition=0)
                        acked.append(i)

                await produce(0, 50)
                doc = {"version": 1, "partitions": [{"topic": "t", "partition": 0, "replicas": [3, 4, 5]}]}
                zk_call(cluster, lambda c: c.create("/admin/reassign_partitions", json.dumps(doc).encode()))
                i = 50
                deadline = asyncio.get_running_loop().time() + 60
                while True:
                    await produce(i, i + 10)
                    i += 10
                    ar, state = await asyncio.to_thread(observe)
                    if ar == [3, 4, 5] and sorted(state["isr"]) == [3, 4, 5]:
                        break
                    assert asyncio.get_running_loop().time() < deadline, f"reassignment did not finish: {seen}"
                await produce(i, i + 20)
            consumer = Consumer(client)
            consumer.assign([TopicPartition("t", 0)])
            await consumer.seek_to_beginning()
            got = [r async for r in consumer.records(stop_at_end=True)]
            offsets = [r.offset for r in got]
            assert offsets == list(range(len(got)))  # no gap, strictly increasing
            values = [int(r.value.split(b"-")[1]) for r in got]
            assert set(acked) <= set(values)
            return values

    asyncio.run(asyncio.wait_for(body(), 120))
    # What the polls saw: only the seed's AR values and leaders, never leaderless.
    assert {ar for ar, _ in seen} <= {(0, 1, 2), (0, 1, 2, 3, 4, 5), (3, 4, 5)}
    assert all(leader in (0, 3) for _, leader in seen)
    # The controller's writes, in order (state-change.log): the table's
    # leader/ISR column from step 2 on (step 4's ISR growth is the leader's write).
    written = []
    for b in cluster.brokers.values():
        path = b.directory / "logs" / "state-change.log"
        if path.exists():
            written += WRITTEN.findall(path.read_text(errors="replace"))
    rows = [(why, int(leader), set(json.loads(isr))) for why, leader, isr in written]
    start = next(k for k, (why, _, _) in enumerate(rows) if why == "reassignment started")
    assert [(leader, isr) for _, leader, isr in rows[start:]] == [(0, {0, 1, 2}), (3, {0, 1, 2, 3, 4, 5}), (3, {3, 4, 5})]
    node = assignment(cluster, "t")
    assert node["partitions"]["0"] == [3, 4, 5]
    assert node.get("adding_replicas", {}) == {} and node.get("removing_replicas", {}) == {}
    assert not zk_call(cluster, lambda c: c.exists("/admin/reassign_partitions"))
    for b in (0, 1, 2):
        cluster.wait_for(lambda b=b: not (cluster.brokers[b].directory / "logs" / "t-0").exists(), 30, f"broker {b} to delete t-0")
