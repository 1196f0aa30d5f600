"""Log manager: directory locks (a second process), clean-shutdown marker,
checkpoints, placement, deletion, periodic jobs."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from kavka.common.clock import ManualClock
from kavka.common.topic_partition import TopicPartition
from kavka.storage.errors import LogDirLockedError
from kavka.storage.log_config import LogConfig
from kavka.storage.log_dir import CLEAN_SHUTDOWN_FILE
from kavka.storage.log_dir_names import InvalidLogDirName, log_dir_name
from kavka.storage.log_manager import LogManager, LogManagerRunner
from kavka.storage.log_manager_config import LogManagerConfig

from .conftest import T0, make_batch, read_all, small_config


def manager(dirs, clock, **kw):
    cfg = LogManagerConfig(log_dirs=tuple(str(d) for d in dirs), **kw)
    return LogManager(cfg, small_config(), clock=clock)


def test_second_process_on_the_same_dir_fails_naming_it(tmp_path, clock):
    d = tmp_path / "data"
    m = manager([d], clock)
    code = textwrap.dedent(
        f"""
        from kavka.storage.log_manager import LogManager
        from kavka.storage.log_manager_config import LogManagerConfig
        from kavka.storage.log_config import LogConfig
        from kavka.storage.errors import LogDirLockedError
        try:
            LogManager(LogManagerConfig(log_dirs=({str(d)!r},)), LogConfig())
        except LogDirLockedError as e:
            print("LOCKED", e)
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.startswith("LOCKED") and str(d) in out.stdout, out.stderr
    m.shutdown()
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert "LOCKED" not in out.stdout and out.returncode == 0, out.stderr


def test_same_process_second_manager_is_refused_too(tmp_path, clock):
    m = manager([tmp_path / "a"], clock)
    with pytest.raises(LogDirLockedError):
        manager([tmp_path / "b", tmp_path / "a"], clock)
    m.shutdown()
    manager([tmp_path / "b", tmp_path / "a"], clock).shutdown()  # b was released on failure


def test_clean_shutdown_marker_lifecycle_and_checkpoints(tmp_path, clock):
    dirs = [tmp_path / "d1", tmp_path / "d2"]
    m = manager(dirs, clock)
    assert m.had_clean_shutdown == {d.absolute(): False for d in dirs}
    logs = {p: m.get_or_create_log("orders", p) for p in range(4)}
    assert {m.log_dir_of("orders", p) for p in range(4)} == {d.absolute() for d in dirs}  # spread
    for p, log in logs.items():
        for _ in range(p + 1):
            log.append_as_leader(make_batch(2), 1)
        log.update_high_watermark(log.log_end_offset)
    logs[3].delete_records_before(2)
    m.shutdown()
    for d in dirs:
        assert (d / CLEAN_SHUTDOWN_FILE).exists()
        text = (d / "recovery-point-offset-checkpoint").read_text().splitlines()
        assert text[0] == "0" and int(text[1]) == 2
    m = manager(dirs, clock)
    assert all(m.had_clean_shutdown.values())
    assert not any((d / CLEAN_SHUTDOWN_FILE).exists() for d in dirs)  # consumed
    for p in range(4):
        log = m.get_log("orders", p)
        assert log.log_end_offset == 2 * (p + 1) and log.recovery_point == log.log_end_offset
        assert log.high_watermark == log.log_end_offset
    assert m.get_log("orders", 3).log_start_offset == 2
    m.shutdown()


def test_a_live_recovery_threads_change_sizes_the_next_shutdowns_pools(tmp_path, clock, monkeypatch):
    """num.recovery.threads.per.data.dir changed live is taken at its next
    use: the clean shutdown closes each directory's logs on that many
    threads, as Kafka's LogManager.shutdown."""
    import kavka.storage.log_manager as lm

    sizes: list[tuple[int, str]] = []
    plain = lm.ThreadPoolExecutor

    def recording(max_workers, prefix=""):
        sizes.append((max_workers, prefix))
        return plain(max_workers, prefix)

    dirs = [tmp_path / "d1", tmp_path / "d2"]
    m = manager(dirs, clock)
    for p in range(4):
        m.get_or_create_log("orders", p).append_as_leader(make_batch(2), 1)
    m.reconfigure_recovery_threads(3)
    with pytest.raises(ValueError, match="num.recovery.threads.per.data.dir"):
        m.reconfigure_recovery_threads(0)
    monkeypatch.setattr(lm, "ThreadPoolExecutor", recording)
    m.shutdown()
    assert sorted(sizes) == sorted([(3, "log-shutdown-d1"), (3, "log-shutdown-d2")] * 2)  # flush, then close
    assert all((d / CLEAN_SHUTDOWN_FILE).exists() for d in dirs)
    m = manager(dirs, clock)
    assert all(m.get_log("orders", p).log_end_offset == 2 for p in range(4))
    m.shutdown()


