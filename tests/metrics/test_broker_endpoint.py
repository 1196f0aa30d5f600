"""A real broker (in this process, on a real ZooKeeper) serves Kafka's
metric names on ``metrics.port``, with values that follow what real
clients (confluent-kafka) did; with ``metrics.port`` unset it serves none
and times nothing."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import urllib.error
import urllib.request

import pytest

from tests.metrics.scrape import Scrape, scrape
from tests.server.broker_harness import InProcessBroker, free_port

pytestmark = [pytest.mark.async_timeout(180.0)]

RECORDS = 300
CONSUMED = 120


def _url(broker: InProcessBroker) -> str:
    exporter = broker.server.metrics_exporter
    assert exporter is not None and exporter.address is not None
    host, port = exporter.address
    return f"http://{host}:{port}/metrics"


def _bootstrap(broker: InProcessBroker) -> str:
    host, port = broker.server.bound[0]
    return f"{host}:{port}"


def _create_produce_consume(bootstrap: str, topic: str, group: str) -> int:
    """Blocking (a thread): a 1-partition topic, RECORDS records of 100 B,
    a group that reads and commits CONSUMED of them. Returns the bytes of
    the values produced."""
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": "all"})
    for i in range(RECORDS):
        producer.produce(topic, value=b"v" * 100, key=str(i).encode())
    assert producer.flush(30) == 0
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                         "auto.offset.reset": "earliest"})
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        got = 0
        while got < CONSUMED:
            messages = consumer.consume(CONSUMED - got, timeout=10)
            assert messages, "no records within 10 s"
            got += len(messages)
        consumer.commit(offsets=[TopicPartition(topic, 0, CONSUMED)], asynchronous=False)
    finally:
        consumer.close()
    return RECORDS * 100


async def _scrape_until(url: str, ready, within_s: float = 30.0) -> Scrape:
    """Scrape (in a thread: the broker's loop answers it) until ``ready(s)``;
    the last scrape once ``within_s`` passes (the assertions say what is wrong)."""
    s = await asyncio.to_thread(scrape, url)
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(within_s):
            while not ready(s):
                await asyncio.sleep(0.2)
                s = await asyncio.to_thread(scrape, url)
    return s


async def test_a_broker_serves_kafkas_names_with_what_clients_did(zk_chroot, tmp_path) -> None:
    async with InProcessBroker(zk_chroot, tmp_path, **{"metrics.port": "0", "metrics.host": "127.0.0.1",
                                                        "authorizer.class.name": ""}) as broker:
        url = _url(broker)
        await asyncio.to_thread(_create_produce_consume, _bootstrap(broker), "metered", "readers")
        gc.collect()  # a full collection: the loop stands still for it, and the monitor times it
        s = await _scrape_until(url, lambda s: s.total("kafka_consumergroup_lag", consumergroup="readers") > 0)

        # topics: records in, bytes in as the leader's log stored them, bytes out to the consumer
        assert s.value("kafka_server_brokertopicmetrics_messagesin_total", topic="metered") == RECORDS
        stored = s.value("kafka_log_log_size", topic="metered", partition="0")
        assert stored > RECORDS * 100
        assert s.value("kafka_server_brokertopicmetrics_bytesin_total", topic="metered") == stored
        assert s.value("kafka_server_brokertopicmetrics_bytesout_total", topic="metered") > 0
        assert s.value("kafka_server_brokertopicmetrics_totalfetchrequests_total", topic="metered") >= 1
        assert s.value("kafka_server_brokertopicmetrics_totalproducerequests_total", topic="metered") >= 1
        assert s.value("kafka_server_brokertopicmetrics_failedproducerequests_total", topic="metered") == 0
        # the all-topics series (no topic label) includes __consumer_offsets' commits too
        assert s.value("kafka_server_brokertopicmetrics_messagesin_total") >= RECORDS
        assert s.value("kafka_log_log_logendoffset", topic="metered", partition="0") == RECORDS
        assert s.value("kafka_log_log_logstartoffset", topic="metered", partition="0") == 0
        assert s.value("kafka_log_log_numlogsegments", topic="metered", partition="0") == 1

        # replication and the controller of a one-broker cluster
        assert s.value("kafka_controller_kafkacontroller_activecontrollercount") == 1
        assert s.value("kafka_controller_kafkacontroller_offlinepartitionscount") == 0
        assert s.value("kafka_controller_kafkacontroller_preferredreplicaimbalancecount") == 0
        assert s.value("kafka_controller_kafkacontroller_globaltopiccount") == 2  # metered, __consumer_offsets
        assert s.value("kafka_server_replicamanager_offlinereplicacount") == 0
        assert s.value("kafka_server_replicamanager_underreplicatedpartitions") == 0
        assert s.value("kafka_server_replicamanager_undermininsrpartitioncount") == 0
        assert s.value("kafka_server_replicamanager_leadercount") == s.value("kafka_server_replicamanager_partitioncount")
        assert s.value("kafka_server_replicamanager_leadercount") >= 2  # metered-0 and __consumer_offsets-0
        # no leader was lost: no election yet (new partitions get theirs without one, as in Kafka)
        assert s.value("kafka_controller_controllerstats_leaderelectionrateandtimems_count") == 0
        assert s.value("kafka_controller_controllerstats_uncleanleaderelections_total") == 0

        # requests: per type and version, with Kafka's quantiles
        produced = s.total("kafka_network_requestmetrics_requests_total", request="Produce")
        assert produced >= 1
        assert s.value("kafka_network_requestmetrics_totaltimems_count", request="Produce") == produced
        for part in ("totaltimems", "requestqueuetimems", "localtimems", "remotetimems", "responsequeuetimems",
                     "responsesendtimems"):
            for q in ("0.50", "0.75", "0.95", "0.98", "0.99", "0.999"):
                assert s.value(f"kafka_network_requestmetrics_{part}", request="Produce", quantile=q) >= 0
        assert s.value("kafka_network_requestmetrics_totaltimems", request="Produce", quantile="0.99") > 0
        assert s.total("kafka_network_requestmetrics_requests_total", request="FetchConsumer") >= 1
        assert s.total("kafka_network_requestmetrics_requests_total", request="Metadata") >= 1

        # the group's lag: the records it has not committed
        assert s.value("kafka_consumergroup_lag", consumergroup="readers", topic="metered",
                       partition="0") == RECORDS - CONSUMED
        assert s.value("kafka_consumergroup_current_offset", consumergroup="readers", topic="metered",
                       partition="0") == CONSUMED
        assert s.value("kafka_consumergroup_lag_sum", consumergroup="readers", topic="metered") == RECORDS - CONSUMED

        # the loop, ZooKeeper, connections, purgatories, flushes
        assert 0.0 <= s.value("kafka_network_socketserver_networkprocessoravgidlepercent") <= 1.0
        assert s.value("kavka_event_loop_lag_seconds_count") > 0
        assert s.value("kavka_gc_pause_seconds_count", generation="2") >= 1
        assert s.value("kavka_gc_pause_seconds_sum", generation="2") > 0
        assert s.value("kafka_server_zookeeperclientmetrics_zookeeperrequestlatencyms_count") > 0
        assert s.value("kafka_server_sessionexpirelistener_sessionstate", state="CONNECTED") == 1
        assert s.value("kafka_server_sessionexpirelistener_zookeeperexpires_total") == 0
        assert s.value("kafka_server_socket_server_metrics_connection_count", listener="PLAINTEXT",
                       networkProcessor="0") >= 0
        assert s.value("kafka_server_delayedoperationpurgatory_purgatorysize", delayedOperation="Produce") >= 0
        assert s.value("kafka_server_delayedoperationpurgatory_numdelayedoperations", delayedOperation="Fetch") >= 0
        assert "kafka_log_logflushstats_logflushrateandtimems" in s.families
        assert "process_resident_memory_bytes" in s.sample_names

        # acks=0: no response goes out, the request is counted and timed all the same
        await asyncio.to_thread(_produce_acks0, _bootstrap(broker), "metered")
        after = await _scrape_until(url, lambda a: a.value("kafka_server_brokertopicmetrics_messagesin_total",
                                                          topic="metered") == RECORDS + 10)
        assert after.value("kafka_server_brokertopicmetrics_messagesin_total", topic="metered") == RECORDS + 10
        more = after.total("kafka_network_requestmetrics_requests_total", request="Produce")
        assert more > produced
        assert after.value("kafka_network_requestmetrics_totaltimems_count", request="Produce") == more


def _produce_acks0(bootstrap: str, topic: str) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "acks": 0, "linger.ms": 0})
    for i in range(10):
        producer.produce(topic, value=b"z" * 100, key=str(i).encode())
    assert producer.flush(30) == 0


async def test_without_metrics_port_there_is_no_endpoint_and_nothing_is_timed(zk_chroot, tmp_path) -> None:
    port = free_port()
    async with InProcessBroker(zk_chroot, tmp_path, **{"metrics.host": "127.0.0.1"}) as broker:
        assert broker.server.metrics_exporter is None
        assert broker.server.request_metrics is None
        assert all(s.request_metrics is None for s in broker.server.socket_servers)
        with pytest.raises(urllib.error.URLError):
            await asyncio.to_thread(urllib.request.urlopen, f"http://127.0.0.1:{port}/metrics", None, 2)


async def test_a_taken_metrics_port_stops_the_broker_naming_it(zk_chroot, tmp_path) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        broker = InProcessBroker(zk_chroot, tmp_path, **{"metrics.port": str(port), "metrics.host": "127.0.0.1"})
        with pytest.raises(OSError, match="metrics.port"):
            await broker.server.start()
        await broker.server.shutdown()


def _produce_keyless_to_compacted(bootstrap: str) -> list[str]:
    """A keyless record to a compacted topic (refused: INVALID_RECORD) and a
    keyed one; the delivery errors."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic("compacted", 1, 1, config={"cleanup.policy": "compact"})])["compacted"].result(30)
    errors: list[str] = []
    producer = Producer({"bootstrap.servers": bootstrap, "retries": 0, "enable.idempotence": False,
                         "on_delivery": lambda err, msg: errors.append(err.name()) if err else None})
    producer.produce("compacted", value=b"no key")
    producer.flush(30)
    producer.produce("compacted", value=b"keyed", key=b"k")
    assert producer.flush(30) == 0
    return errors


async def test_failed_produce_requests_are_counted_per_topic(zk_chroot, tmp_path) -> None:
    async with InProcessBroker(zk_chroot, tmp_path, **{"metrics.port": "0", "metrics.host": "127.0.0.1",
                                                        "authorizer.class.name": ""}) as broker:
        errors = await asyncio.to_thread(_produce_keyless_to_compacted, _bootstrap(broker))
        assert errors == ["INVALID_RECORD"]
        s = await asyncio.to_thread(scrape, _url(broker))
        assert s.value("kafka_server_brokertopicmetrics_failedproducerequests_total", topic="compacted") == 1
        assert s.value("kafka_server_brokertopicmetrics_totalproducerequests_total", topic="compacted") == 2
        assert s.value("kafka_server_brokertopicmetrics_messagesin_total", topic="compacted") == 1
        assert s.value("kafka_server_brokertopicmetrics_failedproducerequests_total") == 1  # all topics
        assert s.value("kafka_server_brokertopicmetrics_failedfetchrequests_total") == 0
