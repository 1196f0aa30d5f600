"""Compaction on real files: the last record per key survives (against a
dict model, every codec), offsets and producer fields stay, tombstones wait
for their delete horizon, the active segment is never touched, the cleaner
checkpoint advances, ``compact,delete`` also applies retention."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kavka.common.clock import ManualClock
from kavka.protocol.records.batch import Compression
from kavka.protocol.records.control import ControlRecordType, build_control_batch
from kavka.storage.append_origin import AppendOrigin
from kavka.storage.checkpoint import CLEANER_OFFSET_CHECKPOINT, OffsetCheckpointFile
from kavka.storage.log import Log

from ..conftest import STORAGE_SETTINGS, T0
from .support import (
    append,
    compact_config,
    expected_after_clean,
    make_cleaner,
    read_headers,
    read_records,
    verify_indexes,
)

COORDINATOR = AppendOrigin.COORDINATOR  # markers are written by the transaction coordinator

KEYS = [b"k%d" % i for i in range(12)] + [b"a-key-longer-than-sixteen-bytes-%d" % i for i in range(4)]

batch_strategy = st.tuples(
    st.lists(
        st.tuples(st.sampled_from(KEYS + [None]), st.one_of(st.none(), st.binary(min_size=0, max_size=40))),
        min_size=1,
        max_size=6,
    ),
    st.sampled_from(list(Compression)),
    st.booleans(),  # roll after this batch
    st.booleans(),  # from an idempotent producer
)


def _fresh_log(tmp_path, clock, name="t-0", **cfg) -> Log:
    return Log(tmp_path / name, compact_config(**cfg), clock=clock)


@STORAGE_SETTINGS
@given(rounds=st.lists(st.lists(batch_strategy, min_size=1, max_size=12), min_size=1, max_size=3))
def test_compaction_keeps_the_last_record_per_key(tmp_path_factory, rounds):
    """Rounds of appends each followed by a pass: after every pass each key
    keeps only its latest record below the cleaned offset, everything above
    is untouched, batches keep their producer fields, indexes agree; a last
    pass past every delete horizon drops the tombstones; a restart reads
    the same."""
    tmp_path = tmp_path_factory.mktemp("c")
    clock = ManualClock(T0)
    log = _fresh_log(tmp_path, clock)
    cleaner = make_cleaner(log, clock=clock)
    appended = []  # every record ever appended, as first read back
    originals = {}  # base offset -> header of every batch ever appended
    sequence = 0
    for r, batches in enumerate(rounds):
        for i, (items, codec, roll, idempotent) in enumerate(batches):
            kw = {"producer_id": 5, "producer_epoch": 1, "base_sequence": sequence} if idempotent else {}
            sequence += len(items) if idempotent else 0
            append(log, items, T0 + r * 1000 + i * 10, compression=codec, **kw)
            if roll:
                log.roll()
        log.roll()
        log.update_high_watermark(log.log_end_offset)
        known = {x.offset for x in appended}
        appended += [x for x in read_records(log) if x.offset not in known]
        originals.update({h.base_offset: h for h in read_headers(log) if h.base_offset not in originals})
        outcome = cleaner.clean_once()
        assert outcome.error is None and outcome.end_offset == log.active_segment.base_offset
        assert read_records(log) == expected_after_clean(appended, outcome.end_offset)
        for h in read_headers(log):
            o = originals[h.base_offset]
            assert (h.last_offset, h.producer_id, h.producer_epoch, h.base_sequence, h.partition_leader_epoch) == (
                o.last_offset, o.producer_id, o.producer_epoch, o.base_sequence, o.partition_leader_epoch
            )
            assert h.compression is o.compression or h.record_count == 0
        assert verify_indexes(log.dir) == []  # the cleaned segments' indexes agree with their logs
    end = log.active_segment.base_offset
    active = log.active_segment
    active_bytes = active.log.read(0, active.size)
    clock.advance(compact_config().delete_retention_ms)
    cleaner.clean_once()  # forced by the delete horizon when tombstones remain
    final = read_records(log)
    assert final == expected_after_clean(appended, end, drop_tombstones=True)
    model = {x.key: x.value for x in appended if x.key is not None}
    assert {x.key: x.value for x in final} == {k: v for k, v in model.items() if v is not None}
    assert log.active_segment is active and active.log.read(0, active.size) == active_bytes
    checkpoint = OffsetCheckpointFile(tmp_path / CLEANER_OFFSET_CHECKPOINT).read()
    assert checkpoint == {("t", 0): end}
    log.close()
    reopened = Log(tmp_path / "t-0", compact_config(), clock=clock, had_clean_shutdown=False)
    assert read_records(reopened) == final
    assert not [p for p in (tmp_path / "t-0").iterdir() if p.suffix in (".cleaned", ".swap", ".deleted")]
    reopened.close()


def test_tombstones_survive_until_their_delete_horizon(tmp_path):
    clock = ManualClock(T0)
    log = _fresh_log(tmp_path, clock, **{"delete.retention.ms": 5000})
    append(log, [(b"a", b"1"), (b"b", b"1")], T0)
    append(log, [(b"a", None)], T0 + 1)  # tombstone for a
    log.roll()
    log.update_high_watermark(log.log_end_offset)
    cleaner = make_cleaner(log, clock=clock)
    first = cleaner.clean_once()
    assert first.end_offset == 3
    seen = read_records(log)
    assert [(r.key, r.value) for r in seen] == [(b"b", b"1"), (b"a", None)]
    tomb_header = [h for h in read_headers(log) if h.base_offset == 2][0]
    assert tomb_header.delete_horizon_ms == T0 + 5000  # KIP-534 horizon stamped by the first pass
    clock.advance(4999)
    assert cleaner.clean_once().tp is None  # nothing dirty, horizon not reached
    assert [(r.key, r.value) for r in read_records(log)] == [(b"b", b"1"), (b"a", None)]
    clock.advance(1)
    forced = cleaner.clean_once()
    assert forced.tp is not None and forced.error is None
    assert [(r.key, r.value) for r in read_records(log)] == [(b"b", b"1")]
    assert [r.offset for r in read_records(log)] == [1]
    log.close()


def test_offsets_timestamps_and_producer_fields_survive(tmp_path):
    clock = ManualClock(T0)
    log = _fresh_log(tmp_path, clock)
    # an idempotent producer's batch of which one record survives
    append(log, [(b"x", b"old"), (b"y", b"keep")], T0, producer_id=7, producer_epoch=2, base_sequence=0,
           compression=Compression.ZSTD)
    # an idempotent batch whose records are all superseded, then the producer's last batch, also superseded
    append(log, [(b"x", b"older")], T0 + 5, producer_id=7, producer_epoch=2, base_sequence=2)
    append(log, [(b"z", b"gone")], T0 + 6, producer_id=7, producer_epoch=2, base_sequence=3)
    append(log, [(b"x", b"new"), (b"z", b"new")], T0 + 7)  # plain producer, supersedes the above
    log.roll()
    append(log, [(b"q", b"active")], T0 + 8)
    log.update_high_watermark(log.log_end_offset)
    before = {h.base_offset: h for h in read_headers(log)}
    make_cleaner(log, clock=clock).clean_once()
    after = read_headers(log)
    by_base = {h.base_offset: h for h in after}
    assert 2 not in by_base  # emptied and not the producer's last batch: gone
    kept = by_base[0]
    old = before[0]
    assert (kept.producer_id, kept.producer_epoch, kept.base_sequence, kept.last_offset_delta) == (7, 2, 0, 1)
    assert kept.compression is Compression.ZSTD and kept.record_count == 1
    assert kept.partition_leader_epoch == old.partition_leader_epoch
    empty = by_base[3]  # the producer's last batch stays, empty, so its sequence state survives
    assert (empty.record_count, empty.producer_id, empty.base_sequence, empty.last_offset) == (0, 7, 3, 3)
    seen = read_records(log)
    assert [(r.offset, r.key, r.value, r.timestamp) for r in seen] == [
        (1, b"y", b"keep", T0 + 1),
        (4, b"x", b"new", T0 + 7),
        (5, b"z", b"new", T0 + 8),
        (6, b"q", b"active", T0 + 8),
    ]
    log.close()


def test_keyless_records_are_removed(tmp_path):
    clock = ManualClock(T0)
    log = _fresh_log(tmp_path, clock)
    append(log, [(None, b"no key"), (b"k", b"v")], T0)
    log.roll()
    log.update_high_watermark(log.log_end_offset)
    make_cleaner(log, clock=clock).clean_once()
    assert [(r.offset, r.key) for r in read_records(log)] == [(1, b"k")]
    log.close()


def test_cleaner_checkpoint_advances_and_only_dirty_logs_are_cleaned(tmp_path):
    clock = ManualClock(T0)
    log = _fresh_log(tmp_path, clock, **{"min.cleanable.dirty.ratio": 0.5})
    for i in range(20):
        append(log, [(b"k%d" % (i % 3), b"v%d" % i)], T0 + i)
    log.roll()
    log.update_high_watermark(log.log_end_offset)
    cleaner = make_cleaner(log, clock=clock)
    assert cleaner.clean_once().end_offset == 20
    checkpoint = OffsetCheckpointFile(tmp_path / CLEANER_OFFSET_CHECKPOINT)
    assert checkpoint.read() == {("t", 0): 20}
    assert cleaner.clean_once().tp is None  # clean: nothing to do
    for i in range(20, 60):
        append(log, [(b"k%d" % (i % 3), b"v%d" % i)], T0 + i)
    log.roll()
    log.update_high_watermark(log.log_end_offset)
    assert cleaner.clean_once().end_offset == 60
    assert checkpoint.read() == {("t", 0): 60}
    assert sorted((r.key, r.value) for r in read_records(log)) == [(b"k0", b"v57"), (b"k1", b"v58"), (b"k2", b"v59")]
    log.close()


def test_the_high_watermark_bounds_cleaning(tmp_path):
    clock = ManualClock(T0)
    log = _fresh_log(tmp_path, clock)
    for i in range(6):
        append(log, [(b"k", b"v%d" % i)], T0 + i)
        log.roll()
    log.update_high_watermark(3)
    outcome = make_cleaner(log, clock=clock).clean_once()
    assert outcome.end_offset == 3
    assert [r.offset for r in read_records(log)] == [2, 3, 4, 5]
    log.close()


def test_a_full_offset_map_ends_the_pass_early_and_later_passes_finish(tmp_path):
    clock = ManualClock(T0)
    log = _fresh_log(tmp_path, clock)
    for i in range(40):
        append(log, [(b"key%d" % i, b"v"), (b"key%d" % (i + 1), b"w")], T0 + i)
    log.roll()
    log.update_high_watermark(log.log_end_offset)
    original = read_records(log)
    cleaner = make_cleaner(log, clock=clock, dedupe=24 * 12)  # 12 slots -> 10 keys at load factor 0.9
    ends = []
    for _ in range(30):
        outcome = cleaner.clean_once()
        if outcome.tp is None:
            break
        ends.append(outcome.end_offset)
        assert read_records(log) == expected_after_clean(original, outcome.end_offset)
    # the first pass stops at a batch boundary once 10 keys could overflow
    assert ends[0] == 16 and ends[-1] == 80 and ends == sorted(ends) and all(e % 2 == 0 for e in ends)
    log.close()


def test_min_compaction_lag_keeps_young_segments_dirty(tmp_path):
    clock = ManualClock(T0)
    log = _fresh_log(tmp_path, clock, **{"min.compaction.lag.ms": 1000})
    append(log, [(b"k", b"old")], T0 - 5000)
    log.roll()
    append(log, [(b"k", b"young")], T0 - 10)
    log.roll()
    append(log, [(b"k", b"active")], T0)
    log.update_high_watermark(log.log_end_offset)
    cleaner = make_cleaner(log, clock=clock)
    outcome = cleaner.clean_once()
    assert outcome.end_offset == 1  # the young segment (base 1) is not cleanable yet
    assert [r.value for r in read_records(log)] == [b"old", b"young", b"active"]
    clock.advance(2000)
    assert cleaner.clean_once().end_offset == 2
    assert [r.value for r in read_records(log)] == [b"young", b"active"]
    log.close()


def test_max_compaction_lag_forces_a_clean_below_the_ratio(tmp_path):
    clock = ManualClock(T0)
    log = _fresh_log(tmp_path, clock, **{"min.cleanable.dirty.ratio": 0.99, "max.compaction.lag.ms": 1000})
    for i in range(10):
        append(log, [(b"k", b"v%d" % i)], T0 + i)
    log.roll()
    log.update_high_watermark(log.log_end_offset)
    cleaner = make_cleaner(log, clock=clock)
    cleaner.clean_once()
    for i in range(10, 12):
        append(log, [(b"k", b"v%d" % i)], T0 + 100 + i)
    log.roll()
    log.update_high_watermark(log.log_end_offset)
    assert cleaner.clean_once().tp is None  # dirty ratio below 0.99, max lag not reached
    clock.advance(5000)
    assert cleaner.clean_once().end_offset == 12
    assert [r.value for r in read_records(log)] == [b"v11"]
    log.close()


def test_compact_delete_also_applies_retention(tmp_path):
    clock = ManualClock(T0)
    log = _fresh_log(tmp_path, clock, **{"cleanup.policy": "compact,delete", "retention.ms": 1000})
    for i in range(5):
        append(log, [(b"k%d" % i, b"v")], T0 + i)
        log.roll()
    log.update_high_watermark(log.log_end_offset)
    clock.advance(10_000)
    outcome = make_cleaner(log, clock=clock).clean_once()
    assert outcome.retention_deleted >= 1
    assert log.log_start_offset == 5 and read_records(log) == []
    log.close()


def test_a_marker_goes_after_its_transaction_emptied_and_its_horizon_passed(tmp_path):
    clock = ManualClock(T0)
    log = _fresh_log(tmp_path, clock, **{"delete.retention.ms": 1000})
    txn = {"producer_id": 11, "producer_epoch": 0, "is_transactional": True}
    append(log, [(b"a", b"txn-1")], T0, base_sequence=0, **txn)
    log.append_as_leader(build_control_batch(ControlRecordType.COMMIT, 11, 0, 1, T0 + 1), leader_epoch=0, origin=COORDINATOR)
    append(log, [(b"b", b"txn-2")], T0 + 2, base_sequence=1, **txn)
    log.append_as_leader(build_control_batch(ControlRecordType.COMMIT, 11, 0, 1, T0 + 3), leader_epoch=0, origin=COORDINATOR)
    append(log, [(b"a", b"plain")], T0 + 4)
    log.roll()
    log.update_high_watermark(log.log_end_offset)
    cleaner = make_cleaner(log, clock=clock)
    cleaner.clean_once()
    headers = {h.base_offset: h for h in read_headers(log)}
    assert 0 not in headers  # the superseded transactional record is gone
    assert headers[1].is_control and headers[1].delete_horizon_ms == T0 + 1000  # its marker waits
    assert headers[3].is_control and headers[3].delete_horizon_ms is None  # txn 2 still has data
    clock.advance(1000)
    cleaner.clean_once()
    assert [h.base_offset for h in read_headers(log)] == [2, 3, 4]
    assert [(r.offset, r.value) for r in read_records(log) if r.offset != 3] == [(2, b"txn-2"), (4, b"plain")]
    log.close()


def test_old_segments_wait_for_the_file_delete_delay(tmp_path):
    clock = ManualClock(T0)
    log = _fresh_log(tmp_path, clock, **{"file.delete.delay.ms": 60_000})
    for i in range(30):
        append(log, [(b"k%d" % (i % 4), b"v%d" % i)], T0 + i)
    log.roll()
    log.update_high_watermark(log.log_end_offset)
    cleaner = make_cleaner(log, clock=clock)
    cleaner.clean_once()
    deleted = sorted(p.name for p in log.dir.iterdir() if p.name.endswith(".deleted"))
    assert deleted and log.pending_deletes() > 0
    for i in range(30, 60):  # clean again over the same base offsets before the delay passed
        append(log, [(b"k%d" % (i % 4), b"v%d" % i)], T0 + i)
    log.roll()
    log.update_high_watermark(log.log_end_offset)
    cleaner.clean_once()
    assert sorted(
        (r.key, r.value) for r in read_records(log)
    ) == sorted((b"k%d" % (i % 4), b"v%d" % i) for i in range(56, 60))
    clock.advance(60_000)
    log.delete_expired_files(clock.milliseconds())
    assert not [p for p in log.dir.iterdir() if p.name.endswith(".deleted")]
    assert len(read_records(log)) == 4
    log.close()
