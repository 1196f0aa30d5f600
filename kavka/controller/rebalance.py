"""Automatic preferred-leader rebalance (seed 000 §Preferred Replica, last
paragraph: ``auto.leader.rebalance.enable``, checked every
``leader.imbalance.check.interval.seconds``; a broker whose share of
partitions led elsewhere exceeds ``leader.imbalance.per.broker.percentage``
gets its preferred leaderships back).

Pure functions over a ``ControllerContext``; the controller runs the
preferred replica election (``election.elect_preferred_replica``) on what
``partitions_to_rebalance`` returns. Any thread; no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

from kavka.common.topic_partition import TopicPartition
from kavka.controller.context import ControllerContext


@dataclass(frozen=True, slots=True)
class BrokerImbalance:
    """For one preferred broker: its partitions and those led by someone else."""

    broker_id: int
    preferred: tuple[TopicPartition, ...]
    led_elsewhere: tuple[TopicPartition, ...]

    @property
    def ratio(self) -> float:
        return len(self.led_elsewhere) / len(self.preferred) if self.preferred else 0.0


def leader_imbalance(context: ControllerContext) -> dict[int, BrokerImbalance]:
    """Imbalance per preferred broker, ignoring topics queued for deletion
    and partitions with no known leadership."""
    by_broker: dict[int, list[TopicPartition]] = {}
    elsewhere: dict[int, list[TopicPartition]] = {}
    for tp in context.all_partitions():
        replicas = context.partition_replicas(tp)
        lai = context.leader_and_isr(tp)
        if not replicas or lai is None or tp.topic in context.topics_to_delete:
            continue
        preferred = replicas[0]
        by_broker.setdefault(preferred, []).append(tp)
        if lai.leader != preferred:
            elsewhere.setdefault(preferred, []).append(tp)
    return {b: BrokerImbalance(b, tuple(tps), tuple(elsewhere.get(b, ()))) for b, tps in sorted(by_broker.items())}


def partitions_to_rebalance(context: ControllerContext, imbalance_percentage: int) -> list[TopicPartition]:
    """Partitions to hand back to their preferred replica: those of brokers
    whose imbalance ratio exceeds the percentage, where the preferred broker
    is live and not shutting down and the partition is not being reassigned.
    (The election itself still requires the preferred replica in the ISR.)"""
    out: list[TopicPartition] = []
    live = context.live_broker_ids
    for broker, imbalance in leader_imbalance(context).items():
        if broker not in live or imbalance.ratio <= imbalance_percentage / 100:
            continue
        for tp in imbalance.led_elsewhere:
            assignment = context.assignment(tp)
            if assignment is not None and not assignment.is_being_reassigned:
                out.append(tp)
    return sorted(out)
