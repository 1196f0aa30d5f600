"""Values of the admin API: what to create, what comes back.

Frozen value types and the protocol's enums (resource types, ListOffsets
special timestamps, IncrementalAlterConfigs operations), and what the
transaction tools of KIP-664 report. Any thread.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import IntEnum

from kavka.common.topic_partition import TopicPartition


class ResourceType(IntEnum):
    """DescribeConfigs/AlterConfigs resource types (protocol guide)."""

    TOPIC = 2
    BROKER = 4
    BROKER_LOGGER = 8


class OffsetSpec(IntEnum):
    """ListOffsets special timestamps."""

    LATEST = -1
    EARLIEST = -2


class AlterOp(IntEnum):
    """IncrementalAlterConfigs operations (KIP-339)."""

    SET = 0
    DELETE = 1
    APPEND = 2
    SUBTRACT = 3


@dataclass(frozen=True, slots=True)
class NewTopic:
    """A topic to create: either ``num_partitions`` and
    ``replication_factor`` (-1 = broker default) or an explicit
    ``replica_assignment`` (partition -> broker ids)."""

    name: str
    num_partitions: int = -1
    replication_factor: int = -1
    replica_assignment: Mapping[int, tuple[int, ...]] = field(default_factory=dict)
    configs: Mapping[str, str | None] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ConfigEntry:
    name: str
    value: str | None
    read_only: bool = False
    is_default: bool = False
    is_sensitive: bool = False
    source: int = -1
    # (name, value, source) per synonym, most specific first, when asked for
    synonyms: tuple[tuple[str, str | None, int], ...] = ()


@dataclass(frozen=True, slots=True)
class ClusterDescription:
    cluster_id: str | None
    controller_id: int
    brokers: tuple[tuple[int, str, int], ...]


@dataclass(frozen=True, slots=True)
class ListedOffset:
    offset: int
    timestamp: int
    leader_epoch: int


# -- transactions (KIP-664) ----------------------------------------------------------
# Kafka's transaction state names, as DescribeTransactions/ListTransactions carry them.
TRANSACTION_STATES = ("Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort",
                      "Dead", "PrepareEpochFence")


@dataclass(frozen=True, slots=True)
class TransactionListing:
    """One transactional id as ListTransactions names it, with the broker
    that coordinates it (the one that listed it)."""

    transactional_id: str
    coordinator_id: int
    producer_id: int
    state: str


@dataclass(frozen=True, slots=True)
class TransactionDescription:
    """A transactional id at its coordinator (DescribeTransactions);
    ``transaction_start_time_ms`` is -1 when no transaction has started."""

    coordinator_id: int
    state: str
    producer_id: int
    producer_epoch: int
    transaction_timeout_ms: int
    transaction_start_time_ms: int
    topic_partitions: frozenset[TopicPartition]


@dataclass(frozen=True, slots=True)
class ProducerState:
    """One producer a partition remembers (DescribeProducers): None where
    the broker reports none (-1 on the wire): no batch yet (sequence and
    timestamp), no marker yet (coordinator epoch), no open transaction."""

    producer_id: int
    producer_epoch: int
    last_sequence: int | None
    last_timestamp: int | None
    coordinator_epoch: int | None
    current_transaction_start_offset: int | None


@dataclass(frozen=True, slots=True)
class AbortTransactionSpec:
    """Which open transaction to end with an ABORT marker: the partition
    it hangs in, the producer id and epoch of its batches, and the
    coordinator epoch the marker claims (at least the one of the producer's
    last marker in that partition, else the leader refuses it as a zombie
    coordinator's: TRANSACTION_COORDINATOR_FENCED)."""

    topic_partition: TopicPartition
    producer_id: int
    producer_epoch: int
    coordinator_epoch: int
