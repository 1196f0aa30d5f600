"""The streaming sink's commit records: which micro-batch each sink task of
each query has committed, kept in a compacted Kavka topic (option
``commitTopic``, default ``_kavka_spark_sink_commits``, one partition).

Record: key ``<queryId>/<task partition id>`` (UTF-8), value JSON
``{"queryId": ..., "task": n, "batchId": b, "rows": r}``. A task writes its
commit record in the same transaction as its rows (``stream_writer``), so
a commit record is visible to read_committed readers exactly when the rows
are. Spark runs a query's micro-batches one after another and the batch id
only grows, so the latest value of a key is the task's last committed
batch, and compaction (``cleanup.policy=compact``) keeps only that: the
topic stays bounded by (queries x tasks) records plus its uncleaned tail.

``last_committed_batch`` reads the partition from its start with
read_committed up to the high watermark seen when it started: records past
the last stable offset belong to transactions still open (another task's
commit record waits there between its append and its marker, briefly), so
it waits, bounded, until the LSO reaches that point rather than miss a
committed record behind them. Runs on executors (and ``ensure_topic`` in
the planning process); private event loop per call.
"""

from __future__ import annotations

import asyncio
import json

from kavka.client.admin import AdminError, KafkaAdmin
from kavka.client.admin_types import NewTopic, OffsetSpec
from kavka.client.cluster import Cluster
from kavka.client.consumer import Consumer
from kavka.common.errors import ErrorCode, KafkaError
from kavka.common.topic_partition import TopicPartition
from kavka.spark.client_security import security_for
from kavka.spark.options import Settings

COMMIT_PARTITION = 0


def commit_key(query_id: str, task: int) -> bytes:
    return f"{query_id}/{task}".encode()


def commit_value(query_id: str, task: int, batch_id: int, rows: int) -> bytes:
    return json.dumps({"queryId": query_id, "task": task, "batchId": batch_id, "rows": rows},
                      separators=(",", ":")).encode()


def ensure_topic(servers: str, topic: str, security: Settings, timeout_ms: int = 30_000) -> None:
    """Create the compacted commit topic unless it exists (RF = min(3, brokers))."""
    async def run() -> None:
        async with Cluster(servers, security=security_for(security)) as cluster:
            admin = KafkaAdmin(cluster, timeout_ms=timeout_ms)
            md = await cluster.refresh_metadata([topic])
            t = md.topics.get(topic)
            if t is not None and t.error == ErrorCode.NONE and t.partitions:
                return
            rf = min(3, len(md.brokers))
            try:
                await admin.create_topics([NewTopic(topic, 1, rf, configs={"cleanup.policy": "compact", "segment.bytes": str(1 << 20)})])
            except AdminError as e:
                if any(err.code != ErrorCode.TOPIC_ALREADY_EXISTS for err in e.errors.values()):
                    raise
            loop = asyncio.get_running_loop()
            deadline = loop.time() + timeout_ms / 1000
            while await cluster.leader_for(TopicPartition(topic, COMMIT_PARTITION), refresh=True) is None:
                if loop.time() > deadline:
                    raise KafkaError(f"commit topic {topic} has no leader", code=ErrorCode.LEADER_NOT_AVAILABLE)
                await asyncio.sleep(0.1)
    asyncio.run(run())


def last_committed_batch(servers: str, topic: str, query_id: str, task: int, security: Settings,
                         timeout_ms: int = 60_000) -> int | None:
    """The highest batch id committed by ``(query_id, task)``, or None."""
    key = commit_key(query_id, task)
    tp = TopicPartition(topic, COMMIT_PARTITION)

    async def run() -> int | None:
        async with Cluster(servers, security=security_for(security)) as cluster:
            admin = KafkaAdmin(cluster, timeout_ms=timeout_ms)
            target = (await admin.list_offsets({tp: OffsetSpec.LATEST}))[tp].offset
            consumer = Consumer(cluster, isolation_level=1, max_wait_ms=100)
            consumer.assign([tp])
            await consumer.seek_to_beginning(tp)
            found: int | None = None
            loop = asyncio.get_running_loop()
            deadline = loop.time() + timeout_ms / 1000
            # no position (not reset yet): poll() resets it
            while (position := consumer.position(tp)) is None or position < target:
                if loop.time() > deadline:
                    raise KafkaError(f"the commit topic {topic} stayed behind an open transaction for "
                                     f"{timeout_ms} ms (last stable offset below {target})",
                                     code=ErrorCode.REQUEST_TIMED_OUT)
                for record in await consumer.poll():
                    if record.key == key and record.value is not None:
                        batch = int(json.loads(record.value)["batchId"])
                        found = batch if found is None else max(found, batch)
            return found
    return asyncio.run(run())
