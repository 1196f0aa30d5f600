"""Spark benchmark: format "kavka" (kavka.spark) against Spark's own
parquet reader over the same rows, in one run on this machine.

Set-up: a one-broker ``LocalCluster`` (its own ZooKeeper), a topic of
``--partitions`` partitions (RF=1), ``--records`` records of ``--size``
bytes produced with confluent-kafka; a SparkSession configured for a
2-core machine (``local[2]``, as in the tests); the same rows (all seven
columns of the Kafka-source schema) copied once to a parquet file.

Measured, each case ``--repeat`` times, kavka and parquet alternating (the
best of each kept: the machine is shared), after one warm-up query each:

* ``count``: ``spark.read.format("kavka")...load().count()`` against
  ``spark.read.parquet(path).count()``;
* ``scan value``: a full ``select("value")`` scan, forced through the
  ``noop`` sink, against the same on parquet;
* ``stream``: a streaming query, ``startingOffsets=earliest``,
  ``maxOffsetsPerTrigger`` unset, ``Trigger.AvailableNow``, to the noop
  sink, against a parquet file stream over the same file.

Printed: rows/s of each, and kavka/parquet ratios. Goal: >= 0.5x for the
batch reads. Parquet ``count()`` reads only row-group metadata, so its
ratio is a hard one for any source that must move the rows.

Run: ``.venv/bin/python bench/spark.py [--records 1000000] [--size 100]
[--partitions 4] [--repeat 3]`` (needs the ``spark`` extra and Java).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time

from kavka.tools.cluster import LocalCluster


def produce(bootstrap: str, topic: str, records: int, size: int) -> float:
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "batch.size": 1_000_000,
                  "enable.idempotence": True, "queue.buffering.max.messages": 1_000_000})
    value = os.urandom(size)
    failed = []
    start = time.perf_counter()
    for i in range(records):
        while True:
            try:
                p.produce(topic, value, b"%d" % i, on_delivery=lambda e, m: failed.append(e) if e else None)
                break
            except BufferError:
                p.poll(0.01)
    if p.flush(300) or failed:
        raise SystemExit(f"producing the bench records failed: {failed[:1]}")
    return time.perf_counter() - start


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(60)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        t = admin.list_topics(topic, timeout=10).topics.get(topic)
        if t is not None and t.error is None and all(p.leader >= 0 for p in t.partitions.values()):
            return
        time.sleep(0.1)
    raise SystemExit(f"topic {topic} got no leaders")


def session():
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    import kavka.spark

    spark = (SparkSession.builder.master("local[2]").appName("kavka-bench")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "2").config("spark.default.parallelism", "2")
             .config("spark.driver.memory", "1g").config("spark.sql.session.timeZone", "UTC")
             .config("spark.sql.adaptive.enabled", "false").config("spark.sql.streaming.stopTimeout", "10s")
             .config("spark.driver.extraJavaOptions", "-XX:+UseSerialGC")
             .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    kavka.spark.register(spark)
    return spark


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    n = args.records
    work = tempfile.mkdtemp(prefix="kavka-bench-spark-")
    cluster = LocalCluster(1, os.path.join(work, "cluster"), config={"num.partitions": "1"})
    try:
        cluster.start()
        create_topic(cluster.bootstrap, "bench", args.partitions)
        secs = produce(cluster.bootstrap, "bench", n, args.size)
        print(f"produced {n:,} records of {args.size} B to {args.partitions} partitions in {secs:.1f} s")
        spark = session()

        def kavka_df():
            return (spark.read.format("kavka").option("kafka.bootstrap.servers", cluster.bootstrap)
                    .option("subscribe", "bench").load())

        parquet_path = os.path.join(work, "bench.parquet")
        kavka_df().write.parquet(parquet_path)
        assert spark.read.parquet(parquet_path).count() == n, "the parquet copy lost rows"

        def stream(fmt: str) -> None:
            if fmt == "kavka":
                src = (spark.readStream.format("kavka").option("kafka.bootstrap.servers", cluster.bootstrap)
                       .option("subscribe", "bench").option("startingOffsets", "earliest").load())
            else:
                src = spark.readStream.schema(spark.read.parquet(parquet_path).schema).parquet(parquet_path)
            cp = tempfile.mkdtemp(prefix="cp-", dir=work)
            q = (src.writeStream.format("noop").option("checkpointLocation", cp)
                 .trigger(availableNow=True).start())
            q.awaitTermination(600)
            rows = sum(p["numInputRows"] for p in q.recentProgress)
            if rows != n:
                raise SystemExit(f"the {fmt} stream read {rows} rows, expected {n}")

        cases = {
            "count": (lambda: kavka_df().count(), lambda: spark.read.parquet(parquet_path).count()),
            "scan value": (lambda: kavka_df().select("value").write.format("noop").mode("overwrite").save(),
                           lambda: spark.read.parquet(parquet_path).select("value").write.format("noop")
                           .mode("overwrite").save()),
            "stream": (lambda: stream("kavka"), lambda: stream("parquet")),
        }
        for k, p in cases.values():  # warm-up: Python workers, JIT, page cache
            k(), p()
        best: dict[str, list[float]] = {}
        for _ in range(args.repeat):
            for name, (k, p) in cases.items():
                tk, tp = timed(k), timed(p)
                prev = best.get(name, [float("inf"), float("inf")])
                best[name] = [min(prev[0], tk), min(prev[1], tp)]
        print(f"\nkavka.spark vs parquet, {n:,} rows of {args.size} B, local[2], best of {args.repeat}\n")
        print(f"{'case':<12}{'kavka rows/s':>16}{'parquet rows/s':>18}{'kavka/parquet':>16}")
        for name, (tk, tp) in best.items():
            print(f"{name:<12}{n / tk:>16,.0f}{n / tp:>18,.0f}{tp / tk:>15.2f}x")
        for name in ("count", "scan value"):
            tk, tp = best[name]
            print(f"  goal {name} >= 0.5x parquet: {tp / tk:.2f}x {'met' if tp / tk >= 0.5 else 'NOT met'}")
        spark.stop()
    finally:
        cluster.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
