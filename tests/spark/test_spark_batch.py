"""Batch read and write of format "kavka" against a real Kavka broker:
round trip with keys, headers, topic and partition columns; offset
bounds; minPartitions; only committed data; clear errors for bad options."""

from __future__ import annotations

import pytest
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, BinaryType, StringType, StructField, StructType

from tests.spark.conftest import create_topic, produce, read_all

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def source_topic(kavka_cluster):
    create_topic(kavka_cluster, "events", partitions=3)
    produce(kavka_cluster, "events",
            [(f"k{i % 7}".encode(), f"v{i}".encode(), [("n", str(i).encode()), ("empty", None)]) for i in range(300)])
    return "events"


def _read(spark, cluster, **opts):
    r = spark.read.format("kavka").option("kafka.bootstrap.servers", cluster.bootstrap)
    for k, v in opts.items():
        r = r.option(k, v)
    return r.load()


def test_batch_read_equals_what_a_kafka_client_reads(spark, kavka_cluster, source_topic):
    df = _read(spark, kavka_cluster, subscribe=source_topic, includeHeaders="true")
    rows = df.collect()
    want = {(m.partition(), m.offset()): m for m in read_all(kavka_cluster, source_topic)}
    assert len(rows) == len(want) == 300
    for r in rows:
        m = want[(r.partition, r.offset)]
        assert (bytes(r.key), bytes(r.value), r.topic, r.timestampType) == (m.key(), m.value(), source_topic, 0)
        assert [(h.key, None if h.value is None else bytes(h.value)) for h in r.headers] == m.headers()
        assert int(r.timestamp.timestamp() * 1000) // 10 == m.timestamp()[1] // 10
    # keyed records went where Kafka's murmur2 partitioner puts them
    from kavka.client.partitioner import partition_for_key
    assert all(r.partition == partition_for_key(bytes(r.key), 3) for r in rows)


def test_batch_write_round_trip_with_keys_headers_topic_and_partition(spark, kavka_cluster, source_topic):
    create_topic(kavka_cluster, "copy-a", partitions=2)
    create_topic(kavka_cluster, "copy-b", partitions=2)
    src = _read(spark, kavka_cluster, subscribe=source_topic, includeHeaders="true")
    out = src.select(
        "key", "value", "headers",
        F.when(F.col("offset") % 2 == 0, F.lit("copy-a")).otherwise(F.lit("copy-b")).alias("topic"),
        (F.col("partition") % 2).cast("int").alias("partition"))
    out.write.mode("append").format("kavka").option("kafka.bootstrap.servers", kavka_cluster.bootstrap).save()
    expected = sorted((bytes(r.key), bytes(r.value), "copy-a" if r.offset % 2 == 0 else "copy-b", r.partition % 2,
                       tuple((h.key, None if h.value is None else bytes(h.value)) for h in r.headers))
                      for r in src.collect())
    got = sorted((m.key(), m.value(), m.topic(), m.partition(), tuple(m.headers() or ()))
                 for t in ("copy-a", "copy-b") for m in read_all(kavka_cluster, t))
    assert got == expected
    # and read back through the source itself
    back = _read(spark, kavka_cluster, subscribePattern="copy-.*").select("value").collect()
    assert sorted(bytes(r.value) for r in back) == sorted(e[1] for e in expected)


def test_write_topic_option_overrides_and_strings_are_utf8(spark, kavka_cluster):
    create_topic(kavka_cluster, "strings", partitions=1)
    df = spark.createDataFrame([("a", "ä1", "ignored"), (None, "b2", "ignored")], "key string, value string, topic string")
    df.write.mode("append").format("kavka").option("kafka.bootstrap.servers", kavka_cluster.bootstrap) \
        .option("topic", "strings").save()
    got = sorted(((m.key(), m.value()) for m in read_all(kavka_cluster, "strings")), key=lambda x: x[1])
    assert got == sorted([(b"a", "ä1".encode()), (None, b"b2")], key=lambda x: x[1])


def test_offset_bounds_assign_and_min_partitions(spark, kavka_cluster, source_topic):
    counts = {r.partition: r["count"] for r in _read(spark, kavka_cluster, subscribe=source_topic)
              .groupBy("partition").count().collect()}
    df = _read(spark, kavka_cluster, assign=f'{{"{source_topic}":[0,2]}}',
               startingOffsets=f'{{"{source_topic}":{{"0":5,"2":-2}}}}',
               endingOffsets=f'{{"{source_topic}":{{"0":-1,"2":10}}}}', minPartitions="8")
    assert df.rdd.getNumPartitions() >= 8
    rows = df.select("partition", "offset").collect()
    assert sorted((r.partition, r.offset) for r in rows) == sorted(
        [(0, o) for o in range(5, counts[0])] + [(2, o) for o in range(0, 10)])


