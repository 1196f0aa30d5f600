"""The consumer-protocol group state machine (KIP-848): epochs, joins and
leaves, static members, fencing, and reconciliation (revocation before
assignment, no partition owned twice), including a hypothesis simulation
of clients that apply each heartbeat response as a consumer does."""

from __future__ import annotations

import itertools
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kavka.common.errors import ErrorCode
from kavka.group.consumer_group import (
    ConsumerGroup,
    ConsumerGroupState,
    HeartbeatRequest,
    TopicMetadata,
)
from kavka.group.reconciliation import MemberAssignmentState, MemberState, next_assignment

FOO = TopicMetadata(uuid.UUID(int=1), 4)
BAR = TopicMetadata(uuid.UUID(int=2), 3)
TOPICS = {"foo": FOO, "bar": BAR}


def group(**kw) -> ConsumerGroup:
    ids = (f"gen-{i}" for i in itertools.count())
    return ConsumerGroup("g", kw.pop("assignors", ["uniform", "range"]), kw.pop("max_size", 100),
                         lambda: next(ids))


def join(g, member_id="", topics=("foo",), **kw):
    return g.heartbeat(HeartbeatRequest(member_id, 0, rebalance_timeout_ms=30000,
                                        subscribed_topic_names=tuple(topics), owned={}, **kw), TOPICS)


def beat(g, member_id, epoch, owned, topics=None):
    return g.heartbeat(HeartbeatRequest(member_id, epoch, owned=owned, subscribed_topic_names=topics), TOPICS)


def flat(a):
    return {(t, p) for t, ps in a.items() for p in ps}


def test_first_member_joins_and_gets_everything_at_epoch_1():
    g = group()
    out = join(g)
    assert out.error is ErrorCode.NONE
    assert out.member_id == "gen-0"  # v0: the coordinator names it
    assert out.member_epoch == 1 and g.group_epoch == 1 and g.target_epoch == 1
    assert out.assignment == {FOO.topic_id: frozenset(range(4))}
    assert g.state is ConsumerGroupState.STABLE


def test_member_chosen_id_is_kept():
    # ConsumerGroupHeartbeat v1 (KIP-1082): the consumer names itself
    out = join(group(), "my-own-id")
    assert out.member_id == "my-own-id"


def test_second_member_waits_for_revocation_before_getting_partitions():
    g = group()
    a = join(g, "a")
    b = join(g, "b")
    assert b.error is ErrorCode.NONE and b.member_epoch == 2
    assert b.assignment == {}  # everything still held by a
    assert g.state is ConsumerGroupState.RECONCILING
    # a still owns everything: it is told to keep only its target, at its epoch
    ra = beat(g, "a", a.member_epoch, a.assignment)
    assert ra.member_epoch == 1
    assert len(flat(ra.assignment)) == 2
    assert g.members["a"].assignment.state is MemberState.UNREVOKED_PARTITIONS
    # b cannot have them yet
    assert beat(g, "b", 2, {}).assignment is None
    # a reports the revocation done: it moves to epoch 2
    ra2 = beat(g, "a", 1, ra.assignment)
    assert ra2.member_epoch == 2 and ra2.assignment is None
    rb = beat(g, "b", 2, {})
    assert len(flat(rb.assignment)) == 2
    assert not flat(rb.assignment) & flat(ra.assignment)
    assert g.state is ConsumerGroupState.STABLE


def test_leave_gives_the_partitions_to_the_rest():
    g = group()
    a = join(g, "a")
    b = join(g, "b")
    ra = beat(g, "a", 1, a.assignment)
    beat(g, "a", 1, ra.assignment)
    beat(g, "b", 2, {})
    out = g.heartbeat(HeartbeatRequest("b", -1), TOPICS)
    assert out.error is ErrorCode.NONE and out.member_epoch == -1
    assert "b" not in g.members
    back = beat(g, "a", 2, ra.assignment)
    assert back.member_epoch == g.group_epoch
    assert back.assignment == {FOO.topic_id: frozenset(range(4))}
    assert b.member_id == "b"


