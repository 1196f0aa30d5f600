"""The broker's side of a controlled shutdown (``controlled.shutdown.enable``,
default true; Kafka's KafkaServer.controlledShutdown): before a broker
stops on SIGTERM, it asks the controller to move its leaderships to other
in-sync replicas, so producers and consumers are redirected at once instead
of waiting for the ZooKeeper session to expire and an election (seed 003
§Broker Failover).

``ControlledShutdownClient.run()``:

1. find the controller — ``/controller`` in ZooKeeper (the metadata cache's
   copy may be stale during a controller change) — and its endpoint on the
   inter-broker listener (metadata cache, else ``/brokers/ids/<id>``);
2. send ControlledShutdown (the highest common version, with this broker's
   id and epoch) and read the partitions it still leads;
3. done when none remain; otherwise (an error, NOT_CONTROLLER, no
   controller, partitions remaining) wait ``controlled.shutdown.retry.backoff.ms``
   and try again, ``controlled.shutdown.max.retries`` attempts in all.

It returns whether the controller confirmed; either way the normal
shutdown follows (a broker never refuses to stop). This broker may itself
be the controller: the request then goes over its own still-open listener,
like any other. Runs on the broker's event loop, before the socket servers
and the controller stop.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass

from kavka.client.connection import BrokerConnection
from kavka.common.errors import ErrorCode, KafkaError
from kavka.protocol.messages import ControlledShutdownRequest
from kavka.security.client_security import PLAINTEXT_SECURITY, ClientSecurity
from kavka.server.metadata_cache import MetadataCache
from kavka.zk.client import KavkaZkClient
from kavka.zk.store_types import ZkError

log = logging.getLogger("kavka.server")


@dataclass(frozen=True, slots=True)
class ControlledShutdownSettings:
    """``controlled.shutdown.*`` and where to reach the controller."""

    max_retries: int = 3
    retry_backoff_ms: int = 5000
    request_timeout_ms: int = 30000
    listener_name: str = "PLAINTEXT"

    @classmethod
    def from_kafka_config(cls, config) -> ControlledShutdownSettings:
        return cls(
            max_retries=int(config["controlled.shutdown.max.retries"]),
            retry_backoff_ms=int(config["controlled.shutdown.retry.backoff.ms"]),
            request_timeout_ms=int(config["controller.socket.timeout.ms"]),
            listener_name=config.inter_broker_listener_name,
        )


class ControlledShutdownClient:
    """One broker's controlled shutdown (see module doc)."""

    def __init__(
        self,
        broker_id: int,
        broker_epoch: Callable[[], int],
        zk: KavkaZkClient,
        cache: MetadataCache,
        settings: ControlledShutdownSettings,
        security: ClientSecurity = PLAINTEXT_SECURITY,
    ) -> None:
        self.security = security
        self.broker_id = broker_id
        self.broker_epoch = broker_epoch
        self.zk = zk
        self.cache = cache
        self.settings = settings
        self.attempts = 0

    async def run(self) -> bool:
        """True once the controller has moved every leadership it could."""
        s = self.settings
        for attempt in range(1, s.max_retries + 1):
            self.attempts = attempt
            try:
                remaining = await self._attempt()
            except (TimeoutError, KafkaError, ZkError, OSError) as e:
                log.warning("controlled shutdown attempt %d of %d failed: %s", attempt, s.max_retries, e)
            else:
                if remaining is None:
                    log.info("controlled shutdown of broker %d succeeded", self.broker_id)
                    return True
                log.info("controlled shutdown attempt %d of %d: broker %d still leads %s", attempt, s.max_retries, self.broker_id, remaining)
            if attempt < s.max_retries:
                await asyncio.sleep(s.retry_backoff_ms / 1000)
        log.warning("controlled shutdown of broker %d did not complete after %d attempts; shutting down anyway", self.broker_id, s.max_retries)
        return False

    async def _attempt(self) -> str | None:
        """One request; None if nothing remains, else what to report."""
        controller_id = await self.zk.get_controller_id()
        if controller_id is None:
            return "(no controller is elected right now)"
        endpoint = await self._endpoint(controller_id)
        if endpoint is None:
            return f"(controller {controller_id} has no {self.settings.listener_name} listener registered)"
        host, port = endpoint
        conn = BrokerConnection(
            host or "127.0.0.1", port, f"broker-{self.broker_id}-controlled-shutdown",
            request_timeout_ms=self.settings.request_timeout_ms, node_id=controller_id, security=self.security,
        )
        async with conn:
            response = await conn.request(ControlledShutdownRequest(broker_id=self.broker_id, broker_epoch=self.broker_epoch()))
        if response.error_code != ErrorCode.NONE:
            raise KafkaError(f"controller {controller_id} refused", code=response.error_code)
        if not response.remaining_partitions:
            return None
        return ", ".join(f"{p.topic_name}-{p.partition_index}" for p in response.remaining_partitions[:20])

    async def _endpoint(self, broker_id: int) -> tuple[str, int] | None:
        live = self.cache.alive_broker(broker_id)
        ep = live.endpoint(self.settings.listener_name) if live is not None else None
        if ep is not None:
            return ep.host, ep.port
        node = (await self.zk.get_brokers([broker_id])).get(broker_id)
        registered = node.endpoint(self.settings.listener_name) if node is not None else None
        return (registered.host, registered.port) if registered is not None else None
