"""Which partitions this broker follows, from which leader, from where (seed
002 §6.7 ``AbstractFetcherManager``).

``FetcherManager`` is the seam the replica manager drives on LeaderAndIsr
and StopReplica: ``add_fetcher_for_partitions`` when partitions become
followers of a live leader, ``remove_fetcher_for_partitions`` when they
become leaders, stop or change leader, ``shutdown_idle_fetchers`` after a
LeaderAndIsr (seed 000 step 7), ``shutdown`` when the broker stops.

``FetcherAssignments`` is the table behind it: partition -> ``InitialFetchState``
(leader endpoint, leader epoch, the offset to fetch from), grouped per
source broker and fetcher id (``num.replica.fetchers`` spreads a source's
partitions over that many fetchers by a hash of the partition, as Kafka
does). On its own it answers "who would fetch what" — which is all a broker
with only leaders (RF=1) needs; ``fetcher.manager.ReplicaFetcherManager``
keeps one and runs one fetch task per (source broker, fetcher id).

Event loop only.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol

from kavka.common.topic_partition import TopicPartition
from kavka.replication.state import BrokerEndPoint


@dataclass(frozen=True, slots=True)
class InitialFetchState:
    """Where a follower starts: its leader, the leader epoch it follows
    (sent as Fetch's current_leader_epoch), and the offset to fetch from.
    ``truncate_first``: check the log against the leader's epochs
    (OffsetsForLeaderEpoch, KIP-101) before fetching; False when the
    replica manager already truncated to the HW (``replica.truncation.mode=hw``)."""

    leader: BrokerEndPoint
    leader_epoch: int
    fetch_offset: int
    truncate_first: bool = True


@dataclass(frozen=True, slots=True)
class FetcherKey:
    """One fetcher: a source broker and a fetcher id < num.replica.fetchers."""

    broker_id: int
    fetcher_id: int


class FetcherManager(Protocol):
    """What the replica manager asks of the follower side."""

    def add_fetcher_for_partitions(self, states: Mapping[TopicPartition, InitialFetchState]) -> None: ...

    def remove_fetcher_for_partitions(self, partitions: Iterable[TopicPartition]) -> None: ...

    def shutdown_idle_fetchers(self) -> None: ...

    async def shutdown(self) -> None:
        """Stop fetching altogether (broker shutdown, before the logs close)."""
        ...


class FetcherAssignments:
    """The table of followed partitions (see the module docstring)."""

    def __init__(self, num_fetchers: int = 1) -> None:
        if num_fetchers < 1:
            raise ValueError(f"num.replica.fetchers must be >= 1, got {num_fetchers}")
        self.num_fetchers = num_fetchers
        self._states: dict[TopicPartition, InitialFetchState] = {}
        self._fetchers: dict[FetcherKey, set[TopicPartition]] = {}

    def resize(self, num_fetchers: int) -> None:
        """A new ``num.replica.fetchers``: every partition is keyed again by
        its hash over the new count (Kafka's resizeThreadPool)."""
        if num_fetchers < 1:
            raise ValueError(f"num.replica.fetchers must be >= 1, got {num_fetchers}")
        self.num_fetchers = num_fetchers
        self._fetchers = {}
        for tp, state in self._states.items():
            self._fetchers.setdefault(self.key_for(tp, state.leader.broker_id), set()).add(tp)

    def fetcher_id(self, tp: TopicPartition) -> int:
        # Kafka: Utils.abs(31 * topic.hashCode + partition) % numFetchers; a
        # stable hash here (Python's str hash is salted per process).
        h = 0
        for ch in tp.topic.encode():
            h = (h * 31 + ch) & 0x7FFFFFFF
        return (31 * h + tp.partition) % self.num_fetchers

    def key_for(self, tp: TopicPartition, leader_id: int) -> FetcherKey:
        return FetcherKey(leader_id, self.fetcher_id(tp))

    def add_fetcher_for_partitions(self, states: Mapping[TopicPartition, InitialFetchState]) -> None:
        for tp, state in states.items():
            self._drop(tp)
            self._states[tp] = state
            self._fetchers.setdefault(self.key_for(tp, state.leader.broker_id), set()).add(tp)

    def remove_fetcher_for_partitions(self, partitions: Iterable[TopicPartition]) -> None:
        for tp in partitions:
            self._drop(tp)

    def _drop(self, tp: TopicPartition) -> None:
        state = self._states.pop(tp, None)
        if state is not None:
            members = self._fetchers.get(self.key_for(tp, state.leader.broker_id))
            if members is not None:
                members.discard(tp)

    def shutdown_idle_fetchers(self) -> None:
        """Forget fetchers left without partitions (seed 002 §6.7)."""
        for key in [k for k, members in self._fetchers.items() if not members]:
            del self._fetchers[key]

    async def shutdown(self) -> None:
        """The table alone runs no fetch task: forget every partition."""
        self._states.clear()
        self._fetchers.clear()

    # ---- queries ---------------------------------------------------------------------------
    def fetch_state(self, tp: TopicPartition) -> InitialFetchState | None:
        return self._states.get(tp)

    def partitions(self) -> dict[TopicPartition, InitialFetchState]:
        return dict(self._states)

    def fetchers(self) -> dict[FetcherKey, frozenset[TopicPartition]]:
        return {k: frozenset(v) for k, v in self._fetchers.items()}
