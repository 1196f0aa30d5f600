"""Which replica a consumer should read from (KIP-392: fetch from the
closest replica), Kafka's ``ReplicaSelector`` and its implementations.

``replica.selector.class`` names the selector, with Kafka's class names:

- unset (the default): no selector; a leader never redirects a consumer
  (Kafka's null, which behaves as ``LeaderSelector``);
- ``org.apache.kafka.common.replica.LeaderSelector``: always the leader;
- ``org.apache.kafka.common.replica.RackAwareReplicaSelector``: a client
  that sends a ``rack_id`` (``client.rack``) is sent to a replica in its
  rack: the leader when it is there, else the most caught-up one (highest
  log end offset, then the most recently caught up); the leader when no
  replica is in its rack or it sent no rack.

The leader builds the ``PartitionView`` from the replicas that can serve
the fetch offset: the in-sync followers whose log holds it (Kafka's
ReplicaManager.findPreferredReadReplica: out-of-sync ones
are left out) and are alive with an endpoint on the client's listener,
plus itself.

Pure; any thread.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from kavka.common.broker_config_keys import LEADER_SELECTOR, RACK_AWARE_REPLICA_SELECTOR, REPLICA_SELECTOR_CLASSES
from kavka.common.config import ConfigError


@dataclass(frozen=True, slots=True)
class ClientMetadata:
    """What a consumer's Fetch v11+ tells about it (Kafka's
    DefaultClientMetadata): its ``rack_id`` ("" when it has none), client
    id, address and the listener it came in on."""

    rack_id: str
    client_id: str = ""
    client_address: str = ""
    listener: str = ""


@dataclass(frozen=True, slots=True)
class ReplicaView:
    """One replica that could serve the read: its broker and rack, log end
    offset and how long ago it was last caught up (0 for the leader)."""

    broker_id: int
    rack: str | None
    log_end_offset: int
    time_since_last_caught_up_ms: int = 0


@dataclass(frozen=True, slots=True)
class PartitionView:
    replicas: Sequence[ReplicaView]  # the leader among them
    leader: ReplicaView


class ReplicaSelector(Protocol):
    def select(self, client: ClientMetadata, partition: PartitionView) -> ReplicaView | None: ...


class LeaderSelector:
    """Kafka's LeaderSelector: always the leader."""

    def select(self, client: ClientMetadata, partition: PartitionView) -> ReplicaView | None:
        return partition.leader


class RackAwareReplicaSelector:
    """Kafka's RackAwareReplicaSelector (see the module docstring)."""

    def select(self, client: ClientMetadata, partition: PartitionView) -> ReplicaView | None:
        if not client.rack_id:
            return partition.leader
        same_rack = [r for r in partition.replicas if r.rack == client.rack_id]
        if not same_rack or partition.leader in same_rack:
            return partition.leader
        # Kafka's ReplicaView.comparator: the highest log end offset, then the
        # most recently caught up; the lowest broker id breaks a tie here so
        # the answer does not depend on the order of the replicas.
        return max(same_rack, key=lambda r: (r.log_end_offset, -r.time_since_last_caught_up_ms, -r.broker_id))


def replica_selector(key: str, class_name: str | None) -> ReplicaSelector | None:
    """The selector ``replica.selector.class`` names (None: unset); an
    unknown name raises ``ConfigError`` naming ``key``."""
    if not class_name:
        return None
    if class_name == LEADER_SELECTOR:
        return LeaderSelector()
    if class_name == RACK_AWARE_REPLICA_SELECTOR:
        return RackAwareReplicaSelector()
    raise ConfigError(key, f"value {class_name!r} is not a replica selector Kavka has; use one of "
                           f"{', '.join(REPLICA_SELECTOR_CLASSES)}, or leave it unset (consumers read from the leader)")
