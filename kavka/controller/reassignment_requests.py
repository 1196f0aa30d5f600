"""Where reassignments come from, and what is answered: the
``/admin/reassign_partitions`` znode (seed 000 §Kafka Reassign Partitions
Tool 原理 1-3: the tool writes the targets and exits, the controller's watch
fires) and the AlterPartitionReassignments / ListPartitionReassignments
APIs (KIP-455). Both validate each partition, then hand valid ones to the
``PartitionReassigner``.

Validation (``validate``): the partition must exist and its topic must not
be queued for deletion (UNKNOWN_TOPIC_OR_PARTITION); the target must be a
non-empty list of distinct broker ids, every one a live broker
(INVALID_REPLICA_ASSIGNMENT). Invalid entries of the znode are logged and
removed from it (they can never be acted on); a malformed znode is deleted.

Znode JSON (seed 000)::

    {"version":1,"partitions":[{"topic":"topic3","partition":1,"replicas":[1,2,3]}]}

``ReassignmentRequests`` holds what it reads and answers with: the
controller context, the ZooKeeper client, the topic deletion manager (a
topic being deleted is not reassigned) and the epoch's
``PartitionReassigner``. It runs on the controller's event task.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterable
from dataclasses import dataclass

from kavka.common.errors import ErrorCode
from kavka.common.ids import BrokerId
from kavka.common.topic_partition import TopicPartition
from kavka.controller.context import ControllerContext, ReplicaAssignment, as_broker_ids
from kavka.controller.event_manager import EventWatches
from kavka.controller.events import ReassignPartitions
from kavka.controller.reassignment import PartitionReassigner, remove_from_reassign_znode
from kavka.controller.topic_deletion import TopicDeletionManager
from kavka.zk.admin import REASSIGN_PARTITIONS_PATH, ReassignPartitionsZNode
from kavka.zk.client import KavkaZkClient
from kavka.zk.codec import ZnodeDataError
from kavka.zk.store_types import NoNodeError

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class PartitionError:
    """A per-partition answer: ``code`` NONE for success, else why not."""

    code: ErrorCode
    message: str | None = None


OK = PartitionError(ErrorCode.NONE)


class ReassignmentRequests:
    """The reassignment requests of one controller epoch (see module doc)."""

    def __init__(
        self,
        context: ControllerContext,
        zk: KavkaZkClient,
        deletion: TopicDeletionManager,
        reassigner: PartitionReassigner,
        watches: EventWatches,
    ) -> None:
        self.context = context
        self.zk = zk
        self.deletion = deletion
        self.reassigner = reassigner
        self.watches = watches

    def validate(self, tp: TopicPartition, replicas: tuple[int, ...]) -> PartitionError:
        ctx = self.context
        if ctx.assignment(tp) is None:
            return PartitionError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"partition {tp} does not exist")
        if self.deletion.is_queued(tp.topic):
            return PartitionError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {tp.topic} is being deleted")
        if not replicas:
            return PartitionError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, "the target replica list is empty")
        if len(set(replicas)) != len(replicas) or any(r < 0 for r in replicas):
            return PartitionError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"replicas {list(replicas)} must be distinct broker ids >= 0")
        dead = sorted(r for r in replicas if r not in ctx.live_brokers)
        if dead:
            return PartitionError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"brokers {dead} are not alive; start them or choose live brokers")
        return OK

    # -- /admin/reassign_partitions --------------------------------------------------------------

    async def read_znode(self) -> ReassignPartitionsZNode | None:
        """The pending requests, arming the exists watch (failover step 2). A
        malformed znode is deleted: no controller could ever act on it."""
        try:
            return await self.zk.get_reassignment(self.watches(ReassignPartitions()))
        except ZnodeDataError as e:
            log.error("controller: deleting malformed %s: %s", REASSIGN_PARTITIONS_PATH, e)
            with contextlib.suppress(NoNodeError):
                await self.zk.store.delete(REASSIGN_PARTITIONS_PATH)
            return None

    async def requested(self, node: ReassignPartitionsZNode | None) -> dict[TopicPartition, tuple[BrokerId, ...]]:
        """The znode's valid entries; invalid ones are logged and removed from it."""
        if node is None:
            return {}
        valid: dict[TopicPartition, tuple[BrokerId, ...]] = {}
        invalid: list[TopicPartition] = []
        for topic, partition, replicas in node.reassignments:
            tp = TopicPartition(topic, partition)
            verdict = self.validate(tp, replicas)
            if verdict.code is ErrorCode.NONE:
                valid[tp] = as_broker_ids(replicas)
            else:
                log.error("controller: ignoring reassignment of %s to %s from %s: %s", tp, list(replicas), REASSIGN_PARTITIONS_PATH, verdict.message)
                invalid.append(tp)
        if invalid:
            await remove_from_reassign_znode(self.zk.store, invalid)
        return valid

    async def on_reassign_partitions(self) -> None:
        """The watch fired: start every listed partition not already moving to
        that very target (the znode also changes when step 11 removes entries)."""
        requested = await self.requested(await self.read_znode())
        reassigner = self.reassigner
        for tp, target in sorted(requested.items()):
            reassigner.from_znode.add(tp)
            if reassigner.targets.get(tp) != target:
                await reassigner.reassign(tp, target)

    # -- AlterPartitionReassignments / ListPartitionReassignments (KIP-455) -----------------------

    async def alter_partition_reassignments(
        self, requests: Iterable[tuple[str, int, tuple[int, ...] | None]], allow_replication_factor_change: bool = True
    ) -> dict[TopicPartition, PartitionError]:
        """Start, replace or (replicas None) cancel reassignments; one answer
        per partition. The answer means "accepted": completion is seen through
        ListPartitionReassignments (or the topic's metadata)."""
        out: dict[TopicPartition, PartitionError] = {}
        reassigner = self.reassigner
        for topic, partition, replicas in requests:
            tp = TopicPartition(topic, partition)
            if replicas is None:
                if self.context.assignment(tp) is None:
                    out[tp] = PartitionError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"partition {tp} does not exist")
                elif await reassigner.cancel(tp):
                    await self._supersede_znode(tp)
                    out[tp] = OK
                else:
                    out[tp] = PartitionError(ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, f"no reassignment of {tp} is in progress")
                continue
            verdict = self.validate(tp, replicas)
            current = self.context.assignment(tp)
            if verdict.code is ErrorCode.NONE and not allow_replication_factor_change and current is not None:
                original = current.original_replicas
                if len(replicas) != len(original):
                    verdict = PartitionError(
                        ErrorCode.INVALID_REPLICATION_FACTOR,
                        f"the target has {len(replicas)} replicas, the partition {len(original)}, and replication factor changes were not allowed",
                    )
            out[tp] = verdict
            if verdict.code is ErrorCode.NONE:
                await self._supersede_znode(tp)
                await reassigner.reassign(tp, as_broker_ids(replicas))
        return out

    async def _supersede_znode(self, tp: TopicPartition) -> None:
        """An accepted API request replaces the znode's for that partition (as
        Kafka does): a later failover must not resume the znode's older target."""
        if tp in self.reassigner.from_znode:
            self.reassigner.from_znode.discard(tp)
            await remove_from_reassign_znode(self.zk.store, [tp])

    def list_partition_reassignments(self, wanted: Iterable[tuple[str, int]] | None) -> dict[TopicPartition, ReplicaAssignment]:
        """Partitions being reassigned (of ``wanted`` if given; others are left
        out): AR with KIP-455's adding and removing replicas."""
        ctx = self.context
        moving = self.reassigner.in_progress()
        if wanted is not None:
            keep = {TopicPartition(t, p) for t, p in wanted}
            moving = [tp for tp in moving if tp in keep]
        out: dict[TopicPartition, ReplicaAssignment] = {}
        for tp in moving:
            a = ctx.assignment(tp)
            target = self.reassigner.target(tp)
            if a is None or target is None:
                continue
            adding = tuple(r for r in target if r not in a.original_replicas)
            removing = tuple(r for r in a.replicas if r not in target)
            out[tp] = ReplicaAssignment(a.replicas, adding, removing)
        return out
