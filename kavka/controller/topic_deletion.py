"""``TopicDeletionManager``: deleting topics requested in
``/admin/delete_topics/<t>`` when ``delete.topic.enable`` (seed 000 §创建 /
删除 Topic step 2, seed 001 B; Kafka's TopicDeletionManager).

A topic queued for deletion goes through:

1. its partitions -> OFFLINE -> NON_EXISTENT, and every live broker gets
   UpdateMetadata with leader -2 for them (clients stop using them);
2. its replicas on dead brokers -> DELETION_INELIGIBLE (the topic waits for
   them); those on live brokers -> OFFLINE (StopReplica) ->
   DELETION_STARTED (StopReplica with delete);
3. each StopReplica answer moves the replica to DELETION_SUCCESSFUL, or to
   DELETION_INELIGIBLE on an error (the topic is then ineligible until a
   broker holding one of its replicas starts, and is retried then);
4. when every replica is DELETION_SUCCESSFUL: replicas -> NON_EXISTENT, and
   ``/brokers/topics/<t>`` (with its partition states), ``/config/topics/<t>``
   and ``/admin/delete_topics/<t>`` are removed in one fenced multi.

No leader is elected for a topic queued for deletion. A new controller
picks up queued deletions from ZooKeeper (failover step 12). Used only from
the controller's event task.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import cast

from kavka.common.errors import ErrorCode
from kavka.common.ids import BrokerId
from kavka.common.topic_partition import TopicPartition
from kavka.controller.context import ControllerContext, PartitionReplica
from kavka.controller.partition_state import PartitionState
from kavka.controller.partition_state_machine import PartitionStateMachine
from kavka.controller.replica_state import ReplicaState
from kavka.controller.replica_state_machine import ReplicaStateMachine
from kavka.controller.request_batch import ControllerBrokerRequestBatch
from kavka.protocol.messages import Message, StopReplicaRequest, StopReplicaResponse
from kavka.zk.client import KavkaZkClient

log = logging.getLogger(__name__)


class TopicDeletionManager:
    """See module doc. The queued and ineligible topics live in the context
    (``topics_to_delete``, ``topics_ineligible_for_deletion``)."""

    def __init__(
        self,
        context: ControllerContext,
        zk: KavkaZkClient,
        partitions: PartitionStateMachine,
        replicas: ReplicaStateMachine,
        batch: ControllerBrokerRequestBatch,
    ) -> None:
        self.context = context
        self.zk = zk
        self.partitions = partitions
        self.replicas = replicas
        self.batch = batch
        self._started: set[str] = set()  # topics whose partitions went NON_EXISTENT (step 1 done)
        self.completed: list[str] = []  # deleted topics, in order (for logs and tests)

    def init(self, queued: Iterable[str]) -> None:
        """Failover step 12's input: topics already queued in ZooKeeper."""
        self._started.clear()
        self.context.topics_to_delete = set(queued)
        self.context.topics_ineligible_for_deletion = set()

    def is_queued(self, topic: str) -> bool:
        return topic in self.context.topics_to_delete

    async def enqueue(self, topics: Iterable[str]) -> None:
        new = set(topics) - self.context.topics_to_delete
        if not new:
            return
        log.info("controller: topics %s queued for deletion", sorted(new))
        self.context.topics_to_delete |= new
        # A topic being reassigned waits for the reassignment to end (seed 000:
        # it is ineligible for deletion meanwhile).
        reassigning = {tp.topic for tp in self.context.partitions_being_reassigned()}
        self.context.topics_ineligible_for_deletion |= new & reassigning
        await self.resume()

    async def resume_for(self, topics: Iterable[str]) -> None:
        """A broker holding replicas of ``topics`` came back: retry them."""
        topics = set(topics) & self.context.topics_to_delete
        if topics:
            self.context.topics_ineligible_for_deletion -= topics
            await self.resume()

    async def fail_replicas(self, replicas: Iterable[PartitionReplica]) -> None:
        """Replicas of queued topics that cannot be deleted now (their broker
        died, or answered with an error): ineligible until the broker returns."""
        done = (ReplicaState.DELETION_INELIGIBLE, ReplicaState.DELETION_SUCCESSFUL)
        replicas = [r for r in replicas if self.is_queued(r.tp.topic) and self.replicas.states.state(r) not in done]
        if not replicas:
            return
        live_states = (ReplicaState.ONLINE, ReplicaState.NEW)
        to_offline = [r for r in replicas if self.replicas.states.state(r) in live_states]
        if to_offline:
            await self.replicas.handle_state_changes(to_offline, ReplicaState.OFFLINE)
        await self.replicas.handle_state_changes(replicas, ReplicaState.DELETION_INELIGIBLE)
        self.context.topics_ineligible_for_deletion |= {r.tp.topic for r in replicas}
        await self.resume()

    async def on_stop_replica_response(self, broker_id: int, request: Message, response: Message | None) -> None:
        """The answer to a StopReplica: each deleted partition's replica
        succeeds or fails (a stale answer for a replica no longer
        DELETION_STARTED is ignored)."""
        # the batch's StopReplica and its answer
        request, response = cast(StopReplicaRequest, request), cast("StopReplicaResponse | None", response)
        errors: dict[TopicPartition, int] = {}
        top = response.error_code if response is not None else ErrorCode.NETWORK_EXCEPTION
        if response is not None:
            for pe in response.partition_errors:
                errors[TopicPartition(pe.topic_name, pe.partition_index)] = pe.error_code
        ok: list[PartitionReplica] = []
        failed: list[PartitionReplica] = []
        for ts in request.topic_states:
            for ps in ts.partition_states:
                if not ps.delete_partition:
                    continue
                replica = PartitionReplica(TopicPartition(ts.topic_name, ps.partition_index), BrokerId(broker_id))
                if self.replicas.states.state(replica) is not ReplicaState.DELETION_STARTED:
                    continue
                code = top or errors.get(replica.tp, ErrorCode.NONE)
                if code:
                    self.partitions.state_log.response_error("StopReplica", broker_id, replica.tp, ErrorCode.of(code).name)
                    failed.append(replica)
                else:
                    ok.append(replica)
        if ok:
            await self.replicas.handle_state_changes(ok, ReplicaState.DELETION_SUCCESSFUL)
        if failed:
            await self.replicas.handle_state_changes(failed, ReplicaState.DELETION_INELIGIBLE)
            self.context.topics_ineligible_for_deletion |= {r.tp.topic for r in failed}
        if ok or failed:
            await self.resume()

    async def resume(self) -> None:
        """Advance every queued topic as far as it can go now."""
        retry: list[PartitionReplica] = []
        eligible: list[str] = []
        for topic in sorted(self.context.topics_to_delete):
            states = self.replicas.states.of_topic(topic)
            if not states or all(s is ReplicaState.DELETION_SUCCESSFUL for s in states.values()):
                await self._complete(topic)
                continue
            if any(s is ReplicaState.DELETION_STARTED for s in states.values()):
                continue  # answers pending
            if topic in self.context.topics_ineligible_for_deletion:
                continue
            retry += [r for r, s in states.items() if s is ReplicaState.DELETION_INELIGIBLE]
            eligible.append(topic)
        if retry:
            # Ineligible replicas get another try: back to OFFLINE, then as any other.
            await self.replicas.handle_state_changes(retry, ReplicaState.OFFLINE)
        for topic in eligible:
            await self._start(topic)

    async def _start(self, topic: str) -> None:
        if topic not in self._started:
            self._started.add(topic)
            tps = self.context.partitions_for_topic(topic)
            # Leader -2 in UpdateMetadata while deleting (the batch reads topics_to_delete).
            self.batch.add_update_metadata(self.context.live_brokers, tps)
            await self.partitions.handle_state_changes(tps, PartitionState.OFFLINE)
            await self.partitions.handle_state_changes(tps, PartitionState.NON_EXISTENT)
        replicas = self.context.replicas_for_topic(topic)
        dead = [r for r in replicas if r.replica not in self.context.live_brokers]
        alive = [r for r in replicas if r.replica in self.context.live_brokers and self.replicas.states.state(r) is not ReplicaState.DELETION_SUCCESSFUL]
        if dead:
            await self.replicas.handle_state_changes([r for r in dead if self.replicas.states.state(r) is not ReplicaState.DELETION_INELIGIBLE], ReplicaState.OFFLINE)
            await self.replicas.handle_state_changes(dead, ReplicaState.DELETION_INELIGIBLE)
            self.context.topics_ineligible_for_deletion.add(topic)
            log.info("controller: deletion of topic %s waits for brokers %s", topic, sorted({r.replica for r in dead}))
        if alive:
            await self.replicas.handle_state_changes([r for r in alive if self.replicas.states.state(r) is not ReplicaState.OFFLINE], ReplicaState.OFFLINE)
            await self.replicas.handle_state_changes(alive, ReplicaState.DELETION_STARTED)

    async def _complete(self, topic: str) -> None:
        assert self.partitions.claim is not None
        await self.replicas.handle_state_changes(list(self.replicas.states.of_topic(topic)), ReplicaState.NON_EXISTENT)
        await self.zk.delete_topic_znodes(self.partitions.claim, topic)
        self.partitions.forget_topic(topic)
        self.replicas.forget_topic(topic)
        self.context.remove_topic(topic)
        self._started.discard(topic)
        self.completed.append(topic)
        log.info("controller: topic %s deleted", topic)
