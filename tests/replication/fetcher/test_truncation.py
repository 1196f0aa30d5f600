"""KIP-101's two failures of truncating to the high watermark, reproduced
step by step with in-process brokers, in both ``replica.truncation.mode``s:
"hw" (the seeds' design) loses a committed message / lets replicas diverge;
"leader-epoch" (the default) does neither. Plus KAFKA-7164 (re-truncate on an
epoch bump with the same leader) and Fetch v12's diverging epoch."""

from __future__ import annotations

import asyncio

import pytest

from kavka.common.errors import ErrorCode
from kavka.protocol.records.batch import iter_batches
from kavka.protocol.records.reader import iter_records
from kavka.replication.fetcher.leader_endpoint import LeaderConnectionError
from kavka.replication.fetcher.state import FetchPhase, PartitionFetchState

from ..conftest import TP, batch, state
from .harness import Cluster

A, B, C = 1, 2, 3


async def replicate(c: Cluster, follower: int, *, leo: int, hw: int, rounds: int = 10) -> None:
    """Step ``follower``'s fetcher until its log reaches (leo, hw)."""
    for _ in range(rounds):
        log = c[follower].log(TP)
        if (log.log_end_offset, log.high_watermark) == (leo, hw):
            return
        await c[follower].runner(TP).run_once()
    log = c[follower].log(TP)
    raise AssertionError(f"broker {follower} at (leo, hw) {(log.log_end_offset, log.high_watermark)}, "
                         f"wanted {(leo, hw)}")


def values(c: Cluster, broker: int) -> list[bytes]:
    log = c[broker].rm.log_manager.get_log(TP.topic, TP.partition)
    data = memoryview(bytes(log.read(0, 1 << 20).records))
    return [bytes(r.value) for pos, _ in iter_batches(data) for r in iter_records(data[pos:])]


@pytest.mark.parametrize(("mode", "on_fetch"), [("hw", False), ("leader-epoch", False), ("leader-epoch", True)])
async def test_kip101_scenario_1_restart_with_a_stale_hw(tmp_path, clock, mode, on_fetch):
    """on_fetch: the leader answers diverging epochs in Fetch, so a new
    follower skips OffsetsForLeaderEpoch (KIP-595); the outcome is the same."""
    c = Cluster(tmp_path, clock, (A, B), mode=mode, truncation_on_fetch=on_fetch)
    c.leader_and_isr([state(B, 0, (B, A), (B, A))])
    await c[B].rm.append_records(30_000, 1, {TP: batch(1, b"m1")})
    await replicate(c, A, leo=1, hw=1)
    # 1-3: m2 reaches A, A's next fetch commits it at B; A still holds HW 1.
    produce = asyncio.ensure_future(c[B].rm.append_records(30_000, -1, {TP: batch(1, b"m2")}))
    await asyncio.sleep(0)
    await c[A].runner(TP).run_once()
    assert not produce.done()
    await c[A].runner(TP).run_once()
    assert (await asyncio.wait_for(produce, 5))[TP].error is ErrorCode.NONE  # m2 acknowledged
    assert (c[A].log(TP).log_end_offset, c[A].log(TP).high_watermark) == (2, 1)
    # 4: A restarts and follows B again; 5: B dies before A fetches.
    await c[A].restart()
    c[B].reachable = False
    c.leader_and_isr([state(B, 0, (B, A), (B, A))], to=[A])
    if mode == "leader-epoch":
        with pytest.raises(LeaderConnectionError):
            await c[A].runner(TP).run_once()
    c.znodes.versions[TP] = 1
    c.leader_and_isr([state(A, 1, (A,), (B, A), zk_version=1)], to=[A])
    await c[A].rm.append_records(30_000, 1, {TP: batch(1, b"m3")})
    if mode == "hw":
        assert values(c, A) == [b"m1", b"m3"]  # the acknowledged m2 is lost
    else:
        assert values(c, A) == [b"m1", b"m2", b"m3"]
    # B comes back and follows A.
    await c[B].restart()
    c[B].reachable = True
    c.leader_and_isr([state(A, 1, (A,), (B, A), zk_version=1)], to=[B])
    for _ in range(3):
        await c[B].runner(TP).run_once()
    if mode == "hw":
        assert values(c, B) == [b"m1", b"m2"]  # and the replicas disagree at offset 1
        assert c[A].batches(TP)[1] != c[B].batches(TP)[1]
    else:
        assert c[B].batches(TP) == c[A].batches(TP)
    await c.close()


