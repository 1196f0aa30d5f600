"""``GroupOffsets``: OffsetCommit, OffsetFetch, OffsetDelete, the offsets
of deleted partitions, and offset expiry (seed 003: "high-level consumers let Kafka record the
offset"; seed 002 §6.5: appended to ``__consumer_offsets``).

A commit is written (acks=-1) before the cache changes, so a fetch never
returns an offset that could be lost with the leader. A commit from a
group member must carry the current generation; a commit with generation
-1 and no member id is a "simple" commit, allowed only while the group has
no members (an admin tool, or a consumer without group management).
Expiry (``offsets.retention.minutes``, KIP-211): the offsets of an Empty
group older than the retention, counted from when it became empty, are
deleted with tombstones; an Empty group left with no offsets is removed.

Called on the broker's event loop only.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from kavka.common.errors import ErrorCode
from kavka.group.config import GroupConfig
from kavka.group.metadata_manager import GroupMetadataManager
from kavka.group.records import GroupMetadataKey, OffsetKey, OffsetValue, encode_key, encode_offset_value
from kavka.group.state import GroupMetadata, GroupState, MemberMetadata, OffsetAndMetadata
from kavka.protocol.records import SimpleRecord

log = logging.getLogger("kavka.group")

# (topic, partition) -> (offset, leader epoch, metadata)
Commits = dict[tuple[str, int], tuple[int, int, str | None]]


class GroupOffsets:
    """See the module docstring. A member's commit also resets its session
    timer (``schedule_expiry``, the membership's)."""

    def __init__(self, manager: GroupMetadataManager, config: GroupConfig,
                 schedule_expiry: Callable[[GroupMetadata, MemberMetadata], None],
                 consumer_group_active: Callable[[str], bool] = lambda _group_id: False) -> None:
        """``consumer_group_active``: whether a group id is a consumer-protocol
        group with members (KIP-848), whose offsets must not expire."""
        self.manager = manager
        self.config = config
        self.schedule_expiry = schedule_expiry
        self.consumer_group_active = consumer_group_active
        # the loop holds only weak references to tasks: a removal must not vanish mid-way
        self._removals: set[asyncio.Task[int]] = set()

    async def commit_offsets(self, group_id: str, generation: int, member_id: str, instance_id: str | None,
                             commits: Commits) -> tuple[ErrorCode, dict[tuple[str, int], ErrorCode]]:
        code = self.manager.group_error(group_id)
        g = self.manager.groups.get(group_id) if code is ErrorCode.NONE else None
        if code is ErrorCode.NONE:
            code = self._commit_allowed(g, generation, member_id, instance_id)
        if code is not ErrorCode.NONE:
            return code, {tp: code for tp in commits}
        if g is None:
            g = self.manager.groups[group_id] = GroupMetadata(group_id, state_timestamp=self.manager.now_ms())
        if member_id and member_id in g.members:
            self.schedule_expiry(g, g.members[member_id])
        now = self.manager.now_ms()
        results: dict[tuple[str, int], ErrorCode] = {}
        records, accepted = [], {}
        for (topic, partition), (offset, epoch, metadata) in commits.items():
            if metadata is not None and len(metadata) > self.config.max_metadata_size:
                results[(topic, partition)] = ErrorCode.OFFSET_METADATA_TOO_LARGE
                continue
            value = OffsetAndMetadata(offset, epoch, metadata or "", now)
            accepted[(topic, partition)] = value
            records.append(SimpleRecord(encode_key(OffsetKey(group_id, topic, partition)),
                                        encode_offset_value(OffsetValue(offset, epoch, value.metadata, now)), now))
        written = await self.manager.write(group_id, records)
        if written is ErrorCode.NONE and self.manager.groups.get(group_id) is g:
            g.offsets.update(accepted)
        for tp in accepted:
            results[tp] = written
        return ErrorCode.NONE, results

    @staticmethod
    def _commit_allowed(g: GroupMetadata | None, generation: int, member_id: str, instance_id: str | None) -> ErrorCode:
        """Kafka's order of checks; a simple commit (generation < 0) only
        reaches a group with no members."""
        if g is None:
            return ErrorCode.NONE if generation < 0 else ErrorCode.ILLEGAL_GENERATION
        if g.state is GroupState.DEAD:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if generation < 0 and g.state is GroupState.EMPTY:
            return ErrorCode.NONE
        if g.state is GroupState.COMPLETING_REBALANCE:
            return ErrorCode.REBALANCE_IN_PROGRESS
        m = g.members.get(member_id)
        if m is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if instance_id is not None and g.static_members.get(instance_id) != member_id:
            return ErrorCode.FENCED_INSTANCE_ID
        if generation != g.generation:
            return ErrorCode.ILLEGAL_GENERATION
        return ErrorCode.NONE

    def fetch_offsets(self, group_id: str, wanted: list[tuple[str, int]] | None
                      ) -> tuple[ErrorCode, dict[tuple[str, int], OffsetAndMetadata | None]]:
        """Committed offsets (None: nothing committed); ``wanted`` None means all."""
        code = self.manager.group_error(group_id)
        if code is not ErrorCode.NONE:
            return code, {}
        g = self.manager.groups.get(group_id)
        offsets = g.offsets if g is not None else {}
        if wanted is None:
            return ErrorCode.NONE, dict(offsets)
        return ErrorCode.NONE, {tp: offsets.get(tp) for tp in wanted}

    async def delete_offsets(self, group_id: str, partitions: list[tuple[str, int]]
                             ) -> tuple[ErrorCode, dict[tuple[str, int], ErrorCode]]:
        """OffsetDelete (KIP-496): refused per partition while the group is
        subscribed to its topic."""
        code = self.manager.group_error(group_id)
        g = self.manager.groups.get(group_id) if code is ErrorCode.NONE else None
        if code is ErrorCode.NONE and (g is None or g.state is GroupState.DEAD):
            code = ErrorCode.GROUP_ID_NOT_FOUND
        if code is not ErrorCode.NONE or g is None:
            return code, {}
        subscribed = set() if g.state is GroupState.EMPTY else g.subscribed_topics()
        if subscribed is None:
            return ErrorCode.NON_EMPTY_GROUP, {}
        results, gone = {}, []
        for tp in partitions:
            if tp[0] in subscribed:
                results[tp] = ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC
            else:
                results[tp] = ErrorCode.NONE
                if tp in g.offsets:
                    gone.append(tp)
        now = self.manager.now_ms()
        written = await self.manager.write(group_id, [SimpleRecord(encode_key(OffsetKey(group_id, t, p)), None, now)
                                              for t, p in gone])
        if written is not ErrorCode.NONE:
            return written, {}
        for tp in gone:
            g.offsets.pop(tp, None)
        return ErrorCode.NONE, results

    # -- deleted topics -----------------------------------------------------------------------
    def partitions_deleted(self, deleted: list[tuple[str, int]]) -> None:
        """UpdateMetadata reported deleted partitions: their committed
        offsets go too (tombstones), as Kafka's coordinator does. Called
        from a synchronous callback, so the writes run as a task."""
        if deleted:
            removal = asyncio.get_running_loop().create_task(self.remove_offsets_of(set(deleted)))
            self._removals.add(removal)
            removal.add_done_callback(self._removals.discard)

    async def remove_offsets_of(self, deleted: set[tuple[str, int]]) -> int:
        removed = 0
        for g in list(self.manager.owned_groups()):
            gone = [tp for tp in g.offsets if tp in deleted]
            now = self.manager.now_ms()
            if not gone or await self.manager.write(g.group_id, [
                    SimpleRecord(encode_key(OffsetKey(g.group_id, t, p)), None, now) for t, p in gone]
            ) is not ErrorCode.NONE:
                continue
            for tp in gone:
                g.offsets.pop(tp, None)
            removed += len(gone)
        return removed

    # -- expiry (offsets.retention.minutes) ----------------------------------------------------
    async def expire_offsets_loop(self) -> None:
        while True:
            await asyncio.sleep(self.config.retention_check_interval_ms / 1000)
            try:
                await self.expire_offsets(self.manager.now_ms())
            except Exception:
                log.exception("offset expiry failed")

    async def expire_offsets(self, now: int) -> int:
        """Delete expired offsets of Empty groups; returns how many."""
        removed = 0
        for g in list(self.manager.owned_groups()):
            if g.state is not GroupState.EMPTY or self.consumer_group_active(g.group_id):
                continue
            since = g.state_timestamp
            old = [tp for tp, o in g.offsets.items()
                   if now - max(since, o.commit_timestamp) >= self.config.offsets_retention_ms]
            records = [SimpleRecord(encode_key(OffsetKey(g.group_id, t, p)), None, now) for t, p in old]
            drop_group = len(old) == len(g.offsets) and now - since >= self.config.offsets_retention_ms
            if drop_group:
                records.append(SimpleRecord(encode_key(GroupMetadataKey(g.group_id)), None, now))
            if not records or await self.manager.write(g.group_id, records) is not ErrorCode.NONE:
                continue
            for tp in old:
                g.offsets.pop(tp, None)
            removed += len(old)
            if drop_group and g.state is GroupState.EMPTY and not g.offsets:
                g.transition_to(GroupState.DEAD, now)
                self.manager.groups.pop(g.group_id, None)
                log.info("group %s expired with its offsets", g.group_id)
        return removed
