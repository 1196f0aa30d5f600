"""The controller's side of a controlled shutdown (ControlledShutdown, API 7;
Kafka's KafkaController.doControlledShutdown): leadership moves off a
broker BEFORE it stops, so clients see a planned handover instead of a
failure (seed 003 §Broker Failover: a leader that merely disappears costs
the session timeout plus an election).

For broker ``b`` (it must be live; a request carrying any broker epoch
but its current registration's gets STALE_BROKER_EPOCH, KIP-380):

1. ``b`` joins ``shutting_down``: no election picks it from now on
   (``ControllerContext.live_broker_ids`` excludes it);
2. every partition with more than one replica that ``b`` leads gets a new
   leader from its ISR by ``elect_for_controlled_shutdown`` — the first
   assigned replica alive, in the ISR and not shutting down — with ``b``
   out of the ISR; LeaderAndIsr to the replicas (``b`` included: it becomes
   a follower), UpdateMetadata to all;
3. every partition with more than one replica that ``b`` follows: its
   replica goes OFFLINE — StopReplica (delete=false) to ``b``, and ``b``
   leaves the ISR by a conditional write, LeaderAndIsr to the leader;
4. the answer lists the partitions ``b`` still leads (no other ISR member
   could take over); the broker retries, then shuts down anyway.

Partitions with a single replica cannot move and are not reported. Runs on
the controller's event task.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from kavka.common.errors import ErrorCode
from kavka.common.ids import NO_EPOCH, BrokerId
from kavka.common.leader_and_isr import LeaderAndIsr
from kavka.common.topic_partition import TopicPartition
from kavka.controller.context import ControllerContext, PartitionReplica
from kavka.controller.election import ElectionResult, elect_for_controlled_shutdown
from kavka.controller.partition_state import PartitionState
from kavka.controller.partition_state_machine import PartitionStateMachine
from kavka.controller.replica_state import ReplicaState
from kavka.controller.replica_state_machine import ReplicaStateMachine
from kavka.controller.topic_deletion import TopicDeletionManager

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ControlledShutdownResult:
    """The answer: ``error`` NONE, or why the request was refused;
    ``remaining``: partitions the broker still leads."""

    error: ErrorCode
    remaining: tuple[TopicPartition, ...] = ()
    message: str | None = None


async def on_controlled_shutdown(
    ctx: ControllerContext,
    partitions: PartitionStateMachine,
    replicas: ReplicaStateMachine,
    deletion: TopicDeletionManager,
    broker_id: BrokerId,
    broker_epoch: int,
) -> ControlledShutdownResult:
    if broker_id not in ctx.live_brokers:
        return ControlledShutdownResult(ErrorCode.BROKER_NOT_AVAILABLE, (), f"broker {broker_id} is not registered")
    known_epoch = ctx.broker_epochs.get(broker_id, -1)
    # KIP-380, strictly: only the broker's current registration may drain it
    # (Kafka also accepts a newer epoch, which any client could make up).
    # NO_EPOCH reaches here only from a connection authenticated as that
    # broker (the handler refuses it otherwise); a broker that re-registered
    # a moment ago retries until this controller has seen its new epoch.
    if broker_epoch != NO_EPOCH and broker_epoch != known_epoch:
        return ControlledShutdownResult(
            ErrorCode.STALE_BROKER_EPOCH, (), f"broker epoch {broker_epoch} is not the registration's {known_epoch}"
        )
    ctx.shutting_down.add(broker_id)
    movable = [
        tp
        for tp in ctx.partitions_on_broker(broker_id)
        if len(ctx.partition_replicas(tp)) > 1 and ctx.leader_and_isr(tp) is not None and not deletion.is_queued(tp.topic)
    ]
    led = [tp for tp in movable if ctx.leader_and_isr(tp).leader == broker_id]  # type: ignore[union-attr]
    followed = [tp for tp in movable if ctx.leader_and_isr(tp).leader != broker_id]  # type: ignore[union-attr]
    log.info("controller: controlled shutdown of broker %d: moving %d leaderships, stopping %d followers", broker_id, len(led), len(followed))

    def away_from_shutting_down(tp: TopicPartition, lai: LeaderAndIsr, live: set[BrokerId]) -> ElectionResult | None:
        return elect_for_controlled_shutdown(ctx.partition_replicas(tp), lai.isr, live, ctx.shutting_down)

    if led:
        await partitions.handle_state_changes(led, PartitionState.ONLINE, away_from_shutting_down)
    if followed:
        await replicas.handle_state_changes([PartitionReplica(tp, broker_id) for tp in followed], ReplicaState.OFFLINE)
    remaining = tuple(tp for tp in ctx.partitions_led_by(broker_id) if len(ctx.partition_replicas(tp)) > 1)
    if remaining:
        log.info("controller: broker %d still leads %d partitions (no other in-sync replica): %s", broker_id, len(remaining),
                 ", ".join(map(str, remaining[:10])))
    return ControlledShutdownResult(ErrorCode.NONE, remaining)
