"""Retention on real files (seed 002 §5.4.1): by time, by size, below the log
start, never the active segment, .deleted then removed after the delay."""

from __future__ import annotations

import os

from kavka.common.clock import ManualClock
from kavka.storage.log import Log
from kavka.storage.log_manager import LogManager
from kavka.storage.log_manager_config import LogManagerConfig
from kavka.storage.retention import delete_old_segments

from .conftest import T0, make_batch, read_all, small_config

HOUR = 3_600_000


def filled(log_dir, clock, cfg, n=12, step_ms=HOUR):
    log = Log(log_dir, cfg, clock=clock)
    for i in range(n):
        log.append_as_leader(make_batch(2, ts=T0 + i * step_ms), 1)
    log.update_high_watermark(log.log_end_offset)
    return log


def test_time_retention_uses_the_largest_timestamp(log_dir):
    clock = ManualClock(T0)
    cfg = small_config(**{"segment.bytes": 400, "retention.ms": 5 * HOUR, "file.delete.delay.ms": 1000})
    log = filled(log_dir, clock, cfg)
    segs = log.segments()
    assert len(segs) >= 4
    now = clock.advance(11 * HOUR)
    expired = [s for s in segs[:-1] if now - s.largest_timestamp() > 5 * HOUR]
    assert expired and len(expired) < len(segs) - 1
    deleted = delete_old_segments(log, now)
    assert deleted == len(expired)
    assert log.log_start_offset == log.segments()[0].base_offset
    gone = [f"{s.base_offset:020d}.log" for s in expired]
    names = {p.name for p in log_dir.iterdir()}
    assert all(g + ".deleted" in names and g not in names for g in gone)
    assert log.delete_expired_files(now + 999) == 0
    assert log.delete_expired_files(now + 1000) == len(expired)
    assert not any(p.name.endswith(".deleted") for p in log_dir.iterdir())
    assert [h.base_offset for h, _ in read_all(log)][0] == log.log_start_offset
    log.close()


def test_mtime_is_used_when_there_is_no_timestamp(log_dir):
    clock = ManualClock(T0)
    cfg = small_config(**{"segment.bytes": 400, "retention.ms": HOUR})
    log = Log(log_dir, cfg, clock=clock)
    for _ in range(12):
        log.append_as_leader(make_batch(2, ts=-1), 1)  # no timestamps
    log.update_high_watermark(log.log_end_offset)
    first = log.segments()[0]
    old = (T0 - 2 * HOUR) / 1000
    os.utime(first.log.path, (old, old))
    assert first.largest_timestamp() == int(old * 1000)
    for s in log.segments()[1:]:
        os.utime(s.log.path, (T0 / 1000, T0 / 1000))
    assert delete_old_segments(log, T0) == 1
    log.close()


def test_all_expired_rolls_first_and_keeps_an_active_segment(log_dir):
    clock = ManualClock(T0)
    cfg = small_config(**{"segment.bytes": 400, "retention.ms": HOUR})
    log = filled(log_dir, clock, cfg, n=6, step_ms=1)
    end = log.log_end_offset
    n = len(log.segments())
    assert delete_old_segments(log, T0 + 10 * HOUR) == n
    assert [s.base_offset for s in log.segments()] == [end]
    assert (log.log_start_offset, log.log_end_offset) == (end, end)
    assert log.append_as_leader(make_batch(1, ts=T0 + 10 * HOUR), 1).first_offset == end
    log.close()


def test_nothing_above_the_high_watermark_is_deleted(log_dir):
    clock = ManualClock(T0)
    cfg = small_config(**{"segment.bytes": 400, "retention.ms": HOUR})
    log = filled(log_dir, clock, cfg, n=12, step_ms=1)
    second = log.segments()[1].base_offset
    log.update_high_watermark(second)
    assert delete_old_segments(log, T0 + 10 * HOUR) == 1
    assert log.segments()[0].base_offset == second
    log.close()


def test_size_retention(log_dir):
    clock = ManualClock(T0)
    cfg = small_config(**{"segment.bytes": 400, "retention.bytes": 1000, "retention.ms": -1})
    log = filled(log_dir, clock, cfg, n=20, step_ms=1)
    sizes = [s.size for s in log.segments()]
    total = sum(sizes)
    expected, diff = 0, total - 1000
    for s in sizes:
        if diff - s < 0:
            break
        diff -= s
        expected += 1
    assert delete_old_segments(log, T0 + 100 * HOUR) == expected > 0
    assert log.size_in_bytes() >= 1000
    assert delete_old_segments(log, T0 + 100 * HOUR) == 0
    log.close()


def test_compact_policy_skips_time_and_size_but_honours_log_start(log_dir):
    clock = ManualClock(T0)
    cfg = small_config(**{"segment.bytes": 400, "retention.ms": 1, "retention.bytes": 1, "cleanup.policy": "compact"})
    log = filled(log_dir, clock, cfg, n=12, step_ms=1)
    assert delete_old_segments(log, T0 + 100 * HOUR) == 0
    log.maybe_increment_log_start_offset(log.segments()[2].base_offset)
    assert delete_old_segments(log, T0 + 100 * HOUR) == 2
    log.close()


def test_manager_runs_retention_on_its_interval_with_topic_overrides(tmp_path):
    clock = ManualClock(T0)
    mc = LogManagerConfig(log_dirs=(str(tmp_path / "d"),), retention_check_ms=1000)
    default = small_config(**{"segment.bytes": 400, "retention.ms": -1})
    short = small_config(**{"segment.bytes": 400, "retention.ms": HOUR})
    m = LogManager(mc, default, topic_configs={"short": short}, clock=clock)
    for topic in ("short", "long"):
        log = m.get_or_create_log(topic, 0)
        for i in range(10):
            log.append_as_leader(make_batch(2, ts=T0 + i), 1)
        log.update_high_watermark(log.log_end_offset)
    later = T0 + 5 * HOUR
    assert m.tick(later - 1 - 4 * HOUR)["retention_deleted"] == 0  # too early in time for the 1h topic
    done = m.tick(later)
    assert done["retention_deleted"] > 0
    assert len(m.get_log("short", 0).segments()) == 1
    assert m.get_log("long", 0).log_start_offset == 0
    m.shutdown()
