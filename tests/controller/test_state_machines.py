"""Partition and replica state machines: valid previous states as in Kafka,
refused transitions leave the state unchanged and say why."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kavka.common.topic_partition import TopicPartition
from kavka.controller.context import PartitionReplica
from kavka.controller.partition_state import (
    IllegalPartitionStateTransition,
    PartitionState,
    PartitionStates,
)
from kavka.controller.partition_state import (
    check_transition as check_partition,
)
from kavka.controller.replica_state import (
    IllegalReplicaStateTransition,
    ReplicaState,
    ReplicaStates,
)
from kavka.controller.replica_state import (
    check_transition as check_replica,
)

P = PartitionState
R = ReplicaState
TP = TopicPartition("t", 0)

PARTITION_ALLOWED = {
    (P.NON_EXISTENT, P.NEW),
    (P.NEW, P.ONLINE), (P.ONLINE, P.ONLINE), (P.OFFLINE, P.ONLINE),
    (P.NEW, P.OFFLINE), (P.ONLINE, P.OFFLINE), (P.OFFLINE, P.OFFLINE),
    (P.OFFLINE, P.NON_EXISTENT),
}  # fmt: skip

REPLICA_ALLOWED = {
    (R.NON_EXISTENT, R.NEW),
    (R.NEW, R.ONLINE), (R.ONLINE, R.ONLINE), (R.OFFLINE, R.ONLINE), (R.DELETION_INELIGIBLE, R.ONLINE),
    (R.NEW, R.OFFLINE), (R.ONLINE, R.OFFLINE), (R.OFFLINE, R.OFFLINE), (R.DELETION_INELIGIBLE, R.OFFLINE),
    (R.OFFLINE, R.DELETION_STARTED),
    (R.DELETION_STARTED, R.DELETION_SUCCESSFUL),
    (R.OFFLINE, R.DELETION_INELIGIBLE), (R.DELETION_STARTED, R.DELETION_INELIGIBLE),
    (R.DELETION_SUCCESSFUL, R.NON_EXISTENT),
}  # fmt: skip


@pytest.mark.parametrize("current, target", list(itertools.product(P, P)))
def test_partition_transition_table(current, target):
    if (current, target) in PARTITION_ALLOWED:
        check_partition(TP, current, target)
    else:
        with pytest.raises(IllegalPartitionStateTransition, match=f"illegal transition {current.value} -> {target.value}"):
            check_partition(TP, current, target)


@pytest.mark.parametrize("current, target", list(itertools.product(R, R)))
def test_replica_transition_table(current, target):
    replica = PartitionReplica(TP, 1)
    if (current, target) in REPLICA_ALLOWED:
        check_replica(replica, current, target)
    else:
        with pytest.raises(IllegalReplicaStateTransition, match=f"replica 1 of t-0: illegal transition {current.value}"):
            check_replica(replica, current, target)


def test_partition_lifecycle_and_refusals():
    states = PartitionStates()
    tps = [TopicPartition("t", i) for i in range(3)]
    done, refused = states.transition(tps, P.NEW)
    assert len(done) == 3 and not refused
    done, refused = states.transition(tps[:2], P.ONLINE)
    assert [d.previous for d in done] == [P.NEW, P.NEW]
    # ONLINE -> NON_EXISTENT is refused and the partition keeps its state
    done, refused = states.transition([tps[0]], P.NON_EXISTENT)
    assert not done and refused[0].current is P.ONLINE and "may only follow OfflinePartition" in str(refused[0])
    assert states.state(tps[0]) is P.ONLINE
    states.transition([tps[0]], P.OFFLINE)
    states.transition([tps[0]], P.NON_EXISTENT)
    assert states.state(tps[0]) is P.NON_EXISTENT and len(states) == 2
    assert states.in_state(P.ONLINE) == [tps[1]] and states.in_state(P.NEW) == [tps[2]]
    states.set_initial(TopicPartition("u", 0), P.OFFLINE)
    assert states.of_topic("u") == {TopicPartition("u", 0): P.OFFLINE}


def test_topic_deletion_path_of_replicas():
    states = ReplicaStates()
    replicas = [PartitionReplica(TP, b) for b in (1, 2)]
    for target in (R.NEW, R.ONLINE, R.OFFLINE, R.DELETION_STARTED):
        done, refused = states.transition(replicas, target)
        assert len(done) == 2 and not refused
    states.transition(replicas[:1], R.DELETION_SUCCESSFUL)
    states.transition(replicas[1:], R.DELETION_INELIGIBLE)
    assert not states.are_all_in_state("t", R.DELETION_SUCCESSFUL)
    # an ineligible replica is retried: back offline, then deletion again
    states.transition(replicas[1:], R.OFFLINE)
    states.transition(replicas[1:], R.DELETION_STARTED)
    states.transition(replicas[1:], R.DELETION_SUCCESSFUL)
    assert states.are_all_in_state("t", R.DELETION_SUCCESSFUL)
    states.transition(replicas, R.NON_EXISTENT)
    assert len(states) == 0 and not states.are_all_in_state("t", R.DELETION_SUCCESSFUL)


@given(st.lists(st.sampled_from(list(P)), max_size=30))
def test_partition_table_only_ever_holds_reachable_states(targets):
    states = PartitionStates()
    for target in targets:
        before = states.state(TP)
        done, refused = states.transition([TP], target)
        if before in target.valid_previous_states:
            assert done and states.state(TP) is target
        else:
            assert refused and states.state(TP) is before
