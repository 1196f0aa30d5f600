"""confluent-kafka (librdkafka) against a 3-broker Kavka cluster: create a
topic, produce 10,000 records with acks=1 and 10,000 with acks=all,
consume them with ``assign`` from the earliest offset and compare every
(partition, offset, key, value, timestamp), list offsets (earliest, latest,
by time) through the consumer and the admin client, describe and alter
configs (incremental and legacy), delete the topic; then check that every
request was sent at librdkafka's preferred version
(as captured in ``tests/protocol/golden/versions.json``).

All requests go through the recording proxy of ``clients.harness``.
"""

from __future__ import annotations

import time
import warnings

import confluent_kafka
import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewPartitions,
    NewTopic,
    OffsetSpec,
    ResourceType,
)

from .clients.harness import (
    ACKS0_RECORDS,
    ALTERED_KEY,
    ALTERED_VALUE,
    CODECS,
    DEFAULT_RETENTION_MS,
    EXTRA_PARTITIONS,
    PARTITIONS,
    PRODUCER_BATCH_BYTES,
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

CLIENT_ID = "kavka-test-confluent"
TOPIC = "clients-confluent"
# librdkafka 2.16's choice for each API this test uses: the reference
# table, plus AlterConfigs v2 and IncrementalAlterConfigs v1, which are
# both the highest versions Kafka defines (and Kavka serves), so nothing
# lower would be a client's preference.
EXPECTED_VERSIONS = {0: 10, 1: 16, 2: 7, 3: 13, 10: 2, 18: 3, 19: 4, 20: 4, 32: 1, 33: 2, 44: 1}


@pytest.fixture(scope="module")
def cluster(zookeeper, tmp_path_factory):
    yield from proxied_cluster(zookeeper, tmp_path_factory)


def _conf(cluster, **extra) -> dict:
    return {"bootstrap.servers": cluster.bootstrap, "client.id": CLIENT_ID, **extra}


def _wait_leaders(admin: AdminClient, topic: str, partitions: int = PARTITIONS) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        md = admin.list_topics(topic, timeout=10).topics.get(topic)
        if md is not None and md.error is None and len(md.partitions) == partitions \
                and all(p.leader >= 0 for p in md.partitions.values()):
            return
        time.sleep(0.2)
    raise AssertionError(f"topic {topic} has no leader for each of {partitions} partitions after 30 s")


def _produce(cluster, plan: Plan) -> None:
    for run, acks in zip(plan.runs, ("1", "all"), strict=True):
        producer = Producer(_conf(cluster, acks=acks, **{"linger.ms": 5, "batch.size": PRODUCER_BATCH_BYTES}))
        delivered: list[tuple] = []

        def on_delivery(err, msg, delivered: list[tuple] = delivered):
            delivered.append((err, msg.partition(), msg.offset(), msg.key(), msg.value()))

        for r in run:
            producer.produce(TOPIC, value=r.value, key=r.key, partition=r.partition, timestamp=r.timestamp,
                             on_delivery=on_delivery)
            producer.poll(0)
        assert producer.flush(60) == 0, f"acks={acks}: records still queued after 60 s"
        errors = [d for d in delivered if d[0] is not None]
        assert not errors, f"acks={acks}: {len(errors)} failed deliveries, first {errors[:3]}"
        # The offsets the broker returned in the Produce responses.
        assert sorted((p, o, k, v) for _, p, o, k, v in delivered) == \
            sorted((r.partition, r.offset, r.key, r.value) for r in run)


def _consume(cluster, plan: Plan) -> list[Rec]:
    consumer = Consumer(_conf(cluster, **{"group.id": "unused-assign-only", "enable.auto.commit": False,
                                          "enable.partition.eof": True}))
    try:
        consumer.assign([TopicPartition(TOPIC, p, confluent_kafka.OFFSET_BEGINNING) for p in range(PARTITIONS)])
        got: list[Rec] = []
        at_eof: set[int] = set()
        deadline = time.monotonic() + 60
        while len(at_eof) < PARTITIONS and time.monotonic() < deadline:
            for m in consumer.consume(1000, 1.0):
                if m.error() is not None:
                    assert m.error().code() == KafkaError._PARTITION_EOF, m.error()
                    if m.offset() >= plan.end_offsets[m.partition()]:
                        at_eof.add(m.partition())
                    continue
                got.append(Rec(m.partition(), m.offset(), m.key(), m.value(), m.timestamp()[1]))
        assert len(at_eof) == PARTITIONS, f"only partitions {sorted(at_eof)} reached their end in 60 s"

        # ListOffsets through the consumer: watermarks and offsets_for_times.
        for p in range(PARTITIONS):
            assert consumer.get_watermark_offsets(TopicPartition(TOPIC, p), timeout=10, cached=False) == \
                (0, plan.end_offsets[p])
        mid = plan.mid_timestamp()
        found = consumer.offsets_for_times([TopicPartition(TOPIC, p, mid) for p in range(PARTITIONS)], timeout=10)
        assert {tp.partition: tp.offset for tp in found} == \
            {p: plan.offset_for_time(p, mid) for p in range(PARTITIONS)}
        after = plan.base + 10 * len(plan.expected)
        found = consumer.offsets_for_times([TopicPartition(TOPIC, p, after) for p in range(PARTITIONS)], timeout=10)
        assert {tp.partition: tp.offset for tp in found} == {p: -1 for p in range(PARTITIONS)}
        return got
    finally:
        consumer.close()


def _admin_list_offsets(admin: AdminClient, plan: Plan) -> None:
    tps = [TopicPartition(TOPIC, p) for p in range(PARTITIONS)]
    mid = plan.mid_timestamp()
    for spec, want in ((OffsetSpec.earliest(), {p: 0 for p in range(PARTITIONS)}),
                       (OffsetSpec.latest(), dict(enumerate(plan.end_offsets))),
                       (OffsetSpec.for_timestamp(mid), {p: plan.offset_for_time(p, mid) for p in range(PARTITIONS)})):
        result = {tp.partition: f.result().offset
                  for tp, f in admin.list_offsets({tp: spec for tp in tps}, request_timeout=10).items()}
        assert result == want, f"list_offsets {spec}: {result} != {want}"


def _describe(admin: AdminClient, resource: ConfigResource) -> dict:
    (future,) = admin.describe_configs([resource], request_timeout=10).values()
    return future.result()


def _configs(admin: AdminClient) -> None:
    topic = ConfigResource(ResourceType.TOPIC, TOPIC)
    entries = _describe(admin, topic)
    assert entries[ALTERED_KEY].value == DEFAULT_RETENTION_MS
    assert entries[ALTERED_KEY].source == ConfigSource.DEFAULT_CONFIG.value
    assert entries["segment.bytes"].value == TOPIC_CONFIGS["segment.bytes"]
    assert entries["segment.bytes"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value

    change = ConfigResource(ResourceType.TOPIC, TOPIC, incremental_configs=[
        ConfigEntry(ALTERED_KEY, ALTERED_VALUE, incremental_operation=AlterConfigOpType.SET)])
    (future,) = admin.incremental_alter_configs([change], request_timeout=10).values()
    assert future.result() is None
    entries = _describe(admin, topic)
    assert (entries[ALTERED_KEY].value, entries[ALTERED_KEY].source) == \
        (ALTERED_VALUE, ConfigSource.DYNAMIC_TOPIC_CONFIG.value)
    assert entries["segment.bytes"].value == TOPIC_CONFIGS["segment.bytes"]

    # Legacy AlterConfigs replaces the topic's whole dynamic config:
    # segment.bytes, not named, falls back to its default.
    with warnings.catch_warnings():  # deprecated in favour of incremental_alter_configs
        warnings.simplefilter("ignore", DeprecationWarning)
        futures = admin.alter_configs([ConfigResource(ResourceType.TOPIC, TOPIC, set_config={ALTERED_KEY: "7200000"})],
                                      request_timeout=10)
    (future,) = futures.values()
    assert future.result() is None
    entries = _describe(admin, topic)
    assert entries[ALTERED_KEY].value == "7200000"
    assert entries["segment.bytes"].source == ConfigSource.DEFAULT_CONFIG.value

    broker = _describe(admin, ConfigResource(ResourceType.BROKER, "1"))
    assert broker["broker.id"].value == "1"


def test_confluent_kafka_round_trip(cluster) -> None:
    admin = AdminClient(_conf(cluster))
    (future,) = admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1, config=dict(TOPIC_CONFIGS))],
                                    operation_timeout=30).values()
    assert future.result() is None
    _wait_leaders(admin, TOPIC)

    plan = Plan(int(time.time() * 1000) - 600_000)
    _produce(cluster, plan)
    assert_same_records(_consume(cluster, plan), plan, "confluent-kafka")
    _admin_list_offsets(admin, plan)
    assert_rolled(cluster, TOPIC)
    _configs(admin)

    (future,) = admin.delete_topics([TOPIC], operation_timeout=30).values()
    assert future.result() is None
    deadline = time.monotonic() + 30
    while TOPIC in admin.list_topics(timeout=10).topics:
        assert time.monotonic() < deadline, f"{TOPIC} still listed 30 s after its deletion"
        time.sleep(0.2)

    negotiated = assert_preferred_versions(cluster.proxy.calls(CLIENT_ID), EXPECTED_VERSIONS, "confluent-kafka")
    # KIP-511: the client names itself in ApiVersions v3+.
    assert {name for name, _ in negotiated.software} == {"confluent-kafka-python"}
    print(f"confluent-kafka {confluent_kafka.version()} / librdkafka {confluent_kafka.libversion()[0]}: "
          f"{negotiated.describe()}")


