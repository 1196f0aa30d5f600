"""KIP-112 log directory failure at the storage level: the
``LogDirFailureChannel`` (each directory reported once, queued, a listener
woken), a ``LogManager`` over several ``log.dirs`` where an I/O error in one
(an injected ENOSPC, or a real full tmpfs) takes exactly that directory
offline, and the halt when no directory is left."""

from __future__ import annotations

import errno
import logging
import os
import threading

import pytest

from kavka.storage.errors import KafkaStorageError
from kavka.storage.log_dir_failure_channel import LogDirFailureChannel
from kavka.storage.log_manager import LogManager
from kavka.storage.log_manager_config import LogManagerConfig
from tests.tmpfs import capped_tmpfs

from .conftest import make_batch, small_config

# ---- the channel ---------------------------------------------------------------------------------


def test_a_directory_is_reported_once_and_queued_once(tmp_path, caplog):
    channel = LogDirFailureChannel(2)
    woken = []
    channel.set_listener(lambda: woken.append(1))
    a, b = tmp_path / "a", tmp_path / "b"
    error = OSError(errno.ENOSPC, "No space left on device")
    with caplog.at_level(logging.ERROR, logger="kavka.storage.log_dir_failure_channel"):
        assert channel.maybe_add_offline_log_dir(a, "Error while appending to t-0", error)
        assert not channel.maybe_add_offline_log_dir(a, "Error while appending to t-1", error)
    assert [r.getMessage() for r in caplog.records] == [
        f"Error while appending to t-0; log directory {a} is now offline: [Errno 28] No space left on device"]
    assert channel.has_offline_log_dir(a) and not channel.has_offline_log_dir(b)
    assert channel.error_of(a) is error and channel.error_of(b) is None
    assert woken == [1]
    assert channel.poll() == str(a) and channel.poll() is None
    assert channel.maybe_add_offline_log_dir(b, "checkpoint", None)
    assert channel.take_next_offline_log_dir(timeout=1) == str(b)
    assert channel.take_next_offline_log_dir(timeout=0.01) is None
    assert channel.offline_log_dirs() == sorted([str(a), str(b)])