def test_unknown_member_and_fencing():
    g = group()
    a = join(g, "a")
    assert beat(g, "nobody", 1, {}).error is ErrorCode.UNKNOWN_MEMBER_ID
    assert beat(g, "a", 5, {}).error is ErrorCode.FENCED_MEMBER_EPOCH
    # one epoch behind with nothing it lost: the member missed a response
    join(g, "b")
    ra = beat(g, "a", 1, a.assignment)
    beat(g, "a", 1, ra.assignment)
    assert g.members["a"].member_epoch == 2
    assert beat(g, "a", 1, ra.assignment).error is ErrorCode.NONE
    # behind and still owning what it lost: fenced
    assert beat(g, "a", 1, a.assignment).error is ErrorCode.FENCED_MEMBER_EPOCH
    assert g.remove_member("a", TOPICS)
    assert beat(g, "a", 2, {}).error is ErrorCode.UNKNOWN_MEMBER_ID
    assert not g.remove_member("a", TOPICS)


def test_invalid_requests():
    g = group()
    assert g.heartbeat(HeartbeatRequest("", 0, subscribed_topic_names=("foo",)), TOPICS).error \
        is ErrorCode.INVALID_REQUEST  # no rebalance timeout
    assert g.heartbeat(HeartbeatRequest("", 0, rebalance_timeout_ms=1), TOPICS).error is ErrorCode.INVALID_REQUEST
    assert g.heartbeat(HeartbeatRequest("", 3), TOPICS).error is ErrorCode.INVALID_REQUEST
    assert g.heartbeat(HeartbeatRequest("x", -3), TOPICS).error is ErrorCode.INVALID_REQUEST
    assert g.heartbeat(HeartbeatRequest("x", -2), TOPICS).error is ErrorCode.INVALID_REQUEST
    assert join(g, server_assignor="sticky").error is ErrorCode.UNSUPPORTED_ASSIGNOR
    assert not g.members


def test_group_max_size():
    g = group(max_size=1)
    join(g, "a")
    assert join(g, "b").error is ErrorCode.GROUP_MAX_SIZE_REACHED


def test_preferred_assignor_is_used():
    g = group()
    out = join(g, "a", topics=("foo", "bar"), server_assignor="range")
    assert g.assignor_name() == "range"
    assert flat(out.assignment) == {(FOO.topic_id, p) for p in range(4)} | {(BAR.topic_id, p) for p in range(3)}
    assert group().assignor_name() == "uniform"
    with pytest.raises(ValueError, match="group.consumer.assignors"):
        ConsumerGroup("g", ["cooperative-sticky"], 10)


def test_static_member_leaves_and_is_replaced():
    g = group()
    a = join(g, "a", instance_id="i1")
    epoch = g.group_epoch
    out = g.heartbeat(HeartbeatRequest("a", -2, instance_id="i1"), TOPICS)
    assert out.error is ErrorCode.NONE and out.member_epoch == -2
    assert g.group_epoch == epoch  # the partitions stay reserved: no rebalance
    # the instance id is not free while the member is active
    c = join(g, "c", instance_id="i2")
    assert join(g, "d", instance_id="i2").error is ErrorCode.UNRELEASED_INSTANCE_ID
    # a new member with the same instance id takes over a's assignment
    r = join(g, "a2", instance_id="i1")
    assert r.error is ErrorCode.NONE
    assert "a" not in g.members
    assert flat(r.assignment) <= flat(a.assignment)
    assert c.member_id == "c"


def test_subscription_change_bumps_the_group_epoch():
    g = group()
    a = join(g, "a")
    out = beat(g, "a", a.member_epoch, a.assignment, topics=("foo", "bar"))
    assert out.member_epoch == 2
    assert flat(out.assignment) == flat(a.assignment) | {(BAR.topic_id, p) for p in range(3)}


