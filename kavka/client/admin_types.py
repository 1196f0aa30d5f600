"""Values of the admin API: what to create, what comes back.

Frozen value types and the protocol's enums (resource types, ListOffsets
special timestamps, IncrementalAlterConfigs operations). Any thread.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import IntEnum


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
