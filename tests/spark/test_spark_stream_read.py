"""Streaming read of format "kavka": resumes from its checkpoint after a
restart without loss or duplicates, honours maxOffsetsPerTrigger, picks
up new partitions, and fails (or skips, when asked) on data loss."""

from __future__ import annotations

import asyncio
import json

import pytest

from tests.spark.conftest import create_topic, produce, wait_for_leaders

pytestmark = pytest.mark.spark


def run_available_now(spark, cluster, checkpoint: str, out: str, **opts):
    """One availableNow run of topic -> parquet; returns the finished query."""
    r = spark.readStream.format("kavka").option("kafka.bootstrap.servers", cluster.bootstrap)
    for k, v in opts.items():
        r = r.option(k, v)
    q = (r.load().selectExpr("topic", "partition", "offset", "CAST(value AS STRING) AS value")
         .writeStream.format("parquet").option("path", out).option("checkpointLocation", checkpoint)
         .trigger(availableNow=True).start())
    q.awaitTermination(120)
    assert not q.isActive, "the availableNow query did not finish in 120 s"
    return q


def sink_rows(spark, out: str) -> list[tuple]:
    return sorted((r.topic, r.partition, r.offset, r.value) for r in spark.read.parquet(out).collect())


def test_resume_from_checkpoint_without_loss_or_duplicates(spark, kavka_cluster, tmp_path):
    create_topic(kavka_cluster, "clicks", partitions=2)
    produce(kavka_cluster, "clicks", [(f"k{i}".encode(), f"a{i}".encode()) for i in range(120)])
    cp, out = str(tmp_path / "cp"), str(tmp_path / "out")
    q = run_available_now(spark, kavka_cluster, cp, out, subscribe="clicks", startingOffsets="earliest",
                          maxOffsetsPerTrigger="50")
    sizes = [p["numInputRows"] for p in q.recentProgress if p["numInputRows"]]
    assert sum(sizes) == 120 and max(sizes) <= 50 and len(sizes) >= 3
    produce(kavka_cluster, "clicks", [(f"k{i}".encode(), f"b{i}".encode()) for i in range(80)])
    run_available_now(spark, kavka_cluster, cp, out, subscribe="clicks", startingOffsets="earliest")
    rows = sink_rows(spark, out)
    assert len(rows) == 200 and len({r[1:3] for r in rows}) == 200
    assert sorted(r[3] for r in rows) == sorted([f"a{i}" for i in range(120)] + [f"b{i}" for i in range(80)])
    # offsets checkpointed in the stable JSON form
    import os
    latest = max((f for f in os.listdir(os.path.join(cp, "offsets")) if f.isdigit()), key=int)
    with open(os.path.join(cp, "offsets", latest)) as f:
        text = f.read().splitlines()[-1]
    doc = json.loads(text)
    assert list(doc) == ["clicks"] and list(doc["clicks"]) == ["0", "1"]
    assert sum(doc["clicks"].values()) == 200


def test_stream_starts_at_latest_by_default_and_picks_up_new_partitions(spark, kavka_cluster, tmp_path):
    from confluent_kafka.admin import AdminClient, NewPartitions

    create_topic(kavka_cluster, "grow", partitions=1)
    produce(kavka_cluster, "grow", [(None, b"before")])
    cp, out = str(tmp_path / "cp"), str(tmp_path / "out")
    run_available_now(spark, kavka_cluster, cp, out, subscribe="grow")  # latest: nothing yet
    admin = AdminClient({"bootstrap.servers": kavka_cluster.bootstrap})
    admin.create_partitions([NewPartitions("grow", 3)])["grow"].result(60)
    wait_for_leaders(kavka_cluster, "grow", 3)
    for p in range(3):
        produce(kavka_cluster, "grow", [(None, f"p{p}-{i}".encode()) for i in range(4)], partition=p)
    run_available_now(spark, kavka_cluster, cp, out, subscribe="grow")
    rows = sink_rows(spark, out)
    assert sorted(r[3] for r in rows) == sorted(f"p{p}-{i}" for p in range(3) for i in range(4))


def _delete_records(cluster, topic: str, before: int) -> None:
    from kavka.client.admin import KafkaAdmin
    from kavka.client.cluster import Cluster
    from kavka.common.topic_partition import TopicPartition

    async def run():
        async with Cluster(cluster.bootstrap) as c:
            await KafkaAdmin(c).delete_records({TopicPartition(topic, 0): before})
    asyncio.run(run())


def test_fail_on_data_loss_and_skipping_when_allowed(spark, kavka_cluster, tmp_path):
    create_topic(kavka_cluster, "lossy", partitions=1)
    produce(kavka_cluster, "lossy", [(None, f"x{i}".encode()) for i in range(30)])
    cp, out = str(tmp_path / "cp"), str(tmp_path / "out")
    run_available_now(spark, kavka_cluster, cp, out, subscribe="lossy", startingOffsets="earliest")
    produce(kavka_cluster, "lossy", [(None, f"y{i}".encode()) for i in range(30)])
    _delete_records(kavka_cluster, "lossy", 45)  # offsets 30..44 are gone before the query read them
    with pytest.raises(Exception, match="failOnDataLoss"):
        run_available_now(spark, kavka_cluster, cp, out, subscribe="lossy", startingOffsets="earliest")
    run_available_now(spark, kavka_cluster, cp, out, subscribe="lossy", startingOffsets="earliest",
                      failOnDataLoss="false")
    rows = sink_rows(spark, out)
    assert [r[2] for r in rows] == list(range(30)) + list(range(45, 60))


