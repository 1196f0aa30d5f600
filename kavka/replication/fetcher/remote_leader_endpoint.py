"""``RemoteLeaderEndPoint``: a ``LeaderEndPoint`` over the Kafka wire.

One ``BrokerConnection`` (Kavka's client) to the leader's inter-broker
listener (the host and port LeaderAndIsr's ``live_leaders`` gave), opened on
first use and after every failure. Requests, all with this broker's id as
the replica id:

* Fetch at the highest common version up to v12 — v12 carries
  ``current_leader_epoch`` (KIP-320), ``last_fetched_epoch`` and answers
  ``diverging_epoch`` (KIP-595's truncation without OffsetsForLeaderEpoch).
  v13+ name topics by id only (KIP-516) and v15 moves the replica id into
  ``replica_state`` (KIP-903); the client names topics, so it stops at v12
  as Kafka brokers before IBP 3.1 do. isolation_level 0, no fetch session
  (session id 0, epoch -1: a full request every time);
* OffsetForLeaderEpoch up to v4 (v3+ carries the replica id);
* ListOffsets (replica id >= 0: the leader answers up to its log end).

Any connection failure, timeout or undecodable response closes the
connection and raises ``LeaderConnectionError``. Event loop only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar

from kavka.client.connection import BrokerConnection
from kavka.common.errors import ErrorCode, KafkaError
from kavka.common.topic_partition import TopicPartition
from kavka.protocol.errors import DecodeError
from kavka.protocol.messages import (
    FetchRequest,
    ListOffsetsRequest,
    OffsetForLeaderEpochRequest,
    Request,
    Response,
)
from kavka.replication.fetcher.leader_endpoint import (
    EpochEndOffsetResult,
    EpochRequest,
    LeaderConnectionError,
    OffsetResult,
)
from kavka.replication.requests import EpochEndOffset, FetchParams, FetchPartition, FetchPartitionData
from kavka.replication.state import BrokerEndPoint
from kavka.security.client_security import PLAINTEXT_SECURITY, ClientSecurity

FETCH_MAX_VERSION = 12
R = TypeVar("R", bound=Response)


class RemoteLeaderEndPoint:
    """See the module docstring."""

    def __init__(self, leader: BrokerEndPoint, replica_id: int, *, request_timeout_ms: int, client_id: str,
                 receive_buffer_bytes: int = -1, security: ClientSecurity = PLAINTEXT_SECURITY) -> None:
        self.security = security
        self.leader = leader
        self.replica_id = replica_id
        self.request_timeout_ms = request_timeout_ms
        self.client_id = client_id
        self.receive_buffer_bytes = receive_buffer_bytes  # replica.socket.receive.buffer.bytes
        self._conn: BrokerConnection | None = None

    def __repr__(self) -> str:
        return f"RemoteLeaderEndPoint(broker {self.leader.broker_id} at {self.leader.host}:{self.leader.port})"

    async def _request(self, body: Request[R], *, max_version: int | None = None) -> R:
        try:
            if self._conn is None or not self._conn.connected:
                self.close()
                conn = BrokerConnection(
                    self.leader.host, self.leader.port, self.client_id,
                    request_timeout_ms=self.request_timeout_ms,
                    connect_timeout_ms=self.request_timeout_ms,
                    node_id=self.leader.broker_id,
                    receive_buffer_bytes=self.receive_buffer_bytes, security=self.security,
                )
                await conn.connect()
                self._conn = conn
            return await self._conn.request(body, max_version=max_version)
        except (KafkaError, DecodeError, OSError) as e:
            self.close()
            raise LeaderConnectionError(f"{self!r}: {body.API_NAME} failed: {e}") from e

    async def fetch(
        self, params: FetchParams, partitions: Mapping[TopicPartition, FetchPartition]
    ) -> dict[TopicPartition, FetchPartitionData]:
        Q = FetchRequest
        topics: dict[str, list[FetchRequest.Topics.Partitions]] = {}
        for tp, fp in partitions.items():
            topics.setdefault(tp.topic, []).append(Q.Topics.Partitions(
                partition=tp.partition, current_leader_epoch=fp.current_leader_epoch, fetch_offset=fp.fetch_offset,
                last_fetched_epoch=fp.last_fetched_epoch, log_start_offset=fp.log_start_offset,
                partition_max_bytes=fp.max_bytes))
        body = Q(replica_id=params.replica_id, max_wait_ms=params.max_wait_ms, min_bytes=params.min_bytes,
                 max_bytes=params.max_bytes, isolation_level=0, session_id=0, session_epoch=-1,
                 topics=[Q.Topics(topic=t, partitions=ps) for t, ps in topics.items()])
        resp = await self._request(body, max_version=FETCH_MAX_VERSION)
        if resp.error_code:
            # A request-level error (e.g. a session error we never asked for)
            # applies to every partition.
            err = ErrorCode.of(resp.error_code)
            return {tp: FetchPartitionData(err) for tp in partitions}
        out: dict[TopicPartition, FetchPartitionData] = {}
        for t in resp.responses:
            for p in t.partitions:
                tp = TopicPartition(t.topic, p.partition_index)
                if tp not in partitions:
                    continue  # never asked: ignore rather than trust it
                div = p.diverging_epoch
                diverging = EpochEndOffset(div.epoch, div.end_offset) if div is not None and div.epoch >= 0 else None
                out[tp] = FetchPartitionData(
                    ErrorCode.of(p.error_code), p.high_watermark, p.last_stable_offset, p.log_start_offset,
                    p.records if p.records is not None else b"", diverging)
        for tp in partitions:
            out.setdefault(tp, FetchPartitionData(ErrorCode.UNKNOWN_SERVER_ERROR))  # the leader left it out
        return out

    async def fetch_epoch_end_offsets(
        self, requests: Mapping[TopicPartition, EpochRequest]
    ) -> dict[TopicPartition, EpochEndOffsetResult]:
        Q = OffsetForLeaderEpochRequest
        topics: dict[str, list[OffsetForLeaderEpochRequest.Topics.Partitions]] = {}
        for tp, r in requests.items():
            topics.setdefault(tp.topic, []).append(Q.Topics.Partitions(
                partition=tp.partition, current_leader_epoch=r.current_leader_epoch, leader_epoch=r.leader_epoch))
        body = Q(replica_id=self.replica_id, topics=[Q.Topics(topic=t, partitions=ps) for t, ps in topics.items()])
        resp = await self._request(body)
        out: dict[TopicPartition, EpochEndOffsetResult] = {}
        for t in resp.topics:
            for p in t.partitions:
                tp = TopicPartition(t.topic, p.partition)
                if tp in requests:
                    out[tp] = EpochEndOffsetResult(ErrorCode.of(p.error_code), p.leader_epoch, p.end_offset)
        for tp in requests:
            out.setdefault(tp, EpochEndOffsetResult(ErrorCode.UNKNOWN_SERVER_ERROR))
        return out

    async def fetch_log_offset(self, tp: TopicPartition, current_leader_epoch: int, timestamp: int) -> OffsetResult:
        Q = ListOffsetsRequest
        body = Q(replica_id=self.replica_id, isolation_level=0, topics=[Q.Topics(name=tp.topic, partitions=[
            Q.Topics.Partitions(partition_index=tp.partition, current_leader_epoch=current_leader_epoch,
                                timestamp=timestamp)])])
        resp = await self._request(body)
        for t in resp.topics:
            for p in t.partitions:
                if t.name == tp.topic and p.partition_index == tp.partition:
                    offset = p.offset if p.offset >= 0 or not p.old_style_offsets else p.old_style_offsets[0]
                    return OffsetResult(ErrorCode.of(p.error_code), offset)
        return OffsetResult(ErrorCode.UNKNOWN_SERVER_ERROR)

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
