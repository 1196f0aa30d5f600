"""``ConsumerGroup``: the state machine of a consumer-protocol group
(KIP-848; Kafka's ConsumerGroup and the heartbeat path of
GroupMetadataManager), pure: no I/O, no clock, no timers.

Three epochs drive it (KIP-848 "Group Epoch", "Target Assignment",
"Member Epoch"):

- the group epoch bumps whenever what the assignor would see changes: a
  member joins or leaves, a subscription or preferred assignor changes, a
  subscribed topic appears, goes or gains partitions;
- the target assignment is recomputed by the server-side assignor when the
  group epoch is ahead of it, and carries that epoch;
- each member's epoch reaches the target epoch through reconciliation
  (``kavka.group.reconciliation``): revocation first, and no partition is
  given to a member while another still holds it.

``heartbeat`` answers one ConsumerGroupHeartbeat (epoch 0 joins, -1 leaves,
-2 leaves a static membership that a member with the same instance id takes
over); ``remove_member`` is the fencing the session timer does. Errors are
Kafka's: UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH, UNRELEASED_INSTANCE_ID,
UNSUPPORTED_ASSIGNOR, GROUP_MAX_SIZE_REACHED, INVALID_REQUEST.

A subscribed regex is resolved on the heartbeat of a member that uses it,
with that member's rights: the topics it fully matches (internal ones
never) that the caller's ``describable`` keeps, i.e. the heartbeat's
session may DESCRIBE (Kafka's GroupMetadataManager filters a regex's topics
by the requesting member's context, KAFKA-18813). The resolution is kept
per regex for the group, so the other members' heartbeats do not rescan
every topic for it. A member whose regex this coordinator has not resolved
yet (the group was just loaded from ``__consumer_offsets``) counts the
topics of its current assignment until its next heartbeat resolves it, so
a failover does not take its partitions away.
"""

from __future__ import annotations

import enum
import uuid
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from kavka.common.errors import ErrorCode
from kavka.common.linear_regex import RegexError, compile_linear
from kavka.group.consumer_assignors import ASSIGNORS, Assignment, MemberSubscription, PartitionAssignor
from kavka.group.reconciliation import MemberAssignmentState, MemberState, next_assignment

__all__ = ["JOIN_EPOCH", "LEAVE_EPOCH", "STATIC_LEAVE_EPOCH", "ConsumerGroup", "ConsumerGroupMember",
           "ConsumerGroupState", "HeartbeatOutcome", "HeartbeatRequest", "TopicMetadata"]

# ConsumerGroupHeartbeat's member epochs with a meaning of their own (KIP-848)
JOIN_EPOCH = 0
LEAVE_EPOCH = -1
STATIC_LEAVE_EPOCH = -2


class ConsumerGroupState(enum.Enum):
    # Kafka's ConsumerGroup.ConsumerGroupState, as DescribeGroups and
    # ConsumerGroupDescribe name them
    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"


@dataclass(frozen=True, slots=True)
class TopicMetadata:
    topic_id: uuid.UUID
    partitions: int


@dataclass(frozen=True, slots=True)
class HeartbeatRequest:
    """The fields of ConsumerGroupHeartbeat the state machine reads; None
    where the request sent null (unchanged since the previous heartbeat)."""
    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: tuple[str, ...] | None = None
    # v1: a regular expression evaluated on the broker (KIP-848); "" clears it
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    owned: Mapping[uuid.UUID, frozenset[int]] | None = None
    # who sent it, for ConsumerGroupDescribe
    client_id: str = ""
    client_host: str = ""


@dataclass(frozen=True, slots=True)
class HeartbeatOutcome:
    error: ErrorCode
    message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    # None: unchanged, the response carries no assignment
    assignment: Assignment | None = None


@dataclass(slots=True)
class ConsumerGroupMember:
    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: tuple[str, ...] = ()
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    previous_member_epoch: int = 0
    client_id: str = ""
    client_host: str = ""
    assignment: MemberAssignmentState = field(default_factory=lambda: MemberAssignmentState(
        MemberState.STABLE, JOIN_EPOCH, {}, {}))

    @property
    def member_epoch(self) -> int:
        return self.assignment.member_epoch


