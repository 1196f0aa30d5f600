"""End to end with real broker processes: the ISR follows the followers.

A SIGSTOPped follower stops fetching; while records keep arriving it leaves
the ISR once replica.lag.time.max.ms passes (acks=all writes, held until
then, complete with the ISR of two), and after SIGCONT its fetcher catches
up and the leader adds it back. With two of the three replicas down the ISR
is the leader alone and acks=all is refused with NOT_ENOUGH_REPLICAS
(min.insync.replicas=2)."""

from __future__ import annotations

import os
import signal
import time

from .replication_helpers import REPLICATION_CONFIG, create_topic, partition_state, wait_state

TOPIC = "isr"


def produce_until(cluster, producer, predicate, timeout: float, what: str, counter: list[int]) -> None:
    """Keep producing one record every ~20 ms until ``predicate()``."""
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"{what} not reached in {timeout:.0f} s: {partition_state(cluster, TOPIC)}"
        producer.produce(TOPIC, b"r%d" % counter[0], partition=0)
        counter[0] += 1
        producer.poll(0.02)


def test_paused_follower_leaves_and_rejoins_the_isr_and_min_isr_refuses_acks_all(make_cluster):
    from confluent_kafka import KafkaError, Producer

    config = dict(REPLICATION_CONFIG, **{"zookeeper.session.timeout.ms": "30000"})  # outlive the pause
    cluster = make_cluster(brokers=3, config=config)
    create_topic(cluster, TOPIC, config={"min.insync.replicas": "2"})
    st = wait_state(cluster, TOPIC, lambda s: len(s["isr"]) == 3, "an ISR of 3")
    leader = st["leader"]
    follower = next(b for b in st["isr"] if b != leader)
    in_isr = lambda b: lambda: b in partition_state(cluster, TOPIC)["isr"]  # noqa: E731

    errors: list = []
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "linger.ms": 0,
                         "message.timeout.ms": 30_000, "enable.idempotence": False,
                         "error_cb": lambda e: None})
    counter = [0]
    produce_until(cluster, producer, lambda: counter[0] >= 20, 10, "warm-up", counter)
    assert producer.flush(20) == 0

    pid = cluster.brokers[follower].process.pid
    os.kill(pid, signal.SIGSTOP)
    paused = time.monotonic()
    try:
        produce_until(cluster, producer, lambda: not in_isr(follower)(), 20, f"broker {follower} out of the ISR", counter)
        print(f"broker {follower} left the ISR {time.monotonic() - paused:.1f} s after SIGSTOP")
        after = partition_state(cluster, TOPIC)
        assert after["leader"] == leader and sorted(after["isr"]) == sorted(set(st["isr"]) - {follower})
    finally:
        os.kill(pid, signal.SIGCONT)
    produce_until(cluster, producer, in_isr(follower), 30, f"broker {follower} back in the ISR", counter)
    assert producer.flush(30) == 0  # every acks=all write of the pause was acknowledged

    # Two of three replicas down: the ISR is the leader alone.
    for b in sorted(set(cluster.brokers) - {leader}):
        cluster.stop_broker(b)
    wait_state(cluster, TOPIC, lambda s: s["isr"] == [leader], "an ISR of the leader alone", 40)
    strict = Producer({"bootstrap.servers": cluster.brokers[leader].address, "acks": "all", "retries": 0,
                       "message.timeout.ms": 10_000, "enable.idempotence": False})
    strict.produce(TOPIC, b"refused", partition=0, on_delivery=lambda err, msg: errors.append(err))
    strict.flush(20)
    assert len(errors) == 1 and errors[0] is not None
    assert errors[0].code() == KafkaError.NOT_ENOUGH_REPLICAS, errors[0]
