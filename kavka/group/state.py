"""Group states and their valid transitions, the group partition function,
and the member and group runtime records the coordinator keeps.

States (Kafka's classic group protocol):
Empty -> PreparingRebalance (a member joins) -> CompletingRebalance (every
member rejoined or the rebalance timeout ran out; the leader now computes
the assignment) -> Stable (the leader's SyncGroup delivered it); a member
leaving, expiring or changing its protocols sends a Stable or
CompletingRebalance group back to PreparingRebalance; a rebalance that
ends with no members leaves the group Empty. Dead: deleted, or its
``__consumer_offsets`` partition moved to another broker.

``GroupMetadata`` is mutable runtime state owned by the coordinator on its
event loop; every state change goes through ``transition_to``, which
refuses a transition the table does not allow (IllegalGroupTransition).
"""

from __future__ import annotations

import asyncio
import enum
import struct
from dataclasses import dataclass, field


class IllegalGroupTransition(RuntimeError):
    """A transition the state table forbids: a coordinator bug, never input."""


class GroupState(enum.Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"

    @property
    def valid_previous(self) -> frozenset[GroupState]:
        return _VALID_PREVIOUS[self]


_VALID_PREVIOUS = {
    GroupState.EMPTY: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.PREPARING_REBALANCE: frozenset({GroupState.STABLE, GroupState.COMPLETING_REBALANCE, GroupState.EMPTY}),
    GroupState.COMPLETING_REBALANCE: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.STABLE: frozenset({GroupState.COMPLETING_REBALANCE}),
    GroupState.DEAD: frozenset({GroupState.STABLE, GroupState.PREPARING_REBALANCE, GroupState.COMPLETING_REBALANCE,
                                GroupState.EMPTY, GroupState.DEAD}),
}


def java_string_hashcode(s: str) -> int:
    """Java's ``String.hashCode``: 31*h + c over UTF-16 code units, as a signed int32."""
    h = 0
    raw = s.encode("utf-16-be")
    for (unit,) in struct.iter_unpack(">H", raw):
        h = (31 * h + unit) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def partition_for(group_id: str, num_partitions: int) -> int:
    """The ``__consumer_offsets`` partition of a group: Kafka's
    ``Utils.abs(groupId.hashCode) % partitions`` (Utils.abs maps INT_MIN to 0)."""
    h = java_string_hashcode(group_id)
    return (0 if h == -(1 << 31) else abs(h)) % num_partitions


@dataclass(frozen=True, slots=True)
class OffsetAndMetadata:
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp: int


# Transactional offsets waiting for their marker (KIP-98):
# group -> producer id -> (topic, partition) -> offset
PendingTxnOffsets = dict[str, dict[int, dict[tuple[str, int], OffsetAndMetadata]]]


@dataclass(slots=True)
class MemberMetadata:
    """One member. ``protocols``: (name, metadata) in the member's order of
    preference. ``join_future`` / ``sync_future`` are set while its
    JoinGroup / SyncGroup waits; ``expiry`` is its session timer."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]
    assignment: bytes = b""
    join_future: asyncio.Future | None = field(default=None, repr=False)
    sync_future: asyncio.Future | None = field(default=None, repr=False)
    expiry: asyncio.TimerHandle | None = field(default=None, repr=False)

    def metadata_for(self, protocol: str) -> bytes:
        for name, meta in self.protocols:
            if name == protocol:
                return meta
        return b""

    def matches(self, protocols: list[tuple[str, bytes]]) -> bool:
        return self.protocols == protocols


@dataclass(slots=True)
class GroupMetadata:
    """One group: members, the generation, and its committed offsets."""

    group_id: str
    state: GroupState = GroupState.EMPTY
    generation: int = 0
    protocol_type: str | None = None
    protocol: str | None = None
    leader: str | None = None
    members: dict[str, MemberMetadata] = field(default_factory=dict)
    pending_members: set[str] = field(default_factory=set)
    static_members: dict[str, str] = field(default_factory=dict)
    offsets: dict[tuple[str, int], OffsetAndMetadata] = field(default_factory=dict)
    state_timestamp: int = 0
    join_timer: asyncio.TimerHandle | None = field(default=None, repr=False)
    # A new group waits group.initial.rebalance.delay.ms for more members
    # before its first generation (KIP-134): no join completes before this.
    join_not_before_ms: int = 0

    def transition_to(self, target: GroupState, now_ms: int) -> None:
        if self.state not in target.valid_previous:
            raise IllegalGroupTransition(f"group {self.group_id}: {self.state.value} -> {target.value} is not allowed")
        self.state = target
        self.state_timestamp = now_ms

    def in_state(self, *states: GroupState) -> bool:
        return self.state in states

    def add_member(self, m: MemberMetadata) -> None:
        if not self.members:
            self.protocol_type = m.protocol_type
        if self.leader is None:
            self.leader = m.member_id
        self.members[m.member_id] = m
        if m.group_instance_id is not None:
            self.static_members[m.group_instance_id] = m.member_id
        self.pending_members.discard(m.member_id)

    def remove_member(self, member_id: str) -> MemberMetadata | None:
        m = self.members.pop(member_id, None)
        if m is None:
            return None
        if m.expiry is not None:
            m.expiry.cancel()
        if m.group_instance_id is not None and self.static_members.get(m.group_instance_id) == member_id:
            del self.static_members[m.group_instance_id]
        if self.leader == member_id:
            self.leader = next(iter(self.members), None)
        return m

    def supports(self, protocol_type: str, protocols: list[tuple[str, bytes]]) -> bool:
        """A joining member fits if the type matches and it shares a protocol
        with every member (or the group has no members yet)."""
        if not self.members:
            return bool(protocol_type) and bool(protocols)
        names = {n for n, _ in protocols}
        return protocol_type == self.protocol_type and bool(names & self.candidate_protocols())

    def candidate_protocols(self) -> set[str]:
        sets = [{n for n, _ in m.protocols} for m in self.members.values()]
        return set.intersection(*sets) if sets else set()

    def select_protocol(self) -> str:
        """Each member votes for its most preferred candidate; the most votes
        wins (ties to the earliest candidate in the first member's order)."""
        candidates = self.candidate_protocols()
        votes: dict[str, int] = {}
        for m in self.members.values():
            choice = next(n for n, _ in m.protocols if n in candidates)
            votes[choice] = votes.get(choice, 0) + 1
        return max(votes, key=lambda n: votes[n])

    def all_joined(self) -> bool:
        return not self.pending_members and all(m.join_future is not None for m in self.members.values())

    def subscribed_topics(self) -> set[str] | None:
        """Topics of the consumer protocol subscriptions (None: not a
        ``consumer`` group, or a subscription we cannot parse)."""
        if self.protocol_type != "consumer" or self.protocol is None:
            return None
        topics: set[str] = set()
        for m in self.members.values():
            parsed = parse_subscription_topics(m.metadata_for(self.protocol))
            if parsed is None:
                return None
            topics |= parsed
        return topics


def parse_subscription_topics(meta: bytes) -> set[str] | None:
    """The topic list of a consumer-protocol subscription: int16 version,
    int32 count, then int16-length strings."""
    try:
        (count,) = struct.unpack_from(">i", meta, 2)
        pos, topics = 6, set()
        if count < 0 or count > len(meta):
            return None
        for _ in range(count):
            (n,) = struct.unpack_from(">h", meta, pos)
            if n < 0 or pos + 2 + n > len(meta):
                return None
            topics.add(meta[pos + 2:pos + 2 + n].decode())
            pos += 2 + n
        return topics
    except (struct.error, UnicodeDecodeError):
        return None
