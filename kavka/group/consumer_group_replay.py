"""Consumer-protocol groups (KIP-848) to and from their
``__consumer_offsets`` records (``kavka.group.consumer_records``; Kafka's
GroupCoordinatorRecordHelpers and the replay of GroupMetadataManager).

Both directions of one mapping live here so they cannot drift apart:

- ``snapshot`` is the set of records that stands for a group now: its
  epoch (type 3), the metadata of its subscribed topics (4), each member's
  metadata (5), the target assignment's epoch (6) and each member's share
  of it (7), each member's current assignment and epochs (8);
- ``changes`` is what to append to move the log from one snapshot to the
  next: new or changed values, and a tombstone for every key that went (a
  member that left or was fenced, a deleted group); ``WrittenGroup`` keeps
  what the log holds for a group so a heartbeat compares only what it can
  have changed;
- ``ConsumerGroupReplay`` reads records back in log order (a later value
  replaces an earlier one, a tombstone removes it; the group's type-3
  tombstone removes the whole group) and ``groups`` builds the
  ``ConsumerGroup`` state machines, so ``replay(snapshot(g))`` is ``g``:
  a new coordinator knows the group's epoch, members, target and each
  member's epoch, and members keep heartbeating without rejoining.

Pure; ``ConsumerGroupReplay`` runs in the load's worker thread, the rest
on the event loop.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from kavka.group.consumer_group import ConsumerGroup, ConsumerGroupMember, TopicMetadata
from kavka.group.consumer_records import (
    ConsumerKey,
    ConsumerRecordType,
    ConsumerValue,
    CurrentAssignmentValue,
    GroupEpochValue,
    MemberMetadataValue,
    SubscribedTopic,
    SubscriptionMetadataValue,
    TargetAssignmentEpochValue,
    TargetMemberValue,
    decode_consumer_key,
    decode_consumer_value,
)
from kavka.group.reconciliation import MemberAssignmentState, MemberState

__all__ = ["ConsumerGroupReplay", "Snapshot", "Written", "WrittenGroup", "changes", "snapshot", "tombstones"]

Snapshot = dict[ConsumerKey, ConsumerValue]
# a key whose value in the log is not known (after a failed write): rewritten next time
Written = Mapping[ConsumerKey, ConsumerValue | None]

_T = ConsumerRecordType


def snapshot(g: ConsumerGroup, members: Iterable[str] | None = None) -> Snapshot:
    """The group's records; with ``members``, only the group's own records
    and those of the named members."""
    gid = g.group_id
    out: Snapshot = {
        ConsumerKey(_T.GROUP_METADATA, gid): GroupEpochValue(g.group_epoch),
        ConsumerKey(_T.PARTITION_METADATA, gid): SubscriptionMetadataValue(tuple(
            SubscribedTopic(t.topic_id, name, t.partitions) for name, t in sorted(g.subscription_metadata.items()))),
        ConsumerKey(_T.TARGET_ASSIGNMENT_METADATA, gid): TargetAssignmentEpochValue(g.target_epoch),
    }
    chosen = g.members.items() if members is None else [(mid, g.members[mid]) for mid in members
                                                        if mid in g.members]
    for mid, m in chosen:
        out[ConsumerKey(_T.MEMBER_METADATA, gid, mid)] = MemberMetadataValue(
            m.instance_id, m.rack_id, m.client_id, m.client_host, m.subscribed_topic_names,
            m.subscribed_topic_regex, m.rebalance_timeout_ms, m.server_assignor)
        a = m.assignment
        out[ConsumerKey(_T.CURRENT_MEMBER_ASSIGNMENT, gid, mid)] = CurrentAssignmentValue(
            a.member_epoch, m.previous_member_epoch, a.state, a.assigned, a.pending_revocation)
    targets = g.target.items() if members is None else [(mid, g.target[mid]) for mid in members
                                                         if mid in g.target]
    for mid, partitions in targets:
        out[ConsumerKey(_T.TARGET_ASSIGNMENT_MEMBER, gid, mid)] = TargetMemberValue(partitions)
    return out


def _member_keys(group_id: str, member_id: str) -> list[ConsumerKey]:
    return [ConsumerKey(t, group_id, member_id) for t in (_T.MEMBER_METADATA, _T.TARGET_ASSIGNMENT_MEMBER,
                                                          _T.CURRENT_MEMBER_ASSIGNMENT)]


class WrittenGroup:
    """What the log holds for one group, so that each change writes only
    what it changed. A heartbeat that moved neither epoch nor the set of
    members changed only its own member's records (reconciliation and
    subscription updates touch the heartbeating member; anything touching
    the others bumps the group epoch), so only those and the group's own
    records are compared; otherwise the whole group is. ``records`` maps
    each key to its value in the log, None where a failed write left it
    unknown (rewritten by the next, whole-group, comparison)."""

    def __init__(self, records: Snapshot | None = None, members: Iterable[str] = ()) -> None:
        self.records: dict[ConsumerKey, ConsumerValue | None] = dict(records or {})
        self.members = frozenset(members)
        self.whole_next = False

    def changes_for(self, g: ConsumerGroup, member_id: str | None = None
                    ) -> list[tuple[ConsumerKey, ConsumerValue | None]]:
        """The records that bring the log to ``g`` after a heartbeat of
        ``member_id`` (None: anything may have changed); taken as written
        (``write_failed`` says otherwise)."""
        gid = g.group_id
        epoch = self.records.get(ConsumerKey(_T.GROUP_METADATA, gid))
        target = self.records.get(ConsumerKey(_T.TARGET_ASSIGNMENT_METADATA, gid))
        partial = (not self.whole_next and member_id is not None and member_id in g.members
                   and isinstance(epoch, GroupEpochValue) and epoch.epoch == g.group_epoch
                   and isinstance(target, TargetAssignmentEpochValue) and target.assignment_epoch == g.target_epoch
                   and g.members.keys() == self.members)
        if not partial:
            after = snapshot(g)
            out = changes(self.records, after)
            self.records = dict(after)
            self.members = frozenset(g.members)
            self.whole_next = False
            return out
        assert member_id is not None  # partial needs one
        after = snapshot(g, (member_id,))
        keys = after.keys() | set(_member_keys(gid, member_id))
        out = changes({k: self.records[k] for k in keys if k in self.records}, after)
        for k, v in out:
            if v is None:
                self.records.pop(k, None)
            else:
                self.records[k] = v
        return out

    def write_failed(self, records: Iterable[tuple[ConsumerKey, ConsumerValue | None]]) -> None:
        """The log may lack ``records``: their keys are unknown, and the next
        comparison covers the whole group."""
        for k, _ in records:
            self.records[k] = None
        self.whole_next = True


def changes(before: Written, after: Snapshot) -> list[tuple[ConsumerKey, ConsumerValue | None]]:
    """The records that move the log from ``before`` to ``after``, None
    values being tombstones; ordered by record type, the group's own
    records (3, 4, 6) after the members' so a reader never sees a group
    epoch whose members are not yet written."""
    out: list[tuple[ConsumerKey, ConsumerValue | None]] = [
        (k, None) for k in before if k not in after]
    out += [(k, v) for k, v in after.items() if k not in before or before[k] != v]
    order = {_T.MEMBER_METADATA: 0, _T.TARGET_ASSIGNMENT_MEMBER: 1, _T.CURRENT_MEMBER_ASSIGNMENT: 2,
             _T.PARTITION_METADATA: 3, _T.TARGET_ASSIGNMENT_METADATA: 4, _T.GROUP_METADATA: 5}
    out.sort(key=lambda kv: (order[kv[0].type], kv[1] is not None, kv[0].member_id or ""))
    return out


def tombstones(written: Iterable[ConsumerKey]) -> list[tuple[ConsumerKey, None]]:
    """Every record of a group going away (DeleteGroups, or a classic member
    taking over the empty group); the group's type-3 record last."""
    return [(k, None) for k in sorted(written, key=lambda k: (k.type == _T.GROUP_METADATA, k.type,
                                                                 k.member_id or ""))]


