"""The seeded fault schedule of a chaos run and the conductor that keeps
its invariants when the run falls behind it.

``plan(seed, seconds, kinds)`` is pure: the same seed gives the same
timeline of (start, duration, kind, target seed). It keeps two
invariants: at most ``max_active`` faults at a time, and never two faults
of one exclusive group at once (``EXCLUSIVE``: with three ZooKeeper
members, a killed member and a split-off one, or two of either, leave no
majority, and the run would test an ensemble that is simply down; the
disk-full broker has one disk to fill).

Injections and heals block (a broker stopped, ZooKeeper asked for a
leader while it has no quorum), so under load a run falls behind its
plan. ``Conductor`` decides, from the time alone, what the run does next,
so the invariants hold whatever the lateness: a heal that is due runs
before the next injection; a late injection first heals the faults that
the plan had ended by its start (they began late and would otherwise
overlap it, an overlap the plan never made); an injection that would
still break an invariant (an explicit schedule that does) waits for a
heal. It holds no clock and does no I/O, so a fake clock tests it.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

NETWORK_KINDS = ("partition-leader", "leader-then-zk", "isolate-zk", "isolate-controller", "zk-split", "one-way",
                 "isolate-host")
PROCESS_KINDS = ("kill", "pause", "bounce", "zk-kill", "disk-full")
ALL_KINDS = NETWORK_KINDS + PROCESS_KINDS
# Kinds over in the injection itself (no heal, no time active in the run).
INSTANT_KINDS = frozenset({"bounce"})
# At most one fault of each group at a time: two ZooKeeper member faults
# take the majority of a three-member ensemble; there is one disk to fill.
EXCLUSIVE: tuple[frozenset[str], ...] = (frozenset({"zk-kill", "zk-split"}), frozenset({"disk-full"}))
MAX_ACTIVE = 2


@dataclass(frozen=True, slots=True)
class Planned:
    start: float  # seconds after the schedule starts
    duration: float
    kind: str
    target_seed: int

    @property
    def end(self) -> float:
        return self.start + self.duration


def conflicts(a: str, b: str, exclusive: Sequence[frozenset[str]] = EXCLUSIVE) -> bool:
    """Whether faults of kinds ``a`` and ``b`` may not be active together."""
    return any(a in group and b in group for group in exclusive)


def admissible(active: Iterable[str], kind: str, *, max_active: int = MAX_ACTIVE,
               exclusive: Sequence[frozenset[str]] = EXCLUSIVE) -> bool:
    """Whether a fault of ``kind`` may start while faults of ``active`` kinds are on."""
    kinds = list(active)
    return len(kinds) < max_active and not any(conflicts(k, kind, exclusive) for k in kinds)


def plan(seed: int, seconds: float, kinds: Sequence[str] = ALL_KINDS, *, max_active: int = MAX_ACTIVE,
         gap: tuple[float, float] = (1.0, 6.0), duration: tuple[float, float] = (3.0, 12.0),
         exclusive: Sequence[frozenset[str]] = EXCLUSIVE) -> list[Planned]:
    """The fault timeline of one run: a new fault every ``gap`` seconds
    (uniform), lasting ``duration`` (uniform); a fault due while
    ``max_active`` are active, or while one it conflicts with is, waits
    for the heal that lets it in; none heals after ``seconds``."""
    for k in kinds:
        if k not in ALL_KINDS:
            raise ValueError(f"unknown nemesis {k!r}; known: {', '.join(ALL_KINDS)}")
    rng = random.Random(seed)
    out: list[Planned] = []
    t = rng.uniform(*gap)
    while True:
        kind = rng.choice(list(kinds))
        d = round(rng.uniform(*duration), 2)
        target_seed = rng.randrange(1 << 31)
        while True:
            t = round(t, 2)
            active = [p for p in out if p.start <= t < p.end]
            blocking = active if len(active) >= max_active else [
                p for p in active if conflicts(p.kind, kind, exclusive)]
            if not blocking:
                break
            t = min(p.end for p in blocking) + 0.5
        if t + d > seconds:
            return out
        out.append(Planned(t, d, kind, target_seed))
        t += rng.uniform(*gap)


@dataclass(slots=True)
class Fault:
    """An injected fault not healed yet. Times are seconds after the
    schedule's start; ``heal`` is the caller's (the conductor never calls it)."""
    index: int
    step: Planned
    began: float
    due: float  # began + the planned duration: a late fault keeps its length
    detail: str
    heal: object


@dataclass(frozen=True, slots=True)
class Wait:
    until: float


@dataclass(frozen=True, slots=True)
class Inject:
    index: int
    step: Planned
    late: float  # seconds behind the plan


@dataclass(frozen=True, slots=True)
class Heal:
    fault: Fault
    late: float  # seconds after it was due (0 when early)
    early: bool  # healed before its due time: the plan had ended it by the next injection's start


@dataclass(frozen=True, slots=True)
class Done:
    pass


Action = Wait | Inject | Heal | Done


class Conductor:
    """What a run does next, given the time: see the module docstring.

    The caller asks ``next_action(now)`` and reports back what it did
    (``injected``, ``skipped``, ``healed``); ``now`` is seconds after the
    schedule's start."""

    def __init__(self, steps: Sequence[Planned], *, max_active: int = MAX_ACTIVE,
                 exclusive: Sequence[frozenset[str]] = EXCLUSIVE) -> None:
        self.steps = sorted(steps, key=lambda s: s.start)
        self.max_active = max_active
        self.exclusive = exclusive
        self.active: list[Fault] = []
        self.next_index = 0

    def next_action(self, now: float) -> Action:
        due = [f for f in self.active if f.due <= now]
        if due:
            f = min(due, key=lambda f: f.due)
            return Heal(f, now - f.due, False)
        if self.next_index >= len(self.steps):
            if self.active:
                return Wait(min(f.due for f in self.active))
            return Done()
        step = self.steps[self.next_index]
        if step.start > now:
            return Wait(min([step.start] + [f.due for f in self.active]))
        # Late: what the plan had ended by this step's start goes first.
        ended = [f for f in self.active if f.step.end <= step.start]
        if ended:
            return Heal(min(ended, key=lambda f: f.step.end), 0.0, True)
        if not admissible((f.step.kind for f in self.active), step.kind, max_active=self.max_active,
                          exclusive=self.exclusive):
            return Wait(min(f.due for f in self.active))
        return Inject(self.next_index, step, now - step.start)

    def injected(self, index: int, began: float, detail: str, heal: object) -> Fault | None:
        """The step ``index`` was injected at ``began``; its fault (None for an instant kind)."""
        assert index == self.next_index, (index, self.next_index)
        self.next_index += 1
        step = self.steps[index]
        if step.kind in INSTANT_KINDS:
            return None
        fault = Fault(index, step, began, began + step.duration, detail, heal)
        self.active.append(fault)
        return fault

    def skipped(self, index: int) -> None:
        """The step ``index`` could not be injected: it is passed over."""
        assert index == self.next_index, (index, self.next_index)
        self.next_index += 1

    def healed(self, fault: Fault) -> None:
        self.active.remove(fault)
