"""End to end: the metrics of a real 3-broker cluster (broker processes,
a real ZooKeeper) scraped over HTTP while a real client (confluent-kafka)
produces and consumes and brokers are killed.

- every broker serves its endpoint; the active controller count sums to 1;
- bytes in across the brokers equals the bytes the leaders' logs stored,
  messages in the records produced; bytes out follow the consumer;
- a group's lag is the records it has not read;
- a follower killed (kill -9): under-replicated partitions go from 0 to
  the partitions it hosts, and back to 0 once it is restarted and caught up;
- the controller killed: the count never sums above 1 and is back to 1 on
  another broker."""

from __future__ import annotations

import json
import time

import pytest

from tests.metrics.scrape import Scrape, scrape

from .cluster_helpers import ZkView, create_topic, produce, wait_until

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

TOPIC = "metered"
PARTITIONS = 6
PER_PARTITION = 500
READ_PER_PARTITION = 200
GROUP = "lagging"
CONFIG = {
    "replica.lag.time.max.ms": "3000",
    "replica.fetch.wait.max.ms": "200",
    "zookeeper.session.timeout.ms": "6000",
    "offsets.topic.num.partitions": "4",
    "controlled.shutdown.enable": "false",
}


def scrape_all(cluster, brokers=None) -> dict[int, Scrape]:
    ids = sorted(cluster.brokers) if brokers is None else sorted(brokers)
    return {b: scrape(cluster.brokers[b].metrics_url) for b in ids}


def total(scrapes: dict[int, Scrape], name: str, **labels: str) -> float:
    return sum(s.total(name, **labels) for s in scrapes.values())


def hosted_partitions(cluster, broker_id: int) -> int:
    """Partitions whose replica set names ``broker_id`` (from ZooKeeper)."""
    with ZkView(cluster) as zk:
        count = 0
        for topic in zk.client.get_children("/brokers/topics"):
            data, _ = zk.client.get(f"/brokers/topics/{topic}")
            count += sum(1 for replicas in json.loads(data)["partitions"].values() if broker_id in replicas)
        return count


def consume_and_commit(cluster) -> int:
    """The group reads READ_PER_PARTITION records of each partition and
    commits its positions; returns how many it read."""
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": GROUP, "enable.auto.commit": False,
                  "auto.offset.reset": "earliest"})
    read = dict.fromkeys(range(PARTITIONS), 0)
    try:
        c.assign([TopicPartition(TOPIC, p, 0) for p in read])
        deadline = time.monotonic() + 60
        while any(n < READ_PER_PARTITION for n in read.values()):
            assert time.monotonic() < deadline, f"read only {read}"
            m = c.poll(0.2)
            if m is None or m.error() is not None or read[m.partition()] >= READ_PER_PARTITION:
                continue
            read[m.partition()] += 1
            if read[m.partition()] == READ_PER_PARTITION:
                c.pause([TopicPartition(TOPIC, m.partition())])
        c.commit(offsets=[TopicPartition(TOPIC, p, READ_PER_PARTITION) for p in read], asynchronous=False)
    finally:
        c.close()
    return sum(read.values())


