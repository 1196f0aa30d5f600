"""Replica placement: the seed's rule, Kafka's random start and shift,
adding partitions, validation of explicit assignments."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kavka.controller.assignment import (
    InvalidPartitions,
    InvalidReplicaAssignment,
    InvalidReplicationFactor,
    RackInformationMissing,
    assign_new_partitions,
    assign_replicas,
    rack_alternated_brokers,
    validate_replica_assignment,
)

broker_sets = st.sets(st.integers(0, 50), min_size=1, max_size=9)


@settings(max_examples=100)
@given(broker_sets, st.integers(1, 60), st.data())
def test_every_partition_gets_rf_distinct_live_brokers_and_leaders_spread(brokers, partitions, data):
    rf = data.draw(st.integers(1, len(brokers)))
    seed = data.draw(st.integers(0, 2**32))
    a = assign_replicas(brokers, partitions, rf, rng=random.Random(seed))
    assert sorted(a) == list(range(partitions))
    for replicas in a.values():
        assert len(replicas) == rf and len(set(replicas)) == rf and set(replicas) <= brokers
    # preferred leaders: per broker counts differ by at most one
    leaders = Counter(r[0] for r in a.values())
    counts = [leaders.get(b, 0) for b in brokers]
    assert max(counts) - min(counts) <= 1
    # all replicas: even when the partitions fill whole rounds of the brokers
    per_broker = Counter(b for r in a.values() for b in r)
    counts = [per_broker.get(b, 0) for b in brokers]
    if partitions % len(brokers) == 0:
        assert max(counts) == min(counts)
    assert max(counts) - min(counts) <= rf


def test_seed_rule_with_fixed_start_and_shift():
    # seed 000: partition i on broker i mod n, its j-th replica on (i + j) mod n
    brokers = [10, 11, 12, 13, 14]
    a = assign_replicas(brokers, 5, 3, start_index=0, shift=0)
    for i in range(5):
        assert a[i] == tuple(brokers[(i + j) % 5] for j in range(3))


def test_shift_grows_each_round_so_followers_spread():
    a = assign_replicas([0, 1, 2, 3], 8, 2, start_index=0, shift=0)
    first_round = {a[p][0]: a[p][1] for p in range(4)}
    second_round = {a[p][0]: a[p][1] for p in range(4, 8)}
    assert all(first_round[b] != second_round[b] for b in range(4))


def test_random_start_varies_between_topics():
    rng = random.Random(7)
    firsts = {assign_replicas(range(6), 1, 1, rng=rng)[0][0] for _ in range(50)}
    assert len(firsts) > 1


@pytest.mark.parametrize(
    "brokers, partitions, rf, error",
    [
        ([1, 2], 3, 3, InvalidReplicationFactor),
        ([1, 2], 3, 0, InvalidReplicationFactor),
        ([1, 2], 0, 1, InvalidPartitions),
        ([], 1, 1, InvalidReplicationFactor),
    ],
)
def test_impossible_requests(brokers, partitions, rf, error):
    with pytest.raises(error):
        assign_replicas(brokers, partitions, rf)


@settings(max_examples=100)
@given(broker_sets, st.integers(1, 20), st.integers(1, 20), st.data())
def test_adding_partitions_keeps_existing_and_rf(brokers, existing_count, more, data):
    rf = data.draw(st.integers(1, len(brokers)))
    rng = random.Random(data.draw(st.integers(0, 2**32)))
    existing = assign_replicas(brokers, existing_count, rf, rng=rng)
    added = assign_new_partitions(brokers, existing, existing_count + more, rng=rng)
    assert sorted(added) == list(range(existing_count, existing_count + more))
    for replicas in added.values():
        assert len(replicas) == rf and len(set(replicas)) == rf and set(replicas) <= brokers


def test_adding_partitions_continues_the_leader_sequence():
    existing = assign_replicas([0, 1, 2], 2, 1, start_index=1, shift=0)
    assert existing == {0: (1,), 1: (2,)}
    added = assign_new_partitions([0, 1, 2], existing, 4)
    assert added == {2: (0,), 3: (1,)}
    with pytest.raises(InvalidPartitions, match="can only increase"):
        assign_new_partitions([0, 1, 2], existing, 2)


def test_validate_explicit_assignment():
    assert validate_replica_assignment({0: [1, 2], 1: [2, 3]}, {1, 2, 3}) == {0: (1, 2), 1: (2, 3)}
    assert validate_replica_assignment({3: [1]}, {1}, first_partition=3) == {3: (1,)}
    cases = [
        ({}, "empty"),
        ({0: [1], 2: [1]}, "without gaps"),
        ({0: []}, "no replicas"),
        ({0: [1, 1]}, "twice"),
        ({0: [9]}, "unknown broker"),
        ({0: [1, 2], 1: [1]}, "same replication factor"),
    ]
    for assignment, message in cases:
        with pytest.raises(InvalidReplicaAssignment, match=message):
            validate_replica_assignment(assignment, {1, 2, 3})


# ---- rack-aware placement (Kafka's AdminUtils.assignReplicasToBrokersRackAware) ----

rack_maps = st.dictionaries(st.integers(0, 40), st.sampled_from(["r1", "r2", "r3", "r4"]), min_size=1, max_size=10)


@settings(max_examples=150)
@given(rack_maps, st.integers(1, 60), st.data())
def test_rack_aware_replicas_span_min_rf_racks_and_leaders_spread(racks, partitions, data):
    brokers = set(racks)
    rf = data.draw(st.integers(1, len(brokers)))
    first = data.draw(st.integers(0, 5))
    a = assign_replicas(brokers, partitions, rf, racks=racks, first_partition=first,
                        rng=random.Random(data.draw(st.integers(0, 2**32))))
    assert sorted(a) == list(range(first, first + partitions))
    n_racks = len(set(racks.values()))
    for replicas in a.values():
        assert len(replicas) == rf and len(set(replicas)) == rf and set(replicas) <= brokers
        assert len({racks[b] for b in replicas}) == min(rf, n_racks)
    leaders = Counter(r[0] for r in a.values())
    counts = [leaders.get(b, 0) for b in brokers]
    assert max(counts) - min(counts) <= 1


def test_rack_alternated_list_is_kafkas():
    # Kafka's AdminRackAwareTest.testGetRackAlternatedBrokerListAndAssignReplicasToBrokers
    racks = {0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"}
    assert rack_alternated_brokers(racks) == [0, 3, 1, 5, 4, 2]
    a = assign_replicas(racks, 7, 3, racks=racks, start_index=0, shift=0)
    # Kafka's expected assignment for fixedStartIndex 0 (its shift is the start index too)
    assert a == {0: (0, 3, 1), 1: (3, 1, 5), 2: (1, 5, 4), 3: (5, 4, 2), 4: (4, 2, 0), 5: (2, 0, 3),
                 6: (0, 4, 2)}


def test_rack_aware_with_more_replicas_than_racks_fills_every_rack_then_repeats():
    racks = {0: "a", 1: "a", 2: "b", 3: "b"}
    a = assign_replicas(racks, 8, 3, racks=racks, rng=random.Random(1))
    for replicas in a.values():
        assert {racks[b] for b in replicas} == {"a", "b"}


def test_no_rack_anywhere_is_the_seed_layout():
    racks = {b: None for b in range(5)}
    assert assign_replicas(range(5), 5, 3, racks=racks, start_index=0, shift=0) == \
        assign_replicas(range(5), 5, 3, start_index=0, shift=0)


def test_a_mix_of_racked_and_unracked_brokers_is_refused_naming_them():
    with pytest.raises(RackInformationMissing, match=r"Not all brokers have rack information.*\[2\]"):
        assign_replicas([0, 1, 2], 3, 2, racks={0: "a", 1: "b"})


def test_new_partitions_continue_rack_aware():
    racks = {0: "a", 1: "a", 2: "b", 3: "b", 4: "c", 5: "c"}
    existing = assign_replicas(racks, 3, 3, racks=racks, rng=random.Random(7))
    added = assign_new_partitions(racks, existing, 9, racks=racks, rng=random.Random(8))
    assert sorted(added) == list(range(3, 9))
    for replicas in added.values():
        assert len({racks[b] for b in replicas}) == 3
    with pytest.raises(RackInformationMissing):
        assign_new_partitions([0, 1, 9], existing, 9, racks=racks)
