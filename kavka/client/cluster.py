"""The client's view of a cluster: bootstrap, metadata, one connection per
broker, and retries.

``Cluster("h1:9092,h2:9092")`` knows only addresses until ``start()``
fetches Metadata from the first bootstrap address that answers. From then
on requests go to brokers by node id over a pool of ``BrokerConnection``s
(one per node, opened on first use, reopened after it closes or when the
node's advertised address changes). ``refresh_metadata`` asks any reachable
broker — pooled connections first, then the known brokers, then the
bootstrap addresses — and replaces the snapshot.

``call(op)`` runs an operation with Kafka's retry rule: a retriable error
(NOT_LEADER_OR_FOLLOWER, LEADER_NOT_AVAILABLE, UNKNOWN_TOPIC_OR_PARTITION
just after a create, NOT_CONTROLLER, a closed or failed connection, a
timeout) refreshes metadata, waits an exponentially growing backoff
(``retry_backoff_ms`` doubling up to ``retry_backoff_max_ms``, with
jitter) and tries again until ``deadline_ms`` has passed; then the last
error is raised. Non-retriable errors are raised at once.

``security`` (a ``ClientSecurity``: TLS context, SASL mechanism) applies
to every connection. An ``AuthenticationFailed`` from one broker is raised
at once: it is not a connection error to try the next broker about.

One event loop; used by the admin client, producer, consumer, the tools
and (for the controller's channel and follower fetchers) by brokers.
"""

from __future__ import annotations

import asyncio
import functools
import random
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, TypeVar, overload

from kavka.client.connection import BrokerConnection
from kavka.client.errors import ClientConnectionError, NoBrokersAvailable
from kavka.client.metadata import BrokerNode, ClusterMetadata, from_response
from kavka.common.errors import (
    ErrorCode,
    KafkaError,
    LeaderNotAvailableError,
    UnknownTopicOrPartitionError,
    error_for,
)
from kavka.common.topic_partition import TopicPartition
from kavka.protocol.framing import SOCKET_REQUEST_MAX_BYTES
from kavka.protocol.messages import MetadataRequest, ProduceRequest, ProduceResponse, Request, Response
from kavka.security.client_security import PLAINTEXT_SECURITY, ClientSecurity

T = TypeVar("T")
R = TypeVar("R", bound=Response)
METADATA_KEY = 3


def parse_bootstrap(servers: str | Iterable[str] | Iterable[tuple[str, int]]) -> list[tuple[str, int]]:
    """``"h:p,h:p"`` (or a list of "h:p" or (host, port)) -> [(host, port)].
    IPv6 hosts are written in brackets: ``[::1]:9092``."""
    items: list[str | tuple[str, int]] = []
    items += servers.split(",") if isinstance(servers, str) else servers
    out: list[tuple[str, int]] = []
    for item in items:
        if isinstance(item, tuple):
            host, port = item
        else:
            text = item.strip()
            if not text:
                continue
            host, sep, port_text = text.rpartition(":")
            if not sep or not host or not port_text.isdigit():
                raise ValueError(f"bootstrap server {text!r} is not host:port (e.g. 127.0.0.1:9092)")
            host = host.strip("[]")
            port = int(port_text)
        if not 0 < int(port) < 65536:
            raise ValueError(f"bootstrap server port {port} is outside 1-65535")
        out.append((host, int(port)))
    if not out:
        raise ValueError("no bootstrap servers given (expected host:port[,host:port...])")
    return out


