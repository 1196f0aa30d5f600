"""The server-side assignors of consumer-protocol groups (KIP-848):
``uniform`` and ``range``."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kavka.group.consumer_assignors import MemberSubscription, RangeAssignor, UniformAssignor, assignor_named

T = [uuid.UUID(int=i + 1) for i in range(4)]


def flat(assignment):
    return {(t, p) for t, ps in assignment.items() for p in ps}


def loads(result):
    return {m: len(flat(a)) for m, a in result.items()}


# members -> (subscribed topic indexes, previous assignment as (topic index, partition) pairs)
members_st = st.dictionaries(
    st.sampled_from([f"m{i}" for i in range(8)]),
    st.tuples(st.sets(st.integers(0, 3), min_size=1), st.sets(st.tuples(st.integers(0, 3), st.integers(0, 12)))),
    max_size=8)
partitions_st = st.dictionaries(st.integers(0, 3), st.integers(0, 12), max_size=4)


def build(members, counts):
    subs = {}
    for m, (topics, prev) in members.items():
        previous: dict[uuid.UUID, set[int]] = {}
        for ti, p in prev:
            previous.setdefault(T[ti], set()).add(p)
        subs[m] = MemberSubscription(frozenset(T[i] for i in topics),
                                     {t: frozenset(ps) for t, ps in previous.items()})
    return subs, {T[i]: n for i, n in counts.items()}


@pytest.mark.parametrize("assignor", [UniformAssignor(), RangeAssignor()], ids=lambda a: a.name)
@settings(max_examples=150, deadline=None)
@given(members=members_st, counts=partitions_st)
def test_every_subscribed_partition_goes_to_exactly_one_subscriber(assignor, members, counts):
    subs, partitions = build(members, counts)
    result = assignor.assign(subs, partitions)
    assert set(result) == set(subs)
    seen: dict[tuple[uuid.UUID, int], str] = {}
    for m, a in result.items():
        for t, p in flat(a):
            assert t in subs[m].topics, "a member got a topic it did not subscribe to"
            assert 0 <= p < partitions[t]
            assert (t, p) not in seen, "a partition assigned twice"
            seen[(t, p)] = m
    expected = {(t, p) for t, n in partitions.items() for p in range(n)
                if any(t in s.topics for s in subs.values())}
    assert set(seen) == expected


@settings(max_examples=150, deadline=None)
@given(names=st.sets(st.sampled_from([f"m{i}" for i in range(8)]), min_size=1),
       counts=st.dictionaries(st.integers(0, 3), st.integers(0, 30), min_size=1, max_size=4),
       prev=st.sets(st.tuples(st.integers(0, 7), st.integers(0, 3), st.integers(0, 30))))
def test_uniform_is_balanced_when_subscriptions_are_identical(names, counts, prev):
    ordered = sorted(names)
    members = {m: (set(counts), {(ti, p) for (mi, ti, p) in prev if mi < len(ordered) and ordered[mi] == m})
               for m in ordered}
    subs, partitions = build(members, counts)
    load = loads(UniformAssignor().assign(subs, partitions))
    assert max(load.values()) - min(load.values()) <= 1


def test_uniform_is_sticky_when_a_member_joins():
    topic = {T[0]: 6}
    first = UniformAssignor().assign({"a": MemberSubscription(frozenset(topic)),
                                      "b": MemberSubscription(frozenset(topic))}, topic)
    second = UniformAssignor().assign({m: MemberSubscription(frozenset(topic), first.get(m, {}))
                                       for m in ("a", "b", "c")}, topic)
    assert loads(second) == {"a": 2, "b": 2, "c": 2}
    # a and b only give up partitions; none moves between them
    assert flat(second["a"]) <= flat(first["a"])
    assert flat(second["b"]) <= flat(first["b"])


def test_uniform_keeps_a_stable_assignment():
    topic = {T[0]: 7, T[1]: 3}
    subs = {m: MemberSubscription(frozenset(topic)) for m in ("a", "b", "c")}
    first = UniformAssignor().assign(subs, topic)
    again = UniformAssignor().assign({m: MemberSubscription(frozenset(topic), first[m]) for m in subs}, topic)
    assert again == first


def test_range_gives_contiguous_ranges_and_copartitions():
    counts = {T[0]: 5, T[1]: 5}
    subs = {m: MemberSubscription(frozenset(counts)) for m in ("b", "a")}
    result = RangeAssignor().assign(subs, counts)
    assert result["a"] == {T[0]: frozenset({0, 1, 2}), T[1]: frozenset({0, 1, 2})}
    assert result["b"] == {T[0]: frozenset({3, 4}), T[1]: frozenset({3, 4})}


def test_assignor_named():
    assert assignor_named("uniform").name == "uniform"
    assert assignor_named("range").name == "range"
    with pytest.raises(KeyError, match="known: \\['range', 'uniform'\\]"):
        assignor_named("sticky")
