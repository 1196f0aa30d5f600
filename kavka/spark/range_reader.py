"""Executor side of a read: fetch one ``OffsetRange`` from its leader and
yield it as Arrow record batches (``kavka.spark.schema.arrow_schema``).

Client choice: confluent-kafka (librdkafka) hands Python one ``Message``
object per record and cannot give raw batches; ``kavka.client``'s
``Consumer`` builds a ``Record`` per record. Kavka's own client
(``kavka.client``) fetches raw v2 batches, which lets the decoding be
chosen separately: ``kavka.client`` for the wire, ``arrow_records`` (a C
extension, no Python object per record) for the bytes. It also keeps
leader-epoch fencing, read_committed filtering and exact range bounds in
our hands. ``bench/spark.py`` measures the whole Spark read path;
bench/README.md keeps the figures that led to this choice.

Fetch loop: a Fetch (v4+ with the isolation level, so read_committed stops
at the last stable offset and lists aborted transactions) for the range's
next offset, ``kafka.max.partition.fetch.bytes`` (default 8 MiB) at a
time, one Arrow batch per fetch, until ``end``; the next fetch is sent
before a batch is handed to Spark, so the broker serves it while the JVM
takes in the batch (one fetch in flight per range, never more). Leader changes and broken
connections (a broker killed) refresh metadata and retry against the new
leader until ``kafka.default.api.timeout.ms``; positions are kept, so
nothing is skipped or read twice.

Fetch from follower (KIP-392): with ``kafka.client.rack`` (or, without
it, the executor's ``KAVKA_CLIENT_RACK``) the fetches (v11+) carry the rack; a leader whose ``replica.selector.class`` answers
``preferred_read_replica`` is left for that replica, which serves the
range below its own high watermark. Any error there, a failed connection
or a replica that stops making progress sends the reader back to the
leader, from the same position.

Data loss: OFFSET_OUT_OF_RANGE below the log start (retention,
DeleteRecords) or a range the partition no longer holds (a truncated or
recreated partition) raises ``DataLossError`` when ``failOnDataLoss`` is
true; otherwise the lost offsets are skipped and reading goes on.

Runs in an executor's Python worker, synchronous from Spark's view: a
private event loop per range.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Iterator

import pyarrow as pa

from kavka.client.admin import KafkaAdmin
from kavka.client.admin_types import OffsetSpec
from kavka.client.cluster import Cluster
from kavka.common.errors import ErrorCode, KafkaError, error_for
from kavka.protocol import messages as m
from kavka.spark.arrow_records import ColumnBuilder
from kavka.spark.lost_partitions import DataLossError, data_loss_message
from kavka.spark.offset_lookup import cluster_for
from kavka.spark.options import SourceOptions
from kavka.spark.ranges import OffsetRange

log = logging.getLogger(__name__)

FETCH_KEY = 1
_REFRESH_CODES = frozenset({ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.FENCED_LEADER_EPOCH,
                            ErrorCode.UNKNOWN_LEADER_EPOCH, ErrorCode.LEADER_NOT_AVAILABLE,
                            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.KAFKA_STORAGE_ERROR,
                            ErrorCode.REPLICA_NOT_AVAILABLE, ErrorCode.OFFSET_NOT_AVAILABLE})


class _Retry(KafkaError):
    """A retriable partition-level condition: refresh metadata, try again."""


class RangeReader:
    """Reads one ``OffsetRange``; ``batches()`` may be called once."""

    def __init__(self, options: SourceOptions, offset_range: OffsetRange) -> None:
        self.options = options
        self.range = offset_range
        self.tp = offset_range.topic_partition
        client = dict(options.client)
        self.partition_max_bytes = int(client.get("max.partition.fetch.bytes", 8 * 1024 * 1024))
        self.max_wait_ms = int(client.get("fetch.max.wait.ms", 500))
        self.deadline_ms = int(client.get("default.api.timeout.ms", 60_000))
        self._waiting_since: float | None = None  # loop time the range's end first looked unavailable
        self.rack = options.reader_rack(os.environ)
        # KIP-392: the replica the leader sent this reader to (None: the leader)
        self.read_replica: int | None = None
        self.fetched_from: dict[int, int] = {}  # broker -> record bytes it served this reader

    def batches(self) -> Iterator[pa.RecordBatch]:
        r = self.range
        if r.size <= 0:
            return
        loop = asyncio.new_event_loop()
        cluster = cluster_for(self.options.bootstrap_servers, dict(self.options.client), self.options.security)
        builder = ColumnBuilder(r.topic, r.partition, self.options.include_headers, r.start)
        fetch: asyncio.Task[None] | None = None  # the next fetch, already sent
        try:
            while True:
                if fetch is None:
                    if builder.next_offset >= r.end:
                        break
                    before = builder.next_offset
                    loop.run_until_complete(self._fetch_into(cluster, builder))
                else:
                    loop.run_until_complete(fetch)
                    fetch = None
                if not len(builder):
                    if builder.next_offset == before:
                        break  # the rest of the range is lost and skipped (failOnDataLoss=false)
                    continue
                batch = builder.record_batch()
                if builder.next_offset < r.end:
                    # Pipelining: the next Fetch goes out before this batch is
                    # handed to Spark, so the broker reads and sends it while
                    # the JVM takes in this one. The task may already add to
                    # ``builder`` in the loop's next turns, so ``builder`` is
                    # looked at again only once the task is done.
                    before = builder.next_offset
                    fetch = loop.create_task(self._fetch_into(cluster, builder))
                    loop.run_until_complete(asyncio.sleep(0))  # sent: the task now waits for the answer
                yield batch
        finally:
            try:
                if fetch is not None:  # the reading stopped early: drop the fetch in flight
                    fetch.cancel()
                    loop.run_until_complete(asyncio.gather(fetch, return_exceptions=True))
            finally:
                loop.run_until_complete(cluster.close())
                loop.close()

    async def _fetch_into(self, cluster: Cluster, builder: ColumnBuilder) -> None:
        """One successful fetch appended to ``builder`` (or the data-loss
        decision taken); retries leader moves until the deadline."""
        await cluster.call(lambda: self._fetch_once(cluster, builder), deadline_ms=self.deadline_ms,
                           refresh_topics=[self.tp.topic])

    async def _fetch_once(self, cluster: Cluster, builder: ColumnBuilder) -> None:
        replica = self.read_replica
        if replica is None:
            if not await self._fetch_from(cluster, builder, await cluster.leader_for(self.tp), None):
                return
            replica = self.read_replica
            assert replica is not None
        try:
            await self._fetch_from(cluster, builder, replica, replica)
        except KafkaError as e:
            # The follower failed, fell behind or stopped hosting the
            # partition: back to the leader, which picks again (KIP-392).
            log.info("%s: leaving replica %d for the leader: %s", self.tp, replica, e)
            self.read_replica = None
            if e.retriable or e.code == ErrorCode.OFFSET_OUT_OF_RANGE:
                raise _Retry(f"fetch from replica {replica} of {self.tp}: {e}",
                             code=ErrorCode.NOT_LEADER_OR_FOLLOWER) from None
            raise

    async def _fetch_from(self, cluster: Cluster, builder: ColumnBuilder, broker: int,
                          follower: int | None) -> bool:
        """One fetch from ``broker`` (``follower``: the replica the leader
        sent us to, None when ``broker`` is the leader); True when the
        leader sent us to another replica instead of answering."""
        R = m.FetchRequest
        position = builder.next_offset
        pm = cluster.metadata.partition(self.tp)
        conn = await cluster.connection(broker)
        version = conn.version_for(FETCH_KEY)
        if version < 4:
            raise KafkaError(f"broker {broker} offers Fetch v{version} only; the kavka source needs v4+ "
                             "(isolation levels)", code=ErrorCode.UNSUPPORTED_VERSION)
        req = R(max_wait_ms=self.max_wait_ms, min_bytes=1, max_bytes=self.partition_max_bytes,
                isolation_level=1 if self.options.read_committed else 0, rack_id=self.rack,
                topics=[R.Topics(topic=self.tp.topic, partitions=[R.Topics.Partitions(
                    partition=self.tp.partition, fetch_offset=position,
                    partition_max_bytes=self.partition_max_bytes,
                    current_leader_epoch=pm.leader_epoch if pm is not None and version >= 9 else -1)])])
        resp = await conn.request(req, version=version, timeout_ms=conn.request_timeout_ms + self.max_wait_ms)
        if getattr(resp, "error_code", 0):
            raise error_for(resp.error_code, "Fetch failed")
        p = resp.responses[0].partitions[0]
        code = ErrorCode.of(p.error_code)
        if follower is not None and code == ErrorCode.OFFSET_OUT_OF_RANGE:
            raise KafkaError(f"replica {follower} does not hold offset {position}", code=code)
        preferred = p.preferred_read_replica if version >= 11 else -1
        if code == ErrorCode.NONE and follower is None and preferred >= 0 and preferred != broker \
                and cluster.metadata.brokers.get(preferred) is not None:
            log.debug("%s: the leader %d sends rack %r to replica %d", self.tp, broker, self.rack, preferred)
            self.read_replica = preferred
            return True
        if code in _REFRESH_CODES:
            raise _Retry(f"fetch from {self.tp}: {code.name}", code=code)
        if code == ErrorCode.OFFSET_OUT_OF_RANGE:
            await self._out_of_range(cluster, builder)
            return False
        if code != ErrorCode.NONE:
            raise error_for(code, f"fetch from {self.tp} at offset {position}")
        available = p.last_stable_offset if self.options.read_committed and p.last_stable_offset >= 0 \
            else p.high_watermark
        data = p.records or b""
        if data:
            self.fetched_from[broker] = self.fetched_from.get(broker, 0) + len(data)
            aborted = [(a.first_offset, a.producer_id) for a in (p.aborted_transactions or ())]
            # No copy: ``data`` may be a view of the response frame (one 8 MiB
            # copy per fetch less); the decoder copies what it keeps.
            builder.add_fetch(data, self.range.end, aborted, self.options.read_committed)
        if builder.next_offset > position:
            self._waiting_since = None
            return False
        if data:
            raise KafkaError(f"the batch of {self.tp} at offset {position} is larger than "
                             f"kafka.max.partition.fetch.bytes={self.partition_max_bytes}; raise it",
                             code=ErrorCode.MESSAGE_TOO_LARGE)
        if follower is not None and available < self.range.end:
            # A follower whose high watermark lags the planned end: the
            # leader serves what it has (and may send us back later).
            raise KafkaError(f"replica {follower} serves {self.tp} up to {available} only",
                             code=ErrorCode.OFFSET_NOT_AVAILABLE)
        if available < self.range.end:
            # Planned offsets this replica does not (yet) serve: a new leader
            # whose HW still lags, or a partition truncated after the plan.
            # Retry until the deadline, then treat it as lost.
            loop = asyncio.get_running_loop()
            if self._waiting_since is None:
                self._waiting_since = loop.time()
            if (loop.time() - self._waiting_since) * 1000 < min(self.deadline_ms, 30_000):
                raise _Retry(f"{self.tp} serves offsets up to {available}, the range ends at {self.range.end}",
                             code=ErrorCode.OFFSET_NOT_AVAILABLE)
            self._lost(builder, self.range.end,
                       f"offsets {max(position, available)} to {self.range.end} are no longer available")
        return False

    async def _out_of_range(self, cluster: Cluster, builder: ColumnBuilder) -> None:
        position = builder.next_offset
        admin = KafkaAdmin(cluster, timeout_ms=self.deadline_ms)
        isolation = 1 if self.options.read_committed else 0
        listed = await admin.list_offsets({self.tp: OffsetSpec.EARLIEST}, isolation_level=isolation)
        earliest = listed[self.tp].offset
        if earliest > position:
            self._lost(builder, min(earliest, self.range.end),
                       f"offsets {position} to {earliest - 1} were removed (log start offset is now {earliest})")
        else:
            self._lost(builder, self.range.end, f"offset {position} is beyond the end of the partition")

    def _lost(self, builder: ColumnBuilder, resume_at: int, detail: str) -> None:
        message = data_loss_message(self.tp, detail)
        if self.options.fail_on_data_loss:
            raise DataLossError(message)
        log.warning("%s (failOnDataLoss=false: skipping to offset %d)", message, resume_at)
        builder.next_offset = resume_at
