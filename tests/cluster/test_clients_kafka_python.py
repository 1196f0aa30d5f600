"""kafka-python against a 3-broker Kavka cluster: create a topic, produce
10,000 records with acks=1 and 10,000 with acks=all, consume them with
``assign`` from the earliest offset and compare every (partition, offset,
key, value, timestamp), list offsets (beginning, end, by time), describe
and alter configs (incremental, legacy, reset), delete the topic; then
check that every request was sent at kafka-python's preferred version
(as captured in ``tests/protocol/golden/versions.json``).

Idempotence: kafka-python 3.0 turns it on by default (KIP-679) when the
broker version it infers from ApiVersions is 0.11 or later, and Kavka
serves InitProducerId (KIP-98): the producers here use the default, so
the acks=all and compressed runs are idempotent (InitProducerId, then
batches with producer id and sequences); with acks=1 or 0 kafka-python
drops idempotence by itself, with a warning.
"""

from __future__ import annotations

import time

import kafka
import kafka.errors as Errors
import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient, NewPartitions, NewTopic

from .clients.harness import (
    ACKS0_RECORDS,
    ALTERED_KEY,
    ALTERED_VALUE,
    CODECS,
    DEFAULT_RETENTION_MS,
    EXTRA_PARTITIONS,
    PARTITIONS,
    TOPIC_CONFIGS,
    HRec,
    Plan,
    Rec,
    assert_known_versions,
    assert_preferred_versions,
    assert_rolled,
    assert_same_hrecords,
    assert_same_records,
    extras_plan,
    proxied_cluster,
)

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

CLIENT_ID = "kavka-test-kafka-python"
TOPIC = "clients-kafka-python"
# kafka-python 3.0's choice for each API this test uses: the reference
# table, plus AlterConfigs v2 and IncrementalAlterConfigs v1 — its own
# maxima (kafka.protocol.admin), which Kavka serves.
EXPECTED_VERSIONS = {0: 9, 1: 12, 2: 9, 3: 13, 18: 4, 19: 7, 20: 6, 22: 4, 32: 4, 33: 2, 44: 1}


@pytest.fixture(scope="module")
def cluster(zookeeper, tmp_path_factory):
    yield from proxied_cluster(zookeeper, tmp_path_factory)


def _servers(cluster) -> list[str]:
    return cluster.bootstrap.split(",")


def _wait_leaders(admin: KafkaAdminClient, topic: str) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        (md,) = admin.describe_topics([topic])
        if md["error_code"] == 0 and len(md["partitions"]) == PARTITIONS \
                and all(p["leader_id"] >= 0 for p in md["partitions"]):
            return
        time.sleep(0.2)
    raise AssertionError(f"topic {topic} has no leader for every partition after 30 s")


def _produce(cluster, plan: Plan) -> None:
    for run, acks in zip(plan.runs, (1, "all"), strict=True):
        producer = KafkaProducer(bootstrap_servers=_servers(cluster), client_id=CLIENT_ID, acks=acks, linger_ms=5)
        try:
            futures = [producer.send(TOPIC, value=r.value, key=r.key, partition=r.partition,
                                     timestamp_ms=r.timestamp) for r in run]
            producer.flush(60)
            metadata = [f.get(timeout=10) for f in futures]
        finally:
            producer.close(10)
        # The offsets the broker returned in the Produce responses.
        assert [(m.partition, m.offset) for m in metadata] == [(r.partition, r.offset) for r in run], \
            f"acks={acks}: acknowledged offsets differ from the send order"