def _full_request(req: HeartbeatRequest) -> bool:
    # what a consumer sends on joining or after an error: every field set
    # (Kafka answers it with the assignment even when unchanged)
    return (req.member_epoch == JOIN_EPOCH or (req.rebalance_timeout_ms != -1
            and (req.subscribed_topic_names is not None or req.subscribed_topic_regex is not None)
            and req.owned is not None))


class ConsumerGroup:
    """See the module docstring. ``assignors`` is ``group.consumer.assignors``
    (the first is the default); ``max_size`` is ``group.consumer.max.size``;
    ``new_member_id`` makes the ids of members that joined without one
    (ConsumerGroupHeartbeat v0, where the coordinator chose them)."""

    def __init__(self, group_id: str, assignors: list[str], max_size: int,
                 new_member_id: Callable[[], str] = lambda: str(uuid.uuid4())) -> None:
        if not assignors or any(a not in ASSIGNORS for a in assignors):
            raise ValueError(f"group.consumer.assignors {assignors!r}: each must be one of {sorted(ASSIGNORS)}")
        self.group_id = group_id
        self.assignors = list(assignors)
        self.max_size = max_size
        self._new_member_id = new_member_id
        self.members: dict[str, ConsumerGroupMember] = {}
        self.group_epoch = 0
        self.target_epoch = 0
        self.target: dict[str, Assignment] = {}
        self.subscription_metadata: dict[str, TopicMetadata] = {}
        self.resolved_regexes: dict[str, frozenset[str]] = {}
        self._holders: dict[tuple[uuid.UUID, int], str] = {}

    # -- views ------------------------------------------------------------------------------------
    @property
    def state(self) -> ConsumerGroupState:
        if not self.members:
            return ConsumerGroupState.EMPTY
        if self.group_epoch > self.target_epoch:
            return ConsumerGroupState.ASSIGNING
        if any(m.member_epoch != self.target_epoch or m.assignment.state is not MemberState.STABLE
               for m in self.members.values() if m.member_epoch != STATIC_LEAVE_EPOCH):
            return ConsumerGroupState.RECONCILING
        return ConsumerGroupState.STABLE

    def holder(self, topic_id: uuid.UUID, partition: int) -> str | None:
        """The member that owns the partition or is revoking it, if any."""
        return self._holders.get((topic_id, partition))

    def assignor_name(self) -> str:
        """The assignor the members prefer most (ties by name), else the
        first of ``group.consumer.assignors`` (KIP-848 "Assignor Selection")."""
        votes = Counter(m.server_assignor for m in self.members.values() if m.server_assignor)
        if not votes:
            return self.assignors[0]
        return min(votes, key=lambda a: (-votes[a], a))

    # -- the heartbeat ----------------------------------------------------------------------------
    def heartbeat(self, req: HeartbeatRequest, topics: Mapping[str, TopicMetadata],
                  describable: Callable[[set[str]], set[str]] = lambda names: names) -> HeartbeatOutcome:
        """Answer one heartbeat; ``topics`` is the cluster's topic metadata by
        name; ``describable`` keeps of some topic names those the
        heartbeating member may DESCRIBE (its regex sees no others)."""
        invalid = self._invalid(req)
        if invalid:
            return HeartbeatOutcome(ErrorCode.INVALID_REQUEST, invalid)
        if req.subscribed_topic_regex:
            try:
                compile_linear(req.subscribed_topic_regex)
            except RegexError as e:
                return HeartbeatOutcome(ErrorCode.INVALID_REGULAR_EXPRESSION,
                                        f"subscribed topic regex {req.subscribed_topic_regex!r} is not valid: {e}")
        if req.member_epoch == LEAVE_EPOCH or req.member_epoch == STATIC_LEAVE_EPOCH:
            return self._leave(req, topics)
        if req.server_assignor is not None and req.server_assignor not in self.assignors:
            return HeartbeatOutcome(ErrorCode.UNSUPPORTED_ASSIGNOR,
                                    f"assignor {req.server_assignor!r} is not in group.consumer.assignors "
                                    f"{self.assignors}")
        bump = False
        if req.member_epoch == JOIN_EPOCH:
            joined = self._join(req)
            if isinstance(joined, HeartbeatOutcome):
                return joined
            member, bump = joined
        else:
            found = self.members.get(req.member_id)
            if found is None or found.member_epoch == STATIC_LEAVE_EPOCH:
                return HeartbeatOutcome(ErrorCode.UNKNOWN_MEMBER_ID,
                                        f"member {req.member_id!r} is not in group {self.group_id!r}")
            fenced = self._fenced(found, req)
            if fenced:
                return HeartbeatOutcome(ErrorCode.FENCED_MEMBER_EPOCH, fenced)
            member = found
        before = member.assignment.assigned
        bump |= self._update_subscription(member, req)
        if member.subscribed_topic_regex is not None:
            self._resolve(member.subscribed_topic_regex, topics, describable)
        # one bump per heartbeat, whatever changed (KIP-848 "Group Epoch")
        if self._refresh_metadata(topics) or bump:
            self.group_epoch += 1
        self._maybe_assign()
        self._reconcile(member, req.owned)
        changed = member.assignment.assigned != before
        return HeartbeatOutcome(ErrorCode.NONE, None, member.member_id, member.member_epoch,
                                member.assignment.assigned if changed or _full_request(req) else None)

    def remove_member(self, member_id: str, topics: Mapping[str, TopicMetadata]) -> bool:
        """Fence a member out (session or rebalance timeout, KIP-848): its
        partitions are released and the group epoch bumps. False if unknown."""
        if member_id not in self.members:
            return False
        self._remove(member_id)
        self._refresh_metadata(topics)
        self.group_epoch += 1
        self._maybe_assign()
        return True

    def restore_member(self, member: ConsumerGroupMember) -> None:
        """Put back a member read from ``__consumer_offsets`` when a
        coordinator loads the group (``kavka.group.consumer_group_replay``):
        the partitions it was assigned or is revoking are held by it again,
        so none is given to another member before it lets go."""
        self.members[member.member_id] = member
        for part in (member.assignment.assigned, member.assignment.pending_revocation):
            for t, ps in part.items():
                for p in ps:
                    self._holders[(t, p)] = member.member_id

    # -- steps ------------------------------------------------------------------------------------
    def _invalid(self, req: HeartbeatRequest) -> str | None:
        if req.member_epoch < STATIC_LEAVE_EPOCH:
            return f"member epoch {req.member_epoch} is not valid"
        if req.member_epoch != JOIN_EPOCH and not req.member_id:
            return "member id can't be empty"
        if req.member_epoch == STATIC_LEAVE_EPOCH and req.instance_id is None:
            return "instance id can't be null for a static leave (member epoch -2)"
        if req.member_epoch == JOIN_EPOCH:
            if req.rebalance_timeout_ms == -1:
                return "rebalance timeout must be set when joining"
            if req.subscribed_topic_names is None and req.subscribed_topic_regex is None:
                return "subscribed topic names or regex must be set when joining"
            if req.owned:
                return "owned partitions must be empty when joining"
        return None

    def _resolve(self, regex: str, topics: Mapping[str, TopicMetadata],
                 describable: Callable[[set[str]], set[str]]) -> None:
        pattern = compile_linear(regex)
        matched = {n for n in topics if not n.startswith("__") and pattern.fullmatch(n)}
        self.resolved_regexes[regex] = frozenset(describable(matched) if matched else matched)
        in_use = {m.subscribed_topic_regex for m in self.members.values()}
        for stale in [r for r in self.resolved_regexes if r not in in_use]:
            del self.resolved_regexes[stale]

    def _topics_of(self, m: ConsumerGroupMember, topics: Mapping[str, TopicMetadata]) -> set[str]:
        """The existing topics a member subscribes to: its names, and the
        topics its regex resolved to (module docstring)."""
        found = {n for n in m.subscribed_topic_names if n in topics}
        regex = m.subscribed_topic_regex
        if regex is not None:
            resolved = self.resolved_regexes.get(regex)
            if resolved is None:
                held = set(m.assignment.assigned) | set(self.target.get(m.member_id, {}))
                found |= {n for n, t in topics.items() if t.topic_id in held}
            else:
                found |= {n for n in resolved if n in topics}
        return found

    def _join(self, req: HeartbeatRequest) -> tuple[ConsumerGroupMember, bool] | HeartbeatOutcome:
        """The joining member and whether it is new to the group."""
        member_id = req.member_id or self._new_member_id()
        existing = self.members.get(member_id)
        if req.instance_id is not None:
            static = next((m for m in self.members.values() if m.instance_id == req.instance_id), None)
            if static is not None and static.member_id != member_id:
                if static.member_epoch != STATIC_LEAVE_EPOCH:
                    return HeartbeatOutcome(ErrorCode.UNRELEASED_INSTANCE_ID,
                                            f"instance id {req.instance_id!r} is still used by member "
                                            f"{static.member_id!r}")
                # KIP-848 static membership: the new member takes over the
                # assignment and epoch of the one that left with epoch -2
                del self.members[static.member_id]
                prior = static.assignment
                epoch = static.previous_member_epoch
                member = ConsumerGroupMember(
                    member_id, req.instance_id, static.rack_id, static.rebalance_timeout_ms,
                    static.subscribed_topic_names, static.subscribed_topic_regex, static.server_assignor,
                    previous_member_epoch=epoch,
                    assignment=MemberAssignmentState(prior.state, epoch, prior.assigned, prior.pending_revocation))
                self.members[member_id] = member
                self._move_holdings(static.member_id, member_id)
                if static.member_id in self.target:
                    self.target[member_id] = self.target.pop(static.member_id)
                return member, False
        if existing is not None:
            # a known member joining again reports that it owns nothing:
            # whatever it held is released before it gets anything new
            self._release(member_id)
            existing.assignment = MemberAssignmentState(MemberState.STABLE, JOIN_EPOCH, {}, {})
            return existing, False
        if len(self.members) >= self.max_size:
            return HeartbeatOutcome(ErrorCode.GROUP_MAX_SIZE_REACHED,
                                    f"group {self.group_id!r} has reached group.consumer.max.size {self.max_size}")
        member = ConsumerGroupMember(member_id)
        self.members[member_id] = member
        return member, True

    def _fenced(self, member: ConsumerGroupMember, req: HeartbeatRequest) -> str | None:
        if req.member_epoch > member.member_epoch:
            return f"member epoch {req.member_epoch} is ahead of the coordinator's {member.member_epoch}"
        if req.member_epoch == member.member_epoch:
            return None
        # behind: the member may have missed the response that moved it on;
        # it is still in sync if one step behind and owning nothing it lost
        if req.member_epoch != member.previous_member_epoch or req.owned is None or not all(
                ps <= member.assignment.assigned.get(t, frozenset()) for t, ps in req.owned.items()):
            return f"member epoch {req.member_epoch} is behind the coordinator's {member.member_epoch}"
        return None

    def _update_subscription(self, member: ConsumerGroupMember, req: HeartbeatRequest) -> bool:
        changed = False
        member.client_id, member.client_host = req.client_id, req.client_host
        if req.instance_id is not None:
            member.instance_id = req.instance_id
        if req.rack_id is not None:
            member.rack_id = req.rack_id
        if req.rebalance_timeout_ms != -1:
            member.rebalance_timeout_ms = req.rebalance_timeout_ms
        if req.subscribed_topic_names is not None:
            names = tuple(sorted(set(req.subscribed_topic_names)))
            changed |= names != member.subscribed_topic_names
            member.subscribed_topic_names = names
        if req.subscribed_topic_regex is not None:
            regex = req.subscribed_topic_regex or None
            changed |= regex != member.subscribed_topic_regex
            member.subscribed_topic_regex = regex
        if req.server_assignor is not None:
            changed |= req.server_assignor != member.server_assignor
            member.server_assignor = req.server_assignor
        return changed

    def _leave(self, req: HeartbeatRequest, topics: Mapping[str, TopicMetadata]) -> HeartbeatOutcome:
        if req.member_epoch == STATIC_LEAVE_EPOCH:
            member = next((m for m in self.members.values() if m.instance_id == req.instance_id), None)
            if member is None or member.member_id != req.member_id:
                return HeartbeatOutcome(ErrorCode.UNKNOWN_MEMBER_ID,
                                        f"no member {req.member_id!r} with instance id {req.instance_id!r}")
            # kept, partitions and all, until its session expires or a new
            # member with the same instance id takes it over (KIP-848)
            member.previous_member_epoch = member.member_epoch
            a = member.assignment
            member.assignment = MemberAssignmentState(a.state, STATIC_LEAVE_EPOCH, a.assigned, a.pending_revocation)
            return HeartbeatOutcome(ErrorCode.NONE, None, member.member_id, STATIC_LEAVE_EPOCH)
        if req.member_id not in self.members:
            return HeartbeatOutcome(ErrorCode.UNKNOWN_MEMBER_ID,
                                    f"member {req.member_id!r} is not in group {self.group_id!r}")
        self.remove_member(req.member_id, topics)
        return HeartbeatOutcome(ErrorCode.NONE, None, req.member_id, LEAVE_EPOCH)

    def _remove(self, member_id: str) -> None:
        self._release(member_id)
        del self.members[member_id]
        self.target.pop(member_id, None)

    def _release(self, member_id: str) -> None:
        for tp in [tp for tp, m in self._holders.items() if m == member_id]:
            del self._holders[tp]

    def _move_holdings(self, old: str, new: str) -> None:
        for tp, m in self._holders.items():
            if m == old:
                self._holders[tp] = new

    def _refresh_metadata(self, topics: Mapping[str, TopicMetadata]) -> bool:
        """Whether the subscribed topics' metadata changed (then the group
        epoch must bump: the assignor would see other partitions)."""
        subscribed = {n for m in self.members.values() for n in self._topics_of(m, topics)}
        metadata = {n: topics[n] for n in sorted(subscribed) if n in topics}
        if metadata == self.subscription_metadata:
            return False
        self.subscription_metadata = metadata
        return True

    def _maybe_assign(self) -> None:
        if self.group_epoch <= self.target_epoch:
            return
        assignor: PartitionAssignor = ASSIGNORS[self.assignor_name()]
        partitions = {t.topic_id: t.partitions for t in self.subscription_metadata.values()}
        subs = {m.member_id: MemberSubscription(
                    frozenset(self.subscription_metadata[n].topic_id
                              for n in self._topics_of(m, self.subscription_metadata)),
                    self.target.get(m.member_id, {}))
                for m in self.members.values()}
        self.target = assignor.assign(subs, partitions)
        self.target_epoch = self.group_epoch

    def _reconcile(self, member: ConsumerGroupMember, owned: Mapping[uuid.UUID, frozenset[int]] | None) -> None:
        def held_by_other(t: uuid.UUID, p: int) -> bool:
            holder = self._holders.get((t, p))
            return holder is not None and holder != member.member_id
        old = member.assignment
        new = next_assignment(old, self.target_epoch, self.target.get(member.member_id, {}), owned, held_by_other)
        if new is old:
            return
        if new.member_epoch != old.member_epoch:
            member.previous_member_epoch = old.member_epoch
        member.assignment = new
        self._release(member.member_id)
        for part in (new.assigned, new.pending_revocation):
            for t, ps in part.items():
                for p in ps:
                    self._holders[(t, p)] = member.member_id
