"""Cleaner manager and threads: the offset map's budget, the filthiest log,
pause/abort states, races with retention and truncation, uncleanable
partitions, the cleaner threads, and the cleaner config."""

from __future__ import annotations

import threading

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kavka.common.clock import ManualClock
from kavka.common.config import ConfigError
from kavka.storage.checkpoint import CLEANER_OFFSET_CHECKPOINT, OffsetCheckpointFile
from kavka.storage.cleaner.config import LogCleanerConfig, Throttler
from kavka.storage.cleaner.manager import LogCleaningState
from kavka.storage.cleaner.offset_map import HASH_SIZE, OffsetMapError, SkimpyOffsetMap, key_hash
from kavka.storage.log import Log

from ..conftest import T0
from .support import StaticSource, append, compact_config, make_cleaner, read_records


# ---- offset map ------------------------------------------------------------------------------
def test_offset_map_capacity_follows_kafkas_arithmetic():
    m = SkimpyOffsetMap(24 * 1000, 0.9)
    assert (m.slots, m.capacity) == (1000, 900)
    assert m.can_hold(900) and not m.can_hold(901)
    with pytest.raises(OffsetMapError, match="dedupe.buffer.size"):
        SkimpyOffsetMap(23)
    with pytest.raises(OffsetMapError, match="load.factor"):
        SkimpyOffsetMap(1 << 20, 1.5)


@given(st.lists(st.tuples(st.binary(max_size=40), st.integers(0, 10**12)), max_size=200))
def test_offset_map_agrees_with_a_dict(puts):
    m = SkimpyOffsetMap(1 << 20)
    model: dict[bytes, int] = {}
    for key, offset in puts:
        m.put(key, offset)
        model[key] = offset
    assert m.size == len(model)
    for key, offset in model.items():
        assert m.get(key) == offset
    assert m.get(b"never-put-this-key-anywhere-xyz") == -1
    assert m.latest_offset == max((o for _k, o in puts), default=-1)


def test_short_keys_are_exact_and_long_keys_hashed():
    assert key_hash(b"short") == b"short"
    long_key = b"x" * HASH_SIZE
    assert len(key_hash(long_key)) == HASH_SIZE and key_hash(long_key) != long_key
    # a 15-byte key can never equal a 16-byte digest
    assert all(len(key_hash(b"k" * n)) == min(n, HASH_SIZE - 1) or n >= HASH_SIZE for n in range(40))


# ---- choosing logs -------------------------------------------------------------------------------
def _dirty_log(tmp_path, clock, name, duplicates, keys=1, **cfg) -> Log:
    log = Log(tmp_path / name, compact_config(**cfg), clock=clock)
    for i in range(duplicates):
        append(log, [(b"k%d" % (i % keys), b"v%d" % i)], T0 + i)
    log.roll()
    log.update_high_watermark(log.log_end_offset)
    return log


def test_the_filthiest_log_is_cleaned_first_and_ratio_gates(tmp_path):
    clock = ManualClock(T0)
    a = _dirty_log(tmp_path, clock, "a-0", 5, **{"min.cleanable.dirty.ratio": 0.5})
    b = _dirty_log(tmp_path, clock, "b-0", 9, **{"min.cleanable.dirty.ratio": 0.5})
    plain = Log(tmp_path / "c-0", compact_config(**{"cleanup.policy": "delete"}), clock=clock)
    append(plain, [(b"k", b"v")], T0)
    plain.roll()
    cleaner = make_cleaner(a, b, plain, clock=clock)
    first = cleaner.clean_once()
    second = cleaner.clean_once()
    assert {first.tp.topic, second.tp.topic} == {"a", "b"}
    assert cleaner.clean_once().tp is None  # the delete-only log is never compacted
    # a little new dirt stays under the ratio
    append(a, [(b"k", b"new")], T0 + 50)
    a.roll()
    a.update_high_watermark(a.log_end_offset)
    assert cleaner.clean_once().tp is not None  # 1 dirty of ~2 segments: ratio 0.5 reached
    checkpoints = OffsetCheckpointFile(tmp_path / CLEANER_OFFSET_CHECKPOINT).read()
    assert checkpoints == {("a", 0): 6, ("b", 0): 9}
    for log in (a, b, plain):
        log.close()


