"""Client quotas end to end: a real broker process, real ZooKeeper, quotas
set with ``kavka configs`` and real clients (confluent-kafka, which honours
``throttle_time_ms``; raw requests where the answer itself is the point).

- producer_byte_rate on a client id: two producers at once, the throttled
  one kept near its quota while the other is not slowed, its responses
  carrying throttle times;
- consumer_byte_rate on a (user, client id) entity: the same with two
  consumers, and a throttled Fetch answered with no data;
- controller_mutation_rate: a strict (CreateTopics v7) creation refused
  with THROTTLING_QUOTA_EXCEEDED once the burst is spent;
- request_percentage: requests answered with a throttle time;
- changed live: a quota removed stops throttling.

The broker samples rates over 3 windows of 1 s (``quota.window.num``), so a
client's first burst is two seconds of its quota. The rate bounds are
generous (throttled < 2x the quota, unthrottled > 5x it) and every loop is
bounded by time and count.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kavka.client.admin import AdminError, KafkaAdmin
from kavka.client.admin_types import NewTopic as KavkaNewTopic
from kavka.common.errors import ErrorCode
from kavka.protocol.messages import FetchRequest, MetadataRequest
from kavka.tools.client_cli import open_cluster
from tests.metrics.scrape import scrape

from .cluster_helpers import RawConnection, wait_until

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

QUOTA = 100_000  # bytes/s
WINDOW_S = 6.0
CONFIG = {"quota.window.num": "3", "quota.window.size.seconds": "1", "controller.quota.window.num": "3",
          "num.partitions": "1"}


@pytest.fixture(scope="module")
def cluster(zookeeper, tmp_path_factory):
    from kavka.tools.cluster import LocalCluster

    c = LocalCluster(1, tmp_path_factory.mktemp("quotas"), zookeeper=f"{zookeeper}/quotas-{time.time_ns()}",
                     config=CONFIG)
    c.start()
    yield c
    c.stop()


def configs(cluster, *args: str) -> str:
    r = subprocess.run([sys.executable, "-m", "kavka", "configs", "--bootstrap-server", cluster.bootstrap, *args],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout


def applied(cluster, entity: str) -> int:
    broker = next(iter(cluster.brokers.values()))
    return broker.log_path.read_text(errors="replace").count(f"applied {entity} config of")


def set_quota(cluster, entity_args: list[str], change: list[str], logged_as: str) -> None:
    """Change a quota with kavka configs and wait until the broker applied it."""
    before = applied(cluster, logged_as)
    configs(cluster, "--alter", *entity_args, *change)
    wait_until(lambda: applied(cluster, logged_as) > before, 30, f"the broker to apply {logged_as}")


def create_topic(cluster, name: str) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    for f in admin.create_topics([NewTopic(name, 1, 1)]).values():
        f.result(30)


class ProduceRun(threading.Thread):
    """confluent-kafka producing 1 KB records for WINDOW_S; ``rate`` is the
    bytes acknowledged per second within the window; ``throttle_max`` the
    largest throttle time librdkafka reported in its statistics."""

    def __init__(self, cluster, topic: str, client_id: str) -> None:
        super().__init__(daemon=True)
        self.acked = 0
        self.throttle_max = 0
        self.rate = 0.0

        def stats(text: str) -> None:
            for b in json.loads(text).get("brokers", {}).values():
                self.throttle_max = max(self.throttle_max, b.get("throttle", {}).get("max", 0))

        self.producer = Producer({"bootstrap.servers": cluster.bootstrap, "client.id": client_id, "acks": 1,
                                  "linger.ms": 5, "batch.size": 16384, "queue.buffering.max.kbytes": 4096,
                                  "statistics.interval.ms": 500, "stats_cb": stats})
        self.topic = topic

    def _on_delivery(self, err, msg) -> None:
        if err is None:
            self.acked += len(msg.value())

    def run(self) -> None:
        payload = b"x" * 1000
        start = time.monotonic()
        while time.monotonic() - start < WINDOW_S:
            try:
                self.producer.produce(self.topic, payload, on_delivery=self._on_delivery)
            except BufferError:
                self.producer.poll(0.05)
            self.producer.poll(0)
        self.rate = self.acked / (time.monotonic() - start)
        self.producer.poll(1.0)  # a last statistics callback
        self.producer.purge()
        self.producer.flush(10)


def test_producer_byte_rate_by_client_id(cluster):
    create_topic(cluster, "produced")
    set_quota(cluster, ["--entity-type", "clients", "--entity-name", "slow-producer"],
              ["--add-config", f"producer_byte_rate={QUOTA}"], "clients")
    assert configs(cluster, "--describe", "--client", "slow-producer") == \
        f"Quota configs for client-id 'slow-producer' are producer_byte_rate={float(QUOTA)}\n"
    slow, fast = ProduceRun(cluster, "produced", "slow-producer"), ProduceRun(cluster, "produced", "fast-producer")
    slow.start()
    fast.start()
    slow.join(WINDOW_S + 30)
    fast.join(WINDOW_S + 30)
    print(f"producer_byte_rate={QUOTA} B/s: throttled client {slow.rate:.0f} B/s "
          f"(max throttle {slow.throttle_max} ms), other client {fast.rate:.0f} B/s")
    assert slow.rate < 2 * QUOTA
    assert fast.rate > 5 * QUOTA
    assert slow.throttle_max > 0 and fast.throttle_max == 0
    # the broker's metrics say who was throttled, by which quota (Kafka's throttle-time per client)
    metrics = scrape(cluster.metrics_urls[0])
    assert metrics.total("kafka_server_quota_throttle_time", resource="Produce", clientId="slow-producer") > 0
    assert not [s for s in metrics.series("kafka_server_quota_throttle_time") if s["clientId"] == "fast-producer"]

    # removed live: the same client id runs free again
    set_quota(cluster, ["--client", "slow-producer"], ["--delete-config", "producer_byte_rate"], "clients")
    again = ProduceRun(cluster, "produced", "slow-producer")
    again.run()
    assert again.rate > 5 * QUOTA


def fill(cluster, topic: str, nbytes: int) -> None:
    p = Producer({"bootstrap.servers": cluster.bootstrap, "client.id": "filler", "batch.size": 65536,
                  "linger.ms": 5})
    for _ in range(nbytes // 1000):
        while True:
            try:
                p.produce(topic, b"y" * 1000)
                break
            except BufferError:
                p.poll(0.1)
    assert p.flush(60) == 0


def consume_rate(cluster, topic: str, client_id: str, total: int) -> float:
    """Bytes per second one consumer reads from offset 0 within WINDOW_S
    (stopping early once it has everything)."""
    c = Consumer({"bootstrap.servers": cluster.bootstrap, "client.id": client_id, "group.id": f"g-{client_id}",
                  "enable.auto.commit": False, "fetch.wait.max.ms": 100})
    try:
        c.assign([TopicPartition(topic, 0, 0)])
        got, start = 0, time.monotonic()
        while time.monotonic() - start < WINDOW_S and got < total:
            msg = c.poll(0.2)
            if msg is not None and msg.error() is None:
                got += len(msg.value())
        return got / (time.monotonic() - start)
    finally:
        c.close()


def test_consumer_byte_rate_by_user_and_client_id(cluster):
    create_topic(cluster, "consumed")
    total = 3_000_000
    fill(cluster, "consumed", total)
    # Unauthenticated clients are user ANONYMOUS: the KIP-55 (user, client id) level.
    set_quota(cluster, ["--entity-type", "users", "--entity-name", "ANONYMOUS", "--entity-type", "clients",
                        "--entity-name", "slow-consumer"], ["--add-config", f"consumer_byte_rate={QUOTA}"], "users")
    rates: dict[str, float] = {}
    threads = [threading.Thread(target=lambda cid=cid: rates.__setitem__(cid, consume_rate(cluster, "consumed", cid,
                                                                                         total)))
               for cid in ("slow-consumer", "fast-consumer")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(WINDOW_S + 60)
    print(f"consumer_byte_rate={QUOTA} B/s: throttled client {rates['slow-consumer']:.0f} B/s, "
          f"other client {rates['fast-consumer']:.0f} B/s")
    assert rates["slow-consumer"] < 2 * QUOTA
    assert rates["fast-consumer"] > 5 * QUOTA

    # A throttled fetch returns no data, with its throttle time.
    request = FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=50 << 20, isolation_level=0,
                           session_id=0, session_epoch=-1, topics=[FetchRequest.Topics(topic="consumed", partitions=[
                               FetchRequest.Topics.Partitions(partition=0, fetch_offset=0, log_start_offset=-1,
                                                              partition_max_bytes=1 << 20)])])
    with RawConnection(cluster.bootstrap) as conn:
        for _ in range(20):
            response = conn.request(request, 11, client_id="slow-consumer")
            if response.throttle_time_ms > 0:
                break
            assert response.responses[0].partitions[0].records  # data until the quota is exceeded
        else:
            raise AssertionError("20 fetches of the whole partition were never throttled")
        assert response.responses == []


def test_controller_mutation_rate(cluster):
    set_quota(cluster, ["--client", "mutator"], ["--add-config", "controller_mutation_rate=1"], "clients")

    async def main() -> None:
        kavka_cluster = await open_cluster(cluster.bootstrap, client_id="mutator")
        try:
            admin = KafkaAdmin(kavka_cluster)
            # burst: 3 windows x 1 s x 1 partition/s; the first creation may overdraw it
            await admin.create_topics([KavkaNewTopic("mutated-1", 10, 1)])
            with pytest.raises(AdminError) as e:
                await admin.create_topics([KavkaNewTopic("mutated-2", 1, 1)])
            assert e.value.errors["mutated-2"].code == ErrorCode.THROTTLING_QUOTA_EXCEEDED
        finally:
            await kavka_cluster.close()

    asyncio.run(main())
    assert "mutated-2" not in AdminClient({"bootstrap.servers": cluster.bootstrap}).list_topics(timeout=10).topics


def test_request_percentage(cluster):
    set_quota(cluster, ["--client", "busy"], ["--add-config", "request_percentage=0.001"], "clients")
    with RawConnection(cluster.bootstrap) as conn:
        for _ in range(200):
            response = conn.request(MetadataRequest(topics=None), 9, client_id="busy")
            if response.throttle_time_ms > 0:
                break
        else:
            raise AssertionError("200 Metadata requests at 0.001% of a handler's time were never throttled")
        assert response.throttle_time_ms <= 1000  # capped at one window, as Kafka's request quota
