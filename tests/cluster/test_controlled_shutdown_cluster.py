"""Controlled shutdown with real broker processes and a real ZooKeeper: on
SIGTERM a broker asks the controller (over ControlledShutdown) to move its
leaderships before it stops — also when it is the controller itself."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.cluster

CONFIG = {
    # Followers do not fetch in these tests: keep them in the ISR meanwhile.
    "replica.lag.time.max.ms": "120000",
    "auto.leader.rebalance.enable": "false",
    "controlled.shutdown.retry.backoff.ms": "300",
}
ASSIGNMENT = {0: [0, 1, 2], 1: [1, 2, 0], 2: [2, 0, 1]}  # LocalCluster numbers brokers from 0


def _zk(cluster):
    return cluster._zk()


def _states(cluster, topic: str, partitions) -> dict[int, dict]:
    client = _zk(cluster)
    try:
        out = {}
        for p in partitions:
            path = f"/brokers/topics/{topic}/partitions/{p}/state"
            if client.exists(path):
                out[p] = json.loads(client.get(path)[0])
        return out
    finally:
        client.stop()
        client.close()


def _create_topic(cluster, topic: str, assignment: dict[int, list[int]]) -> None:
    client = _zk(cluster)
    try:
        doc = {"version": 1, "partitions": {str(p): r for p, r in assignment.items()}}
        client.create(f"/brokers/topics/{topic}", json.dumps(doc).encode(), makepath=True)
    finally:
        client.stop()
        client.close()
    cluster.wait_for(lambda: len(_states(cluster, topic, assignment)) == len(assignment), 30, f"topic {topic} to get leaders")


def _log(cluster, broker_id: int) -> str:
    return cluster.brokers[broker_id].log_path.read_text(errors="replace")


def test_sigterm_moves_leadership_before_the_broker_stops(make_cluster) -> None:
    cluster = make_cluster(brokers=3, config=CONFIG)
    _create_topic(cluster, "t", ASSIGNMENT)
    cluster.wait_for(lambda: cluster.controller() is not None, 30, "a controller")
    controller = cluster.controller()[0]
    victim = next(b for b in (0, 1, 2) if b != controller)
    led = [p for p, s in _states(cluster, "t", ASSIGNMENT).items() if s["leader"] == victim]
    assert led
    assert cluster.stop_broker(victim) == 0
    assert f"controlled shutdown of broker {victim} succeeded" in _log(cluster, victim)
    states = _states(cluster, "t", ASSIGNMENT)
    for p in led:
        assert states[p]["leader"] not in (victim, -1)
    assert all(victim not in s["isr"] for s in states.values())
    assert f"controlled shutdown of broker {victim}" in _log(cluster, controller)
    # Now the controller itself: it asks itself, then hands over.
    assert cluster.stop_broker(controller) == 0
    assert f"controlled shutdown of broker {controller} succeeded" in _log(cluster, controller)
    last = ({0, 1, 2} - {victim, controller}).pop()
    cluster.wait_for(lambda: cluster.controller() is not None and cluster.controller()[0] == last, 30, "the last broker to be controller")
    states = _states(cluster, "t", ASSIGNMENT)
    assert {s["leader"] for s in states.values()} == {last}


def test_controlled_shutdown_disabled_leaves_it_to_broker_failover(make_cluster) -> None:
    cluster = make_cluster(brokers=2, config={**CONFIG, "controlled.shutdown.enable": "false"})
    _create_topic(cluster, "t", {0: [0, 1], 1: [1, 0]})
    cluster.wait_for(lambda: cluster.controller() is not None, 30, "a controller")
    controller = cluster.controller()[0]
    victim = 1 - controller
    assert cluster.stop_broker(victim) == 0
    assert "controlled shutdown" not in _log(cluster, victim)
    cluster.wait_for(lambda: all(s["leader"] == controller for s in _states(cluster, "t", [0, 1]).values()), 30,
                     "the survivor to lead both partitions")