def test_paused_logs_are_skipped_until_resumed(tmp_path):
    clock = ManualClock(T0)
    log = _dirty_log(tmp_path, clock, "t-0", 5)
    cleaner = make_cleaner(log, clock=clock)
    tp = log.topic_partition
    assert cleaner.abort_and_pause_cleaning(tp)
    assert cleaner.abort_and_pause_cleaning(tp)  # nested
    assert cleaner.manager.state_of(tp) is LogCleaningState.PAUSED
    assert cleaner.clean_once().tp is None
    cleaner.resume_cleaning(tp)
    assert cleaner.clean_once().tp is None  # still paused once
    cleaner.resume_cleaning(tp)
    assert cleaner.clean_once().tp == tp
    with pytest.raises(ValueError, match="not paused"):
        cleaner.resume_cleaning(tp)
    log.close()


def test_abort_during_a_pass_leaves_the_log_untouched(tmp_path):
    clock = ManualClock(T0)
    log = _dirty_log(tmp_path, clock, "t-0", 30, keys=3)
    before = read_records(log)
    aborter: list[threading.Thread] = []
    cleaner = None

    def hook(step, _log):
        if step == "cleaned-partial" and not aborter:
            t = threading.Thread(target=cleaner.abort_and_pause_cleaning, args=(log.topic_partition,))
            aborter.append(t)
            t.start()
            for _ in range(1000):  # until the abort request is registered
                if cleaner.manager.state_of(log.topic_partition) is LogCleaningState.ABORTED:
                    break
                threading.Event().wait(0.001)

    cleaner = make_cleaner(log, clock=clock, step_hook=hook)
    outcome = cleaner.clean_once()
    aborter[0].join(10)
    assert outcome.end_offset is None and outcome.error is None
    assert cleaner.manager.state_of(log.topic_partition) is LogCleaningState.PAUSED
    assert read_records(log) == before
    assert not [p for p in log.dir.iterdir() if p.name.endswith(".cleaned")]
    assert not (tmp_path / CLEANER_OFFSET_CHECKPOINT).exists()
    log.close()


@pytest.mark.parametrize("race", ["retention", "truncation", "truncation-later"])
def test_segments_changed_under_the_cleaner_abort_the_swap(tmp_path, race):
    clock = ManualClock(T0)
    log = _dirty_log(tmp_path, clock, "t-0", 30, keys=3, **{"segment.bytes": 400})
    assert len(log.segments()) > 3

    def hook(step, _log):
        if step == "cleaned-written":
            if race == "retention":
                log.delete_segments(log.segments()[:1])
            elif race == "truncation":
                log.truncate_to(20)
            else:  # a segment after the group being swapped: the offset map saw it
                log.truncate_to(29)

    cleaner = make_cleaner(log, clock=clock, step_hook=hook)
    before = read_records(log)
    outcome = cleaner.clean_once()
    assert outcome.end_offset is None and outcome.error is None
    after = read_records(log)
    if race.startswith("truncation"):
        assert after == [r for r in before if r.offset < (20 if race == "truncation" else 29)]
    else:
        assert after == [r for r in before if r.offset >= log.log_start_offset]
    assert not [p for p in log.dir.iterdir() if p.name.endswith((".cleaned", ".swap"))]
    assert cleaner.manager.state_of(log.topic_partition) is None  # free to be cleaned again
    log.close()


def test_a_corrupt_segment_marks_the_partition_uncleanable(tmp_path):
    clock = ManualClock(T0)
    log = _dirty_log(tmp_path, clock, "t-0", 10)
    other = _dirty_log(tmp_path, clock, "u-0", 10)
    path = log.segments()[0].log.path
    raw = bytearray(path.read_bytes())
    raw[-3] ^= 0xFF  # inside the last batch's records: its CRC no longer matches
    path.write_bytes(bytes(raw))
    cleaner = make_cleaner(log, other, clock=clock)
    outcomes = [cleaner.clean_once(), cleaner.clean_once(), cleaner.clean_once()]
    failed = [o for o in outcomes if o.error]
    assert len(failed) == 1 and failed[0].tp == log.topic_partition and "CRC" in failed[0].error
    assert log.topic_partition in cleaner.manager.uncleanable_partitions()
    assert any(o.tp == other.topic_partition and o.end_offset == 10 for o in outcomes)
    log.close()
    other.close()