def test_reconciliation_with_null_owned_assumes_still_owned():
    t = uuid.UUID(int=9)
    cur = MemberAssignmentState(MemberState.STABLE, 1, {t: frozenset({0, 1})}, {})
    nxt = next_assignment(cur, 2, {t: frozenset({0})}, None, lambda *_: False)
    assert nxt.state is MemberState.UNREVOKED_PARTITIONS and nxt.member_epoch == 1
    assert nxt.pending_revocation == {t: frozenset({1})}
    done = next_assignment(nxt, 2, {t: frozenset({0})}, {t: frozenset({0})}, lambda *_: False)
    assert done == MemberAssignmentState(MemberState.STABLE, 2, {t: frozenset({0})}, {})


def test_reconciliation_withholds_partitions_held_by_others():
    t = uuid.UUID(int=9)
    cur = MemberAssignmentState(MemberState.STABLE, 1, {}, {})
    nxt = next_assignment(cur, 2, {t: frozenset({0, 1})}, {}, lambda _t, p: p == 1)
    assert nxt == MemberAssignmentState(MemberState.UNRELEASED_PARTITIONS, 2, {t: frozenset({0})}, {})
    later = next_assignment(nxt, 2, {t: frozenset({0, 1})}, {t: frozenset({0})}, lambda *_: False)
    assert later == MemberAssignmentState(MemberState.STABLE, 2, {t: frozenset({0, 1})}, {})


# -- simulation: consumers that apply each response, random joins/leaves/fencing ------------------

ops_st = st.lists(st.tuples(st.sampled_from(["join", "leave", "fence", "beat", "beat", "beat", "sub"]),
                            st.integers(0, 5), st.sampled_from([("foo",), ("bar",), ("foo", "bar")])),
                  max_size=60)


@settings(max_examples=150, deadline=None)
@given(ops=ops_st, assignor=st.sampled_from(["uniform", "range"]))
def test_simulated_consumers_never_share_a_partition_and_converge(ops, assignor):
    g = ConsumerGroup("g", [assignor], 100)
    clients: dict[str, tuple[int, dict]] = {}  # member id -> (epoch, owned)

    def check_disjoint():
        seen = set()
        for _, owned in clients.values():
            parts = flat(owned)
            assert not parts & seen, "a partition owned by two consumers"
            seen |= parts

    def heartbeat(mid, topics=None):
        epoch, owned = clients[mid]
        out = beat(g, mid, epoch, owned, topics)
        if out.error is not ErrorCode.NONE:
            # fenced or unknown: the consumer drops everything (as librdkafka does)
            del clients[mid]
            return
        clients[mid] = (out.member_epoch, dict(out.assignment) if out.assignment is not None else owned)

    for op, i, topics in ops:
        mid = f"m{i}"
        if op == "join" and mid not in clients:
            out = join(g, mid, topics)
            assert out.error is ErrorCode.NONE
            clients[mid] = (out.member_epoch, dict(out.assignment))
        elif mid in clients:
            if op == "leave":
                assert g.heartbeat(HeartbeatRequest(mid, -1), TOPICS).error is ErrorCode.NONE
                del clients[mid]
            elif op == "fence":
                assert g.remove_member(mid, TOPICS)
                del clients[mid]
            elif op == "sub":
                heartbeat(mid, topics)
            else:
                heartbeat(mid)
        check_disjoint()
    for _ in range(4):
        for mid in sorted(clients):
            heartbeat(mid)
            check_disjoint()
    assert set(clients) == set(g.members)
    if clients:
        assert g.state is ConsumerGroupState.STABLE
    for mid, (epoch, owned) in clients.items():
        assert epoch == g.target_epoch
        assert owned == g.target[mid]
    # every subscribed partition is owned once the group is stable
    subscribed = {n for m in g.members.values() for n in m.subscribed_topic_names}
    expected = {(TOPICS[n].topic_id, p) for n in subscribed for p in range(TOPICS[n].partitions)}
    assert set().union(*(flat(o) for _, o in clients.values())) == expected if clients else True


