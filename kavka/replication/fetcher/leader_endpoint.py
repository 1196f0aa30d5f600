"""The leader as a follower's fetcher sees it: the ``LeaderEndPoint`` seam.

A fetcher asks its leader three things, all as this broker's replica id:

* ``fetch``: a follower Fetch (seed 000 §Follower 从 Leader Fetch 数据) —
  the replication layer's ``FetchParams`` / ``FetchPartition`` in, the
  per-partition ``FetchPartitionData`` out (records as stored, unchanged);
* ``fetch_epoch_end_offsets``: OffsetsForLeaderEpoch (KIP-101/279/320) —
  per partition (current leader epoch, our latest epoch) in, the leader's
  (error, epoch, end offset) out;
* ``fetch_log_offset``: ListOffsets as a replica (earliest or latest: the
  leader's log start or log end), for OFFSET_OUT_OF_RANGE handling;

and ``truncates_on_fetch``: whether the leader checks a Fetch's
``last_fetched_epoch`` and answers a diverging epoch (Fetch v12+, KIP-595),
so a new follower may fetch at once instead of asking
OffsetsForLeaderEpoch first (Kafka's truncation on fetch, from
inter-broker protocol 2.7).

Per-partition errors come back as codes; a failure of the whole exchange
(connection refused or lost, request timed out) raises
``LeaderConnectionError`` and the fetcher backs off and reconnects.

Implementations: ``RemoteLeaderEndPoint`` (``remote_leader_endpoint``: the Kafka
wire over the inter-broker listener); tests use one over a ``ReplicaManager``
in the same process. Called from one fetcher task on the event loop.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from kavka.common.errors import ErrorCode
from kavka.common.topic_partition import TopicPartition
from kavka.replication.requests import FetchParams, FetchPartition, FetchPartitionData

EARLIEST_TIMESTAMP = -2  # ListOffsets: the log start offset
LATEST_TIMESTAMP = -1  # ListOffsets: the log end offset (for a replica)


class LeaderConnectionError(Exception):
    """The leader could not be asked at all (not a per-partition error)."""


@dataclass(frozen=True, slots=True)
class EpochRequest:
    """One partition of an OffsetsForLeaderEpoch request: the leader epoch
    we follow (fencing) and the epoch whose end we want."""

    current_leader_epoch: int
    leader_epoch: int


@dataclass(frozen=True, slots=True)
class EpochEndOffsetResult:
    """One partition's OffsetsForLeaderEpoch answer (-1s with an error)."""

    error: ErrorCode
    leader_epoch: int = -1
    end_offset: int = -1


@dataclass(frozen=True, slots=True)
class OffsetResult:
    """One partition's ListOffsets answer (-1 with an error)."""

    error: ErrorCode
    offset: int = -1


class LeaderEndPoint(Protocol):
    """See the module docstring."""

    async def fetch(
        self, params: FetchParams, partitions: Mapping[TopicPartition, FetchPartition]
    ) -> dict[TopicPartition, FetchPartitionData]: ...

    async def fetch_epoch_end_offsets(
        self, requests: Mapping[TopicPartition, EpochRequest]
    ) -> dict[TopicPartition, EpochEndOffsetResult]: ...

    async def fetch_log_offset(
        self, tp: TopicPartition, current_leader_epoch: int, timestamp: int
    ) -> OffsetResult: ...

    async def truncates_on_fetch(self) -> bool: ...

    def close(self) -> None: ...