def test_unclean_start_recovers_from_checkpointed_recovery_points(tmp_path, clock):
    d = tmp_path / "d"
    m = manager([d], clock)
    log = m.get_or_create_log("t", 0)
    for _ in range(3):
        log.append_as_leader(make_batch(1), 1)
    log.flush()
    m.checkpoint_recovery_points()
    log.append_as_leader(make_batch(1), 1)
    active = log.active_segment.log.path
    # crash: no shutdown; the unlock happens when the process dies
    for ld in m._dirs:
        ld.unlock()
    log.close_quietly()
    with open(active, "ab") as f:
        f.write(b"garbage" * 10)
    m = manager([d], clock)
    assert not m.had_clean_shutdown[d.absolute()]
    log = m.get_log("t", 0)
    assert log.log_end_offset == 4 and log.recovery_point == 3
    assert len(read_all(log)) == 4
    m.shutdown()


def test_malformed_recovery_checkpoint_means_full_recovery(tmp_path, clock):
    d = tmp_path / "d"
    m = manager([d], clock)
    m.get_or_create_log("t", 0).append_as_leader(make_batch(1), 1)
    m.shutdown()
    (d / "recovery-point-offset-checkpoint").write_text("0\n7\nnonsense\n")
    (d / CLEAN_SHUTDOWN_FILE).unlink()
    m = manager([d], clock)
    assert m.get_log("t", 0).log_end_offset == 1
    m.shutdown()


def test_stray_directory_is_a_clear_error(tmp_path, clock):
    d = tmp_path / "d"
    (d / "not_a_partition").mkdir(parents=True)
    with pytest.raises(InvalidLogDirName, match="not_a_partition"):
        manager([d], clock)
    (d / "not_a_partition").rmdir()
    manager([d], clock).shutdown()  # the lock was released after the failure


def test_delete_log_renames_then_removes_after_delay(tmp_path, clock):
    d = tmp_path / "d"
    m = manager([d], clock, file_delete_delay_ms=1000)
    m.get_or_create_log("t", 0).append_as_leader(make_batch(1), 1)
    assert m.delete_log("t", 0)
    renamed = [p for p in d.iterdir() if p.name.endswith("-delete")]
    assert len(renamed) == 1 and renamed[0].name.startswith("t-0.")
    assert m.get_log("t", 0) is None
    m.tick(clock.now_ms + 500)
    assert renamed[0].exists()
    m.tick(clock.now_ms + 1000)
    assert not renamed[0].exists()
    # a -delete dir left by a crash goes at startup
    m.get_or_create_log("t", 1)
    m.delete_log("t", 1)
    m.shutdown()
    m = manager([d], clock)
    assert not [p for p in d.iterdir() if p.name.endswith("-delete")]
    m.shutdown()


def test_tick_flushes_by_flush_ms_and_after_roll(tmp_path, clock):
    d = tmp_path / "d"
    m = manager([d], clock)
    cfg = small_config(**{"flush.ms": 1000, "segment.bytes": 400})
    log = m.get_or_create_log("f", 0, cfg)
    log.append_as_leader(make_batch(1), 1)
    m.tick(clock.now_ms + 10)
    assert log.recovery_point == 0
    clock.advance(1000)
    m.tick()
    assert log.recovery_point == 1
    for _ in range(8):
        log.append_as_leader(make_batch(1), 1)  # rolls
    assert len(log.segments()) > 1
    m.tick(clock.now_ms + 1)  # not due by time, but a rolled segment is flushed
    assert log.recovery_point == log.active_segment.base_offset
    m.shutdown()


def test_flush_messages_flushes_inline(tmp_path, clock):
    m = manager([tmp_path / "d"], clock)
    log = m.get_or_create_log("f", 0, small_config(**{"flush.messages": 3}))
    log.append_as_leader(make_batch(2), 1)
    assert log.recovery_point == 0
    log.append_as_leader(make_batch(1), 1)
    assert log.recovery_point == 3
    m.shutdown()


def test_topic_config_from_broker_defaults_and_overrides(tmp_path):
    defaults = {"segment.bytes": 2048, "retention.ms": 3_600_000, "cleanup.policy": ["compact"]}
    cfg = LogConfig.with_defaults(defaults, {"retention.ms": "5000"})
    assert (cfg.segment_bytes, cfg.retention_ms, cfg.compact, cfg.delete) == (2048, 5000, True, False)
    mc = LogManagerConfig.from_broker({"log.dirs": f"{tmp_path}/a,{tmp_path}/b", "num.recovery.threads.per.data.dir": "3"})
    assert mc.log_dirs == (f"{tmp_path}/a", f"{tmp_path}/b") and mc.num_recovery_threads_per_data_dir == 3


