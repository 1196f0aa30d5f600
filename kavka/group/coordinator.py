"""``GroupCoordinator``: the consumer group coordinator of this broker
(seed 002 §6.8 step 6: onLeadershipChange hands ``__consumer_offsets``
partitions to the coordinator), composed of parts that each own their
state:

- ``GroupMetadataManager`` (``metadata_manager``): the groups of the
  partitions this broker leads, their ownership (LOADING -> OWNED; else
  NOT_COORDINATOR), their load from the log and their writes through the
  ``GroupLog`` seam, which the server implements with the replica manager
  (acks=-1, internal topics allowed: seed 002 §6.5);
- ``GroupMembership`` (``membership``): JoinGroup, SyncGroup, Heartbeat,
  LeaveGroup and the session timers;
- ``GroupOffsets`` (``offsets``): OffsetCommit, OffsetFetch, OffsetDelete,
  offsets of deleted partitions, offset expiry;
- ``GroupTxnOffsets`` (``txn_offsets``): TxnOffsetCommit and the offsets
  pending until their transaction's marker;
- ``ConsumerGroupMembership`` (``consumer_membership``): the
  consumer-protocol groups (KIP-848), ConsumerGroupHeartbeat and
  ConsumerGroupDescribe; a group id is either kind, never both, and a
  consumer group's offsets are committed through ``GroupOffsets`` once the
  member epoch is checked; its records (KIP-848's types, next to the
  classic ones in the same partitions) are read back by the same load.

This class builds them, moves partitions in and out (``on_elected`` /
``on_resigned``) and is what the API handlers call. Everything runs on the
broker's event loop; only the log scan of a load runs in a thread.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping

from kavka.common.errors import ErrorCode
from kavka.group.config import GroupConfig
from kavka.group.consumer_group import ConsumerGroup, HeartbeatOutcome, HeartbeatRequest, TopicMetadata
from kavka.group.consumer_membership import ConsumerGroupConfig, ConsumerGroupMembership
from kavka.group.membership import GroupMembership, JoinRequest, JoinResult, SyncResult
from kavka.group.metadata_manager import GROUP_METADATA_TOPIC, GroupLog, GroupMetadataManager
from kavka.group.offsets import Commits, GroupOffsets
from kavka.group.state import GroupMetadata, OffsetAndMetadata, PendingTxnOffsets
from kavka.group.txn_offsets import GroupTxnOffsets

__all__ = ["GROUP_METADATA_TOPIC", "ConsumerGroupConfig", "GroupConfig", "GroupCoordinator", "GroupLog"]

log = logging.getLogger("kavka.group")


class GroupCoordinator:
    """See the module docstring. Call ``on_elected`` / ``on_resigned`` from
    the LeaderAndIsr path; the handlers call the request methods."""

    def __init__(self, broker_id: int, config: GroupConfig, group_log: GroupLog,
                 consumer_config: ConsumerGroupConfig | None = None,
                 topics: Callable[[], Mapping[str, TopicMetadata]] = dict) -> None:
        """``topics``: the cluster's topic metadata by name, which the
        server-side assignors of consumer groups read."""
        self.broker_id = broker_id
        self.config = config
        self.manager = GroupMetadataManager(config.num_partitions, group_log, config.offsets_topic_compression)
        self.membership = GroupMembership(self.manager, config)
        self.consumer = ConsumerGroupMembership(self.manager, consumer_config or ConsumerGroupConfig(), topics,
                                                self._has_classic_members, config.max_batch_bytes)
        self.offsets = GroupOffsets(self.manager, config, self.membership.schedule_expiry,
                                    self.consumer.is_consumer_group)
        self.txn_offsets = GroupTxnOffsets(self.manager, config.max_metadata_size)
        self._expiry_task: asyncio.Task[None] | None = None
        # the loop holds only weak references to tasks: a load must not vanish mid-way
        self._loads: set[asyncio.Task[None]] = set()

    # -- state, as the manager and the transactional offsets hold it -------------------------------
    @property
    def groups(self) -> dict[str, GroupMetadata]:
        return self.manager.groups

    @property
    def owned(self) -> set[int]:
        return self.manager.owned

    @property
    def loading(self) -> dict[int, int]:
        return self.manager.loading

    @property
    def pending_txn_offsets(self) -> PendingTxnOffsets:
        return self.txn_offsets.pending

    def now_ms(self) -> int:
        return self.manager.now_ms()

    def partition_of(self, group_id: str) -> int:
        return self.manager.partition_of(group_id)

    def group_error(self, group_id: str | None) -> ErrorCode:
        return self.manager.group_error(group_id)

    # -- leadership (seed 002 §6.8 step 6) -----------------------------------------------------
    def on_elected(self, partition: int, leader_epoch: int) -> None:
        if not self.manager.start_loading(partition, leader_epoch):
            return
        load = asyncio.get_running_loop().create_task(self._load(partition, leader_epoch), name=f"load-groups-{partition}")
        self._loads.add(load)
        load.add_done_callback(self._loads.discard)
        if self._expiry_task is None:
            self._expiry_task = asyncio.get_running_loop().create_task(self.offsets.expire_offsets_loop(),
                                                                       name="offset-expiry")

    async def _load(self, partition: int, epoch: int) -> None:
        loaded = await self.manager.load(partition, epoch)
        if loaded is None:
            return
        groups, pending, consumer_groups = loaded
        for g in groups:  # restored members' sessions start now
            for m in g.members.values():
                self.membership.schedule_expiry(g, m)
        self.txn_offsets.loaded(pending)
        self.consumer.loaded(consumer_groups)

    def on_resigned(self, partition: int) -> None:
        self.manager.unload(partition)
        self.consumer.unload(partition)
        self.txn_offsets.unload(partition)
        log.info("unloaded the groups of %s-%d", GROUP_METADATA_TOPIC, partition)

    # -- membership ----------------------------------------------------------------------------
    def _has_classic_members(self, group_id: str) -> bool:
        g = self.manager.groups.get(group_id)
        return g is not None and bool(g.members)

    async def join_group(self, r: JoinRequest) -> JoinResult:
        if self.consumer.is_consumer_group(r.group_id):
            # Kafka: a classic member cannot join a consumer-protocol group
            return JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, r.member_id)
        code = await self.consumer.forget(r.group_id)
        if code is not ErrorCode.NONE:
            return JoinResult(code, r.member_id)
        return await self.membership.join_group(r)

    async def sync_group(self, group_id: str, generation: int, member_id: str, instance_id: str | None,
                         assignments: dict[str, bytes]) -> SyncResult:
        return await self.membership.sync_group(group_id, generation, member_id, instance_id, assignments)

    def heartbeat(self, group_id: str, generation: int, member_id: str, instance_id: str | None) -> ErrorCode:
        return self.membership.heartbeat(group_id, generation, member_id, instance_id)

    def leave_group(self, group_id: str, leaving: list[tuple[str, str | None]]
                    ) -> tuple[ErrorCode, list[tuple[str, str | None, ErrorCode]]]:
        return self.membership.leave_group(group_id, leaving)

    # -- offsets -------------------------------------------------------------------------------
    async def commit_offsets(self, group_id: str, generation: int, member_id: str, instance_id: str | None,
                             commits: Commits) -> tuple[ErrorCode, dict[tuple[str, int], ErrorCode]]:
        consumer = self.consumer.validate_commit(group_id, member_id, generation)
        if consumer is None:
            return await self.offsets.commit_offsets(group_id, generation, member_id, instance_id, commits)
        if consumer is not ErrorCode.NONE:
            return consumer, {tp: consumer for tp in commits}
        # the member epoch is checked: the group has no classic members, so
        # the offsets are written as a commit outside group management
        return await self.offsets.commit_offsets(group_id, -1, "", None, commits)

    def fetch_offsets(self, group_id: str, wanted: list[tuple[str, int]] | None
                      ) -> tuple[ErrorCode, dict[tuple[str, int], OffsetAndMetadata | None]]:
        return self.offsets.fetch_offsets(group_id, wanted)

    async def delete_offsets(self, group_id: str, partitions: list[tuple[str, int]]
                             ) -> tuple[ErrorCode, dict[tuple[str, int], ErrorCode]]:
        subscribed = self.consumer.subscribed_topics(group_id)
        if not subscribed:
            return await self.offsets.delete_offsets(group_id, partitions)
        # KIP-496 for a consumer group: the offsets of a topic its members
        # subscribe to stay
        blocked = [tp for tp in partitions if tp[0] in subscribed]
        code, results = await self.offsets.delete_offsets(group_id, [tp for tp in partitions
                                                                     if tp[0] not in subscribed])
        if code is not ErrorCode.NONE:
            return code, {}
        return code, {**results, **dict.fromkeys(blocked, ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC)}

    def partitions_deleted(self, deleted: list[tuple[str, int]]) -> None:
        self.offsets.partitions_deleted(deleted)

    async def remove_offsets_of(self, deleted: set[tuple[str, int]]) -> int:
        return await self.offsets.remove_offsets_of(deleted)

    async def expire_offsets(self, now: int) -> int:
        return await self.offsets.expire_offsets(now)

    # -- transactional offsets (KIP-98) --------------------------------------------------------
    async def commit_txn_offsets(self, group_id: str, producer_id: int, producer_epoch: int, generation: int,
                                 member_id: str, instance_id: str | None,
                                 commits: Commits) -> dict[tuple[str, int], ErrorCode]:
        consumer = self.consumer.validate_txn_commit(group_id, member_id, generation)
        if consumer is not None and consumer is not ErrorCode.NONE:
            return {tp: consumer for tp in commits}
        if consumer is ErrorCode.NONE:
            # the member epoch is checked; no classic member to check it against
            generation, member_id, instance_id = -1, "", None
        return await self.txn_offsets.commit_txn_offsets(group_id, producer_id, producer_epoch, generation,
                                                         member_id, instance_id, commits)

    def has_pending_txn_offset(self, group_id: str, tp: tuple[str, int]) -> bool:
        return self.txn_offsets.has_pending_txn_offset(group_id, tp)

    def complete_txn_offsets(self, partition: int, producer_id: int, commit: bool) -> None:
        self.txn_offsets.complete_txn_offsets(partition, producer_id, commit)

    # -- consumer-protocol groups (KIP-848) ------------------------------------------------------
    async def consumer_group_heartbeat(self, group_id: str, req: HeartbeatRequest,
                                       describable: Callable[[set[str]], set[str]] = lambda names: names,
                                       ) -> HeartbeatOutcome:
        return await self.consumer.heartbeat(group_id, req, describable)

    def describe_consumer_group(self, group_id: str) -> tuple[ErrorCode, ConsumerGroup | None]:
        return self.consumer.describe(group_id)

    # -- admin views ---------------------------------------------------------------------------
    def list_groups(self, states: set[str] | None = None) -> tuple[ErrorCode, list[GroupMetadata]]:
        return self.manager.list_groups(states)

    def describe_group(self, group_id: str) -> tuple[ErrorCode, GroupMetadata | None]:
        return self.manager.describe_group(group_id)

    async def delete_groups(self, group_ids: list[str]) -> dict[str, ErrorCode]:
        # a consumer-protocol group with members is not empty (Kafka's NON_EMPTY_GROUP)
        busy = {gid: ErrorCode.NON_EMPTY_GROUP for gid in group_ids
                if self.consumer.is_consumer_group(gid) and self.manager.group_error(gid) is ErrorCode.NONE}
        rest = [gid for gid in group_ids if gid not in busy]
        deleted = await self.manager.delete_groups(rest) if rest else {}
        for gid in rest:
            if self.consumer.knows(gid) and deleted.get(gid) in (ErrorCode.NONE, ErrorCode.GROUP_ID_NOT_FOUND):
                deleted[gid] = await self.consumer.forget(gid)
        return {**busy, **deleted}

    def list_consumer_groups(self) -> list[ConsumerGroup]:
        """The consumer-protocol groups (KIP-848) of the partitions owned here."""
        return self.consumer.owned_groups()
