"""Topic administration on any broker: create, add partitions, delete.

Seed 000 §创建 / 删除 Topic: a broker does not create a topic itself, it
writes the assignment to ``/brokers/topics/<t>`` (config first, in
``/config/topics/<t>``); the controller's watch fires and it elects the
leaders and sends LeaderAndIsr. Deletion writes ``/admin/delete_topics/<t>``
and the controller does the rest when ``delete.topic.enable``.

Each operation validates first (topic name, partitions, replication factor
against the live brokers, explicit assignments, topic configs through
``LogConfig``) and reports a Kafka error code and a message per topic; with
``validate_only`` nothing is written.

KIP-599: each write is first charged to the request's controller mutation
quota, when one is given — the new partitions of a created topic or of
CreatePartitions, the partitions of a deleted topic. A strict quota
refuses the mutation with THROTTLING_QUOTA_EXCEEDED while the client's
bucket is below zero; the others go on.

Metadata's auto-creation (``auto_create``) waits for ZooKeeper at most
``auto_create_timeout_s``: a hung or unreachable ZooKeeper must cost the
client a retriable per-topic error, not its connection and the requests
queued behind the Metadata (seed 003 §Zookeeper Hang). It answers
LEADER_NOT_AVAILABLE then, as Kafka's ZooKeeper-mode brokers answer every
auto-created topic whatever the creation's outcome: the client asks again,
and the next Metadata finds the topic or tries the creation again.

Runs on the broker's event loop.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from kavka.common.config import ConfigError
from kavka.common.errors import ErrorCode
from kavka.common.topic_names import validate_topic_name
from kavka.controller.assignment import (
    AssignmentError,
    InvalidPartitions,
    InvalidReplicaAssignment,
    InvalidReplicationFactor,
    RackInformationMissing,
    assign_new_partitions,
    assign_replicas,
    validate_replica_assignment,
)
from kavka.security.quota.manager import ControllerMutationQuota, ThrottlingQuotaExceeded
from kavka.storage.log_config import LogConfig
from kavka.zk.brokers import TopicZNode
from kavka.zk.client import KavkaZkClient
from kavka.zk.store_types import NodeExistsError, ZkError

log = logging.getLogger("kavka.admin")
# Well under clients' request timeouts (30 s in the Java client, 60 s
# librdkafka's socket.timeout.ms), long enough for a healthy ZooKeeper.
AUTO_CREATE_TIMEOUT_S = 5.0


@dataclass(frozen=True, slots=True)
class NewTopic:
    name: str
    num_partitions: int = -1  # -1: num.partitions
    replication_factor: int = -1  # -1: default.replication.factor
    assignment: Mapping[int, Sequence[int]] | None = None
    configs: Mapping[str, str | None] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class TopicResult:
    name: str
    error: ErrorCode
    message: str | None = None
    num_partitions: int = -1
    replication_factor: int = -1
    topic_id: uuid.UUID | None = None
    configs: Mapping[str, object] = field(default_factory=dict)


_ASSIGNMENT_ERRORS: dict[type, ErrorCode] = {
    InvalidPartitions: ErrorCode.INVALID_PARTITIONS,
    InvalidReplicationFactor: ErrorCode.INVALID_REPLICATION_FACTOR,
    InvalidReplicaAssignment: ErrorCode.INVALID_REPLICA_ASSIGNMENT,
    # Kafka's AdminOperationException, which its admin manager answers as
    # UNKNOWN_SERVER_ERROR; the message says which brokers lack a rack
    RackInformationMissing: ErrorCode.UNKNOWN_SERVER_ERROR,
}


class AdminManager:
    """See the module docstring. ``live_brokers`` returns the brokers
    registered now, each with its rack (None: no ``broker.rack``), which
    the placement of new partitions spreads replicas over; ``log_defaults`` the topic-level defaults from
    the broker's (possibly dynamically changed) config."""

    def __init__(self, zk: KavkaZkClient, log_defaults: Callable[[], Mapping[str, object]],
                 live_brokers: Callable[[], Mapping[int, str | None]], num_partitions: int,
                 default_replication_factor: int, auto_create_timeout_s: float = AUTO_CREATE_TIMEOUT_S) -> None:
        self.zk = zk
        self.log_defaults = log_defaults
        self.live_brokers = live_brokers
        self.num_partitions = num_partitions
        self.default_replication_factor = default_replication_factor
        self.auto_create_timeout_s = auto_create_timeout_s

    def _validate(self, t: NewTopic) -> tuple[dict[int, tuple[int, ...]], LogConfig]:
        problem = validate_topic_name(t.name)
        if problem is not None:
            raise _Fail(ErrorCode.INVALID_TOPIC_EXCEPTION, problem)
        configs = {k: v for k, v in t.configs.items() if v is not None}
        try:
            log_config = LogConfig.with_defaults(self.log_defaults(), configs)
        except ConfigError as e:
            raise _Fail(ErrorCode.INVALID_CONFIG, str(e)) from None
        racks = self.live_brokers()
        brokers = list(racks)
        try:
            if t.assignment:
                if t.num_partitions != -1 or t.replication_factor != -1:
                    raise _Fail(ErrorCode.INVALID_REQUEST,
                                "give either a replica assignment or partitions and replication factor, not both")
                assignment = {int(p): tuple(r) for p, r in t.assignment.items()}
                validate_replica_assignment(assignment, brokers)
            else:
                partitions = self.num_partitions if t.num_partitions == -1 else t.num_partitions
                rf = self.default_replication_factor if t.replication_factor == -1 else t.replication_factor
                assignment = assign_replicas(brokers, partitions, rf, racks=racks)
        except AssignmentError as e:
            raise _Fail(_ASSIGNMENT_ERRORS.get(type(e), ErrorCode.INVALID_REQUEST), str(e)) from None
        return assignment, log_config

    async def create_topics(self, topics: Sequence[NewTopic], validate_only: bool = False,
                            quota: ControllerMutationQuota | None = None) -> list[TopicResult]:
        results = []
        for t in topics:
            try:
                assignment, log_config = self._validate(t)
                if await self.zk.get_topic(t.name) is not None:
                    raise _Fail(ErrorCode.TOPIC_ALREADY_EXISTS, f"topic {t.name!r} already exists")
                topic_id = uuid.uuid4()
                if not validate_only:
                    _charge(quota, len(assignment))
                    configs = {k: str(v) for k, v in t.configs.items() if v is not None}
                    try:
                        await self.zk.create_topic(TopicZNode(t.name, assignment, topic_id), configs)
                    except NodeExistsError:
                        raise _Fail(ErrorCode.TOPIC_ALREADY_EXISTS, f"topic {t.name!r} already exists") from None
                    log.info("created topic %s: %d partitions, assignment %s, configs %s",
                             t.name, len(assignment), dict(assignment), configs)
                results.append(TopicResult(t.name, ErrorCode.NONE, None, len(assignment),
                                           len(assignment[0]), topic_id, log_config.to_props()))
            except _Fail as f:
                results.append(TopicResult(t.name, f.code, f.message))
        return results

    async def auto_create(self, names: list[str]) -> dict[str, ErrorCode]:
        """Metadata's auto-creation with the broker defaults: the error to
        answer per name. LEADER_NOT_AVAILABLE where the creation was written
        (or the topic already existed), and for every name when ZooKeeper
        failed or did not answer within ``auto_create_timeout_s`` (see the
        module docstring); UNKNOWN_TOPIC_OR_PARTITION where the topic cannot
        be created (e.g. fewer live brokers than the replication factor)."""
        try:
            results = await asyncio.wait_for(self.create_topics([NewTopic(n) for n in names]),
                                             self.auto_create_timeout_s)
        except (TimeoutError, ZkError) as e:
            why = str(e) or f"no answer within {self.auto_create_timeout_s:g} s"
            log.warning("auto-creating topics %s failed: ZooKeeper %s (%s); answered LEADER_NOT_AVAILABLE, "
                        "the client retries", names, "timed out" if isinstance(e, asyncio.TimeoutError) else "error", why)
            return {n: ErrorCode.LEADER_NOT_AVAILABLE for n in names}
        answers: dict[str, ErrorCode] = {}
        for r in results:
            if r.error in (ErrorCode.NONE, ErrorCode.TOPIC_ALREADY_EXISTS):
                answers[r.name] = ErrorCode.LEADER_NOT_AVAILABLE
            else:
                log.warning("auto-creating topic %s failed: %s %s", r.name, r.error.name, r.message)
                answers[r.name] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        return answers

    async def create_partitions(self, topic: str, new_total: int,
                                assignment: Sequence[Sequence[int]] | None,
                                validate_only: bool, quota: ControllerMutationQuota | None = None
                                ) -> tuple[ErrorCode, str | None]:
        found = await self.zk.get_topic(topic)
        if found is None:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {topic!r} does not exist"
        node, version = found
        racks = self.live_brokers()
        brokers = list(racks)
        try:
            if assignment is not None:
                current = len(node.partitions)
                if len(assignment) != new_total - current:
                    raise InvalidReplicaAssignment(
                        f"{len(assignment)} replica lists given for {new_total - current} new partitions")
                added = {current + i: tuple(r) for i, r in enumerate(assignment)}
                if new_total <= current:
                    raise InvalidPartitions(f"topic currently has {current} partitions; {new_total} would not add any")
                validate_replica_assignment({**dict(node.partitions), **added}, brokers)
            else:
                added = assign_new_partitions(brokers, node.partitions, new_total, racks=racks)
        except AssignmentError as e:
            return _ASSIGNMENT_ERRORS.get(type(e), ErrorCode.INVALID_REQUEST), str(e)
        if validate_only:
            return ErrorCode.NONE, None
        try:
            _charge(quota, len(added))
        except _Fail as f:
            return f.code, f.message
        updated = TopicZNode(topic, {**dict(node.partitions), **added}, node.topic_id,
                             node.adding_replicas, node.removing_replicas)
        if await self.zk.set_topic_assignment(updated, version) is None:
            return ErrorCode.REASSIGNMENT_IN_PROGRESS, "the topic's assignment changed meanwhile; retry"
        return ErrorCode.NONE, None

    async def delete_topic(self, topic: str, quota: ControllerMutationQuota | None = None
                           ) -> tuple[ErrorCode, str | None]:
        found = await self.zk.get_topic(topic)
        if found is None:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {topic!r} does not exist"
        try:
            _charge(quota, len(found[0].partitions))
        except _Fail as f:
            return f.code, f.message
        await self.zk.request_topic_deletion(topic)
        return ErrorCode.NONE, None


def _charge(quota: ControllerMutationQuota | None, partitions: int) -> None:
    if quota is None:
        return
    try:
        quota.record(partitions)
    except ThrottlingQuotaExceeded as e:
        raise _Fail(ErrorCode.THROTTLING_QUOTA_EXCEEDED, str(e)) from None


class _Fail(Exception):
    def __init__(self, code: ErrorCode, message: str) -> None:
        self.code = code
        self.message = message