def _consume(cluster, plan: Plan) -> list[Rec]:
    consumer = KafkaConsumer(bootstrap_servers=_servers(cluster), client_id=CLIENT_ID, group_id=None,
                             enable_auto_commit=False)
    try:
        tps = [TopicPartition(TOPIC, p) for p in range(PARTITIONS)]
        consumer.assign(tps)
        consumer.seek_to_beginning()
        got: list[Rec] = []
        deadline = time.monotonic() + 60
        while len(got) < len(plan.expected) and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=1000, max_records=5000).values():
                got.extend(Rec(m.partition, m.offset, m.key, m.value, m.timestamp) for m in records)
        assert {tp.partition: consumer.position(tp) for tp in tps} == dict(enumerate(plan.end_offsets))

        assert consumer.beginning_offsets(tps) == {tp: 0 for tp in tps}
        assert consumer.end_offsets(tps) == {tp: plan.end_offsets[tp.partition] for tp in tps}
        mid = plan.mid_timestamp()
        found = consumer.offsets_for_times({tp: mid for tp in tps})
        assert {tp.partition: f.offset for tp, f in found.items()} == \
            {p: plan.offset_for_time(p, mid) for p in range(PARTITIONS)}
        after = plan.base + 10 * len(plan.expected)
        assert consumer.offsets_for_times({tp: after for tp in tps}) == {tp: None for tp in tps}
        return got
    finally:
        consumer.close()


def _topic_configs(admin: KafkaAdminClient) -> dict:
    described = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, TOPIC)], config_filter="all")
    return described["topic"][TOPIC]


def _configs(admin: KafkaAdminClient) -> None:
    entries = _topic_configs(admin)
    assert (entries[ALTERED_KEY]["value"], entries[ALTERED_KEY]["config_source"]) == \
        (DEFAULT_RETENTION_MS, "DEFAULT_CONFIG")
    assert (entries["segment.bytes"]["value"], entries["segment.bytes"]["config_source"]) == \
        (TOPIC_CONFIGS["segment.bytes"], "DYNAMIC_TOPIC_CONFIG")

    # IncrementalAlterConfigs (kafka-python's default on a 2.3+ broker).
    result = admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, TOPIC, configs={ALTERED_KEY: ALTERED_VALUE})])
    assert result == {"topic": {TOPIC: "OK"}}
    entries = _topic_configs(admin)
    assert (entries[ALTERED_KEY]["value"], entries[ALTERED_KEY]["config_source"]) == \
        (ALTERED_VALUE, "DYNAMIC_TOPIC_CONFIG")

    # Legacy AlterConfigs: kafka-python re-sends the other modified keys
    # itself (it reads them with DescribeConfigs), so segment.bytes stays.
    result = admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, TOPIC, configs={ALTERED_KEY: "7200000"})],
                                 incremental=False)
    assert result == {"topic": {TOPIC: "OK"}}
    entries = _topic_configs(admin)
    assert entries[ALTERED_KEY]["value"] == "7200000"
    assert entries["segment.bytes"]["value"] == TOPIC_CONFIGS["segment.bytes"]

    # Reset = IncrementalAlterConfigs DELETE: back to the default.
    result = admin.reset_configs([ConfigResource(ConfigResourceType.TOPIC, TOPIC, configs=[ALTERED_KEY])])
    assert result == {"topic": {TOPIC: "OK"}}
    entries = _topic_configs(admin)
    assert (entries[ALTERED_KEY]["value"], entries[ALTERED_KEY]["config_source"]) == \
        (DEFAULT_RETENTION_MS, "DEFAULT_CONFIG")


def test_kafka_python_round_trip(cluster) -> None:
    admin = KafkaAdminClient(bootstrap_servers=_servers(cluster), client_id=CLIENT_ID)
    try:
        response = admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1, topic_configs=dict(TOPIC_CONFIGS))])
        assert [(t["name"], t["error_code"]) for t in response["topics"]] == [(TOPIC, 0)], response

        plan = Plan(int(time.time() * 1000) - 600_000)
        _wait_leaders(admin, TOPIC)
        _produce(cluster, plan)
        assert_same_records(_consume(cluster, plan), plan, "kafka-python")
        assert_rolled(cluster, TOPIC)
        _configs(admin)

        response = admin.delete_topics([TOPIC])
        assert [(t["name"], t["error_code"]) for t in response["topics"]] == [(TOPIC, 0)], response
        deadline = time.monotonic() + 30
        while TOPIC in admin.list_topics():
            assert time.monotonic() < deadline, f"{TOPIC} still listed 30 s after its deletion"
            time.sleep(0.2)
    finally:
        admin.close()

    negotiated = assert_preferred_versions(cluster.proxy.calls(CLIENT_ID), EXPECTED_VERSIONS, "kafka-python")
    assert {name for name, _ in negotiated.software} == {"kafka-python"}  # KIP-511, ApiVersions v3+
    print(f"kafka-python {kafka.__version__}: {negotiated.describe()}")


