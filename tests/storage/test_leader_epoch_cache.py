"""Leader-epoch cache: KIP-101/279 semantics and its checkpoint file."""

from __future__ import annotations

from itertools import pairwise

from hypothesis import given
from hypothesis import strategies as st

from kavka.storage.leader_epoch_cache import EpochEntry, LeaderEpochFileCache

from .conftest import STORAGE_SETTINGS


def entries(cache):
    return [(e.epoch, e.start_offset) for e in cache.entries()]


def test_assign_is_strictly_increasing_and_persisted(tmp_path):
    c = LeaderEpochFileCache(tmp_path)
    assert c.assign(1, 0)
    assert not c.assign(1, 5)  # same epoch later: nothing new
    assert c.assign(3, 10)
    assert c.assign(2, 7)  # a lower epoch overrides the stale tail (a new leader's history)
    assert entries(c) == [(1, 0), (2, 7)]
    assert c.assign(4, 7)  # same start offset: replaces
    assert entries(c) == [(1, 0), (4, 7)]
    assert (tmp_path / "leader-epoch-checkpoint").read_text().splitlines() == ["0", "2", "1 0", "4 7"]
    assert entries(LeaderEpochFileCache(tmp_path)) == [(1, 0), (4, 7)]


def test_end_offset_for_kip_279(tmp_path):
    c = LeaderEpochFileCache(tmp_path)
    c.assign(2, 10)
    c.assign(4, 20)
    c.assign(7, 35)
    leo = 50
    assert c.end_offset_for(7, leo) == (7, 50)  # latest epoch: LEO
    assert c.end_offset_for(4, leo) == (4, 35)
    assert c.end_offset_for(5, leo) == (4, 35)  # largest epoch <= 5 is 4
    assert c.end_offset_for(1, leo) == (1, 10)  # below every epoch
    assert c.end_offset_for(8, leo) == (-1, -1)
    assert c.end_offset_for(-1, leo) == (-1, -1)
    assert LeaderEpochFileCache(tmp_path / "empty").end_offset_for(3, 0) == (-1, -1)


def test_truncate_from_end_and_start(tmp_path):
    c = LeaderEpochFileCache(tmp_path)
    for e, o in [(1, 0), (2, 10), (3, 20), (4, 30)]:
        c.assign(e, o)
    assert c.truncate_from_end(20)
    assert entries(c) == [(1, 0), (2, 10)]
    assert not c.truncate_from_end(25)
    assert c.truncate_from_start(15)
    assert entries(c) == [(2, 15)]
    assert c.epoch_for_offset(14) is None and c.epoch_for_offset(99) == 2
    assert entries(LeaderEpochFileCache(tmp_path)) == [(2, 15)]


def test_damaged_checkpoint_keeps_the_consistent_prefix(tmp_path):
    (tmp_path / "leader-epoch-checkpoint").write_text("0\n3\n1 0\n5 10\n3 20\n")
    assert entries(LeaderEpochFileCache(tmp_path)) == [(1, 0), (5, 10)]


@STORAGE_SETTINGS
@given(st.lists(st.tuples(st.integers(0, 20), st.integers(0, 100)), max_size=30), st.integers(0, 120))
def test_invariants_hold_under_any_assignments(tmp_path_factory, ops, cut):
    c = LeaderEpochFileCache(tmp_path_factory.mktemp("le"), persist=False)
    for epoch, start in ops:
        c.assign(epoch, start)
        es = c.entries()
        assert all(a.epoch < b.epoch and a.start_offset < b.start_offset for a, b in pairwise(es))
        assert es[-1] == EpochEntry(epoch, start) or (es[-1].epoch == epoch and es[-1].start_offset <= start)
    c.truncate_from_end(cut)
    assert all(e.start_offset < cut for e in c.entries())


def test_a_new_epoch_leaves_its_write_to_the_logs_flusher_and_truncation_does_not(tmp_path, monkeypatch):
    # A new leader (or a follower's first batch of an epoch) must not touch
    # the disk on the event loop: thousands of partitions change epoch in
    # one LeaderAndIsr. The periodic flusher writes the file (off the loop),
    # the log's next flush writes it if still pending and fsyncs it (Kafka's
    # KAFKA-15046 defers the fsync alone).
    import os

    from kavka.storage.log import Log
    from kavka.storage.log_config import LogConfig

    log = Log(tmp_path / "t-0", LogConfig())
    fsyncs: list[int] = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (fsyncs.append(fd), real_fsync(fd))[1])
    cache = log.leader_epoch_cache
    assert cache.assign(3, 0)
    assert cache.assign(4, 0)
    assert fsyncs == [] and LeaderEpochFileCache(log.dir).entries() == []  # nothing written yet
    assert not log.maybe_flush(0)  # the periodic flusher: nothing to flush, but the file is written
    assert LeaderEpochFileCache(log.dir).entries() == [EpochEntry(4, 0)] and fsyncs == []
    assert cache.assign(5, 0)
    assert log.flush()  # the pending checkpoint alone makes the flush act: written, then fsynced
    assert LeaderEpochFileCache(log.dir).entries() == [EpochEntry(5, 0)]
    assert len(fsyncs) >= 2  # the file and its directory
    assert not log.flush()  # and only once
    fsyncs.clear()
    assert cache.truncate_from_end(0)
    assert len(fsyncs) == 2  # truncation stays durable at once
    assert cache.assign(6, 0)
    log.close()  # a clean close writes what is pending
    assert LeaderEpochFileCache(log.dir).entries() == [EpochEntry(6, 0)]


