"""The broker's metadata cache, fed by the controller's UpdateMetadata.

Every broker answers Metadata requests from this cache (seed 000 §Broker
启动过程 step 1: the controller sends UpdateMetadata to new brokers, and to
all brokers after every leadership change). It holds:

- the live brokers with their endpoints per listener name and rack;
- per partition: leader, leader epoch, ISR, assigned replicas, offline
  replicas and the ZooKeeper version of the state znode;
- the controller id and topic ids.

A partition whose leader is -1 (LeaderDuringDelete, -2, marks a topic being
deleted) is reported with LEADER_NOT_AVAILABLE; a topic being deleted is
dropped from the cache.

Mutated only on the broker's event loop (``update``, which bumps
``generation``); read anywhere on the loop. Values handed out are immutable.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from dataclasses import dataclass

LEADER_DURING_DELETE = -2
ZERO_UUID = uuid.UUID(int=0)


@dataclass(frozen=True, slots=True)
class BrokerEndpoint:
    host: str
    port: int
    listener: str
    security_protocol: int = 0  # PLAINTEXT


@dataclass(frozen=True, slots=True)
class LiveBroker:
    id: int
    endpoints: tuple[BrokerEndpoint, ...]
    rack: str | None = None

    def endpoint(self, listener: str) -> BrokerEndpoint | None:
        for e in self.endpoints:
            if e.listener == listener:
                return e
        return None


@dataclass(frozen=True, slots=True)
class PartitionMetadata:
    topic: str
    partition: int
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    replicas: tuple[int, ...]
    offline_replicas: tuple[int, ...]
    zk_version: int
    controller_epoch: int


@dataclass(frozen=True, slots=True)
class MetadataUpdate:
    """What one UpdateMetadata request changed."""

    updated: tuple[tuple[str, int], ...]
    deleted: tuple[tuple[str, int], ...]


class MetadataCache:
    """See the module docstring."""

    def __init__(self, broker_id: int) -> None:
        self.broker_id = broker_id
        self.controller_id: int = -1
        self.controller_epoch: int = -1
        self.brokers: dict[int, LiveBroker] = {}
        self.partitions: dict[str, dict[int, PartitionMetadata]] = {}
        self.topic_ids: dict[str, uuid.UUID] = {}
        self._topic_names: dict[uuid.UUID, str] = {}  # topic_ids reversed: Fetch v13+ asks per topic
        self._changed: asyncio.Event | None = None
        # Bumped by every update: what was built from the cache before
        # (the Metadata handler's per-topic answers) is stale once it moves.
        self.generation = 0

    async def wait_until(self, predicate: Callable[[MetadataCache], bool], timeout_s: float) -> bool:
        """Wait (on the loop) until ``predicate(self)`` holds after some
        update, or the timeout passes; returns whether it holds. Used by
        CreateTopics and DeleteTopics, which answer once the controller's
        decision has reached this broker (Kafka's delayed topic operations)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while not predicate(self):
            remaining = deadline - loop.time()
            if remaining <= 0:
                return False
            if self._changed is None:
                self._changed = asyncio.Event()
            try:
                await asyncio.wait_for(self._changed.wait(), remaining)
            except TimeoutError:
                return predicate(self)
        return True

    def _notify(self) -> None:
        if self._changed is not None:
            self._changed.set()
            self._changed = None

    # -- updates ----------------------------------------------------------
    def update(self, request, version: int) -> MetadataUpdate:
        """Apply an UpdateMetadataRequest (any version)."""
        self.controller_id = request.controller_id
        self.controller_epoch = max(self.controller_epoch, request.controller_epoch)
        brokers: dict[int, LiveBroker] = {}
        for b in request.live_brokers:
            eps: tuple[BrokerEndpoint, ...]
            if version == 0:
                eps = (BrokerEndpoint(b.v0_host, b.v0_port, "PLAINTEXT"),)
            else:
                eps = tuple(BrokerEndpoint(e.host, e.port, e.listener if version >= 3 else _protocol_name(e.security_protocol),
                                           e.security_protocol) for e in b.endpoints)
            brokers[b.id] = LiveBroker(b.id, eps, b.rack if version >= 2 else None)
        self.brokers = brokers
        updated: list[tuple[str, int]] = []
        deleted: list[tuple[str, int]] = []
        for topic, topic_id, state in _partition_states(request, version):
            tp = (topic, state.partition_index)
            if state.leader == LEADER_DURING_DELETE:
                parts = self.partitions.get(topic)
                if parts is not None:
                    parts.pop(state.partition_index, None)
                    if not parts:
                        del self.partitions[topic]
                        gone = self.topic_ids.pop(topic, None)
                        if gone is not None and self._topic_names.get(gone) == topic:
                            del self._topic_names[gone]
                deleted.append(tp)
                continue
            self.partitions.setdefault(topic, {})[state.partition_index] = PartitionMetadata(
                topic, state.partition_index, state.leader, state.leader_epoch, tuple(state.isr),
                tuple(state.replicas), tuple(state.offline_replicas) if version >= 4 else (),
                state.zk_version, state.controller_epoch)
            if topic_id is not None and topic_id != ZERO_UUID:
                old = self.topic_ids.get(topic)
                if old is not None and old != topic_id and self._topic_names.get(old) == topic:
                    del self._topic_names[old]  # the topic was deleted and created again
                self.topic_ids[topic] = topic_id
                self._topic_names[topic_id] = topic
            updated.append(tp)
        self.generation += 1
        self._notify()
        return MetadataUpdate(tuple(updated), tuple(deleted))

    # -- queries ----------------------------------------------------------
    def alive_broker(self, broker_id: int) -> LiveBroker | None:
        return self.brokers.get(broker_id)

    def alive_brokers(self) -> list[LiveBroker]:
        return [self.brokers[i] for i in sorted(self.brokers)]

    def contains_topic(self, topic: str) -> bool:
        return topic in self.partitions

    def topic_has_leaders(self, topic: str, partitions: int | None = None) -> bool:
        """Every partition of the topic (at least ``partitions`` of them)
        has a live leader."""
        parts = self.partitions.get(topic)
        if not parts or (partitions is not None and len(parts) < partitions):
            return False
        return all(p.leader >= 0 and p.leader in self.brokers for p in parts.values())

    def topics(self) -> list[str]:
        return sorted(self.partitions)

    def topic_partitions(self, topic: str) -> dict[int, PartitionMetadata]:
        return self.partitions.get(topic, {})

    def partition(self, topic: str, partition: int) -> PartitionMetadata | None:
        return self.partitions.get(topic, {}).get(partition)

    def topic_id(self, topic: str) -> uuid.UUID:
        return self.topic_ids.get(topic, ZERO_UUID)

    def topic_by_id(self, topic_id: uuid.UUID) -> str | None:
        return self._topic_names.get(topic_id)

    def leader_endpoint(self, topic: str, partition: int, listener: str) -> BrokerEndpoint | None:
        p = self.partition(topic, partition)
        if p is None or p.leader < 0:
            return None
        b = self.brokers.get(p.leader)
        return b.endpoint(listener) if b is not None else None


_PROTOCOLS = {0: "PLAINTEXT", 1: "SSL", 2: "SASL_PLAINTEXT", 3: "SASL_SSL"}


def _protocol_name(code: int) -> str:
    return _PROTOCOLS.get(code, "PLAINTEXT")


def _partition_states(request, version: int):
    """Yield (topic, topic_id, partition_state) whatever the version's layout:
    v0-4 carry a flat list with topic names, v5+ group them by topic."""
    if version <= 4:
        for s in request.ungrouped_partition_states:
            yield s.topic_name, None, s
    else:
        for t in request.topic_states:
            tid = t.topic_id if version >= 7 else None
            for s in t.partition_states:
                yield t.topic_name, tid, s
