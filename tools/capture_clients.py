"""Client scenarios driven by ``tools/capture_frames.py``, one per process.

``python tools/capture_clients.py CLIENT --bootstrap 127.0.0.1:PORT`` makes
CLIENT (confluent-kafka, kafka-python, aiokafka or kcat) walk through:
ApiVersions and Metadata (on connect), CreateTopics and DescribeConfigs
(admin API, where the client has one), Produce with acks=1 and acks=all for
every codec the client offers, an idempotent producer (InitProducerId),
ListOffsets, a group consumer (FindCoordinator, JoinGroup, SyncGroup,
OffsetFetch, Fetch, Heartbeat, OffsetCommit, LeaveGroup), a transactional
producer where supported, group and topic administration (ListGroups,
DescribeGroups, config changes, CreatePartitions, DeleteRecords,
DescribeCluster, DeleteGroups — whatever each admin API offers), and
DeleteTopics. Each step is bounded by
``--timeout``; a step the broker refuses is reported and the scenario goes
on, because the point is what the client *sent*.

Messages are few and small so the captures stay small.
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import time
import traceback

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
MESSAGES_PER_BATCH = 3


# librdkafka (and kafka-python) send a batch uncompressed when the codec
# would not shrink it, so values repeat enough for every codec to win.
FILLER = "kavka " * 40


def _messages(tag: str):
    """Small keyed messages with a header, so every record field is exercised."""
    return [(f"k{i}".encode(), f"{tag}-v{i}-{FILLER}".encode(), [("h", f"{i}".encode())])
            for i in range(MESSAGES_PER_BATCH)]


def step(name: str):
    """Run one step, printing its outcome; failures do not stop the scenario."""

    def wrap(fn):
        def run(*a, **kw):
            t0 = time.monotonic()
            try:
                result = fn(*a, **kw)
                print(f"  [{name}] ok ({time.monotonic() - t0:.1f}s)", flush=True)
                return result
            except Exception as exc:  # noqa: BLE001 - a refused step is data, not a crash
                print(f"  [{name}] failed: {type(exc).__name__}: {exc}", flush=True)
                return None
        return run

    return wrap


# --------------------------------------------------------------------------- confluent-kafka

def run_confluent(bootstrap: str, timeout: float) -> None:
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

    topic, group = "golden.confluent-kafka", "golden-group-confluent"
    base = {"bootstrap.servers": bootstrap}
    admin = AdminClient(base)

    @step("CreateTopics")
    def create():
        admin.create_topics([NewTopic(topic, 1, 1)], request_timeout=timeout)[topic].result(timeout)

    @step("Metadata")
    def metadata():
        admin.list_topics(timeout=timeout)

    @step("DescribeConfigs")
    def describe():
        res = ConfigResource(ConfigResource.Type.TOPIC, topic)
        admin.describe_configs([res], request_timeout=timeout)[res].result(timeout)

    def produce(conf: dict, tag: str) -> None:
        p = Producer({**base, "linger.ms": 5, **conf})
        for k, v, h in _messages(tag):
            p.produce(topic, v, k, headers=h)
        left = p.flush(timeout)
        if left:
            raise RuntimeError(f"{left} messages not delivered")

    create()
    metadata()
    describe()
    for acks in ("1", "all"):
        for codec in CODECS:
            step(f"Produce acks={acks} {codec}")(produce)({"acks": acks, "compression.type": codec}, f"{acks}-{codec}")
    step("Produce acks=0")(produce)({"acks": "0"}, "acks0")
    step("InitProducerId + idempotent Produce")(produce)({"enable.idempotence": True}, "idem")

    @step("transaction")
    def txn():
        # Offsets sent within the transaction add AddOffsetsToTxn and TxnOffsetCommit.
        p = Producer({**base, "transactional.id": "golden-txn-confluent", "transaction.timeout.ms": 10000})
        c = Consumer({**base, "group.id": group + "-txn"})
        p.init_transactions(timeout)
        p.begin_transaction()
        for k, v, h in _messages("txn"):
            p.produce(topic, v, k, headers=h)
        p.send_offsets_to_transaction([TopicPartition(topic, 0, 1)], c.consumer_group_metadata(), timeout)
        p.commit_transaction(timeout)
        c.close()

    txn()

    @step("group consume")
    def consume():
        c = Consumer({**base, "group.id": group, "auto.offset.reset": "earliest",
                      "enable.auto.commit": False, "session.timeout.ms": 6000,
                      "heartbeat.interval.ms": 500, "isolation.level": "read_uncommitted"})
        c.subscribe([topic])
        got, deadline = 0, time.monotonic() + timeout
        while got < 2 * len(CODECS) * MESSAGES_PER_BATCH and time.monotonic() < deadline:
            msg = c.poll(0.5)
            if msg is not None and msg.error() is None:
                got += 1
        time.sleep(1.2)  # long enough for a Heartbeat
        c.commit(asynchronous=False)
        c.committed([TopicPartition(topic, 0)], timeout)
        c.get_watermark_offsets(TopicPartition(topic, 0), timeout, cached=False)
        c.offsets_for_times([TopicPartition(topic, 0, 0)], timeout)
        c.close()
        print(f"    consumed {got}")

    consume()
    _confluent_admin_extras(admin, topic, group, timeout)

    @step("DeleteTopics")
    def delete():
        admin.delete_topics([topic], request_timeout=timeout)[topic].result(timeout)

    delete()


def _confluent_admin_extras(admin, topic: str, group: str, timeout: float) -> None:
    """Group and topic administration: ListGroups, DescribeGroups, OffsetFetch,
    ListOffsets, IncrementalAlterConfigs, AlterConfigs, CreatePartitions,
    DeleteRecords, DescribeCluster, DeleteGroups."""
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicCollection, TopicPartition
    from confluent_kafka.admin import (
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        NewPartitions,
        OffsetSpec,
    )

    res = ConfigResource(ConfigResource.Type.TOPIC, topic)
    calls = {
        "ListGroups": lambda: admin.list_consumer_groups(request_timeout=timeout).result(timeout),
        "DescribeGroups": lambda: admin.describe_consumer_groups([group], request_timeout=timeout)[group].result(timeout),
        "OffsetFetch (admin)": lambda: admin.list_consumer_group_offsets(
            [ConsumerGroupTopicPartitions(group)], request_timeout=timeout)[group].result(timeout),
        "ListOffsets (admin)": lambda: admin.list_offsets(
            {TopicPartition(topic, 0): OffsetSpec.latest()}, request_timeout=timeout)[TopicPartition(topic, 0)].result(timeout),
        "IncrementalAlterConfigs": lambda: admin.incremental_alter_configs([ConfigResource(
            ConfigResource.Type.TOPIC, topic, incremental_configs=[ConfigEntry(
                "retention.ms", "3600000", incremental_operation=AlterConfigOpType.SET)])])[res].result(timeout),
        "AlterConfigs": lambda: admin.alter_configs([ConfigResource(
            ConfigResource.Type.TOPIC, topic, set_config={"retention.ms": "7200000"})])[res].result(timeout),
        "CreatePartitions": lambda: admin.create_partitions(
            [NewPartitions(topic, 2)], request_timeout=timeout)[topic].result(timeout),
        "DeleteRecords": lambda: admin.delete_records(
            [TopicPartition(topic, 0, 1)], request_timeout=timeout)[TopicPartition(topic, 0, 1)].result(timeout),
        "DescribeCluster": lambda: admin.describe_cluster(request_timeout=timeout).result(timeout),
        "DescribeTopics": lambda: admin.describe_topics(
            TopicCollection([topic]), request_timeout=timeout)[topic].result(timeout),
        "DeleteGroups": lambda: admin.delete_consumer_groups([group], request_timeout=timeout)[group].result(timeout),
    }
    for name, call in calls.items():
        step(name)(call)()


# --------------------------------------------------------------------------- kafka-python

def run_kafka_python(bootstrap: str, timeout: float) -> None:
    from kafka import KafkaConsumer, KafkaProducer, OffsetAndMetadata, TopicPartition
    from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient, NewTopic, OffsetSpec

    topic, group = "golden.kafka-python", "golden-group-kafka-python"
    ms = int(timeout * 1000)
    admin = step("ApiVersions + admin connect")(KafkaAdminClient)(bootstrap_servers=bootstrap, request_timeout_ms=ms)
    if admin is not None:
        step("CreateTopics")(admin.create_topics)([NewTopic(topic, 1, 1)], timeout_ms=ms)
        step("Metadata")(admin.list_topics)()
        step("DescribeConfigs")(admin.describe_configs)([ConfigResource(ConfigResourceType.TOPIC, topic)])

    def produce(conf: dict, tag: str) -> None:
        p = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5, request_timeout_ms=ms, **conf)
        for k, v, h in _messages(tag):
            p.send(topic, v, k, headers=h)
        p.flush(timeout)
        p.close(timeout)

    for acks in (1, "all"):
        for codec in CODECS:
            conf = {"acks": acks, "enable_idempotence": False,
                    "compression_type": None if codec == "none" else codec}
            step(f"Produce acks={acks} {codec}")(produce)(conf, f"{acks}-{codec}")
    step("Produce acks=0")(produce)({"acks": 0, "enable_idempotence": False}, "acks0")
    step("InitProducerId + idempotent Produce")(produce)({"acks": "all", "enable_idempotence": True}, "idem")

    @step("transaction")
    def txn():
        p = KafkaProducer(bootstrap_servers=bootstrap, transactional_id="golden-txn-kafka-python",
                          request_timeout_ms=ms)
        p.init_transactions()
        p.begin_transaction()
        for k, v, h in _messages("txn"):
            p.send(topic, v, k, headers=h)
        p.send_offsets_to_transaction({TopicPartition(topic, 0): OffsetAndMetadata(1, "", -1)},
                                      group + "-txn")
        p.commit_transaction()
        p.close(timeout)

    txn()

    @step("group consume")
    def consume():
        c = KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group,
                          auto_offset_reset="earliest", enable_auto_commit=False,
                          session_timeout_ms=6000, heartbeat_interval_ms=500,
                          request_timeout_ms=ms + 1000, consumer_timeout_ms=ms)
        got, deadline = 0, time.monotonic() + timeout
        while got < 2 * len(CODECS) * MESSAGES_PER_BATCH and time.monotonic() < deadline:
            for records in c.poll(500).values():
                got += len(records)
        time.sleep(1.2)
        c.poll(100)
        c.commit()
        tp = TopicPartition(topic, 0)
        c.committed(tp)
        c.end_offsets([tp])
        c.beginning_offsets([tp])
        c.offsets_for_times({tp: 0})
        c.close()
        print(f"    consumed {got}")

    consume()
    if admin is not None:
        tp = TopicPartition(topic, 0)
        step("ListGroups")(admin.list_groups)()
        step("DescribeGroups")(admin.describe_groups)([group])
        step("OffsetFetch (admin)")(admin.list_group_offsets)({group: None})
        step("ListOffsets (admin)")(admin.list_partition_offsets)({tp: OffsetSpec.LATEST})
        step("IncrementalAlterConfigs")(admin.alter_configs)(
            [ConfigResource(ConfigResourceType.TOPIC, topic, configs={"retention.ms": ("SET", "3600000")})])
        step("CreatePartitions")(admin.create_partitions)({topic: 2}, timeout_ms=ms)
        step("DeleteRecords")(admin.delete_records)({tp: 1}, timeout_ms=ms)
        step("DescribeCluster")(admin.describe_cluster)()
        step("DescribeTopics")(admin.describe_topics)([topic])
        step("DescribeLogDirs")(admin.describe_log_dirs)()
        step("DeleteGroups")(admin.delete_groups)([group])
        step("DeleteTopics")(admin.delete_topics)([topic], timeout_ms=ms)
        admin.close()


# --------------------------------------------------------------------------- aiokafka

async def _aiokafka(bootstrap: str, timeout: float) -> None:  # noqa: ASYNC109 - the clients' request timeout (--timeout)
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
    from aiokafka.admin import AIOKafkaAdminClient, NewPartitions, NewTopic, RecordsToDelete
    from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

    topic, group = "golden.aiokafka", "golden-group-aiokafka"
    ms = int(timeout * 1000)

    async def astep(name, coro):
        t0 = time.monotonic()
        try:
            result = await asyncio.wait_for(coro, timeout * 2)
            print(f"  [{name}] ok ({time.monotonic() - t0:.1f}s)", flush=True)
            return result
        except Exception as exc:  # noqa: BLE001 - a refused step is data
            print(f"  [{name}] failed: {type(exc).__name__}: {exc}", flush=True)
            return None

    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=ms)
    started = await astep("ApiVersions + admin start", admin.start()) is not None or True
    if started:
        await astep("CreateTopics", admin.create_topics([NewTopic(topic, 1, 1)], timeout_ms=ms))
        await astep("Metadata", admin.list_topics())
        await astep("DescribeConfigs",
                    admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)]))

    async def produce(tag: str, **conf):
        p = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5, request_timeout_ms=ms, **conf)
        await p.start()
        try:
            futs = [await p.send(topic, v, k, headers=h) for k, v, h in _messages(tag)]
            await asyncio.gather(*futs)
        finally:
            await p.stop()

    for acks in (1, "all"):
        for codec in CODECS:
            await astep(f"Produce acks={acks} {codec}",
                        produce(f"{acks}-{codec}", acks=acks, compression_type=None if codec == "none" else codec))
    await astep("Produce acks=0", produce("acks0", acks=0))
    await astep("InitProducerId + idempotent Produce", produce("idem", enable_idempotence=True))

    async def txn():
        p = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id="golden-txn-aiokafka",
                             request_timeout_ms=ms)
        await p.start()
        try:
            async with p.transaction():
                for k, v, h in _messages("txn"):
                    await p.send(topic, v, k, headers=h)
                await p.send_offsets_to_transaction({TopicPartition(topic, 0): 1}, group + "-txn")
        finally:
            await p.stop()

    await astep("transaction", txn())

    async def consume():
        c = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group,
                             auto_offset_reset="earliest", enable_auto_commit=False,
                             session_timeout_ms=6000, heartbeat_interval_ms=500,
                             request_timeout_ms=ms)
        await c.start()
        try:
            got, deadline = 0, time.monotonic() + timeout
            while got < 2 * len(CODECS) * MESSAGES_PER_BATCH and time.monotonic() < deadline:
                for records in (await c.getmany(timeout_ms=500)).values():
                    got += len(records)
            await asyncio.sleep(1.2)
            await c.commit()
            tp = TopicPartition(topic, 0)
            await c.committed(tp)
            await c.end_offsets([tp])
            await c.beginning_offsets([tp])
            await c.offsets_for_times({tp: 0})
            print(f"    consumed {got}")
        finally:
            await c.stop()

    await astep("group consume", consume())
    tp = TopicPartition(topic, 0)
    await astep("ListGroups", admin.list_consumer_groups())
    await astep("DescribeGroups", admin.describe_consumer_groups([group]))
    await astep("OffsetFetch (admin)", admin.list_consumer_group_offsets(group))
    await astep("AlterConfigs", admin.alter_configs(
        [ConfigResource(ConfigResourceType.TOPIC, topic, configs={"retention.ms": "3600000"})]))
    await astep("CreatePartitions", admin.create_partitions({topic: NewPartitions(2)}, timeout_ms=ms))
    await astep("DeleteRecords", admin.delete_records({tp: RecordsToDelete(1)}, timeout_ms=ms))
    await astep("DescribeCluster", admin.describe_cluster())
    await astep("DescribeTopics", admin.describe_topics([topic]))
    await astep("DeleteTopics", admin.delete_topics([topic], timeout_ms=ms))
    await admin.close()


def run_aiokafka(bootstrap: str, timeout: float) -> None:
    asyncio.run(_aiokafka(bootstrap, timeout))


# --------------------------------------------------------------------------- kcat

def run_kcat(bootstrap: str, timeout: float) -> None:
    """kcat has no admin API: the topic was made beforehand, off the record."""
    topic, group = "golden.kcat", "golden-group-kcat"

    def kcat(args: list[str], stdin: str | None = None) -> str:
        proc = subprocess.run(["kcat", "-b", bootstrap, "-X", "api.version.request=true", *args],
                              input=stdin, capture_output=True, text=True, timeout=timeout)
        if proc.returncode != 0:
            raise RuntimeError(proc.stderr.strip()[-300:])
        return proc.stdout

    step("Metadata")(kcat)(["-L"])
    lines = "\n".join(f"k{i}:v{i}-{FILLER}" for i in range(MESSAGES_PER_BATCH)) + "\n"
    for acks in ("1", "all"):
        for codec in CODECS:
            step(f"Produce acks={acks} {codec}")(kcat)(
                ["-P", "-t", topic, "-K", ":", "-H", "h=1", "-z", codec, "-X", f"acks={acks}"], lines)
    step("InitProducerId + idempotent Produce")(kcat)(
        ["-P", "-t", topic, "-K", ":", "-H", "h=1", "-X", "enable.idempotence=true"], lines)
    step("Fetch + ListOffsets (simple consumer)")(kcat)(["-C", "-t", topic, "-o", "beginning", "-e", "-q"])
    step("ListOffsets (query)")(kcat)(["-Q", "-t", f"{topic}:0:0"])
    want = 2 * len(CODECS) * MESSAGES_PER_BATCH

    @step("group consume")
    def consume():
        # No -o here: with an explicit offset kcat assigns it itself and
        # librdkafka skips OffsetFetch; auto.offset.reset keeps it in.
        kcat(["-G", group, "-c", str(want), "-q", "-X", "auto.offset.reset=earliest",
              "-X", "session.timeout.ms=6000", "-X", "heartbeat.interval.ms=500", topic])

    consume()


RUNNERS = {"confluent-kafka": run_confluent, "kafka-python": run_kafka_python,
           "aiokafka": run_aiokafka, "kcat": run_kcat}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("client", choices=sorted(RUNNERS))
    parser.add_argument("--bootstrap", required=True, help="host:port of the recording proxy")
    parser.add_argument("--timeout", type=float, default=20.0, help="seconds per step")
    args = parser.parse_args()
    try:
        RUNNERS[args.client](args.bootstrap, args.timeout)
    except Exception:  # noqa: BLE001 - report and exit non-zero
        traceback.print_exc()
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
