"""The log manager with its log cleaner (seed 002 §5.2, §5.4): real files,
real cleaner threads. Waits are bounded polls on observable state; nothing
here asserts a duration."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from kavka.common.clock import ManualClock
from kavka.common.topic_partition import TopicPartition
from kavka.storage.checkpoint import CLEANER_OFFSET_CHECKPOINT, OffsetCheckpointFile
from kavka.storage.cleaner.config import LogCleanerConfig
from kavka.storage.cleaner.manager import LogCleaningState
from kavka.storage.log_dir import CLEAN_SHUTDOWN_FILE
from kavka.storage.log_dir_names import is_delete_dir
from kavka.storage.log_manager import LogManager, LogManagerRunner
from kavka.storage.log_manager_config import LogManagerConfig

from .cleaner.support import Seen, append, compact_config, expected_after_clean, read_records
from .conftest import T0, small_config

HOUR = 3_600_000


def wait_until(predicate, what: str, timeout_s: float = 60.0) -> None:
    """Poll ``predicate`` (bounded); fail naming ``what`` if it never holds."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.01)
    raise AssertionError(f"timed out waiting for {what}")


def manager(tmp_path: Path, clock: ManualClock, *, dirs=("d",), threads: int = 2, backoff_ms: int = 10, **kw) -> LogManager:
    cleaner = LogCleanerConfig(threads=threads, backoff_ms=backoff_ms, dedupe_buffer_size=1 << 20)
    config = LogManagerConfig(log_dirs=tuple(str(tmp_path / d) for d in dirs), cleaner=cleaner, **kw)
    return LogManager(config, compact_config(), clock=clock)


def fill(log, n: int, keys: int, tag: bytes = b"v") -> list[Seen]:
    """Append ``n`` one-record batches over ``keys`` keys, roll, move the
    high watermark to the end; returns the records appended."""
    out = []
    for i in range(n):
        key, value = b"k%d" % (i % keys), tag + b"%d" % i
        first, _last = append(log, [(key, value)], T0 + i)
        out.append(Seen(first, key, value, T0 + i))
    log.roll()
    log.update_high_watermark(log.log_end_offset)
    return out


def checkpoints(m: LogManager) -> dict[TopicPartition, int]:
    return m.cleaner.manager.all_cleaner_checkpoints()


def cleaner_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("kavka-log-cleaner")]


def compacted(records: list[Seen]) -> dict[bytes, bytes]:
    """key -> value a consumer ends with (the compaction contract's view)."""
    out: dict[bytes, bytes] = {}
    for r in records:
        out[r.key] = r.value
    return out


def blocking_hook(m: LogManager, tp: TopicPartition, until, started: threading.Event):
    """A cleaner step hook that holds the first pass over ``tp`` right after
    its first cleaned group is written (before the swap) until ``until()``.
    Returns an event set once the hook let the pass go on."""
    held = threading.Event()
    released = threading.Event()

    def hook(step: str, log) -> None:
        if step == "cleaned-written" and log.topic_partition == tp and not held.is_set():
            held.set()
            started.set()
            wait_until(until, "the test to act on the held pass")
            released.set()

    m.cleaner._step_hook = hook  # read when each cleaner thread starts
    return released


def test_cleaner_settings_come_from_broker_props(tmp_path):
    mc = LogManagerConfig.from_broker(
        {"log.dirs": str(tmp_path / "d"), "log.cleaner.enable": "false", "log.cleaner.threads": "3"}
    )
    assert mc.cleaner.enable is False and mc.cleaner.threads == 3
    m = LogManager(mc, compact_config(), clock=ManualClock(T0))
    assert m.cleaner is None
    with pytest.raises(RuntimeError, match="log.cleaner.enable"):
        m.clean_once()
    m.startup()  # nothing to start
    m.shutdown()
    assert LogManagerConfig.from_broker({"log.dirs": str(tmp_path / "e")}).cleaner.enable is True


