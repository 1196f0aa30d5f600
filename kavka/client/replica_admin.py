"""Replica placement calls of Kafka's admin client: DescribeLogDirs (35,
to each broker: its log directories and the size of every replica in
them), ListPartitionReassignments (46) and AlterPartitionReassignments
(45) of KIP-455, and ElectLeaders (43, KIP-460). The last three are served
by the active controller only; any other broker answers NOT_CONTROLLER
(retriable), after which the metadata, and with it the controller id, is
refreshed and the request sent again until the deadline.

Results come back per partition as ``(ErrorCode, message)`` so a caller can
report each one; a top-level error raises the typed error of
``kavka.common.errors``. One event loop; the console and tests.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from kavka.client.cluster import Cluster
from kavka.common.errors import ErrorCode, error_for
from kavka.common.topic_partition import TopicPartition
from kavka.protocol import messages as m
from kavka.protocol.messages import Request, Response

DESCRIBE_LOG_DIRS = 35
PREFERRED = 0  # ElectLeaders election_type
UNCLEAN = 1
R = TypeVar("R", bound=Response)
PartitionResults = dict[TopicPartition, tuple[ErrorCode, str | None]]


@dataclass(frozen=True, slots=True)
class LogDirDescription:
    """One log directory of a broker: its error (NONE when healthy), the
    bytes of every replica in it, and (DescribeLogDirs v4+) the volume's
    total and usable bytes (-1 when unknown)."""

    path: str
    error: ErrorCode
    replica_sizes: Mapping[TopicPartition, int]
    total_bytes: int = -1
    usable_bytes: int = -1

    @property
    def used_bytes(self) -> int:
        return sum(self.replica_sizes.values())


@dataclass(frozen=True, slots=True)
class OngoingReassignment:
    """A partition the controller is moving: its full replica set while it
    moves (OAR + RAR), the replicas being added and those to be removed."""

    replicas: tuple[int, ...]
    adding: tuple[int, ...]
    removing: tuple[int, ...]

    @property
    def target(self) -> tuple[int, ...]:
        """RAR: the replica list the move ends with."""
        return tuple(r for r in self.replicas if r not in self.removing)


def _by_topic(partitions: Iterable[TopicPartition]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for tp in sorted(set(partitions), key=lambda t: (t.topic, t.partition)):
        out.setdefault(tp.topic, []).append(tp.partition)
    return out


class ReplicaAdmin:
    """Log-dir, reassignment and election calls on a started ``Cluster``."""

    def __init__(self, cluster: Cluster, *, timeout_ms: int = 30_000) -> None:
        self.cluster = cluster
        self.timeout_ms = timeout_ms

    async def _to_controller(self, body: Request[R], what: str, deadline_ms: int | None = None) -> R:
        # The controller may hold the answer up to the request's own timeout_ms (it waits for the
        # brokers); the connection waits that long on top of its usual request timeout.
        wait_ms = self.cluster.request_timeout_ms + int(getattr(body, "timeout_ms", 0) or 0)

        async def attempt() -> R:
            resp = await self.cluster.send(await self.cluster.controller_id(), body, timeout_ms=wait_ms)
            code = getattr(resp, "error_code", 0)
            if code:
                message = getattr(resp, "error_message", None)
                raise error_for(code, f"{what}: {message or ErrorCode.of(code).message}")
            return resp
        return await self.cluster.call(attempt, deadline_ms=deadline_ms or self.timeout_ms)

    async def describe_log_dirs(self, broker_id: int,
                                partitions: Iterable[TopicPartition] | None = None) -> list[LogDirDescription]:
        """The log directories of ``broker_id`` with the replicas they hold
        (all of them, or only ``partitions``)."""
        R_ = m.DescribeLogDirsRequest
        topics = None if partitions is None else [R_.Topics(topic=t, partitions=ps)
                                                  for t, ps in _by_topic(partitions).items()]

        async def attempt():
            conn = await self.cluster.connection(broker_id)
            version = conn.version_for(DESCRIBE_LOG_DIRS)
            resp = await conn.request(R_(topics=topics), version=version)
            if version >= 3 and resp.error_code:
                raise error_for(resp.error_code, f"DescribeLogDirs on broker {broker_id}")
            return resp, version
        resp, version = await self.cluster.call(attempt, deadline_ms=self.timeout_ms)
        out = []
        for d in resp.results:
            sizes = {TopicPartition(t.name, p.partition_index): p.partition_size
                     for t in d.topics for p in t.partitions if not p.is_future_key}
            out.append(LogDirDescription(d.log_dir, ErrorCode.of(d.error_code), sizes,
                                         d.total_bytes if version >= 4 else -1,
                                         d.usable_bytes if version >= 4 else -1))
        return out

    async def list_partition_reassignments(self, partitions: Iterable[TopicPartition] | None = None
                                           ) -> dict[TopicPartition, OngoingReassignment]:
        """The moves in progress (of ``partitions``, or all)."""
        L = m.ListPartitionReassignmentsRequest
        topics = None if partitions is None else [L.Topics(name=t, partition_indexes=ps)
                                                  for t, ps in _by_topic(partitions).items()]
        resp = await self._to_controller(L(timeout_ms=self.timeout_ms, topics=topics), "ListPartitionReassignments")
        return {TopicPartition(t.name, p.partition_index):
                OngoingReassignment(tuple(p.replicas), tuple(p.adding_replicas), tuple(p.removing_replicas))
                for t in resp.topics for p in t.partitions}

    async def alter_partition_reassignments(self, targets: Mapping[TopicPartition, tuple[int, ...] | None]
                                            ) -> PartitionResults:
        """Start moving each partition to ``targets[tp]`` (its new replica
        list, the first the preferred leader), or cancel its move (None)."""
        A = m.AlterPartitionReassignmentsRequest
        by_topic: dict[str, list] = {}
        for tp, replicas in sorted(targets.items(), key=lambda kv: (kv[0].topic, kv[0].partition)):
            by_topic.setdefault(tp.topic, []).append(A.Topics.Partitions(
                partition_index=tp.partition, replicas=None if replicas is None else list(replicas)))
        body = A(timeout_ms=self.timeout_ms, topics=[A.Topics(name=t, partitions=ps) for t, ps in by_topic.items()])
        resp = await self._to_controller(body, "AlterPartitionReassignments")
        return {TopicPartition(t.name, p.partition_index): (ErrorCode.of(p.error_code), p.error_message)
                for t in resp.responses for p in t.partitions}

    async def elect_leaders(self, partitions: Iterable[TopicPartition] | None = None, *,
                            election_type: int = PREFERRED) -> PartitionResults:
        """ElectLeaders for ``partitions`` (None: every partition).
        ELECTION_NOT_NEEDED means the preferred replica already leads."""
        E = m.ElectLeadersRequest
        tps = None if partitions is None else [E.TopicPartitions(topic=t, partitions=ps)
                                               for t, ps in _by_topic(partitions).items()]
        body = E(election_type=election_type, topic_partitions=tps, timeout_ms=self.timeout_ms)
        # The controller waits up to timeout_ms for the brokers to show the new leaders.
        resp = await self._to_controller(body, "ElectLeaders", deadline_ms=2 * self.timeout_ms)
        return {TopicPartition(r.topic, p.partition_id): (ErrorCode.of(p.error_code), p.error_message)
                for r in resp.replica_election_results for p in r.partition_result}
