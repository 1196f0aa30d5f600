"""``ActiveController``: everything a broker holds while it is the
controller for one epoch, and the controller's reactions (seed 000
§Controller Failover, §Broker 启动过程, §Broker failover, §创建 Topic,
§删除 Topic; Kafka's KafkaController.on* and process* methods).

It is the epoch's composition root: it builds the context, the request
batch, both state machines, the topic deletion manager, the reassigner and
its request sources, and the elections on request, each with the
collaborators it uses (context, ZooKeeper client, claim, batch, channel,
state machines) — none of them holds this object.

Its reactions to ZooKeeper changes each read what changed (re-arming the
one-shot watch in the same read):

- ``on_controller_failover`` (seed 000 §Controller Failover steps 1-12;
  step 1 — read and bump the epoch — was the elector's election ``multi``;
  steps 2-3 arm the ``/admin/reassign_partitions`` and
  ``/admin/preferred_replica_election`` watches, whose pending requests are
  acted on once the state machines run: reassignments in progress are
  resumed, pending preferred elections run; step 11 arms the auto leader
  rebalance timer).
- ``on_broker_change`` (seed 000 §Broker failover step 1, §Broker 启动过程):
  a broker whose registration has a different czxid than known restarted in
  between (it is handled as dead, then new).
- ``on_topic_change`` / ``on_partition_modifications`` (seed 000 §创建 Topic).
- ``on_topic_deletion`` (seed 000 §删除 Topic).
- ``on_isr_change_notification``: leaders changed ISRs; re-read those
  partitions, UpdateMetadata to every broker, delete the notifications.
- ``on_log_dir_event_notification`` (KIP-112, Kafka's
  processLogDirEventNotification): brokers lost a log directory; every
  replica on them goes ONLINE again, i.e. gets a LeaderAndIsr, and
  ``on_leader_and_isr_response`` takes those answered KAFKA_STORAGE_ERROR
  offline (``on_replicas_become_offline``: leaders elected among the other
  ISR members, the replica out of the ISR); the notifications are deleted.
- ``on_watches_lost``: re-read everything (and re-arm every watch).

Created when the broker wins an epoch (``on_controller_failover`` runs the
failover steps), dropped when it resigns (``close``). Every method runs on
the controller's event task; after each event the controller calls
``batch.send_requests()``, and a broker failure also sends once its
elections are done, before the dead replicas leave the other ISRs
(``on_replicas_become_offline``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Callable, Iterable
from typing import cast

from kavka.common.errors import ErrorCode
from kavka.common.ids import BrokerEpoch, BrokerId, ControllerEpoch
from kavka.common.topic_partition import TopicPartition
from kavka.controller.channel import ControllerChannelManager
from kavka.controller.context import ControllerContext, PartitionReplica, ReplicaAssignment, as_broker_ids
from kavka.controller.event_manager import EventWatches
from kavka.controller.events import (
    BrokerChange,
    ControllerEvent,
    IsrChangeNotification,
    LeaderAndIsrResponseReceived,
    LogDirEventNotification,
    PartitionModifications,
    StopReplicaResponseReceived,
    TopicChange,
    TopicDeletion,
)
from kavka.controller.leader_isr_update import read_partition_states, reload_leadership
from kavka.controller.partition_state import PartitionState
from kavka.controller.partition_state_machine import PartitionStateMachine, UncleanPolicy
from kavka.controller.preferred_election import LeaderElections
from kavka.controller.reassignment import PartitionReassigner
from kavka.controller.reassignment_requests import ReassignmentRequests
from kavka.controller.replica_state import ReplicaState
from kavka.controller.replica_state_machine import ReplicaStateMachine
from kavka.controller.request_batch import ControllerBrokerRequestBatch
from kavka.controller.settings import ControllerConfig
from kavka.controller.state_change_log import StateChangeLogger
from kavka.controller.stats import ControllerStats
from kavka.controller.topic_deletion import TopicDeletionManager
from kavka.protocol.messages import LeaderAndIsrResponse, Message
from kavka.zk.admin import DeleteTopicZNode
from kavka.zk.brokers import BrokerIdZNode, TopicZNode
from kavka.zk.client import ControllerClaim, KavkaZkClient
from kavka.zk.codec import ZnodeDataError
from kavka.zk.notifications import (
    ISR_CHANGE_NOTIFICATION_PATH,
    LOG_DIR_EVENT_NOTIFICATION_PATH,
    IsrChangeNotificationZNode,
    LogDirEventNotificationZNode,
)
from kavka.zk.store_types import NoNodeError

log = logging.getLogger(__name__)

# Malformed ISR change notifications deleted per read before giving up.
_MAX_MALFORMED = 100


def unclean_policy(zk: KavkaZkClient, default: bool) -> UncleanPolicy:
    """``unclean.leader.election.enable``: the topic's override in
    ``/config/topics/<t>`` if set, else the broker's ``default`` (read only
    when an election needs it, as Kafka does)."""

    async def unclean_allowed(topic: str) -> bool:
        override = (await zk.get_entity_config("topics", topic)).get("unclean.leader.election.enable")
        if override is not None and override.strip().lower() in ("true", "false"):
            return override.strip().lower() == "true"
        return default

    return unclean_allowed


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
        stats: ControllerStats | None = None,
    ) -> None:
        self.broker_id = broker_id
        self.claim = claim
        self.zk = zk
        self.channel = channel
        self.config = config
        self.state_log = state_log
        state_log.epoch = claim.epoch
        self.watch = EventWatches(put)
        self.context = context = ControllerContext(epoch=ControllerEpoch(claim.epoch), epoch_zk_version=claim.epoch_zk_version)
        self.batch = batch = ControllerBrokerRequestBatch(
            broker_id,
            context,
            channel,
            config.inter_broker_listener_name,
            state_log,
            on_leader_and_isr_response=lambda b, req, resp: put(LeaderAndIsrResponseReceived(b, req, resp)),
            on_stop_replica_response=lambda b, req, resp: put(StopReplicaResponseReceived(b, req, resp)),
        )
        self.partitions = PartitionStateMachine(
            context, zk, claim, batch, state_log, unclean_policy(zk, config.unclean_leader_election_enable), stats)
        self.replicas = ReplicaStateMachine(context, zk, claim, batch, state_log)
        self.deletion = TopicDeletionManager(context, zk, self.partitions, self.replicas, batch)
        # Per epoch: reassignments in progress (seed 000 §Partition 重新分配)
        # and where they are requested, the elections on request and the
        # auto leader rebalance timer (failover step 11).
        self.reassigner = PartitionReassigner(
            context, zk, claim, self.partitions, self.replicas, self.deletion, batch, state_log, self.watch)
        self.reassignment_requests = ReassignmentRequests(context, zk, self.deletion, self.reassigner, self.watch)
        self.elections = LeaderElections(context, config, zk, self.partitions, self.deletion, self.watch, put)

    # -- live brokers ----------------------------------------------------------------------------
    def add_live_brokers(self, brokers: dict[BrokerId, tuple[BrokerIdZNode, BrokerEpoch]]) -> None:
        for broker_id, (node, epoch) in brokers.items():
            self.context.live_brokers[broker_id] = node
            self.context.replicas_on_offline_dirs.pop(broker_id, None)  # a restart brings its log dirs back
            self.context.broker_epochs[broker_id] = epoch
            endpoint = node.endpoint(self.config.inter_broker_listener_name)
            if endpoint is None:
                log.error("broker %d registered no %s listener; the controller cannot reach it", broker_id, self.config.inter_broker_listener_name)
                continue
            self.channel.add_broker(broker_id, endpoint)

    async def remove_live_brokers(self, ids: Iterable[BrokerId]) -> None:
        for broker_id in ids:
            self.context.live_brokers.pop(broker_id, None)
            self.context.broker_epochs.pop(broker_id, None)
            self.context.shutting_down.discard(broker_id)
            self.context.replicas_on_offline_dirs.pop(broker_id, None)
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
        self.batch.send_requests()  # the elected leaders first (see on_replicas_become_offline)
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
            # Every state was read in this failover (step 7), after these
            # brokers were gone, or written by its elections since: the ISR
            # removals read none of them again.
            await self.replicas.handle_state_changes(dead, ReplicaState.OFFLINE, confirmed=frozenset(self.context.leadership))

    async def on_new_partition_creation(self, tps: list[TopicPartition]) -> None:
        """Seed 000 §创建 Topic 3: NEW, then the first leader and ISR, ONLINE."""
        replicas = [PartitionReplica(tp, r) for tp in tps for r in self.context.partition_replicas(tp)]
        await self.partitions.handle_state_changes(tps, PartitionState.NEW)
        await self.replicas.handle_state_changes(replicas, ReplicaState.NEW)
        await self.partitions.handle_state_changes(tps, PartitionState.ONLINE)
        await self.replicas.handle_state_changes(replicas, ReplicaState.ONLINE)

    async def on_broker_startup(self, new: list[BrokerId]) -> None:
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

    async def on_broker_failure(self, dead: list[BrokerId]) -> None:
        """Seed 000 §Broker failover steps 2-4: set_p = partitions led by a
        dead broker -> OFFLINE -> elected from the live ISR; the dead
        replicas -> OFFLINE (they leave the ISRs); LeaderAndIsr batched per
        broker; every live broker learns the broker is gone."""
        replicas = self.context.replicas_on_brokers(dead)
        await self.on_replicas_become_offline(replicas)

    async def on_replicas_become_offline(self, replicas: list[PartitionReplica]) -> None:
        """Kafka's onReplicasBecomeOffline: the replicas' broker died, or
        their log directory failed (KIP-112). Partitions led by one of them
        go OFFLINE and are elected again among the online ISR members; the
        replicas go OFFLINE (out of the ISR)."""
        offline = set(replicas)
        set_p = [
            tp
            for tp, entry in sorted(self.context.leadership.items())
            if PartitionReplica(tp, entry.leader_and_isr.leader) in offline and not self.deletion.is_queued(tp.topic)
        ]
        await self.partitions.handle_state_changes(set_p, PartitionState.OFFLINE)
        await self.partitions.trigger_online_partition_state_change()
        # The new leaders are told now, as Kafka's PartitionStateMachine
        # sends its batch at the end of each handleStateChanges: not after
        # the dead replicas leave the ISR of every other partition they were
        # in (a write per partition; at 10,000 partitions of RF 3 twice as
        # many as the elections), which would keep the partitions it led
        # without a leader that knows it until those writes are done.
        self.batch.send_requests()
        # The elections just wrote (or, where none was possible, read) the
        # state of every partition in set_p, whose new ISR holds no offline
        # replica: removing the replicas from them reads nothing again.
        await self.replicas.handle_state_changes([r for r in replicas if not self.deletion.is_queued(r.tp.topic)], ReplicaState.OFFLINE,
                                                 confirmed=set(set_p))
        await self.deletion.fail_replicas([r for r in replicas if self.deletion.is_queued(r.tp.topic)])
        if not set_p:
            self.batch.add_update_metadata(self.context.live_brokers, [])

    async def on_leader_and_isr_response(self, broker_id: int, request: Message, response: Message | None) -> None:
        """Errors per partition go to state-change.log. KIP-112 (Kafka's
        LeaderAndIsrResponseReceived): the partitions answered
        KAFKA_STORAGE_ERROR are in a failed log directory of the broker,
        those answered NONE are not; replicas newly found offline go through
        ``on_replicas_become_offline``."""
        if response is None:
            return
        response = cast(LeaderAndIsrResponse, response)  # the answer to the batch's LeaderAndIsr
        if response.error_code:
            log.warning("controller: broker %d refused LeaderAndIsr: %s", broker_id, ErrorCode.of(response.error_code).name)
            return
        errors = list(response.partition_errors)
        by_id = {v: k for k, v in self.context.topic_ids.items()}
        for t in getattr(response, "topics", None) or []:
            name = by_id.get(t.topic_id)
            for pe in t.partition_errors:
                pe.topic_name = name or str(t.topic_id)
                errors.append(pe)
        offline: set[TopicPartition] = set()
        online: set[TopicPartition] = set()
        held = 0
        for pe in errors:
            tp = TopicPartition(pe.topic_name, pe.partition_index)
            if pe.error_code == ErrorCode.KAFKA_STORAGE_ERROR:
                offline.add(tp)
            elif pe.error_code == ErrorCode.NONE:
                online.add(tp)
            elif pe.error_code == ErrorCode.STALE_CONTROLLER_EPOCH:
                held += 1
                continue
            if pe.error_code:
                self.state_log.response_error("LeaderAndIsr", broker_id, tp, ErrorCode.of(pe.error_code).name)
        if held:
            self.state_log.already_held("LeaderAndIsr", broker_id, held)
        ctx = self.context
        b = BrokerId(broker_id)
        if b not in ctx.live_brokers:
            return  # died meanwhile: its replicas are offline anyway
        previous = ctx.replicas_on_offline_dirs.get(b, set())
        current = (previous - online) | offline
        if current:
            ctx.replicas_on_offline_dirs[b] = current
        else:
            ctx.replicas_on_offline_dirs.pop(b, None)
        new = sorted(current - previous)
        if new:
            log.info("controller: mark replicas %s on broker %d as offline (their log directory failed)",
                     ", ".join(str(tp) for tp in new), broker_id)
            await self.on_replicas_become_offline([PartitionReplica(tp, b) for tp in new])

    # -- ZooKeeper changes (each re-arms its watch in the same read) -----------------------------

    async def _read_brokers(self, ids: list[BrokerId]) -> dict[BrokerId, tuple[BrokerIdZNode, BrokerEpoch]]:
        """Registrations with their broker epochs (czxid of the ephemeral znode)."""
        store = self.zk.store

        async def one(broker_id: BrokerId) -> tuple[BrokerIdZNode, BrokerEpoch] | None:
            path = BrokerIdZNode.path(broker_id)
            try:
                data, stat = await store.get(path)
                return BrokerIdZNode.decode(data, path), BrokerEpoch(stat.czxid)
            except NoNodeError:
                return None  # died between listing and reading
            except ZnodeDataError as e:
                log.error("controller: ignoring broker %d until it registers valid data: %s", broker_id, e)
                return None

        found = await asyncio.gather(*(one(i) for i in ids))
        return {i: f for i, f in zip(ids, found, strict=True) if f is not None}

    def _set_assignment(self, topic: TopicZNode, only: set[int] | None = None) -> list[TopicPartition]:
        ctx = self.context
        if topic.topic_id is not None:
            ctx.topic_ids[topic.topic] = topic.topic_id
        changed = []
        for p, replicas in topic.partitions.items():
            if only is not None and p not in only:
                continue
            tp = TopicPartition(topic.topic, p)
            ctx.update_assignment(tp, ReplicaAssignment(as_broker_ids(replicas), as_broker_ids(topic.adding_replicas.get(p, ())),
                                                        as_broker_ids(topic.removing_replicas.get(p, ()))))
            changed.append(tp)
        return changed

    async def _read_topics(self, topics: list[str]) -> dict[str, TopicZNode]:
        """Each topic's assignment, arming its data watch (added partitions).
        A topic without a topic id (created by an older tool) gets one, written
        conditionally as Kafka's controller does (KIP-516), so LeaderAndIsr v5
        and UpdateMetadata v7 carry a real id."""

        async def one(topic: str) -> tuple[TopicZNode, int] | None:
            try:
                found = await self.zk.get_topic(topic, self.watch(PartitionModifications(topic)))
            except ZnodeDataError as e:  # the watch is set: a corrected znode is read again
                log.error("controller: ignoring topic %s until its assignment is valid: %s", topic, e)
                return None
            if found is None or found[0].topic_id is not None:
                return found
            node, version = found
            with_id = TopicZNode(node.topic, node.partitions, uuid.uuid4(), node.adding_replicas, node.removing_replicas)
            new_version = await self.zk.set_topic_assignment(with_id, version)
            if new_version is None:
                return found  # changed meanwhile: the data watch fires and it is read again
            log.info("controller: topic %s had no topic id; assigned %s", topic, with_id.topic_id)
            return with_id, new_version

        found = await asyncio.gather(*(one(t) for t in topics))
        return {t: f[0] for t, f in zip(topics, found, strict=True) if f is not None}

    async def on_controller_failover(self) -> None:
        zk, ctx, cfg = self.zk, self.context, self.config
        log.info("controller %d: failover for epoch %d", self.broker_id, ctx.epoch)
        await zk.create_top_level_paths()
        # Steps 4-6: watches first, then the reads they guard (a change between
        # the two is seen again by the watch).
        topics = await zk.get_topics(self.watch(TopicChange()))
        if cfg.delete_topic_enable:
            deletions = await zk.get_topic_deletions(self.watch(TopicDeletion()))
        else:
            deletions = await zk.get_topic_deletions()
        broker_ids = await zk.get_broker_ids(self.watch(BrokerChange()))
        notifications = await self._isr_change_notifications()
        log_dir_events = await self._log_dir_event_notifications()
        # Steps 2-3: operator requests (read with their watches; acted on below).
        reassign_node = await self.reassignment_requests.read_znode()
        preferred_node = await self.elections.read_znode()
        # Step 7: the context.
        self.add_live_brokers(await self._read_brokers(broker_ids))
        for topic in (await self._read_topics(topics)).values():
            self._set_assignment(topic)
        states = await read_partition_states(zk, [(tp.topic, tp.partition) for tp in ctx.all_partitions()])
        for (t, p), (znode, version) in states.items():
            ctx.leadership[TopicPartition(t, p)] = znode.leader_isr_and_controller_epoch(version)
        # Notifications predate this controller, which has just read every
        # state; a failed log directory shows in the answers to the
        # LeaderAndIsr the state machines' startup sends every live replica.
        await self._delete_paths([path for path, _ in notifications + log_dir_events])
        # Step 12's input: queued deletions of existing topics; stale requests are removed.
        queued = [t for t in deletions if t in ctx.assignments] if cfg.delete_topic_enable else []
        stale = [t for t in deletions if t not in queued]
        if stale:
            why = "delete.topic.enable is false" if not cfg.delete_topic_enable else "no such topic"
            log.info("controller: removing deletion requests for %s (%s)", stale, why)
            await self._delete_paths([DeleteTopicZNode.path(t) for t in stale])
        self.deletion.init(queued)
        # Steps 8-10: state machines and the full state to every live broker.
        await self.start_state_machines()
        # Steps 2-3 continued: reassignments a previous controller left half
        # done (the topic znodes' adding/removing replicas) or never started.
        await self.reassigner.resume(await self.reassignment_requests.requested(reassign_node))
        await self.elections.on_preferred_replica_election(preferred_node)
        # Step 11: the auto leader rebalance.
        self.elections.schedule_auto_rebalance(self.elections.first_rebalance_delay())
        # Step 12: carry on with queued deletions.
        await self.deletion.resume()
        log.info("controller %d: epoch %d active with %d brokers, %d topics, %d partitions", self.broker_id, ctx.epoch,
                 len(ctx.live_brokers), len(ctx.assignments), len(ctx.all_partitions()))

    async def on_broker_change(self) -> None:
        ctx = self.context
        ids = await self.zk.get_broker_ids(self.watch(BrokerChange()))
        current = await self._read_brokers(ids)
        known = dict(ctx.broker_epochs)
        new = sorted(b for b in current if b not in known)
        dead = sorted(b for b in known if b not in current)
        bounced = sorted(b for b in current if b in known and current[b][1] != known[b])
        if not (new or dead or bounced):
            return
        log.info("controller: brokers started %s, died %s, restarted %s", new, dead, bounced)
        await self.remove_live_brokers(dead + bounced)
        if dead or bounced:
            await self.on_broker_failure(dead + bounced)
        self.add_live_brokers({b: current[b] for b in new + bounced})
        if new or bounced:
            await self.on_broker_startup(sorted(new + bounced))

    async def on_topic_change(self) -> None:
        ctx = self.context
        topics = set(await self.zk.get_topics(self.watch(TopicChange())))
        gone = set(ctx.assignments) - topics
        for topic in sorted(gone):
            # Removed from ZooKeeper behind the controller's back (not through deletion).
            log.warning("controller: topic %s vanished from ZooKeeper; forgetting it", topic)
            self.partitions.forget_topic(topic)
            self.replicas.forget_topic(topic)
            ctx.remove_topic(topic)
        new = sorted(topics - set(ctx.assignments))
        if not new:
            return
        created: list[TopicPartition] = []
        for node in (await self._read_topics(new)).values():
            created += self._set_assignment(node)
        log.info("controller: new topics %s (%d partitions)", new, len(created))
        await self.on_new_partition_creation(created)

    async def on_partition_modifications(self, topic_name: str) -> None:
        ctx = self.context
        found = (await self._read_topics([topic_name])).get(topic_name)
        if found is None:
            return  # deleted (the topic change handler forgets it) or still malformed
        topic = found
        # Not in the context: its assignment was malformed until now; all its partitions are new.
        added = set(topic.partitions) - set(ctx.assignments.get(topic_name, {}))
        if not added:
            return
        if self.deletion.is_queued(topic_name):
            log.warning("controller: ignoring %d partitions added to %s: the topic is being deleted", len(added), topic_name)
            return
        tps = self._set_assignment(topic, only=added)
        log.info("controller: partitions %s added to topic %s", sorted(added), topic_name)
        await self.on_new_partition_creation(tps)

    async def on_topic_deletion(self) -> None:
        if not self.config.delete_topic_enable:
            return
        requested = await self.zk.get_topic_deletions(self.watch(TopicDeletion()))
        unknown = [t for t in requested if t not in self.context.assignments]
        if unknown:
            log.info("controller: removing deletion requests for unknown topics %s", unknown)
            await self._delete_paths([DeleteTopicZNode.path(t) for t in unknown])
        await self.deletion.enqueue(t for t in requested if t in self.context.assignments)

    async def on_isr_change_notification(self) -> None:
        ctx = self.context
        notifications = await self._isr_change_notifications()
        if not notifications:
            return
        tps = sorted({TopicPartition(t, p) for _, n in notifications for t, p in n.partitions} & set(ctx.all_partitions()))
        if tps:
            await reload_leadership(self.zk, ctx, tps)
            self.batch.add_update_metadata(ctx.live_brokers, tps)
        await self._delete_paths([path for path, _ in notifications])
        # Seed 000 §Partition 重新分配 step 4: RAR may now be in the ISR.
        await self.reassigner.on_isr_change(tps)

    async def _isr_change_notifications(self) -> list[tuple[str, IsrChangeNotificationZNode]]:
        """Pending notifications (arming the watch); a malformed one is logged
        and deleted — it can never be acted on."""
        for _ in range(_MAX_MALFORMED):
            try:
                return await self.zk.get_isr_change_notifications(self.watch(IsrChangeNotification()))
            except ZnodeDataError as e:
                log.error("controller: deleting malformed ISR change notification: %s", e)
                await self._delete_paths([e.path])
        raise ZnodeDataError(ISR_CHANGE_NOTIFICATION_PATH, f"more than {_MAX_MALFORMED} malformed notifications in a row")

    async def on_log_dir_event_notification(self) -> None:
        notifications = await self._log_dir_event_notifications()
        if not notifications:
            return
        try:
            await self.on_broker_log_dir_failure(sorted({BrokerId(n.broker_id) for _, n in notifications}))
        finally:
            await self._delete_paths([path for path, _ in notifications])

    async def on_broker_log_dir_failure(self, broker_ids: list[BrokerId]) -> None:
        """Kafka's onBrokerLogDirFailure: a LeaderAndIsr for every replica on
        the brokers, to learn which are still online."""
        live = [b for b in broker_ids if b in self.context.live_brokers]
        log.info("controller: handling log directory failure for brokers %s", live)
        replicas = self.context.replicas_on_brokers(live)
        await self.replicas.handle_state_changes([r for r in replicas if not self.deletion.is_queued(r.tp.topic)],
                                                 ReplicaState.ONLINE)

    async def _log_dir_event_notifications(self) -> list[tuple[str, LogDirEventNotificationZNode]]:
        """Pending log dir events (arming the watch); a malformed one is
        logged and deleted."""
        for _ in range(_MAX_MALFORMED):
            try:
                return await self.zk.get_log_dir_event_notifications(self.watch(LogDirEventNotification()))
            except ZnodeDataError as e:
                log.error("controller: deleting malformed log dir event notification: %s", e)
                await self._delete_paths([e.path])
        raise ZnodeDataError(LOG_DIR_EVENT_NOTIFICATION_PATH, f"more than {_MAX_MALFORMED} malformed notifications in a row")

    async def on_watches_lost(self) -> None:
        """Same session, dropped watches: every handler re-reads and re-arms."""
        await self.on_broker_change()
        await self.on_topic_change()
        for topic in sorted(self.context.assignments):
            await self.on_partition_modifications(topic)
        await self.on_topic_deletion()
        await self.on_isr_change_notification()
        await self.on_log_dir_event_notification()
        await self.reassignment_requests.on_reassign_partitions()
        await self.elections.on_preferred_replica_election()
        await self.reassigner.rearm_isr_watches()

    async def _delete_paths(self, paths: list[str]) -> None:
        for path in paths:
            with contextlib.suppress(NoNodeError):
                await self.zk.store.delete(path)

    async def close(self) -> None:
        self.elections.close()
        self.batch.discard()
        await self.channel.close()
