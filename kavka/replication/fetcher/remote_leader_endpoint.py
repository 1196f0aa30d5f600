"""``RemoteLeaderEndPoint``: a ``LeaderEndPoint`` over the Kafka wire.

One ``BrokerConnection`` (Kavka's client) to the leader's inter-broker
listener (the host and port LeaderAndIsr's ``live_leaders`` gave), opened on
first use and after every failure. Requests, all with this broker's id as
the replica id:

* Fetch v15-16 when the leader offers them: topics named by id (KIP-516,
  the ids LeaderAndIsr v5 gave the partitions) and ``replica_state`` with
  this broker's id AND epoch (KIP-903), the czxid of its registration —
  what lets a leader on a listener without authentication believe the
  replica id (``kavka.server.inter_broker_fence``). Otherwise (an older
  leader, a partition without a topic id, not registered) v12 by name,
  which such a leader accepts only from a connection authenticated as this
  broker. Both carry ``current_leader_epoch`` (KIP-320) and
  ``last_fetched_epoch``, and are answered ``diverging_epoch`` (KIP-595's
  truncation without OffsetsForLeaderEpoch). isolation_level 0. Through an
  incremental fetch session whenever the leader's version has them (v7+;
  a Kavka leader answers v12 and up)
  (KIP-227, ``FetchSessionHandler`` of ``fetch_session_handler``): the
  first request carries every partition and opens a session; the next
  ones carry only the partitions added or whose fetch changed, and forget
  the ones removed; a partition the answer leaves out had nothing new. A
  session error (FETCH_SESSION_ID_NOT_FOUND, INVALID_FETCH_SESSION_EPOCH,
  FETCH_SESSION_TOPIC_ID_ERROR) answers no partition and the next fetch,
  sent at once, is full; so is the one after any failed exchange;
* OffsetForLeaderEpoch up to v4 (v3+ carries the replica id);
* ListOffsets (replica id >= 0: the leader answers up to its log end).

Any connection failure, timeout or undecodable response closes the
connection and raises ``LeaderConnectionError``; the session, if any, is
then closed by the next (full) fetch. A partition a full answer leaves
out is taken as UNKNOWN_SERVER_ERROR (the fetcher backs it off); any other
request-level error goes to every partition. Event loop only.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from typing import TypeVar

from kavka.client.connection import BrokerConnection
from kavka.common.errors import ErrorCode, KafkaError
from kavka.common.fetch_metadata import FINAL_EPOCH, INVALID_SESSION_ID
from kavka.common.topic_partition import TopicPartition
from kavka.protocol.errors import DecodeError
from kavka.protocol.messages import (
    FetchRequest,
    ListOffsetsRequest,
    OffsetForLeaderEpochRequest,
    Request,
    Response,
)
from kavka.replication.fetcher.fetch_session_handler import FetchRequestData, FetchSessionHandler
from kavka.replication.fetcher.leader_endpoint import (
    EpochEndOffsetResult,
    EpochRequest,
    LeaderConnectionError,
    OffsetResult,
)
from kavka.replication.requests import EpochEndOffset, FetchParams, FetchPartition, FetchPartitionData
from kavka.replication.state import BrokerEndPoint
from kavka.security.client_security import PLAINTEXT_SECURITY, ClientSecurity

FETCH_BY_NAME_MAX_VERSION = 12  # the last Fetch version naming topics
TRUNCATION_ON_FETCH_VERSION = 12  # last_fetched_epoch and diverging_epoch (KIP-595)
FETCH_REPLICA_STATE_VERSION = 15  # replica id and epoch in replica_state (KIP-903)
FETCH_MAX_VERSION = 16
FETCH_SESSION_VERSION = 7  # session id and epoch (KIP-227)
SESSION_ERRORS = frozenset({ErrorCode.FETCH_SESSION_ID_NOT_FOUND, ErrorCode.INVALID_FETCH_SESSION_EPOCH,
                            ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR})
FETCH_KEY = 1
ZERO_UUID = uuid.UUID(int=0)
R = TypeVar("R", bound=Response)


class RemoteLeaderEndPoint:
    """See the module docstring."""

    def __init__(self, leader: BrokerEndPoint, replica_id: int, *, request_timeout_ms: int, client_id: str,
                 receive_buffer_bytes: int = -1, security: ClientSecurity = PLAINTEXT_SECURITY,
                 broker_epoch: Callable[[], int | None] = lambda: None,
                 topic_id: Callable[[TopicPartition], uuid.UUID | None] = lambda tp: None) -> None:
        self.security = security
        self.leader = leader
        self.replica_id = replica_id
        self.request_timeout_ms = request_timeout_ms
        self.client_id = client_id
        self.broker_epoch = broker_epoch  # this broker's registration czxid (None: not registered)
        self.topic_id = topic_id  # a followed partition's topic id (None: not known)
        self.receive_buffer_bytes = receive_buffer_bytes  # replica.socket.receive.buffer.bytes
        self._conn: BrokerConnection | None = None
        self.session = FetchSessionHandler(f"fetcher of broker {replica_id} from broker {leader.broker_id}")

    def __repr__(self) -> str:
        return f"RemoteLeaderEndPoint(broker {self.leader.broker_id} at {self.leader.host}:{self.leader.port})"

    async def _connection(self, what: str) -> BrokerConnection:
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
            return self._conn
        except (KafkaError, DecodeError, OSError) as e:
            self.close()
            raise LeaderConnectionError(f"{self!r}: {what} failed: {e}") from e

    async def _request(self, body: Request[R], *, version: int | None = None) -> R:
        conn = await self._connection(body.API_NAME)
        try:
            return await conn.request(body, version)
        except (KafkaError, DecodeError, OSError) as e:
            self.close()
            raise LeaderConnectionError(f"{self!r}: {body.API_NAME} failed: {e}") from e

    def _fetch_version(self, conn: BrokerConnection, ids: Mapping[str, uuid.UUID | None]) -> int:
        offered = conn.api_versions.get(FETCH_KEY)
        if (offered is not None and offered.max_version >= FETCH_REPLICA_STATE_VERSION
                and self.broker_epoch() is not None and all(i is not None and i != ZERO_UUID for i in ids.values())):
            return min(offered.max_version, FETCH_MAX_VERSION)
        return conn.version_for(FETCH_KEY, FETCH_BY_NAME_MAX_VERSION)

    async def fetch(
        self, params: FetchParams, partitions: Mapping[TopicPartition, FetchPartition]
    ) -> dict[TopicPartition, FetchPartitionData]:
        Q = FetchRequest
        conn = await self._connection(Q.API_NAME)
        ids: dict[str, uuid.UUID | None] = {}
        for tp in partitions:  # a lookup a topic, not a partition (a session holds thousands), until one knows it
            if ids.get(tp.topic) is None:
                ids[tp.topic] = self.topic_id(tp)
        try:
            version = self._fetch_version(conn, ids)
        except KafkaError as e:
            self.close()
            raise LeaderConnectionError(f"{self!r}: Fetch failed: {e}") from e
        by_id = version > FETCH_BY_NAME_MAX_VERSION
        with_session = version >= FETCH_SESSION_VERSION
        if with_session:
            request = self.session.build(partitions, by_id, lambda tp: ids[tp.topic])
        else:
            request = FetchRequestData(INVALID_SESSION_ID, FINAL_EPOCH,
                                       {tp: (ids[tp.topic], fp) for tp, fp in partitions.items()}, [], partitions)
        topics: dict[str, list[FetchRequest.Topics.Partitions]] = {}
        for tp, (_, fp) in request.to_send.items():
            topics.setdefault(tp.topic, []).append(Q.Topics.Partitions(
                partition=tp.partition, current_leader_epoch=fp.current_leader_epoch, fetch_offset=fp.fetch_offset,
                last_fetched_epoch=fp.last_fetched_epoch, log_start_offset=fp.log_start_offset,
                partition_max_bytes=fp.max_bytes))
        forgotten: dict[uuid.UUID | str, list[int]] = {}
        for tp, topic_id in request.to_forget:
            forgotten.setdefault((topic_id or ZERO_UUID) if by_id else tp.topic, []).append(tp.partition)
        body = Q(max_wait_ms=params.max_wait_ms, min_bytes=params.min_bytes,
                 max_bytes=params.max_bytes, isolation_level=0, session_id=request.session_id,
                 session_epoch=request.epoch,
                 topics=[Q.Topics(topic=t, topic_id=ids[t] or ZERO_UUID, partitions=ps) for t, ps in topics.items()],
                 forgotten_topics_data=[
                     Q.ForgottenTopicsData(topic_id=k, partitions=ps) if isinstance(k, uuid.UUID)
                     else Q.ForgottenTopicsData(topic=k, partitions=ps) for k, ps in forgotten.items()])
        if version >= FETCH_REPLICA_STATE_VERSION:
            epoch = self.broker_epoch()
            body.replica_state = Q.ReplicaState(replica_id=params.replica_id, replica_epoch=-1 if epoch is None else epoch)
        else:
            body.replica_id = params.replica_id
        resp = await self._request(body, version=version)
        error = ErrorCode.of(resp.error_code)
        names = {i: t for t, i in ids.items() if i is not None}
        out: dict[TopicPartition, FetchPartitionData] = {}
        stray = 0
        for t in resp.responses if error is ErrorCode.NONE else ():
            name = names.get(t.topic_id) if by_id else t.topic
            for p in t.partitions:
                if name is None or (tp := TopicPartition(name, p.partition_index)) not in partitions:
                    stray += 1  # never asked: ignore rather than trust it
                    continue
                div = p.diverging_epoch
                diverging = EpochEndOffset(div.epoch, div.end_offset) if div is not None and div.epoch >= 0 else None
                out[tp] = FetchPartitionData(
                    ErrorCode.of(p.error_code), p.high_watermark, p.last_stable_offset, p.log_start_offset,
                    p.records if p.records is not None else b"", diverging)
        if with_session:
            self.session.handle_response(request, error, resp.session_id, out.keys(), stray, resp.throttle_time_ms > 0)
            if error in SESSION_ERRORS and not (request.is_full and request.session_id == INVALID_SESSION_ID):
                return {}  # nothing applies; the next fetch is full, at once
        if error is not ErrorCode.NONE:
            # A request-level error applies to every partition.
            return {tp: FetchPartitionData(error) for tp in partitions}
        if request.is_full:
            for tp in partitions:
                out.setdefault(tp, FetchPartitionData(ErrorCode.UNKNOWN_SERVER_ERROR))  # the leader left it out
        return out

    async def truncates_on_fetch(self) -> bool:
        """Whether the leader speaks Fetch v12+ (``last_fetched_epoch`` checked,
        a diverging epoch answered): what it offers on the current connection."""
        offered = (await self._connection(FetchRequest.API_NAME)).api_versions.get(FETCH_KEY)
        return offered is not None and offered.max_version >= TRUNCATION_ON_FETCH_VERSION

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
        self.session.handle_error()  # whatever the leader holds, start over with a full fetch
        if self._conn is not None:
            self._conn.close()
            self._conn = None