def test_a_log_killed_before_its_epoch_file_was_written_re_learns_the_epochs_from_its_batches(tmp_path):
    """A kill -9 before the flusher wrote the file: recovery (above the
    recovery point) assigns each batch's epoch again."""
    from kavka.protocol.records.builder import SimpleRecord, build_batch
    from kavka.storage.log import Log
    from kavka.storage.log_config import LogConfig

    log = Log(tmp_path / "t-0", LogConfig())
    log.append_as_leader(build_batch([SimpleRecord(b"k", b"v", 0)]), leader_epoch=7)
    assert LeaderEpochFileCache(log.dir).entries() == []  # not yet written
    log.close_quietly()  # a crash: no flush, no close
    again = Log(tmp_path / "t-0", LogConfig(), had_clean_shutdown=False)
    try:
        assert again.leader_epoch_cache.entries() == [EpochEntry(7, 0)]
    finally:
        again.close()


def _log_with_a_new_epoch(tmp_path):
    from kavka.protocol.records.builder import SimpleRecord, build_batch
    from kavka.storage.log import Log
    from kavka.storage.log_config import LogConfig

    log = Log(tmp_path / "t-0", LogConfig())
    log.append_as_leader(build_batch([SimpleRecord(b"k", b"v", 0)]), leader_epoch=3)
    return log


def _blocking_epoch_file_writes(monkeypatch):
    """The checkpoint's writes wait for ``release`` (a slow disk);
    ``started`` is set when one is under way."""
    import threading

    from kavka.storage.checkpoint import LeaderEpochCheckpointFile

    started, release = threading.Event(), threading.Event()
    real = LeaderEpochCheckpointFile.write

    def slow(self, entries, sync=True):
        started.set()
        assert release.wait(30)
        real(self, entries, sync)

    monkeypatch.setattr(LeaderEpochCheckpointFile, "write", slow)
    return started, release


def test_the_event_loops_reads_do_not_wait_for_an_epoch_file_being_written(tmp_path, monkeypatch):
    # A failover hands the flusher one file per partition whose epoch
    # changed; every follower fetch reads each partition's log end (the
    # log's lock) and its epochs (the cache's). Neither waits for the disk.
    import threading

    log = _log_with_a_new_epoch(tmp_path)
    started, release = _blocking_epoch_file_writes(monkeypatch)
    flusher = threading.Thread(target=log.maybe_flush, args=(0,))
    flusher.start()
    try:
        assert started.wait(30)
        reads: list = []
        reader = threading.Thread(target=lambda: reads.append(
            (log.log_end_offset_metadata().message_offset, log.end_offset_for_epoch(3), log.high_watermark_metadata())))
        reader.start()
        reader.join(5)
        waited = reader.is_alive()
    finally:
        release.set()
        flusher.join(30)
    reader.join(30)
    assert not waited, "a read of the log waited for its leader-epoch-checkpoint write"
    assert [r[:2] for r in reads] == [(1, (3, 1))]
    assert LeaderEpochFileCache(log.dir).entries() == [EpochEntry(3, 0)]
    log.close()


def test_a_flush_waits_for_an_epoch_file_in_flight_and_fsyncs_it_before_passing_its_records(tmp_path, monkeypatch):
    # The recovery point may pass an epoch's records only once its
    # checkpoint is written and fsynced: a flush on another thread while
    # the flusher writes the file waits for that write.
    import threading

    from kavka.storage import local_log

    log = _log_with_a_new_epoch(tmp_path)
    started, release = _blocking_epoch_file_writes(monkeypatch)
    fsynced: list = []
    real_fsync_file = local_log.fsync_file
    monkeypatch.setattr(local_log, "fsync_file", lambda path: (fsynced.append(path), real_fsync_file(path))[1])
    flusher = threading.Thread(target=log.maybe_flush, args=(0,))
    flusher.start()
    flushed: list = []
    try:
        assert started.wait(30)
        flushing = threading.Thread(target=lambda: flushed.append(log.flush()))
        flushing.start()
        flushing.join(0.5)
        assert flushing.is_alive() and log.recovery_point == 0
    finally:
        release.set()
        flusher.join(30)
    flushing.join(30)
    assert flushed == [True] and log.recovery_point == 1
    assert log.leader_epoch_cache.path in fsynced
    assert LeaderEpochFileCache(log.dir).entries() == [EpochEntry(3, 0)]
    log.close()


def test_a_copy_of_the_epochs_taken_before_a_truncation_does_not_overwrite_it(tmp_path):
    # The flusher writes a copy taken under the lock; a truncation's
    # durable write may land between the copy and its write.
    cache = LeaderEpochFileCache(tmp_path)
    deferred: list = []
    cache.sync_assignments_with(deferred.append)
    assert cache.assign(3, 0) and cache.assign(4, 5)
    assert len(deferred) == 1
    write = deferred.pop()()
    assert write is not None and cache.take_pending() is None
    assert cache.truncate_from_end(5)
    assert write() == [cache.path]
    assert LeaderEpochFileCache(tmp_path).entries() == [EpochEntry(3, 0)]
    assert cache.assign(6, 7)
    deferred.pop()()()
    assert LeaderEpochFileCache(tmp_path).entries() == [EpochEntry(3, 0), EpochEntry(6, 7)]
