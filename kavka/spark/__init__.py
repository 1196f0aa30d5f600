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

Modules:

* ``source`` — ``KavkaDataSource``: format ``"kavka"``, its schema, readers
  and writers.
* ``options`` — the format's options, parsed and checked once into frozen
  values; ``client_security`` — the ``kafka.*`` security options for
  Kavka's client and librdkafka; ``schema`` — the rows read and written (Spark's Kafka-source
  schema, as a ``StructType`` and as Arrow).
* reading: ``batch_reader`` (``spark.read``), ``stream_reader``
  (``spark.readStream``: micro-batches, checkpointed offsets),
  ``offset_lookup`` (subscribed partitions, offsets a position names),
  ``offsets`` (the offsets JSON of options and checkpoints),
  ``lost_partitions`` (which partitions of a stream are gone: the
  data-loss decision), ``ranges`` (offset ranges and how a read is cut into
  Spark partitions), ``range_reader`` (an executor fetches one range),
  ``arrow_records`` (fetched batches to Arrow columns, through the C
  extension ``_recordcols`` or aiokafka's reader).
* writing: ``writer_rows`` (rows to records, producer settings),
  ``batch_writer`` (``df.write``), ``stream_writer`` (``writeStream``,
  each micro-batch exactly once with transactions), ``commit_log`` (the
  sink's per-task commit records in a compacted topic).
"""

from __future__ import annotations

from kavka.spark.source import KavkaDataSource

__all__ = ["KavkaDataSource", "register"]


def register(spark) -> None:
    """Register format "kavka" on ``spark`` (a SparkSession); idempotent."""
    spark.dataSource.register(KavkaDataSource)
