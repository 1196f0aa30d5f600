"""The exactly-once streaming sink of format "kavka": a replayed
micro-batch writes nothing twice, and a failed task's partial output is
aborted (invisible to read_committed readers)."""

from __future__ import annotations

import os

import pytest
from pyspark.sql import functions as F

from tests.spark.conftest import create_topic, produce, read_all

pytestmark = pytest.mark.spark


def start_copy(spark, cluster, source: str, sink: str, checkpoint: str, transform=None):
    df = (spark.readStream.format("kavka").option("kafka.bootstrap.servers", cluster.bootstrap)
          .option("subscribe", source).option("startingOffsets", "earliest").load()
          .select("key", "value"))
    if transform is not None:
        df = transform(df)
    return (df.writeStream.format("kavka").option("kafka.bootstrap.servers", cluster.bootstrap)
            .option("topic", sink).option("checkpointLocation", checkpoint)
            .trigger(availableNow=True).start())


def finish(query) -> None:
    query.awaitTermination(120)
    assert not query.isActive, "the availableNow query did not finish in 120 s"


def batch_files(checkpoint: str, kind: str) -> list[int]:
    return sorted(int(f) for f in os.listdir(os.path.join(checkpoint, kind)) if f.isdigit())


def test_replayed_micro_batch_writes_nothing_twice(spark, kavka_cluster, tmp_path):
    create_topic(kavka_cluster, "eo-in", partitions=2)
    create_topic(kavka_cluster, "eo-out", partitions=2)
    produce(kavka_cluster, "eo-in", [(f"k{i}".encode(), f"v{i}".encode()) for i in range(100)])
    cp = str(tmp_path / "cp")
    finish(start_copy(spark, kavka_cluster, "eo-in", "eo-out", cp))
    assert sorted(m.value() for m in read_all(kavka_cluster, "eo-out")) == sorted(f"v{i}".encode() for i in range(100))

    # Forget that the last batch was committed: Spark must run it again on restart.
    last = batch_files(cp, "commits")[-1]
    os.remove(os.path.join(cp, "commits", str(last)))
    crc = os.path.join(cp, "commits", f".{last}.crc")
    if os.path.exists(crc):
        os.remove(crc)
    finish(start_copy(spark, kavka_cluster, "eo-in", "eo-out", cp))
    assert last in batch_files(cp, "commits"), "Spark did not replay the batch"

    committed = [m.value() for m in read_all(kavka_cluster, "eo-out")]
    assert sorted(committed) == sorted(f"v{i}".encode() for i in range(100))
    # The replay did not even write aborted copies: it wrote nothing at all.
    everything = [m.value() for m in read_all(kavka_cluster, "eo-out", committed=False)]
    assert sorted(everything) == sorted(committed)

    # New input after the replay is written once, in a new batch.
    produce(kavka_cluster, "eo-in", [(None, f"w{i}".encode()) for i in range(10)])
    finish(start_copy(spark, kavka_cluster, "eo-in", "eo-out", cp))
    committed = [m.value() for m in read_all(kavka_cluster, "eo-out")]
    assert sorted(committed) == sorted([f"v{i}".encode() for i in range(100)] + [f"w{i}".encode() for i in range(10)])


def test_failed_task_output_is_aborted_and_the_retry_writes_once(spark, kavka_cluster, tmp_path):
    create_topic(kavka_cluster, "fail-in", partitions=1)
    create_topic(kavka_cluster, "fail-out", partitions=1)
    produce(kavka_cluster, "fail-in", [(None, f"r{i}".encode()) for i in range(200)] + [(None, b"boom")])
    cp = str(tmp_path / "cp")

    def to_missing_partition(df):
        # "boom" goes to partition 7, which fail-out does not have: its delivery fails after the
        # 200 rows before it were sent in the same transaction, so the task fails and aborts them.
        return df.withColumn("partition", F.when(F.col("value") == F.lit(b"boom"), F.lit(7)).otherwise(F.lit(0)))

    q = start_copy(spark, kavka_cluster, "fail-in", "fail-out", cp, transform=to_missing_partition)
    with pytest.raises(Exception, match="could not be written to Kavka|Unknown partition"):
        q.awaitTermination(120)
    written = read_all(kavka_cluster, "fail-out", committed=False)
    assert written, "the failing task wrote nothing before failing: the test did not exercise an abort"
    assert read_all(kavka_cluster, "fail-out") == []

    finish(start_copy(spark, kavka_cluster, "fail-in", "fail-out", cp))
    committed = sorted(m.value() for m in read_all(kavka_cluster, "fail-out"))
    assert committed == sorted([f"r{i}".encode() for i in range(200)] + [b"boom"])
