"""Controlled shutdown with real broker processes and a real ZooKeeper: on
SIGTERM a broker asks the controller (over ControlledShutdown) to move its
leaderships before it stops — also when it is the controller itself."""

from __future__ import annotations

import pytest

from .cluster_zk import create_topic, request, states
from kavka.common.errors import ErrorCode
from kavka.protocol.messages import ControlledShutdownRequest

pytestmark = pytest.mark.cluster

CONFIG = {
    # Followers do not fetch in these tests: keep them in the ISR meanwhile.
    "replica.lag.time.max.ms": "120000",
    "auto.leader.rebalance.enable": "false",
    "controlled.shutdown.retry.backoff.ms": "300",
}
ASSIGNMENT = {0: [0, 1, 2], 1: [1, 2, 0], 2: [2, 0, 1]}  # LocalCluster numbers brokers from 0


def _log(cluster, broker_id: int) -> str:
    return cluster.brokers[broker_id].log_path.read_text(errors="replace")


def test_sigterm_moves_leadership_before_the_broker_stops(make_cluster) -> None:
    cluster = make_cluster(brokers=3, config=CONFIG)
    create_topic(cluster, "t", ASSIGNMENT)
    cluster.wait_for(lambda: cluster.controller() is not None, 30, "a controller")
    controller = cluster.controller()[0]
    victim = next(b for b in (0, 1, 2) if b != controller)
    led = [p for p, s in states(cluster, "t", ASSIGNMENT).items() if s["leader"] == victim]
    assert led
    assert cluster.stop_broker(victim) == 0
    assert f"controlled shutdown of broker {victim} succeeded" in _log(cluster, victim)
    now = states(cluster, "t", ASSIGNMENT)
    for p in led:
        assert now[p]["leader"] not in (victim, -1)
    assert all(victim not in s["isr"] for s in now.values())
    assert f"controlled shutdown of broker {victim}" in _log(cluster, controller)
    # Now the controller itself: it asks itself, then hands over.
    assert cluster.stop_broker(controller) == 0
    assert f"controlled shutdown of broker {controller} succeeded" in _log(cluster, controller)
    last = ({0, 1, 2} - {victim, controller}).pop()
    cluster.wait_for(lambda: cluster.controller() is not None and cluster.controller()[0] == last, 30, "the last broker to be controller")
    now = states(cluster, "t", ASSIGNMENT)
    assert {s["leader"] for s in now.values()} == {last}


def test_controlled_shutdown_disabled_leaves_it_to_broker_failover(make_cluster) -> None:
    cluster = make_cluster(brokers=2, config={**CONFIG, "controlled.shutdown.enable": "false"})
    create_topic(cluster, "t", {0: [0, 1], 1: [1, 0]})
    cluster.wait_for(lambda: cluster.controller() is not None, 30, "a controller")
    controller = cluster.controller()[0]
    victim = 1 - controller
    # Every version reaches the handler; a broker that is not the controller says so.
    for version in range(4):
        answer = request(cluster, victim, ControlledShutdownRequest(broker_id=victim, broker_epoch=-1), version=version)
        assert (answer.error_code, answer.remaining_partitions) == (ErrorCode.NOT_CONTROLLER, [])
    assert cluster.stop_broker(victim) == 0
    assert "controlled shutdown" not in _log(cluster, victim)
    cluster.wait_for(lambda: all(s["leader"] == controller for s in states(cluster, "t", [0, 1]).values()), 30,
                     "the survivor to lead both partitions")
