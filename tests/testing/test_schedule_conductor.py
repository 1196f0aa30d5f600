"""``kavka.testing.schedule.Conductor`` under a fake clock: however late
the injections and heals run (each takes a random time, as a stop of a
broker or a question to a ZooKeeper without quorum does), never more
faults active than the plan's limit, never two of an exclusive group
(two ZooKeeper member faults of three), never an overlap the plan did not
make, every fault injected in plan order and healed, a due heal before
the next injection."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kavka.testing.schedule import (
    ALL_KINDS,
    EXCLUSIVE,
    INSTANT_KINDS,
    Conductor,
    Done,
    Heal,
    Inject,
    Planned,
    Wait,
    admissible,
    conflicts,
    plan,
)


def overlap(a: Planned, b: Planned) -> bool:
    return a.start < b.end and b.start < a.end


def simulate(steps, costs, *, max_active=2, forced_late=0.0):
    """Runs the conductor on a fake clock where the n-th injection or heal
    takes costs[n % len(costs)] seconds; returns the real intervals
    [start of the inject call, end of the heal call] and the log."""
    c = Conductor(steps, max_active=max_active)
    now = forced_late
    n = 0
    opened: dict[int, float] = {}
    intervals: list[tuple[int, float, float]] = []
    log = []
    for _ in range(100_000):
        action = c.next_action(now)
        if isinstance(action, Done):
            break
        if isinstance(action, Wait):
            assert action.until > now
            now = action.until
            continue
        if isinstance(action, Inject):
            # Everything active now (its heal not yet called) overlaps this
            # step in the plan, is within the limit and conflicts with nothing.
            live = [f.step for f in c.active]
            assert admissible((s.kind for s in live), action.step.kind, max_active=max_active)
            for s in live:
                assert overlap(s, action.step), (s, action.step)
            assert all(f.due > now for f in c.active), "a due heal runs before the next injection"
            begin = now
            now += costs[n % len(costs)]
            n += 1
            fault = c.injected(action.index, now, "", None)
            log.append(("inject", action.index, begin, action.late))
            if fault is None:
                intervals.append((action.index, begin, now))
            else:
                opened[action.index] = begin
        elif isinstance(action, Heal):
            now += costs[n % len(costs)]
            n += 1
            c.healed(action.fault)
            intervals.append((action.fault.index, opened.pop(action.fault.index), now))
            log.append(("heal", action.fault.index, now, action.early))
    else:
        raise AssertionError("the conductor never finished")
    assert not opened and not c.active
    return intervals, log


def concurrent(intervals):
    """The largest number of intervals open at one instant."""
    points = sorted([(s, 1) for _, s, _ in intervals] + [(e, -1) for _, _, e in intervals],
                    key=lambda p: (p[0], p[1]))
    most = cur = 0
    for _, d in points:
        cur += d
        most = max(most, cur)
    return most


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), seconds=st.floats(20, 400), max_active=st.integers(1, 3),
       costs=st.lists(st.floats(0, 40), min_size=1, max_size=12), forced_late=st.floats(0, 60))
def test_lateness_never_breaks_the_plans_invariants(seed, seconds, max_active, costs, forced_late):
    steps = plan(seed, seconds, max_active=max_active)
    intervals, log = simulate(steps, costs, max_active=max_active, forced_late=forced_late)
    assert [i for kind, i, *_ in log if kind == "inject"] == list(range(len(steps)))
    # Intervals that touch only at an instant are not an overlap: a heal
    # ends before the next inject call begins.
    shrunk = [(i, s + 1e-9, e - 1e-9) for i, s, e in intervals if e - s > 2e-9]
    assert concurrent(shrunk) <= max_active
    for i, s, e in shrunk:
        for j, s2, e2 in shrunk:
            if i < j and s < e2 and s2 < e:
                assert overlap(steps[i], steps[j]), (steps[i], steps[j])
                assert not conflicts(steps[i].kind, steps[j].kind)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**31 - 1), st.floats(10, 600), st.integers(1, 3))
def test_a_plan_never_overlaps_exclusive_faults(seed, seconds, max_active):
    steps = plan(seed, seconds, max_active=max_active)
    for a in steps:
        for b in steps:
            if a is not b and overlap(a, b):
                assert not conflicts(a.kind, b.kind), (a, b)


def test_on_time_the_run_is_the_plan():
    steps = [Planned(1, 5, "kill", 1), Planned(2, 10, "zk-kill", 2), Planned(7, 3, "pause", 3)]
    _, log = simulate(steps, [0.0])
    assert log == [("inject", 0, 1, 0), ("inject", 1, 2, 0), ("heal", 0, 6, False), ("inject", 2, 7, 0),
                   ("heal", 2, 10, False), ("heal", 1, 12, False)]


def test_a_late_run_heals_what_the_plan_had_ended_before_injecting():
    # The drift a loaded run showed: the kill injected 30 s late would still
    # be on when the ZooKeeper split began; the plan had healed it by then.
    steps = [Planned(1, 5, "zk-kill", 1), Planned(8, 5, "zk-split", 2)]
    c = Conductor(steps)
    assert c.next_action(0) == Wait(1)
    a = c.next_action(31)
    assert isinstance(a, Inject) and a.late == 30
    fault = c.injected(0, 31, "zk1 kill -9", None)
    assert fault is not None and fault.due == 36
    a = c.next_action(32)
    assert isinstance(a, Heal) and a.fault is fault and a.early
    c.healed(fault)
    a = c.next_action(32)
    assert isinstance(a, Inject) and a.index == 1 and a.late == 24


def test_an_explicit_schedule_that_breaks_an_invariant_waits_for_the_heal():
    steps = [Planned(0, 10, "zk-kill", 1), Planned(2, 10, "zk-split", 2)]
    _, log = simulate(steps, [0.0])
    assert log == [("inject", 0, 0, 0), ("heal", 0, 10, False), ("inject", 1, 10, 8), ("heal", 1, 20, False)]


def test_a_bounce_is_over_when_injected_and_a_failed_injection_is_passed_over():
    steps = [Planned(1, 5, "bounce", 1), Planned(2, 5, "kill", 2), Planned(3, 5, "pause", 3)]
    c = Conductor(steps)
    assert c.injected(0, 1, "broker 1 SIGTERM and start", None) is None
    assert not c.active and "bounce" in INSTANT_KINDS
    c.skipped(1)
    a = c.next_action(3)
    assert isinstance(a, Inject) and a.index == 2


def test_two_zookeeper_member_faults_and_two_disk_fills_are_exclusive():
    assert conflicts("zk-kill", "zk-split") and conflicts("zk-kill", "zk-kill") and conflicts("disk-full", "disk-full")
    assert not conflicts("zk-kill", "kill") and not conflicts("isolate-zk", "zk-kill")
    assert not admissible(["kill", "pause"], "one-way") and admissible(["kill"], "one-way")
    assert all(group <= set(ALL_KINDS) for group in EXCLUSIVE)
