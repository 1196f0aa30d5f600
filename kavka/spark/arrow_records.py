"""Decode fetched v2 record batches into the Arrow columns of the
Kafka-source schema (``kavka.spark.schema``).

Why this decoder: the executor's read path is bound by record decoding
(fetching the raw bytes with ``kavka.client`` costs ~5 % of the time).
Measured here on the same fetched bytes (100 B records, one core, a
shared and loaded 2-core machine, so figures swing): a hand-written
pure-Python walk of the record bytes straight into column lists made
100-180k records/s; ``kavka.protocol.records`` (a ``Record`` dataclass per
record) ~70k/s; librdkafka through confluent-kafka (a ``Message`` per
record, fetch settings tuned) 100-290k/s; aiokafka's record batch reader,
compiled with Cython, 340-450k/s. So batches are walked by aiokafka's
``DefaultRecordBatch`` (its C extension; aiokafka is in the ``spark``
extra); everything around it stays ours: batch framing and CRC32C
(``kavka.protocol.records.iter_batches``), transaction filtering and
offset bounds, and the Arrow columns (converted from lists in C).

What ``ColumnBuilder.add_fetch`` keeps: records with ``start <= offset <
end`` of data batches; control batches are skipped; with read_committed,
batches of a transaction listed in the fetch's aborted transactions are
dropped (KIP-98: a producer's records from its aborted first offset until
its next control marker). A batch failing its CRC or whose records do not
parse raises ``CorruptRecordBatch``.

Pure functions over bytes; any thread of an executor's Python worker.
"""

from __future__ import annotations

from collections.abc import Iterable

import pyarrow as pa
import pyarrow.compute as pc

from aiokafka.errors import CorruptRecordException
from aiokafka.record.default_records import DefaultRecordBatch as _RecordBatch

from kavka.protocol.records import iter_batches
from kavka.protocol.records.batch import CorruptRecordBatch
from kavka.spark.schema import arrow_schema

_TS_TYPE = pa.timestamp("us", tz="UTC")


class ColumnBuilder:
    """Accumulates the records of one topic-partition; ``record_batch()``
    returns them as a ``pyarrow.RecordBatch`` of ``arrow_schema`` and
    starts over. ``next_offset`` is where the following fetch starts
    (past the last batch seen, so compacted gaps and markers are crossed)."""

    __slots__ = ("topic", "partition", "include_headers", "keys", "values", "offsets", "timestamps",
                 "ts_types", "headers", "next_offset")

    def __init__(self, topic: str, partition: int, include_headers: bool, next_offset: int) -> None:
        self.topic = topic
        self.partition = partition
        self.include_headers = include_headers
        self.next_offset = next_offset
        self._reset()

    def _reset(self) -> None:
        self.keys: list = []
        self.values: list = []
        self.offsets: list[int] = []
        self.timestamps: list[int] = []
        self.ts_types: list[int] = []
        self.headers: list = []

    def __len__(self) -> int:
        return len(self.offsets)

    def add_fetch(self, data: bytes, end: int, aborted: Iterable[tuple[int, int]] = (),
                  read_committed: bool = True) -> None:
        """Append the records of ``data`` (one partition's fetched bytes)
        in ``[self.next_offset, end)``; ``aborted`` holds ``(first_offset,
        producer_id)`` of the fetch's aborted transactions."""
        pending = sorted(aborted)
        open_aborted: set[int] = set()
        start = self.next_offset
        for pos, h in iter_batches(data):
            while pending and pending[0][0] <= h.base_offset + h.last_offset_delta:
                open_aborted.add(pending.pop(0)[1])
            if h.base_offset >= end:
                break
            nxt = h.base_offset + h.last_offset_delta + 1
            if nxt > start:
                if h.attributes & 0x20:  # control batch: ends its producer's transaction
                    open_aborted.discard(h.producer_id)
                elif not (read_committed and h.attributes & 0x10 and h.producer_id in open_aborted):
                    self._add_batch(data, pos, h, start, end)
            self.next_offset = min(max(self.next_offset, nxt), end)

    def _add_batch(self, data: bytes, pos: int, h, start: int, end: int) -> None:
        # The batch's CRC32C and header were checked by iter_batches; the
        # records (decompressed if need be) are walked by aiokafka's C decoder.
        try:
            records = list(_RecordBatch(data[pos:pos + h.size]))
        except (ValueError, IndexError, CorruptRecordException) as e:
            raise CorruptRecordBatch(f"batch at offset {h.base_offset}: {e}") from None
        if not (start <= h.base_offset and h.base_offset + h.last_offset_delta < end):
            records = [r for r in records if start <= r.offset < end]  # the range starts or ends inside
        # One list comprehension per column: measured ~20 % faster than one
        # Python loop appending to four lists per record.
        self.keys += [r.key for r in records]
        self.values += [r.value for r in records]
        self.offsets += [r.offset for r in records]
        self.timestamps += [r.timestamp for r in records]
        if self.include_headers:
            self.headers += [[{"key": k, "value": v} for k, v in r.headers] for r in records]
        kept = len(records)
        self.ts_types += [int(h.timestamp_type)] * kept

    def record_batch(self) -> pa.RecordBatch:
        n = len(self.offsets)
        ts = pa.array(self.timestamps, pa.int64())
        columns = [
            pa.array(self.keys, pa.binary()),
            pa.array(self.values, pa.binary()),
            pa.repeat(pa.scalar(self.topic, pa.string()), n),
            pa.repeat(pa.scalar(self.partition, pa.int32()), n),
            pa.array(self.offsets, pa.int64()),
            pc.multiply(ts, 1000).cast(_TS_TYPE),
            pa.array(self.ts_types, pa.int32()),
        ]
        schema = arrow_schema(self.include_headers)
        if self.include_headers:
            columns.append(pa.array(self.headers, schema.field("headers").type))
        self._reset()
        return pa.RecordBatch.from_arrays(columns, schema=schema)
