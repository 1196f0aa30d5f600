"""``kavka.spark``: a PySpark (4.3) Python Data Source for format
``"kavka"`` that mirrors Spark's Kafka source and sink over Kavka.

    import kavka.spark
    kavka.spark.register(spark)
    df = (spark.read.format("kavka")
          .option("kafka.bootstrap.servers", "127.0.0.1:9092")
          .option("subscribe", "events").load())

Automatic registration: PySpark looks for top-level modules named
``pyspark_*`` that define ``DefaultSource`` when a session first touches
Python data sources; this project ships ``pyspark_kavka``, so an installed
Kavka needs no ``register`` call (``register`` stays for sessions created
before installation and for explicitness).

Where things run (Spark runs every method in some Python process, never in
the driver's interpreter): ``source`` (options -> readers and writers),
``batch_reader``/``stream_reader`` plan offset ranges with
``offset_lookup``; executors read ranges with ``range_reader`` +
``arrow_records``; ``batch_writer``/``stream_writer`` produce with
librdkafka, the latter exactly once through ``commit_log``. Nothing else
in ``kavka`` imports this package.
"""

from __future__ import annotations

from kavka.spark.source import KavkaDataSource

__all__ = ["KavkaDataSource", "register"]


def register(spark) -> None:
    """Register format "kavka" on ``spark`` (a SparkSession); idempotent."""
    spark.dataSource.register(KavkaDataSource)
