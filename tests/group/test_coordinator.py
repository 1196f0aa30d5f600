"""GroupCoordinator on one event loop with an in-memory ``GroupLog``: the
join/sync/heartbeat/leave protocol, session expiry, static membership,
offsets written before they are visible, reload from the log, deletion
tombstones and offset expiry."""

from __future__ import annotations

import asyncio
import struct

from kavka.common.errors import ErrorCode
from kavka.group.coordinator import GroupConfig, GroupCoordinator
from kavka.group.membership import JoinRequest
from kavka.group.state import GroupState
from tests.commit_gate import CommitGate

CONFIG = GroupConfig(num_partitions=1, min_session_timeout_ms=10, initial_rebalance_delay_ms=0,
                     offsets_retention_ms=1000)
SUB = struct.pack(">hih", 1, 1, 1) + b"t" + b"\xff\xff\xff\xff"


class MemoryGroupLog:
    def __init__(self) -> None:
        self.batches: dict[int, list[bytes]] = {}
        self.fail: ErrorCode | None = None

    async def append(self, partition: int, batch: bytes) -> ErrorCode:
        if self.fail is not None:
            return self.fail
        self.batches.setdefault(partition, []).append(batch)
        return ErrorCode.NONE

    def read_all(self, partition: int):
        yield from self.batches.get(partition, [])

    async def wait_committed(self, partition, still_wanted) -> bool:
        return still_wanted()  # every append here is committed at once


async def owned(store: MemoryGroupLog | None = None, config: GroupConfig = CONFIG) -> GroupCoordinator:
    c = GroupCoordinator(1, config, store or MemoryGroupLog())
    c.on_elected(0, 1)
    for _ in range(200):
        if 0 in c.owned:
            return c
        await asyncio.sleep(0.01)
    raise AssertionError("the partition never loaded")


def join(member_id: str = "", session: int = 5000, rebalance: int = 2000, instance: str | None = None,
         protocols=(("range", SUB),)) -> JoinRequest:
    return JoinRequest("g", member_id, instance, "cli", "/127.0.0.1", session, rebalance, "consumer",
                       list(protocols), require_known_member=True)


async def first_generation(c: GroupCoordinator) -> str:
    required = await c.join_group(join())
    assert required.error is ErrorCode.MEMBER_ID_REQUIRED and required.member_id.startswith("cli-")
    joined = await c.join_group(join(required.member_id))
    assert (joined.error, joined.generation, joined.leader) == (ErrorCode.NONE, 1, required.member_id)
    assert [m[0] for m in joined.members] == [required.member_id]
    synced = await c.sync_group("g", 1, joined.member_id, None, {joined.member_id: b"plan"})
    assert (synced.error, synced.assignment, synced.protocol) == (ErrorCode.NONE, b"plan", "range")
    return joined.member_id


async def test_join_sync_heartbeat_and_a_second_member_rebalances():
    c = await owned()
    a = await first_generation(c)
    assert c.heartbeat("g", 1, a, None) is ErrorCode.NONE
    assert c.heartbeat("g", 0, a, None) is ErrorCode.ILLEGAL_GENERATION
    assert c.heartbeat("g", 1, "nobody", None) is ErrorCode.UNKNOWN_MEMBER_ID
    b_id = (await c.join_group(join())).member_id
    b_join = asyncio.ensure_future(c.join_group(join(b_id)))
    await asyncio.sleep(0.01)
    assert c.heartbeat("g", 1, a, None) is ErrorCode.REBALANCE_IN_PROGRESS
    a_join = await c.join_group(join(a))
    b_res = await b_join
    assert a_join.generation == b_res.generation == 2
    assert len(a_join.members) == 2 and b_res.members == ()  # only the leader sees the members
    b_sync = asyncio.ensure_future(c.sync_group("g", 2, b_id, None, {}))
    await asyncio.sleep(0.01)
    assert not b_sync.done()  # waits for the leader's assignment
    await c.sync_group("g", 2, a, None, {a: b"A", b_id: b"B"})
    assert (await b_sync).assignment == b"B"
    assert c.groups["g"].state is GroupState.STABLE
    code, results = c.leave_group("g", [(b_id, None)])
    assert code is ErrorCode.NONE and results == [(b_id, None, ErrorCode.NONE)]
    assert c.groups["g"].state is GroupState.PREPARING_REBALANCE
    again = await c.join_group(join(a))
    assert again.generation == 3 and [m[0] for m in again.members] == [a]


