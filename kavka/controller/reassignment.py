"""``PartitionReassigner``: moving a partition's replicas from OAR (the
original replicas) to RAR (the reassigned ones), exactly as seed 000
§Partition 重新分配 steps 1-11 (Kafka's KafkaController.onPartitionReassignment).

Phase A, when RAR is not yet all in the ISR (``reassign``):

1. AR = OAR + RAR in ZooKeeper (``/brokers/topics/<t>``), with KIP-455's
   ``adding_replicas`` (RAR - OAR) and ``removing_replicas`` (OAR - RAR),
   which record that the partition is mid-reassignment so that a new
   controller resumes it (failover: ``resume``);
2. the leader epoch is bumped in ZooKeeper and LeaderAndIsr goes to every
   replica of AR;
3. the replicas of RAR - OAR go NEW (LeaderAndIsr ``is_new``: they start
   fetching from the leader);
4. wait until every replica of RAR is in the ISR: a data watch on the
   partition's state znode (Kafka's ReassignedPartitionsIsrChangeListener)
   and the leaders' ISR change notifications bring the controller back
   (``on_state_znode_change``, ``on_isr_change``).

Phase B, once RAR is in the ISR (``_complete``):

5. the replicas of RAR go ONLINE;
6. AR = RAR in the controller's cache;
7. if the leader is not in RAR (or not alive), a leader is elected from RAR
   (``elect_for_reassigned_partition``); otherwise the leader epoch is
   bumped; LeaderAndIsr to RAR either way;
8. the replicas of OAR - RAR go OFFLINE: they leave the ISR in ONE
   conditional write (the seed's table goes from 4/{1,2,3,4,5,6} straight to
   4/{4,5,6}), the leader learns it by LeaderAndIsr, and they get
   StopReplica;
9. they go NON_EXISTENT through ReplicaDeletionStarted (StopReplica with
   delete: their logs are removed);
10. AR = RAR in ZooKeeper (adding/removing cleared) — last, because the topic
    znode is the only durable record: a controller that dies before this
    step leaves a state the next one can finish;
11. the partition is removed from ``/admin/reassign_partitions`` (the znode
    is deleted when it lists nothing more).

A new target for a partition already being reassigned replaces the old one
(KIP-455): OAR stays the original replicas, replicas only the old target
wanted are stopped and deleted. ``cancel`` reverts to OAR.

Ordering note: during a reassignment AR is OAR followed by RAR - OAR (the
seed's table), so the preferred replica does not change until step 10.
RAR's own order — which becomes the final AR — is kept in ``targets``;
after a controller failover it is re-read from ``/admin/reassign_partitions``
when the request came from there, or taken in AR order otherwise.

``remove_from_reassign_znode`` is step 11 on ``/admin/reassign_partitions``
(where ``reassignment_requests`` reads the tool's requests).

Used only from the controller's event task; the ``ActiveController`` of the
epoch builds the reassigner with the collaborators it uses.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from kavka.common.ids import NO_LEADER, BrokerId
from kavka.common.leader_and_isr import LeaderAndIsr
from kavka.common.topic_partition import TopicPartition
from kavka.controller.context import ControllerContext, PartitionReplica, ReplicaAssignment
from kavka.controller.election import ElectionResult, elect_for_reassigned_partition
from kavka.controller.event_manager import EventWatches
from kavka.controller.events import PartitionReassignmentIsrChange
from kavka.controller.leader_isr_update import reload_leadership, update_leader_and_isr
from kavka.controller.partition_state import PartitionState
from kavka.controller.partition_state_machine import PartitionStateMachine
from kavka.controller.replica_state import ReplicaState
from kavka.controller.replica_state_machine import ReplicaStateMachine
from kavka.controller.request_batch import ControllerBrokerRequestBatch
from kavka.controller.state_change_log import StateChangeLogger
from kavka.controller.topic_deletion import TopicDeletionManager
from kavka.zk.admin import REASSIGN_PARTITIONS_PATH, ReassignPartitionsZNode
from kavka.zk.brokers import PartitionStateZNode, TopicZNode
from kavka.zk.client import ControllerClaim, KavkaZkClient
from kavka.zk.codec import ZnodeDataError
from kavka.zk.store_types import BadVersionError, NoNodeError, ZkStore

log = logging.getLogger(__name__)

# Conditional writes of a topic's assignment retried when the topic znode moved.
_MAX_TOPIC_WRITES = 10
# Conditional rewrites of /admin/reassign_partitions retried when a tool wrote meanwhile.
_MAX_ZNODE_WRITES = 10


class ReassignmentError(Exception):
    """The topic znode could not be updated (vanished, or kept changing)."""


class PartitionReassigner:
    """The reassignments of one controller epoch (see module doc).

    ``targets``: RAR (in its requested order) of each partition being
    reassigned; ``from_znode``: those listed in ``/admin/reassign_partitions``
    (step 11 removes them there); ``completed``: partitions whose
    reassignment finished, in order (logs and tests)."""

    def __init__(
        self,
        context: ControllerContext,
        zk: KavkaZkClient,
        claim: ControllerClaim,
        partitions: PartitionStateMachine,
        replicas: ReplicaStateMachine,
        deletion: TopicDeletionManager,
        batch: ControllerBrokerRequestBatch,
        state_log: StateChangeLogger,
        watches: EventWatches,
    ) -> None:
        self.context = context
        self.zk = zk
        self.claim = claim
        self.partitions = partitions
        self.replicas = replicas
        self.deletion = deletion
        self.batch = batch
        self.state_log = state_log
        self.watches = watches
        self.targets: dict[TopicPartition, tuple[BrokerId, ...]] = {}
        self.from_znode: set[TopicPartition] = set()
        self.completed: list[TopicPartition] = []
        self._isr_watched: set[TopicPartition] = set()  # state znodes with an armed watch

    # -- queries -----------------------------------------------------------------------------

    def in_progress(self) -> list[TopicPartition]:
        """Partitions being reassigned: with a target here, or with KIP-455
        adding/removing replicas in their assignment."""
        return sorted(set(self.targets) | set(self.context.partitions_being_reassigned()))

    def target(self, tp: TopicPartition) -> tuple[BrokerId, ...] | None:
        if tp in self.targets:
            return self.targets[tp]
        a = self.context.assignment(tp)
        return a.target_replicas if a is not None and a.is_being_reassigned else None

    def _caught_up(self, tp: TopicPartition, target: tuple[BrokerId, ...]) -> bool:
        """Step 4's condition: every replica of RAR is in the ISR."""
        lai = self.context.leader_and_isr(tp)
        return lai is not None and set(target) <= set(lai.isr)

    # -- entry points ------------------------------------------------------------------------

    async def reassign(self, tp: TopicPartition, target: tuple[BrokerId, ...]) -> None:
        """Start (or replace) the reassignment of ``tp`` to ``target``
        (already validated: the partition exists and every broker is live)."""
        ctx = self.context
        current = ctx.assignment(tp)
        assert current is not None
        original = current.original_replicas if current.is_being_reassigned else current.replicas
        new = ReplicaAssignment.for_reassignment(original, target)
        stale = [r for r in current.replicas if r not in new.replicas]  # wanted only by a replaced target
        self.targets[tp] = tuple(target)
        log.info("controller: reassigning %s from %s to %s", tp, list(original), list(target))
        if self._caught_up(tp, tuple(target)):
            # Nothing to wait for (a shrink, a reorder, or a resumed
            # reassignment whose new replicas caught up): straight to phase B,
            # whose steps 8-9 also stop replicas only a replaced target wanted.
            await self._complete(tp)
            return
        if new != current:
            await self._write_assignments(tp.topic, {tp.partition: new})  # step 1
        ctx.update_assignment(tp, new)
        if stale:
            await self._remove_replicas(tp, stale)
        await self._bump_leader_epoch(tp, new.replicas, "reassignment started")  # step 2
        replicas = self.replicas
        starting = [PartitionReplica(tp, r) for r in new.adding if replicas.states.state(PartitionReplica(tp, r)) is ReplicaState.NON_EXISTENT]
        await replicas.handle_state_changes(starting, ReplicaState.NEW)  # step 3
        # Step 4: on_isr_change continues when the leader reports RAR in the
        # ISR — through its ISR change notification, or at once through this
        # data watch on the state znode (Kafka's ReassignedPartitionsIsrChangeListener).
        await self.watch_isr(tp)

    async def cancel(self, tp: TopicPartition) -> bool:
        """KIP-455 cancellation: back to OAR. False if none is in progress."""
        a = self.context.assignment(tp)
        if a is None or not (a.is_being_reassigned or tp in self.targets):
            return False
        log.info("controller: cancelling the reassignment of %s; back to %s", tp, list(a.original_replicas))
        await self.reassign(tp, a.original_replicas)
        return True

    async def watch_isr(self, tp: TopicPartition) -> None:
        """Arm the one-shot watch on the partition's state znode, once."""
        if tp in self._isr_watched:
            return
        self._isr_watched.add(tp)
        path = PartitionStateZNode.path(tp.topic, tp.partition)
        await self.zk.store.exists(path, self.watches(PartitionReassignmentIsrChange(tp.topic, tp.partition)))

    async def on_state_znode_change(self, tp: TopicPartition) -> None:
        """The watch fired: re-read the state, re-arm while still moving, and
        complete if RAR is in the ISR now."""
        self._isr_watched.discard(tp)
        if tp not in self.in_progress():
            return
        await reload_leadership(self.zk, self.context, [tp])
        self.batch.add_update_metadata(self.context.live_brokers, [tp])
        await self.watch_isr(tp)
        await self.on_isr_change([tp])

    async def rearm_isr_watches(self) -> None:
        """The connection dropped every watch (same session): arm them again."""
        self._isr_watched.clear()
        for tp in self.in_progress():
            await self.on_state_znode_change(tp)

    async def on_isr_change(self, tps: Iterable[TopicPartition]) -> None:
        """Step 4 -> 5: partitions whose ISR now holds all of RAR complete."""
        for tp in sorted(set(tps) & set(self.in_progress())):
            target = self.target(tp)
            if target is not None and self._caught_up(tp, target):
                await self._complete(tp)

    async def resume(self, requested: dict[TopicPartition, tuple[BrokerId, ...]]) -> None:
        """Controller failover: carry on with every reassignment in progress —
        those listed in ``/admin/reassign_partitions`` (``requested``, already
        validated) and those the topic znodes record (adding/removing)."""
        pending = {tp: self.context.assignment(tp).target_replicas for tp in self.context.partitions_being_reassigned()}  # type: ignore[union-attr]
        pending.update(requested)
        self.from_znode |= set(requested)
        if pending:
            log.info("controller: resuming %d partition reassignments", len(pending))
        for tp, target in sorted(pending.items()):
            await self.reassign(tp, target)

    # -- phase B ---------------------------------------------------------------------------------

    async def _complete(self, tp: TopicPartition) -> None:
        ctx = self.context
        current = ctx.assignment(tp)
        target = self.target(tp)
        if current is None or target is None:
            self.targets.pop(tp, None)
            return
        lai = ctx.leader_and_isr(tp)
        live = ctx.live_broker_ids
        move_leader = lai is None or lai.leader not in target or lai.leader not in live
        if move_leader and (lai is None or elect_for_reassigned_partition(target, lai.isr, live) is None):
            # No replica of RAR can lead right now (one died after catching
            # up): stay in phase A; the next ISR or broker change retries.
            log.warning("controller: reassignment of %s waits: no live replica of %s in the isr", tp, list(target))
            return
        removing = [r for r in current.replicas if r not in target]
        await self.replicas.handle_state_changes([PartitionReplica(tp, r) for r in target], ReplicaState.ONLINE)  # step 5
        ctx.update_assignment(tp, ReplicaAssignment(target))  # step 6
        if move_leader:  # step 7

            def from_target(tp: TopicPartition, lai: LeaderAndIsr, live: set[BrokerId]) -> ElectionResult | None:
                return elect_for_reassigned_partition(target, lai.isr, live)

            await self.partitions.handle_state_changes([tp], PartitionState.ONLINE, from_target)
        else:
            await self._bump_leader_epoch(tp, target, "reassignment completing")
        if removing:
            await self._remove_replicas(tp, removing)  # steps 8-9
        await self._write_assignments(tp.topic, {tp.partition: ReplicaAssignment(target)})  # step 10
        self.targets.pop(tp, None)
        self.completed.append(tp)
        log.info("controller: reassignment of %s to %s completed", tp, list(target))
        if tp in self.from_znode:  # step 11
            self.from_znode.discard(tp)
            await remove_from_reassign_znode(self.zk.store, [tp])
        await self._resume_deletion(tp.topic)

    async def _resume_deletion(self, topic: str) -> None:
        """A topic queued for deletion waited for its reassignments (seed 000:
        deletion is ineligible meanwhile)."""
        if not self.deletion.is_queued(topic) or any(tp.topic == topic for tp in self.in_progress()):
            return
        self.context.topics_ineligible_for_deletion.discard(topic)
        await self.deletion.resume()

    # -- steps ---------------------------------------------------------------------------------

    async def _bump_leader_epoch(self, tp: TopicPartition, recipients: Iterable[BrokerId], why: str) -> None:
        """Steps 2 and 7: the same leader and ISR with the leader epoch + 1,
        so every replica acts on the new assignment (a replica ignores a
        LeaderAndIsr whose epoch it has seen)."""
        recipients = list(recipients)
        outcome = await update_leader_and_isr(
            self.zk, self.claim, self.context, [tp], lambda tp, lai: lai.new_leader_and_isr(lai.leader, lai.isr)
        )
        for tp, lai in outcome.written.items():
            self.state_log.leader_and_isr_written(tp, lai, why)
            self.batch.add_leader_and_isr(recipients, tp)
        for tp, why_not in outcome.failed.items():
            self.state_log.election_failed(tp, f"could not bump the leader epoch ({why}): {why_not}")

    async def _remove_replicas(self, tp: TopicPartition, removing: list[BrokerId]) -> None:
        """Steps 8-9 for ``removing``: out of the ISR in one conditional
        write (LeaderAndIsr to the remaining replicas), then OFFLINE
        (StopReplica), ReplicaDeletionStarted (StopReplica with delete),
        ReplicaDeletionSuccessful and NON_EXISTENT."""
        gone = set(removing)
        live = self.context.live_broker_ids

        def shrink(tp: TopicPartition, lai: LeaderAndIsr) -> LeaderAndIsr | None:
            isr = tuple(i for i in lai.isr if i not in gone) or lai.isr[-1:]
            leader = lai.leader
            if leader in gone:
                # Only when a replaced target's replica had become leader: the
                # first remaining in-sync replica takes over (none: offline).
                leader = next((r for r in self.context.partition_replicas(tp) if r in isr and r in live and r not in gone), NO_LEADER)
            if isr == lai.isr and leader == lai.leader:
                return None
            return lai.new_leader_and_isr(leader, isr)

        outcome = await update_leader_and_isr(self.zk, self.claim, self.context, [tp], shrink)
        for tp, lai in outcome.written.items():
            self.state_log.leader_and_isr_written(tp, lai, f"reassignment removed replicas {sorted(gone)} from the isr")
            self.batch.add_leader_and_isr([r for r in self.context.partition_replicas(tp) if r not in gone], tp)
        for tp, why in outcome.failed.items():
            self.state_log.election_failed(tp, f"could not remove replicas {sorted(gone)} from the isr: {why}")
        replicas = [PartitionReplica(tp, r) for r in removing]
        states = self.replicas.states
        await self.replicas.handle_state_changes([r for r in replicas if states.state(r) is not ReplicaState.OFFLINE], ReplicaState.OFFLINE)
        for state in (ReplicaState.DELETION_STARTED, ReplicaState.DELETION_SUCCESSFUL, ReplicaState.NON_EXISTENT):
            await self.replicas.handle_state_changes(replicas, state)

    async def _write_assignments(self, topic: str, changes: dict[int, ReplicaAssignment]) -> None:
        """Steps 1 and 10: rewrite partitions' replicas (and KIP-455's
        adding/removing) in ``/brokers/topics/<topic>``, conditionally on its
        version and fenced by the controller epoch; re-read on a conflict."""
        for _ in range(_MAX_TOPIC_WRITES):
            found = await self.zk.get_topic(topic)
            if found is None:
                raise ReassignmentError(f"topic {topic} vanished from ZooKeeper during a reassignment")
            node, version = found
            partitions = dict(node.partitions)
            adding = dict(node.adding_replicas)
            removing = dict(node.removing_replicas)
            for p, a in changes.items():
                partitions[p] = a.replicas
                adding.pop(p, None)
                removing.pop(p, None)
                if a.adding:
                    adding[p] = a.adding
                if a.removing:
                    removing[p] = a.removing
            new = TopicZNode(topic, partitions, node.topic_id, adding, removing)
            if new == node or await self.zk.set_topic_assignment_fenced(self.claim, new, version) is not None:
                return
        raise ReassignmentError(f"the assignment of topic {topic} kept changing during {_MAX_TOPIC_WRITES} attempts")


async def remove_from_reassign_znode(store: ZkStore, tps: Iterable[TopicPartition]) -> None:
    """Step 11: drop ``tps`` from ``/admin/reassign_partitions``, conditionally
    on its version (a tool may write meanwhile); delete it when empty."""
    done = {(tp.topic, tp.partition) for tp in tps}
    for _ in range(_MAX_ZNODE_WRITES):
        try:
            data, stat = await store.get(REASSIGN_PARTITIONS_PATH)
        except NoNodeError:
            return
        try:
            node = ReassignPartitionsZNode.decode(data)
        except ZnodeDataError:
            return  # the watch handler deletes it
        left = tuple(e for e in node.reassignments if (e[0], e[1]) not in done)
        if len(left) == len(node.reassignments):
            return
        try:
            if left:
                await store.set(REASSIGN_PARTITIONS_PATH, ReassignPartitionsZNode(left).encode(), stat.version)
            else:
                await store.delete(REASSIGN_PARTITIONS_PATH, stat.version)
            return
        except (BadVersionError, NoNodeError):
            continue
    log.warning("controller: %s kept changing; completed reassignments may still be listed there", REASSIGN_PARTITIONS_PATH)
