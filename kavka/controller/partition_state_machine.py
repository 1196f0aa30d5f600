"""``PartitionStateMachine``: the runtime that moves partitions between the
states of ``partition_state`` (seed 000 §Controller Failover step 8, §创建
Topic, §Broker failover; Kafka's ZkPartitionStateMachine).

What each move does besides updating the table and ``state-change.log``:

- -> ``NEW``: nothing else (the assignment is in the context).
- ``NEW`` -> ``ONLINE``: the first leader (seed 000 §创建 Topic 3.1-3.2:
  the first live replica of AR, ISR = the live AR, leader epoch 0) is
  created in ``/brokers/topics/<t>/partitions/<p>/state`` with the
  controller epoch, in fenced multis; LeaderAndIsr (``is_new``) to the live
  replicas, UpdateMetadata to every live broker.
- ``OFFLINE``/``ONLINE`` -> ``ONLINE``: a leader election by ``election``
  (default: ``offline_election``, seed 000 §Broker failover 3.2; the
  preferred, reassignment and controlled-shutdown elections are other
  ``Election``s), written conditionally (``leader_isr_update``);
  LeaderAndIsr to the live replicas, UpdateMetadata to all.
- -> ``OFFLINE`` / ``NON_EXISTENT``: table and log only.

A partition whose election finds no leader stays where it was (``OFFLINE``
or ``NEW``) and is retried by the next ``trigger_online_partition_state_change``
(on the next broker change). Used only from the controller's event task.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Iterable

from kavka.common.ids import BrokerId
from kavka.common.leader_and_isr import LeaderAndIsr
from kavka.common.topic_partition import TopicPartition
from kavka.controller.context import ControllerContext
from kavka.controller.election import ElectionResult, elect_for_new_partition, elect_for_offline_partition
from kavka.controller.leader_isr_update import update_leader_and_isr
from kavka.controller.partition_state import PartitionState, PartitionStates
from kavka.controller.request_batch import ControllerBrokerRequestBatch
from kavka.controller.state_change_log import StateChangeLogger
from kavka.controller.stats import ControllerStats
from kavka.zk.brokers import PartitionStateZNode
from kavka.zk.client import ControllerClaim, KavkaZkClient

log = logging.getLogger(__name__)

# (partition, current leader/ISR, live brokers) -> who leads, or None.
Election = Callable[[TopicPartition, LeaderAndIsr, set[BrokerId]], ElectionResult | None]
# Whether a topic allows unclean election (topic override, else the broker's setting).
UncleanPolicy = Callable[[str], Awaitable[bool]]


class PartitionStateMachine:
    """See module doc. ``claim`` is the controller epoch's claim that fences
    every ZooKeeper write."""

    def __init__(
        self,
        context: ControllerContext,
        zk: KavkaZkClient,
        claim: ControllerClaim,
        batch: ControllerBrokerRequestBatch,
        state_log: StateChangeLogger,
        unclean_allowed: UncleanPolicy,
        stats: ControllerStats | None = None,
    ) -> None:
        self.context = context
        self.zk = zk
        self.claim = claim
        self.batch = batch
        self.state_log = state_log
        self.unclean_allowed = unclean_allowed
        self.stats = stats if stats is not None else ControllerStats()
        self.states = PartitionStates()

    def startup(self) -> None:
        """Failover step 8: seed the table from the context (what ZooKeeper
        says): a partition with a live leader is ONLINE, one with a state but
        no live leader OFFLINE, one without a state NEW."""
        self.states = PartitionStates()
        for tp in self.context.all_partitions():
            lai = self.context.leader_and_isr(tp)
            if lai is None:
                state = PartitionState.NEW
            elif lai.leader in self.context.live_brokers:
                state = PartitionState.ONLINE
            else:
                state = PartitionState.OFFLINE
            self.states.set_initial(tp, state)

    def forget_topic(self, topic: str) -> None:
        for tp in list(self.states.of_topic(topic)):
            self.states.set_initial(tp, PartitionState.NON_EXISTENT)

    async def trigger_online_partition_state_change(self, topics: Iterable[str] | None = None) -> None:
        """Elect leaders for every NEW or OFFLINE partition (of ``topics`` if
        given), except those of topics queued for deletion."""
        wanted = set(topics) if topics is not None else None
        candidates = [
            tp
            for tp in self.states.in_state(PartitionState.NEW) + self.states.in_state(PartitionState.OFFLINE)
            if tp.topic not in self.context.topics_to_delete and (wanted is None or tp.topic in wanted)
        ]
        if candidates:
            await self.handle_state_changes(candidates, PartitionState.ONLINE)

    async def handle_state_changes(
        self, tps: Iterable[TopicPartition], target: PartitionState, election: Election | None = None
    ) -> dict[TopicPartition, str]:
        """Move ``tps`` to ``target``; returns the partitions that did not
        move and why (illegal transition or failed election)."""
        tps = sorted(set(tps))
        failed: dict[TopicPartition, str] = {}
        legal: list[TopicPartition] = []
        for tp in tps:
            current = self.states.state(tp)
            if current not in target.valid_previous_states:
                _, refused = self.states.transition([tp], target)
                self.state_log.illegal_transition(str(refused[0]))
                failed[tp] = str(refused[0])
            else:
                legal.append(tp)
        if target is PartitionState.ONLINE:
            new = [tp for tp in legal if self.states.state(tp) is PartitionState.NEW]
            others = [tp for tp in legal if self.states.state(tp) is not PartitionState.NEW]
            if new:
                failed.update(await self._initialize_leader_and_isr(new))
            if others:
                failed.update(await self._elect_leaders(others, election))
        else:
            for t in self.states.transition(legal, target)[0]:
                self.state_log.partition_change(t.tp, t.previous, t.target)
        return failed

    def _to_online(self, tp: TopicPartition, lai: LeaderAndIsr) -> None:
        previous = self.states.state(tp)
        self.states.transition([tp], PartitionState.ONLINE)
        self.state_log.partition_change(tp, previous, PartitionState.ONLINE, lai)

    async def _initialize_leader_and_isr(self, tps: list[TopicPartition]) -> dict[TopicPartition, str]:
        failed: dict[TopicPartition, str] = {}
        live = self.context.live_broker_ids
        states: list[PartitionStateZNode] = []
        for tp in tps:
            replicas = self.context.partition_replicas(tp)
            result = elect_for_new_partition(replicas, self.context.online_for(tp, live))
            if result is None:
                why = f"none of its replicas {list(replicas)} is on a live broker"
                self.state_log.election_failed(tp, why)
                failed[tp] = why
                continue
            states.append(PartitionStateZNode(tp.topic, tp.partition, result.leader, 0, result.isr, self.context.epoch))
        writes = await self.zk.create_partition_states(self.claim, states) if states else {}
        for s in states:
            tp = TopicPartition(s.topic, s.partition)
            w = writes[(s.topic, s.partition)]
            if w.zk_version is None:
                why = "its state znode already exists" if w.conflict else "its topic znode is gone"
                self.state_log.election_failed(tp, why)
                failed[tp] = why
                continue
            lai = s.leader_isr_and_controller_epoch(w.zk_version).leader_and_isr
            self.context.put_leadership(tp, lai)
            self.state_log.leader_and_isr_written(tp, lai, "new partition")
            self.batch.add_leader_and_isr(self.context.partition_replicas(tp), tp, is_new=True)
            self._to_online(tp, lai)
        return failed

    async def _unclean_topics(self, tps: list[TopicPartition]) -> set[str]:
        """Topics (of partitions with no live ISR member) allowing unclean election."""
        live = self.context.live_broker_ids
        needing = set()
        for tp in tps:
            lai = self.context.leader_and_isr(tp)
            if lai is not None and not any(r in self.context.online_for(tp, live) for r in lai.isr):
                needing.add(tp.topic)
        return {t for t in sorted(needing) if await self.unclean_allowed(t)}

    async def _elect_leaders(self, tps: list[TopicPartition], election: Election | None) -> dict[TopicPartition, str]:
        started = time.monotonic_ns()
        try:
            return await self._elect_leaders_timed(tps, election)
        finally:
            self.stats.leader_elections.record_ns(time.monotonic_ns() - started)

    async def _elect_leaders_timed(self, tps: list[TopicPartition], election: Election | None) -> dict[TopicPartition, str]:
        live = self.context.live_broker_ids
        if election is None:
            unclean_topics = await self._unclean_topics(tps)

            def election(tp: TopicPartition, lai: LeaderAndIsr, live: set[BrokerId]) -> ElectionResult | None:
                return elect_for_offline_partition(self.context.partition_replicas(tp), lai.isr, live, tp.topic in unclean_topics)

        chosen: dict[TopicPartition, ElectionResult] = {}
        isr_before: dict[TopicPartition, tuple[BrokerId, ...]] = {}  # the ISR an unclean leader was not in

        def decide(tp: TopicPartition, lai: LeaderAndIsr) -> LeaderAndIsr | str:
            # KIP-112: a replica in a failed log directory of a live broker cannot lead
            result = election(tp, lai, self.context.online_for(tp, live))
            if result is None:
                return f"no live replica in the isr {list(lai.isr)} of replicas {list(self.context.partition_replicas(tp))}"
            chosen[tp] = result
            isr_before[tp] = tuple(lai.isr)
            return lai.new_leader_and_isr(result.leader, result.isr)

        outcome = await update_leader_and_isr(self.zk, self.claim, self.context, tps, decide)
        for tp, lai in outcome.written.items():
            if chosen[tp].unclean:
                self.stats.unclean_elections += 1
                self.state_log.unclean_election(tp, lai.leader, isr_before[tp])
            self.state_log.leader_and_isr_written(tp, lai, "leader election")
            self.batch.add_leader_and_isr(self.context.partition_replicas(tp), tp)
            self._to_online(tp, lai)
        for tp, why in outcome.failed.items():
            self.state_log.election_failed(tp, why)
        return dict(outcome.failed)