async def test_session_expiry_and_rebalance_timeout_remove_members():
    c = await owned()
    a = await first_generation(c)
    b_id = (await c.join_group(join(session=50))).member_id
    b_join = asyncio.ensure_future(c.join_group(join(b_id, session=50)))
    # a never rejoins: after the rebalance timeout b is alone.
    result = await asyncio.wait_for(b_join, 5)
    assert result.generation == 2 and [m[0] for m in result.members] == [b_id] and a not in c.groups["g"].members
    await c.sync_group("g", 2, b_id, None, {b_id: b""})
    await asyncio.sleep(0.3)  # b's 50 ms session runs out without heartbeats
    g = c.groups["g"]
    assert not g.members and g.state is GroupState.EMPTY and g.generation == 3


async def test_static_member_rejoining_takes_over_and_fences_the_old_id():
    c = await owned()
    first = await c.join_group(join(instance="i-1"))
    assert first.error is ErrorCode.NONE and first.generation == 1
    await c.sync_group("g", 1, first.member_id, "i-1", {first.member_id: b"x"})
    again = await c.join_group(join(instance="i-1"))
    assert again.error is ErrorCode.NONE and again.member_id != first.member_id and again.generation == 1
    assert c.heartbeat("g", 1, first.member_id, "i-1") is ErrorCode.UNKNOWN_MEMBER_ID
    assert c.heartbeat("g", 1, again.member_id, "i-1") is ErrorCode.NONE
    assert c.heartbeat("g", 1, again.member_id, "i-2") is ErrorCode.FENCED_INSTANCE_ID
    assert (await c.sync_group("g", 1, again.member_id, "i-1", {})).assignment == b"x"


async def test_offsets_are_written_then_reloaded_and_deleted_with_tombstones():
    store = MemoryGroupLog()
    c = await owned(store)
    a = await first_generation(c)
    code, res = await c.commit_offsets("g", 1, a, None, {("t", 0): (42, 3, "meta"), ("t", 1): (7, -1, None)})
    assert code is ErrorCode.NONE and set(res.values()) == {ErrorCode.NONE}
    code, res = await c.commit_offsets("g", 0, a, None, {("t", 0): (1, -1, None)})
    assert res == {("t", 0): ErrorCode.ILLEGAL_GENERATION}
    store.fail = ErrorCode.NOT_ENOUGH_REPLICAS
    _, res = await c.commit_offsets("g", 1, a, None, {("t", 0): (99, -1, None)})
    assert res == {("t", 0): ErrorCode.COORDINATOR_NOT_AVAILABLE}
    store.fail = None
    assert c.fetch_offsets("g", [("t", 0)])[1][("t", 0)].offset == 42  # the failed commit is not visible
    # A new leader rebuilds the same state from the log.
    c2 = await owned(store)
    _, found = c2.fetch_offsets("g", None)
    assert {tp: (o.offset, o.leader_epoch, o.metadata) for tp, o in found.items()} == {
        ("t", 0): (42, 3, "meta"), ("t", 1): (7, -1, "")}
    g2 = c2.groups["g"]
    assert (g2.state, g2.generation, list(g2.members), g2.members[a].assignment) == (
        GroupState.STABLE, 1, [a], b"plan")
    assert (await c.delete_groups(["g"]))["g"] is ErrorCode.NON_EMPTY_GROUP
    c.leave_group("g", [(a, None)])
    await asyncio.sleep(0.01)
    assert c.groups["g"].state is GroupState.EMPTY
    assert (await c.delete_groups(["g", "nope"])) == {"g": ErrorCode.NONE, "nope": ErrorCode.GROUP_ID_NOT_FOUND}
    c3 = await owned(store)
    assert "g" not in c3.groups and c3.fetch_offsets("g", None) == (ErrorCode.NONE, {})


