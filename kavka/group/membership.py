"""``GroupMembership``: JoinGroup, SyncGroup, Heartbeat and LeaveGroup —
the classic rebalance protocol — over the groups of the
``GroupMetadataManager``.

A rebalance: the group goes to PreparingRebalance; every member must send
JoinGroup again within the rebalance timeout (a member that does not is
removed); then the generation goes up by one (the first is 1), a protocol
is chosen and every JoinGroup is answered, the leader's with all members'
metadata (CompletingRebalance). The leader's SyncGroup brings the
assignment, which is written to ``__consumer_offsets`` before any member
gets its share (Stable). KIP-394: a v4+ JoinGroup without a member id gets
MEMBER_ID_REQUIRED and an id to come back with. KIP-345: a member with a
``group.instance.id`` that rejoins takes over its old id; an old id still
using the instance id is fenced (FENCED_INSTANCE_ID). Session timeouts are
asyncio timers reset by every heartbeat, join and sync.

Called on the broker's event loop only.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from dataclasses import dataclass, field

from kavka.common.errors import ErrorCode
from kavka.group.config import GroupConfig
from kavka.group.metadata_manager import GroupMetadataManager
from kavka.group.state import GroupMetadata, GroupState, MemberMetadata

log = logging.getLogger("kavka.group")


@dataclass(frozen=True, slots=True)
class JoinResult:
    error: ErrorCode
    member_id: str = ""
    generation: int = -1
    protocol_type: str | None = None
    protocol: str | None = None
    leader: str = ""
    members: tuple[tuple[str, str | None, bytes], ...] = ()


@dataclass(frozen=True, slots=True)
class SyncResult:
    error: ErrorCode
    protocol_type: str | None = None
    protocol: str | None = None
    assignment: bytes = b""


@dataclass(frozen=True, slots=True)
class JoinRequest:
    group_id: str
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]] = field(default_factory=list)
    require_known_member: bool = False


class GroupMembership:
    """See the module docstring. The rebalance and session timers live on
    the groups and members themselves (``GroupMetadata.join_timer``,
    ``MemberMetadata.expiry``)."""

    def __init__(self, manager: GroupMetadataManager, config: GroupConfig) -> None:
        self.manager = manager
        self.config = config
        # the loop holds only weak references to tasks: a store must not vanish mid-way
        self._stores: set[asyncio.Task[ErrorCode]] = set()

    # -- JoinGroup -----------------------------------------------------------------------------
    async def join_group(self, r: JoinRequest) -> JoinResult:
        code = self.manager.group_error(r.group_id)
        if code is not ErrorCode.NONE:
            return JoinResult(code, r.member_id)
        if not self.config.min_session_timeout_ms <= r.session_timeout_ms <= self.config.max_session_timeout_ms:
            return JoinResult(ErrorCode.INVALID_SESSION_TIMEOUT, r.member_id)
        g = self.manager.groups.get(r.group_id)
        if g is None:
            if r.member_id:
                return JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, r.member_id)
            g = self.manager.groups[r.group_id] = GroupMetadata(r.group_id, state_timestamp=self.manager.now_ms())
        if g.state is GroupState.DEAD:
            return JoinResult(ErrorCode.COORDINATOR_NOT_AVAILABLE, r.member_id)
        if not g.supports(r.protocol_type, r.protocols):
            return JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, r.member_id)
        if not r.member_id:
            return await self._join_unknown(g, r)
        if r.member_id in g.pending_members:
            self._add_and_rebalance(g, r, r.member_id)
            return await self._await_join(g, g.members[r.member_id])
        m = g.members.get(r.member_id)
        if m is None or g.in_state(GroupState.EMPTY, GroupState.DEAD):
            return JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, r.member_id)
        if r.group_instance_id is not None and g.static_members.get(r.group_instance_id) != r.member_id:
            return JoinResult(ErrorCode.FENCED_INSTANCE_ID, r.member_id)
        changed = not m.matches(r.protocols)
        m.protocols, m.session_timeout_ms, m.rebalance_timeout_ms = r.protocols, r.session_timeout_ms, \
            r.rebalance_timeout_ms
        if g.state is GroupState.PREPARING_REBALANCE:
            return await self._await_join(g, m)
        if not changed and (g.state is GroupState.COMPLETING_REBALANCE or m.member_id != g.leader):
            self.schedule_expiry(g, m)
            return self._join_result(g, m)
        self.prepare_rebalance(g, f"member {m.member_id} rejoined with new metadata or as leader")
        return await self._await_join(g, m)

    async def _join_unknown(self, g: GroupMetadata, r: JoinRequest) -> JoinResult:
        if len(g.members) + len(g.pending_members) >= self.config.max_size:
            return JoinResult(ErrorCode.GROUP_MAX_SIZE_REACHED)
        new_id = f"{r.client_id}-{uuid.uuid4()}"
        if r.group_instance_id is not None:
            old_id = g.static_members.get(r.group_instance_id)
            if old_id is not None and old_id in g.members:
                return await self._replace_static(g, r, old_id, new_id)
        elif r.require_known_member:
            # KIP-394: hand out the id; the member joins with it.
            g.pending_members.add(new_id)
            asyncio.get_running_loop().call_later(r.session_timeout_ms / 1000, self._expire_pending, g, new_id)
            return JoinResult(ErrorCode.MEMBER_ID_REQUIRED, new_id)
        self._add_and_rebalance(g, r, new_id)
        return await self._await_join(g, g.members[new_id])

    async def _replace_static(self, g: GroupMetadata, r: JoinRequest, old_id: str, new_id: str) -> JoinResult:
        """KIP-345: a known static member restarted; it takes over its old
        entry under a new id, and the old id is fenced."""
        was_leader = g.leader == old_id
        old = g.members[old_id]  # the caller checked it is a member
        g.remove_member(old_id)
        for fut in (old.join_future, old.sync_future):
            if fut is not None and not fut.done():
                fut.set_result(ErrorCode.FENCED_INSTANCE_ID)
        m = MemberMetadata(new_id, r.group_instance_id, r.client_id, r.client_host, r.rebalance_timeout_ms,
                           r.session_timeout_ms, r.protocol_type, r.protocols, old.assignment)
        g.add_member(m)
        if was_leader:
            g.leader = new_id
        if g.state is GroupState.STABLE and old.matches(r.protocols):
            self.schedule_expiry(g, m)
            return self._join_result(g, m)
        if g.state is not GroupState.PREPARING_REBALANCE:
            self.prepare_rebalance(g, f"static member {r.group_instance_id} rejoined")
        return await self._await_join(g, m)

    def _add_and_rebalance(self, g: GroupMetadata, r: JoinRequest, member_id: str) -> None:
        g.add_member(MemberMetadata(member_id, r.group_instance_id, r.client_id, r.client_host,
                                    r.rebalance_timeout_ms, r.session_timeout_ms, r.protocol_type, r.protocols))
        if g.state is not GroupState.PREPARING_REBALANCE:
            self.prepare_rebalance(g, f"member {member_id} joined")

    async def _await_join(self, g: GroupMetadata, m: MemberMetadata) -> JoinResult:
        fut = m.join_future = asyncio.get_running_loop().create_future()
        self.schedule_expiry(g, m)
        self.maybe_complete_join(g)
        result = await fut
        return JoinResult(result, m.member_id) if isinstance(result, ErrorCode) else result

    def _join_result(self, g: GroupMetadata, m: MemberMetadata) -> JoinResult:
        members: tuple[tuple[str, str | None, bytes], ...] = ()
        if m.member_id == g.leader:
            members = tuple((x.member_id, x.group_instance_id, x.metadata_for(g.protocol or ""))
                            for x in g.members.values())
        return JoinResult(ErrorCode.NONE, m.member_id, g.generation, g.protocol_type, g.protocol, g.leader or "",
                          members)

    def _expire_pending(self, g: GroupMetadata, member_id: str) -> None:
        if member_id in g.pending_members:
            g.pending_members.discard(member_id)
            self.maybe_complete_join(g)

    # -- the rebalance -------------------------------------------------------------------------
    def prepare_rebalance(self, g: GroupMetadata, reason: str) -> None:
        loop = asyncio.get_running_loop()
        if g.state is GroupState.COMPLETING_REBALANCE:
            for m in g.members.values():
                m.assignment = b""
                if m.sync_future is not None and not m.sync_future.done():
                    m.sync_future.set_result(ErrorCode.REBALANCE_IN_PROGRESS)
                m.sync_future = None
        timeout_ms = max((m.rebalance_timeout_ms for m in g.members.values()), default=0)
        if g.state is GroupState.EMPTY and self.config.initial_rebalance_delay_ms > 0:
            delay = min(self.config.initial_rebalance_delay_ms, max(timeout_ms, 1))
            g.join_not_before_ms = self.manager.now_ms() + delay
            loop.call_later(delay / 1000, self._initial_delay_over, g, g.join_not_before_ms)
        if g.join_timer is not None:
            g.join_timer.cancel()
        g.join_timer = loop.call_later(max(timeout_ms, 1) / 1000, self._join_deadline, g)
        g.transition_to(GroupState.PREPARING_REBALANCE, self.manager.now_ms())
        log.info("group %s preparing to rebalance (generation %d): %s", g.group_id, g.generation, reason)

    def _initial_delay_over(self, g: GroupMetadata, not_before_ms: int) -> None:
        """The initial rebalance delay ends when the loop's (monotonic) timer
        says so: the wall clock behind ``now_ms`` may have moved less in the
        meantime (adjusted or slewed), and a gate left shut would hold the
        join until the rebalance timeout."""
        if g.join_not_before_ms == not_before_ms:
            g.join_not_before_ms = 0
        self.maybe_complete_join(g)

    def maybe_complete_join(self, g: GroupMetadata) -> None:
        if (g.state is GroupState.PREPARING_REBALANCE and g.all_joined()
                and self.manager.now_ms() >= g.join_not_before_ms and self.manager.groups.get(g.group_id) is g):
            self._complete_join(g)

    def _join_deadline(self, g: GroupMetadata) -> None:
        if g.state is GroupState.PREPARING_REBALANCE and self.manager.groups.get(g.group_id) is g:
            self._complete_join(g)

    def _complete_join(self, g: GroupMetadata) -> None:
        if g.join_timer is not None:
            g.join_timer.cancel()
            g.join_timer = None
        g.pending_members.clear()
        for m in [m for m in g.members.values() if m.join_future is None]:
            log.info("group %s: member %s did not rejoin in time; removed", g.group_id, m.member_id)
            g.remove_member(m.member_id)
        g.generation += 1
        if not g.members:
            g.protocol = None
            g.transition_to(GroupState.EMPTY, self.manager.now_ms())
            store = asyncio.get_running_loop().create_task(self.manager.store_group(g))
            self._stores.add(store)
            store.add_done_callback(self._stores.discard)
            log.info("group %s is empty at generation %d", g.group_id, g.generation)
            return
        g.protocol = g.select_protocol()
        g.transition_to(GroupState.COMPLETING_REBALANCE, self.manager.now_ms())
        log.info("group %s generation %d: protocol %s, leader %s, %d members", g.group_id, g.generation,
                 g.protocol, g.leader, len(g.members))
        for m in g.members.values():
            fut, m.join_future = m.join_future, None
            if fut is not None and not fut.done():  # not None: members that did not rejoin were removed above
                fut.set_result(self._join_result(g, m))
            self.schedule_expiry(g, m)

    # -- session timeouts ----------------------------------------------------------------------
    def schedule_expiry(self, g: GroupMetadata, m: MemberMetadata) -> None:
        if m.expiry is not None:
            m.expiry.cancel()
        m.expiry = asyncio.get_running_loop().call_later(m.session_timeout_ms / 1000, self._member_expired, g,
                                                         m.member_id)

    def _member_expired(self, g: GroupMetadata, member_id: str) -> None:
        m = g.members.get(member_id)
        if m is None or self.manager.groups.get(g.group_id) is not g:
            return
        if m.join_future is not None and not m.join_future.done():
            self.schedule_expiry(g, m)  # waiting in a join: the rebalance timeout governs it
            return
        log.info("group %s: member %s's session expired", g.group_id, member_id)
        self._remove_members(g, [member_id])

    def _remove_members(self, g: GroupMetadata, member_ids: list[str]) -> None:
        if not member_ids:
            return
        for member_id in member_ids:
            m = g.remove_member(member_id)
            if m is not None:
                for fut in (m.join_future, m.sync_future):
                    if fut is not None and not fut.done():
                        fut.set_result(ErrorCode.UNKNOWN_MEMBER_ID)
        if g.in_state(GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            self.prepare_rebalance(g, f"members {member_ids} left")
        self.maybe_complete_join(g)

    # -- SyncGroup -----------------------------------------------------------------------------
    async def sync_group(self, group_id: str, generation: int, member_id: str, instance_id: str | None,
                         assignments: dict[str, bytes]) -> SyncResult:
        code = self.manager.group_error(group_id)
        g = self.manager.groups.get(group_id) if code is ErrorCode.NONE else None
        m = g.members.get(member_id) if g is not None else None
        if code is ErrorCode.NONE:
            code = self._member_error(g, m, instance_id, generation)
        if code is not ErrorCode.NONE or g is None or m is None:  # _member_error: NONE only for a member
            return SyncResult(code)
        if g.state is GroupState.PREPARING_REBALANCE:
            return SyncResult(ErrorCode.REBALANCE_IN_PROGRESS)
        self.schedule_expiry(g, m)
        if g.state is GroupState.STABLE:
            return SyncResult(ErrorCode.NONE, g.protocol_type, g.protocol, m.assignment)
        fut = m.sync_future = asyncio.get_running_loop().create_future()
        if member_id == g.leader:
            for x in g.members.values():
                x.assignment = assignments.get(x.member_id, b"")
            stored = await self.manager.store_group(g)
            if g.state is GroupState.COMPLETING_REBALANCE and g.generation == generation:
                if stored is not ErrorCode.NONE:
                    for x in g.members.values():
                        if x.sync_future is not None and not x.sync_future.done():
                            x.sync_future.set_result(stored)
                    self.prepare_rebalance(g, f"storing the assignment failed: {stored.name}")
                else:
                    g.transition_to(GroupState.STABLE, self.manager.now_ms())
                    for x in g.members.values():
                        if x.sync_future is not None and not x.sync_future.done():
                            x.sync_future.set_result(SyncResult(ErrorCode.NONE, g.protocol_type, g.protocol,
                                                                x.assignment))
                        x.sync_future = None
        result = await fut
        return SyncResult(result) if isinstance(result, ErrorCode) else result

    def _member_error(self, g: GroupMetadata | None, m: MemberMetadata | None, instance_id: str | None,
                      generation: int) -> ErrorCode:
        if g is None or m is None or g.in_state(GroupState.EMPTY, GroupState.DEAD):
            return ErrorCode.UNKNOWN_MEMBER_ID
        if instance_id is not None and g.static_members.get(instance_id) != m.member_id:
            return ErrorCode.FENCED_INSTANCE_ID
        if generation != g.generation:
            return ErrorCode.ILLEGAL_GENERATION
        return ErrorCode.NONE

    # -- Heartbeat and LeaveGroup --------------------------------------------------------------
    def heartbeat(self, group_id: str, generation: int, member_id: str, instance_id: str | None) -> ErrorCode:
        code = self.manager.group_error(group_id)
        if code is not ErrorCode.NONE:
            return code
        g = self.manager.groups.get(group_id)
        m = g.members.get(member_id) if g is not None else None
        if g is not None and m is not None and g.state is GroupState.PREPARING_REBALANCE:
            self.schedule_expiry(g, m)
            return ErrorCode.REBALANCE_IN_PROGRESS
        code = self._member_error(g, m, instance_id, generation)
        if code is ErrorCode.NONE and g is not None and m is not None:  # _member_error: NONE only for a member
            self.schedule_expiry(g, m)
        return code

    def leave_group(self, group_id: str, leaving: list[tuple[str, str | None]]
                    ) -> tuple[ErrorCode, list[tuple[str, str | None, ErrorCode]]]:
        code = self.manager.group_error(group_id)
        if code is not ErrorCode.NONE:
            return code, []
        g = self.manager.groups.get(group_id)
        if g is None or g.state is GroupState.DEAD:
            return ErrorCode.UNKNOWN_MEMBER_ID, []
        out: list[tuple[str, str | None, ErrorCode]] = []
        gone: list[str] = []
        for member_id, instance_id in leaving:
            if instance_id is not None:
                known = g.static_members.get(instance_id)
                if known is None:
                    out.append((member_id, instance_id, ErrorCode.UNKNOWN_MEMBER_ID))
                    continue
                if member_id and member_id != known:
                    out.append((member_id, instance_id, ErrorCode.FENCED_INSTANCE_ID))
                    continue
                member_id = known
            if member_id in g.pending_members:
                g.pending_members.discard(member_id)
            elif member_id not in g.members:
                out.append((member_id, instance_id, ErrorCode.UNKNOWN_MEMBER_ID))
                continue
            else:
                gone.append(member_id)
            out.append((member_id, instance_id, ErrorCode.NONE))
        if gone:
            log.info("group %s: members %s left", group_id, gone)
        self._remove_members(g, gone)
        return ErrorCode.NONE, out
