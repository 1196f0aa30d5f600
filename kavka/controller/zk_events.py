"""The controller's ZooKeeper side: the failover sequence and the handlers
of ZooKeeper-triggered events, each reading what changed (re-arming its
one-shot watch in the same read) and calling ``ActiveController``'s
reactions.

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
- ``on_watches_lost``: re-read everything (and re-arm every watch).

All run on the controller's event task.
"""

from __future__ import annotations

import asyncio
import logging
import uuid

from kavka.controller import preferred_election, reassignment_requests
from kavka.controller.active import ActiveController
from kavka.controller.context import ReplicaAssignment
from kavka.common.topic_partition import TopicPartition
from kavka.controller.events import BrokerChange, IsrChangeNotification, PartitionModifications, TopicChange, TopicDeletion
from kavka.controller.leader_isr_update import read_partition_states, reload_leadership
from kavka.zk.admin import DeleteTopicZNode
from kavka.zk.brokers import BrokerIdZNode, TopicZNode
from kavka.zk.notifications import ISR_CHANGE_NOTIFICATION_PATH, IsrChangeNotificationZNode
from kavka.zk.codec import ZnodeDataError
from kavka.zk.store_types import NoNodeError

log = logging.getLogger(__name__)

# Malformed ISR change notifications deleted per read before giving up.
_MAX_MALFORMED = 100


async def read_brokers(active: ActiveController, ids: list[int]) -> dict[int, tuple[BrokerIdZNode, int]]:
    """Registrations with their broker epochs (czxid of the ephemeral znode)."""
    store = active.zk.store

    async def one(broker_id: int) -> tuple[BrokerIdZNode, int] | None:
        path = BrokerIdZNode.path(broker_id)
        try:
            data, stat = await store.get(path)
            return BrokerIdZNode.decode(data, path), stat.czxid
        except NoNodeError:
            return None  # died between listing and reading
        except ZnodeDataError as e:
            log.error("controller: ignoring broker %d until it registers valid data: %s", broker_id, e)
            return None

    found = await asyncio.gather(*(one(i) for i in ids))
    return {i: f for i, f in zip(ids, found) if f is not None}


def _set_assignment(active: ActiveController, topic: TopicZNode, only: set[int] | None = None) -> list[TopicPartition]:
    ctx = active.context
    if topic.topic_id is not None:
        ctx.topic_ids[topic.topic] = topic.topic_id
    changed = []
    for p, replicas in topic.partitions.items():
        if only is not None and p not in only:
            continue
        tp = TopicPartition(topic.topic, p)
        ctx.update_assignment(tp, ReplicaAssignment(replicas, topic.adding_replicas.get(p, ()), topic.removing_replicas.get(p, ())))
        changed.append(tp)
    return changed


async def _read_topics(active: ActiveController, topics: list[str]) -> dict[str, TopicZNode]:
    """Each topic's assignment, arming its data watch (added partitions).
    A topic without a topic id (created by an older tool) gets one, written
    conditionally as Kafka's controller does (KIP-516), so LeaderAndIsr v5
    and UpdateMetadata v7 carry a real id."""

    async def one(topic: str) -> tuple[TopicZNode, int] | None:
        try:
            found = await active.zk.get_topic(topic, active.watch(PartitionModifications(topic)))
        except ZnodeDataError as e:  # the watch is set: a corrected znode is read again
            log.error("controller: ignoring topic %s until its assignment is valid: %s", topic, e)
            return None
        if found is None or found[0].topic_id is not None:
            return found
        node, version = found
        with_id = TopicZNode(node.topic, node.partitions, uuid.uuid4(), node.adding_replicas, node.removing_replicas)
        new_version = await active.zk.set_topic_assignment(with_id, version)
        if new_version is None:
            return found  # changed meanwhile: the data watch fires and it is read again
        log.info("controller: topic %s had no topic id; assigned %s", topic, with_id.topic_id)
        return with_id, new_version

    found = await asyncio.gather(*(one(t) for t in topics))
    return {t: f[0] for t, f in zip(topics, found) if f is not None}