class UncommittedTailLog(MemoryGroupLog):
    """A log whose tail is not committed until ``gate`` opens."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = CommitGate()

    async def wait_committed(self, partition, still_wanted) -> bool:
        return await self.gate.wait(still_wanted)


async def test_a_load_serves_nothing_until_what_it_read_is_committed():
    """A new leader's log may end above its high watermark: the groups and
    offsets read from there are served only once committed (until then
    COORDINATOR_LOAD_IN_PROGRESS), and a load given up by resigning owns
    nothing."""
    store = UncommittedTailLog()
    store.gate.opened.set()
    c = await owned(store)
    await c.commit_offsets("g", -1, "", None, {("t", 0): (5, -1, None)})
    store.gate.opened.clear()
    c2 = GroupCoordinator(1, CONFIG, store)
    c2.on_elected(0, 2)
    await asyncio.sleep(0.05)
    assert c2.fetch_offsets("g", None)[0] is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    assert (await c2.join_group(join())).error is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    c2.on_resigned(0)
    await asyncio.sleep(0.05)
    assert c2.fetch_offsets("g", None)[0] is ErrorCode.NOT_COORDINATOR and "g" not in c2.groups
    c2.on_elected(0, 3)
    await asyncio.sleep(0.05)
    assert c2.fetch_offsets("g", None)[0] is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    store.gate.opened.set()
    for _ in range(100):
        if 0 in c2.owned:
            break
        await asyncio.sleep(0.01)
    assert c2.fetch_offsets("g", [("t", 0)])[1][("t", 0)].offset == 5


async def test_ownership_errors():
    c = GroupCoordinator(1, CONFIG, MemoryGroupLog())
    assert (await c.join_group(join())).error is ErrorCode.NOT_COORDINATOR
    assert c.heartbeat("", 1, "m", None) is ErrorCode.INVALID_GROUP_ID
    c.loading[0] = 1
    assert c.fetch_offsets("g", None)[0] is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    c2 = await owned()
    await c2.commit_offsets("g", -1, "", None, {("t", 0): (5, -1, None)})
    c2.on_resigned(0)
    assert c2.fetch_offsets("g", None)[0] is ErrorCode.NOT_COORDINATOR and "g" not in c2.groups


async def test_offset_delete_and_expiry():
    store = MemoryGroupLog()
    c = await owned(store)
    a = await first_generation(c)
    await c.commit_offsets("g", 1, a, None, {("t", 0): (1, -1, None), ("u", 0): (2, -1, None)})
    code, res = await c.delete_offsets("g", [("t", 0), ("u", 0)])
    assert code is ErrorCode.NONE
    assert res == {("t", 0): ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC, ("u", 0): ErrorCode.NONE}
    assert set(c.groups["g"].offsets) == {("t", 0)}
    c.leave_group("g", [(a, None)])
    await asyncio.sleep(0.01)
    g = c.groups["g"]
    assert await c.expire_offsets(g.state_timestamp + 10) == 0
    assert await c.expire_offsets(c.now_ms() + CONFIG.offsets_retention_ms + 10) == 1
    assert "g" not in c.groups
    assert "g" not in (await owned(store)).groups


async def test_static_leader_keeps_leadership_when_it_restarts():
    c = await owned()
    lead = await c.join_group(join(instance="i-lead"))
    other_id = (await c.join_group(join())).member_id
    other = asyncio.ensure_future(c.join_group(join(other_id)))
    await asyncio.sleep(0.01)  # the second member's join starts the rebalance
    again = await c.join_group(join(lead.member_id, instance="i-lead"))
    await other
    assert again.leader == lead.member_id and again.generation == 2
    await c.sync_group("g", 2, lead.member_id, "i-lead", {lead.member_id: b"L", other_id: b"O"})
    restarted = await c.join_group(join(instance="i-lead"))
    assert restarted.error is ErrorCode.NONE and restarted.generation == 2
    assert c.groups["g"].leader == restarted.member_id and len(restarted.members) == 2


async def test_offsets_of_deleted_partitions_are_removed():
    store = MemoryGroupLog()
    c = await owned(store)
    await c.commit_offsets("g", -1, "", None, {("t", 0): (1, -1, None), ("u", 0): (2, -1, None)})
    assert await c.remove_offsets_of({("t", 0), ("x", 9)}) == 1
    assert set(c.groups["g"].offsets) == {("u", 0)}
    assert set((await owned(store)).groups["g"].offsets) == {("u", 0)}


async def test_offsets_of_deleted_partitions_go_in_a_task_the_coordinator_holds():
    """UpdateMetadata reports deleted partitions from a synchronous callback:
    the tombstones are written by a task, which the coordinator keeps a
    reference to until it is done (the event loop holds tasks only weakly)."""
    store = MemoryGroupLog()
    c = await owned(store)
    a = await first_generation(c)
    await c.commit_offsets("g", 1, a, None, {("t", 0): (42, -1, None), ("u", 0): (7, -1, None)})
    written = len(store.batches[0])
    c.partitions_deleted([("t", 0)])
    assert len(c.offsets._removals) == 1
    for _ in range(200):
        if not c.offsets._removals:
            break
        await asyncio.sleep(0.01)
    assert not c.offsets._removals
    _, found = c.fetch_offsets("g", None)
    assert set(found) == {("u", 0)}
    assert len(store.batches[0]) == written + 1  # the tombstone
