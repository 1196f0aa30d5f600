"""Leader election functions: properties over random (assignment, ISR, live)
and the seed's cases."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kavka.common.ids import NO_LEADER
from kavka.common.leader_and_isr import LeaderAndIsr
from kavka.controller.election import (
    ElectionResult,
    apply_election,
    elect_for_controlled_shutdown,
    elect_for_new_partition,
    elect_for_offline_partition,
    elect_for_reassigned_partition,
    elect_preferred_replica,
    remove_replica_from_isr,
)

BROKERS = list(range(8))


@st.composite
def partitions(draw):
    """(assignment, isr, live): isr is a subset of the assignment, in any order."""
    assignment = draw(st.lists(st.sampled_from(BROKERS), min_size=1, max_size=5, unique=True))
    isr = draw(st.permutations(assignment).flatmap(lambda p: st.integers(0, len(p)).map(lambda k: p[:k])))
    live = draw(st.sets(st.sampled_from(BROKERS)))
    return assignment, list(isr), live


@settings(max_examples=150)
@given(partitions(), st.booleans())
def test_offline_election_properties(p, unclean_allowed):
    assignment, isr, live = p
    result = elect_for_offline_partition(assignment, isr, live, unclean_allowed)
    live_isr = [r for r in assignment if r in live and r in isr]
    live_assigned = [r for r in assignment if r in live]
    if result is None:
        assert not live_isr and (not unclean_allowed or not live_assigned)
        return
    assert result.leader in live and result.leader in assignment
    assert set(result.isr) <= set(live) and result.leader in result.isr
    if live_isr:
        # clean: the most preferred live ISR member; ISR = its live members, order kept
        assert not result.unclean
        assert result.leader == live_isr[0]
        assert result.isr == tuple(r for r in isr if r in live)
    else:
        assert unclean_allowed and result.unclean
        assert result.leader == live_assigned[0] and result.isr == (result.leader,)


@settings(max_examples=100)
@given(partitions())
def test_preferred_election_picks_first_replica_only_if_alive_and_in_isr(p):
    assignment, isr, live = p
    result = elect_preferred_replica(assignment, isr, live)
    preferred = assignment[0]
    if preferred in live and preferred in isr:
        assert result == ElectionResult(preferred, tuple(isr))
    else:
        assert result is None


@settings(max_examples=100)
@given(partitions(), st.sets(st.sampled_from(BROKERS)))
def test_controlled_shutdown_moves_leadership_off_shutting_down_brokers(p, shutting_down):
    assignment, isr, live = p
    result = elect_for_controlled_shutdown(assignment, isr, live, shutting_down)
    eligible = [r for r in assignment if r in live and r in isr and r not in shutting_down]
    if not eligible:
        assert result is None
        return
    assert result.leader == eligible[0]
    assert not set(result.isr) & shutting_down
    assert result.leader in result.isr and set(result.isr) <= set(isr)


@settings(max_examples=100)
@given(partitions(), st.lists(st.sampled_from(BROKERS), min_size=1, max_size=4, unique=True))
def test_reassignment_election_picks_from_target(p, target):
    _, isr, live = p
    result = elect_for_reassigned_partition(target, isr, live)
    eligible = [r for r in target if r in live and r in isr]
    assert (result is None) == (not eligible)
    if result is not None:
        assert result.leader == eligible[0] and result.isr == tuple(isr)


@given(partitions())
def test_new_partition_election(p):
    assignment, _, live = p
    result = elect_for_new_partition(assignment, live)
    live_assigned = tuple(r for r in assignment if r in live)
    if not live_assigned:
        assert result is None
    else:
        assert result == ElectionResult(live_assigned[0], live_assigned)


@given(partitions(), st.integers(0, 1000), st.sampled_from(BROKERS), st.booleans())
def test_remove_replica_from_isr(p, epoch, replica, fence):
    """The epoch goes up when the leader goes, or to fence a live broker's
    replica; a dead broker's follower leaves at the same epoch."""
    assignment, isr, _ = p
    if not isr:
        return
    leader = isr[0]
    current = LeaderAndIsr(leader, epoch, tuple(isr), zk_version=5)
    after = remove_replica_from_isr(current, replica, fence=fence)
    if replica not in isr:
        assert after == current
        return
    assert after.leader_epoch == (epoch + 1 if fence or replica == leader else epoch) and after.zk_version == 5
    assert after.isr, "the ISR keeps its last member"
    if len(isr) > 1:
        assert replica not in after.isr and set(after.isr) == set(isr) - {replica}
    assert after.leader == (NO_LEADER if replica == leader else leader)


def test_apply_election_bumps_epoch_and_handles_no_leader():
    current = LeaderAndIsr(1, 7, (1, 2, 3), zk_version=3)
    assert apply_election(current, ElectionResult(2, (2, 3))) == LeaderAndIsr(2, 8, (2, 3), 3)
    assert apply_election(current, None) == LeaderAndIsr(NO_LEADER, 8, (1, 2, 3), 3)


def test_seed_broker_failover_cases():
    # seed 000 §Broker failover 3.2: a surviving ISR member leads, ISR = survivors
    assert elect_for_offline_partition([1, 2, 3], [1, 2, 3], {2, 3}, False) == ElectionResult(2, (2, 3))
    # no ISR member survives: unclean picks any survivor (possible loss), else none
    assert elect_for_offline_partition([1, 2, 3], [1], {3}, True) == ElectionResult(3, (3,), unclean=True)
    assert elect_for_offline_partition([1, 2, 3], [1], {3}, False) is None
    # every replica dead: no leader (-1)
    assert elect_for_offline_partition([1, 2, 3], [1, 2, 3], set(), True) is None


def test_seed_preferred_election_case():
    # seed 000 §Preferred Replica 原理 3: not in ISR -> not made leader
    assert elect_preferred_replica([1, 2, 3], [2, 3], {1, 2, 3}) is None
    assert elect_preferred_replica([1, 2, 3], [2, 3, 1], {1, 2, 3}) == ElectionResult(1, (2, 3, 1))
