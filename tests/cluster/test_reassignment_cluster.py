"""Partition reassignment through AlterPartitionReassignments /
ListPartitionReassignments with real broker processes (seed 000 §Partition
重新分配). A target already in the ISR completes at once (steps 5-11: the
leader moves, the removed replica is stopped and its log deleted); a target
with new brokers stays listed as in progress until they join the ISR."""

from __future__ import annotations

import pytest

from cluster_zk import assignment, controller_id, create_topic, request, states
from kavka.common.errors import ErrorCode
from kavka.protocol.messages import AlterPartitionReassignmentsRequest as Alter
from kavka.protocol.messages import ListPartitionReassignmentsRequest as List

pytestmark = pytest.mark.cluster

CONFIG = {"replica.lag.time.max.ms": "120000", "auto.leader.rebalance.enable": "false"}


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
    cluster = make_cluster(brokers=4, config=CONFIG)
    create_topic(cluster, "t", {0: [0, 1]})
    ctl = controller_id(cluster)
    bad = _alter(cluster, ctl, "t", 0, [0, 9])
    assert bad.responses[0].partitions[0].error_code == ErrorCode.INVALID_REPLICA_ASSIGNMENT
    assert _alter(cluster, ctl, "t", 0, [2, 3]).responses[0].partitions[0].error_code == 0
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
