"""``KavkaBrokerTransport``: the real ``BrokerTransport`` — the Kafka
protocol over TCP through Kavka's own client (``kavka.client.connection.
BrokerConnection``), one connection per broker, opened lazily on the first
send after ``set_endpoint`` (or after a failure made the channel
``forget`` it).

Versions: the connection negotiates ApiVersions when it opens; each
controller request then goes at the highest version both sides support,
capped at the newest layout the controller builds — LeaderAndIsr v5,
UpdateMetadata v7, StopReplica v3 — and refused below the oldest one
(the grouped layouts: LeaderAndIsr v2, UpdateMetadata v5, StopReplica v3)
with ``UnsupportedControllerRequestVersion``; the channel treats that like
any failed send (log, back off, retry on a new connection).

The endpoint is the broker's inter-broker listener, given by the channel;
``security`` is how this broker connects to it (TLS, SASL with its own
credentials: ``kavka.server.channel_builder.inter_broker_client_security``).
All methods run on the controller's event loop.
"""

from __future__ import annotations

import logging

from kavka.client.connection import BrokerConnection
from kavka.common.listeners import EndPoint
from kavka.protocol.messages import Message, Request
from kavka.security.client_security import PLAINTEXT_SECURITY, ClientSecurity

log = logging.getLogger(__name__)

# API key -> (lowest, highest) version the controller's bodies are built for.
CONTROLLER_REQUEST_VERSIONS: dict[int, tuple[int, int]] = {
    4: (2, 5),  # LeaderAndIsr: grouped by topic from v2; v5 adds topic ids
    5: (3, 3),  # StopReplica: per-partition leader epoch and delete flag from v3
    6: (5, 7),  # UpdateMetadata: grouped by topic from v5; v7 adds topic ids
}


class UnsupportedControllerRequestVersion(Exception):
    """The best common version of an API is older than the controller builds."""

    def __init__(self, broker_id: int, api_name: str, version: int, lowest: int) -> None:
        super().__init__(
            f"broker {broker_id} supports {api_name} only up to v{version}; the controller sends v{lowest} or newer: upgrade the broker"
        )


class KavkaBrokerTransport:
    """``BrokerTransport`` over ``BrokerConnection`` (see module doc)."""

    def __init__(self, controller_id: int, *, request_timeout_ms: int = 30000, client_id: str | None = None,
                 security: ClientSecurity = PLAINTEXT_SECURITY) -> None:
        self._security = security
        self._client_id = client_id or f"controller-{controller_id}"
        self._timeout_ms = request_timeout_ms
        self._endpoints: dict[int, EndPoint] = {}
        self._conns: dict[int, BrokerConnection] = {}

    def set_endpoint(self, broker_id: int, endpoint: EndPoint) -> None:
        if self._endpoints.get(broker_id) != endpoint:
            conn = self._conns.pop(broker_id, None)
            if conn is not None:
                conn.close()  # moved: the next send connects to the new address
        self._endpoints[broker_id] = endpoint

    async def _connection(self, broker_id: int) -> BrokerConnection:
        conn = self._conns.get(broker_id)
        if conn is not None and conn.connected:
            return conn
        ep = self._endpoints.get(broker_id)
        if ep is None:
            raise ConnectionError(f"no endpoint known for broker {broker_id}")
        conn = BrokerConnection(ep.host or "127.0.0.1", ep.port, self._client_id, request_timeout_ms=self._timeout_ms,
                                node_id=broker_id, security=self._security)
        await conn.connect()
        self._conns[broker_id] = conn
        return conn

    async def send(self, broker_id: int, request: Message) -> Message:
        if not isinstance(request, Request):  # what the controller sends is always one
            raise TypeError(f"{type(request).__name__} is not a request")
        conn = await self._connection(broker_id)
        lowest, highest = CONTROLLER_REQUEST_VERSIONS[request.API_KEY]
        version = conn.version_for(request.API_KEY, max_version=highest)
        if version < lowest:
            raise UnsupportedControllerRequestVersion(broker_id, request.API_NAME, version, lowest)
        response = await conn.request(request, version=version)
        assert response is not None  # only Produce with acks=0 has no response
        return response

    async def forget(self, broker_id: int) -> None:
        conn = self._conns.pop(broker_id, None)
        if conn is not None:
            conn.close()

    async def close(self) -> None:
        for broker_id in list(self._conns):
            await self.forget(broker_id)
        self._endpoints.clear()