def test_many_partitions_load_on_recovery_threads(tmp_path, clock):
    d = tmp_path / "d"
    m = manager([d], clock)
    for p in range(12):
        m.get_or_create_log("many", p).append_as_leader(make_batch(p + 1), 1)
    m.shutdown()
    m = manager([d], clock, num_recovery_threads_per_data_dir=4)
    assert sorted(tp.partition for tp in m.all_logs()) == list(range(12))
    assert all(m.get_log("many", p).log_end_offset == p + 1 for p in range(12))
    m.shutdown()


def test_runner_ticks_in_the_background(tmp_path):
    clock = ManualClock(T0)
    m = manager([tmp_path / "d"], clock, flush_offset_checkpoint_ms=0)
    m.get_or_create_log("bg", 0)
    runner = LogManagerRunner(m, interval_ms=5).start()
    path = tmp_path / "d" / "recovery-point-offset-checkpoint"
    for _ in range(400):
        if path.exists():
            break
        runner._stop.wait(0.01)
    runner.stop()
    assert "bg 0 0" in path.read_text()
    m.shutdown()
    assert log_dir_name(TopicPartition("bg", 0)) == "bg-0"


def test_a_broker_config_with_log_dir_only_gives_that_directory(tmp_path):
    """A server.properties naming log.dir (not log.dirs): the KafkaConfig
    holds log.dirs as None, and the log manager takes log.dir."""
    from kavka.common.broker_config import KafkaConfig

    config = KafkaConfig.from_props({"zookeeper.connect": "localhost:2181", "log.dir": str(tmp_path / "one")})
    assert LogManagerConfig.from_broker(config.values).log_dirs == (str(tmp_path / "one"),)


def test_periodic_jobs_carry_kafkas_names_and_periods_and_each_does_its_work(tmp_path, clock):
    d = tmp_path / "d"
    m = manager([d], clock, flush_offset_checkpoint_ms=0, retention_check_ms=300, high_watermark_checkpoint_ms=700,
                producer_id_expiration_check_ms=5000, file_delete_delay_ms=0)
    jobs = {job.name: job for job in m.periodic_jobs()}
    assert {name: job.period_ms for name, job in jobs.items()} == {
        "kafka-log-flusher": 1000, "PeriodicProducerExpirationCheck": 5000, "kafka-log-retention": 300,
        "kafka-delete-logs": 1000, "kafka-recovery-point-checkpoint": 1000,  # 0: at every check
        "kafka-log-start-offset-checkpoint": 60_000, "highwatermark-checkpoint": 700}
    log = m.get_or_create_log("jobs", 0, small_config(**{"flush.ms": 0}))
    log.append_as_leader(make_batch(3), 1)
    log.update_high_watermark(3)
    jobs["kafka-log-flusher"].run()
    assert log.recovery_point == 3
    jobs["kafka-recovery-point-checkpoint"].run()
    jobs["highwatermark-checkpoint"].run()
    assert "jobs 0 3" in (d / "recovery-point-offset-checkpoint").read_text()
    assert "jobs 0 3" in (d / "replication-offset-checkpoint").read_text()
    m.delete_log("jobs", 0)
    jobs["kafka-delete-logs"].run()
    assert not [p for p in d.iterdir() if p.name.endswith("-delete")]
    m.shutdown()


def test_concurrent_writers_of_one_checkpoint_never_tear_it(tmp_path, clock, caplog):
    """The HW checkpoint job and the replica manager may write the same
    file from two threads: one writer at a time, so every read sees a whole file."""
    import threading

    d = tmp_path / "d"
    m = manager([d], clock)
    for p in range(20):
        m.get_or_create_log("many", p)
    errors: list[BaseException] = []

    def write() -> None:
        try:
            for _ in range(30):
                m.checkpoint_high_watermarks()
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=write) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == []
    assert "cannot write" not in caplog.text  # a writer's .tmp renamed away under it by another
    lines = (d / "replication-offset-checkpoint").read_text().splitlines()
    assert lines[:2] == ["0", "20"] and len(lines) == 22
    m.shutdown()


def test_a_topics_message_format_version_before_3_0_is_said_once_as_ignored(tmp_path, clock, caplog):
    """KIP-724: format v2 is written whatever the topic asks; an override
    below 3.0 is logged once per topic and value, the default never."""
    m = manager([tmp_path / "d"], clock)
    old = LogConfig.from_props({"message.format.version": "0.10.0"})
    m.get_or_create_log("old-format", 0, old)
    m.update_topic_config("old-format", old)
    m.update_topic_config("new-format", LogConfig.from_props({"message.format.version": "3.3"}))
    m.update_topic_config("plain", LogConfig())
    said = [r.getMessage() for r in caplog.records if "message.format.version" in r.getMessage()]
    assert said == ["Topic configuration message.format.version=0.10.0 of topic old-format is ignored: deprecated "
                    "(KIP-724), record format v2 is written as from inter-broker protocol 3.0"]
    m.update_topic_config("old-format", LogConfig.from_props({"message.format.version": "2.1"}))
    assert sum("message.format.version=2.1" in r.getMessage() for r in caplog.records) == 1
    m.shutdown()