def test_a_map_too_small_for_one_batch_is_reported(tmp_path):
    clock = ManualClock(T0)
    log = Log(tmp_path / "t-0", compact_config(), clock=clock)
    append(log, [(b"k%d" % i, b"v") for i in range(50)], T0)
    log.roll()
    log.update_high_watermark(log.log_end_offset)
    outcome = make_cleaner(log, clock=clock, dedupe=24 * 10).clean_once()
    assert outcome.error and "dedupe.buffer.size" in outcome.error
    log.close()


def test_cleaner_threads_clean_in_the_background(tmp_path):
    clock = ManualClock(T0)
    logs = [_dirty_log(tmp_path, clock, f"t-{i}", 20) for i in range(3)]
    cleaner = make_cleaner(*logs, clock=clock)
    cleaner.config = LogCleanerConfig(threads=2, backoff_ms=10, dedupe_buffer_size=1 << 20)
    cleaner.startup()
    checkpoint = OffsetCheckpointFile(tmp_path / CLEANER_OFFSET_CHECKPOINT)
    done = threading.Event()
    for _ in range(2000):
        if checkpoint.path.exists() and len(checkpoint.read()) == 3:
            done.set()
            break
        done.wait(0.005)
    cleaner.shutdown(timeout_s=10)
    assert done.is_set()
    assert all(len(read_records(log)) == 1 for log in logs)
    for log in logs:
        log.close()


def test_disabled_cleaner_starts_no_thread(tmp_path):
    clock = ManualClock(T0)
    cleaner = make_cleaner(clock=clock)
    cleaner.config = LogCleanerConfig(enable=False)
    cleaner.startup()
    assert cleaner._threads == []


def test_cleaner_config_from_broker_properties():
    cfg = LogCleanerConfig.from_broker(
        {"log.cleaner.threads": "4", "log.cleaner.dedupe.buffer.size": "1048576", "broker.id": "1"}
    )
    assert cfg.threads == 4 and cfg.dedupe_buffer_per_thread == 262144 and cfg.enable
    with pytest.raises(ConfigError, match="log.cleaner.threads"):
        LogCleanerConfig.from_broker({"log.cleaner.threads": "0"})


def test_throttler_sleeps_when_ahead_of_the_rate():
    now = [0.0]
    slept: list[float] = []

    def sleep(s: float) -> None:
        slept.append(s)
        now[0] += s

    t = Throttler(1000.0, monotonic=lambda: now[0], sleep=sleep, window_s=0.1)
    t.maybe_throttle(500)  # 0.5 s worth of bytes at once
    assert slept and abs(slept[0] - 0.5) < 1e-9
    unlimited = Throttler(float("inf"), monotonic=lambda: now[0], sleep=sleep)
    unlimited.maybe_throttle(10**9)
    assert len(slept) == 1


def test_source_without_logs_is_quiet(tmp_path):
    cleaner = make_cleaner(clock=ManualClock(T0))
    assert cleaner.clean_once().tp is None
    assert StaticSource().all_logs() == {}


def test_the_log_manager_is_a_log_source_and_checkpoints_per_dir(tmp_path):
    from kavka.storage.log_manager import LogManager
    from kavka.storage.log_manager_config import LogManagerConfig

    clock = ManualClock(T0)
    dirs = (str(tmp_path / "d1"), str(tmp_path / "d2"))
    manager = LogManager(LogManagerConfig(log_dirs=dirs), compact_config(), clock=clock)
    logs = [manager.get_or_create_log("orders", p) for p in range(2)]
    for log in logs:
        for i in range(10):
            append(log, [(b"k%d" % (i % 2), b"v%d" % i)], T0 + i)
        log.roll()
        log.update_high_watermark(log.log_end_offset)
    cleaner = make_cleaner(clock=clock)
    cleaner.manager.source = manager
    assert {cleaner.clean_once().tp.partition, cleaner.clean_once().tp.partition} == {0, 1}
    for log in logs:
        d = manager.log_dir_of(log.topic_partition.topic, log.topic_partition.partition)
        assert OffsetCheckpointFile(d / CLEANER_OFFSET_CHECKPOINT).read() == {
            (log.topic_partition.topic, log.topic_partition.partition): 10
        }
    # truncation below the checkpoint pulls it back; abort_cleaning forgets the partition
    tp0 = logs[0].topic_partition
    cleaner.maybe_truncate_checkpoint(tp0, 4)
    assert cleaner.manager.all_cleaner_checkpoints()[tp0] == 4
    cleaner.abort_cleaning(tp0)
    assert tp0 not in cleaner.manager.all_cleaner_checkpoints()
    assert cleaner.manager.state_of(tp0) is None
    manager.shutdown()


