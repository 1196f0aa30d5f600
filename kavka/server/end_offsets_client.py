"""``EndOffsetsClient``: the high watermarks of partitions this broker does
not host, asked of their leaders (ListOffsets LATEST), for the consumer
lag the group coordinator's metrics export (``kavka.metrics``).

A Kavka admin client over the inter-broker listener (the broker's own
security there, as its fetchers and the controller use), bootstrapped
from this broker's own endpoint in the metadata cache, made on first use
and kept; its ``Cluster`` routes each partition to its leader and refreshes
metadata when leaders move. A partition the leader answers with an error
(deleted, moving) is left out of the answer.

Event loop only.
"""

from __future__ import annotations

from collections.abc import Mapping

from kavka.client.admin import AdminError, KafkaAdmin
from kavka.client.admin_types import OffsetSpec
from kavka.client.cluster import Cluster
from kavka.common.topic_partition import TopicPartition
from kavka.security.client_security import ClientSecurity
from kavka.server.metadata_cache import MetadataCache

TIMEOUT_MS = 3_000


class EndOffsetsClient:
    """See the module docstring."""

    def __init__(self, cache: MetadataCache, broker_id: int, listener: str, security: ClientSecurity) -> None:
        self._cache = cache
        self._broker_id = broker_id
        self._listener = listener
        self._security = security
        self._cluster: Cluster | None = None

    async def _admin(self) -> KafkaAdmin:
        if self._cluster is None:
            broker = self._cache.brokers.get(self._broker_id)
            endpoint = broker.endpoint(self._listener) if broker is not None else None
            if endpoint is None:
                raise LookupError(f"broker {self._broker_id} has no {self._listener} endpoint in its metadata yet")
            self._cluster = await Cluster([(endpoint.host, endpoint.port)], client_id=f"broker-{self._broker_id}-lag",
                                          request_timeout_ms=TIMEOUT_MS, default_deadline_ms=TIMEOUT_MS,
                                          security=self._security).start()
        return KafkaAdmin(self._cluster, timeout_ms=TIMEOUT_MS)

    async def end_offsets(self, partitions: set[TopicPartition]) -> Mapping[TopicPartition, int]:
        admin = await self._admin()
        specs = dict.fromkeys(partitions, int(OffsetSpec.LATEST))
        try:
            listed = await admin.list_offsets(specs)
        except AdminError as e:
            # the partitions that failed are left out; the others asked again
            rest = {tp: spec for tp, spec in specs.items() if tp not in e.errors}
            listed = await admin.list_offsets(rest) if rest else {}
        return {tp: r.offset for tp, r in listed.items() if r.offset >= 0}

    async def close(self) -> None:
        cluster, self._cluster = self._cluster, None
        if cluster is not None:
            await cluster.close()
