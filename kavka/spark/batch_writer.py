"""Batch write (``df.write.format("kavka")``): each task produces its rows
with an idempotent librdkafka producer (``kavka.spark.writer_rows``) and
waits for every delivery report; any failed delivery fails the task.

Guarantee: at least once, as Spark's Kafka sink: a retried task writes its
rows again (idempotence removes duplicates from the producer's own retries,
not from a task re-run). Use the streaming sink for exactly once.

``write`` runs on executors; ``commit``/``abort`` on the driver side have
nothing to finish: records are visible once acknowledged. Pickles.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage
from pyspark.sql.types import StructType

from kavka.spark.options import SinkOptions
from kavka.spark.writer_rows import DeliveryErrors, produce_batches, producer_config


@dataclass
class WrittenRows(WriterCommitMessage):
    rows: int


class KavkaBatchWriter(DataSourceArrowWriter):
    """See the module docstring."""

    def __init__(self, options: SinkOptions, schema: StructType) -> None:
        self.options = options
        self.schema = schema

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WrittenRows:
        from confluent_kafka import Producer

        errors = DeliveryErrors()
        producer = Producer(producer_config(self.options))
        rows = produce_batches(producer, iterator, self.options, errors)
        remaining = producer.flush(int(dict(self.options.producer).get("delivery.timeout.ms", 120_000)) / 1000)
        errors.raise_first()
        if remaining:
            raise RuntimeError(f"{remaining} record(s) were still unacknowledged when the delivery timeout ran out")
        return WrittenRows(rows)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        """Nothing to finish: every row was acknowledged by its task."""

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        """Nothing to undo: acknowledged rows stay (at-least-once)."""
