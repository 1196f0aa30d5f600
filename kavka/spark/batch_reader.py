"""Batch read (``spark.read.format("kavka")``): plan offset ranges on the
driver, read them on executors.

``partitions()`` runs once in Spark's planning process: it resolves the
subscription to topic-partitions, the starting and ending positions to
offsets (ending "latest" = the last stable offset under read_committed, so
only committed data is read), drops empty ranges, splits by
``minPartitions`` (``kavka.spark.ranges``) and returns one
``OffsetRangePartition`` per range. A starting offset after the ending one
is an error (Spark's Kafka source refuses it too). ``read()`` runs on an
executor: ``kavka.spark.range_reader``.

The reader pickles: it holds only the parsed ``SourceOptions``.
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, InputPartition

from kavka.spark.offset_lookup import OffsetLookup
from kavka.spark.options import KavkaOptionError, SourceOptions
from kavka.spark.ranges import OffsetRangePartition, plan_ranges, split_ranges


class KavkaBatchReader(DataSourceReader):
    """See the module docstring."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options

    def partitions(self) -> list[OffsetRangePartition]:
        with OffsetLookup(self.options) as lookup:
            tps = lookup.topic_partitions()
            starts = lookup.resolve(self.options.starting, tps, option="starting", ending=False)
            ends = lookup.resolve(self.options.ending, tps, option="ending", ending=True)
        for tp in tps:
            if starts[tp] > ends[tp]:
                raise KavkaOptionError(f"the starting offset {starts[tp]} of {tp} is after its ending offset "
                                       f"{ends[tp]}; check startingOffsets/endingOffsets (or the timestamps)")
        ranges = split_ranges(plan_ranges(starts, ends), self.options.min_partitions)
        return [OffsetRangePartition(r) for r in ranges]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, OffsetRangePartition):
            # partitions() found nothing to read: PySpark then runs one task
            # with a placeholder InputPartition(None).
            return iter(())
        # Imported here, on the executor: the planning process (the driver's
        # Python runner, a fresh interpreter per streaming query) never reads.
        from kavka.spark.range_reader import RangeReader

        return RangeReader(self.options, partition.offset_range).batches()
