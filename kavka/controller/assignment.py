"""Replica placement for new topics and new partitions (seed 000 §如何将所有
Replica 均匀分布到整个集群).

The seed's rule, with Kafka's refinements (AdminUtils.assignReplicasToBrokers),
when no broker has a rack:

1. sort the brokers; n = their count;
2. partition i's first replica (its preferred leader) goes to broker
   ``(i + start) mod n``, ``start`` random, so that topics do not all put
   partition 0 on the same broker;
3. the other replicas follow the first at a distance ``1 + (shift + j) mod
   (n - 1)`` for j = 0..RF-2 — never 0, so replicas stay distinct — with
   ``shift`` random and increased by one every n partitions, so that the
   followers of one broker's partitions spread over all other brokers
   instead of always landing on its neighbour.

When every broker has a rack (``broker.rack``), Kafka's rack-aware
placement: the brokers are first arranged in the rack-alternated list (the
racks sorted, then one broker of each rack in turn, each rack's brokers in
id order), partition i's first replica is the broker at ``(i + start) mod
n`` of that list, and the followers walk the list from it at the distances
``1 + (shift * racks + k) mod (n - 1)``, k = 0, 1, ..., skipping a broker
whose rack already holds a replica while some rack holds none, and a broker
already chosen while some broker is not. So a partition's replicas span
min(RF, racks) racks and the preferred leaders still go round every broker.
A mix of brokers with and without racks is refused
(``RackInformationMissing``, Kafka's AdminOperationException "Not all
brokers have rack information ..."), unless the caller ignores the racks
(``kavka reassign-partitions --generate --disable-rack-aware``) or gives an
explicit assignment.

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


class RackInformationMissing(AssignmentError):
    """Some brokers have a rack and some do not (Kafka's
    AdminOperationException, which CreateTopics answers as
    UNKNOWN_SERVER_ERROR)."""


def _replica_offset(shift: int, j: int, n: int) -> int:
    # Distance from the first replica to follower j; in 1..n-1 so it never
    # wraps onto the first replica, and distinct for distinct j < n - 1.
    return 1 + (shift + j) % (n - 1)


def assign_replicas(
    brokers: Collection[int],
    partitions: int,
    replication_factor: int,
    *,
    racks: Mapping[int, str | None] | None = None,
    start_index: int | None = None,
    shift: int | None = None,
    first_partition: int = 0,
    rng: random.Random | None = None,
) -> dict[int, tuple[int, ...]]:
    """Place ``partitions`` partitions numbered from ``first_partition``
    with ``replication_factor`` replicas each on ``brokers``.

    ``racks`` maps a broker to its rack (missing or None: no rack); when
    every broker has one the placement is rack-aware, when none has one it
    is the seed's, and a mix raises ``RackInformationMissing``.
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
    rack_of = {b: rack for b in ordered if racks is not None and (rack := racks.get(b)) is not None}
    if rack_of and len(rack_of) < n:
        unracked = [b for b in ordered if b not in rack_of]
        raise RackInformationMissing(
            f"Not all brokers have rack information for replica rack aware assignment: broker(s) {unracked} have no "
            f"broker.rack while {sorted(rack_of)} have one; set broker.rack on every broker or on none, or give an "
            "explicit replica assignment")
    r = rng or random
    start = r.randrange(n) if start_index is None else start_index % n
    next_shift = r.randrange(n) if shift is None else shift
    if rack_of:
        return _assign_rack_aware(rack_of, partitions, replication_factor, start, next_shift, first_partition)
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


def rack_alternated_brokers(rack_of: Mapping[int, str]) -> list[int]:
    """Kafka's getRackAlternatedBrokerList: racks sorted, each rack's
    brokers in id order, taking one broker of each rack in turn (racks
    that run out are skipped): {0: a, 1: a, 2: b, 3: c} -> [0, 2, 3, 1]."""
    by_rack: dict[str, list[int]] = {}
    for b in sorted(rack_of):
        by_rack.setdefault(rack_of[b], []).append(b)
    columns = [by_rack[rack] for rack in sorted(by_rack)]
    depth = max(len(c) for c in columns)
    return [c[i] for i in range(depth) for c in columns if i < len(c)]


def _assign_rack_aware(rack_of: Mapping[int, str], partitions: int, replication_factor: int, start: int,
                       shift: int, first_partition: int) -> dict[int, tuple[int, ...]]:
    """Kafka's assignReplicasToBrokersRackAware (see the module docstring)."""
    arranged = rack_alternated_brokers(rack_of)
    n = len(arranged)
    num_racks = len(set(rack_of.values()))
    out: dict[int, tuple[int, ...]] = {}
    for p in range(first_partition, first_partition + partitions):
        if p > 0 and p % n == 0:
            shift += 1
        first = (p + start) % n
        leader = arranged[first]
        replicas = [leader]
        racks_used = {rack_of[leader]}
        k = 0
        for _ in range(replication_factor - 1):
            # Terminates: within n - 1 steps every other broker is visited,
            # and one of them is acceptable while fewer than n are chosen.
            while True:
                broker = arranged[(first + _replica_offset(shift * num_racks, k, n)) % n]
                k += 1
                rack = rack_of[broker]
                if (rack not in racks_used or len(racks_used) == num_racks) and broker not in replicas:
                    replicas.append(broker)
                    racks_used.add(rack)
                    break
        out[p] = tuple(replicas)
    return out


def assign_new_partitions(
    brokers: Collection[int],
    existing: Mapping[int, Sequence[int]],
    new_total: int,
    *,
    racks: Mapping[int, str | None] | None = None,
    rng: random.Random | None = None,
) -> dict[int, tuple[int, ...]]:
    """Replicas for partitions ``len(existing) .. new_total-1`` of a topic
    (CreatePartitions / kafka-topics --alter --partitions). The replication
    factor is partition 0's; placement continues from partition 0's
    preferred broker (Kafka's AdminZkClient.addPartitions)."""
    current = len(existing)
    if current == 0 or 0 not in existing:
        raise InvalidPartitions("the topic has no partition 0 to continue from")
    if new_total <= current:
        raise InvalidPartitions(f"topic currently has {current} partitions; {new_total} would not add any (partitions can only increase)")
    ordered = sorted(set(brokers))
    first_broker = existing[0][0]
    # Kafka: the index of the first broker with an id >= partition 0's
    # leader among the brokers sorted by id, used as the start index in the
    # rack-alternated list too.
    start_index = next((i for i, b in enumerate(ordered) if b >= first_broker), 0)
    return assign_replicas(
        ordered,
        new_total - current,
        len(existing[0]),
        racks=racks,
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
