"""A crash at every step of the .cleaned/.swap protocol (seed 002 §5.3,
§5.4.2 (6)) recovers to the records before or after a group's swap — never
a mix inside a group, never a lost latest value.

Crashes are simulated two ways: (1) the partition directory is copied after
every single file rename and deletion and at each cleaner step, and every
copy is opened with the ``Log`` loader as after a power cut; (2) a hook
raises at each step, the log is dropped without closing, and the directory
is reopened."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from kavka.common.clock import ManualClock
from kavka.storage.file_records import FileRecords
from kavka.storage.index.index_file import IndexFile
from kavka.storage.local_log import LocalLog
from kavka.storage.log import Log
from kavka.storage.segment import LogSegment

from ..conftest import T0
from .support import append, compact_config, make_cleaner, read_records, verify_indexes

STEPS = ("cleaned-partial", "cleaned-written", "swapped")


def _build(tmp_path: Path, clock: ManualClock, *, one_group: bool) -> Log:
    cfg = {"segment.bytes": 1 << 20} if one_group else {"segment.bytes": 700}
    log = Log(tmp_path / "t-0", compact_config(**cfg), clock=clock)
    for i in range(60):
        append(log, [(b"k%d" % (i % 7), b"value-%d" % i), (b"z%d" % (i % 3), None if i % 5 == 0 else b"x")], T0 + i)
        if one_group and i % 15 == 14:
            log.roll()  # several segments that all fit one cleaning group
    log.roll()
    if one_group:
        # a last segment whose records all go (keyless): the cleaned segment
        # must still span it, or recovery of a .swap would leave it behind
        append(log, [(None, b"no key")], T0 + 90)
        append(log, [(None, b"no key either")], T0 + 91)
        log.roll()
    append(log, [(b"k1", b"active")], T0 + 100)
    log.update_high_watermark(log.log_end_offset)
    return log


def _reopen(directory: Path, clock: ManualClock) -> list:
    log = Log(directory, compact_config(), clock=clock, had_clean_shutdown=False, recovery_point=0)
    try:
        leftovers = [p.name for p in directory.iterdir() if p.name.endswith((".cleaned", ".swap", ".deleted"))]
        assert leftovers == [], leftovers
        return read_records(log)
    finally:
        log.close()


@pytest.mark.parametrize("one_group", [True, False], ids=["one-group", "many-groups"])
def test_a_crash_after_every_rename_and_delete_recovers(tmp_path, monkeypatch, one_group):
    clock = ManualClock(T0)
    log = _build(tmp_path / "live", clock, one_group=one_group)
    live_dir = log.dir
    snaps: list[tuple[str, Path]] = []

    def snap(label: str) -> None:
        dst = tmp_path / "snaps" / f"{len(snaps):04d}-{label}" / live_dir.name
        shutil.copytree(live_dir, dst)
        snaps.append((label, dst))

    states = [read_records(log)]

    def hook(step: str, _log: Log) -> None:
        snap(step)
        if step == "swapped":
            states.append(read_records(log))

    def wrap(cls, name):
        original = getattr(cls, name)

        def wrapper(self, *args, **kwargs):
            result = original(self, *args, **kwargs)
            snap(f"{cls.__name__}.{name}")
            return result

        monkeypatch.setattr(cls, name, wrapper)

    for cls in (FileRecords, IndexFile):
        wrap(cls, "rename_to")
        wrap(cls, "delete_file")
    cleaner = make_cleaner(log, clock=clock, step_hook=hook)
    outcome = cleaner.clean_once()
    monkeypatch.undo()
    assert outcome.error is None and outcome.end_offset == log.active_segment.base_offset
    final = read_records(log)
    assert final == states[-1] and len(states) >= 2
    if one_group:
        assert len(states) == 2
    labels = {label for label, _ in snaps}
    assert set(STEPS) <= labels and "FileRecords.rename_to" in labels and "FileRecords.delete_file" in labels
    for label, directory in snaps:
        recovered = _reopen(directory, clock)
        assert recovered in states, f"snapshot {directory.parent.name} ({label}) recovered to a mix"
    log.close()


class Crash(Exception):
    pass


@pytest.mark.parametrize("step", STEPS + ("removing-old-segments", "dropping-swap-suffix"))
def test_an_exception_at_each_step_then_restart_recovers(tmp_path, monkeypatch, step):
    clock = ManualClock(T0)
    log = _build(tmp_path, clock, one_group=True)
    before = read_records(log)

    def hook(at: str, _log: Log) -> None:
        if at == step:
            raise Crash(at)

    if step == "removing-old-segments":  # after the durable .swap rename
        original_remove = LocalLog.remove_and_delete_segments

        def remove(self, doomed):
            original_remove(self, doomed[:1])
            raise Crash(step)

        monkeypatch.setattr(LocalLog, "remove_and_delete_segments", remove)
    elif step == "dropping-swap-suffix":
        original_change = LogSegment.change_suffix

        def change(self, new):
            if new == "":
                raise Crash(step)
            original_change(self, new)

        monkeypatch.setattr(LogSegment, "change_suffix", change)

    cleaner = make_cleaner(log, clock=clock, step_hook=hook)
    with pytest.raises(Crash):
        cleaner.clean_once()
    monkeypatch.undo()
    log.close_quietly()  # the process dies here
    recovered = _reopen(log.dir, clock)
    # the same pass without a crash gives the cleaned records
    ref_clock = ManualClock(T0)
    ref = _build(tmp_path / "ref", ref_clock, one_group=True)
    make_cleaner(ref, clock=ref_clock).clean_once()
    after = read_records(ref)
    ref.close()
    if step in ("cleaned-partial", "cleaned-written"):
        assert recovered == before
    else:
        assert recovered == after
    latest = {r.key: r.value for r in before if r.key is not None}
    assert {r.key: r.value for r in recovered if r.key is not None} == latest


class CleaningWithCrashes(RuleBasedStateMachine):
    """Appends, rolls, cleanings (some crashing at a random step) and
    restarts in any order: a consumer reading the whole log always rebuilds
    the model's latest value for every key, nothing temporary survives a
    restart, and every index agrees with its log."""

    def __init__(self) -> None:
        super().__init__()
        self.root = Path(tempfile.mkdtemp(prefix="kavka-cleaner-sm-"))
        self.clock = ManualClock(T0)
        self.config = compact_config(**{"segment.bytes": 600, "delete.retention.ms": 500})
        self.log = Log(self.root / "t-0", self.config, clock=self.clock)
        self.cleaner = make_cleaner(self.log, clock=self.clock)
        self.model: dict[bytes, bytes | None] = {}
        self.n = 0

    @rule(items=st.lists(st.tuples(st.sampled_from([b"a", b"b", b"c", b"d", b"a-long-key-over-16-bytes"]),
                                   st.one_of(st.none(), st.binary(max_size=30))), min_size=1, max_size=4))
    def produce(self, items):
        self.n += 1
        append(self.log, items, T0 + self.n)
        self.model.update(items)
        self.log.update_high_watermark(self.log.log_end_offset)

    @rule()
    def roll(self):
        self.log.roll()

    @rule(ms=st.integers(0, 1000))
    def tick(self, ms):
        self.clock.advance(ms)

    @rule(crash_at=st.sampled_from([None, *STEPS]))
    def clean(self, crash_at):
        def hook(at, _log):
            if at == crash_at:
                raise Crash(at)

        self.cleaner._step_hook = hook
        self.cleaner._sync_cleaner = None  # take the new hook
        try:
            outcome = self.cleaner.clean_once()
            assert outcome.error is None
        except Crash:
            self.restart()

    @rule()
    def restart(self):
        self.log.close_quietly()
        self.log = Log(self.root / "t-0", self.config, clock=self.clock, had_clean_shutdown=False)
        self.log.update_high_watermark(self.log.log_end_offset)
        self.cleaner = make_cleaner(self.log, clock=self.clock)
        leftovers = [p.name for p in self.log.dir.iterdir() if p.name.endswith((".cleaned", ".swap", ".deleted"))]
        assert leftovers == []

    @invariant()
    def consumers_rebuild_the_model(self):
        seen: dict[bytes, bytes | None] = {}
        for r in read_records(self.log):
            if r.key is not None:
                seen[r.key] = r.value
        live = {k: v for k, v in self.model.items() if v is not None}
        assert {k: v for k, v in seen.items() if v is not None} == live
        assert all(self.model.get(k, None) is None for k, v in seen.items() if v is None)

    @invariant()
    def indexes_agree(self):
        assert verify_indexes(self.log.dir) == []

    def teardown(self):
        self.log.close_quietly()
        shutil.rmtree(self.root, ignore_errors=True)


CleaningWithCrashes.TestCase.settings = settings(
    max_examples=15, stateful_step_count=30, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
test_cleaning_with_crashes = CleaningWithCrashes.TestCase
