"""Group state machine, Java's String.hashCode and the partition function,
protocol selection and subscription parsing."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kavka.group.state import (
    GroupMetadata,
    GroupState,
    IllegalGroupTransition,
    MemberMetadata,
    java_string_hashcode,
    parse_subscription_topics,
    partition_for,
)


def member(member_id: str, protocols: list[tuple[str, bytes]], instance: str | None = None) -> MemberMetadata:
    return MemberMetadata(member_id, instance, "client", "/127.0.0.1", 30000, 10000, "consumer", protocols)


@pytest.mark.parametrize("text, expected", [
    ("", 0), ("hello", 99162322), ("polygenelubricants", -(2**31)), ("\U0001F600", 55357 * 31 + 56832)])
def test_java_string_hashcode(text, expected):
    assert java_string_hashcode(text) == expected


def test_partition_for_maps_int_min_to_zero_like_utils_abs():
    assert partition_for("polygenelubricants", 50) == 0
    assert partition_for("hello", 50) == 99162322 % 50


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=30), st.integers(1, 500))
def test_partition_for_is_in_range(group, n):
    assert 0 <= partition_for(group, n) < n


VALID = {(prev, target) for target in GroupState for prev in target.valid_previous}


@pytest.mark.parametrize("prev", list(GroupState))
@pytest.mark.parametrize("target", list(GroupState))
def test_transitions_follow_the_table(prev, target):
    g = GroupMetadata("g", state=prev)
    if (prev, target) in VALID:
        g.transition_to(target, 5)
        assert g.state is target and g.state_timestamp == 5
    else:
        with pytest.raises(IllegalGroupTransition, match=f"{prev.value} -> {target.value}"):
            g.transition_to(target, 5)
        assert g.state is prev


def test_rebalance_cycle_is_allowed():
    g = GroupMetadata("g")
    for s in (GroupState.PREPARING_REBALANCE, GroupState.COMPLETING_REBALANCE, GroupState.STABLE,
              GroupState.PREPARING_REBALANCE, GroupState.EMPTY, GroupState.DEAD):
        g.transition_to(s, 0)


def test_protocol_selection_by_votes_and_support():
    g = GroupMetadata("g")
    g.add_member(member("a", [("range", b""), ("roundrobin", b"")]))
    g.add_member(member("b", [("roundrobin", b""), ("range", b"")]))
    g.add_member(member("c", [("roundrobin", b"")]))
    assert g.candidate_protocols() == {"roundrobin"}
    assert g.select_protocol() == "roundrobin"
    assert g.leader == "a"
    assert not g.supports("consumer", [("sticky", b"")])
    assert not g.supports("connect", [("roundrobin", b"")])
    assert g.supports("consumer", [("roundrobin", b"")])


def test_removing_the_leader_elects_another_and_frees_the_instance_id():
    g = GroupMetadata("g")
    g.add_member(member("a", [("range", b"")], instance="i-a"))
    g.add_member(member("b", [("range", b"")]))
    g.remove_member("a")
    assert g.leader == "b" and "i-a" not in g.static_members


def _subscription(topics: list[str]) -> bytes:
    body = b"".join(struct.pack(">h", len(t.encode())) + t.encode() for t in topics)
    return struct.pack(">hi", 1, len(topics)) + body + b"\xff\xff\xff\xff"


@settings(max_examples=50, deadline=None)
@given(st.lists(st.text(min_size=1, max_size=20), max_size=5))
def test_subscription_topics_round_trip(topics):
    assert parse_subscription_topics(_subscription(topics)) == set(topics)


@pytest.mark.parametrize("raw", [b"", b"\x00\x01", struct.pack(">hi", 1, 5), struct.pack(">hih", 1, 1, 9)])
def test_damaged_subscription_is_none(raw):
    assert parse_subscription_topics(raw) is None