def test_cleaner_threads_compact_a_topic_and_shut_down_cleanly(tmp_path):
    clock = ManualClock(T0)
    m = manager(tmp_path, clock)
    others = len(cleaner_threads())  # left by nothing, unless an earlier test failed
    m.startup()
    assert len(cleaner_threads()) == others + 2
    log = m.get_or_create_log("orders", 0)
    fill(log, 300, keys=7)
    original = read_records(log)
    tp = log.topic_partition
    wait_until(lambda: checkpoints(m).get(tp) == 300, "the cleaner threads to clean up to the log end")
    assert read_records(log) == expected_after_clean(original, 300)
    m.shutdown()
    assert len(cleaner_threads()) == others
    assert (tmp_path / "d" / CLEAN_SHUTDOWN_FILE).exists()


def test_truncation_after_cleaning_pulls_the_checkpoint_back_and_new_values_win(tmp_path):
    clock = ManualClock(T0)
    m = manager(tmp_path, clock, threads=1)
    log = m.get_or_create_log("orders", 0)
    tp = log.topic_partition
    fill(log, 200, keys=5)
    assert m.clean_once().end_offset == 200
    assert m.truncate_to(tp, 120)
    assert log.log_end_offset <= 120
    assert checkpoints(m)[tp] <= log.active_segment.base_offset
    kept = read_records(log)
    new = fill(log, 50, keys=5, tag=b"new")
    end = log.log_end_offset
    m.startup()
    wait_until(lambda: checkpoints(m).get(tp) == end, "the new dirt to be cleaned")
    after = read_records(log)
    assert after == expected_after_clean(kept + new, end)
    assert all(r.value.startswith(b"new") for r in after)  # every key was rewritten after the cut
    assert m.truncate_to(TopicPartition("nope", 0), 1) is False
    m.shutdown()


def test_truncation_during_a_cleaning_pass_aborts_it(tmp_path):
    clock = ManualClock(T0)
    m = manager(tmp_path, clock, threads=1)
    log = m.get_or_create_log("orders", 0)
    tp = log.topic_partition
    fill(log, 400, keys=9)
    original = read_records(log)
    started = threading.Event()
    released = blocking_hook(m, tp, lambda: m.cleaner.manager.state_of(tp) is LogCleaningState.ABORTED, started)
    m.startup()
    assert started.wait(60), "the cleaner never reached the held pass"
    cut = 250
    assert m.truncate_to(tp, cut)
    assert released.is_set()  # it aborted the pass and waited for it to stop
    assert not list(log.dir.glob("*.cleaned")) and not list(log.dir.glob("*.swap"))
    # The aborted pass swapped nothing: the records below the cut are the
    # original ones, untouched (no mix of cleaned and uncleaned data).
    assert read_records(log) == [r for r in original if r.offset < cut]
    assert checkpoints(m).get(tp, 0) <= log.active_segment.base_offset
    assert m.cleaner.manager.state_of(tp) in (None, LogCleaningState.IN_PROGRESS)  # resumed
    before_late = read_records(log)
    late = fill(log, 30, keys=9, tag=b"late")
    end = log.log_end_offset
    wait_until(lambda: checkpoints(m).get(tp) == end, "cleaning to resume after the truncation")
    assert read_records(log) == expected_after_clean(before_late + late, end)
    assert compacted(read_records(log)) == {r.key: r.value for r in late}  # the latest values won
    m.shutdown()
    assert cleaner_threads() == []


def test_delete_log_during_cleaning_drops_it_and_its_checkpoint(tmp_path):
    clock = ManualClock(T0)
    m = manager(tmp_path, clock, threads=1)
    doomed = m.get_or_create_log("orders", 0)
    other = m.get_or_create_log("orders", 1)
    tp = doomed.topic_partition
    fill(doomed, 300, keys=4)
    started = threading.Event()
    released = blocking_hook(m, tp, lambda: m.cleaner.manager.state_of(tp) is LogCleaningState.ABORTED, started)
    m.startup()
    assert started.wait(60)
    assert m.delete_log("orders", 0)
    assert released.is_set()  # it aborted the pass and waited for it to stop
    assert m.get_log("orders", 0) is None
    assert m.cleaner.manager.state_of(tp) is None
    assert tp not in checkpoints(m)
    raw = OffsetCheckpointFile(tmp_path / "d" / CLEANER_OFFSET_CHECKPOINT)
    assert ("orders", 0) not in (raw.read() if raw.path.exists() else {})
    assert any(is_delete_dir(p.name) for p in (tmp_path / "d").iterdir())
    # the cleaner goes on with the others
    fill(other, 100, keys=3)
    wait_until(lambda: checkpoints(m).get(other.topic_partition) == 100, "the other partition to be cleaned")
    # a partition re-created under the same name starts dirty
    again = m.get_or_create_log("orders", 0)
    assert again.log_end_offset == 0 and tp not in checkpoints(m)
    assert m.delete_log("orders", 7) is False
    m.shutdown()


