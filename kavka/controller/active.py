"""``ActiveController``: everything a broker holds while it is the
controller for one epoch — the context, both state machines, the topic
deletion manager, the request batch and the channel to brokers — and the
controller's reactions (seed 000 §Controller Failover, §Broker 启动过程,
§Broker failover, §创建 Topic; Kafka's KafkaController.on* methods).

Created when the broker wins an epoch (``failover`` runs the failover
steps), dropped when it resigns (``close``). The ZooKeeper-triggered
handlers that call these reactions are in ``zk_events``. Every method runs
on the controller's event task; after each event the controller calls
``batch.send_requests()``.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Callable, Iterable

from kavka.controller.context import ControllerContext, PartitionReplica
from kavka.common.topic_partition import TopicPartition
from kavka.controller.events import ControllerEvent, LeaderAndIsrResponseReceived, StopReplicaResponseReceived
from kavka.controller.partition_state import PartitionState
from kavka.controller.partition_state_machine import PartitionStateMachine
from kavka.controller.reassignment import PartitionReassigner
from kavka.controller.replica_state import ReplicaState
from kavka.controller.replica_state_machine import ReplicaStateMachine
from kavka.controller.request_batch import ControllerBrokerRequestBatch
from kavka.controller.channel import ControllerChannelManager
from kavka.controller.settings import ControllerConfig
from kavka.controller.state_change_log import StateChangeLogger
from kavka.controller.topic_deletion import TopicDeletionManager
from kavka.common.errors import ErrorCode
from kavka.protocol.messages import Message
from kavka.zk.brokers import BrokerIdZNode
from kavka.zk.client import ControllerClaim, KavkaZkClient
from kavka.zk.store_types import WatchCallback, WatchEvent, WatchEventType

log = logging.getLogger(__name__)


class ActiveController:
    """One controller epoch's state and reactions (see module doc)."""

    def __init__(
        self,
        broker_id: int,
        claim: ControllerClaim,
        zk: KavkaZkClient,
        channel: ControllerChannelManager,
        config: ControllerConfig,
        put: Callable[[ControllerEvent], None],
        state_log: StateChangeLogger,
    ) -> None:
        self.broker_id = broker_id
        self.claim = claim
        self.zk = zk
        self.channel = channel
        self.config = config
        self.put = put
        self.state_log = state_log
        state_log.epoch = claim.epoch
        self.context = ControllerContext(epoch=claim.epoch, epoch_zk_version=claim.epoch_zk_version)
        self.batch = ControllerBrokerRequestBatch(
            broker_id,
            self.context,
            channel,
            config.inter_broker_listener_name,
            state_log,
            on_leader_and_isr_response=lambda b, req, resp: put(LeaderAndIsrResponseReceived(b, req, resp)),
            on_stop_replica_response=lambda b, req, resp: put(StopReplicaResponseReceived(b, req, resp)),
        )
        self.partitions = PartitionStateMachine(self.context, zk, self.batch, state_log, self.unclean_allowed)
        self.replicas = ReplicaStateMachine(self.context, zk, self.batch, state_log)
        self.partitions.claim = self.replicas.claim = claim
        self.deletion = TopicDeletionManager(self.context, zk, self.partitions, self.replicas, self.batch)
        # Issue 5: reassignments in progress (seed 000 §Partition 重新分配) and
        # the auto leader rebalance timer (failover step 11), both per epoch.
        self.reassigner = PartitionReassigner(self)
        self.rebalance_timer: asyncio.TimerHandle | None = None

    # -- helpers ---------------------------------------------------------------------------------

    def watch(self, event: ControllerEvent) -> WatchCallback:
        """A one-shot ZooKeeper watch that queues ``event``. A watch dropped
        with the connection (LOST) queues nothing: the session listener
        queues ``WatchesLost`` when the connection is back.

        The callback holds the queue's ``put``, not this object: ZooKeeper
        keeps a watch until it fires, which may be long after this epoch
        ended, and it must not keep the epoch's whole context alive (10,000
        partitions' state per resignation, walked by every full garbage
        collection)."""
        put = self.put

        def fire(e: WatchEvent) -> None:
            if e.type is not WatchEventType.LOST:
                put(event)

        return fire

    async def unclean_allowed(self, topic: str) -> bool:
        """``unclean.leader.election.enable``: the topic's override in
        ``/config/topics/<t>`` if set, else the broker's (read only when an
        election needs it, as Kafka does)."""
        override = (await self.zk.get_entity_config("topics", topic)).get("unclean.leader.election.enable")
        if override is not None and override.strip().lower() in ("true", "false"):
            return override.strip().lower() == "true"
        return self.config.unclean_leader_election_enable

    def add_live_brokers(self, brokers: dict[int, tuple[BrokerIdZNode, int]]) -> None:
        for broker_id, (node, epoch) in brokers.items():
            self.context.live_brokers[broker_id] = node
            self.context.broker_epochs[broker_id] = epoch
            endpoint = node.endpoint(self.config.inter_broker_listener_name)
            if endpoint is None:
                log.error("broker %d registered no %s listener; the controller cannot reach it", broker_id, self.config.inter_broker_listener_name)
                continue
            self.channel.add_broker(broker_id, endpoint)

    async def remove_live_brokers(self, ids: Iterable[int]) -> None:
        for broker_id in ids:
            self.context.live_brokers.pop(broker_id, None)
            self.context.broker_epochs.pop(broker_id, None)
            self.context.shutting_down.discard(broker_id)
            await self.channel.remove_broker(broker_id)

    # -- reactions -------------------------------------------------------------------------------

    async def start_state_machines(self) -> None:
        """Failover steps 8-10: seed both tables, put every live replica
        ONLINE (LeaderAndIsr to every live broker for its replicas, and
        UpdateMetadata for every partition to all), elect leaders for
        partitions without one, and take the dead brokers' replicas OFFLINE."""
        self.batch.add_update_metadata(self.context.live_brokers, [])
        live = self.replicas.startup()
        self.partitions.startup()
        await self.replicas.handle_state_changes([r for r in live if not self.deletion.is_queued(r.tp.topic)], ReplicaState.ONLINE)
        await self.partitions.trigger_online_partition_state_change()
        # Brokers that died while no controller was watching (typically the
        # previous controller's own broker): their replicas go OFFLINE as on
        # a broker failure, so a partition nobody can lead shows leader -1.
        dead = [
            PartitionReplica(tp, r)
            for tp in self.context.all_partitions()
            for r in self.context.partition_replicas(tp)
            if r not in self.context.live_brokers and not self.deletion.is_queued(tp.topic)
        ]
        if dead:
            await self.replicas.handle_state_changes(dead, ReplicaState.OFFLINE)

    async def on_new_partition_creation(self, tps: list[TopicPartition]) -> None:
        """Seed 000 §创建 Topic 3: NEW, then the first leader and ISR, ONLINE."""
        replicas = [PartitionReplica(tp, r) for tp in tps for r in self.context.partition_replicas(tp)]
        await self.partitions.handle_state_changes(tps, PartitionState.NEW)
        await self.replicas.handle_state_changes(replicas, ReplicaState.NEW)
        await self.partitions.handle_state_changes(tps, PartitionState.ONLINE)
        await self.replicas.handle_state_changes(replicas, ReplicaState.ONLINE)

    async def on_broker_startup(self, new: list[int]) -> None:
        """Seed 000 §Broker 启动过程: UpdateMetadata to the new brokers (and
        the others learn about them), their replicas ONLINE, then elections
        for partitions that were offline; queued deletions waiting for these
        brokers resume."""
        existing = [b for b in self.context.live_brokers if b not in new]
        self.batch.add_update_metadata(existing, [])
        self.batch.add_update_metadata(new, self.context.all_partitions())
        self.batch.send_requests()  # metadata first, so leaders are known before LeaderAndIsr
        replicas = self.context.replicas_on_brokers(new)
        await self.replicas.handle_state_changes([r for r in replicas if not self.deletion.is_queued(r.tp.topic)], ReplicaState.ONLINE)
        await self.partitions.trigger_online_partition_state_change()
        await self.deletion.resume_for({r.tp.topic for r in replicas})

    async def on_broker_failure(self, dead: list[int]) -> None:
        """Seed 000 §Broker failover steps 2-4: set_p = partitions led by a
        dead broker -> OFFLINE -> elected from the live ISR; the dead
        replicas -> OFFLINE (they leave the ISRs); LeaderAndIsr batched per
        broker; every live broker learns the broker is gone."""
        replicas = self.context.replicas_on_brokers(dead)
        await self.on_replicas_become_offline(replicas)

    async def on_replicas_become_offline(self, replicas: list[PartitionReplica]) -> None:
        dead = {r.replica for r in replicas}
        set_p = [
            tp
            for tp, entry in sorted(self.context.leadership.items())
            if entry.leader_and_isr.leader in dead and not self.deletion.is_queued(tp.topic)
        ]
        await self.partitions.handle_state_changes(set_p, PartitionState.OFFLINE)
        await self.partitions.trigger_online_partition_state_change()
        await self.replicas.handle_state_changes([r for r in replicas if not self.deletion.is_queued(r.tp.topic)], ReplicaState.OFFLINE)
        await self.deletion.fail_replicas([r for r in replicas if self.deletion.is_queued(r.tp.topic)])
        if not set_p:
            self.batch.add_update_metadata(self.context.live_brokers, [])

    async def on_leader_and_isr_response(self, broker_id: int, request: Message, response: Message | None) -> None:
        """Errors per partition go to state-change.log (KAFKA_STORAGE_ERROR
        handling of offline log dirs is not part of this controller)."""
        if response is None:
            return
        if response.error_code:
            log.warning("controller: broker %d refused LeaderAndIsr: %s", broker_id, ErrorCode.of(response.error_code).name)
        errors = list(response.partition_errors)
        by_id = {v: k for k, v in self.context.topic_ids.items()}
        for t in getattr(response, "topics", None) or []:
            name = by_id.get(t.topic_id)
            for pe in t.partition_errors:
                pe.topic_name = name or str(t.topic_id)
                errors.append(pe)
        for pe in errors:
            if pe.error_code:
                self.state_log.response_error("LeaderAndIsr", broker_id, TopicPartition(pe.topic_name, pe.partition_index), ErrorCode.of(pe.error_code).name)

    async def close(self) -> None:
        if self.rebalance_timer is not None:
            self.rebalance_timer.cancel()
        self.batch.discard()
        await self.channel.close()