@pytest.mark.parametrize(("mode", "on_fetch"), [("hw", False), ("leader-epoch", False), ("leader-epoch", True)])
async def test_kip101_scenario_2_both_crash_and_lose_unflushed_data(tmp_path, clock, mode, on_fetch):
    c = Cluster(tmp_path, clock, (A, B), mode=mode, truncation_on_fetch=on_fetch)
    c.leader_and_isr([state(B, 0, (B, A), (B, A))])
    await c[B].rm.append_records(30_000, 1, {TP: batch(1, b"m1")})
    await replicate(c, A, leo=1, hw=1)
    await c[B].rm.append_records(30_000, 1, {TP: batch(1, b"m2")})
    await replicate(c, A, leo=2, hw=2)
    # Both crash. B had not flushed m2 and loses it; A keeps m2 (below its HW).
    await c[B].crash_restart(TP, keep_offsets=1)
    await c[A].restart()
    # B comes back first, leads, and writes m3 at offset 1.
    c.znodes.versions[TP] = 1
    c.leader_and_isr([state(B, 1, (B,), (B, A), zk_version=1)], to=[B])
    assert c[B].log(TP).log_end_offset == 1
    await c[B].rm.append_records(30_000, 1, {TP: batch(1, b"m3")})
    c.leader_and_isr([state(B, 1, (B,), (B, A), zk_version=1)], to=[A])
    for _ in range(3):
        await c[A].runner(TP).run_once()
    if mode == "hw":
        assert values(c, A) == [b"m1", b"m2"] and values(c, B) == [b"m1", b"m3"]
        assert c[A].batches(TP)[1][0] == c[B].batches(TP)[1][0] == 1  # one offset, two records
    else:
        assert values(c, A) == values(c, B) == [b"m1", b"m3"]
        assert c[A].batches(TP) == c[B].batches(TP)
        assert ("OffsetsForLeaderEpoch" in c[A].calls()) is not on_fetch
    await c.close()


@pytest.mark.parametrize("on_fetch", [False, True])
async def test_epoch_bump_with_the_same_leader_re_truncates(tmp_path, clock, on_fetch):
    """KAFKA-7164: A misses the LeaderAndIsr of epoch 1 (C led, B truncated);
    when B leads again at epoch 2, A's leader id did not change but it must
    re-check its log, dropping m2 which no longer exists on B: through
    OffsetsForLeaderEpoch, or (on_fetch, KIP-595) its first Fetch's diverging epoch."""

    c = Cluster(tmp_path, clock, (A, B, C), truncation_on_fetch=on_fetch)
    c.leader_and_isr([state(B, 0, (B, A, C))])
    await c[B].rm.append_records(30_000, 1, {TP: batch(1, b"m1")})
    for _ in range(3):
        for follower in (A, C):
            await c[follower].runner(TP).run_once()
    assert c[A].log(TP).high_watermark == c[C].log(TP).high_watermark == 1
    await c[B].rm.append_records(30_000, 1, {TP: batch(1, b"m2")})
    await c[A].runner(TP).run_once()
    assert c[A].log(TP).log_end_offset == 2
    # Epoch 1: C leads (A does not hear of it), writes m3; B follows and truncates.
    c.znodes.versions[TP] = 1
    c.leader_and_isr([state(C, 1, (C, B), (B, A, C), zk_version=1)], to=[C, B])
    await c[C].rm.append_records(30_000, 1, {TP: batch(1, b"m3")})
    for _ in range(3):
        await c[B].runner(TP).run_once()
    assert values(c, B) == [b"m1", b"m3"]
    # Epoch 2: B leads again; A hears of this one.
    c.znodes.versions[TP] = 2
    c.leader_and_isr([state(B, 2, (B, C, A), (B, A, C), zk_version=2)])
    assert c[A].runner(TP).fetch_state(TP).phase is FetchPhase.TRUNCATING
    calls_before = len(c[A].calls())
    for _ in range(3):
        await c[A].runner(TP).run_once()
    assert c[A].calls()[calls_before] == ("Fetch" if on_fetch else "OffsetsForLeaderEpoch")
    assert ("OffsetsForLeaderEpoch" in c[A].calls()[calls_before:]) is not on_fetch
    assert values(c, A) == [b"m1", b"m3"]
    assert c[A].batches(TP) == c[B].batches(TP)
    await c.close()


