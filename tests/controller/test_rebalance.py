"""``rebalance``: which partitions the automatic leader rebalance hands back
to their preferred replica (seed 000 §Preferred Replica, last paragraph),
as a property over random clusters, plus a worked example."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kavka.common.leader_and_isr import LeaderAndIsr
from kavka.common.listeners import EndPoint
from kavka.common.topic_partition import TopicPartition
from kavka.controller.context import ControllerContext, ReplicaAssignment
from kavka.controller.rebalance import leader_imbalance, partitions_to_rebalance
from kavka.zk.brokers import BrokerIdZNode

BROKERS = (1, 2, 3, 4)


def _context(parts, live, shutting_down, deleting) -> ControllerContext:
    ctx = ControllerContext(epoch=1)
    for b in live:
        ctx.live_brokers[b] = BrokerIdZNode(b, (EndPoint("PLAINTEXT", "127.0.0.1", 9000 + b, "PLAINTEXT"),))
    ctx.shutting_down = set(shutting_down) & set(live)
    ctx.topics_to_delete = set(deleting)
    for i, (topic, replicas, leader_index, reassigning) in enumerate(parts):
        tp = TopicPartition(topic, i)
        extra = tuple(b for b in BROKERS if b not in replicas)[:1] if reassigning else ()
        assignment = ReplicaAssignment.for_reassignment(replicas, replicas[1:] + extra) if reassigning and extra else ReplicaAssignment(replicas)
        ctx.update_assignment(tp, assignment)
        leader = replicas[leader_index % len(replicas)]
        ctx.put_leadership(tp, LeaderAndIsr(leader, 0, replicas))
    return ctx


_replicas = st.permutations(BROKERS).flatmap(lambda p: st.integers(1, 3).map(lambda n: tuple(p[:n])))
_parts = st.lists(st.tuples(st.sampled_from(["a", "b"]), _replicas, st.integers(0, 2), st.booleans()), max_size=30)


@settings(max_examples=150)
@given(_parts, st.sets(st.sampled_from(BROKERS)), st.sets(st.sampled_from(BROKERS)), st.sets(st.sampled_from(["a", "b"])), st.integers(0, 100))
def test_exactly_the_eligible_partitions_of_imbalanced_brokers(parts, live, shutting_down, deleting, pct) -> None:
    ctx = _context(parts, live, shutting_down, deleting)
    chosen = partitions_to_rebalance(ctx, pct)
    imbalance = leader_imbalance(ctx)
    expected = []
    for tp in ctx.all_partitions():
        a, lai = ctx.assignment(tp), ctx.leader_and_isr(tp)
        preferred = a.replicas[0]
        if tp.topic in deleting or a.is_being_reassigned or lai.leader == preferred:
            continue
        if preferred not in ctx.live_broker_ids:
            continue
        if imbalance[preferred].ratio > pct / 100:
            expected.append(tp)
    assert chosen == sorted(expected)
    for imb in imbalance.values():
        assert 0.0 <= imb.ratio <= 1.0
        assert set(imb.led_elsewhere) <= set(imb.preferred)


def test_worked_example_one_broker_over_the_threshold() -> None:
    # Broker 1 prefers 4 partitions and leads 2 (50% elsewhere); broker 2 prefers 2 and leads both.
    parts = [("a", (1, 2), 1, False), ("a", (1, 2), 1, False), ("a", (1, 3), 0, False), ("a", (1, 3), 0, False),
             ("a", (2, 1), 0, False), ("a", (2, 3), 0, False)]
    ctx = _context(parts, {1, 2, 3}, set(), set())
    assert leader_imbalance(ctx)[1].ratio == 0.5
    assert partitions_to_rebalance(ctx, 10) == [TopicPartition("a", 0), TopicPartition("a", 1)]
    assert partitions_to_rebalance(ctx, 50) == []  # not above the percentage
    ctx.shutting_down.add(1)
    assert partitions_to_rebalance(ctx, 10) == []  # never towards a broker shutting down
