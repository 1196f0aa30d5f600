"""``ReplicaStateMachine``: the runtime that moves replicas between the
states of ``replica_state`` (seed 000 §Broker 启动过程 step 2, §Broker
failover, topic deletion; Kafka's ZkReplicaStateMachine).

What each move does besides updating the table and ``state-change.log``:

- -> ``NEW``: if the partition has a leader, LeaderAndIsr (``is_new``) to
  the replica's broker so it starts following (seed 000 §Partition 重新分配
  step 3).
- -> ``ONLINE``: from ``NEW``, the replica joins the assignment if it is not
  in it; otherwise LeaderAndIsr with the partition's current state to the
  replica's broker (a broker that started, a new controller: failover
  step 10).
- -> ``OFFLINE``: StopReplica (no delete) to its broker if alive; then,
  unless the topic is being deleted, the replica leaves the ISR (and the
  leadership if it led: leader -1, seed 000 §Broker failover 3.2 "all
  replicas down") by a conditional write, with a new leader epoch only
  where the leadership changes or the replica's broker is alive (shutting
  down, a failed log directory: the epoch fences its fetches; see
  ``election.remove_replica_from_isr``); LeaderAndIsr to the remaining
  live replicas of partitions that changed (to the leader alone where the
  leadership stayed: only a leader keeps an ISR), UpdateMetadata to every
  live broker for all of them. This is a broker failure's longest work (every
  partition the broker followed), so it hands the event loop a turn every
  slice of it (``kavka.common.loop_slice``).
- -> ``DELETION_STARTED``: StopReplica with delete to its broker; the answer
  comes back as an event for the topic deletion manager.
- -> ``NON_EXISTENT``: the replica leaves the assignment.
- -> ``DELETION_SUCCESSFUL`` / ``DELETION_INELIGIBLE``: table and log only.

Used only from the controller's event task.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

from kavka.common.ids import NO_LEADER, BrokerId
from kavka.common.leader_and_isr import LeaderAndIsr
from kavka.common.loop_slice import LoopSlice
from kavka.common.topic_partition import TopicPartition
from kavka.controller.context import ControllerContext, PartitionReplica, ReplicaAssignment
from kavka.controller.election import remove_replica_from_isr
from kavka.controller.leader_isr_update import update_leader_and_isr
from kavka.controller.replica_state import ReplicaState, ReplicaStates, ReplicaTransition
from kavka.controller.request_batch import ControllerBrokerRequestBatch
from kavka.controller.state_change_log import StateChangeLogger
from kavka.zk.client import ControllerClaim, KavkaZkClient


class ReplicaStateMachine:
    """See module doc. ``claim`` is the controller epoch's claim that fences
    every ZooKeeper write."""

    def __init__(self, context: ControllerContext, zk: KavkaZkClient, claim: ControllerClaim, batch: ControllerBrokerRequestBatch, state_log: StateChangeLogger) -> None:
        self.context = context
        self.zk = zk
        self.claim = claim
        self.batch = batch
        self.state_log = state_log
        self.states = ReplicaStates()

    def startup(self) -> list[PartitionReplica]:
        """Failover step 8: replicas on live brokers start ONLINE-bound,
        the others DELETION_INELIGIBLE (Kafka's choice: they cannot act on
        anything until their broker returns). Returns the live ones, for the
        controller to move to ONLINE (which sends their LeaderAndIsr)."""
        self.states = ReplicaStates()
        live: list[PartitionReplica] = []
        for tp in self.context.all_partitions():
            for r in self.context.partition_replicas(tp):
                replica = PartitionReplica(tp, r)
                if r in self.context.live_brokers:
                    self.states.set_initial(replica, ReplicaState.ONLINE)
                    live.append(replica)
                else:
                    self.states.set_initial(replica, ReplicaState.DELETION_INELIGIBLE)
        return live

    def forget_topic(self, topic: str) -> None:
        for replica in list(self.states.of_topic(topic)):
            self.states.set_initial(replica, ReplicaState.NON_EXISTENT)

    async def handle_state_changes(
        self, replicas: Iterable[PartitionReplica], target: ReplicaState, *, confirmed: Collection[TopicPartition] = ()
    ) -> list[PartitionReplica]:
        """Move ``replicas`` to ``target``; returns those refused (illegal
        transitions). ``confirmed``: partitions whose cached state the
        caller read or wrote in this event, after the replicas were known
        offline (``update_leader_and_isr`` reads no other copy of them)."""
        done, refused = self.states.transition(sorted(set(replicas)), target)
        for r in refused:
            self.state_log.illegal_transition(str(r))
        for t in done:
            self.state_log.replica_change(t.replica, t.previous, t.target)
        if target is ReplicaState.NEW:
            self._on_new(done)
        elif target is ReplicaState.ONLINE:
            self._on_online(done)
        elif target is ReplicaState.OFFLINE:
            await self._on_offline(done, confirmed)
        elif target is ReplicaState.DELETION_STARTED:
            for t in done:
                self.batch.add_stop_replica([t.replica.replica], t.replica.tp, delete=True)
        elif target is ReplicaState.NON_EXISTENT:
            for t in done:
                self._drop_from_assignment(t.replica)
        return [r.replica for r in refused]

    def _on_new(self, done: list[ReplicaTransition]) -> None:
        for t in done:
            lai = self.context.leader_and_isr(t.replica.tp)
            if lai is not None and lai.leader != t.replica.replica:
                self.batch.add_leader_and_isr([t.replica.replica], t.replica.tp, is_new=True)

    def _on_online(self, done: list[ReplicaTransition]) -> None:
        for t in done:
            tp, r = t.replica
            if t.previous is ReplicaState.NEW:
                a = self.context.assignment(tp)
                if a is not None and r not in a.replicas:
                    self.context.update_assignment(tp, ReplicaAssignment(a.replicas + (r,), a.adding, a.removing))
            elif self.context.leader_and_isr(tp) is not None:
                self.batch.add_leader_and_isr([r], tp)

    async def _on_offline(self, done: list[ReplicaTransition], confirmed: Collection[TopicPartition]) -> None:
        # A broker's failure takes it out of the ISR of every partition it
        # followed (at 10,000 partitions of RF 3, twice as many as its
        # elections): seconds of the event loop's time, after the elections'
        # LeaderAndIsr went out. Kafka's controller does this on its own
        # thread; here the work hands the loop a turn every slice, so the
        # broker serves its clients and followers meanwhile (the new leaders
        # on this broker above all).
        loop_slice = LoopSlice()
        removals: dict[BrokerId, list[TopicPartition]] = {}
        for t in done:
            tp, r = t.replica
            self.batch.add_stop_replica([r], tp, delete=False)
            if tp.topic not in self.context.topics_to_delete and self.context.leader_and_isr(tp) is not None:
                removals.setdefault(r, []).append(tp)
            await loop_slice.pause()
        # One conditional round per broker: a partition appears once per
        # round, so several dead replicas of one partition are removed in turn.
        for r, tps in sorted(removals.items()):

            # A live broker's replica (controlled shutdown, a failed log
            # directory) is fenced by a new leader epoch; a dead one's is not
            # (see remove_replica_from_isr).
            fence = r in self.context.live_brokers

            def decide(tp: TopicPartition, lai: LeaderAndIsr, r: BrokerId = r, fence: bool = fence) -> LeaderAndIsr | None:
                new = remove_replica_from_isr(lai, r, fence=fence)
                return None if new == lai else new

            outcome = await update_leader_and_isr(self.zk, self.claim, self.context, tps, decide, confirmed=confirmed,
                                                  loop_slice=loop_slice)
            for tp, lai in outcome.written.items():
                self.state_log.leader_and_isr_written(tp, lai, f"replica {r} went offline")
                if fence or lai.leader == NO_LEADER:
                    self.batch.add_leader_and_isr([b for b in self.context.partition_replicas(tp) if b != r], tp)
                else:
                    # The same leadership with a smaller ISR: only the leader
                    # keeps the ISR (a follower holds none, seed 002 §6.8
                    # makeFollower (3)), so only it is told; the others learn
                    # the ISR from UpdateMetadata with every live broker.
                    self.batch.add_leader_and_isr([lai.leader], tp)
                await loop_slice.pause()
            for tp, why in outcome.failed.items():
                self.state_log.election_failed(tp, f"could not remove replica {r} from the isr: {why}")
            self.batch.add_update_metadata(self.context.live_brokers, [*outcome.unchanged, *outcome.written])

    def _drop_from_assignment(self, replica: PartitionReplica) -> None:
        tp, r = replica
        a = self.context.assignment(tp)
        if a is None or r not in a.replicas:
            return
        remaining = tuple(x for x in a.replicas if x != r)
        if remaining:
            self.context.update_assignment(tp, ReplicaAssignment(remaining, tuple(x for x in a.adding if x != r), tuple(x for x in a.removing if x != r)))
