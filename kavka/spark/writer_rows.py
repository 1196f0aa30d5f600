"""Rows to Kafka records for the ``kavka`` sink, and the producer settings.

Sink columns (Spark's Kafka sink): ``value`` (required; binary or string),
``key`` (binary or string, may be null), ``topic`` (string; the ``topic``
option overrides it), ``partition`` (int; null = the partitioner decides),
``headers`` (``array<struct<key: string, value: binary>>``). Other columns
are ignored. ``check_sink_schema`` refuses a schema that breaks this when
the query is defined; a row whose topic is null with no ``topic`` option
fails its task with a message saying so.

Producer: confluent-kafka (librdkafka, C): the only Python client here
with idempotence and transactions (KIP-98) at C speed. It is created with
``enable.idempotence=true`` (no duplicates or reordering from its own
retries) and ``partitioner=murmur2_random`` so keyed rows land where Kafka's
Java default partitioner puts them (Kavka's ``partition_for_key``). Any
``kafka.*`` option goes to librdkafka, which refuses unknown ones by name.

Runs on executors (``produce_batches``) and in the planning process
(``check_sink_schema``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import pyarrow as pa
from pyspark.sql.types import ArrayType, BinaryType, IntegerType, StringType, StructType

from kavka.spark.client_security import librdkafka_settings
from kavka.spark.options import KavkaOptionError, SinkOptions

_BYTES_TYPES = (BinaryType, StringType)


def check_sink_schema(schema: StructType, options: SinkOptions) -> None:
    fields = {f.name.lower(): f for f in schema.fields}
    if "value" not in fields:
        raise KavkaOptionError(f"the kavka sink requires a 'value' column (binary or string); the data has "
                               f"{', '.join(schema.fieldNames()) or 'no columns'}")
    for name in ("value", "key"):
        if name in fields and not isinstance(fields[name].dataType, _BYTES_TYPES):
            raise KavkaOptionError(f"the '{name}' column must be binary or string, not "
                                   f"{fields[name].dataType.simpleString()}: cast it")
    if "topic" in fields and not isinstance(fields["topic"].dataType, StringType):
        raise KavkaOptionError(f"the 'topic' column must be a string, not {fields['topic'].dataType.simpleString()}")
    if "topic" not in fields and options.topic is None:
        raise KavkaOptionError("the kavka sink needs a topic: set option 'topic' or add a 'topic' column")
    if "partition" in fields and not isinstance(fields["partition"].dataType, IntegerType):
        raise KavkaOptionError("the 'partition' column must be an int, not "
                               f"{fields['partition'].dataType.simpleString()}: cast it")
    if "headers" in fields:
        t = fields["headers"].dataType
        ok = (isinstance(t, ArrayType) and isinstance(t.elementType, StructType)
              and [f.name for f in t.elementType.fields] == ["key", "value"]
              and isinstance(t.elementType.fields[0].dataType, StringType)
              and isinstance(t.elementType.fields[1].dataType, BinaryType))
        if not ok:
            raise KavkaOptionError("the 'headers' column must be array<struct<key: string, value: binary>>, not "
                                   f"{t.simpleString()}")


def producer_config(options: SinkOptions, **extra: str) -> dict:
    config = {
        "bootstrap.servers": options.bootstrap_servers,
        "enable.idempotence": True,
        "partitioner": "murmur2_random",
        "linger.ms": 5,
        "compression.type": "none",
    }
    security = options.security
    # librdkafka's names for the security settings (the Java client's are translated)
    config.update({k: v for k, v in options.producer if (k, v) not in security})
    config.update(librdkafka_settings(security))
    config.update(extra)
    return config


class DeliveryErrors:
    """Collects librdkafka delivery reports; ``raise_first`` after flush."""

    def __init__(self) -> None:
        self.first = None
        self.failed = 0

    def __call__(self, err, msg) -> None:
        if err is not None:
            self.failed += 1
            if self.first is None:
                self.first = err

    def raise_first(self) -> None:
        if self.first is not None:
            raise RuntimeError(f"{self.failed} record(s) could not be written to Kavka; first error: {self.first}")


def _column(batch: pa.RecordBatch, name: str) -> list | None:
    i = batch.schema.get_field_index(name)
    return None if i < 0 else batch.column(i).to_pylist()


def _required_column(batch: pa.RecordBatch, name: str) -> list:
    """A column the schema check made sure of (``value``; ``topic`` without the option)."""
    column = _column(batch, name)
    if column is None:
        raise KavkaOptionError(f"the batch has no {name!r} column")
    return column


def produce_batches(producer, batches: Iterable[pa.RecordBatch], options: SinkOptions,
                    on_delivery: DeliveryErrors) -> int:
    """``producer.produce`` every row; returns the row count. Waits for
    buffer space (bounded by librdkafka's own queue limits and timeouts)."""
    rows = 0
    produce = producer.produce
    for batch in batches:
        n = batch.num_rows
        values = _required_column(batch, "value")
        keys = _column(batch, "key") or [None] * n
        topics = [options.topic] * n if options.topic else _required_column(batch, "topic")
        partitions = _column(batch, "partition") or [None] * n
        headers = _column(batch, "headers") or [None] * n
        for i in range(n):
            topic = topics[i]
            if topic is None:
                raise KavkaOptionError("a row has a null 'topic' and no 'topic' option is set")
            kwargs: dict[str, object] = {"on_delivery": on_delivery}
            if partitions[i] is not None:
                kwargs["partition"] = partitions[i]
            if headers[i]:
                kwargs["headers"] = [(h["key"], h["value"]) for h in headers[i]]
            while True:
                try:
                    produce(topic, values[i], keys[i], **kwargs)
                    break
                except BufferError:
                    producer.poll(0.05)  # the local queue is full: serve deliveries, then retry
        rows += n
        producer.poll(0)
    return rows


def drain(batches: Iterator[pa.RecordBatch]) -> None:
    for _ in batches:
        pass
