"""aiokafka against a 3-broker Kavka cluster: create a topic, produce
10,000 records with acks=1 and 10,000 with acks=all, consume them with
``assign`` from the earliest offset and compare every (partition, offset,
key, value, timestamp), list offsets (beginning, end, by time), describe
and alter configs (aiokafka has only the legacy AlterConfigs, which
replaces a topic's whole dynamic config), delete the topic; then check
that every request was sent at aiokafka's preferred version
(as captured in ``tests/protocol/golden/versions.json``).
"""

from __future__ import annotations

import asyncio
import time

import aiokafka
import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewPartitions, NewTopic, RecordsToDelete
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

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

CLIENT_ID = "kavka-test-aiokafka"
TOPIC = "clients-aiokafka"
# aiokafka 0.14's choice for each API this test uses: the reference
# table, plus AlterConfigs v1, the highest its protocol module defines.
EXPECTED_VERSIONS = {0: 7, 1: 11, 2: 3, 3: 5, 18: 0, 19: 3, 20: 3, 32: 2, 33: 1}
# DescribeConfigs config_source codes (KIP-226).
DYNAMIC_TOPIC_CONFIG, DEFAULT_CONFIG = 1, 5


@pytest.fixture(scope="module")
def cluster(zookeeper, tmp_path_factory):
    yield from proxied_cluster(zookeeper, tmp_path_factory)


async def _wait_leaders(admin: AIOKafkaAdminClient, topic: str, partitions: int = PARTITIONS) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        (md,) = await admin.describe_topics([topic])
        if md["error_code"] == 0 and len(md["partitions"]) == partitions \
                and all(p["leader"] >= 0 for p in md["partitions"]):
            return
        await asyncio.sleep(0.2)
    raise AssertionError(f"topic {topic} has no leader for each of {partitions} partitions after 30 s")


async def _produce(bootstrap: str, plan: Plan) -> None:
    for run, acks in zip(plan.runs, (1, "all"), strict=True):
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, client_id=CLIENT_ID, acks=acks, linger_ms=5)
        await producer.start()
        try:
            futures = [await producer.send(TOPIC, value=r.value, key=r.key, partition=r.partition,
                                           timestamp_ms=r.timestamp) for r in run]
            metadata = await asyncio.wait_for(asyncio.gather(*futures), 60)
        finally:
            await producer.stop()
        # The offsets the broker returned in the Produce responses.
        assert [(m.partition, m.offset) for m in metadata] == [(r.partition, r.offset) for r in run], \
            f"acks={acks}: acknowledged offsets differ from the send order"


async def _consume(bootstrap: str, plan: Plan) -> list[Rec]:
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, client_id=CLIENT_ID, group_id=None,
                                enable_auto_commit=False)
    await consumer.start()
    try:
        tps = [TopicPartition(TOPIC, p) for p in range(PARTITIONS)]
        consumer.assign(tps)
        await consumer.seek_to_beginning()
        got: list[Rec] = []
        deadline = time.monotonic() + 60
        while len(got) < len(plan.expected) and time.monotonic() < deadline:
            for records in (await consumer.getmany(timeout_ms=1000, max_records=5000)).values():
                got.extend(Rec(m.partition, m.offset, m.key, m.value, m.timestamp) for m in records)
        assert {tp.partition: await consumer.position(tp) for tp in tps} == dict(enumerate(plan.end_offsets))

        assert await consumer.beginning_offsets(tps) == {tp: 0 for tp in tps}
        assert await consumer.end_offsets(tps) == {tp: plan.end_offsets[tp.partition] for tp in tps}
        mid = plan.mid_timestamp()
        found = await consumer.offsets_for_times({tp: mid for tp in tps})
        assert {tp.partition: f.offset for tp, f in found.items()} == \
            {p: plan.offset_for_time(p, mid) for p in range(PARTITIONS)}
        after = plan.base + 10 * len(plan.expected)
        assert await consumer.offsets_for_times({tp: after for tp in tps}) == {tp: None for tp in tps}
        return got
    finally:
        await consumer.stop()


async def _topic_configs(admin: AIOKafkaAdminClient) -> dict[str, tuple[str, int]]:
    """name -> (value, config_source) from DescribeConfigs v2."""
    (response,) = await admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, TOPIC)])
    (resource,) = response.resources
    error_code, error_message, _rtype, name, entries = resource
    assert (error_code, name) == (0, TOPIC), error_message
    return {e[0]: (e[1], e[3]) for e in entries}


async def _configs(admin: AIOKafkaAdminClient) -> None:
    entries = await _topic_configs(admin)
    assert entries[ALTERED_KEY] == (DEFAULT_RETENTION_MS, DEFAULT_CONFIG)
    assert entries["segment.bytes"] == (TOPIC_CONFIGS["segment.bytes"], DYNAMIC_TOPIC_CONFIG)

    # AlterConfigs replaces the whole dynamic config: segment.bytes, not
    # named, falls back to its default.
    responses = await admin.alter_configs(
        [ConfigResource(ConfigResourceType.TOPIC, TOPIC, configs={ALTERED_KEY: ALTERED_VALUE})])
    assert [(r[0], r[3]) for resp in responses for r in resp.resources] == [(0, TOPIC)]
    entries = await _topic_configs(admin)
    assert entries[ALTERED_KEY] == (ALTERED_VALUE, DYNAMIC_TOPIC_CONFIG)
    assert entries["segment.bytes"] == ("1073741824", DEFAULT_CONFIG)


