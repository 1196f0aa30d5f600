"""Leader elections on request: preferred replica election (seed 000
§Preferred Replica Leader Election Tool), unclean election (KIP-460), and
the automatic leader rebalance (seed 000 §Preferred Replica, last
paragraph; ``rebalance.partitions_to_rebalance`` chooses the partitions).

Sources:

- ``/admin/preferred_replica_election`` (原理 1-3): the tool writes the
  partitions; the controller's exists watch (failover step 3) fires; each
  partition whose preferred replica (the first of AR) is alive and in the
  ISR gets it as leader — one that is not in the ISR is left alone, "to
  guarantee no data loss"; then the znode is deleted. JSON::

      {"version":1,"partitions":[{"topic":"topic1","partition":8}]}

- ElectLeaders (API 43): ``election_type`` 0 preferred, 1 unclean; per
  partition NONE, ELECTION_NOT_NEEDED (already preferred / already has a
  live leader), PREFERRED_LEADER_NOT_AVAILABLE or
  ELIGIBLE_LEADERS_NOT_AVAILABLE, UNKNOWN_TOPIC_OR_PARTITION.
- the ``leader.imbalance.check.interval.seconds`` timer when
  ``auto.leader.rebalance.enable`` (failover step 11).

Elections go through the partition state machine (ONLINE -> ONLINE with an
``Election``): conditional writes, LeaderAndIsr to the replicas,
UpdateMetadata to all. ``LeaderElections`` holds the collaborators it
uses (the controller context and config, the ZooKeeper client, the
partition state machine, the topic deletion manager, the event queue's
``put`` for the timer) and the rebalance timer of its epoch, which
``close`` cancels. It runs on the controller's event task.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterable

from kavka.common.errors import ErrorCode
from kavka.common.ids import BrokerId
from kavka.common.leader_and_isr import LeaderAndIsr
from kavka.common.topic_partition import TopicPartition
from kavka.controller.context import ControllerContext
from kavka.controller.election import ElectionResult, elect_for_offline_partition, elect_preferred_replica
from kavka.controller.event_manager import EventWatches
from kavka.controller.events import AutoPreferredReplicaLeaderElection, ControllerEvent, PreferredReplicaElection
from kavka.controller.partition_state import PartitionState
from kavka.controller.partition_state_machine import PartitionStateMachine
from kavka.controller.reassignment_requests import OK, PartitionError
from kavka.controller.rebalance import partitions_to_rebalance
from kavka.controller.settings import ControllerConfig
from kavka.controller.topic_deletion import TopicDeletionManager
from kavka.zk.admin import PREFERRED_REPLICA_ELECTION_PATH, PreferredReplicaElectionZNode
from kavka.zk.client import KavkaZkClient
from kavka.zk.codec import ZnodeDataError
from kavka.zk.store_types import NoNodeError

log = logging.getLogger(__name__)

PREFERRED = 0
UNCLEAN = 1
# Kafka's first automatic check comes this soon after a failover, then every interval.
_FIRST_REBALANCE_CHECK_S = 5.0


class LeaderElections:
    """The elections on request of one controller epoch (see module doc)."""

    def __init__(
        self,
        context: ControllerContext,
        config: ControllerConfig,
        zk: KavkaZkClient,
        partitions: PartitionStateMachine,
        deletion: TopicDeletionManager,
        watches: EventWatches,
        put: Callable[[ControllerEvent], None],
    ) -> None:
        self.context = context
        self.config = config
        self.zk = zk
        self.partitions = partitions
        self.deletion = deletion
        self.watches = watches
        self.put = put
        self.rebalance_timer: asyncio.TimerHandle | None = None

    def _known(self, tp: TopicPartition) -> PartitionError | None:
        ctx = self.context
        if ctx.assignment(tp) is None or ctx.leader_and_isr(tp) is None:
            return PartitionError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"partition {tp} does not exist")
        if self.deletion.is_queued(tp.topic):
            return PartitionError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {tp.topic} is being deleted")
        return None

    async def elect_preferred(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, PartitionError]:
        """Make each partition's preferred replica its leader where it is alive
        and in the ISR (ISR unchanged, leader epoch + 1)."""
        ctx = self.context
        out: dict[TopicPartition, PartitionError] = {}
        todo: list[TopicPartition] = []
        for tp in sorted(set(tps)):
            unknown = self._known(tp)
            if unknown is not None:
                out[tp] = unknown
            elif ctx.leader_and_isr(tp).leader == ctx.partition_replicas(tp)[0]:  # type: ignore[union-attr]
                out[tp] = PartitionError(ErrorCode.ELECTION_NOT_NEEDED, f"{tp} is already led by its preferred replica")
            else:
                todo.append(tp)

        def preferred(tp: TopicPartition, lai: LeaderAndIsr, live: set[BrokerId]) -> ElectionResult | None:
            return elect_preferred_replica(ctx.partition_replicas(tp), lai.isr, live)

        failed = await self.partitions.handle_state_changes(todo, PartitionState.ONLINE, preferred) if todo else {}
        for tp in todo:
            if tp in failed:
                why = f"preferred replica {ctx.partition_replicas(tp)[0]} of {tp} is not alive or not in the isr ({failed[tp]})"
                out[tp] = PartitionError(ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE, why)
            else:
                out[tp] = OK
        return out

    async def elect_unclean(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, PartitionError]:
        """KIP-460: give a partition without a live leader one, from outside the
        ISR if need be (committed messages may be lost; state-change.log says so)."""
        ctx = self.context
        out: dict[TopicPartition, PartitionError] = {}
        todo: list[TopicPartition] = []
        for tp in sorted(set(tps)):
            unknown = self._known(tp)
            if unknown is not None:
                out[tp] = unknown
            elif ctx.leader_and_isr(tp).leader in ctx.live_broker_ids:  # type: ignore[union-attr]
                out[tp] = PartitionError(ErrorCode.ELECTION_NOT_NEEDED, f"{tp} has a live leader")
            else:
                todo.append(tp)

        def unclean(tp: TopicPartition, lai: LeaderAndIsr, live: set[BrokerId]) -> ElectionResult | None:
            return elect_for_offline_partition(ctx.partition_replicas(tp), lai.isr, live, unclean_allowed=True)

        failed = await self.partitions.handle_state_changes(todo, PartitionState.ONLINE, unclean) if todo else {}
        for tp in todo:
            out[tp] = PartitionError(ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE, failed[tp]) if tp in failed else OK
        return out

    async def elect_leaders(
        self, partitions: Iterable[tuple[str, int]] | None, election_type: int
    ) -> dict[TopicPartition, PartitionError]:
        """ElectLeaders: ``partitions`` None means every partition."""
        tps = self.context.all_partitions() if partitions is None else [TopicPartition(t, p) for t, p in partitions]
        if election_type == PREFERRED:
            return await self.elect_preferred(tps)
        if election_type == UNCLEAN:
            return await self.elect_unclean(tps)
        raise ValueError(f"election type {election_type} is not 0 (preferred) or 1 (unclean)")

    # -- /admin/preferred_replica_election ----------------------------------------------------

    async def read_znode(self) -> PreferredReplicaElectionZNode | None:
        """The pending request, arming the exists watch (failover step 3); a
        malformed znode is deleted."""
        try:
            return await self.zk.get_preferred_replica_election(self.watches(PreferredReplicaElection()))
        except ZnodeDataError as e:
            log.error("controller: deleting malformed %s: %s", PREFERRED_REPLICA_ELECTION_PATH, e)
            await self._delete_znode()
            return None

    async def on_preferred_replica_election(self, node: PreferredReplicaElectionZNode | None = None) -> None:
        """原理 2-3: elect, then delete the znode (the tool's request is done).
        ``node`` is given at failover (already read with the watch armed)."""
        if node is None:
            node = await self.read_znode()
        if node is None:
            return
        results = await self.elect_preferred(TopicPartition(t, p) for t, p in node.partitions)
        for tp, r in sorted(results.items()):
            if r.code not in (ErrorCode.NONE, ErrorCode.ELECTION_NOT_NEEDED):
                log.warning("controller: preferred replica election for %s failed: %s", tp, r.message)
        log.info("controller: preferred replica election for %d partitions: %d moved", len(results), sum(r.code is ErrorCode.NONE for r in results.values()))
        await self._delete_znode()

    async def _delete_znode(self) -> None:
        with contextlib.suppress(NoNodeError):
            await self.zk.store.delete(PREFERRED_REPLICA_ELECTION_PATH)

    # -- auto leader rebalance -----------------------------------------------------------------

    def schedule_auto_rebalance(self, delay_s: float | None = None) -> None:
        """Arm the next check (failover step 11, then after every check)."""
        cfg = self.config
        if not cfg.auto_leader_rebalance_enable:
            return
        if delay_s is None:
            delay_s = float(cfg.leader_imbalance_check_interval_seconds)
        if self.rebalance_timer is not None:
            self.rebalance_timer.cancel()
        self.rebalance_timer = asyncio.get_running_loop().call_later(delay_s, self.put, AutoPreferredReplicaLeaderElection())

    def first_rebalance_delay(self) -> float:
        return min(_FIRST_REBALANCE_CHECK_S, float(self.config.leader_imbalance_check_interval_seconds))

    async def on_auto_rebalance(self) -> None:
        """Brokers whose imbalance ratio exceeds
        ``leader.imbalance.per.broker.percentage`` get their preferred
        leaderships back (only where the preferred replica is in the ISR)."""
        try:
            tps = partitions_to_rebalance(self.context, self.config.leader_imbalance_per_broker_percentage)
            if tps:
                results = await self.elect_preferred(tps)
                moved = sorted(tp for tp, r in results.items() if r.code is ErrorCode.NONE)
                log.info("controller: auto leader rebalance moved %d of %d imbalanced partitions to their preferred replica", len(moved), len(tps))
        finally:
            self.schedule_auto_rebalance()

    def close(self) -> None:
        """The epoch ended: no more automatic checks from it."""
        if self.rebalance_timer is not None:
            self.rebalance_timer.cancel()
            self.rebalance_timer = None
