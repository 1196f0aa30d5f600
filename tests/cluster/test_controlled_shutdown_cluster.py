"""Controlled shutdown with real broker processes and a real ZooKeeper: on
SIGTERM a broker asks the controller (over ControlledShutdown) to move its
leaderships before it stops — also when it is the controller itself."""

from __future__ import annotations

import asyncio

import pytest

from kavka.client.cluster import Cluster
from kavka.client.consumer import Consumer
from kavka.client.producer import Producer
from kavka.common.errors import ErrorCode
from kavka.common.topic_partition import TopicPartition
from kavka.protocol.messages import ControlledShutdownRequest

from .cluster_zk import controller_id, create_topic, request, states, zk_call

pytestmark = pytest.mark.cluster

CONFIG = {
    # No ISR shrink from a slow start on a loaded machine: the tests check leadership moves.
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
    # The partitions it led name it as a follower (LeaderAndIsr goes to every
    # replica, as Kafka's controlled shutdown sends it), so it may fetch and
    # rejoin their ISR before it exits; once it is gone the controller takes
    # it out of every ISR (broker failure, seed 003).
    cluster.wait_for(lambda: all(victim not in s["isr"] for s in states(cluster, "t", ASSIGNMENT).values()), 30,
                     f"broker {victim} out of every ISR")
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
    # Every version reaches the handler. Without a broker epoch (v0-1, or -1)
    # it is refused from a connection not authenticated as that broker; with
    # the broker's epoch, a broker that is not the controller says so.
    epoch = zk_call(cluster, lambda c: c.exists(f"/brokers/ids/{victim}").czxid)
    for version in range(4):
        answer = request(cluster, victim, ControlledShutdownRequest(broker_id=victim, broker_epoch=-1), version=version)
        assert (answer.error_code, answer.remaining_partitions) == (ErrorCode.STALE_BROKER_EPOCH, [])
    for version in (2, 3):
        answer = request(cluster, victim, ControlledShutdownRequest(broker_id=victim, broker_epoch=epoch),
                         version=version)
        assert (answer.error_code, answer.remaining_partitions) == (ErrorCode.NOT_CONTROLLER, [])
    assert cluster.stop_broker(victim) == 0
    assert "controlled shutdown" not in _log(cluster, victim)
    cluster.wait_for(lambda: all(s["leader"] == controller for s in states(cluster, "t", [0, 1]).values()), 30,
                     "the survivor to lead both partitions")


def test_controlled_shutdown_of_the_leader_under_acks_all_traffic_loses_nothing(make_cluster) -> None:
    cluster = make_cluster(brokers=3, config={"min.insync.replicas": "2", "auto.leader.rebalance.enable": "false",
                                              "controlled.shutdown.retry.backoff.ms": "300"})
    create_topic(cluster, "t", {0: [0, 1, 2]})
    controller_id(cluster)

    async def body() -> None:
        async with Cluster(cluster.bootstrap, retry_backoff_ms=50) as client:
            acked: list[int] = []
            async with Producer(client, acks=-1, linger_ms=2) as producer:

                async def produce(lo: int, hi: int) -> None:
                    for i in range(lo, hi):
                        await producer.send_and_wait("t", b"r-%d" % i, partition=0)
                        acked.append(i)

                await produce(0, 100)
                stopping = asyncio.create_task(asyncio.to_thread(cluster.stop_broker, 0))
                await produce(100, 200)
                assert await stopping == 0
                await produce(200, 300)
            assert "controlled shutdown of broker 0 succeeded" in _log(cluster, 0)
            consumer = Consumer(client)
            consumer.assign([TopicPartition("t", 0)])
            await consumer.seek_to_beginning()
            got = [r async for r in consumer.records(stop_at_end=True)]
            assert [r.offset for r in got] == list(range(len(got)))
            assert set(acked) <= {int(r.value.split(b"-")[1]) for r in got}

    asyncio.run(asyncio.wait_for(body(), 90))
    assert states(cluster, "t", [0])[0]["leader"] in (1, 2)
