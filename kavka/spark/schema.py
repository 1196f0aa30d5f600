"""The rows the ``kavka`` data source reads and writes: the schema of
Spark's built-in Kafka source, as a Spark ``StructType`` and as the Arrow
schema that ``read()`` must yield exactly.

Read schema (Spark's Kafka source): ``key binary, value binary,
topic string, partition int, offset long, timestamp timestamp,
timestampType int`` and, with ``includeHeaders=true``, ``headers
array<struct<key: string, value: binary>>``. ``timestampType`` is the
batch's TimestampType (0 CreateTime, 1 LogAppendTime).

The Arrow form must equal ``pyspark.sql.pandas.types.to_arrow_schema`` of
the Spark schema field for field, nullability and ``timestamp[us, UTC]``
included, or Spark refuses the batch; ``arrow_schema`` builds it from that
function so the two cannot drift.

Sink columns (Spark's Kafka sink): ``value`` (required), ``key``,
``headers``, ``topic``, ``partition``. Pure values; any process may call.
"""

from __future__ import annotations

from functools import lru_cache

from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

HEADERS_TYPE = ArrayType(StructType([StructField("key", StringType(), True),
                                     StructField("value", BinaryType(), True)]), True)

SINK_COLUMNS = ("key", "value", "headers", "topic", "partition")


def read_schema(include_headers: bool) -> StructType:
    fields = [
        StructField("key", BinaryType(), True),
        StructField("value", BinaryType(), True),
        StructField("topic", StringType(), True),
        StructField("partition", IntegerType(), True),
        StructField("offset", LongType(), True),
        StructField("timestamp", TimestampType(), True),
        StructField("timestampType", IntegerType(), True),
    ]
    if include_headers:
        fields.append(StructField("headers", HEADERS_TYPE, True))
    return StructType(fields)


@lru_cache(maxsize=4)
def arrow_schema(include_headers: bool):
    """The ``pyarrow.Schema`` a reader's batches must have."""
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(read_schema(include_headers), timezone="UTC")
