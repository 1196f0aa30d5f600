"""A simple asynchronous producer.

``send`` appends a record to its partition's pending batch and returns a
future of its ``RecordMetadata``; batches leave when ``linger_ms`` has
passed since a partition's first pending record, when a partition holds
``batch_size`` bytes, or on ``flush``. One drain runs at a time: it takes
every pending record, builds one v2 batch per partition
(``kavka.protocol.records.build_batch``), groups partitions by leader and
sends one Produce per leader concurrently. Records that arrive meanwhile
wait for the next drain, so a partition has at most one batch in flight
and records keep their order.

Partitioning: an explicit partition wins; a keyed record goes where Kafka's
default partitioner puts it (``partitioner.partition_for_key``, murmur2);
unkeyed records go round-robin over the topic's partitions.

``acks``: 0 (no response: offsets are unknown, -1), 1 (leader) or -1 (all
in-sync replicas, seed 003). Retriable partition errors
(NOT_LEADER_OR_FOLLOWER, LEADER_NOT_AVAILABLE, NOT_ENOUGH_REPLICAS, ...) and
connection errors re-send that partition's batch after a metadata refresh
until ``delivery_timeout_ms``; other errors fail the records' futures with
the typed error.

One event loop; tools and tests.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

from kavka.client.cluster import Cluster
from kavka.client.partitioner import partition_for_key
from kavka.common.errors import ErrorCode, KafkaError, UnknownTopicOrPartitionError, error_for
from kavka.common.topic_partition import TopicPartition
from kavka.protocol import messages as m
from kavka.protocol.records import Compression, SimpleRecord, build_batch

PRODUCE_KEY = 0
RECORD_OVERHEAD = 24  # rough bytes per record besides key and value, for batch_size


@dataclass(frozen=True, slots=True)
class RecordMetadata:
    """Where a record landed. ``offset`` is -1 with acks=0."""

    topic: str
    partition: int
    offset: int
    timestamp: int


@dataclass(slots=True)
class _Pending:
    record: SimpleRecord
    future: asyncio.Future


class Producer:
    """Batches records per partition and produces them to the leaders."""

    def __init__(self, cluster: Cluster, *, acks: int = -1, linger_ms: int = 5, batch_size: int = 1 << 20,
                 compression: Compression = Compression.NONE, timeout_ms: int = 30_000,
                 delivery_timeout_ms: int = 120_000, max_block_ms: int = 60_000) -> None:
        if acks not in (-1, 0, 1):
            raise ValueError(f"acks must be -1 (all), 0 or 1, got {acks!r}")
        if linger_ms < 0 or batch_size <= 0:
            raise ValueError("linger_ms must be >= 0 and batch_size > 0")
        self.cluster = cluster
        self.acks = acks
        self.linger_ms = linger_ms
        self.batch_size = batch_size
        self.compression = Compression(compression)
        self.timeout_ms = timeout_ms
        self.delivery_timeout_ms = delivery_timeout_ms
        self.max_block_ms = max_block_ms
        self._pending: dict[TopicPartition, list[_Pending]] = {}
        self._sizes: dict[TopicPartition, int] = {}
        self._round_robin: dict[str, int] = {}
        self._linger: asyncio.TimerHandle | None = None
        self._drain_lock = asyncio.Lock()
        self._drains: set[asyncio.Task] = set()
        self._closed = False

    async def _partition(self, topic: str, key: bytes | None, partition: int | None) -> int:
        parts = self.cluster.metadata.partitions_of(topic)
        if not parts:
            # Kafka's max.block.ms: how long send() waits for a topic's metadata.
            await self.cluster.call(lambda: self._require_topic(topic), refresh_topics=[topic],
                                    deadline_ms=self.max_block_ms)
            parts = self.cluster.metadata.partitions_of(topic)
        if partition is not None:
            if not 0 <= partition < len(parts):
                raise UnknownTopicOrPartitionError(f"topic {topic} has {len(parts)} partitions, not {partition}")
            return partition
        if key is not None:
            return partition_for_key(key, len(parts))
        n = self._round_robin.get(topic, -1) + 1
        self._round_robin[topic] = n
        return n % len(parts)

    async def _require_topic(self, topic: str) -> None:
        md = await self.cluster.refresh_metadata([topic])
        t = md.topics.get(topic)
        if t is None or not t.partitions:
            raise error_for(t.error if t is not None and t.error else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                            f"topic {topic} is not available")

    async def send(self, topic: str, value: bytes | None, key: bytes | None = None, *,
                   partition: int | None = None, headers: tuple[tuple[str, bytes | None], ...] = (),
                   timestamp_ms: int | None = None) -> asyncio.Future:
        """Queue one record; the returned future resolves to its
        RecordMetadata (or fails with the typed error)."""
        if self._closed:
            raise RuntimeError("the producer is closed")
        p = await self._partition(topic, key, partition)
        tp = TopicPartition(topic, p)
        ts = timestamp_ms if timestamp_ms is not None else int(time.time() * 1000)
        fut = asyncio.get_running_loop().create_future()
        self._pending.setdefault(tp, []).append(_Pending(SimpleRecord(key, value, ts, tuple(headers)), fut))
        size = self._sizes.get(tp, 0) + len(key or b"") + len(value or b"") + RECORD_OVERHEAD
        self._sizes[tp] = size
        if size >= self.batch_size or self.linger_ms == 0:
            self._start_drain()
        elif self._linger is None:
            self._linger = asyncio.get_running_loop().call_later(self.linger_ms / 1000, self._start_drain)
        return fut

    async def send_and_wait(self, topic: str, value: bytes | None, key: bytes | None = None,
                            **kw) -> RecordMetadata:
        return await (await self.send(topic, value, key, **kw))

    def _start_drain(self) -> None:
        if self._linger is not None:
            self._linger.cancel()
            self._linger = None
        task = asyncio.ensure_future(self._drain())
        self._drains.add(task)
        task.add_done_callback(self._drains.discard)

    async def flush(self) -> None:
        """Send everything queued so far and wait for it to be acknowledged."""
        waiting = [p.future for ps in self._pending.values() for p in ps]
        if waiting:
            self._start_drain()
        if self._drains:
            await asyncio.gather(*list(self._drains), return_exceptions=True)
        await asyncio.gather(*waiting, return_exceptions=True)

    async def close(self) -> None:
        await self.flush()
        self._closed = True

    async def __aenter__(self) -> Producer:
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()

    # -- sending ---------------------------------------------------------------------

    async def _drain(self) -> None:
        async with self._drain_lock:
            taken, self._pending, self._sizes = self._pending, {}, {}
            if not taken:
                return
            try:
                batches = {tp: (build_batch([p.record for p in ps], compression=self.compression), ps)
                           for tp, ps in taken.items()}
                await self.cluster.call(lambda: self._send_round(batches), deadline_ms=self.delivery_timeout_ms,
                                        refresh_topics={tp.topic for tp in batches})
            except Exception as e:  # every queued future must end, whatever failed
                for ps in taken.values():
                    self._fail(ps, e)  # futures already resolved are skipped

    async def _send_round(self, batches: dict) -> None:
        """One attempt for every batch not yet done; raises the last
        retriable error when some must be retried (the caller refreshes
        metadata and calls again with the same dict, now smaller)."""
        by_leader: dict[int, list[TopicPartition]] = {}
        retry: KafkaError | None = None
        for tp in list(batches):
            try:
                by_leader.setdefault(await self.cluster.leader_for(tp), []).append(tp)
            except KafkaError as e:
                if not e.retriable:
                    self._fail(batches.pop(tp)[1], e)
                else:
                    retry = e
        results = await asyncio.gather(*(self._produce(leader, tps, batches)
                                         for leader, tps in by_leader.items()), return_exceptions=True)
        for r in results:
            if isinstance(r, KafkaError):
                retry = r
            elif isinstance(r, BaseException):
                raise r
        if batches:
            raise retry or KafkaError("batches remain unsent", code=ErrorCode.NETWORK_EXCEPTION)

    @staticmethod
    def _fail(ps: list[_Pending], e: BaseException) -> None:
        for p in ps:
            if not p.future.done():
                p.future.set_exception(e)

    async def _produce(self, leader: int, tps: list[TopicPartition], batches: dict) -> None:
        R = m.ProduceRequest
        by_topic: dict[str, list] = {}
        for tp in tps:
            by_topic.setdefault(tp.topic, []).append(R.TopicData.PartitionData(index=tp.partition,
                                                                                records=batches[tp][0]))
        req = R(acks=self.acks, timeout_ms=self.timeout_ms,
                topic_data=[R.TopicData(name=t, partition_data=pd) for t, pd in by_topic.items()])
        resp = await self.cluster.send(leader, req)
        if resp is None:  # acks=0
            for tp in tps:
                for p in batches.pop(tp)[1]:
                    if not p.future.done():
                        p.future.set_result(RecordMetadata(tp.topic, tp.partition, -1, p.record.timestamp))
            return
        retry: KafkaError | None = None
        for t in resp.responses:
            for pr in t.partition_responses:
                tp = TopicPartition(t.name, pr.index)
                if tp not in batches:
                    continue
                if pr.error_code == ErrorCode.NONE:
                    for i, p in enumerate(batches.pop(tp)[1]):
                        ts = pr.log_append_time_ms if pr.log_append_time_ms != -1 else p.record.timestamp
                        if not p.future.done():
                            p.future.set_result(RecordMetadata(tp.topic, tp.partition, pr.base_offset + i, ts))
                    continue
                err = error_for(pr.error_code, pr.error_message or f"produce to {tp}")
                if err.retriable:
                    retry = err
                else:
                    self._fail(batches.pop(tp)[1], err)
        if retry is not None:
            raise retry