def test_starting_timestamp_reads_from_the_first_record_at_or_after_it(spark, kavka_cluster, source_topic):
    all_rows = _read(spark, kavka_cluster, subscribe=source_topic).select("timestamp", "offset", "partition").collect()
    middle = sorted(r.timestamp for r in all_rows)[len(all_rows) // 2]
    ms = int(middle.timestamp() * 1000)
    df = _read(spark, kavka_cluster, subscribe=source_topic, startingTimestamp=str(ms))
    got = df.select("timestamp").collect()
    assert got and all(int(r.timestamp.timestamp() * 1000) >= ms - 1 for r in got)


def test_offsets_by_timestamp_and_ending_timestamp(spark, kavka_cluster):
    import time

    create_topic(kavka_cluster, "timed", partitions=2)
    base = int(time.time() * 1000) - 100_000
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": kavka_cluster.bootstrap})
    for i in range(20):  # record i of each partition has timestamp base + i * 1000
        for part in (0, 1):
            p.produce("timed", f"{part}-{i}".encode(), partition=part, timestamp=base + i * 1000)
    assert p.flush(30) == 0
    df = _read(spark, kavka_cluster, subscribe="timed",
               startingOffsetsByTimestamp=f'{{"timed":{{"0":{base + 5000},"1":{base + 15500}}}}}',
               endingTimestamp=str(base + 18000))
    got = sorted((r.partition, r.offset) for r in df.select("partition", "offset").collect())
    assert got == [(0, o) for o in range(5, 18)] + [(1, o) for o in range(16, 18)]
    with pytest.raises(Exception, match="no record at or after the starting timestamp"):
        _read(spark, kavka_cluster, subscribe="timed", startingTimestamp=str(base + 10**9)).count()
    late = _read(spark, kavka_cluster, subscribe="timed", startingTimestamp=str(base + 10**9),
                 startingOffsetsByTimestampStrategy="latest")
    assert late.count() == 0


def test_only_committed_data_is_read(spark, kavka_cluster):
    from confluent_kafka import Producer

    create_topic(kavka_cluster, "txn", partitions=1)
    p = Producer({"bootstrap.servers": kavka_cluster.bootstrap, "transactional.id": "spark-test-txn"})
    p.init_transactions(30)
    for label, end in (("committed", p.commit_transaction), ("aborted", p.abort_transaction)):
        p.begin_transaction()
        for i in range(5):
            p.produce("txn", f"{label}-{i}".encode())
        p.flush(30)
        end(30)
    p.begin_transaction()
    p.produce("txn", b"open-0")  # left open: beyond the last stable offset
    p.flush(30)
    try:
        committed = [bytes(r.value).decode() for r in _read(spark, kavka_cluster, subscribe="txn").collect()]
        assert committed == [f"committed-{i}" for i in range(5)]
        dirty = [bytes(r.value).decode() for r in
                 _read(spark, kavka_cluster, subscribe="txn", **{"kafka.isolation.level": "read_uncommitted"}).collect()]
        assert dirty == [f"committed-{i}" for i in range(5)] + [f"aborted-{i}" for i in range(5)] + ["open-0"]
    finally:
        p.abort_transaction(30)


@pytest.mark.parametrize("opts, words", [
    ({"subscribe": "events", "assign": '{"events":[0]}'}, "only one of the options"),
    ({"assign": '{"events":[0,9]}'}, "events-9, which is not in the cluster"),
    ({"subscribe": "events", "startingOffsets": '{"events":{"0":}}'}, "option 'startingOffsets': expected JSON"),
    ({"subscribe": "events", "startingOffsets": '{"events":{"5":0}}'}, "names events-5"),
    ({"subscribe": "events", "minPartitions": "-3"}, "'minPartitions' must be a positive integer"),
    ({"subscribe": "events", "startingOffsets": '{"events":{"0":50}}', "endingOffsets": '{"events":{"0":10}}'},
     "is after its ending offset"),
])
def test_bad_options_fail_with_clear_messages(spark, kavka_cluster, source_topic, opts, words):
    with pytest.raises(Exception, match=words.replace("(", r"\(").replace("{", r"\{").replace("}", r"\}")):
        _read(spark, kavka_cluster, **opts).count()


def test_sink_needs_a_value_column_and_a_topic(spark, kavka_cluster):
    w = spark.createDataFrame([("a",)], "key string").write.mode("append").format("kavka") \
        .option("kafka.bootstrap.servers", kavka_cluster.bootstrap).option("topic", "x")
    with pytest.raises(Exception, match="requires a 'value' column"):
        w.save()
    w = spark.createDataFrame([("a",)], "value string").write.mode("append").format("kavka") \
        .option("kafka.bootstrap.servers", kavka_cluster.bootstrap)
    with pytest.raises(Exception, match="needs a topic"):
        w.save()
    bad_headers = StructType([StructField("value", BinaryType()), StructField(
        "headers", ArrayType(StructType([StructField("key", StringType()), StructField("value", StringType())])))])
    w = spark.createDataFrame([(b"v", [("h", "x")])], bad_headers).write.mode("append").format("kavka") \
        .option("kafka.bootstrap.servers", kavka_cluster.bootstrap).option("topic", "x")
    with pytest.raises(Exception, match="'headers' column must be"):
        w.save()
