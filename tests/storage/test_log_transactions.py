"""Transactions in a ``Log``: the last stable offset, aborts indexed in the
marker's segment's ``.txnindex``, collection for read_committed fetches, and
the index rebuilt after a crash or cut on truncation."""

from __future__ import annotations

from kavka.common.clock import ManualClock
from kavka.protocol.records.control import ControlRecordType, build_control_batch
from kavka.storage.append_origin import AppendOrigin
from kavka.storage.index.transaction_index import AbortedTxn
from kavka.storage.log import Log
from tests.storage.conftest import T0, make_batch, small_config

COORDINATOR = AppendOrigin.COORDINATOR  # markers are written by the transaction coordinator


def open_log(d, **kw) -> Log:
    return Log(d / "t-0", small_config(), clock=ManualClock(T0), **kw)


def txn(log: Log, pid: int, seq: int, count: int = 2) -> int:
    data = make_batch(count, producer_id=pid, producer_epoch=0, base_sequence=seq, is_transactional=True)
    return log.append_as_leader(data, 0).first_offset


def end(log: Log, pid: int, kind: ControlRecordType) -> int:
    return log.append_as_leader(build_control_batch(kind, pid, 0, 5, T0), 0, COORDINATOR).first_offset


def plain(log: Log) -> int:
    return log.append_as_leader(make_batch(1), 0).first_offset


def test_lso_is_min_of_hw_and_first_open_transaction(tmp_path):
    log = open_log(tmp_path)
    plain(log)
    first = txn(log, 1, 0)
    plain(log)
    log.update_high_watermark(log.log_end_offset)
    assert log.last_stable_offset == first == 1
    end(log, 1, ControlRecordType.COMMIT)
    assert log.last_stable_offset == log.high_watermark == 4  # the marker itself is above the HW
    log.update_high_watermark(log.log_end_offset)
    assert log.last_stable_offset == 5
    log.close()


def test_abort_is_indexed_and_collected_commit_is_not(tmp_path):
    log = open_log(tmp_path)
    a = txn(log, 1, 0)
    b = txn(log, 2, 0)
    abort_at = end(log, 1, ControlRecordType.ABORT)
    commit_at = end(log, 2, ControlRecordType.COMMIT)
    log.update_high_watermark(log.log_end_offset)
    expected = AbortedTxn(1, a, abort_at, b)  # pid 2 was still open when pid 1 aborted
    assert log.collect_aborted_transactions(0, commit_at + 1) == [expected]
    assert log.collect_aborted_transactions(abort_at + 1, commit_at + 1) == []
    assert log.active_segment.txn_index.path.stat().st_size == 34
    log.close()


def test_index_rebuilt_after_crash_and_cut_on_truncation(tmp_path):
    log = open_log(tmp_path)
    plain(log)
    a = txn(log, 1, 0)
    abort_at = end(log, 1, ControlRecordType.ABORT)
    log.flush()
    log.close_quietly()  # a crash: no snapshot at close
    log.active_segment.txn_index.path.unlink()  # and the index lost with it
    again = open_log(tmp_path, had_clean_shutdown=False)
    assert again.collect_aborted_transactions(0, again.log_end_offset) == [AbortedTxn(1, a, abort_at, abort_at + 1)]
    again.truncate_to(abort_at)
    assert again.collect_aborted_transactions(0, again.log_end_offset) == []
    assert again.producer_state.first_unstable_offset() == a  # the transaction is open again
    again.close()


def test_aborts_across_segments(tmp_path):
    log = open_log(tmp_path)
    ends = []
    for pid in range(1, 40):
        txn(log, pid, 0, count=3)
        ends.append(end(log, pid, ControlRecordType.ABORT))
    log.update_high_watermark(log.log_end_offset)
    assert len(log.segments()) > 2
    got = log.collect_aborted_transactions(0, log.log_end_offset)
    assert [t.last_offset for t in got] == ends
    mid = log.segments()[1].base_offset
    assert [t.last_offset for t in log.collect_aborted_transactions(mid, log.log_end_offset)] == [
        e for e in ends if e >= mid
    ]
    log.close()


def test_aborted_index_survives_compaction(tmp_path):
    from .cleaner.support import append as append_kv
    from .cleaner.support import compact_config, make_cleaner

    clock = ManualClock(T0)
    log = Log(tmp_path / "c-0", compact_config(), clock=clock)
    append_kv(log, [(b"k", b"before")], T0)
    first, _ = append_kv(log, [(b"k", b"txn")], T0 + 1, producer_id=9, producer_epoch=0, base_sequence=0,
                         is_transactional=True)
    marker_at = log.append_as_leader(build_control_batch(ControlRecordType.ABORT, 9, 0, 1, T0 + 2), 0,
                                  COORDINATOR).first_offset
    append_kv(log, [(b"k", b"after")], T0 + 3)
    log.roll()
    log.update_high_watermark(log.log_end_offset)
    before = log.collect_aborted_transactions(0, log.log_end_offset)
    assert before == [AbortedTxn(9, first, marker_at, marker_at + 1)]
    assert make_cleaner(log, clock=clock).clean_once().tp is not None
    assert log.collect_aborted_transactions(0, log.log_end_offset) == before
    log.close()
