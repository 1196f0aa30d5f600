"""``BrokerMarkerWriter``: the transaction coordinator's ``MarkerWriter``
— WriteTxnMarkers (key 27) to the leader of each partition of a
transaction, over ``kavka.client.BrokerConnection`` on the inter-broker
listener (KIP-98, Kafka's TransactionMarkerChannelManager).

Partitions are grouped by their leader in the metadata cache; each leader
gets one request. A partition is done when its leader answers NONE, or when
it is gone from the cache (its topic deleted: no reader will ever need the
marker; AddPartitionsToTxn admits only partitions the cache knows), or on a non-retriable error (logged: INVALID_PRODUCER_EPOCH means
a newer epoch already closed the transaction there).
TRANSACTION_COORDINATOR_FENCED stops the whole transaction's delivery
(``CoordinatorFencedError``): that leader saw a newer coordinator for the
producer. Everything else — no leader known, the leader not alive, a
refused or broken connection, a request timeout, a response that cannot be
read, NOT_LEADER_OR_FOLLOWER and other retriable errors — is retried
against the leader the metadata cache names at that moment, after
``retry_backoff_ms`` (doubling up to ``max_retry_backoff_ms``), until done
or until ``still_owner()`` says this broker no longer coordinates the
transaction (the next coordinator resumes it).

Connections: one per leader, kept open between transactions (as Kafka's
TransactionMarkerChannelManager keeps its channels): on a secured
inter-broker listener (``security``) a new connection costs a TLS handshake
and a SASL exchange, which no transaction should pay. A broken connection is
dropped and the next attempt opens a new one; ``close`` ends them all.
Event loop only.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from kavka.client.connection import BrokerConnection
from kavka.common.errors import ErrorCode, KafkaError
from kavka.common.topic_partition import TopicPartition
from kavka.protocol.messages import WriteTxnMarkersRequest
from kavka.security.client_security import PLAINTEXT_SECURITY, ClientSecurity
from kavka.server.metadata_cache import MetadataCache
from kavka.transaction.coordinator import CoordinatorFencedError

log = logging.getLogger("kavka.transaction")


class BrokerMarkerWriter:
    def __init__(self, cache: MetadataCache, listener: str, retry_backoff_ms: int = 100,
                 request_timeout_ms: int = 30_000, max_retry_backoff_ms: int = 1_000,
                 security: ClientSecurity = PLAINTEXT_SECURITY) -> None:
        self.security = security
        self._conns: dict[int, BrokerConnection] = {}
        self._opening: dict[int, asyncio.Lock] = {}
        self.cache = cache
        self.listener = listener
        self.retry_backoff_ms = retry_backoff_ms
        self.max_retry_backoff_ms = max(max_retry_backoff_ms, retry_backoff_ms)
        self.request_timeout_ms = request_timeout_ms

    async def write_markers(self, producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int,
                            partitions: frozenset[TopicPartition], still_owner: Callable[[], bool]) -> None:
        remaining = set(partitions)
        backoff_ms = self.retry_backoff_ms
        while remaining and still_owner():
            by_leader: dict[int, list[TopicPartition]] = {}
            for tp in list(remaining):
                meta = self.cache.partition(tp.topic, tp.partition)
                if meta is None:
                    # Unknown to the metadata (AddPartitionsToTxn admitted only
                    # known ones): the topic was deleted; no reader needs it.
                    remaining.discard(tp)
                    continue
                if meta.leader >= 0:
                    by_leader.setdefault(meta.leader, []).append(tp)
            for leader, tps in by_leader.items():
                done = await self._send(leader, tps, producer_id, producer_epoch, commit, coordinator_epoch)
                remaining -= done
            if remaining:
                await asyncio.sleep(backoff_ms / 1000)
                backoff_ms = min(backoff_ms * 2, self.max_retry_backoff_ms)

    async def _send(self, leader: int, tps: list[TopicPartition], producer_id: int, producer_epoch: int,
                    commit: bool, coordinator_epoch: int) -> set[TopicPartition]:
        broker = self.cache.brokers.get(leader)
        endpoint = broker.endpoint(self.listener) if broker is not None else None
        if endpoint is None:
            return set()
        topics: dict[str, list[int]] = {}
        for tp in tps:
            topics.setdefault(tp.topic, []).append(tp.partition)
        body = WriteTxnMarkersRequest(markers=[WriteTxnMarkersRequest.Markers(
            producer_id=producer_id, producer_epoch=producer_epoch, transaction_result=commit,
            coordinator_epoch=coordinator_epoch,
            topics=[WriteTxnMarkersRequest.Markers.Topics(name=t, partition_indexes=ps) for t, ps in topics.items()],
        )])
        try:
            conn = await self._connection(leader, endpoint.host, endpoint.port)
            response = await conn.request(body, max_version=1)
        except (KafkaError, OSError, EOFError) as e:
            self._drop(leader)
            log.info("markers for producer %d to broker %d: %s; retrying", producer_id, leader, e)
            return set()
        except Exception:  # an undecodable answer: retry rather than stall the transaction
            self._drop(leader)
            log.exception("markers for producer %d to broker %d failed; retrying", producer_id, leader)
            return set()
        done: set[TopicPartition] = set()
        for marker in response.markers:
            for t in marker.topics:
                for p in t.partitions:
                    code = ErrorCode.of(p.error_code)
                    tp = TopicPartition(t.name, p.partition_index)
                    if code is ErrorCode.NONE:
                        done.add(tp)
                    elif code is ErrorCode.TRANSACTION_COORDINATOR_FENCED:
                        raise CoordinatorFencedError(
                            f"broker {leader} knows a newer coordinator epoch than {coordinator_epoch} for "
                            f"producer {producer_id} in {tp}")
                    elif not code.retriable:
                        log.warning("marker for producer %d in %s refused: %s; skipping it", producer_id, tp,
                                    code.name)
                        done.add(tp)
        return done

    async def _connection(self, leader: int, host: str, port: int) -> BrokerConnection:
        """The open connection to ``leader`` at ``host:port`` (opened once
        for concurrent senders)."""
        lock = self._opening.setdefault(leader, asyncio.Lock())
        async with lock:
            conn = self._conns.get(leader)
            if conn is not None and conn.connected and (conn.host, conn.port) == (host, port):
                return conn
            self._drop(leader)
            conn = BrokerConnection(host, port, "kavka-txn-markers", node_id=leader,
                                    request_timeout_ms=self.request_timeout_ms, security=self.security)
            await conn.connect()
            self._conns[leader] = conn
            return conn

    def _drop(self, leader: int) -> None:
        conn = self._conns.pop(leader, None)
        if conn is not None:
            conn.close()

    def close(self) -> None:
        """Close every connection (broker shutdown)."""
        for leader in list(self._conns):
            self._drop(leader)
