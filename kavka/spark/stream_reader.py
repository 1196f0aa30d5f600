"""Streaming read (``spark.readStream.format("kavka")``): micro-batches of
offset ranges, offsets checkpointed by Spark as ``{"topic": {"0": n}}``.

Offsets: ``initialOffset`` resolves ``startingOffsets`` (default latest)
for the partitions subscribed now. ``latestOffset(start, limit)`` looks the
partitions up again (new partitions of subscribed topics, new topics
matching a pattern, start at their earliest offset, as in Spark's Kafka
source) and returns each one's latest offset (the last stable offset
under read_committed), capped by the read limit:
``ReadMaxRows`` (``maxOffsetsPerTrigger``) spreads the budget over the
partitions in proportion to their backlog; ``ReadAllAvailable`` takes all.
``minOffsetsPerTrigger`` holds a batch back (returns ``start``) until that
many offsets are new or ``maxTriggerDelay`` passed since the last batch.
With ``Trigger.AvailableNow`` (``prepareForTriggerAvailableNow``) the
latest offsets are frozen once and never exceeded. Offsets are emitted in
a stable order (``kavka.spark.offsets.to_json_dict``): Spark compares them
as JSON text.

Data loss, as in Spark's Kafka source (``kavka.spark.lost_partitions``
decides): a partition the query was reading that a complete Metadata
answer no longer lists (topic deleted, or no longer subscribed), or whose
latest offset went below the query's position (topic recreated). Under
``failOnDataLoss`` ``latestOffset`` raises ``DataLossError`` naming them;
otherwise they are dropped from the offsets with a warning (a recreated
partition then comes back as a new one, read from its earliest offset).
A partition only missing from a failed or incomplete answer, or leaderless
during a broker failover (still listed, LEADER_NOT_AVAILABLE), keeps its
place. Offsets removed by retention or DeleteRecords are found by the
executors (``range_reader``).

``commit(end)`` does nothing: Spark's checkpoint is the truth (the source
never commits to a consumer group). Lives in Spark's long-lived
stream-reader Python process; ``read()`` runs on executors; pickles.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Mapping

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    ReadMinRows,
    SupportsTriggerAvailableNow,
)

from kavka.common.topic_partition import TopicPartition
from kavka.spark.lost_partitions import DataLossError, OffsetCheck, check_offsets, data_loss_message
from kavka.spark.offset_lookup import OffsetLookup
from kavka.spark.offsets import from_json_dict, to_json_dict
from kavka.spark.options import SourceOptions
from kavka.spark.ranges import OffsetRange, OffsetRangePartition, split_ranges

log = logging.getLogger(__name__)


def rate_limit(start: Mapping[TopicPartition, int], latest: Mapping[TopicPartition, int],
               max_rows: int) -> dict[TopicPartition, int]:
    """Cap ``latest`` so at most ``max_rows`` offsets are taken in total,
    each partition in proportion to its backlog (at least one offset from a
    partition with a backlog while the budget lasts). Pure."""
    backlog = {tp: max(0, latest[tp] - start.get(tp, latest[tp])) for tp in latest}
    total = sum(backlog.values())
    if total <= max_rows:
        return dict(latest)
    out = {}
    budget = max_rows
    for tp in sorted(latest):
        share = min(backlog[tp], budget, max(1, backlog[tp] * max_rows // total)) if backlog[tp] else 0
        budget -= share
        out[tp] = start.get(tp, latest[tp]) + share
    return out


class KavkaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """See the module docstring."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        self._frozen: dict[TopicPartition, int] | None = None
        self._last_batch_at = time.monotonic()  # for minOffsetsPerTrigger / maxTriggerDelay

    # -- planning process ----------------------------------------------------------------

    def initialOffset(self) -> dict:
        with OffsetLookup(self.options) as lookup:
            tps = lookup.topic_partitions()
            return to_json_dict(lookup.resolve(self.options.starting, tps, option="starting", ending=False))

    def getDefaultReadLimit(self) -> ReadLimit:
        # PySpark offers no composite limit: with both options the max is
        # the limit and the min is applied in latestOffset regardless.
        if self.options.max_offsets_per_trigger:
            return ReadMaxRows(self.options.max_offsets_per_trigger)
        if self.options.min_offsets_per_trigger:
            return ReadMinRows(self.options.min_offsets_per_trigger)
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        self._frozen = self._available()

    def _available(self) -> dict[TopicPartition, int]:
        """Latest offsets of every partition subscribed now."""
        with OffsetLookup(self.options) as lookup:
            return lookup.latest(sorted(lookup.listing().partitions))

    def _check(self, begin: dict[TopicPartition, int]) -> OffsetCheck:
        """The batch's end offsets with gone and rewound partitions found
        (``lost_partitions``). A rewind is believed only when a second
        look-up, after a back-off and with fresh metadata, shows it again
        (an answer from a deposed leader must not pass for a recreated
        topic)."""
        with OffsetLookup(self.options) as lookup:
            listing = lookup.listing()
            latest = dict(self._frozen) if self._frozen is not None else lookup.latest(sorted(listing.partitions))
        check = check_offsets(begin, latest, listing)
        if check.rewound:
            time.sleep(int(self.options.client_setting("retry.backoff.ms", "100")) / 1000)
            with OffsetLookup(self.options) as lookup:
                again = lookup.latest([r.topic_partition for r in check.rewound])
            latest.update(again)
            if self._frozen is not None:
                self._frozen.update(again)
            check = check_offsets(begin, latest, listing)
        return check

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        begin = from_json_dict(start)
        check = self._check(begin)
        if check.lost:
            # Spark's Kafka source: partitions gone or rewound fail the query
            # under failOnDataLoss, else they are dropped from the offsets (a
            # recreated one comes back as a new partition, from its earliest).
            if self.options.fail_on_data_loss:
                raise DataLossError(check.message())
            log.warning("%s (failOnDataLoss=false: dropped)", check.message())
        latest = check.offsets
        minimum = self.options.min_offsets_per_trigger
        if isinstance(limit, (ReadMaxRows, ReadMinRows)):
            new = [tp for tp in latest if tp not in begin]
            if new:
                with OffsetLookup(self.options) as lookup:
                    begin = {**lookup.earliest(new), **begin}
        if minimum and self._frozen is None and isinstance(limit, (ReadMaxRows, ReadMinRows)):
            # Spark's Kafka source: wait for minOffsetsPerTrigger new offsets,
            # or until maxTriggerDelay has passed since the last batch.
            backlog = sum(max(0, off - begin.get(tp, off)) for tp, off in latest.items())
            waited_ms = (time.monotonic() - self._last_batch_at) * 1000
            if backlog < minimum and waited_ms < self.options.max_trigger_delay_ms:
                return start
        if isinstance(limit, ReadMaxRows):
            latest = rate_limit(begin, latest, limit.max_rows)
        if latest != {tp: begin.get(tp, -1) for tp in latest}:
            self._last_batch_at = time.monotonic()
        return to_json_dict(latest)

    def reportLatestOffset(self) -> dict | None:
        return None

    def partitions(self, start: dict, end: dict) -> list[OffsetRangePartition]:
        begin, finish = from_json_dict(start), from_json_dict(end)
        new = [tp for tp in finish if tp not in begin]
        if new:
            with OffsetLookup(self.options) as lookup:
                begin = {**lookup.earliest(new), **begin}
        ranges = []
        for tp in sorted(finish):
            lo, hi = begin[tp], finish[tp]
            if hi < lo:
                self._lost(tp, f"its offset went back from {lo} to {hi} (partition deleted, recreated or truncated)")
                continue
            ranges.append(OffsetRange(tp.topic, tp.partition, lo, hi))
        for tp in sorted(set(begin) - set(finish)):
            self._lost(tp, "the partition is gone")
        return [OffsetRangePartition(r) for r in split_ranges(ranges, self.options.min_partitions)]

    def _lost(self, tp: TopicPartition, detail: str) -> None:
        message = data_loss_message(tp, detail)
        if self.options.fail_on_data_loss:
            raise DataLossError(message)
        log.warning("%s (failOnDataLoss=false: skipped)", message)

    def commit(self, end: dict) -> None:
        """Nothing to do: progress lives in Spark's checkpoint."""

    # -- executors ------------------------------------------------------------------------

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, OffsetRangePartition):
            # partitions() found nothing to read: PySpark then runs one task
            # with a placeholder InputPartition(None).
            return iter(())
        # Imported here, on the executor: the planning process (the driver's
        # Python runner, a fresh interpreter per streaming query) never reads.
        from kavka.spark.range_reader import RangeReader

        return RangeReader(self.options, partition.offset_range).batches()