def test_metrics_follow_the_cluster_through_produce_consume_and_broker_kills(make_cluster):
    cluster = make_cluster(brokers=3, config=CONFIG)
    assert len(cluster.metrics_urls) == 3
    with ZkView(cluster) as zk:
        controller = zk.controller()
    assert controller is not None
    controller_id = controller[0]

    s = scrape_all(cluster)
    assert total(s, "kafka_controller_kafkacontroller_activecontrollercount") == 1
    assert s[controller_id].value("kafka_controller_kafkacontroller_activecontrollercount") == 1

    create_topic(cluster, TOPIC, partitions=PARTITIONS, replication_factor=3)
    wait_until(lambda: total(scrape_all(cluster), "kafka_server_replicamanager_partitioncount") == 3 * PARTITIONS
               and total(scrape_all(cluster), "kafka_server_replicamanager_underreplicatedpartitions") == 0,
               60, "every replica hosted and in sync")
    produced = PARTITIONS * PER_PARTITION
    produce(cluster, TOPIC, {p: [b"%05d" % i + b"x" * 95 for i in range(PER_PARTITION)] for p in range(PARTITIONS)})

    # bytes and messages in: counted once per partition, by its leader, as its log stored them
    def in_matches_logs() -> dict[int, Scrape] | None:
        s = scrape_all(cluster)
        stored = sum(max(b.value("kafka_log_log_size", topic=TOPIC, partition=str(p)) for b in s.values())
                     for p in range(PARTITIONS))
        ends = [b.value("kafka_log_log_logendoffset", topic=TOPIC, partition=str(p))
                for b in s.values() for p in range(PARTITIONS)]
        if ends != [PER_PARTITION] * len(ends):
            return None  # followers still fetching
        assert total(s, "kafka_server_brokertopicmetrics_bytesin_total", topic=TOPIC) == stored
        return s

    s = wait_until(in_matches_logs, 60, "every replica at the log end")
    assert total(s, "kafka_server_brokertopicmetrics_messagesin_total", topic=TOPIC) == produced
    assert total(s, "kafka_server_brokertopicmetrics_bytesin_total", topic=TOPIC) > produced * 100
    assert total(s, "kafka_server_replicamanager_leadercount") == PARTITIONS
    assert total(s, "kafka_network_requestmetrics_requests_total", request="Produce") >= 1
    assert total(s, "kafka_network_requestmetrics_requests_total", request="FetchFollower") >= 1

    read = consume_and_commit(cluster)
    lag = wait_until(lambda: (lambda s: total(s, "kafka_consumergroup_lag", consumergroup=GROUP) == produced - read
                              and s)(scrape_all(cluster)), 30, f"the lag of {GROUP} at {produced - read}")
    assert len([1 for b in lag.values() if b.series("kafka_consumergroup_lag")]) == 1  # its coordinator only
    for p in range(PARTITIONS):
        assert total(lag, "kafka_consumergroup_lag", consumergroup=GROUP, topic=TOPIC,
                     partition=str(p)) == PER_PARTITION - READ_PER_PARTITION
    assert total(lag, "kafka_server_brokertopicmetrics_bytesout_total", topic=TOPIC) > read * 100
    assert total(lag, "kafka_server_replicamanager_leadercount") == PARTITIONS + 4  # and __consumer_offsets'

    # a follower killed: its partitions are under-replicated on the survivors, then in sync again
    victim = next(b for b in sorted(cluster.brokers) if b != controller_id)
    survivors = set(cluster.brokers) - {victim}
    hosted = hosted_partitions(cluster, victim)
    assert hosted == PARTITIONS + 4
    elections_before = scrape_all(cluster, {controller_id})[controller_id].value(
        "kafka_controller_controllerstats_leaderelectionrateandtimems_count")
    cluster.kill_broker(victim)
    wait_until(lambda: total(scrape_all(cluster, survivors), "kafka_server_replicamanager_underreplicatedpartitions")
               == hosted, 60, f"{hosted} under-replicated partitions with broker {victim} down")
    s = scrape_all(cluster, survivors)
    assert total(s, "kafka_server_replicamanager_leadercount") == PARTITIONS + 4  # the victim's leaderships moved
    # (the ISR lost the victim by the leaders' shrinks or the controller's failover, whichever came
    # first; Kafka's IsrShrinksPerSec counts only the former, so its count is not fixed here)
    assert s[controller_id].value("kafka_controller_controllerstats_leaderelectionrateandtimems_count") \
        > elections_before
    assert s[controller_id].value("kafka_controller_kafkacontroller_offlinepartitionscount") == 0
    # the victim led some partitions (leaders spread over 3 brokers): they are led by another replica now
    assert s[controller_id].value("kafka_controller_kafkacontroller_preferredreplicaimbalancecount") >= 1
    cluster.start_broker(victim)
    cluster.wait_ready({victim}, 60)
    wait_until(lambda: total(scrape_all(cluster), "kafka_server_replicamanager_underreplicatedpartitions") == 0,
               60, "no under-replicated partition once the follower is back")
    assert total(scrape_all(cluster), "kafka_server_replicamanager_isrexpands_total") >= 1

    # the controller killed: never two, and one again on another broker
    cluster.kill_broker(controller_id)
    others = set(cluster.brokers) - {controller_id}

    def new_controller() -> list[int] | None:
        s = scrape_all(cluster, others)
        count = total(s, "kafka_controller_kafkacontroller_activecontrollercount")
        assert count <= 1, f"{count} active controllers"
        if count != 1:
            return None
        return [b for b, m in s.items() if m.value("kafka_controller_kafkacontroller_activecontrollercount")]

    (successor,) = wait_until(new_controller, 60, "a new active controller")
    assert successor != controller_id
    cluster.start_broker(controller_id)
    cluster.wait_ready({controller_id}, 60)
    s = scrape_all(cluster)
    assert total(s, "kafka_controller_kafkacontroller_activecontrollercount") == 1
    assert s[successor].value("kafka_controller_kafkacontroller_activecontrollercount") == 1
    assert s[controller_id].value("kafka_server_sessionexpirelistener_sessionstate", state="CONNECTED") == 1


def read_and_commit(cluster, group: str, topic: str, count: int) -> None:
    """``group`` reads ``count`` records of partition 0 and commits after them."""
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group, "enable.auto.commit": False,
                  "auto.offset.reset": "earliest"})
    try:
        c.assign([TopicPartition(topic, 0, 0)])
        read = 0
        deadline = time.monotonic() + 30
        while read < count:
            assert time.monotonic() < deadline, f"read {read} of {count} from {topic}"
            m = c.poll(0.2)
            if m is not None and m.error() is None:
                read += 1
        c.commit(offsets=[TopicPartition(topic, 0, count)], asynchronous=False)
    finally:
        c.close()


def test_lag_of_a_partition_the_coordinator_does_not_host_is_asked_of_its_leader(make_cluster):
    cluster = make_cluster(brokers=3, config=CONFIG)
    group = "remote-readers"
    create_topic(cluster, "anchor", partitions=1, replication_factor=3)
    produce(cluster, "anchor", {0: [b"a"] * 10})
    read_and_commit(cluster, group, "anchor", 4)
    (coordinator,) = wait_until(lambda: [b for b, s in scrape_all(cluster).items()
                                         if s.series("kafka_consumergroup_lag")], 30, "the group's coordinator")
    assert scrape_all(cluster, {coordinator})[coordinator].value(
        "kafka_consumergroup_lag", consumergroup=group, topic="anchor", partition="0") == 6
    elsewhere = next(b for b in sorted(cluster.brokers) if b != coordinator)
    create_topic(cluster, "elsewhere", assignment=[[elsewhere]])
    produce(cluster, "elsewhere", {0: [b"e%03d" % i for i in range(100)]})
    read_and_commit(cluster, group, "elsewhere", 30)
    # the coordinator does not host "elsewhere": it asks its leader for the high watermark
    wait_until(lambda: scrape_all(cluster, {coordinator})[coordinator].total(
        "kafka_consumergroup_lag", consumergroup=group, topic="elsewhere") == 70, 30,
        f"the lag of {group} on a partition only broker {elsewhere} hosts")
