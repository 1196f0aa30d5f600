"""Leader election as pure functions of (assignment, ISR, live brokers).

Each function answers "who leads now, with which ISR", or None when no
replica qualifies (the partition stays or goes offline, leader -1). The
controller turns an answer into a new ``LeaderAndIsr`` (leader epoch + 1)
and writes it conditionally on the state znode's version (seed 000 §Broker
failover step 3.3).

- ``elect_for_new_partition``: topic creation (seed 000 §创建 Topic 3.1): the
  first live assigned replica; ISR = the live assigned replicas.
- ``elect_for_offline_partition``: broker failure (seed 000 §Broker failover
  3.2): the first assigned replica that is alive and in the ISR; new ISR =
  the ISR's live members. If none survives and unclean election is allowed,
  the first live assigned replica with ISR = [it] (data may be lost: seed
  000 §如何处理所有 Replica 都不工作).
- ``elect_for_reassigned_partition``: seed 000 §Partition 重新分配 step 7: the
  first replica of RAR that is alive and in the ISR; ISR unchanged.
- ``elect_preferred_replica``: seed 000 §Preferred Replica: the first
  assigned replica, only if alive and in the ISR; ISR unchanged.
- ``elect_for_controlled_shutdown``: the first assigned replica alive, in the
  ISR and not shutting down; the shutting-down brokers leave the ISR.

"First" always follows assignment order, so leadership goes to the most
preferred eligible replica. Any thread; no I/O.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from kavka.common.ids import NO_LEADER, BrokerId
from kavka.common.leader_and_isr import LeaderAndIsr


@dataclass(frozen=True, slots=True)
class ElectionResult:
    """The elected leader and the ISR to write. ``unclean`` marks a leader
    chosen outside the ISR (committed messages may be lost)."""

    leader: BrokerId
    isr: tuple[BrokerId, ...]
    unclean: bool = False


def elect_for_new_partition(assignment: Sequence[BrokerId], live: Collection[int]) -> ElectionResult | None:
    live_assigned = tuple(r for r in assignment if r in live)
    if not live_assigned:
        return None
    return ElectionResult(live_assigned[0], live_assigned)


def elect_for_offline_partition(
    assignment: Sequence[BrokerId], isr: Sequence[BrokerId], live: Collection[int], unclean_allowed: bool
) -> ElectionResult | None:
    for r in assignment:
        if r in live and r in isr:
            return ElectionResult(r, tuple(i for i in isr if i in live))
    if unclean_allowed:
        for r in assignment:
            if r in live:
                return ElectionResult(r, (r,), unclean=True)
    return None


def elect_for_reassigned_partition(target: Sequence[BrokerId], isr: Sequence[BrokerId], live: Collection[int]) -> ElectionResult | None:
    for r in target:
        if r in live and r in isr:
            return ElectionResult(r, tuple(isr))
    return None


def elect_preferred_replica(assignment: Sequence[BrokerId], isr: Sequence[BrokerId], live: Collection[int]) -> ElectionResult | None:
    if not assignment:
        return None
    preferred = assignment[0]
    if preferred in live and preferred in isr:
        return ElectionResult(preferred, tuple(isr))
    return None


def elect_for_controlled_shutdown(
    assignment: Sequence[BrokerId], isr: Sequence[BrokerId], live: Collection[int], shutting_down: Collection[int]
) -> ElectionResult | None:
    for r in assignment:
        if r in live and r in isr and r not in shutting_down:
            return ElectionResult(r, tuple(i for i in isr if i not in shutting_down))
    return None


def apply_election(current: LeaderAndIsr, result: ElectionResult | None) -> LeaderAndIsr:
    """The state to write after an election. With no result the partition
    has no leader; its ISR keeps its last member so that a clean election
    can pick it when it returns (Kafka keeps the ISR non-empty)."""
    if result is None:
        return current.new_leader_and_isr(NO_LEADER, current.isr)
    return current.new_leader_and_isr(result.leader, result.isr)


def remove_replica_from_isr(current: LeaderAndIsr, replica: BrokerId, *, fence: bool = True) -> LeaderAndIsr:
    """A replica goes offline (its broker died, or it is being removed by a
    reassignment, seed 000 step 8): drop it from the ISR unless it is the
    last member, and if it led, leave the partition leaderless until an
    election. Unchanged (same epoch) if the replica is not involved.

    The leader epoch goes up when the leadership changes, and otherwise
    only with ``fence``: a new epoch fails the replica's fetches at the
    leader (FENCED_LEADER_EPOCH), which keeps a broker that is shutting
    down, or whose replica moves away, from catching up and rejoining the
    ISR. A dead broker's replica needs no fence (leaders add to the ISR
    only followers on live brokers), and without a new epoch the leader and
    the other followers of the partition only take the new ISR: no
    follower starts its fetch over, and no leader-epoch checkpoint is
    written. Kafka's KRaft controller stopped bumping the epoch on an ISR
    shrink for the same reason (KAFKA-15021): the epoch orders leaderships
    for log truncation, not ISR changes."""
    if replica not in current.isr and replica != current.leader:
        return current
    isr = current.isr if current.isr == (replica,) else tuple(i for i in current.isr if i != replica)
    if current.leader == replica:
        return current.new_leader_and_isr(NO_LEADER, isr)
    if fence:
        return current.new_leader_and_isr(current.leader, isr)
    return current.with_isr(isr)