def test_cleaner_checkpoint_per_log_dir_survives_restart(tmp_path):
    clock = ManualClock(T0)
    m = manager(tmp_path, clock, dirs=("d1", "d2"))
    m.startup()
    logs = [m.get_or_create_log("orders", p) for p in range(2)]
    for log in logs:
        fill(log, 120, keys=6)
    tps = [log.topic_partition for log in logs]
    wait_until(lambda: all(checkpoints(m).get(tp) == 120 for tp in tps), "both partitions to be cleaned")
    where = {tp: m.log_dir_of(tp.topic, tp.partition) for tp in tps}
    assert len(set(where.values())) == 2  # one partition per directory
    for tp, d in where.items():
        assert OffsetCheckpointFile(d / CLEANER_OFFSET_CHECKPOINT).read() == {(tp.topic, tp.partition): 120}
    cleaned = {tp: read_records(m.get_log(tp.topic, tp.partition)) for tp in tps}
    m.shutdown()
    m2 = manager(tmp_path, clock, dirs=("d1", "d2"))
    assert all(m2.had_clean_shutdown.values())
    assert {tp: checkpoints(m2).get(tp) for tp in tps} == {tp: 120 for tp in tps}
    for tp in tps:
        log = m2.get_log(tp.topic, tp.partition)
        log.update_high_watermark(log.log_end_offset)
        assert read_records(log) == cleaned[tp]
    assert m2.clean_once().tp is None  # nothing dirty after the restart
    m2.shutdown()


def test_shutdown_while_a_pass_runs_is_clean(tmp_path):
    clock = ManualClock(T0)
    m = manager(tmp_path, clock, threads=2)
    log = m.get_or_create_log("orders", 0)
    tp = log.topic_partition
    fill(log, 300, keys=5)
    original = read_records(log)
    started = threading.Event()
    blocking_hook(m, tp, lambda: m.cleaner.stopping, started)
    m.startup()
    assert started.wait(60)
    m.shutdown()  # the held pass sees the shutdown at its swap check and stops
    assert cleaner_threads() == []
    d = tmp_path / "d"
    assert (d / CLEAN_SHUTDOWN_FILE).exists()
    assert not list(d.rglob("*.cleaned")) and not list(d.rglob("*.swap"))
    m2 = manager(tmp_path, clock)
    assert m2.had_clean_shutdown[d] is True
    assert read_records(m2.get_log("orders", 0)) == original
    m2.shutdown()


def test_a_topic_switched_to_compact_becomes_cleanable(tmp_path):
    clock = ManualClock(T0)
    cleaner = LogCleanerConfig(threads=1, backoff_ms=600_000, dedupe_buffer_size=1 << 20)
    mc = LogManagerConfig(log_dirs=(str(tmp_path / "d"),), cleaner=cleaner)
    plain = small_config(**{"segment.bytes": 2048, "index.interval.bytes": 128, "segment.index.bytes": 4096})
    m = LogManager(mc, plain, clock=clock)
    runner = LogManagerRunner(m, interval_ms=60_000).start()  # starts the cleaner threads too
    log = m.get_or_create_log("events", 0)
    fill(log, 150, keys=3)
    original = read_records(log)
    tp = log.topic_partition
    assert m.cleaner.running and m.cleaner.manager.state_of(tp) is None
    m.update_topic_config("events", compact_config())  # wakes the idle thread out of its long backoff
    wait_until(lambda: checkpoints(m).get(tp) == 150, "the switched topic to be cleaned")
    assert read_records(log) == expected_after_clean(original, 150)
    runner.stop()
    m.shutdown()
    assert cleaner_threads() == []


