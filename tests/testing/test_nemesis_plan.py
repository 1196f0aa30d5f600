"""``kavka.testing.schedule.plan``: the fault schedule is a pure function of
its seed (a run is replayed by its seed), keeps to its bounds and mixes
the kinds it is given."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kavka.testing.schedule import ALL_KINDS, plan


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**31 - 1), st.floats(10, 600), st.integers(1, 3))
def test_a_plan_is_replayable_and_bounded(seed, seconds, max_active):
    steps = plan(seed, seconds, max_active=max_active)
    assert steps == plan(seed, seconds, max_active=max_active)
    for s in steps:
        assert s.kind in ALL_KINDS and s.start > 0 and s.start + s.duration <= seconds
        active = [o for o in steps if o.start <= s.start < o.start + o.duration]
        assert len(active) <= max_active
    assert [s.start for s in steps] == sorted(s.start for s in steps)


def test_twenty_minutes_give_two_hundred_faults_of_every_kind():
    steps = plan(7, 20 * 60)
    assert len(steps) >= 200
    assert {s.kind for s in steps} == set(ALL_KINDS)
    assert plan(8, 20 * 60) != steps


def test_only_the_kinds_asked_for():
    assert {s.kind for s in plan(3, 300, ["kill", "zk-kill"])} == {"kill", "zk-kill"}
    with pytest.raises(ValueError, match="unknown nemesis 'flood'"):
        plan(3, 300, ["flood"])
