"""Reconciliation of a consumer-protocol member towards its target
assignment (KIP-848 "Reconciliation"; Kafka's CurrentAssignmentBuilder).

A member moves from its current assignment to its target in steps that
never let a partition be owned twice:

1. partitions of the current assignment that are not in the target are
   revoked first: while the member still reports owning any of them the
   member stays at its epoch in ``UNREVOKED_PARTITIONS`` and is told only
   the partitions it keeps;
2. partitions of the target still owned (or being revoked) by another
   member are withheld: the member advances to the target epoch in
   ``UNRELEASED_PARTITIONS`` with the free ones only, and gets the rest on
   a later heartbeat once their owner released them;
3. otherwise the member is ``STABLE`` at the target epoch with its whole
   target.

``next_assignment`` is a pure function; the group supplies whether a
partition is held by another member.
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from kavka.group.consumer_assignors import Assignment

__all__ = ["MemberAssignmentState", "MemberState", "next_assignment"]


class MemberState(enum.Enum):
    # Kafka's MemberState names, shown by ConsumerGroupDescribe's tooling
    STABLE = "stable"
    UNREVOKED_PARTITIONS = "unrevoked_partitions"
    UNRELEASED_PARTITIONS = "unreleased_partitions"


@dataclass(frozen=True, slots=True)
class MemberAssignmentState:
    state: MemberState
    member_epoch: int
    assigned: Assignment
    pending_revocation: Assignment


def _nonempty(d: Mapping[uuid.UUID, set[int] | frozenset[int]]) -> Assignment:
    return {t: frozenset(ps) for t, ps in d.items() if ps}


def _owns_any(owned: Mapping[uuid.UUID, frozenset[int]] | None, revoked: Assignment) -> bool:
    # a heartbeat without owned partitions (null: unchanged) proves nothing
    # was released, so the member is taken to still own them
    if owned is None:
        return True
    return any(owned.get(t, frozenset()) & ps for t, ps in revoked.items())


def next_assignment(current: MemberAssignmentState, target_epoch: int, target: Assignment,
                    owned: Mapping[uuid.UUID, frozenset[int]] | None,
                    held_by_other: Callable[[uuid.UUID, int], bool]) -> MemberAssignmentState:
    """The member's next state given the group's target (at ``target_epoch``)
    and the partitions the member reported owning in this heartbeat."""
    if current.state is MemberState.UNREVOKED_PARTITIONS:
        if _owns_any(owned, current.pending_revocation):
            return current
    elif current.state is MemberState.STABLE and current.member_epoch == target_epoch:
        return current
    keep: dict[uuid.UUID, set[int]] = {}
    revoke: dict[uuid.UUID, set[int]] = {}
    gain: dict[uuid.UUID, set[int]] = {}
    unreleased = False
    for t in set(target) | set(current.assigned):
        tgt = target.get(t, frozenset())
        cur = current.assigned.get(t, frozenset())
        keep[t] = set(cur & tgt)
        revoke[t] = set(cur - tgt)
        free = {p for p in tgt - cur if not held_by_other(t, p)}
        unreleased = unreleased or len(free) < len(tgt - cur)
        gain[t] = free
    kept, revoked = _nonempty(keep), _nonempty(revoke)
    if revoked and _owns_any(owned, revoked):
        return MemberAssignmentState(MemberState.UNREVOKED_PARTITIONS, current.member_epoch, kept, revoked)
    assigned = _nonempty({t: keep[t] | gain[t] for t in keep})
    state = MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE
    return MemberAssignmentState(state, target_epoch, assigned, {})
