"""``ConsumerGroupMembership``: the consumer-protocol groups of the
partitions this coordinator owns (KIP-848), served by
ConsumerGroupHeartbeat and described by ConsumerGroupDescribe.

It owns the ``ConsumerGroup`` state machines by group id and their timers:

- a member's session (``group.consumer.session.timeout.ms``) restarts with
  each heartbeat; when it lapses the member is fenced: removed, its
  partitions released, the group epoch bumped;
- a member that keeps partitions it was asked to revoke for longer than its
  rebalance timeout is fenced too (KIP-848 "Rebalance Timeout"), so one
  stuck consumer cannot hold the rest of the group back.

Coexistence with the classic protocol (Kafka's rules): a heartbeat for a
group id that is a classic group with members is refused with
GROUP_ID_NOT_FOUND; the classic JoinGroup of a group id that is a consumer
group with members gets INCONSISTENT_GROUP_PROTOCOL (``is_consumer_group``
tells the coordinator). Offsets of a consumer group are kept with the
classic offsets (``GroupOffsets``); ``validate_commit`` checks a member's
epoch the way Kafka validates OffsetCommit v9's ``generation_id_or_member_epoch``.

Every change to a group is written to ``__consumer_offsets`` before the
heartbeat is answered (Kafka's record types, ``kavka.group.consumer_records``;
what changed is the difference of two ``snapshot``s of the group,
``kavka.group.consumer_group_replay``): a member's epoch is never handed
out before it is durable. A write that fails is answered with its error
and the group's next write rewrites all its records, so the log catches up
with memory. When a broker becomes coordinator of a partition, ``loaded``
rebuilds its groups from those records and restarts every member's
session: members keep heartbeating with their epochs, and no partition is
given away while the member that held it may still own it.

Called on the broker's event loop only.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kavka.common.errors import ErrorCode
from kavka.group.consumer_group import (
    ConsumerGroup,
    HeartbeatOutcome,
    HeartbeatRequest,
    TopicMetadata,
)
from kavka.group.consumer_group_replay import ConsumerGroupReplay, WrittenGroup, snapshot, tombstones
from kavka.group.consumer_records import ConsumerKey, ConsumerValue, encode_consumer_key, encode_consumer_value
from kavka.group.metadata_manager import GroupMetadataManager
from kavka.group.reconciliation import MemberState
from kavka.protocol.records import SimpleRecord

__all__ = ["ConsumerGroupConfig", "ConsumerGroupMembership"]

log = logging.getLogger("kavka.group")


@dataclass(frozen=True, slots=True)
class ConsumerGroupConfig:
    """The broker's ``group.consumer.*`` configs (Kafka's names and defaults)."""
    assignors: tuple[str, ...] = ("uniform", "range")
    session_timeout_ms: int = 45000
    heartbeat_interval_ms: int = 5000
    max_size: int = 2**31 - 1

    @classmethod
    def from_broker(cls, cfg: Any) -> ConsumerGroupConfig:
        # Kafka 3.7 named the assignors by class, Kafka 4 by short name
        names = tuple(_ASSIGNOR_CLASSES.get(a, a) for a in cfg["group.consumer.assignors"])
        return cls(tuple(dict.fromkeys(names)), cfg["group.consumer.session.timeout.ms"],
                   cfg["group.consumer.heartbeat.interval.ms"], cfg["group.consumer.max.size"])


_ASSIGNOR_CLASSES = {"org.apache.kafka.coordinator.group.assignor.UniformAssignor": "uniform",
                     "org.apache.kafka.coordinator.group.assignor.RangeAssignor": "range"}


# what a record adds to a batch beyond its key and value (length, attributes,
# deltas, header count: varints of at most 5-10 bytes each), and the batch header
_RECORD_OVERHEAD = 32
_BATCH_OVERHEAD = 128


def split_records(records: list[SimpleRecord], max_batch_bytes: int) -> list[list[SimpleRecord]]:
    """``records`` in order, cut into runs whose batch stays below
    ``max_batch_bytes`` (uncompressed; a record larger than that alone is a
    run of its own, which the log refuses as Kafka would)."""
    out: list[list[SimpleRecord]] = [[]]
    size = _BATCH_OVERHEAD
    for r in records:
        n = len(r.key or b"") + len(r.value or b"") + _RECORD_OVERHEAD
        if out[-1] and size + n > max_batch_bytes:
            out.append([])
            size = _BATCH_OVERHEAD
        out[-1].append(r)
        size += n
    return out if out[0] else []


class ConsumerGroupMembership:
    """See the module docstring. ``topics`` gives the cluster's topic
    metadata by name (the broker's metadata cache); ``classic_members``
    tells whether a group id is a classic group with members."""

    def __init__(self, manager: GroupMetadataManager, config: ConsumerGroupConfig,
                 topics: Callable[[], Mapping[str, TopicMetadata]],
                 classic_members: Callable[[str], bool], max_batch_bytes: int = 1048588) -> None:
        """``max_batch_bytes``: the largest batch ``__consumer_offsets``
        takes (message.max.bytes)."""
        self.manager = manager
        self.max_batch_bytes = max_batch_bytes
        self.config = config
        self.topics = topics
        self.classic_members = classic_members
        self.groups: dict[str, ConsumerGroup] = {}
        self._sessions: dict[tuple[str, str], asyncio.TimerHandle] = {}
        self._revocations: dict[tuple[str, str], asyncio.TimerHandle] = {}
        # what the log holds for each group (None: not known after a failed write)
        self._written: dict[str, WrittenGroup] = {}
        self._writes: set[asyncio.Task[ErrorCode]] = set()  # of fencing timers; the loop holds tasks weakly

    def is_consumer_group(self, group_id: str) -> bool:
        """A consumer-protocol group with members (Kafka refuses a classic
        JoinGroup to it with INCONSISTENT_GROUP_PROTOCOL)."""
        g = self.groups.get(group_id)
        return g is not None and bool(g.members)

    def knows(self, group_id: str) -> bool:
        """A consumer-protocol group, with members or empty (an empty one is
        kept, as Kafka keeps it, listed with type ``consumer``)."""
        return group_id in self.groups

    async def forget(self, group_id: str) -> ErrorCode:
        """Drop an empty consumer group and tombstone its records: deleted
        (DeleteGroups), or taken over by a classic member (Kafka converts an
        empty group)."""
        g = self.groups.get(group_id)
        if g is None or g.members:
            return ErrorCode.NONE
        del self.groups[group_id]
        written = self._written.pop(group_id, WrittenGroup())
        return await self._write(group_id, tombstones(written.records.keys() | snapshot(g).keys()))

    async def heartbeat(self, group_id: str, req: HeartbeatRequest,
                        describable: Callable[[set[str]], set[str]] = lambda names: names) -> HeartbeatOutcome:
        """Answer one ConsumerGroupHeartbeat; ``describable`` keeps the topic
        names the member's session may DESCRIBE (its regex sees no others)."""
        if not group_id:
            return HeartbeatOutcome(ErrorCode.INVALID_REQUEST, "group id can't be empty")
        code = self.manager.group_error(group_id)
        if code is not ErrorCode.NONE:
            return HeartbeatOutcome(code)
        if self.classic_members(group_id):
            return HeartbeatOutcome(ErrorCode.GROUP_ID_NOT_FOUND, f"group {group_id!r} is not a consumer group")
        g = self.groups.get(group_id)
        if g is None:
            g = ConsumerGroup(group_id, list(self.config.assignors), self.config.max_size)
        outcome = g.heartbeat(req, self.topics(), describable)
        if g.members or group_id in self.groups:
            self.groups[group_id] = g
        if outcome.error is ErrorCode.NONE and outcome.member_id is not None:
            if outcome.member_id in g.members:
                self._touch(g, outcome.member_id)
            else:
                self._cancel(group_id, outcome.member_id)
        if self.groups.get(group_id) is g:
            code = await self.persist(g, outcome.member_id or req.member_id)
            if code is not ErrorCode.NONE:
                return HeartbeatOutcome(code, f"writing group {group_id!r} to __consumer_offsets failed")
        return outcome

    async def persist(self, g: ConsumerGroup, member_id: str | None = None) -> ErrorCode:
        """Append what changed in ``g`` since its last write (after a
        heartbeat of ``member_id``; None when anything may have changed).
        The records are chosen before the first await, so writes reach the
        log in the order the changes were made."""
        written = self._written.setdefault(g.group_id, WrittenGroup())
        records = written.changes_for(g, member_id)
        code = await self._write(g.group_id, records)
        if code is not ErrorCode.NONE and self._written.get(g.group_id) is written:
            written.write_failed(records)  # rewritten by the group's next write
        return code

    async def _write(self, group_id: str, records: Sequence[tuple[ConsumerKey, ConsumerValue | None]]) -> ErrorCode:
        """One batch, or several in order when the records of a large group
        do not fit below ``max_batch_bytes``: the members' records go first
        and the group's epochs last (``changes``), so a load that sees only
        the first batches finds the group at its previous epochs; the first
        error stops the write."""
        now = self.manager.now_ms()
        encoded = [SimpleRecord(encode_consumer_key(k), None if v is None else encode_consumer_value(v), now)
                   for k, v in records]
        for chunk in split_records(encoded, self.max_batch_bytes):
            code = await self.manager.write(group_id, chunk)
            if code is not ErrorCode.NONE:
                return code
        return ErrorCode.NONE

    def loaded(self, replay: ConsumerGroupReplay) -> list[ConsumerGroup]:
        """The groups a partition's load read back (a new coordinator):
        served from now on, every member's session restarting now, as
        Kafka schedules them when it loads a group."""
        groups = replay.groups(lambda gid: ConsumerGroup(gid, list(self.config.assignors), self.config.max_size))
        for g in groups:
            self.groups[g.group_id] = g
            self._written[g.group_id] = WrittenGroup(snapshot(g), g.members)
            for mid in g.members:
                self._touch(g, mid)
        if groups:
            log.info("loaded %d consumer groups", len(groups))
        return groups

    def validate_commit(self, group_id: str, member_id: str, member_epoch: int) -> ErrorCode | None:
        """None when the group id is not a consumer group (the classic rules
        apply); else the error of an OffsetCommit from that member and epoch
        (a commit with no member id and a negative epoch is an admin's)."""
        g = self.groups.get(group_id)
        if g is None:
            return None
        if not member_id and member_epoch < 0:
            return ErrorCode.NONE if not g.members else ErrorCode.UNKNOWN_MEMBER_ID
        m = g.members.get(member_id)
        if m is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if member_epoch > m.member_epoch:
            return ErrorCode.FENCED_MEMBER_EPOCH
        if member_epoch < m.member_epoch:
            return ErrorCode.STALE_MEMBER_EPOCH
        return ErrorCode.NONE

    def validate_txn_commit(self, group_id: str, member_id: str, member_epoch: int) -> ErrorCode | None:
        """As ``validate_commit`` for TxnOffsetCommit (KIP-447): an anonymous
        commit passes, and a wrong epoch is ILLEGAL_GENERATION, the error a
        transactional producer understands (Kafka's rule)."""
        g = self.groups.get(group_id)
        if g is None:
            return None
        if not member_id and member_epoch < 0:
            return ErrorCode.NONE
        m = g.members.get(member_id)
        if m is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if member_epoch >= 0 and member_epoch != m.member_epoch:
            return ErrorCode.ILLEGAL_GENERATION
        return ErrorCode.NONE

    def subscribed_topics(self, group_id: str) -> set[str] | None:
        """The existing topics a consumer group's members subscribe to (by
        name or regex); None when the group id is not a consumer group."""
        g = self.groups.get(group_id)
        return None if g is None else set(g.subscription_metadata)

    def describe(self, group_id: str) -> tuple[ErrorCode, ConsumerGroup | None]:
        code = self.manager.group_error(group_id)
        if code is not ErrorCode.NONE:
            return code, None
        g = self.groups.get(group_id)
        if g is None:
            return ErrorCode.GROUP_ID_NOT_FOUND, None
        return ErrorCode.NONE, g

    def owned_groups(self) -> list[ConsumerGroup]:
        return [g for gid, g in self.groups.items() if self.manager.group_error(gid) is ErrorCode.NONE]

    def unload(self, partition: int) -> None:
        """The coordinator lost a partition: its groups and timers go."""
        for gid in [gid for gid in self.groups if self.manager.partition_of(gid) == partition]:
            for mid in list(self.groups[gid].members):
                self._cancel(gid, mid)
            del self.groups[gid]
            self._written.pop(gid, None)

    # -- timers ----------------------------------------------------------------------------------
    def _touch(self, g: ConsumerGroup, member_id: str) -> None:
        key = (g.group_id, member_id)
        loop = asyncio.get_running_loop()
        old = self._sessions.pop(key, None)
        if old is not None:
            old.cancel()
        self._sessions[key] = loop.call_later(self.config.session_timeout_ms / 1000, self._fence, g, member_id,
                                              "session timeout")
        m = g.members[member_id]
        revoking = m.assignment.state is MemberState.UNREVOKED_PARTITIONS
        timer = self._revocations.get(key)
        if revoking and timer is None and m.rebalance_timeout_ms > 0:
            self._revocations[key] = loop.call_later(m.rebalance_timeout_ms / 1000, self._fence, g, member_id,
                                                     "rebalance timeout")
        elif not revoking and timer is not None:
            timer.cancel()
            del self._revocations[key]

    def _cancel(self, group_id: str, member_id: str) -> None:
        for timers in (self._sessions, self._revocations):
            t = timers.pop((group_id, member_id), None)
            if t is not None:
                t.cancel()

    def _fence(self, g: ConsumerGroup, member_id: str, why: str) -> None:
        self._cancel(g.group_id, member_id)
        if self.groups.get(g.group_id) is not g or not g.remove_member(member_id, self.topics()):
            return
        log.info("group %s: member %s fenced (%s)", g.group_id, member_id, why)
        write = asyncio.get_running_loop().create_task(self.persist(g), name=f"fence-{g.group_id}")
        self._writes.add(write)
        write.add_done_callback(self._writes.discard)