EXTRAS_TOPIC = "clients-kafka-python-extras"


def test_kafka_python_compression_headers_and_admin_extras(cluster) -> None:
    """Every codec with headers, acks=0, the admin errors Kafka returns,
    small partition fetches, CreatePartitions, DeleteRecords,
    DescribeCluster and DescribeLogDirs."""
    client_id = f"{CLIENT_ID}-extras"
    servers = _servers(cluster)
    admin = KafkaAdminClient(bootstrap_servers=servers, client_id=client_id)
    try:
        admin.create_topics([NewTopic(EXTRAS_TOPIC, EXTRA_PARTITIONS, 1)])
        with pytest.raises(Errors.TopicAlreadyExistsError):
            admin.create_topics([NewTopic(EXTRAS_TOPIC, 1, 1)])
        with pytest.raises(Errors.InvalidConfigurationError):
            admin.create_topics([NewTopic("clients-kafka-python-bad", 1, 1, topic_configs={"cleanup.policy": "bogus"})])
        with pytest.raises(Errors.UnknownTopicOrPartitionError):
            admin.delete_topics(["clients-kafka-python-missing"])

        plan = extras_plan()
        for codec in CODECS + ("acks0",):
            options = {"acks": 0} if codec == "acks0" else {"compression_type": codec, "linger_ms": 20}
            producer = KafkaProducer(bootstrap_servers=servers, client_id=client_id, **options)
            try:
                futures = [producer.send(EXTRAS_TOPIC, value=r.value, key=r.key, partition=r.partition,
                                         headers=list(r.headers)) for r in plan[codec]]
                producer.flush(30)
                assert all(f.succeeded() for f in futures), f"{codec}: {[f.exception for f in futures][:3]}"
            finally:
                producer.close(10)

        consumer = KafkaConsumer(bootstrap_servers=servers, client_id=client_id, group_id=None,
                                 max_partition_fetch_bytes=2000)
        try:
            tps = [TopicPartition(EXTRAS_TOPIC, p) for p in range(EXTRA_PARTITIONS)]
            consumer.assign(tps)
            consumer.seek_to_beginning()
            want = len(CODECS) * len(plan[CODECS[0]]) + ACKS0_RECORDS
            got: list[HRec] = []
            deadline = time.monotonic() + 60
            while len(got) < want and time.monotonic() < deadline:
                for records in consumer.poll(timeout_ms=1000).values():
                    got.extend(HRec(m.partition, m.offset, m.key, m.value, tuple(m.headers)) for m in records)
        finally:
            consumer.close()
        assert_same_hrecords(got, plan, "kafka-python")

        result = admin.create_partitions({EXTRAS_TOPIC: NewPartitions(4)})
        assert [(r.name, r.error_code) for r in result.results] == [(EXTRAS_TOPIC, 0)]
        deleted = admin.delete_records({TopicPartition(EXTRAS_TOPIC, 0): 1000})
        assert deleted[TopicPartition(EXTRAS_TOPIC, 0)]["low_watermark"] == 1000

        described = admin.describe_cluster()
        assert sorted(b["broker_id"] for b in described["brokers"]) == sorted(cluster.brokers)
        assert {(b["host"], b["port"]) for b in described["brokers"]} == \
            {("127.0.0.1", p) for p in cluster.proxy_ports.values()}
        log_dirs = admin.describe_log_dirs()
        sizes = {(t["name"], p["partition_index"]): p["partition_size"]
                 for broker in log_dirs for d in broker["log_dirs"] for t in d["topics"] for p in t["partitions"]}
        assert sizes.get((EXTRAS_TOPIC, 0), 0) > 0 and (EXTRAS_TOPIC, 1) in sizes
    finally:
        admin.close()

    seen = assert_known_versions(cluster.proxy.calls(client_id), EXPECTED_VERSIONS, "kafka-python")
    print(f"kafka-python extras: {seen.describe()}")