def test_reports_from_many_threads_take_a_directory_offline_once(tmp_path):
    channel = LogDirFailureChannel(1)
    firsts: list[bool] = []
    barrier = threading.Barrier(8)

    def report() -> None:
        barrier.wait()
        firsts.append(channel.maybe_add_offline_log_dir(tmp_path, "io", OSError(errno.EIO, "eio")))

    threads = [threading.Thread(target=report) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(firsts) == [False] * 7 + [True]
    assert channel.poll() == str(tmp_path) and channel.poll() is None


def test_a_listener_set_late_is_woken_for_what_is_queued(tmp_path):
    channel = LogDirFailureChannel(1)
    channel.maybe_add_offline_log_dir(tmp_path, "io", None)
    woken = []
    channel.set_listener(lambda: woken.append(1))
    assert woken == [1]


# ---- the log manager over two directories -------------------------------------------------------


def _manager(dirs, clock, halts):
    cfg = LogManagerConfig(log_dirs=tuple(str(d) for d in dirs))
    return LogManager(cfg, small_config(), clock=clock, halt=halts.append)


def _enospc_on(monkeypatch, path_part: str) -> None:
    """pwritev raises ENOSPC for files whose path holds ``path_part``: the
    disk under one log directory is full, the other's is not."""
    real = os.pwritev

    def pwritev(fd, buffers, *args):
        if path_part in os.readlink(f"/proc/self/fd/{fd}"):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(fd, buffers, *args)

    monkeypatch.setattr(os, "pwritev", pwritev)


def test_an_append_error_takes_only_its_directory_offline(tmp_path, clock, monkeypatch, caplog):
    a, b = (tmp_path / "disk-a").absolute(), (tmp_path / "disk-b").absolute()
    halts: list[int] = []
    manager = _manager([a, b], clock, halts)
    in_a = manager.get_or_create_log("t", 0)  # the directory with the fewest partitions first
    in_b = manager.get_or_create_log("t", 1)
    assert (in_a.dir.parent, in_b.dir.parent) == (a, b)
    in_a.append_as_leader(make_batch(2), 1)
    _enospc_on(monkeypatch, "disk-a")
    with pytest.raises(KafkaStorageError):
        in_a.append_as_leader(make_batch(2), 1)
    monkeypatch.undo()
    channel = manager.failure_channel
    assert channel.has_offline_log_dir(a) and not channel.has_offline_log_dir(b)
    assert not manager.is_log_dir_online(a) and manager.live_log_dirs == [b]
    assert channel.poll() == str(a)
    # The replica manager's handler drops the directory: its logs leave the table.
    assert manager.handle_log_dir_failure(a) == [in_a.topic_partition]
    assert manager.handle_log_dir_failure(a) == []  # once
    assert set(manager.all_logs()) == {in_b.topic_partition} and halts == []
    in_b.append_as_leader(make_batch(1), 1)
    # New partitions go to the live directory only; checkpoints are written there only.
    assert manager.get_or_create_log("t", 2).dir.parent == b
    before = {p.name: p.read_bytes() for p in a.iterdir() if p.is_file()}
    manager.checkpoint_recovery_points()
    manager.checkpoint_high_watermarks()
    assert {p.name: p.read_bytes() for p in a.iterdir() if p.is_file()} == before
    assert "t 1" in (b / "replication-offset-checkpoint").read_text()
    manager.shutdown()
    assert not (a / ".kafka_cleanshutdown").exists() and (b / ".kafka_cleanshutdown").exists()


def test_a_checkpoint_write_error_fails_its_directory(tmp_path, clock, monkeypatch):
    a, b = (tmp_path / "disk-a").absolute(), (tmp_path / "disk-b").absolute()
    manager = _manager([a, b], clock, [])
    manager.get_or_create_log("t", 0)
    manager.get_or_create_log("t", 1)
    real_replace = os.replace

    def replace(src, dst, *args, **kw):
        if "disk-a" in str(dst):
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        return real_replace(src, dst, *args, **kw)

    monkeypatch.setattr(os, "replace", replace)
    manager.checkpoint_recovery_points()
    monkeypatch.undo()
    assert manager.failure_channel.has_offline_log_dir(a)
    assert isinstance(manager.failure_channel.error_of(a), OSError)
    assert manager.is_log_dir_online(b)
    manager.shutdown()


def test_the_last_directory_failing_halts_with_the_directories_and_the_error(tmp_path, clock, monkeypatch, caplog):
    a = (tmp_path / "only").absolute()
    halts: list[int] = []
    manager = _manager([a], clock, halts)
    log = manager.get_or_create_log("t", 0)
    _enospc_on(monkeypatch, "only")
    with pytest.raises(KafkaStorageError):
        log.append_as_leader(make_batch(1), 1)
    monkeypatch.undo()
    with caplog.at_level(logging.CRITICAL, logger="kavka.storage.log_manager"):
        manager.handle_log_dir_failure(a)
    assert halts == [1]
    (record,) = [r for r in caplog.records if r.levelno == logging.CRITICAL]
    assert f"all log dirs in {a} have failed" in record.getMessage()
    assert "No space left on device" in record.getMessage()
    with pytest.raises(KafkaStorageError, match="every log directory is offline"):
        manager.get_or_create_log("t", 1)
    manager.shutdown()


@pytest.fixture
def small_tmpfs(tmp_path):
    with capped_tmpfs(tmp_path / "tmpfs", 256 * 1024) as mnt:
        yield mnt


def test_a_full_tmpfs_directory_goes_offline_and_the_other_keeps_serving(small_tmpfs, tmp_path, clock):
    full, roomy = small_tmpfs.absolute(), (tmp_path / "roomy").absolute()
    halts: list[int] = []
    cfg = LogManagerConfig(log_dirs=(str(full), str(roomy)))
    manager = LogManager(cfg, small_config(**{"segment.bytes": 1 << 20, "segment.index.bytes": 4096}), clock=clock,
                         halt=halts.append)
    on_full = manager.get_or_create_log("t", 0)
    on_roomy = manager.get_or_create_log("t", 1)
    assert on_full.dir.parent == full
    with pytest.raises(KafkaStorageError) as e:  # noqa: PT012 - the loop ends at the first failure
        for i in range(1000):
            on_full.append_as_leader(make_batch(4, value=bytes([i % 256]) * 1500), 1)
    assert e.value.errno == errno.ENOSPC
    assert manager.failure_channel.has_offline_log_dir(full)
    assert manager.handle_log_dir_failure(full) == [on_full.topic_partition]
    for _ in range(50):
        on_roomy.append_as_leader(make_batch(4, value=b"x" * 1500), 1)
    assert halts == [] and manager.live_log_dirs == [roomy]
    manager.shutdown()


# ---- a directory already failed at startup -------------------------------------------------------


def test_a_directory_that_cannot_be_created_is_offline_from_the_start(tmp_path, clock):
    bad, good = (tmp_path / "bad").absolute(), (tmp_path / "good").absolute()
    bad.write_bytes(b"not a directory: the disk's mount point went wrong")
    halts: list[int] = []
    manager = _manager([bad, good], clock, halts)
    assert manager.live_log_dirs == [good] and manager.failure_channel.has_offline_log_dir(bad)
    assert manager.failure_channel.poll() == str(bad)  # queued for the replica manager's handler
    # A replica the controller says existed may have its data on the failed disk: not recreated empty.
    with pytest.raises(KafkaStorageError, match=rf"Can not create log for t-0 because log directories {bad} are offline"):
        manager.get_or_create_log("t", 0, is_new=False)
    assert manager.get_or_create_log("t", 0, is_new=True).dir.parent == good
    manager.shutdown()
    assert halts == []


def test_a_directory_whose_checkpoint_cannot_be_read_is_offline_and_the_rest_loads(tmp_path, clock):
    a, b = (tmp_path / "disk-a").absolute(), (tmp_path / "disk-b").absolute()
    first = _manager([a, b], clock, [])
    for p in range(4):
        first.get_or_create_log("t", p).append_as_leader(make_batch(1), 1)
    on_b = sorted(tp.partition for tp in first.all_logs() if first.log_dir_of(tp.topic, tp.partition) == b)
    first.shutdown()
    (a / "recovery-point-offset-checkpoint").unlink()
    (a / "recovery-point-offset-checkpoint").mkdir()  # reading it fails with EISDIR, an I/O error
    again = _manager([a, b], clock, [])
    assert again.live_log_dirs == [b]
    assert sorted(tp.partition for tp in again.all_logs()) == on_b
    assert isinstance(again.failure_channel.error_of(a), OSError)
    again.shutdown()


def test_the_directories_given_offline_are_neither_locked_nor_loaded(tmp_path, clock):
    a, b = (tmp_path / "disk-a").absolute(), (tmp_path / "disk-b").absolute()
    cfg = LogManagerConfig(log_dirs=(str(a), str(b)))
    manager = LogManager(cfg, small_config(), clock=clock, halt=[].append, initial_offline_dirs=[str(a)])
    assert manager.live_log_dirs == [b] and not a.exists()
    manager.shutdown()


def test_no_usable_directory_at_startup_is_a_startup_error_naming_them(tmp_path, clock):
    a, b = (tmp_path / "a").absolute(), (tmp_path / "b").absolute()
    a.write_bytes(b"x")
    b.write_bytes(b"y")
    with pytest.raises(KafkaStorageError, match="every directory of log.dirs failed") as e:
        _manager([a, b], clock, [])
    assert str(a) in str(e.value) and str(b) in str(e.value)


def test_meta_properties_of_a_failed_directory_is_skipped_when_asked(tmp_path):
    from kavka.storage import broker_metadata

    good, bad = tmp_path / "good", tmp_path / "bad"
    good.mkdir()
    bad.write_bytes(b"not a directory")
    broker_metadata.write([good], broker_metadata.BrokerMetadata(3, "c"))
    with pytest.raises(broker_metadata.BrokerMetadataError):
        broker_metadata.load([str(good), str(bad)])
    offline: set[str] = set()
    assert broker_metadata.load([str(good), str(bad)], offline) == broker_metadata.BrokerMetadata(3, "c")
    assert offline == {str(bad)}