def test_one_retention_owner_per_policy(tmp_path):
    clock = ManualClock(T0)
    cleaner = LogCleanerConfig(threads=1, backoff_ms=10, dedupe_buffer_size=1 << 20)
    mc = LogManagerConfig(log_dirs=(str(tmp_path / "d"),), cleaner=cleaner, retention_check_ms=1000)
    seg = {"segment.bytes": 400, "retention.ms": HOUR, "retention.bytes": -1}
    topics = {
        "del": small_config(**seg),
        "cd": compact_config(**seg, **{"cleanup.policy": "compact,delete", "min.cleanable.dirty.ratio": 0.99}),
        "pure": compact_config(**{**seg, "retention.bytes": 1, "min.cleanable.dirty.ratio": 0.99}),
    }
    m = LogManager(mc, small_config(), topic_configs=topics, clock=clock)
    logs = {}
    for topic in topics:
        logs[topic] = m.get_or_create_log(topic, 0)
        for i in range(20):
            append(logs[topic], [(b"k%d" % i, b"v" * 30)], T0 + i)  # distinct keys: cleaning removes nothing
        logs[topic].update_high_watermark(logs[topic].log_end_offset)
    counts = {t: len(log.segments()) for t, log in logs.items()}
    assert min(counts.values()) > 2
    clock.advance(2 * HOUR)
    m.startup()
    done = m.tick(clock.milliseconds())
    # with the cleaner threads running the manager deletes only from the delete-policy log
    assert done["retention_deleted"] == counts["del"]
    assert len(logs["del"].segments()) == 1
    wait_until(lambda: len(logs["cd"].segments()) == 1, "the cleaner thread to apply retention to compact,delete")
    # never time/size retention for pure compact: every record is still there
    assert [r.offset for r in read_records(logs["pure"])] == list(range(20))
    for tp in (log.topic_partition for log in logs.values()):
        wait_until(lambda tp=tp: m.cleaner.manager.state_of(tp) is None, f"{tp} to be neither paused nor in progress")
    m.shutdown()


def test_a_live_change_of_the_cleaner_settings_restarts_its_threads_with_them(tmp_path):
    """Kafka's LogCleaner.reconfigure: log.cleaner.threads, the buffers and
    the I/O throttle changed live take effect; the cleaning state (the
    checkpoints) is kept and cleaning goes on."""
    clock = ManualClock(T0)
    m = manager(tmp_path, clock, threads=1)
    others = len(cleaner_threads())
    m.startup()
    log = m.get_or_create_log("orders", 0)
    fill(log, 100, keys=5)
    tp = log.topic_partition
    wait_until(lambda: checkpoints(m).get(tp) == 100, "a first cleaning")
    changed = LogCleanerConfig(threads=3, backoff_ms=10, dedupe_buffer_size=2 << 20, io_buffer_size=64 << 10,
                               max_io_bytes_per_second=5e7)
    assert m.reconfigure_cleaner(changed)
    assert len(cleaner_threads()) == others + 3
    assert m.cleaner.config == changed == m.config.cleaner
    assert m.cleaner.throttler.rate == 5e7
    assert not m.reconfigure_cleaner(changed)  # nothing changed: nothing restarted
    assert checkpoints(m).get(tp) == 100
    fill(log, 100, keys=5, tag=b"w")
    wait_until(lambda: checkpoints(m).get(tp) == 200, "cleaning with the new threads")
    m.shutdown()
    assert len(cleaner_threads()) == others


def test_an_io_error_while_cleaning_fails_the_logs_directory(tmp_path, monkeypatch):
    """KIP-112: the cleaner reports an I/O error (writing the .cleaned
    segment) to the log dir failure channel, as Kafka's cleaner does."""
    import errno
    import os

    clock = ManualClock(T0)
    m = manager(tmp_path, clock, dirs=("a", "b"), threads=1)
    log = m.get_or_create_log("orders", 0)
    fill(log, 200, keys=5)
    real = os.pwritev

    def pwritev(fd, buffers, *args):
        if ".cleaned" in os.readlink(f"/proc/self/fd/{fd}"):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(fd, buffers, *args)

    monkeypatch.setattr(os, "pwritev", pwritev)
    outcome = m.clean_once()
    monkeypatch.undo()
    assert outcome.error is not None and "No space left on device" in outcome.error
    channel = m.failure_channel
    assert channel.has_offline_log_dir(log.dir.parent) and isinstance(channel.error_of(log.dir.parent), OSError)
    assert m.live_log_dirs == [(tmp_path / "b").absolute()]
    m.shutdown()