async def on_controller_failover(active: ActiveController) -> None:
    zk, ctx, cfg = active.zk, active.context, active.config
    log.info("controller %d: failover for epoch %d", active.broker_id, ctx.epoch)
    await zk.create_top_level_paths()
    # Steps 4-6: watches first, then the reads they guard (a change between
    # the two is seen again by the watch).
    topics = await zk.get_topics(active.watch(TopicChange()))
    if cfg.delete_topic_enable:
        deletions = await zk.get_topic_deletions(active.watch(TopicDeletion()))
    else:
        deletions = await zk.get_topic_deletions()
    broker_ids = await zk.get_broker_ids(active.watch(BrokerChange()))
    notifications = await _isr_change_notifications(active)
    # Steps 2-3: operator requests (read with their watches; acted on below).
    reassign_node = await reassignment_requests.read_reassign_znode(active)
    preferred_node = await preferred_election.read_preferred_znode(active)
    # Step 7: the context.
    active.add_live_brokers(await read_brokers(active, broker_ids))
    for topic in (await _read_topics(active, topics)).values():
        _set_assignment(active, topic)
    states = await read_partition_states(zk, [(tp.topic, tp.partition) for tp in ctx.all_partitions()])
    for (t, p), (znode, version) in states.items():
        ctx.leadership[TopicPartition(t, p)] = znode.leader_isr_and_controller_epoch(version)
    # Notifications predate this controller, which has just read every state.
    await _delete_paths(active, [path for path, _ in notifications])
    # Step 12's input: queued deletions of existing topics; stale requests are removed.
    queued = [t for t in deletions if t in ctx.assignments] if cfg.delete_topic_enable else []
    stale = [t for t in deletions if t not in queued]
    if stale:
        why = "delete.topic.enable is false" if not cfg.delete_topic_enable else "no such topic"
        log.info("controller: removing deletion requests for %s (%s)", stale, why)
        await _delete_paths(active, [DeleteTopicZNode.path(t) for t in stale])
    active.deletion.init(queued)
    # Steps 8-10: state machines and the full state to every live broker.
    await active.start_state_machines()
    # Steps 2-3 continued: reassignments a previous controller left half
    # done (the topic znodes' adding/removing replicas) or never started.
    await active.reassigner.resume(await reassignment_requests.requested_reassignments(active, reassign_node))
    await preferred_election.on_preferred_replica_election(active, preferred_node)
    # Step 11: the auto leader rebalance.
    preferred_election.schedule_auto_rebalance(active, preferred_election.first_rebalance_delay(active))
    # Step 12: carry on with queued deletions.
    await active.deletion.resume()
    log.info("controller %d: epoch %d active with %d brokers, %d topics, %d partitions", active.broker_id, ctx.epoch,
             len(ctx.live_brokers), len(ctx.assignments), len(ctx.all_partitions()))


async def on_broker_change(active: ActiveController) -> None:
    ctx = active.context
    ids = await active.zk.get_broker_ids(active.watch(BrokerChange()))
    current = await read_brokers(active, ids)
    known = dict(ctx.broker_epochs)
    new = sorted(b for b in current if b not in known)
    dead = sorted(b for b in known if b not in current)
    bounced = sorted(b for b in current if b in known and current[b][1] != known[b])
    if not (new or dead or bounced):
        return
    log.info("controller: brokers started %s, died %s, restarted %s", new, dead, bounced)
    await active.remove_live_brokers(dead + bounced)
    if dead or bounced:
        await active.on_broker_failure(dead + bounced)
    active.add_live_brokers({b: current[b] for b in new + bounced})
    if new or bounced:
        await active.on_broker_startup(sorted(new + bounced))


