"""Transactional offset commits in the group coordinator: pending until
the producer's marker, committed by COMMIT, dropped by ABORT, and the same
outcome when a new coordinator replays the log (with the markers in it)."""

from __future__ import annotations

from kavka.common.errors import ErrorCode
from kavka.protocol.records.control import ControlRecordType, build_control_batch

from .test_coordinator import MemoryGroupLog, owned

PID = 77


async def _commit(c, offset: int, pid: int = PID):
    return await c.commit_txn_offsets("g", pid, 0, -1, "", None, {("t", 0): (offset, -1, "m")})


async def test_pending_until_commit_marker_and_dropped_on_abort():
    c = await owned()
    assert await _commit(c, 5) == {("t", 0): ErrorCode.NONE}
    assert c.fetch_offsets("g", [("t", 0)])[1][("t", 0)] is None  # not visible yet
    c.complete_txn_offsets(0, PID, commit=True)
    assert c.fetch_offsets("g", [("t", 0)])[1][("t", 0)].offset == 5
    await _commit(c, 9)
    c.complete_txn_offsets(0, PID, commit=False)
    assert c.fetch_offsets("g", [("t", 0)])[1][("t", 0)].offset == 5
    assert c.pending_txn_offsets == {}


async def test_member_fencing_kip_447():
    c = await owned()
    await _commit(c, 1)
    got = await c.commit_txn_offsets("g", PID, 0, 3, "ghost", None, {("t", 0): (2, -1, None)})
    assert got == {("t", 0): ErrorCode.UNKNOWN_MEMBER_ID}


async def test_reload_replays_markers_and_keeps_open_ones_pending():
    store = MemoryGroupLog()
    c = await owned(store)
    await _commit(c, 5, pid=1)
    await _commit(c, 7, pid=2)
    await _commit(c, 8, pid=3)
    store.batches[0].append(build_control_batch(ControlRecordType.COMMIT, 1, 0, 0, 0))
    store.batches[0].append(build_control_batch(ControlRecordType.ABORT, 2, 0, 0, 0))
    again = await owned(store)
    assert again.fetch_offsets("g", [("t", 0)])[1][("t", 0)].offset == 5
    assert set(again.pending_txn_offsets["g"]) == {3}
    again.complete_txn_offsets(0, 3, commit=True)
    assert again.fetch_offsets("g", [("t", 0)])[1][("t", 0)].offset == 8


async def test_pending_offset_is_unstable_until_the_marker():
    c = await owned()
    await _commit(c, 5)
    assert c.has_pending_txn_offset("g", ("t", 0)) and not c.has_pending_txn_offset("g", ("t", 1))
    c.complete_txn_offsets(0, PID, commit=True)
    assert not c.has_pending_txn_offset("g", ("t", 0))