async def test_diverging_epoch_in_a_fetch_response_truncates(tmp_path, clock):
    """Fetch v12: a follower fetching with a stale last_fetched_epoch is told
    where its epoch ended and truncates without OffsetsForLeaderEpoch."""

    c = Cluster(tmp_path, clock, (A, B))
    c.leader_and_isr([state(B, 0, (B, A))])
    await c[B].rm.append_records(30_000, 1, {TP: batch(2, b"old")})
    await replicate(c, A, leo=2, hw=2)
    await c[B].rm.append_records(30_000, 1, {TP: batch(1, b"lost")})
    await c[A].runner(TP).run_once()
    assert c[A].log(TP).log_end_offset == 3
    # B loses the last batch (crash), leads epoch 1, writes a new one.
    await c[B].crash_restart(TP, keep_offsets=2)
    c.znodes.versions[TP] = 1
    c.leader_and_isr([state(B, 1, (B,), (B, A), zk_version=1)], to=[B])
    await c[B].rm.append_records(30_000, 1, {TP: batch(2, b"new")})
    c.leader_and_isr([state(B, 1, (B,), (B, A), zk_version=1)], to=[A])
    # Skip the truncation step: fetch straight away from our log end.
    runner = c[A].runner(TP)
    runner.adopt({TP: PartitionFetchState(3, 1, FetchPhase.FETCHING)})
    calls_before = len(c[A].calls())
    await runner.run_once()
    assert c[A].log(TP).log_end_offset == 2 and c[A].calls()[calls_before:] == ["Fetch"]
    for _ in range(2):
        await runner.run_once()
    assert c[A].batches(TP) == c[B].batches(TP)
    assert values(c, A) == [b"old", b"old", b"new", b"new"]
    await c.close()


@pytest.mark.parametrize("on_fetch", [False, True])
async def test_a_leader_that_wrote_nothing_in_its_epoch_follows_the_next_leader(tmp_path, clock, on_fetch):
    """A becomes leader of epoch 1 (its epoch cache gets 1 -> its log end)
    and loses leadership before writing anything; B leads epoch 2 and writes.
    B never heard of epoch 1, so it answers A's epoch 1 with its epoch 0 and
    where that ends, which is A's log end: no record to cut, but A's cache
    entry for epoch 1 must go (Kafka's UnifiedLog.truncateTo does the same
    for this case), or every Fetch A sends names epoch 1 again, is told its
    epoch diverges, truncates nothing, and A never catches up (a chaos run
    found the follower stuck out of the ISR for good)."""

    c = Cluster(tmp_path, clock, (A, B), truncation_on_fetch=on_fetch)
    c.leader_and_isr([state(B, 0, (B, A))])
    await c[B].rm.append_records(30_000, 1, {TP: batch(1, b"m1")})
    await replicate(c, A, leo=1, hw=1)
    c.znodes.versions[TP] = 1
    c.leader_and_isr([state(A, 1, (A,), (B, A), zk_version=1)], to=[A])
    assert c[A].log(TP).leader_epoch_cache.latest_epoch() == 1
    c.znodes.versions[TP] = 2
    c.leader_and_isr([state(B, 2, (B,), (B, A), zk_version=2)])
    await c[B].rm.append_records(30_000, 1, {TP: batch(1, b"m2")})
    await replicate(c, A, leo=2, hw=2)
    assert values(c, A) == [b"m1", b"m2"]
    assert c[A].batches(TP) == c[B].batches(TP)
    await c.close()