class ConsumerGroupReplay:
    """Consumer-group records of one ``__consumer_offsets`` partition, in
    log order (``apply``); ``groups`` the state machines they describe."""

    def __init__(self) -> None:
        self.records: dict[str, dict[ConsumerKey, ConsumerValue]] = {}

    def apply(self, key: bytes, value: bytes | None) -> None:
        """One record; raises ``InvalidGroupRecord`` (the loader skips it)."""
        k = decode_consumer_key(key)
        if value is None:
            if k.type is _T.GROUP_METADATA:
                self.records.pop(k.group_id, None)  # the group was deleted or converted
            else:
                self.records.get(k.group_id, {}).pop(k, None)
            return
        self.records.setdefault(k.group_id, {})[k] = decode_consumer_value(k.type, value)

    def groups(self, make_group: Callable[[str], ConsumerGroup]) -> list[ConsumerGroup]:
        """The groups with an epoch record (type 3); ``make_group`` builds an
        empty one with the coordinator's assignors and size limit."""
        return [self._build(make_group(gid), table) for gid, table in self.records.items()
                if ConsumerKey(_T.GROUP_METADATA, gid) in table]

    @staticmethod
    def _build(g: ConsumerGroup, table: Mapping[ConsumerKey, ConsumerValue]) -> ConsumerGroup:
        def value(t: ConsumerRecordType, member_id: str | None = None) -> ConsumerValue | None:
            return table.get(ConsumerKey(t, g.group_id, member_id))

        epoch = value(_T.GROUP_METADATA)
        assert isinstance(epoch, GroupEpochValue)  # groups() builds only those with one
        g.group_epoch = epoch.epoch
        subs = value(_T.PARTITION_METADATA)
        if isinstance(subs, SubscriptionMetadataValue):
            g.subscription_metadata = {t.name: TopicMetadata(t.topic_id, t.partitions) for t in subs.topics}
        target_epoch = value(_T.TARGET_ASSIGNMENT_METADATA)
        if isinstance(target_epoch, TargetAssignmentEpochValue):
            g.target_epoch = target_epoch.assignment_epoch
        for k, v in table.items():
            if isinstance(v, TargetMemberValue) and k.member_id is not None:
                g.target[k.member_id] = dict(v.partitions)
        for k, v in table.items():
            if not isinstance(v, MemberMetadataValue) or k.member_id is None:
                continue
            current = value(_T.CURRENT_MEMBER_ASSIGNMENT, k.member_id)
            m = ConsumerGroupMember(k.member_id, v.instance_id, v.rack_id, v.rebalance_timeout_ms,
                                    v.subscribed_topic_names, v.subscribed_topic_regex, v.server_assignor,
                                    client_id=v.client_id, client_host=v.client_host)
            if isinstance(current, CurrentAssignmentValue):
                m.previous_member_epoch = current.previous_member_epoch
                m.assignment = MemberAssignmentState(current.state, current.member_epoch, dict(current.assigned),
                                                     dict(current.pending_revocation))
            else:  # no assignment written yet: the member owns nothing at epoch 0
                m.assignment = MemberAssignmentState(MemberState.STABLE, 0, {}, {})
            g.restore_member(m)
        return g
