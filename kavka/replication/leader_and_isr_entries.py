"""Which entries of a LeaderAndIsr request a broker applies (seed 000
§LeaderAndIsrRequest 响应过程 step 2; seed 002 §6.8 (1)).

An entry is applied when its leader epoch is newer than the replica's,
when it confirms a leader stopped by the loss of its ZooKeeper session
(the same epoch naming this broker leader again), or when it keeps the
leader and its epoch on a newer version of the state znode (the
controller took a dead broker's replica out of the ISR: no new epoch, see
``kavka.controller.election.remove_replica_from_isr``) — and it names
this broker among the assigned replicas. The others get an error each:

- the replica's log directory has failed: KAFKA_STORAGE_ERROR, so that the
  controller learns the replica is offline (KIP-112);
- this broker is not assigned the partition: UNKNOWN_TOPIC_OR_PARTITION;
- the epoch is not newer (nor the same on a newer znode version):
  STALE_CONTROLLER_EPOCH (seed 000 names it StaleLeaderEpochCode; later
  protocol versions fold it in).

Each refusal is a state-change line, except the entries whose epoch the
broker already holds: a new controller re-sends every replica's state, so
a broker that lived through the failover holds thousands of them, and they
are one line for the request.

Pure decision over the request and the hosted partitions; called by
``ReplicaManager.become_leader_or_follower`` on the event loop.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kavka.common.errors import ErrorCode
from kavka.common.topic_partition import TopicPartition
from kavka.replication.state import PartitionState

if TYPE_CHECKING:
    from kavka.replication.partition import Partition

state_change_logger = logging.getLogger("kavka.state.change")


@dataclass(slots=True)
class LeaderAndIsrEntries:
    """The entries to apply and the error code of each refused one."""

    accepted: dict[TopicPartition, PartitionState] = field(default_factory=dict)
    errors: dict[TopicPartition, int] = field(default_factory=dict)


def sort_entries(
    broker_id: int,
    controller_id: int,
    controller_epoch: int,
    states: Iterable[PartitionState],
    hosted: Mapping[TopicPartition, Partition],
    offline: Collection[TopicPartition],
) -> LeaderAndIsrEntries:
    """See the module docstring: ``hosted`` is this broker's partitions,
    ``offline`` those in a failed log directory."""
    out = LeaderAndIsrEntries()
    held: list[TopicPartition] = []
    for state in states:
        tp = state.topic_partition
        if tp in offline:
            state_change_logger.warning(
                "broker %d ignored LeaderAndIsr for %s from controller %d epoch %d: its log directory is offline",
                broker_id, tp, controller_id, controller_epoch,
            )
            out.errors[tp] = int(ErrorCode.KAFKA_STORAGE_ERROR)
            continue
        current = hosted.get(tp)
        local_epoch = current.leader_epoch if current is not None else -1
        # A leader stopped by the loss of its ZooKeeper session leads
        # again once a controller confirms it: after the new session's
        # registration the controller sends every replica's state
        # (seed 000 §Broker 启动过程), unchanged when nobody else was elected.
        confirmed = (current is not None and current.session_fenced and state.leader == broker_id
                     and state.leader_epoch == local_epoch)
        # The same leadership with a newer state znode: the controller took
        # a dead broker's replica out of the ISR without a new epoch
        # (kavka.controller.election.remove_replica_from_isr).
        isr_changed = (current is not None and state.leader_epoch == local_epoch and state.leader == current.leader_id
                       and state.zk_version > current.zk_version)
        if state.leader_epoch > local_epoch or confirmed or isr_changed:
            if broker_id in state.replicas:
                out.accepted[tp] = state
            else:
                state_change_logger.warning(
                    "broker %d ignored LeaderAndIsr for %s from controller %d epoch %d: it is not among the "
                    "assigned replicas %s", broker_id, tp, controller_id, controller_epoch, list(state.replicas),
                )
                out.errors[tp] = int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
            continue
        if state.leader_epoch == local_epoch:
            held.append(tp)
        else:
            state_change_logger.warning(
                "broker %d ignored LeaderAndIsr for %s from controller %d epoch %d: leader epoch %d is older "
                "than the current %d", broker_id, tp, controller_id, controller_epoch, state.leader_epoch, local_epoch,
            )
        out.errors[tp] = int(ErrorCode.STALE_CONTROLLER_EPOCH)
    if held:
        state_change_logger.info(
            "broker %d kept its state of %d partitions from LeaderAndIsr of controller %d epoch %d, whose leader "
            "epochs it already holds (the first: %s)", broker_id, len(held), controller_id, controller_epoch,
            ", ".join(map(str, held[:5])),
        )
    return out