async def on_topic_change(active: ActiveController) -> None:
    ctx = active.context
    topics = set(await active.zk.get_topics(active.watch(TopicChange())))
    gone = set(ctx.assignments) - topics
    for topic in sorted(gone):
        # Removed from ZooKeeper behind the controller's back (not through deletion).
        log.warning("controller: topic %s vanished from ZooKeeper; forgetting it", topic)
        active.partitions.forget_topic(topic)
        active.replicas.forget_topic(topic)
        ctx.remove_topic(topic)
    new = sorted(topics - set(ctx.assignments))
    if not new:
        return
    created: list[TopicPartition] = []
    for topic in (await _read_topics(active, new)).values():
        created += _set_assignment(active, topic)
    log.info("controller: new topics %s (%d partitions)", new, len(created))
    await active.on_new_partition_creation(created)


async def on_partition_modifications(active: ActiveController, topic_name: str) -> None:
    ctx = active.context
    found = (await _read_topics(active, [topic_name])).get(topic_name)
    if found is None:
        return  # deleted (the topic change handler forgets it) or still malformed
    topic = found
    # Not in the context: its assignment was malformed until now; all its partitions are new.
    added = set(topic.partitions) - set(ctx.assignments.get(topic_name, {}))
    if not added:
        return
    if active.deletion.is_queued(topic_name):
        log.warning("controller: ignoring %d partitions added to %s: the topic is being deleted", len(added), topic_name)
        return
    tps = _set_assignment(active, topic, only=added)
    log.info("controller: partitions %s added to topic %s", sorted(added), topic_name)
    await active.on_new_partition_creation(tps)


async def on_topic_deletion(active: ActiveController) -> None:
    if not active.config.delete_topic_enable:
        return
    requested = await active.zk.get_topic_deletions(active.watch(TopicDeletion()))
    unknown = [t for t in requested if t not in active.context.assignments]
    if unknown:
        log.info("controller: removing deletion requests for unknown topics %s", unknown)
        await _delete_paths(active, [DeleteTopicZNode.path(t) for t in unknown])
    await active.deletion.enqueue(t for t in requested if t in active.context.assignments)


async def on_isr_change_notification(active: ActiveController) -> None:
    ctx = active.context
    notifications = await _isr_change_notifications(active)
    if not notifications:
        return
    tps = sorted({TopicPartition(t, p) for _, n in notifications for t, p in n.partitions} & set(ctx.all_partitions()))
    if tps:
        await reload_leadership(active.zk, ctx, tps)
        active.batch.add_update_metadata(ctx.live_brokers, tps)
    await _delete_paths(active, [path for path, _ in notifications])
    # Seed 000 §Partition 重新分配 step 4: RAR may now be in the ISR.
    await active.reassigner.on_isr_change(tps)


async def _isr_change_notifications(active: ActiveController) -> list[tuple[str, IsrChangeNotificationZNode]]:
    """Pending notifications (arming the watch); a malformed one is logged
    and deleted — it can never be acted on."""
    for _ in range(_MAX_MALFORMED):
        try:
            return await active.zk.get_isr_change_notifications(active.watch(IsrChangeNotification()))
        except ZnodeDataError as e:
            log.error("controller: deleting malformed ISR change notification: %s", e)
            await _delete_paths(active, [e.path])
    raise ZnodeDataError(ISR_CHANGE_NOTIFICATION_PATH, f"more than {_MAX_MALFORMED} malformed notifications in a row")


async def on_watches_lost(active: ActiveController) -> None:
    """Same session, dropped watches: every handler re-reads and re-arms."""
    await on_broker_change(active)
    await on_topic_change(active)
    for topic in sorted(active.context.assignments):
        await on_partition_modifications(active, topic)
    await on_topic_deletion(active)
    await on_isr_change_notification(active)
    await reassignment_requests.on_reassign_partitions(active)
    await preferred_election.on_preferred_replica_election(active)
    await active.reassigner.rearm_isr_watches()


async def _delete_paths(active: ActiveController, paths: list[str]) -> None:
    for path in paths:
        try:
            await active.zk.store.delete(path)
        except NoNodeError:
            pass