class Cluster:
    """Metadata, a per-node connection pool and the retry loop.

    Invariants: at most one connection per node id is open or opening (a
    second caller awaits the first one's attempt); ``metadata`` is the last
    snapshot fetched (empty before ``start``)."""

    def __init__(
        self,
        bootstrap_servers: str | Iterable[str] | Iterable[tuple[str, int]],
        *,
        client_id: str = "kavka",
        request_timeout_ms: int = 30_000,
        connect_timeout_ms: int = 10_000,
        retry_backoff_ms: int = 100,
        retry_backoff_max_ms: int = 1_000,
        default_deadline_ms: int = 60_000,
        max_frame_size: int = SOCKET_REQUEST_MAX_BYTES,
        security: ClientSecurity = PLAINTEXT_SECURITY,
    ) -> None:
        self.bootstrap = parse_bootstrap(bootstrap_servers)
        self.security = security
        self.client_id = client_id
        self.request_timeout_ms = request_timeout_ms
        self.connect_timeout_ms = connect_timeout_ms
        self.retry_backoff_ms = retry_backoff_ms
        self.retry_backoff_max_ms = retry_backoff_max_ms
        self.default_deadline_ms = default_deadline_ms
        self.max_frame_size = max_frame_size
        self.metadata = ClusterMetadata(None, -1)
        self._conns: dict[int, BrokerConnection] = {}
        self._opening: dict[int, asyncio.Task] = {}
        self._bootstrap_conn: BrokerConnection | None = None
        self._refreshing: asyncio.Task | None = None
        self._closed = False

    async def start(self) -> Cluster:
        await self.refresh_metadata()
        return self

    async def __aenter__(self) -> Cluster:
        return await self.start()

    async def __aexit__(self, *exc) -> None:
        await self.close()

    async def close(self) -> None:
        self._closed = True
        for task in list(self._opening.values()):
            task.cancel()
        for conn in list(self._conns.values()):
            conn.close()
        self._conns.clear()
        if self._bootstrap_conn is not None:
            self._bootstrap_conn.close()
            self._bootstrap_conn = None

    # -- connections ---------------------------------------------------------------

    def node(self, node_id: int) -> BrokerNode:
        b = self.metadata.brokers.get(node_id)
        if b is None:
            raise LeaderNotAvailableError(f"broker {node_id} is not in the cluster metadata")
        return b

    def _new_connection(self, host: str, port: int, node_id: int) -> BrokerConnection:
        return BrokerConnection(host, port, self.client_id, request_timeout_ms=self.request_timeout_ms,
                                connect_timeout_ms=self.connect_timeout_ms,
                                max_frame_size=self.max_frame_size, node_id=node_id, security=self.security)

    async def connection(self, node_id: int) -> BrokerConnection:
        """The open connection to ``node_id`` (opened if needed)."""
        if self._closed:
            raise ClientConnectionError("the cluster client is closed")
        node = self.node(node_id)
        conn = self._conns.get(node_id)
        if conn is not None and conn.connected and (conn.host, conn.port) == (node.host, node.port):
            return conn
        if conn is not None:
            conn.close()
            del self._conns[node_id]
        task = self._opening.get(node_id)
        if task is None:
            task = asyncio.ensure_future(self._new_connection(node.host, node.port, node_id).connect())
            self._opening[node_id] = task
            task.add_done_callback(functools.partial(self._opened, node_id))
        return await asyncio.shield(task)

    def _opened(self, node_id: int, task: asyncio.Task) -> None:
        if self._opening.get(node_id) is task:
            del self._opening[node_id]
        if not task.cancelled() and task.exception() is None:
            conn = task.result()
            if self._closed:
                conn.close()
            else:
                self._conns[node_id] = conn

    @overload
    async def send(self, node_id: int, body: ProduceRequest, **kw: Any) -> ProduceResponse | None: ...

    @overload
    async def send(self, node_id: int, body: Request[R], **kw: Any) -> R: ...

    async def send(self, node_id: int, body: Request[R], **kw: Any) -> R | None:
        """One request to one node (no retry). ``kw`` as for
        ``BrokerConnection.request``."""
        conn = await self.connection(node_id)
        return await conn.request(body, **kw)

    async def any_connection(self) -> BrokerConnection:
        """A live connection to some broker: pooled first, then the known
        brokers in random order, then the bootstrap addresses."""
        for conn in self._conns.values():
            if conn.connected:
                return conn
        last: Exception | None = None
        nodes = list(self.metadata.brokers)
        random.shuffle(nodes)
        for node_id in nodes:
            try:
                return await self.connection(node_id)
            except ClientConnectionError as e:
                last = e
        if self._bootstrap_conn is not None and self._bootstrap_conn.connected:
            return self._bootstrap_conn
        for host, port in self.bootstrap:
            try:
                self._bootstrap_conn = await self._new_connection(host, port, -1).connect()
                return self._bootstrap_conn
            except ClientConnectionError as e:
                last = e
        tried = ", ".join(f"{h}:{p}" for h, p in self.bootstrap)
        raise NoBrokersAvailable(f"no broker reachable (bootstrap {tried}; last error: {last})")

    async def controller_id(self) -> int:
        """The controller's node id from Metadata (refreshed when unknown)."""
        if self.metadata.controller_id < 0:
            await self.refresh_metadata()
        if self.metadata.controller_id < 0:
            raise KafkaError("the cluster reported no controller", code=ErrorCode.NOT_CONTROLLER)
        return self.metadata.controller_id

    # -- metadata --------------------------------------------------------------------

    async def refresh_metadata(self, topics: Iterable[str] | None = None, *,
                               allow_auto_create: bool = False) -> ClusterMetadata:
        """Fetch Metadata for ``topics`` (all topics when None) and update
        the snapshot. Concurrent refreshes of all topics share one request."""
        if topics is None and not allow_auto_create:
            if self._refreshing is None:
                self._refreshing = asyncio.ensure_future(self._fetch_metadata(None, False))
                self._refreshing.add_done_callback(lambda _t: setattr(self, "_refreshing", None))
            return await asyncio.shield(self._refreshing)
        return await self._fetch_metadata(list(topics) if topics is not None else None, allow_auto_create)

    async def _fetch_metadata(self, topics: list[str] | None, allow_auto_create: bool) -> ClusterMetadata:
        conn = await self.any_connection()
        version = conn.version_for(METADATA_KEY)
        req = MetadataRequest()
        if topics is None:
            # v0 has no null topic list: an empty list there means "all".
            req.topics = [] if version == 0 else None
        else:
            req.topics = [MetadataRequest.Topics(name=t) for t in topics]
        if version >= 4:
            req.allow_auto_topic_creation = allow_auto_create
        resp = await conn.request(req, version=version)
        snapshot = self.metadata.merged(from_response(resp), replace_all_topics=topics is None)
        self.metadata = snapshot
        for node_id, conn in list(self._conns.items()):
            if node_id not in snapshot.brokers:
                conn.close()
                del self._conns[node_id]
        return snapshot

    async def leader_for(self, tp: TopicPartition, *, refresh: bool = False) -> int:
        """The leader of ``tp``, refreshing metadata once when unknown.
        Raises LEADER_NOT_AVAILABLE / UNKNOWN_TOPIC_OR_PARTITION (retriable)."""
        if refresh or self.metadata.leader_for(tp) is None:
            await self.refresh_metadata([tp.topic])
        leader = self.metadata.leader_for(tp)
        if leader is None:
            t = self.metadata.topics.get(tp.topic)
            if t is not None and t.error != 0:
                raise error_for(t.error, f"topic {tp.topic}: {t.error.message}")
            if self.metadata.partition(tp) is None:
                raise UnknownTopicOrPartitionError(f"{tp} is not in the cluster metadata")
            raise LeaderNotAvailableError(f"{tp} has no leader right now")
        return leader

    # -- retries ---------------------------------------------------------------------

    async def call(self, op: Callable[[], Awaitable[T]], *, deadline_ms: int | None = None,
                   refresh_topics: Iterable[str] | None = None) -> T:
        """Run ``op`` until it succeeds, a non-retriable error, or the
        deadline. Between attempts metadata is refreshed (for
        ``refresh_topics`` when given, else all topics)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + (deadline_ms if deadline_ms is not None else self.default_deadline_ms) / 1000
        backoff = self.retry_backoff_ms / 1000
        topics = list(refresh_topics) if refresh_topics is not None else None
        while True:
            try:
                return await op()
            except KafkaError as e:
                if not e.retriable or self._closed:
                    raise
                remaining = deadline - loop.time()
                if remaining <= 0:
                    raise
                await asyncio.sleep(min(remaining, backoff * (0.8 + 0.4 * random.random())))
                backoff = min(backoff * 2, self.retry_backoff_max_ms / 1000)
                try:
                    await self.refresh_metadata(topics)
                except KafkaError as refresh_error:
                    if not refresh_error.retriable:
                        raise
