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
from pathlib import Path

import pytest

from kavka.storage.file_records import FileRecords
from kavka.storage.index_file import IndexFile
from kavka.storage.log import Log
from kavka.storage.segment import LogSegment
from kavka.storage.clock import ManualClock

from .cleaner_support import append, compact_config, make_cleaner, read_records
from .conftest import T0

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
        original_remove = Log._remove_segments

        def remove(self, doomed):
            original_remove(self, doomed[:1])
            raise Crash(step)

        monkeypatch.setattr(Log, "_remove_segments", remove)
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
