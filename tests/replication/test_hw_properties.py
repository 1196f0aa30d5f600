"""Property: while a broker leads, its high watermark never decreases, never
passes its own LEO, and never passes the LEO of any ISR member — whatever
mix of appends, follower fetches, time passing, ISR shrinks and expansions
(written, failed or refused by a conflict) happens (seed 002 §6.4)."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from kavka.common.clock import ManualClock
from kavka.common.errors import NotLeaderOrFollowerError
from kavka.storage.log import Log

from .conftest import LAG_MS, REPLICATION_SETTINGS, T0, batch, log_config, make_partition, state

FOLLOWERS = (2, 3)

ops = st.lists(
    st.one_of(
        st.tuples(st.just("append"), st.integers(1, 3)),
        st.tuples(st.just("fetch"), st.sampled_from(FOLLOWERS), st.floats(0, 1)),
        st.tuples(st.just("tick"), st.integers(0, 2 * LAG_MS)),
        st.tuples(st.just("shrink")),
        st.tuples(st.just("expand"), st.sampled_from(FOLLOWERS)),
        st.tuples(st.just("resolve"), st.sampled_from(["written", "failed", "conflict"])),
    ),
    max_size=40,
)


def _check(p, previous_hw: int) -> int:
    hw = p.log.high_watermark
    assert hw >= previous_hw, "the HW went down"
    assert hw <= p.log.log_end_offset
    if p.is_leader:
        members = set(p.isr) | (set(p.pending_isr.leader_and_isr.isr) if p.pending_isr else set())
        for broker_id in members - {p.local_broker_id}:
            assert hw <= p.replica(broker_id).log_end_offset, (broker_id, hw, p)
    return hw


@REPLICATION_SETTINGS
@given(st.sampled_from([(1, 2, 3), (1, 2), (1,)]), ops)
def test_hw_bounded_by_isr_and_monotonic(initial_isr, steps):
    clock = ManualClock(T0)
    with tempfile.TemporaryDirectory() as d:
        log = Log(Path(d) / "orders-0", log_config(), clock=clock)
        try:
            p = make_partition(log, clock)
            p.make_leader(state(1, 0, initial_isr, (1, 2, 3)))
            for f in FOLLOWERS:  # every follower's first fetch
                p.update_follower_fetch_state(f, 0, 0, clock.milliseconds(), 0)
            hw, version = _check(p, 0), 0
            for step in steps:
                kind = step[0]
                if kind == "append":
                    try:
                        p.append_records_to_leader(batch(step[1]), required_acks=1)
                    except NotLeaderOrFollowerError:
                        assert not p.is_leader
                elif kind == "fetch":
                    replica = p.replica(step[1])
                    low, high = max(replica.log_end_offset, 0), log.log_end_offset
                    offset = low + round(step[2] * (high - low))
                    if p.update_follower_fetch_state(step[1], offset, 0, clock.milliseconds(), high):
                        p.maybe_expand_isr(step[1])
                        p.maybe_increment_hw()
                elif kind == "tick":
                    clock.advance(step[1])
                elif kind == "shrink":
                    p.maybe_shrink_isr(clock.milliseconds(), LAG_MS)
                elif kind == "expand":
                    p.maybe_expand_isr(step[1])
                elif p.pending_isr is not None:
                    if step[1] == "written":
                        version += 1
                        assert p.complete_isr_update(p.pending_isr, version)
                        p.maybe_increment_hw()
                    else:
                        p.fail_isr_update(p.pending_isr, conflict=step[1] == "conflict")
                hw = _check(p, hw)
                assert p.local_broker_id in p.isr
        finally:
            log.close()
