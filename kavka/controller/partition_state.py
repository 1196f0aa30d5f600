"""The partition state machine's states and transition rules (seed 000
§Controller Failover step 8, seed 001 B; Kafka's PartitionStateMachine).

    NonExistent -> New -> Online <-> Offline -> NonExistent

- ``NEW``: assignment written, no leader elected yet.
- ``ONLINE``: a leader is elected (and alive).
- ``OFFLINE``: its leader died (or it had none): an election is due.
- ``NON_EXISTENT``: never created, or deleted.

``PartitionStates`` is the controller's table of current states; its
``transition`` checks every move against ``valid_previous_states`` and
reports the moves it refused instead of applying them (Kafka logs an
illegal transition and leaves the partition as it was). Elections and
ZooKeeper writes are the controller's; this module is plain data, used only
from the controller's event task.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum

from kavka.common.topic_partition import TopicPartition


class PartitionState(Enum):
    NEW = "NewPartition"
    ONLINE = "OnlinePartition"
    OFFLINE = "OfflinePartition"
    NON_EXISTENT = "NonExistentPartition"

    @property
    def valid_previous_states(self) -> frozenset[PartitionState]:
        return _VALID_PREVIOUS[self]


_VALID_PREVIOUS: dict[PartitionState, frozenset[PartitionState]] = {
    PartitionState.NEW: frozenset({PartitionState.NON_EXISTENT}),
    # ONLINE -> ONLINE is a leader re-election (preferred, reassignment,
    # controlled shutdown); OFFLINE -> OFFLINE repeats a failed election.
    PartitionState.ONLINE: frozenset({PartitionState.NEW, PartitionState.ONLINE, PartitionState.OFFLINE}),
    PartitionState.OFFLINE: frozenset({PartitionState.NEW, PartitionState.ONLINE, PartitionState.OFFLINE}),
    PartitionState.NON_EXISTENT: frozenset({PartitionState.OFFLINE}),
}


class IllegalPartitionStateTransition(ValueError):
    """A partition was asked to move to a state it cannot reach from where it is."""

    def __init__(self, tp: TopicPartition, current: PartitionState, target: PartitionState) -> None:
        self.tp, self.current, self.target = tp, current, target
        allowed = ", ".join(sorted(s.value for s in target.valid_previous_states))
        super().__init__(f"partition {tp.topic}-{tp.partition}: illegal transition {current.value} -> {target.value}; {target.value} may only follow {allowed}")


def check_transition(tp: TopicPartition, current: PartitionState, target: PartitionState) -> None:
    if current not in target.valid_previous_states:
        raise IllegalPartitionStateTransition(tp, current, target)


@dataclass(frozen=True, slots=True)
class PartitionTransition:
    tp: TopicPartition
    previous: PartitionState
    target: PartitionState


class PartitionStates:
    """Current state per partition; a partition not in the table is
    ``NON_EXISTENT``. Moving to ``NON_EXISTENT`` removes it."""

    def __init__(self) -> None:
        self._states: dict[TopicPartition, PartitionState] = {}

    def state(self, tp: TopicPartition) -> PartitionState:
        return self._states.get(tp, PartitionState.NON_EXISTENT)

    def __len__(self) -> int:
        return len(self._states)

    def in_state(self, state: PartitionState) -> list[TopicPartition]:
        return sorted(tp for tp, s in self._states.items() if s is state)

    def of_topic(self, topic: str) -> dict[TopicPartition, PartitionState]:
        return {tp: s for tp, s in self._states.items() if tp.topic == topic}

    def transition(
        self, tps: Iterable[TopicPartition], target: PartitionState
    ) -> tuple[list[PartitionTransition], list[IllegalPartitionStateTransition]]:
        """Move each partition to ``target`` if allowed. Returns the moves
        made and the refused ones (those partitions keep their state)."""
        done: list[PartitionTransition] = []
        refused: list[IllegalPartitionStateTransition] = []
        for tp in tps:
            current = self.state(tp)
            if current not in target.valid_previous_states:
                refused.append(IllegalPartitionStateTransition(tp, current, target))
                continue
            if target is PartitionState.NON_EXISTENT:
                self._states.pop(tp, None)
            else:
                self._states[tp] = target
            done.append(PartitionTransition(tp, current, target))
        return done, refused

    def set_initial(self, tp: TopicPartition, state: PartitionState) -> None:
        """Seed the table when a new controller reads ZooKeeper (failover
        step 7): no transition check, the state is what ZooKeeper says."""
        if state is PartitionState.NON_EXISTENT:
            self._states.pop(tp, None)
        else:
            self._states[tp] = state
