"""The controller's side of ``state-change.log`` (seed 000 §State Change Log
Merge Tool): one line per partition or replica state change and per
request sent, on the ``kavka.state.change`` logger, which the broker
routes to ``state-change.log`` in its log directory.

Line format (after the logging handler's timestamp)::

    [Controller id=1 epoch=3] Partition t-0 state changed from NewPartition to OnlinePartition with leader 1, leader epoch 0, isr [1, 2]
    [Controller id=1 epoch=3] Replica 2 of partition t-0 state changed from OnlineReplica to OfflineReplica
    [Controller id=1 epoch=3] Sending LeaderAndIsr to broker 2 for 1 partitions (1 become-leader, 0 become-follower)
    [Controller id=1 epoch=3] Sending LeaderAndIsr to broker 2 for partition t-0: leader 1, leader epoch 0, isr [1, 2], replicas [1, 2]

Replica state changes, partitions going offline or away, and the last
form (one line per partition of a request sent) are written at DEBUG, as
Kafka writes them at TRACE; one line per request at INFO says how many.
Every line starts with ``[Controller id=<id> epoch=<epoch>]`` and names the
partition as ``<topic>-<partition>``, so the merge tool can filter by topic,
partition and time. Any thread (logging is thread-safe).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from kavka.common.leader_and_isr import LeaderAndIsr
from kavka.common.topic_partition import TopicPartition
from kavka.controller.context import PartitionReplica
from kavka.controller.partition_state import PartitionState
from kavka.controller.replica_state import ReplicaState

STATE_CHANGE_LOGGER = "kavka.state.change"
_QUIET_PARTITION_STATES = (PartitionState.OFFLINE, PartitionState.NON_EXISTENT)


class StateChangeLogger:
    """Formats the controller's state-change lines (see module doc)."""

    def __init__(self, controller_id: int, logger: logging.Logger | None = None) -> None:
        self.controller_id = controller_id
        self.epoch = 0
        self._log = logger or logging.getLogger(STATE_CHANGE_LOGGER)

    @property
    def enabled(self) -> bool:
        """Whether INFO lines are written (callers skip formatting details otherwise)."""
        return self._log.isEnabledFor(logging.INFO)

    @property
    def sending_enabled(self) -> bool:
        """Whether the per-partition lines of a request sent are written
        (DEBUG, Kafka's TRACE: callers skip formatting them otherwise)."""
        return self._log.isEnabledFor(logging.DEBUG)

    def _prefix(self) -> str:
        return f"[Controller id={self.controller_id} epoch={self.epoch}]"

    def partition_change(self, tp: TopicPartition, old: PartitionState, new: PartitionState, lai: LeaderAndIsr | None = None) -> None:
        # Kafka's PartitionStateMachine writes a partition going offline or
        # away at TRACE (DEBUG here), new and online partitions at INFO.
        level = logging.DEBUG if new in _QUIET_PARTITION_STATES else logging.INFO
        if not self._log.isEnabledFor(level):
            return
        tail = f" with leader {lai.leader}, leader epoch {lai.leader_epoch}, isr {list(lai.isr)}" if lai is not None else ""
        self._log.log(level, "%s Partition %s state changed from %s to %s%s", self._prefix(), tp, old.value, new.value, tail)

    def replica_change(self, replica: PartitionReplica, old: ReplicaState, new: ReplicaState) -> None:
        # DEBUG: Kafka's ReplicaStateMachine writes these at TRACE; a broker
        # failure at 10,000 partitions of RF 3 changes 10,000 replicas.
        if self._log.isEnabledFor(logging.DEBUG):
            self._log.debug("%s Replica %d of partition %s state changed from %s to %s", self._prefix(), replica.replica,
                            replica.tp, old.value, new.value)

    def leader_and_isr_written(self, tp: TopicPartition, lai: LeaderAndIsr, why: str) -> None:
        self._log.info(
            "%s Partition %s leader and isr written (%s): leader %d, leader epoch %d, isr %s, zk version %d",
            self._prefix(), tp, why, lai.leader, lai.leader_epoch, list(lai.isr), lai.zk_version,
        )

    def unclean_election(self, tp: TopicPartition, leader: int, isr: Sequence[int]) -> None:
        # Loud on purpose: committed messages may be lost (seed 000 §如何处理所有 Replica 都不工作).
        self._log.warning(
            "%s Partition %s: UNCLEAN leader election chose broker %d, which was not in the isr %s; committed messages may be lost",
            self._prefix(), tp, leader, list(isr),
        )

    def election_failed(self, tp: TopicPartition, why: str) -> None:
        self._log.error("%s Partition %s: no leader elected: %s", self._prefix(), tp, why)

    def illegal_transition(self, message: str) -> None:
        self._log.error("%s %s", self._prefix(), message)

    def sending(self, api: str, broker_id: int, tp: TopicPartition, detail: str) -> None:
        # DEBUG: Kafka's ControllerBrokerRequestBatch writes these at TRACE and
        # one line per request at INFO (``sent``); at 10,000 partitions a
        # broker failure's 20,000 lines cost the controller's loop a second.
        self._log.debug("%s Sending %s to broker %d for partition %s: %s", self._prefix(), api, broker_id, tp, detail)

    def sent(self, api: str, broker_id: int, partitions: int, detail: str) -> None:
        self._log.info("%s Sending %s to broker %d for %d partitions%s", self._prefix(), api, broker_id, partitions, detail)

    def already_held(self, api: str, broker_id: int, partitions: int) -> None:
        """The partitions a broker answered STALE_CONTROLLER_EPOCH: it
        holds their leader epoch or a newer one (the broker logs which), as
        every broker that lived through a controller failover holds most of
        the full state the new controller sends (seed 000
        §LeaderAndIsrRequest 2.2). Expected, and thousands at a time: one
        line, where Kafka's controller logs none."""
        self._log.info("%s %s response from broker %d: it holds the same or a newer leader epoch for %d partitions",
                       self._prefix(), api, broker_id, partitions)

    def response_error(self, api: str, broker_id: int, tp: TopicPartition, error: str) -> None:
        # STALE_CONTROLLER_EPOCH: the broker has a newer state than this
        # request's (LeaderAndIsr's are counted by ``already_held``), expected
        # after a controller change, not a fault.
        level = logging.INFO if error == "STALE_CONTROLLER_EPOCH" else logging.ERROR
        self._log.log(level, "%s %s response from broker %d for partition %s: error %s",
                      self._prefix(), api, broker_id, tp, error)
