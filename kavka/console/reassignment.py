"""Partition reassignment from the console: propose a plan for chosen
partitions of a topic (onto chosen brokers, or spread evenly over every
live broker) with ``kavka.tools.reassign_plan``'s placement, check an
edited plan against the cluster, and the replication throttle of KIP-73
that Kafka's reassign tool sets with ``--throttle``:
``leader.replication.throttled.replicas`` lists each moving partition's
current replicas, ``follower.replication.throttled.replicas`` the replicas
being added, and every broker involved gets
``leader.replication.throttled.rate`` and
``follower.replication.throttled.rate``.

Pure functions over the metadata's assignment; ``PlanError`` says what is
wrong and nothing is sent. Any thread.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from kavka.tools import reassign_plan as plan
from kavka.tools.reassign_plan import PartitionMove, PlanError

Assignment = Mapping[tuple[str, int], tuple[int, ...]]
LEADER_REPLICAS = "leader.replication.throttled.replicas"
FOLLOWER_REPLICAS = "follower.replication.throttled.replicas"
LEADER_RATE = "leader.replication.throttled.rate"
FOLLOWER_RATE = "follower.replication.throttled.rate"


def propose(assignment: Assignment, live: Iterable[int], topic: str, partitions: Iterable[int],
            brokers: Iterable[int] | None, rng: random.Random | None = None) -> tuple[PartitionMove, ...]:
    """Moves placing ``partitions`` of ``topic`` on ``brokers`` (None:
    every live broker), keeping the topic's replication factor."""
    live = set(live)
    chosen = tuple(sorted(live)) if brokers is None else tuple(brokers)
    missing = sorted(set(chosen) - live)
    if missing:
        raise PlanError(f"brokers {missing} are not in the cluster (live brokers: {sorted(live)})")
    wanted = set(partitions)
    unknown = sorted(p for p in wanted if (topic, p) not in assignment)
    if unknown:
        raise PlanError(f"topic {topic} has no partitions {unknown}")
    proposed = plan.generate(assignment, [topic], chosen, rng or random.Random())
    return tuple(m for m in proposed if m.partition in wanted)


def check(moves: Iterable[PartitionMove], assignment: Assignment, live: Iterable[int]) -> tuple[PartitionMove, ...]:
    """An (edited) plan against the cluster: every partition exists and
    every broker is live."""
    moves = tuple(moves)
    live = set(live)
    unknown = [m.name for m in moves if (m.topic, m.partition) not in assignment]
    if unknown:
        raise PlanError(f"partitions {', '.join(unknown)} do not exist")
    dead = sorted({r for m in moves for r in m.replicas} - live)
    if dead:
        raise PlanError(f"the plan names brokers {dead}, which are not in the cluster "
                        f"(live brokers: {sorted(live)})")
    return moves


@dataclass(frozen=True, slots=True)
class Throttle:
    """The configs a throttled reassignment sets: per topic
    (LEADER_REPLICAS, FOLLOWER_REPLICAS) values and the brokers to rate."""

    topics: Mapping[str, tuple[str, str]]
    brokers: tuple[int, ...]
    rate: int


def throttle(moves: Iterable[PartitionMove], assignment: Assignment, rate: int) -> Throttle:
    if rate <= 0:
        raise PlanError(f"the throttle must be a positive number of bytes per second, got {rate}")
    leaders: dict[str, list[str]] = {}
    followers: dict[str, list[str]] = {}
    brokers: set[int] = set()
    for m in moves:
        current = assignment[(m.topic, m.partition)]
        leaders.setdefault(m.topic, []).extend(f"{m.partition}:{b}" for b in current)
        followers.setdefault(m.topic, []).extend(f"{m.partition}:{b}" for b in m.replicas if b not in current)
        brokers.update(current)
        brokers.update(m.replicas)
    return Throttle({t: (",".join(leaders[t]), ",".join(followers.get(t, []))) for t in leaders},
                    tuple(sorted(brokers)), rate)


def format_plan(moves: Iterable[PartitionMove]) -> str:
    return plan.format_plan(moves)


def parse_plan(text: str) -> tuple[PartitionMove, ...]:
    return plan.parse_reassignment(text)
