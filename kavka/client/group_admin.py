"""Consumer group administration over the Kafka protocol, as Kafka's admin
client does it for classic groups: ListGroups (every broker lists the groups
it coordinates), FindCoordinator then DescribeGroups (ConsumerGroupDescribe
for a consumer-protocol group, KIP-848), OffsetFetch,
OffsetCommit with generation -1 and no member id (Kafka's
alterConsumerGroupOffsets, which the coordinator accepts only while the
group has no members), and DeleteGroups (refused with NON_EMPTY_GROUP while
members remain).

COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS and NOT_COORDINATOR
are retried after a new FindCoordinator until the deadline; other codes
raise the typed error of ``kavka.common.errors`` naming the group. One
event loop; the console and tests.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kavka.client.cluster import Cluster
from kavka.client.consumer_protocol import decode_assignment, decode_subscription_topics
from kavka.common.errors import ErrorCode, KafkaError, error_for
from kavka.common.topic_partition import TopicPartition
from kavka.protocol import messages as m

FIND_COORDINATOR = 10
OFFSET_COMMIT = 8
OFFSET_FETCH = 9
CONSUMER_GROUP_DESCRIBE = 69
# OffsetCommit and OffsetFetch v10 name topics by id (KIP-848's topic ids); the names are what we hold.
_MAX_NAMED_VERSION = 9
_COORDINATOR_CODES = frozenset({ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
                                ErrorCode.NOT_COORDINATOR})
# Group states in which the group has no members (Kafka's ConsumerGroupState).
INACTIVE_STATES = frozenset({"Empty", "Dead"})


@dataclass(frozen=True, slots=True)
class GroupListing:
    group_id: str
    protocol_type: str
    state: str  # "" when the broker answers ListGroups below v4
    coordinator: int


@dataclass(frozen=True, slots=True)
class MemberDescription:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    assignment: tuple[TopicPartition, ...]
    subscription: tuple[str, ...]
    decode_error: str | None = None  # the member's bytes are not the consumer protocol's


@dataclass(frozen=True, slots=True)
class GroupDescription:
    group_id: str
    state: str
    protocol_type: str
    protocol: str
    members: tuple[MemberDescription, ...]
    coordinator: int

    @property
    def active(self) -> bool:
        return self.state not in INACTIVE_STATES


@dataclass(frozen=True, slots=True)
class ConsumerMemberDescription:
    """A member of a consumer-protocol group (KIP-848) as ConsumerGroupDescribe shows it."""
    member_id: str
    instance_id: str | None
    member_epoch: int
    client_id: str
    client_host: str
    subscribed_topics: tuple[str, ...]
    subscribed_regex: str | None
    assignment: tuple[TopicPartition, ...]
    target_assignment: tuple[TopicPartition, ...]


@dataclass(frozen=True, slots=True)
class ConsumerGroupDescription:
    """A consumer-protocol group (KIP-848): its epochs (the group's, and
    that of its target assignment), the assignor and each member."""
    group_id: str
    state: str
    group_epoch: int
    assignment_epoch: int
    assignor: str
    members: tuple[ConsumerMemberDescription, ...]
    coordinator: int

    @property
    def active(self) -> bool:
        return self.state not in INACTIVE_STATES


def _described_partitions(assignment) -> tuple[TopicPartition, ...]:
    return tuple(sorted(TopicPartition(t.topic_name, p) for t in assignment.topic_partitions for p in t.partitions))


class GroupAdmin:
    """Group calls on a started ``Cluster`` (which it does not own)."""

    def __init__(self, cluster: Cluster, *, timeout_ms: int = 30_000) -> None:
        self.cluster = cluster
        self.timeout_ms = timeout_ms

    async def coordinator(self, group_id: str) -> int:
        """The node id coordinating ``group_id`` (FindCoordinator, key type 0)."""
        async def find() -> int:
            conn = await self.cluster.any_connection()
            version = conn.version_for(FIND_COORDINATOR)
            req = m.FindCoordinatorRequest()
            if version >= 4:
                req.coordinator_keys = [group_id]
            else:
                req.key = group_id
            if version >= 1:
                req.key_type = 0
            resp = await conn.request(req, version=version)
            if version >= 4:
                if not resp.coordinators:
                    raise KafkaError(f"FindCoordinator for group {group_id} answered no coordinator",
                                     code=ErrorCode.COORDINATOR_NOT_AVAILABLE)
                c = resp.coordinators[0]
                code, message, node = c.error_code, c.error_message, c.node_id
            else:
                code, message, node = resp.error_code, getattr(resp, "error_message", None), resp.node_id
            if code != ErrorCode.NONE:
                raise error_for(code, f"group {group_id}: {message or ErrorCode.of(code).message}")
            if node not in self.cluster.metadata.brokers:
                await self.cluster.refresh_metadata()
            return int(node)
        return await self.cluster.call(find, deadline_ms=self.timeout_ms)

    async def _at_coordinator(self, group_id: str, build, codes=lambda resp, version: ()):
        """``build(conn) -> (request, version)`` sent to the coordinator;
        returns (coordinator, response, version). ``codes(resp, version)``
        lists the response's error codes: a coordinator code among them
        (the group moved or is loading) sends the request again."""
        async def attempt():
            node = await self.coordinator(group_id)
            conn = await self.cluster.connection(node)
            req, version = build(conn)
            resp = await conn.request(req, version=version)
            for code in codes(resp, version):
                if code in _COORDINATOR_CODES:
                    raise error_for(code, f"group {group_id}")
            return node, resp, version
        return await self.cluster.call(attempt, deadline_ms=self.timeout_ms)

    @staticmethod
    def _raise(code: int, group_id: str, what: str, message: str | None = None) -> None:
        if code != ErrorCode.NONE:
            raise error_for(code, f"{what} of group {group_id}: {message or ErrorCode.of(code).message}")

    async def list_groups(self) -> tuple[list[GroupListing], dict[int, KafkaError]]:
        """Every group of every live broker, and the error of each broker
        that could not answer (the others' groups are still listed)."""
        await self.cluster.refresh_metadata()
        out: list[GroupListing] = []
        errors: dict[int, KafkaError] = {}
        for node in sorted(self.cluster.metadata.brokers):
            try:
                conn = await self.cluster.connection(node)
                version = conn.version_for(16)
                resp = await conn.request(m.ListGroupsRequest(), version=version)
                if resp.error_code != ErrorCode.NONE:
                    raise error_for(resp.error_code, f"ListGroups on broker {node}")
            except KafkaError as e:
                errors[node] = e
                continue
            for g in resp.groups:
                out.append(GroupListing(g.group_id, g.protocol_type, g.group_state if version >= 4 else "", node))
        out.sort(key=lambda g: g.group_id)
        return out, errors

    async def describe_group(self, group_id: str) -> GroupDescription:
        def build(conn):
            return m.DescribeGroupsRequest(groups=[group_id]), conn.version_for(15)
        node, resp, _v = await self._at_coordinator(group_id, build,
                                                    lambda resp, v: [g.error_code for g in resp.groups])
        g = next((g for g in resp.groups if g.group_id == group_id), None)
        if g is None:
            raise KafkaError(f"DescribeGroups did not mention group {group_id}", code=ErrorCode.UNKNOWN_SERVER_ERROR)
        self._raise(g.error_code, group_id, "DescribeGroups", getattr(g, "error_message", None))
        members = []
        for mem in g.members:
            error = None
            assignment: tuple[TopicPartition, ...] = ()
            subscription: tuple[str, ...] = ()
            if g.protocol_type == "consumer":
                try:
                    assignment = decode_assignment(mem.member_assignment)
                    subscription = decode_subscription_topics(mem.member_metadata)
                except ValueError as e:
                    error = str(e)
            members.append(MemberDescription(mem.member_id, getattr(mem, "group_instance_id", None),
                                             mem.client_id, mem.client_host, assignment, subscription, error))
        return GroupDescription(g.group_id, g.group_state, g.protocol_type, g.protocol_data, tuple(members), node)

    async def describe_consumer_group(self, group_id: str) -> ConsumerGroupDescription:
        """ConsumerGroupDescribe (KIP-848) of a consumer-protocol group;
        GROUP_ID_NOT_FOUND (raised typed) for a classic or unknown group."""
        def build(conn):
            return (m.ConsumerGroupDescribeRequest(group_ids=[group_id], include_authorized_operations=False),
                    conn.version_for(CONSUMER_GROUP_DESCRIBE))
        node, resp, _v = await self._at_coordinator(group_id, build,
                                                    lambda resp, v: [g.error_code for g in resp.groups])
        g = next((g for g in resp.groups if g.group_id == group_id), None)
        if g is None:
            raise KafkaError(f"ConsumerGroupDescribe did not mention group {group_id}",
                             code=ErrorCode.UNKNOWN_SERVER_ERROR)
        self._raise(g.error_code, group_id, "ConsumerGroupDescribe", g.error_message)
        members = tuple(ConsumerMemberDescription(
            mem.member_id, mem.instance_id, mem.member_epoch, mem.client_id, mem.client_host,
            tuple(mem.subscribed_topic_names), mem.subscribed_topic_regex, _described_partitions(mem.assignment),
            _described_partitions(mem.target_assignment)) for mem in g.members)
        return ConsumerGroupDescription(g.group_id, g.group_state, g.group_epoch, g.assignment_epoch,
                                        g.assignor_name, members, node)

    async def committed_offsets(self, group_id: str) -> dict[TopicPartition, int]:
        """Every committed offset of the group (OffsetFetch, all topics)."""
        def build(conn):
            version = conn.version_for(OFFSET_FETCH, _MAX_NAMED_VERSION)
            if version >= 8:
                return m.OffsetFetchRequest(groups=[m.OffsetFetchRequest.Groups(group_id=group_id, topics=None)]), version
            if version < 2:
                raise KafkaError("OffsetFetch of all topics needs v2+", code=ErrorCode.UNSUPPORTED_VERSION)
            return m.OffsetFetchRequest(group_id=group_id, topics=None), version
        def top_codes(resp, version):
            return [g.error_code for g in resp.groups] if version >= 8 else [resp.error_code]
        _node, resp, version = await self._at_coordinator(group_id, build, top_codes)
        if version >= 8:
            if len(resp.groups) != 1:
                raise KafkaError(f"OffsetFetch answered {len(resp.groups)} groups for one",
                                 code=ErrorCode.UNKNOWN_SERVER_ERROR)
            self._raise(resp.groups[0].error_code, group_id, "OffsetFetch")
            topics = resp.groups[0].topics
        else:
            self._raise(resp.error_code, group_id, "OffsetFetch")
            topics = resp.topics
        out: dict[TopicPartition, int] = {}
        for t in topics:
            for p in t.partitions:
                self._raise(p.error_code, group_id, f"OffsetFetch of {t.name}-{p.partition_index}")
                if p.committed_offset >= 0:
                    out[TopicPartition(t.name, p.partition_index)] = p.committed_offset
        return out

    async def alter_offsets(self, group_id: str, offsets: Mapping[TopicPartition, int]) -> None:
        """Commit ``offsets`` for a group without members (OffsetCommit,
        generation -1); the coordinator refuses an active group with
        UNKNOWN_MEMBER_ID, raised here as the typed error."""
        if not offsets:
            return
        for tp, off in offsets.items():
            if off < 0:
                raise ValueError(f"offset {off} for {tp} is negative")
        R = m.OffsetCommitRequest
        by_topic: dict[str, list] = {}
        for tp, off in sorted(offsets.items(), key=lambda kv: (kv[0].topic, kv[0].partition)):
            by_topic.setdefault(tp.topic, []).append((tp.partition, off))

        def build(conn):
            version = conn.version_for(OFFSET_COMMIT, _MAX_NAMED_VERSION)
            topics = []
            for name, ps in by_topic.items():
                parts = []
                for p, off in ps:
                    part = R.Topics.Partitions(partition_index=p, committed_offset=off, committed_metadata="")
                    if version >= 6:
                        part.committed_leader_epoch = -1
                    if version == 1:
                        part.commit_timestamp = -1
                    parts.append(part)
                topics.append(R.Topics(name=name, partitions=parts))
            req = R(group_id=group_id, topics=topics)
            if version >= 1:
                req.generation_id_or_member_epoch = -1
                req.member_id = ""
            if 2 <= version <= 4:
                req.retention_time_ms = -1
            return req, version
        _node, resp, _v = await self._at_coordinator(
            group_id, build, lambda resp, v: [p.error_code for t in resp.topics for p in t.partitions])
        for t in resp.topics:
            for p in t.partitions:
                self._raise(p.error_code, group_id, f"OffsetCommit of {t.name}-{p.partition_index}")

    async def delete_group(self, group_id: str) -> None:
        def build(conn):
            return m.DeleteGroupsRequest(groups_names=[group_id]), conn.version_for(42)
        _node, resp, _v = await self._at_coordinator(group_id, build,
                                                     lambda resp, v: [r.error_code for r in resp.results])
        for r in resp.results:
            if r.group_id == group_id:
                self._raise(r.error_code, group_id, "DeleteGroups")
                return
        raise KafkaError(f"DeleteGroups did not mention group {group_id}", code=ErrorCode.UNKNOWN_SERVER_ERROR)
