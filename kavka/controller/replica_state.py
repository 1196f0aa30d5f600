"""The replica state machine's states and transition rules (seed 000 §Broker
启动过程 step 2, §Partition 重新分配 steps 3, 5, 8, 9; Kafka's
ReplicaStateMachine).

- ``NEW``: assigned during a reassignment or creation; may only be a follower.
- ``ONLINE``: started on a live broker (leader or follower).
- ``OFFLINE``: its broker died, or it is being removed (StopReplica without delete).
- ``DELETION_STARTED``: StopReplica with delete sent (topic deletion).
- ``DELETION_SUCCESSFUL``: the broker confirmed the delete.
- ``DELETION_INELIGIBLE``: the delete failed (e.g. broker down); retried later.
- ``NON_EXISTENT``: gone.

``ReplicaStates`` is the controller's table; ``transition`` checks each
move against ``valid_previous_states`` and reports refused ones. Plain
data, used only from the controller's event task.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum

from kavka.controller.context import PartitionReplica


class ReplicaState(Enum):
    NEW = "NewReplica"
    ONLINE = "OnlineReplica"
    OFFLINE = "OfflineReplica"
    DELETION_STARTED = "ReplicaDeletionStarted"
    DELETION_SUCCESSFUL = "ReplicaDeletionSuccessful"
    DELETION_INELIGIBLE = "ReplicaDeletionIneligible"
    NON_EXISTENT = "NonExistentReplica"

    @property
    def valid_previous_states(self) -> frozenset[ReplicaState]:
        return _VALID_PREVIOUS[self]


R = ReplicaState
_VALID_PREVIOUS: dict[ReplicaState, frozenset[ReplicaState]] = {
    R.NEW: frozenset({R.NON_EXISTENT}),
    # ONLINE -> ONLINE re-sends LeaderAndIsr (e.g. a new controller, step 10).
    R.ONLINE: frozenset({R.NEW, R.ONLINE, R.OFFLINE, R.DELETION_INELIGIBLE}),
    R.OFFLINE: frozenset({R.NEW, R.ONLINE, R.OFFLINE, R.DELETION_INELIGIBLE}),
    R.DELETION_STARTED: frozenset({R.OFFLINE}),
    R.DELETION_SUCCESSFUL: frozenset({R.DELETION_STARTED}),
    R.DELETION_INELIGIBLE: frozenset({R.OFFLINE, R.DELETION_STARTED}),
    R.NON_EXISTENT: frozenset({R.DELETION_SUCCESSFUL}),
}
del R


class IllegalReplicaStateTransition(ValueError):
    """A replica was asked to move to a state it cannot reach from where it is."""

    def __init__(self, replica: PartitionReplica, current: ReplicaState, target: ReplicaState) -> None:
        self.replica, self.current, self.target = replica, current, target
        allowed = ", ".join(sorted(s.value for s in target.valid_previous_states))
        tp = replica.tp
        super().__init__(
            f"replica {replica.replica} of {tp.topic}-{tp.partition}: illegal transition {current.value} -> {target.value}; "
            f"{target.value} may only follow {allowed}"
        )


def check_transition(replica: PartitionReplica, current: ReplicaState, target: ReplicaState) -> None:
    if current not in target.valid_previous_states:
        raise IllegalReplicaStateTransition(replica, current, target)


@dataclass(frozen=True, slots=True)
class ReplicaTransition:
    replica: PartitionReplica
    previous: ReplicaState
    target: ReplicaState


class ReplicaStates:
    """Current state per replica; one not in the table is ``NON_EXISTENT``.
    Moving to ``NON_EXISTENT`` removes it."""

    def __init__(self) -> None:
        self._states: dict[PartitionReplica, ReplicaState] = {}

    def state(self, replica: PartitionReplica) -> ReplicaState:
        return self._states.get(replica, ReplicaState.NON_EXISTENT)

    def __len__(self) -> int:
        return len(self._states)

    def in_state(self, state: ReplicaState) -> list[PartitionReplica]:
        return sorted(r for r, s in self._states.items() if s is state)

    def of_topic(self, topic: str) -> dict[PartitionReplica, ReplicaState]:
        return {r: s for r, s in self._states.items() if r.tp.topic == topic}

    def are_all_in_state(self, topic: str, state: ReplicaState) -> bool:
        """True if every replica of ``topic`` is in ``state`` (topic deletion
        completes when all are DELETION_SUCCESSFUL)."""
        mine = self.of_topic(topic)
        return bool(mine) and all(s is state for s in mine.values())

    def transition(
        self, replicas: Iterable[PartitionReplica], target: ReplicaState
    ) -> tuple[list[ReplicaTransition], list[IllegalReplicaStateTransition]]:
        """Move each replica to ``target`` if allowed; returns the moves made
        and the refused ones (those replicas keep their state)."""
        done: list[ReplicaTransition] = []
        refused: list[IllegalReplicaStateTransition] = []
        for replica in replicas:
            current = self.state(replica)
            if current not in target.valid_previous_states:
                refused.append(IllegalReplicaStateTransition(replica, current, target))
                continue
            if target is ReplicaState.NON_EXISTENT:
                self._states.pop(replica, None)
            else:
                self._states[replica] = target
            done.append(ReplicaTransition(replica, current, target))
        return done, refused

    def set_initial(self, replica: PartitionReplica, state: ReplicaState) -> None:
        """Seed the table from ZooKeeper when a controller starts (no check)."""
        if state is ReplicaState.NON_EXISTENT:
            self._states.pop(replica, None)
        else:
            self._states[replica] = state
