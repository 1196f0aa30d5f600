"""Cluster metadata as the client sees it: immutable snapshots built from a
Metadata response.

``ClusterMetadata`` holds the brokers (node id, host, port, rack), the
controller id (Metadata v1+), the cluster id (v2+) and, per topic, each
partition's leader, leader epoch (v7+), replicas, ISR and offline replicas.
A snapshot never changes; ``Cluster.refresh_metadata`` replaces it whole.

Pure values; any thread.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kavka.common.errors import ErrorCode
from kavka.common.ids import NO_LEADER
from kavka.common.topic_partition import TopicPartition
from kavka.protocol.messages import MetadataResponse


@dataclass(frozen=True, slots=True)
class BrokerNode:
    node_id: int
    host: str
    port: int
    rack: str | None = None


@dataclass(frozen=True, slots=True)
class PartitionMetadata:
    """One partition; ``leader`` is NO_LEADER (-1) when it has none."""

    topic: str
    partition: int
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    offline_replicas: tuple[int, ...] = ()
    error: ErrorCode = ErrorCode.NONE


@dataclass(frozen=True, slots=True)
class TopicMetadata:
    """One topic; ``partitions`` sorted by index. ``error`` is the topic-level
    code (e.g. UNKNOWN_TOPIC_OR_PARTITION, LEADER_NOT_AVAILABLE while it is
    being created)."""

    name: str
    error: ErrorCode
    is_internal: bool
    partitions: tuple[PartitionMetadata, ...]


@dataclass(frozen=True, slots=True)
class ClusterMetadata:
    cluster_id: str | None
    controller_id: int
    brokers: dict[int, BrokerNode] = field(default_factory=dict)
    topics: dict[str, TopicMetadata] = field(default_factory=dict)

    def partition(self, tp: TopicPartition) -> PartitionMetadata | None:
        t = self.topics.get(tp.topic)
        if t is None:
            return None
        for p in t.partitions:
            if p.partition == tp.partition:
                return p
        return None

    def leader_for(self, tp: TopicPartition) -> int | None:
        """The leader's node id, or None when unknown or leaderless."""
        p = self.partition(tp)
        if p is None or p.leader == NO_LEADER:
            return None
        return p.leader

    def partitions_of(self, topic: str) -> tuple[PartitionMetadata, ...]:
        t = self.topics.get(topic)
        return t.partitions if t is not None else ()

    def merged(self, newer: ClusterMetadata, replace_all_topics: bool) -> ClusterMetadata:
        """``newer`` with this snapshot's topics kept when ``newer`` came
        from a request for only some topics."""
        if replace_all_topics:
            return newer
        topics = dict(self.topics)
        topics.update(newer.topics)
        return ClusterMetadata(newer.cluster_id, newer.controller_id, newer.brokers, topics)


def from_response(resp: MetadataResponse) -> ClusterMetadata:
    brokers = {b.node_id: BrokerNode(b.node_id, b.host, b.port, b.rack) for b in resp.brokers}
    topics: dict[str, TopicMetadata] = {}
    for t in resp.topics:
        if t.name is None:
            continue
        parts = tuple(sorted(
            (PartitionMetadata(t.name, p.partition_index, p.leader_id, p.leader_epoch,
                               tuple(p.replica_nodes), tuple(p.isr_nodes), tuple(p.offline_replicas),
                               ErrorCode.of(p.error_code))
             for p in t.partitions),
            key=lambda p: p.partition))
        topics[t.name] = TopicMetadata(t.name, ErrorCode.of(t.error_code), t.is_internal, parts)
    return ClusterMetadata(resp.cluster_id, resp.controller_id, brokers, topics)
