"""Replica placement for new topics and new partitions (seed 000 §如何将所有
Replica 均匀分布到整个集群).

The seed's rule, with Kafka's refinements (rack-unaware):

1. sort the brokers; n = their count;
2. partition i's first replica (its preferred leader) goes to broker
   ``(i + start) mod n``, ``start`` random, so that topics do not all put
   partition 0 on the same broker;
3. the other replicas follow the first at a distance ``1 + (shift + j) mod
   (n - 1)`` for j = 0..RF-2 — never 0, so replicas stay distinct — with
   ``shift`` random and increased by one every n partitions, so that the
   followers of one broker's partitions spread over all other brokers
   instead of always landing on its neighbour.

Adding partitions continues the same sequence: the start index is the
position of partition 0's preferred broker and numbering continues from the
current partition count (Kafka's AdminZkClient.addPartitions).

Errors are ``InvalidReplicationFactor`` / ``InvalidPartitions`` /
``InvalidReplicaAssignment`` carrying a message for the client (Kafka's
INVALID_REPLICATION_FACTOR, INVALID_PARTITIONS, INVALID_REPLICA_ASSIGNMENT).
Pure; any thread.
"""

from __future__ import annotations

import random
from collections.abc import Collection, Mapping, Sequence


class AssignmentError(ValueError):
    """Base: a requested placement is impossible or malformed."""


class InvalidReplicationFactor(AssignmentError):
    pass


class InvalidPartitions(AssignmentError):
    pass


class InvalidReplicaAssignment(AssignmentError):
    pass


def _replica_offset(shift: int, j: int, n: int) -> int:
    # Distance from the first replica to follower j; in 1..n-1 so it never
    # wraps onto the first replica, and distinct for distinct j < n - 1.
    return 1 + (shift + j) % (n - 1)


def assign_replicas(
    brokers: Collection[int],
    partitions: int,
    replication_factor: int,
    *,
    start_index: int | None = None,
    shift: int | None = None,
    first_partition: int = 0,
    rng: random.Random | None = None,
) -> dict[int, tuple[int, ...]]:
    """Place ``partitions`` partitions numbered from ``first_partition``
    with ``replication_factor`` replicas each on ``brokers``.

    ``start_index``/``shift`` default to random values in [0, n) drawn from
    ``rng`` (``random`` module if None); pass them for a fixed placement.
    """
    if partitions <= 0:
        raise InvalidPartitions(f"number of partitions must be larger than 0, got {partitions}")
    if replication_factor <= 0:
        raise InvalidReplicationFactor(f"replication factor must be larger than 0, got {replication_factor}")
    ordered = sorted(set(brokers))
    n = len(ordered)
    if replication_factor > n:
        raise InvalidReplicationFactor(f"replication factor {replication_factor} is larger than the {n} available broker(s)")
    r = rng or random
    start = r.randrange(n) if start_index is None else start_index % n
    next_shift = r.randrange(n) if shift is None else shift
    out: dict[int, tuple[int, ...]] = {}
    for p in range(first_partition, first_partition + partitions):
        if p > 0 and p % n == 0:
            next_shift += 1
        first = (p + start) % n
        replicas = [ordered[first]]
        for j in range(replication_factor - 1):
            replicas.append(ordered[(first + _replica_offset(next_shift, j, n)) % n])
        out[p] = tuple(replicas)
    return out


def assign_new_partitions(
    brokers: Collection[int],
    existing: Mapping[int, Sequence[int]],
    new_total: int,
    *,
    rng: random.Random | None = None,
) -> dict[int, tuple[int, ...]]:
    """Replicas for partitions ``len(existing) .. new_total-1`` of a topic
    (CreatePartitions / kafka-topics --alter --partitions). The replication
    factor is partition 0's; placement continues from partition 0's
    preferred broker."""
    current = len(existing)
    if current == 0 or 0 not in existing:
        raise InvalidPartitions("the topic has no partition 0 to continue from")
    if new_total <= current:
        raise InvalidPartitions(f"topic currently has {current} partitions; {new_total} would not add any (partitions can only increase)")
    ordered = sorted(set(brokers))
    first_broker = existing[0][0]
    # Kafka: the index of the first broker with an id >= partition 0's leader.
    start_index = next((i for i, b in enumerate(ordered) if b >= first_broker), 0)
    return assign_replicas(
        ordered,
        new_total - current,
        len(existing[0]),
        start_index=start_index,
        first_partition=current,
        rng=rng,
    )


def validate_replica_assignment(
    assignment: Mapping[int, Sequence[int]],
    brokers: Collection[int],
    *,
    first_partition: int = 0,
) -> dict[int, tuple[int, ...]]:
    """Check an explicit assignment (CreateTopics ``assignments``,
    ``--replica-assignment``, CreatePartitions ``assignments``): partitions
    numbered ``first_partition``.. without gaps, each with the same number of
    distinct, known brokers. Returns it normalised to tuples."""
    if not assignment:
        raise InvalidReplicaAssignment("the replica assignment is empty")
    expected = list(range(first_partition, first_partition + len(assignment)))
    if sorted(assignment) != expected:
        raise InvalidReplicaAssignment(f"partitions must be numbered {expected[0]}..{expected[-1]} without gaps, got {sorted(assignment)}")
    known = set(brokers)
    rf = None
    out: dict[int, tuple[int, ...]] = {}
    for p in expected:
        replicas = tuple(assignment[p])
        if not replicas:
            raise InvalidReplicaAssignment(f"partition {p} has no replicas")
        if len(set(replicas)) != len(replicas):
            raise InvalidReplicaAssignment(f"partition {p} lists a broker twice: {list(replicas)}")
        unknown = [b for b in replicas if b not in known]
        if unknown:
            raise InvalidReplicaAssignment(f"partition {p} names unknown broker(s) {unknown}; known brokers: {sorted(known)}")
        if rf is None:
            rf = len(replicas)
        elif len(replicas) != rf:
            raise InvalidReplicaAssignment(f"partition {p} has {len(replicas)} replicas but partition {expected[0]} has {rf}; all partitions need the same replication factor")
        out[p] = replicas
    return out