def _delete_topic(cluster, topic: str, timeout: float = 30.0) -> None:
    """Delete ``topic`` and wait until metadata no longer lists it."""
    import time

    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.delete_topics([topic], operation_timeout=30)[topic].result(60)
    deadline = time.monotonic() + timeout
    while topic in admin.list_topics(timeout=10).topics:
        if time.monotonic() > deadline:
            raise AssertionError(f"topic {topic} is still listed {timeout} s after its deletion")
        time.sleep(0.1)


def _recreate_topic(cluster, topic: str, timeout: float = 60.0) -> None:
    """Create ``topic`` again once its deletion has finished in ZooKeeper."""
    import time

    from confluent_kafka import KafkaException

    deadline = time.monotonic() + timeout
    while True:
        try:
            create_topic(cluster, topic)
            return
        except KafkaException as e:
            if "exist" not in str(e).lower() and "marked for deletion" not in str(e).lower() \
                    or time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def _last_checkpointed_offsets(cp: str) -> dict:
    import os
    latest = max((f for f in os.listdir(os.path.join(cp, "offsets")) if f.isdigit()), key=int)
    return json.loads(open(os.path.join(cp, "offsets", latest)).read().splitlines()[-1])


def test_deleted_topic_fails_the_query_or_is_dropped(spark, kavka_cluster, tmp_path):
    create_topic(kavka_cluster, "doomed", partitions=2)
    create_topic(kavka_cluster, "keeper", partitions=1)
    produce(kavka_cluster, "doomed", [(f"k{i}".encode(), f"d{i}".encode()) for i in range(20)])
    produce(kavka_cluster, "keeper", [(None, f"a{i}".encode()) for i in range(10)])
    cp, out = str(tmp_path / "cp"), str(tmp_path / "out")
    opts = {"subscribe": "doomed,keeper", "startingOffsets": "earliest"}
    run_available_now(spark, kavka_cluster, cp, out, **opts)
    assert len(sink_rows(spark, out)) == 30
    _delete_topic(kavka_cluster, "doomed")
    produce(kavka_cluster, "keeper", [(None, f"b{i}".encode()) for i in range(5)])
    with pytest.raises(Exception, match=r"doomed-0, doomed-1 are gone(.|\n)*'failOnDataLoss' to 'false'"):
        run_available_now(spark, kavka_cluster, cp, out, **opts)
    assert len(sink_rows(spark, out)) == 30  # the failed run wrote nothing
    run_available_now(spark, kavka_cluster, cp, out, failOnDataLoss="false", **opts)
    rows = sink_rows(spark, out)
    assert sorted(r[3] for r in rows if r[0] == "keeper") == sorted(
        [f"a{i}" for i in range(10)] + [f"b{i}" for i in range(5)])
    assert sorted(r[3] for r in rows if r[0] == "doomed") == sorted(f"d{i}" for i in range(20))
    assert _last_checkpointed_offsets(cp) == {"keeper": {"0": 15}}
    # The dropped partitions stay dropped: a further run goes on with keeper alone.
    produce(kavka_cluster, "keeper", [(None, f"c{i}".encode()) for i in range(3)])
    run_available_now(spark, kavka_cluster, cp, out, **opts)
    assert len(sink_rows(spark, out)) == 38


def test_topic_deleted_from_a_pattern_is_dropped_when_allowed(spark, kavka_cluster, tmp_path):
    for name in ("patgone-a", "patgone-b"):
        create_topic(kavka_cluster, name, partitions=1)
        produce(kavka_cluster, name, [(None, f"{name}-{i}".encode()) for i in range(4)])
    cp, out = str(tmp_path / "cp"), str(tmp_path / "out")
    opts = {"subscribePattern": "patgone-.*", "startingOffsets": "earliest"}
    run_available_now(spark, kavka_cluster, cp, out, **opts)
    _delete_topic(kavka_cluster, "patgone-a")
    produce(kavka_cluster, "patgone-b", [(None, b"later")])
    with pytest.raises(Exception, match="patgone-a-0 are gone"):
        run_available_now(spark, kavka_cluster, cp, out, **opts)
    run_available_now(spark, kavka_cluster, cp, out, failOnDataLoss="false", **opts)
    assert _last_checkpointed_offsets(cp) == {"patgone-b": {"0": 5}}
    assert sorted(r[3] for r in sink_rows(spark, out) if r[0] == "patgone-b") == sorted(
        [f"patgone-b-{i}" for i in range(4)] + ["later"])


def test_recreated_topic_is_data_loss_then_read_from_its_start(spark, kavka_cluster, tmp_path):
    create_topic(kavka_cluster, "phoenix", partitions=1)
    produce(kavka_cluster, "phoenix", [(None, f"old{i}".encode()) for i in range(30)])
    cp, out = str(tmp_path / "cp"), str(tmp_path / "out")
    opts = {"subscribe": "phoenix", "startingOffsets": "earliest"}
    run_available_now(spark, kavka_cluster, cp, out, **opts)
    _delete_topic(kavka_cluster, "phoenix")
    _recreate_topic(kavka_cluster, "phoenix")
    produce(kavka_cluster, "phoenix", [(None, f"new{i}".encode()) for i in range(5)])
    with pytest.raises(Exception, match=r"phoenix-0 \(offset went back from 30 to 5\)(.|\n)*failOnDataLoss"):
        run_available_now(spark, kavka_cluster, cp, out, **opts)
    run_available_now(spark, kavka_cluster, cp, out, failOnDataLoss="false", **opts)
    rows = sink_rows(spark, out)
    assert sorted(r[3] for r in rows) == sorted([f"old{i}" for i in range(30)] + [f"new{i}" for i in range(5)])
    assert _last_checkpointed_offsets(cp) == {"phoenix": {"0": 5}}
