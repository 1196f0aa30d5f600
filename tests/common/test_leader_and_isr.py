"""The partition state znode's content as values: LeaderAndIsr transitions
(every leader or ISR change bumps the leader epoch and keeps the znode
version the write is conditional on) and the pair with the controller epoch."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kavka.common.ids import NO_EPOCH, NO_LEADER, NO_PRODUCER_EPOCH, NO_PRODUCER_ID
from kavka.common.leader_and_isr import LeaderAndIsr, LeaderIsrAndControllerEpoch
from kavka.common.topic_partition import TopicPartition
from kavka.zk.brokers import PartitionStateZNode

broker_ids = st.integers(min_value=0, max_value=1000)
isrs = st.lists(broker_ids, min_size=1, max_size=5, unique=True).map(tuple)
epochs = st.integers(min_value=0, max_value=2**31 - 2)
versions = st.integers(min_value=-1, max_value=2**31 - 1)


@st.composite
def states(draw):
    isr = draw(isrs)
    return LeaderAndIsr(draw(st.sampled_from(isr)), draw(epochs), isr, draw(versions))


def test_sentinels_are_kafkas_minus_one():
    assert NO_LEADER == -1 and NO_EPOCH == -1
    assert NO_PRODUCER_ID == -1 and NO_PRODUCER_EPOCH == -1


def test_zk_version_defaults_to_not_in_zookeeper():
    assert LeaderAndIsr(1, 0, (1, 2)).zk_version == -1


@given(states(), broker_ids, isrs)
def test_new_leader_and_isr_bumps_the_epoch_and_keeps_the_version(state, leader, isr):
    nxt = state.new_leader_and_isr(leader, list(isr))
    assert nxt == LeaderAndIsr(leader, state.leader_epoch + 1, isr, state.zk_version)
    assert isinstance(nxt.isr, tuple)


@given(states(), versions)
def test_with_zk_version_changes_only_the_version(state, version):
    written = state.with_zk_version(version)
    assert (written.leader, written.leader_epoch, written.isr, written.zk_version) == (
        state.leader, state.leader_epoch, state.isr, version)


def test_seed_election_then_shrink_then_write():
    """seed 000 §Broker failover: broker 1 dies, 2 is elected from the ISR,
    the write lands at the next version."""
    state = LeaderAndIsr(1, 4, (1, 2, 3), zk_version=7)
    elected = state.new_leader_and_isr(2, (2, 3))
    assert elected == LeaderAndIsr(2, 5, (2, 3), 7)
    assert elected.with_zk_version(8) == LeaderAndIsr(2, 5, (2, 3), 8)
    offline = elected.new_leader_and_isr(NO_LEADER, (2, 3))
    assert offline.leader == NO_LEADER and offline.leader_epoch == 6


@given(states(), epochs, st.from_regex(r"[a-z]{1,10}", fullmatch=True), st.integers(0, 100))
def test_the_znode_round_trip_keeps_epochs_and_version(state, controller_epoch, topic, partition):
    entry = LeaderIsrAndControllerEpoch(state, controller_epoch)
    znode = PartitionStateZNode.of(TopicPartition(topic, partition), entry)
    back = PartitionStateZNode.decode(znode.encode(), znode.znode_path)
    assert back.leader_isr_and_controller_epoch(state.zk_version) == entry


def test_values_are_frozen_and_hashable():
    state = LeaderAndIsr(1, 0, (1,))
    with pytest.raises(dataclasses.FrozenInstanceError):
        state.leader = 2  # type: ignore[misc]
    entry = LeaderIsrAndControllerEpoch(state, 3)
    assert {entry: 1}[LeaderIsrAndControllerEpoch(LeaderAndIsr(1, 0, (1,)), 3)] == 1
