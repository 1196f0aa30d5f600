"""A simple ``assign``-style consumer (no group membership).

The caller assigns partitions and optionally seeks; a partition without a
position is reset by ``auto_offset_reset`` ("earliest", "latest" through
ListOffsets, or "none" = raise). Each ``poll`` sends one Fetch per leader
(concurrently) for every assigned partition with a position, then decodes
the returned v2 batches with ``kavka.protocol.records.iter_records``:
records below the position are skipped (a batch may start earlier), control
batches only advance the position (their transaction markers are returned,
flagged ``is_control``, only with ``include_control_records``), and with ``isolation_level=1``
(read_committed) records of aborted transactions are dropped using the
response's aborted-transaction list (KIP-98). After a batch the position is
its last offset + 1, so compacted gaps are crossed.

Leader changes: NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH (the request
carries the leader epoch from metadata, KIP-320), UNKNOWN_LEADER_EPOCH,
LEADER_NOT_AVAILABLE, UNKNOWN_TOPIC_OR_PARTITION and connection errors make
the next poll refresh metadata first; positions are kept.
OFFSET_OUT_OF_RANGE resets by ``auto_offset_reset``.

One event loop; tools and tests.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass

from kavka.client.admin import KafkaAdmin
from kavka.client.admin_types import OffsetSpec
from kavka.client.cluster import Cluster
from kavka.common.errors import ErrorCode, KafkaError, OffsetOutOfRangeError, error_for
from kavka.common.topic_partition import TopicPartition
from kavka.protocol import messages as m
from kavka.protocol.records import iter_batches, iter_records

FETCH_KEY = 1
# Partition errors after which the leader must be looked up again.
_REFRESH_CODES = frozenset({ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.FENCED_LEADER_EPOCH,
                            ErrorCode.UNKNOWN_LEADER_EPOCH, ErrorCode.LEADER_NOT_AVAILABLE,
                            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.KAFKA_STORAGE_ERROR,
                            ErrorCode.REPLICA_NOT_AVAILABLE, ErrorCode.OFFSET_NOT_AVAILABLE})
_RESETS = ("earliest", "latest", "none")


@dataclass(frozen=True, slots=True)
class ConsumerRecord:
    topic: str
    partition: int
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()
    timestamp_type: int = 0  # the batch's TimestampType: 0 CreateTime, 1 LogAppendTime
    # A transaction marker (a control batch's record, KIP-98): its key holds
    # the marker type (``control_type``); only with include_control_records.
    is_control: bool = False

    @property
    def control_type(self) -> str | None:
        """"COMMIT" or "ABORT" for a transaction marker (the control
        record key: int16 version, int16 type), else None."""
        if not self.is_control:
            return None
        key = self.key or b""
        kind = int.from_bytes(key[2:4], "big", signed=True) if len(key) >= 4 else -1
        return {0: "ABORT", 1: "COMMIT"}.get(kind, f"UNKNOWN({kind})")


class Consumer:
    """Fetches assigned partitions from their leaders."""

    def __init__(self, cluster: Cluster, *, max_wait_ms: int = 500, min_bytes: int = 1,
                 max_bytes: int = 50 * 1024 * 1024, max_partition_fetch_bytes: int = 1024 * 1024,
                 isolation_level: int = 0, auto_offset_reset: str = "earliest",
                 include_control_records: bool = False) -> None:
        if auto_offset_reset not in _RESETS:
            raise ValueError(f"auto_offset_reset must be one of {_RESETS}, got {auto_offset_reset!r}")
        if isolation_level not in (0, 1):
            raise ValueError("isolation_level must be 0 (read_uncommitted) or 1 (read_committed)")
        self.cluster = cluster
        self.max_wait_ms = max_wait_ms
        self.min_bytes = min_bytes
        self.max_bytes = max_bytes
        self.max_partition_fetch_bytes = max_partition_fetch_bytes
        self.isolation_level = isolation_level
        self.auto_offset_reset = auto_offset_reset
        # A browser shows the transaction markers; an application never sees them.
        self.include_control_records = include_control_records
        self.high_watermarks: dict[TopicPartition, int] = {}
        self._positions: dict[TopicPartition, int | None] = {}
        self._admin = KafkaAdmin(cluster)
        self._stale = True

    # -- assignment and positions ------------------------------------------------------

    def assign(self, partitions: Iterable[TopicPartition]) -> None:
        """Replace the assignment; positions of partitions kept are kept."""
        new = list(partitions)
        self._positions = {tp: self._positions.get(tp) for tp in new}
        self._stale = True

    def assignment(self) -> list[TopicPartition]:
        return list(self._positions)

    def _check_assigned(self, tp: TopicPartition) -> None:
        if tp not in self._positions:
            raise ValueError(f"{tp} is not assigned to this consumer")

    def seek(self, tp: TopicPartition, offset: int) -> None:
        self._check_assigned(tp)
        if offset < 0:
            raise ValueError(f"offset must be >= 0, got {offset}")
        self._positions[tp] = offset

    def position(self, tp: TopicPartition) -> int | None:
        self._check_assigned(tp)
        return self._positions[tp]

    async def seek_to_beginning(self, *tps: TopicPartition) -> None:
        await self._reset(list(tps) or self.assignment(), OffsetSpec.EARLIEST)

    async def seek_to_end(self, *tps: TopicPartition) -> None:
        await self._reset(list(tps) or self.assignment(), OffsetSpec.LATEST)

    async def _reset(self, tps: list[TopicPartition], spec: int) -> None:
        for tp in tps:
            self._check_assigned(tp)
        if not tps:
            return
        found = await self._admin.list_offsets({tp: spec for tp in tps}, isolation_level=self.isolation_level)
        for tp, listed in found.items():
            self._positions[tp] = listed.offset

    async def _reset_missing(self, tps: list[TopicPartition], cause: KafkaError | None = None) -> None:
        if self.auto_offset_reset == "none":
            raise cause or OffsetOutOfRangeError(f"no position for {', '.join(map(str, tps))} "
                                                 "and auto_offset_reset is 'none'")
        spec = OffsetSpec.EARLIEST if self.auto_offset_reset == "earliest" else OffsetSpec.LATEST
        await self._reset(tps, spec)

    # -- fetching --------------------------------------------------------------------

    async def poll(self) -> list[ConsumerRecord]:
        """One fetch round over every assigned partition (may be empty:
        the broker holds the Fetch up to ``max_wait_ms`` for data)."""
        if not self._positions:
            raise ValueError("no partitions are assigned: call assign() first")
        missing = [tp for tp, pos in self._positions.items() if pos is None]
        if missing:
            await self._reset_missing(missing)
        if self._stale:
            await self.cluster.refresh_metadata({tp.topic for tp in self._positions})
            self._stale = False
        by_leader: dict[int, list[TopicPartition]] = {}
        for tp in self._positions:
            leader = self.cluster.metadata.leader_for(tp)
            if leader is None:
                self._stale = True
            else:
                by_leader.setdefault(leader, []).append(tp)
        results = await asyncio.gather(*(self._fetch(leader, tps) for leader, tps in by_leader.items()),
                                       return_exceptions=True)
        out: list[ConsumerRecord] = []
        for r in results:
            if isinstance(r, list):
                out.extend(r)
            elif isinstance(r, KafkaError) and r.retriable:
                self._stale = True
            else:
                raise r
        if self._stale and not out:
            await asyncio.sleep(self.cluster.retry_backoff_ms / 1000)
        return out

    async def records(self, *, max_records: int | None = None,
                      stop_at_end: bool = False) -> AsyncIterator[ConsumerRecord]:
        """Records in fetch order; stops after ``max_records``, or (with
        ``stop_at_end``) once every partition's position reached the high
        watermark seen in the latest fetch."""
        count = 0
        while max_records is None or count < max_records:
            for rec in await self.poll():
                yield rec
                count += 1
                if max_records is not None and count >= max_records:
                    return
            if stop_at_end and self._at_end():
                return

    def _at_end(self) -> bool:
        return all(tp in self.high_watermarks and pos is not None and pos >= self.high_watermarks[tp]
                   for tp, pos in self._positions.items())

    async def _fetch(self, leader: int, tps: list[TopicPartition]) -> list[ConsumerRecord]:
        R = m.FetchRequest
        by_topic: dict[str, list] = {}
        for tp in tps:
            pm = self.cluster.metadata.partition(tp)
            position = self._positions[tp]
            if position is None:  # poll() resets every missing position before it fetches
                raise ValueError(f"{tp} has no position to fetch from")
            by_topic.setdefault(tp.topic, []).append(R.Topics.Partitions(
                partition=tp.partition, fetch_offset=position,
                partition_max_bytes=self.max_partition_fetch_bytes,
                current_leader_epoch=pm.leader_epoch if pm is not None else -1))
        conn = await self.cluster.connection(leader)
        version = conn.version_for(FETCH_KEY)
        req = R(max_wait_ms=self.max_wait_ms, min_bytes=self.min_bytes,
                topics=[R.Topics(topic=t, partitions=ps) for t, ps in by_topic.items()])
        if version >= 3:
            req.max_bytes = self.max_bytes
        if version >= 4:
            req.isolation_level = self.isolation_level
        if version < 9:
            for t in req.topics:
                for p in t.partitions:
                    p.current_leader_epoch = -1
        timeout = conn.request_timeout_ms + self.max_wait_ms
        resp = await conn.request(req, version=version, timeout_ms=timeout)
        if getattr(resp, "error_code", 0):
            raise error_for(resp.error_code, "Fetch failed")
        out: list[ConsumerRecord] = []
        for topic in resp.responses:
            for data in topic.partitions:
                tp = TopicPartition(topic.topic, data.partition_index)
                if tp in self._positions and self._positions[tp] is not None:
                    await self._partition_data(tp, data, out)
        return out

    async def _partition_data(self, tp: TopicPartition, p, out: list[ConsumerRecord]) -> None:
        code = ErrorCode.of(p.error_code)
        if code == ErrorCode.OFFSET_OUT_OF_RANGE:
            await self._reset_missing([tp], OffsetOutOfRangeError(
                f"offset {self._positions[tp]} is out of range for {tp}"))
            return
        if code in _REFRESH_CODES:
            self._stale = True
            return
        if code != ErrorCode.NONE:
            raise error_for(code, f"fetch from {tp}")
        self.high_watermarks[tp] = p.high_watermark
        data = p.records
        if not data:
            return
        position = self._positions[tp]
        assert position is not None  # _fetch passes only partitions with a position
        aborted = sorted((a.first_offset, a.producer_id) for a in (p.aborted_transactions or ()))
        open_aborted: set[int] = set()
        progressed = False
        for pos, h in iter_batches(data):
            progressed = True
            while aborted and aborted[0][0] <= h.last_offset:
                open_aborted.add(aborted.pop(0)[1])
            if h.next_offset <= position:
                continue
            if h.is_control:
                open_aborted.discard(h.producer_id)  # the marker ends the transaction
                if self.include_control_records:
                    for r in iter_records(memoryview(data)[pos:pos + h.size]):
                        if r.offset >= position:
                            out.append(ConsumerRecord(tp.topic, tp.partition, r.offset, r.timestamp, r.key,
                                                      r.value, r.headers, int(h.timestamp_type), is_control=True))
            elif not (self.isolation_level == 1 and h.is_transactional and h.producer_id in open_aborted):
                for r in iter_records(memoryview(data)[pos:pos + h.size]):
                    if r.offset >= position:
                        out.append(ConsumerRecord(tp.topic, tp.partition, r.offset, r.timestamp,
                                                  r.key, r.value, r.headers, int(h.timestamp_type)))
            position = h.next_offset
        if not progressed and position < p.high_watermark:
            raise KafkaError(f"the next batch of {tp} at offset {position} is larger than "
                             f"max_partition_fetch_bytes={self.max_partition_fetch_bytes}; raise it",
                             code=ErrorCode.MESSAGE_TOO_LARGE)
        self._positions[tp] = position