def test_a_regex_subscription_matches_whole_names_and_never_internal_topics():
    g = group()
    topics = {**TOPICS, "foo-2": TopicMetadata(uuid.UUID(int=3), 2),
              "__consumer_offsets": TopicMetadata(uuid.UUID(int=4), 50)}
    out = g.heartbeat(HeartbeatRequest("", 0, rebalance_timeout_ms=30000, subscribed_topic_names=(),
                                       subscribed_topic_regex="foo.*|__.*", owned={}), topics)
    assert out.error is ErrorCode.NONE
    assert set(out.assignment) == {FOO.topic_id, uuid.UUID(int=3)}
    bad = g.heartbeat(HeartbeatRequest("", 0, rebalance_timeout_ms=30000, subscribed_topic_names=(),
                                       subscribed_topic_regex="foo(", owned={}), topics)
    assert bad.error is ErrorCode.INVALID_REGULAR_EXPRESSION and "foo(" in bad.message


def test_a_catastrophic_backtracking_regex_is_matched_in_linear_time():
    # With a backtracking engine this pattern against a long topic name runs
    # for longer than the test's timeout; RE2 answers at once.
    g = group()
    long_name = "a" * 200 + "!"
    topics = {long_name: TopicMetadata(uuid.UUID(int=5), 1)}
    out = g.heartbeat(HeartbeatRequest("", 0, rebalance_timeout_ms=30000, subscribed_topic_names=(),
                                       subscribed_topic_regex="(a+)+$", owned={}), topics)
    assert out.error is ErrorCode.NONE and out.assignment == {}


def _regex_beat(g, member_id, epoch, regex, topics, describable=lambda names: names, owned=None):
    return g.heartbeat(HeartbeatRequest(member_id, epoch, rebalance_timeout_ms=30000,
                                        subscribed_topic_names=() if epoch == 0 else None,
                                        subscribed_topic_regex=regex, owned={} if owned is None else owned),
                       topics, describable)


def test_a_regex_resolves_only_to_topics_the_member_may_describe():
    # KAFKA-18813: the regex's topics are filtered with the heartbeating member's rights
    topics = {**TOPICS, "foo-secret": TopicMetadata(uuid.UUID(int=3), 2)}
    g = group()
    seen: list[set[str]] = []

    def no_secrets(names: set[str]) -> set[str]:
        seen.append(set(names))
        return {n for n in names if "secret" not in n}

    out = _regex_beat(g, "a", 0, "foo.*", topics, no_secrets)
    assert out.error is ErrorCode.NONE and set(out.assignment) == {FOO.topic_id}
    assert seen == [{"foo", "foo-secret"}]  # asked about the matches only
    assert g.resolved_regexes == {"foo.*": frozenset({"foo"})}
    # rights granted later: the member's next heartbeat resolves the regex again
    out = _regex_beat(g, "a", out.member_epoch, None, topics, owned=out.assignment)
    assert g.resolved_regexes["foo.*"] == {"foo", "foo-secret"}
    assert set(g.target["a"]) == {FOO.topic_id, uuid.UUID(int=3)}


def test_a_new_topic_is_seen_at_the_next_heartbeat_of_a_regex_member():
    g = group()
    first = _regex_beat(g, "a", 0, "foo.*", TOPICS)
    grown = {**TOPICS, "foo-2": TopicMetadata(uuid.UUID(int=3), 2)}
    _regex_beat(g, "a", first.member_epoch, None, grown, owned=first.assignment)
    assert set(g.target["a"]) == {FOO.topic_id, uuid.UUID(int=3)}


def test_an_unresolved_regex_keeps_the_members_assignment():
    # A group loaded from __consumer_offsets knows each member's regex but has
    # not resolved it: until the member's next heartbeat it counts the topics
    # it holds, so another member's heartbeat does not take them away.
    g = group()
    a = _regex_beat(g, "a", 0, "foo.*", TOPICS)
    a = _regex_beat(g, "a", a.member_epoch, None, TOPICS, owned=a.assignment)
    g.resolved_regexes.clear()  # as after a reload
    b = join(g, "b", topics=("bar",))
    assert b.error is ErrorCode.NONE
    assert set(g.target["a"]) == {FOO.topic_id} and set(g.target["b"]) == {BAR.topic_id}