async def _round_trip(cluster) -> None:
    bootstrap = cluster.bootstrap
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, client_id=CLIENT_ID)
    await admin.start()
    try:
        response = await admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1, topic_configs=dict(TOPIC_CONFIGS))])
        assert [(t[0], t[1]) for t in response.topic_errors] == [(TOPIC, 0)], response

        await _wait_leaders(admin, TOPIC)
        plan = Plan(int(time.time() * 1000) - 600_000)
        await _produce(bootstrap, plan)
        assert_same_records(await _consume(bootstrap, plan), plan, "aiokafka")
        assert_rolled(cluster, TOPIC)
        await _configs(admin)

        response = await admin.delete_topics([TOPIC])
        assert [(t[0], t[1]) for t in response.topic_error_codes] == [(TOPIC, 0)], response
        deadline = time.monotonic() + 30
        while TOPIC in await admin.list_topics():
            assert time.monotonic() < deadline, f"{TOPIC} still listed 30 s after its deletion"
            await asyncio.sleep(0.2)
    finally:
        await admin.close()


def test_aiokafka_round_trip(cluster) -> None:
    asyncio.run(_round_trip(cluster))
    negotiated = assert_preferred_versions(cluster.proxy.calls(CLIENT_ID), EXPECTED_VERSIONS, "aiokafka")
    assert negotiated.software == frozenset()  # ApiVersions v0 carries no client_software_name
    print(f"aiokafka {aiokafka.__version__}: {negotiated.describe()}")


EXTRAS_TOPIC = "clients-aiokafka-extras"


async def _extras(cluster) -> str:
    client_id = f"{CLIENT_ID}-extras"
    bootstrap = cluster.bootstrap
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, client_id=client_id)
    await admin.start()
    try:
        response = await admin.create_topics([NewTopic(EXTRAS_TOPIC, EXTRA_PARTITIONS, 1)])
        assert [tuple(t[:2]) for t in response.topic_errors] == [(EXTRAS_TOPIC, 0)]
        response = await admin.create_topics([NewTopic(EXTRAS_TOPIC, 1, 1)])
        assert [tuple(t[:2]) for t in response.topic_errors] == [(EXTRAS_TOPIC, 36)]  # TOPIC_ALREADY_EXISTS
        response = await admin.create_topics(
            [NewTopic("clients-aiokafka-bad", 1, 1, topic_configs={"cleanup.policy": "bogus"})])
        assert [tuple(t[:2]) for t in response.topic_errors] == [("clients-aiokafka-bad", 40)]  # INVALID_CONFIG
        await _wait_leaders(admin, EXTRAS_TOPIC, EXTRA_PARTITIONS)

        plan = extras_plan()
        for codec in CODECS + ("acks0",):
            options = {"acks": 0} if codec == "acks0" else {"compression_type": codec, "linger_ms": 20}
            producer = AIOKafkaProducer(bootstrap_servers=bootstrap, client_id=client_id, **options)
            await producer.start()
            try:
                futures = [await producer.send(EXTRAS_TOPIC, value=r.value, key=r.key, partition=r.partition,
                                               headers=list(r.headers)) for r in plan[codec]]
                await asyncio.wait_for(asyncio.gather(*futures), 30)
            finally:
                await producer.stop()

        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, client_id=client_id, group_id=None,
                                    enable_auto_commit=False, max_partition_fetch_bytes=2000)
        await consumer.start()
        try:
            consumer.assign([TopicPartition(EXTRAS_TOPIC, p) for p in range(EXTRA_PARTITIONS)])
            await consumer.seek_to_beginning()
            want = len(CODECS) * len(plan[CODECS[0]]) + ACKS0_RECORDS
            got: list[HRec] = []
            deadline = time.monotonic() + 60
            while len(got) < want and time.monotonic() < deadline:
                for records in (await consumer.getmany(timeout_ms=1000)).values():
                    got.extend(HRec(m.partition, m.offset, m.key, m.value, tuple(m.headers)) for m in records)
        finally:
            await consumer.stop()
        assert_same_hrecords(got, plan, "aiokafka")

        response = await admin.create_partitions({EXTRAS_TOPIC: NewPartitions(4)})
        assert [tuple(t[:2]) for t in response.topic_errors] == [(EXTRAS_TOPIC, 0)]
        await _wait_leaders(admin, EXTRAS_TOPIC, 4)
        low = await admin.delete_records({TopicPartition(EXTRAS_TOPIC, 0): RecordsToDelete(1000)})
        assert low == {TopicPartition(EXTRAS_TOPIC, 0): 1000}
        described = await admin.describe_cluster()
        assert sorted(b["node_id"] for b in described["brokers"]) == sorted(cluster.brokers)
    finally:
        await admin.close()
    return client_id


def test_aiokafka_compression_headers_and_admin_extras(cluster) -> None:
    """Every codec with headers, acks=0, admin errors, small partition
    fetches, CreatePartitions, DeleteRecords, DescribeCluster."""
    client_id = asyncio.run(_extras(cluster))
    seen = assert_known_versions(cluster.proxy.calls(client_id), EXPECTED_VERSIONS, "aiokafka")
    print(f"aiokafka extras: {seen.describe()}")