EXTRAS_TOPIC = "clients-confluent-extras"


def test_confluent_kafka_compression_headers_and_admin_extras(cluster) -> None:
    """Every codec with headers, acks=0, the admin errors Kafka returns,
    CreatePartitions, DeleteRecords, and a record over message.max.bytes."""
    conf = _conf(cluster, **{"client.id": f"{CLIENT_ID}-extras"})
    admin = AdminClient(conf)
    (future,) = admin.create_topics([NewTopic(EXTRAS_TOPIC, EXTRA_PARTITIONS, 1)], operation_timeout=30).values()
    future.result()
    _wait_leaders(admin, EXTRAS_TOPIC, EXTRA_PARTITIONS)

    def error_of(futures) -> int:
        (f,) = futures.values()
        with pytest.raises(confluent_kafka.KafkaException) as info:
            f.result()
        return info.value.args[0].code()

    assert error_of(admin.create_topics([NewTopic(EXTRAS_TOPIC, 1, 1)])) == KafkaError.TOPIC_ALREADY_EXISTS
    assert error_of(admin.create_topics([NewTopic("clients-confluent-bad", 1, 1, config={"cleanup.policy": "bogus"})])) \
        == KafkaError.INVALID_CONFIG
    assert error_of(admin.create_topics([NewTopic("clients-confluent-bad", 1, 5)])) == KafkaError.INVALID_REPLICATION_FACTOR
    assert error_of(admin.delete_topics(["clients-confluent-missing"])) == KafkaError.UNKNOWN_TOPIC_OR_PART

    plan = extras_plan()
    for codec in CODECS:
        producer = Producer({**conf, "compression.type": codec, "linger.ms": 20, "batch.size": PRODUCER_BATCH_BYTES})
        errors = []
        for r in plan[codec]:
            producer.produce(EXTRAS_TOPIC, value=r.value, key=r.key, partition=r.partition, headers=list(r.headers),
                             on_delivery=lambda err, msg, errors=errors: err is not None and errors.append(err))
        assert producer.flush(30) == 0 and not errors, f"{codec}: {errors[:3]}"
    producer = Producer({**conf, "acks": "0"})
    for r in plan["acks0"]:
        producer.produce(EXTRAS_TOPIC, value=r.value, key=r.key, partition=r.partition)
    assert producer.flush(30) == 0

    # One record above the broker's message.max.bytes (1 MB by default).
    producer = Producer({**conf, "message.max.bytes": 3_000_000})
    errors = []
    producer.produce(EXTRAS_TOPIC, value=b"x" * 2_000_000, partition=1, on_delivery=lambda err, msg: errors.append(err))
    producer.flush(30)
    assert [e.code() for e in errors] == [KafkaError.MSG_SIZE_TOO_LARGE]

    # Small per-partition fetches: batches are returned whole or cut, never lost.
    # enable.auto.commit=False: with it on, close() would commit through a
    # group coordinator, which Kavka does not serve yet (librdkafka then
    # blocks in close() for ~45 s).
    consumer = Consumer({**conf, "group.id": "unused-assign-only", "enable.auto.commit": False,
                         "enable.partition.eof": True, "max.partition.fetch.bytes": 2000})
    got: list[HRec] = []
    at_eof: set[int] = set()
    ends = {0: len(CODECS) * len(plan[CODECS[0]]), 1: ACKS0_RECORDS}
    try:
        consumer.assign([TopicPartition(EXTRAS_TOPIC, p, confluent_kafka.OFFSET_BEGINNING) for p in ends])
        deadline = time.monotonic() + 60
        while len(at_eof) < len(ends) and time.monotonic() < deadline:
            for m in consumer.consume(1000, 1.0):
                if m.error() is not None:
                    if m.offset() >= ends[m.partition()]:
                        at_eof.add(m.partition())
                    continue
                got.append(HRec(m.partition(), m.offset(), m.key(), m.value(), tuple(m.headers() or ())))
    finally:
        consumer.close()
    assert_same_hrecords(got, plan, "confluent-kafka")

    (future,) = admin.create_partitions([NewPartitions(EXTRAS_TOPIC, 4)], operation_timeout=30).values()
    assert future.result() is None
    _wait_leaders(admin, EXTRAS_TOPIC, 4)
    (future,) = admin.delete_records([TopicPartition(EXTRAS_TOPIC, 0, 1000)], operation_timeout=30).values()
    assert future.result().low_watermark == 1000
    earliest = {tp.partition: f.result().offset for tp, f in admin.list_offsets(
        {TopicPartition(EXTRAS_TOPIC, p): OffsetSpec.earliest() for p in range(4)}, request_timeout=10).items()}
    assert earliest == {0: 1000, 1: 0, 2: 0, 3: 0}

    seen = assert_known_versions(cluster.proxy.calls(f"{CLIENT_ID}-extras"), EXPECTED_VERSIONS, "confluent-kafka")
    print(f"confluent-kafka extras: {seen.describe()}")

