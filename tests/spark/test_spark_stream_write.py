"""The exactly-once streaming sink of format "kavka": a replayed
micro-batch writes nothing twice, and a failed task's partial output is
aborted (invisible to read_committed readers)."""

from __future__ import annotations

import os

import pytest
from pyspark.sql import functions as F

from tests.spark.conftest import create_topic, produce, read_all

pytestmark = pytest.mark.spark


def start_copy(spark, cluster, source: str, sink: str, checkpoint: str, transform=None, **sink_options):
    df = (spark.readStream.format("kavka").option("kafka.bootstrap.servers", cluster.bootstrap)
          .option("subscribe", source).option("startingOffsets", "earliest").load()
          .select("key", "value"))
    if transform is not None:
        df = transform(df)
    w = (df.writeStream.format("kavka").option("kafka.bootstrap.servers", cluster.bootstrap)
         .option("topic", sink).option("checkpointLocation", checkpoint))
    for k, v in sink_options.items():
        w = w.option(k, v)
    return w.trigger(availableNow=True).start()


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
    create_topic(kavka_cluster, "fail-out", partitions=1, config={"max.message.bytes": "2000"})
    produce(kavka_cluster, "fail-in", [(None, f"r{i}".encode()) for i in range(200)] + [(None, b"boom")])
    cp = str(tmp_path / "cp")

    def oversize_boom(df):
        # "boom" becomes 4000 bytes, more than fail-out accepts: the broker refuses the batch
        # holding it, while the earlier batches (10 records each) of the same transaction were
        # written; the task then fails and aborts them.
        return df.withColumn("value", F.when(F.col("value") == F.lit(b"boom"), F.expr("repeat(value, 1000)"))
                             .otherwise(F.col("value")))

    q = start_copy(spark, kavka_cluster, "fail-in", "fail-out", cp, transform=oversize_boom,
                   **{"kafka.batch.num.messages": "10"})
    with pytest.raises(Exception, match="could not be written to Kavka"):
        q.awaitTermination(120)
    written = read_all(kavka_cluster, "fail-out", committed=False)
    assert len(written) >= 10, "the failing task wrote nothing before failing: the test did not exercise an abort"
    assert read_all(kavka_cluster, "fail-out") == []

    # The same query without the oversize value: the replayed batch writes every row once.
    finish(start_copy(spark, kavka_cluster, "fail-in", "fail-out", cp, **{"kafka.batch.num.messages": "10"}))
    committed = sorted(m.value() for m in read_all(kavka_cluster, "fail-out"))
    assert committed == sorted([f"r{i}".encode() for i in range(200)] + [b"boom"])
