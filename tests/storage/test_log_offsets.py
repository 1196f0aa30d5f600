"""ListOffsets over a log: by timestamp (hypothesis against a linear scan of
the records), earliest, latest, max timestamp."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kavka.common.clock import ManualClock
from kavka.protocol.records.builder import build_batch
from kavka.protocol.records.reader import iter_records
from kavka.protocol.records.record import SimpleRecord
from kavka.storage.fetch_data_info import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, MAX_TIMESTAMP
from kavka.storage.log import Log

from .conftest import STORAGE_SETTINGS, T0, make_batch, read_all, small_config

batches_strategy = st.lists(st.lists(st.integers(0, 500), min_size=1, max_size=5), min_size=1, max_size=40)


def records_of(log):
    return [(r.timestamp, r.offset) for _h, raw in read_all(log) for r in iter_records(raw) if r.offset >= log.log_start_offset]


def linear(records, target):
    return next(((ts, off) for ts, off in records if ts >= target), None)


@STORAGE_SETTINGS
@given(batches=batches_strategy, targets=st.lists(st.integers(-1, 520), max_size=15), start=st.floats(0, 0.5))
def test_offset_for_timestamp_agrees_with_a_linear_scan(tmp_path_factory, batches, targets, start):
    clock = ManualClock(T0)
    log = Log(tmp_path_factory.mktemp("ts") / "ts-0", small_config(**{"segment.bytes": 700, "index.interval.bytes": 100}), clock=clock)
    for i, stamps in enumerate(batches):
        log.append_as_leader(build_batch([SimpleRecord(b"k", b"v" * 10, T0 + t) for t in stamps]), i // 10)
    log.update_high_watermark(log.log_end_offset)
    log.maybe_increment_log_start_offset(int(start * log.log_end_offset))
    records = records_of(log)
    for t in targets + sorted({s for b in batches for s in b}):
        got = log.fetch_offset_by_timestamp(T0 + t if t >= 0 else 0)
        want = linear(records, T0 + t if t >= 0 else 0)
        assert (None if got is None else (got.timestamp, got.offset)) == want
        if got is not None:
            assert got.leader_epoch == log.leader_epoch_cache.epoch_for_offset(got.offset)
    best = max(s for b in batches for s in b)
    mx = log.fetch_offset_by_timestamp(MAX_TIMESTAMP)
    want_max = linear(records, T0 + best)
    if want_max is not None and want_max[0] == T0 + best:
        assert (mx.timestamp, mx.offset) == want_max
    else:
        assert mx is None  # every record with the largest timestamp is below the log start
    log.close()


def test_earliest_and_latest(log_dir, clock):
    log = Log(log_dir, small_config(), clock=clock)
    for _ in range(5):
        log.append_as_leader(make_batch(2), 3)
    log.update_high_watermark(10)
    log.maybe_increment_log_start_offset(4)
    e = log.fetch_offset_by_timestamp(EARLIEST_TIMESTAMP)
    latest = log.fetch_offset_by_timestamp(LATEST_TIMESTAMP)
    assert (e.offset, e.leader_epoch) == (4, 3)
    assert (latest.offset, latest.leader_epoch) == (10, 3)
    assert log.fetch_offset_by_timestamp(T0 + 10_000) is None
    log.close()


def test_log_append_time_lookup(log_dir, clock):
    log = Log(log_dir, small_config(**{"message.timestamp.type": "LogAppendTime"}), clock=clock)
    log.append_as_leader(make_batch(3, ts=1), 1)
    clock.advance(100)
    log.append_as_leader(make_batch(3, ts=1), 1)
    got = log.fetch_offset_by_timestamp(T0 + 50)
    assert (got.timestamp, got.offset) == (T0 + 100, 3)
    log.close()
