"""Disk errors: a full disk (a size-capped tmpfs when we may mount one, and
an injected ENOSPC/EIO otherwise) surfaces as KAFKA_STORAGE_ERROR naming the
file, and nothing half-appended is ever served, now or after a restart."""

from __future__ import annotations

import contextlib
import errno
import os

import pytest

from kavka.storage.errors import KafkaStorageError, LogOfflineError
from kavka.storage.index.index_file import PENDING_ENTRIES
from kavka.storage.log import Log
from tests.tmpfs import capped_tmpfs

from .conftest import make_batch, read_all, scan_dir, small_config


@pytest.fixture
def small_tmpfs(tmp_path):
    with capped_tmpfs(tmp_path / "tmpfs", 160 * 1024) as mnt:
        yield mnt


def test_full_tmpfs_append_fails_cleanly_and_restart_serves_only_whole_appends(small_tmpfs, clock):
    log_dir = small_tmpfs / "full-0"
    cfg = small_config(**{"segment.bytes": 1 << 20, "segment.index.bytes": 4096, "index.interval.bytes": 1024})
    log = Log(log_dir, cfg, clock=clock)
    ballast = small_tmpfs / "ballast"
    ballast.write_bytes(b"\0" * 16384)
    ok = 0
    error = None
    for i in range(1000):
        try:
            log.append_as_leader(make_batch(4, value=bytes([i % 256]) * 1500), 1)
            ok += 1
        except KafkaStorageError as e:
            error = e
            break
    assert error is not None and ok > 10
    assert error.code.name == "KAFKA_STORAGE_ERROR" and error.errno == errno.ENOSPC
    assert str(log_dir) in str(error) and error.path.startswith(str(log_dir))
    assert log.offline and log.log_end_offset == 4 * ok
    with pytest.raises(LogOfflineError):
        log.append_as_leader(make_batch(1), 1)
    # the failed append left no bytes behind in the file
    assert [h.base_offset for _b, h, _raw in scan_dir(log_dir)] == list(range(0, 4 * ok, 4))
    assert sum(p.stat().st_size for p in log_dir.glob("*.log")) == sum(h.size for _b, h, _r in scan_dir(log_dir))
    log.close_quietly()
    ballast.unlink()
    again = Log(log_dir, cfg, clock=clock)  # unclean restart: full recovery
    assert again.log_end_offset == 4 * ok
    assert len(read_all(again)) == ok
    again.append_as_leader(make_batch(1), 1)
    again.close()


def _failing_once(real, fail_errno, write_half=False):
    state = {"armed": True}

    def wrapper(fd, buffers, *args):
        if state["armed"]:
            state["armed"] = False
            if write_half:
                first = bytes(memoryview(buffers[0])[: max(1, len(buffers[0]) // 2)])
                real(fd, [first], *args)
            raise OSError(fail_errno, os.strerror(fail_errno))
        return real(fd, buffers, *args)

    return wrapper


def test_injected_enospc_mid_write_is_cut_back(log_dir, clock, monkeypatch):
    log = Log(log_dir, small_config(), clock=clock)
    for _ in range(3):
        log.append_as_leader(make_batch(2), 1)
    size = log.active_segment.size
    monkeypatch.setattr(os, "pwritev", _failing_once(os.pwritev, errno.ENOSPC, write_half=True))
    with pytest.raises(KafkaStorageError) as e:
        log.append_as_leader(make_batch(2), 1)
    assert e.value.code.name == "KAFKA_STORAGE_ERROR" and "00000000000000000000.log" in str(e.value)
    assert log.active_segment.log.path.stat().st_size == size  # partial bytes removed
    assert log.log_end_offset == 6
    log.close_quietly()
    again = Log(log_dir, small_config(), clock=clock)
    assert again.log_end_offset == 6 and again.truncated_on_load == 0
    again.close()


def test_injected_index_failure_undoes_the_append(log_dir, clock, monkeypatch):
    """Index entries are written PENDING_ENTRIES at a time: the append whose
    entry fills the batch of them fails when their write does, and is undone."""
    cfg = small_config(**{"index.interval.bytes": 0, "segment.bytes": 1 << 20, "segment.index.bytes": 4096})
    log = Log(log_dir, cfg, clock=clock)
    real = os.pwrite

    def failing(fd, data, offset):
        if len(data) == PENDING_ENTRIES * 8:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(fd, data, offset)

    monkeypatch.setattr(os, "pwrite", failing)
    seg = log.active_segment
    with pytest.raises(KafkaStorageError, match=r"\.index"):
        for _ in range(PENDING_ENTRIES + 1):
            log.append_as_leader(make_batch(1), 1)
    monkeypatch.undo()
    # the first append indexes nothing (index.interval.bytes is exceeded only after it)
    assert log.log_end_offset == PENDING_ENTRIES and seg.offset_index.entries == PENDING_ENTRIES - 1
    assert seg.log.path.stat().st_size == seg.size
    assert log.offline
    log.close_quietly()
    again = Log(log_dir, cfg, clock=clock)
    assert [h.base_offset for h, _ in read_all(again)] == list(range(PENDING_ENTRIES))
    again.close()


def test_fsync_failure_does_not_advance_the_recovery_point(log_dir, clock, monkeypatch):
    log = Log(log_dir, small_config(), clock=clock)
    log.append_as_leader(make_batch(2), 1)

    def eio(fd):
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(os, "fsync", eio)
    with pytest.raises(KafkaStorageError) as e:
        log.flush()
    assert e.value.errno == errno.EIO
    monkeypatch.undo()
    assert log.recovery_point == 0 and log.offline
    log.close_quietly()


def test_a_log_with_a_preallocated_index_opens_on_a_full_tmpfs(small_tmpfs, clock):
    # A broker restarted on its full tmpfs log directory died of SIGBUS while
    # counting the entries of an active segment's preallocated index: a read
    # through a mapping of a tmpfs hole must allocate a page, and a full
    # tmpfs has none (a regular filesystem maps holes to the zero page). The
    # count reads the file instead. In a child process: SIGBUS kills it.
    import subprocess
    import sys
    import textwrap

    log_dir = small_tmpfs / "idx-0"
    cfg = small_config(**{"segment.bytes": 1 << 20, "segment.index.bytes": 64 * 1024, "index.interval.bytes": 1})
    log = Log(log_dir, cfg, clock=clock)
    for _ in range(PENDING_ENTRIES + 10):  # an entry each; the first PENDING_ENTRIES written together
        log.append_as_leader(make_batch(2), 1)
    log.close_quietly()  # as a crash leaves it: the index preallocated, no clean marker
    index = next(log_dir.glob("*.index"))
    assert index.stat().st_size == 64 * 1024 and index.stat().st_blocks * 512 < 64 * 1024  # sparse
    with contextlib.suppress(OSError), open(small_tmpfs / "ballast", "wb", buffering=0) as f:
        while True:
            f.write(b"\0" * 4096)
    code = textwrap.dedent(f"""
        from kavka.storage.index.offset_index import OffsetIndex
        from pathlib import Path
        index = OffsetIndex(Path({str(index)!r}), 0, 64 * 1024)
        print(index.entries)
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    assert int(done.stdout) == PENDING_ENTRIES