def test_the_cleaner_checkpoint_survives_a_restart(tmp_path):
    from kavka.storage.log_manager import LogManager
    from kavka.storage.log_manager_config import LogManagerConfig

    clock = ManualClock(T0)
    config = LogManagerConfig(log_dirs=(str(tmp_path / "d"),))
    manager = LogManager(config, compact_config(), clock=clock)
    log = manager.get_or_create_log("orders", 0)
    for i in range(20):
        append(log, [(b"k%d" % (i % 4), b"v%d" % i)], T0 + i)
    log.roll()
    log.update_high_watermark(log.log_end_offset)
    cleaner = make_cleaner(clock=clock)
    cleaner.manager.source = manager
    assert cleaner.clean_once().end_offset == 20
    cleaned = read_records(log)
    manager.shutdown()
    manager = LogManager(config, compact_config(), clock=clock)
    cleaner = make_cleaner(clock=clock)
    cleaner.manager.source = manager
    log = manager.get_log("orders", 0)
    assert read_records(log) == cleaned
    log.update_high_watermark(log.log_end_offset)
    assert cleaner.clean_once().tp is None  # clean up to the checkpoint: nothing dirty
    append(log, [(b"k0", b"late")], T0 + 100)
    log.roll()
    log.update_high_watermark(log.log_end_offset)
    outcome = cleaner.clean_once()
    assert outcome.end_offset == 21 and outcome.stats.map_records == 1  # only the new dirt was mapped
    assert sorted(r.value for r in read_records(log)) == [b"late", b"v17", b"v18", b"v19"]
    manager.shutdown()


def test_a_truncation_during_the_map_pass_aborts_the_swap(tmp_path, monkeypatch):
    from kavka.storage.cleaner import cleaner as cleaner_module

    clock = ManualClock(T0)
    log = _dirty_log(tmp_path, clock, "t-0", 30, keys=3, **{"segment.bytes": 400})
    original = cleaner_module.Cleaner.build_offset_map

    def build_then_truncate(self, log_, start, end, stats):
        covered = original(self, log_, start, end, stats)
        log_.truncate_to(25)  # the map now names offsets that are gone
        return covered

    monkeypatch.setattr(cleaner_module.Cleaner, "build_offset_map", build_then_truncate)
    before = read_records(log)
    outcome = make_cleaner(log, clock=clock).clean_once()
    assert outcome.end_offset is None and outcome.error is None
    assert read_records(log) == [r for r in before if r.offset < 25]
    log.close()


def test_a_segment_deleted_while_being_read_aborts_rather_than_fails(tmp_path):
    clock = ManualClock(T0)
    log = _dirty_log(tmp_path, clock, "t-0", 200, keys=50, **{"segment.bytes": 1 << 20})
    log.roll()
    append(log, [(b"x", b"y")], T0 + 999)
    log.update_high_watermark(log.log_end_offset)
    first = log.segments()[0]

    def hook(step, _log):
        if step == "cleaned-partial":  # retention with file.delete.delay.ms=0 closes the file we read
            log.maybe_increment_log_start_offset(log.segments()[1].base_offset)
            log.delete_segments([first])

    cleaner = make_cleaner(log, clock=clock, step_hook=hook, io_buffer_size=4096)
    outcome = cleaner.clean_once()
    assert outcome.error is None and outcome.end_offset is None
    assert log.topic_partition not in cleaner.manager.uncleanable_partitions()
    assert not [p for p in log.dir.iterdir() if p.name.endswith(".cleaned")]
    log.close()
