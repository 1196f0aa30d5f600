"""ElectLeaders (API 43) with real broker processes: the controller elects
the preferred replica when it is in the ISR, the answer comes once the
broker's metadata shows it; v0 reports "already preferred" as success."""

from __future__ import annotations

import json

import pytest

from kavka.common.errors import ErrorCode
from kavka.protocol.messages import ElectLeadersRequest as Elect

from .cluster_zk import controller_id, create_topic, request, states, zk_call

pytestmark = pytest.mark.cluster

CONFIG = {"replica.lag.time.max.ms": "120000", "auto.leader.rebalance.enable": "false"}


def _move_leader(cluster, topic: str, partition: int, leader: int) -> None:
    """Make ``leader`` lead with the same ISR (as an earlier failover would
    have), through the state znode plus an ISR change notification."""

    def write(client):
        path = f"/brokers/topics/{topic}/partitions/{partition}/state"
        data, stat = client.get(path)
        state = json.loads(data)
        state["leader"], state["leader_epoch"] = leader, state["leader_epoch"] + 1
        client.set(path, json.dumps(state).encode(), stat.version)
        note = {"version": 1, "partitions": [{"topic": topic, "partition": partition}]}
        client.create("/isr_change_notification/isr_change_", json.dumps(note).encode(), sequence=True, makepath=True)

    zk_call(cluster, write)
    cluster.wait_for(lambda: not zk_call(cluster, lambda c: c.get_children("/isr_change_notification")), 30,
                     "the controller to read the change")


def _elect(cluster, broker: int, parts, version: int, election_type: int = 0):
    tps = None if parts is None else [Elect.TopicPartitions(topic="t", partitions=parts)]
    return request(cluster, broker, Elect(election_type=election_type, topic_partitions=tps, timeout_ms=20000), version=version)


def _codes(resp) -> dict[int, int]:
    return {p.partition_id: p.error_code for r in resp.replica_election_results for p in r.partition_result}


def test_elect_leaders_restores_the_preferred_leader(make_cluster) -> None:
    cluster = make_cluster(brokers=3, config=CONFIG)
    create_topic(cluster, "t", {0: [0, 1, 2], 1: [1, 2, 0]})
    ctl = controller_id(cluster)
    other = next(b for b in cluster.brokers if b != ctl)
    assert _elect(cluster, other, [0], 1).error_code == ErrorCode.NOT_CONTROLLER
    _move_leader(cluster, "t", 0, 2)
    resp = _elect(cluster, ctl, [0, 1], 2)
    assert resp.error_code == 0
    assert _codes(resp) == {0: ErrorCode.NONE, 1: ErrorCode.ELECTION_NOT_NEEDED}
    assert states(cluster, "t", [0])[0]["leader"] == 0
    # v0: already preferred is plain success.
    assert _codes(_elect(cluster, ctl, None, 0)) == {0: 0, 1: 0}
    assert _elect(cluster, ctl, [0], 1, election_type=7).error_code == ErrorCode.INVALID_REQUEST


def test_auto_rebalance_gives_leadership_back_after_a_bounce(make_cluster) -> None:
    """Broker 0 stops (its leadership moves away), comes back, catches up,
    rejoins the ISR (real replication), and the periodic check hands its
    preferred partitions back (seed 000 §Preferred Replica, last paragraph)."""
    cluster = make_cluster(brokers=3, config={
        "auto.leader.rebalance.enable": "true",
        "leader.imbalance.check.interval.seconds": "1",
        "leader.imbalance.per.broker.percentage": "0",
        "controlled.shutdown.retry.backoff.ms": "200",
    })
    create_topic(cluster, "t", {0: [0, 1, 2], 1: [1, 2, 0]})
    controller_id(cluster)
    cluster.stop_broker(0)
    cluster.wait_for(lambda: states(cluster, "t", [0])[0]["leader"] == 1, 30, "t-0 to move to broker 1")
    cluster.start_broker(0)
    cluster.wait_registered({0})
    cluster.wait_for(lambda: states(cluster, "t", [0])[0]["leader"] == 0, 60, "the rebalance to give t-0 back to broker 0")
    assert 0 in states(cluster, "t", [0])[0]["isr"]
