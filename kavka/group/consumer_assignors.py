"""Server-side partition assignors of consumer-protocol groups (KIP-848:
the coordinator, not a client leader, computes each member's target
assignment; Kafka's ``org.apache.kafka.coordinator.group.assignor``).

- ``UniformAssignor`` (``uniform``, the default of
  ``group.consumer.assignors``): every partition of a subscribed topic to
  exactly one of its subscribers, as even as the subscriptions allow, and
  sticky: a member keeps the partitions of its previous target unless
  keeping them would leave the group unbalanced (KIP-848 "Assignors").
- ``RangeAssignor`` (``range``): per topic, the subscribers sorted by member
  id each take a contiguous range, the first ``partitions % subscribers``
  one more; members subscribed to the same co-partitioned topics get the
  same partition numbers of each (what joins on keys need).

Both are pure functions of the members' subscriptions (topic ids) and
previous targets and of the partition count of each topic; they never see
a topic a member did not subscribe to.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

__all__ = ["ASSIGNORS", "Assignment", "MemberSubscription", "PartitionAssignor", "RangeAssignor",
           "UniformAssignor", "assignor_named"]

# a member's partitions: topic id -> partition numbers
Assignment = dict[uuid.UUID, frozenset[int]]


@dataclass(frozen=True, slots=True)
class MemberSubscription:
    """What an assignor knows of a member: the topic ids it subscribes to
    (names already resolved against the metadata) and its previous target
    assignment, for stickiness."""
    topics: frozenset[uuid.UUID]
    previous: Mapping[uuid.UUID, frozenset[int]] = field(default_factory=dict)


class PartitionAssignor(Protocol):
    name: str

    def assign(self, members: Mapping[str, MemberSubscription],
               partitions: Mapping[uuid.UUID, int]) -> dict[str, Assignment]:
        """The target assignment of every member (every member has an entry,
        possibly empty); ``partitions`` is the partition count of each topic."""
        ...


def _to_assignment(owned: dict[tuple[uuid.UUID, int], str], members: Mapping[str, object]) -> dict[str, Assignment]:
    collected: dict[str, dict[uuid.UUID, set[int]]] = {m: {} for m in members}
    for (topic, p), member in owned.items():
        collected[member].setdefault(topic, set()).add(p)
    return {m: {t: frozenset(ps) for t, ps in by_topic.items()} for m, by_topic in collected.items()}


class UniformAssignor:
    """See the module docstring. Three steps: keep each member's previous
    partitions that are still valid (subscribed, existing, not claimed
    twice); give every unowned partition to its least-loaded subscriber;
    then move partitions from a member to a subscriber holding at least
    two fewer until none can move. Each move lowers the sum of the squared
    loads, so the last step ends, and with identical subscriptions it
    leaves loads differing by at most one."""

    name = "uniform"

    def assign(self, members: Mapping[str, MemberSubscription],
               partitions: Mapping[uuid.UUID, int]) -> dict[str, Assignment]:
        subscribers: dict[uuid.UUID, list[str]] = {}
        for m in sorted(members):
            for t in members[m].topics:
                if t in partitions:
                    subscribers.setdefault(t, []).append(m)
        owned: dict[tuple[uuid.UUID, int], str] = {}
        load = dict.fromkeys(members, 0)
        for m in sorted(members):
            sub = members[m]
            for t, ps in sorted(sub.previous.items()):
                if t not in sub.topics or t not in partitions:
                    continue
                for p in sorted(ps):
                    if 0 <= p < partitions[t] and (t, p) not in owned:
                        owned[(t, p)] = m
                        load[m] += 1
        # a previous owner holding more than its share is evened out by
        # _balance below, which moves only what the balance needs
        for t in sorted(subscribers):
            for p in range(partitions[t]):
                if (t, p) not in owned:
                    m = min(subscribers[t], key=lambda c: (load[c], c))
                    owned[(t, p)] = m
                    load[m] += 1
        self._balance(owned, load, subscribers)
        return _to_assignment(owned, members)

    @staticmethod
    def _balance(owned: dict[tuple[uuid.UUID, int], str], load: dict[str, int],
                 subscribers: Mapping[uuid.UUID, list[str]]) -> None:
        by_member: dict[str, list[tuple[uuid.UUID, int]]] = {m: [] for m in load}
        for tp, m in owned.items():
            by_member[m].append(tp)
        moved = True
        while moved:
            moved = False
            for giver in sorted(load, key=lambda m: (-load[m], m)):
                for tp in sorted(by_member[giver], reverse=True):
                    takers = [c for c in subscribers[tp[0]] if load[c] < load[giver] - 1]
                    if not takers:
                        continue
                    taker = min(takers, key=lambda c: (load[c], c))
                    by_member[giver].remove(tp)
                    by_member[taker].append(tp)
                    owned[tp] = taker
                    load[giver] -= 1
                    load[taker] += 1
                    moved = True
                    break
                if moved:
                    break


class RangeAssignor:
    """See the module docstring."""

    name = "range"

    def assign(self, members: Mapping[str, MemberSubscription],
               partitions: Mapping[uuid.UUID, int]) -> dict[str, Assignment]:
        owned: dict[tuple[uuid.UUID, int], str] = {}
        for t, count in partitions.items():
            subs = sorted(m for m, s in members.items() if t in s.topics)
            if not subs:
                continue
            quota, extra = divmod(count, len(subs))
            start = 0
            for i, m in enumerate(subs):
                n = quota + (1 if i < extra else 0)
                for p in range(start, start + n):
                    owned[(t, p)] = m
                start += n
        return _to_assignment(owned, members)


ASSIGNORS: dict[str, PartitionAssignor] = {a.name: a for a in (UniformAssignor(), RangeAssignor())}


def assignor_named(name: str) -> PartitionAssignor:
    """The assignor of that ``group.consumer.assignors`` name; KeyError names
    the known ones."""
    try:
        return ASSIGNORS[name]
    except KeyError:
        raise KeyError(f"unknown consumer group assignor {name!r}; known: {sorted(ASSIGNORS)}") from None
