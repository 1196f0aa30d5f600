"""``KavkaBrokerTransport``: the real ``BrokerTransport`` — the Kafka
protocol over TCP through Kavka's own client (``kavka.client.connection.
BrokerConnection``), one connection per broker, opened lazily.

Versions: on each new connection the transport asks the broker's
ApiVersions (v0, which every broker answers) and sends each controller
request at the highest version both sides support, within the range the
controller builds (the grouped layouts): LeaderAndIsr v2-v5,
UpdateMetadata v5-v7, StopReplica v3. A broker that cannot take even the
lowest gets ``UnsupportedControllerRequestVersion``, which the channel
treats like any failed send (log, back off, retry).

The connection is made to the broker's endpoint on the inter-broker
listener (``inter.broker.listener.name``), given by the channel. All
methods run on the controller's event loop.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from typing import Any

from kavka.client.connection import BrokerConnection
from kavka.common.listeners import EndPoint
from kavka.protocol.messages import ApiVersionsRequest, Message

log = logging.getLogger(__name__)

API_VERSIONS_KEY = 18

# API key -> (lowest, highest) version the controller's bodies are built for.
CONTROLLER_REQUEST_VERSIONS: dict[int, tuple[int, int]] = {
    4: (2, 5),  # LeaderAndIsr: grouped by topic from v2; v5 adds topic ids
    5: (3, 3),  # StopReplica: per-partition leader epoch and delete flag from v3
    6: (5, 7),  # UpdateMetadata: grouped by topic from v5; v7 adds topic ids
}


class UnsupportedControllerRequestVersion(Exception):
    """The broker's versions and the controller's do not overlap for an API."""

    def __init__(self, broker_id: int, api_name: str, broker_range: tuple[int, int] | None, ours: tuple[int, int]) -> None:
        have = f"v{broker_range[0]}-v{broker_range[1]}" if broker_range else "no version"
        super().__init__(
            f"broker {broker_id} supports {have} of {api_name}; the controller sends v{ours[0]}-v{ours[1]}: upgrade the broker"
        )


async def _maybe_await(value: Any) -> None:
    if inspect.isawaitable(value):
        await value


class KavkaBrokerTransport:
    """``BrokerTransport`` over ``BrokerConnection`` (see module doc)."""

    def __init__(self, controller_id: int, *, request_timeout_ms: int = 30000, client_id: str | None = None) -> None:
        self._client_id = client_id or f"controller-{controller_id}"
        self._timeout_ms = request_timeout_ms
        self._endpoints: dict[int, EndPoint] = {}
        self._conns: dict[int, BrokerConnection] = {}
        self._versions: dict[int, dict[int, tuple[int, int]]] = {}

    def set_endpoint(self, broker_id: int, endpoint: EndPoint) -> None:
        if self._endpoints.get(broker_id) != endpoint and broker_id in self._conns:
            conn = self._conns.pop(broker_id)
            self._versions.pop(broker_id, None)
            closing = conn.close()  # moved: the next send reconnects to the new address
            if inspect.isawaitable(closing):
                asyncio.ensure_future(closing)
        self._endpoints[broker_id] = endpoint

    async def _connection(self, broker_id: int) -> BrokerConnection:
        conn = self._conns.get(broker_id)
        if conn is not None:
            return conn
        ep = self._endpoints.get(broker_id)
        if ep is None:
            raise ConnectionError(f"no endpoint known for broker {broker_id}")
        conn = BrokerConnection(ep.host or "127.0.0.1", ep.port, self._client_id, request_timeout_ms=self._timeout_ms)
        try:
            await conn.connect()
            answer = await conn.request(ApiVersionsRequest(), version=0)
        except BaseException:
            await _maybe_await(conn.close())
            raise
        self._versions[broker_id] = {k.api_key: (k.min_version, k.max_version) for k in answer.api_keys}
        self._conns[broker_id] = conn
        return conn

    def _version(self, broker_id: int, request: Message) -> int:
        ours = CONTROLLER_REQUEST_VERSIONS[request.API_KEY]
        theirs = self._versions.get(broker_id, {}).get(request.API_KEY)
        if theirs is None:
            raise UnsupportedControllerRequestVersion(broker_id, request.API_NAME, None, ours)
        version = min(ours[1], theirs[1])
        if version < max(ours[0], theirs[0]):
            raise UnsupportedControllerRequestVersion(broker_id, request.API_NAME, theirs, ours)
        return version

    async def send(self, broker_id: int, request: Message) -> Message:
        conn = await self._connection(broker_id)
        return await conn.request(request, version=self._version(broker_id, request))

    async def forget(self, broker_id: int) -> None:
        conn = self._conns.pop(broker_id, None)
        self._versions.pop(broker_id, None)
        if conn is not None:
            await _maybe_await(conn.close())

    async def close(self) -> None:
        for broker_id in list(self._conns):
            await self.forget(broker_id)
        self._endpoints.clear()
