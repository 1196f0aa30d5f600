"""Compaction and transactions on real files (KIP-98, Kafka's cleaner):
aborted records are removed and never hide a committed one; committed
transactional records are compacted like any other; a marker stays while
its transaction keeps a record (an ABORT also in the pass that removed its
data, with its ``.txnindex`` entry), then gets a delete horizon and goes
after it, and its index entry with it; nothing at or past the first offset
of an open transaction is cleaned; a producer's last batch stays (empty)."""

from __future__ import annotations

from kavka.common.clock import ManualClock
from kavka.protocol.records.batch import parse_header
from kavka.protocol.records.control import ControlRecordType, build_control_batch
from kavka.storage.append_origin import AppendOrigin
from kavka.storage.cleaner.transactions import CleanedTransactions, marker_type
from kavka.storage.index.transaction_index import AbortedTxn
from kavka.storage.log import Log

from ..conftest import T0, make_batch
from .support import append, compact_config, make_cleaner, read_headers, read_records

COORDINATOR = AppendOrigin.COORDINATOR  # markers are written by the transaction coordinator

COMMIT, ABORT = ControlRecordType.COMMIT, ControlRecordType.ABORT


class Producer:
    """A transactional producer writing keyed records and markers to a log."""

    def __init__(self, log: Log, pid: int) -> None:
        self.log, self.pid, self.seq = log, pid, 0

    def send(self, items, ts: int) -> int:
        first, last = append(self.log, items, ts, producer_id=self.pid, producer_epoch=0, base_sequence=self.seq,
                             is_transactional=True)
        self.seq += last - first + 1
        return first

    def end(self, kind: ControlRecordType, ts: int) -> int:
        return self.log.append_as_leader(build_control_batch(kind, self.pid, 0, 1, ts), leader_epoch=0,
                                     origin=COORDINATOR).first_offset


def fresh(tmp_path, clock, **cfg) -> Log:
    return Log(tmp_path / "t-0", compact_config(**{"delete.retention.ms": 1000, **cfg}), clock=clock)


def settle(log: Log) -> None:
    log.roll()
    log.update_high_watermark(log.log_end_offset)


def kept(log: Log) -> list[tuple[int, bytes | None, bytes | None]]:
    return [(r.offset, r.key, r.value) for r in read_records(log) if r.key is None or not r.key.startswith(b"\0")]


def markers(log: Log) -> dict[int, int | None]:
    return {h.base_offset: h.delete_horizon_ms for h in read_headers(log) if h.is_control}


def test_aborted_records_go_and_never_hide_committed_ones(tmp_path):
    clock = ManualClock(T0)
    log = fresh(tmp_path, clock)
    append(log, [(b"k", b"committed-before")], T0)  # 0
    p = Producer(log, 9)
    first = p.send([(b"k", b"aborted"), (b"j", b"aborted")], T0 + 1)  # 1-2
    abort_at = p.end(ABORT, T0 + 2)  # 3
    append(log, [(b"other", b"x")], T0 + 3)  # 4
    settle(log)
    index_before = log.collect_aborted_transactions(0, log.log_end_offset)
    assert index_before == [AbortedTxn(9, first, abort_at, abort_at + 1)]
    cleaner = make_cleaner(log, clock=clock)
    assert cleaner.clean_once().tp is not None
    assert kept(log) == [(0, b"k", b"committed-before"), (4, b"other", b"x")]
    # the data went in this pass: the marker and its index entry stay, no horizon yet
    assert markers(log) == {abort_at: None}
    assert log.collect_aborted_transactions(0, log.log_end_offset) == index_before
    # a later pass finds the transaction empty: its entry goes, the marker
    # gets a horizon and goes after it (it is no longer the producer's last batch)
    p.send([(b"n", b"later")], T0 + 4)
    commit_at = p.end(COMMIT, T0 + 5)
    append(log, [(b"other", b"y")], T0 + 6)
    settle(log)
    cleaner.clean_once()
    assert markers(log) == {abort_at: T0 + 1000, commit_at: None}
    assert log.collect_aborted_transactions(0, log.log_end_offset) == []
    clock.advance(1000)
    append(log, [(b"other", b"z")], T0 + 7)
    settle(log)
    cleaner.clean_once()
    assert markers(log) == {commit_at: None}
    assert [v for _o, k, v in kept(log) if k == b"k"] == [b"committed-before"]


def test_a_producers_last_marker_stays_past_its_horizon(tmp_path):
    clock = ManualClock(T0)
    log = fresh(tmp_path, clock)
    p = Producer(log, 10)
    p.send([(b"k", b"txn")], T0)  # 0
    commit_at = p.end(COMMIT, T0 + 1)  # 1
    append(log, [(b"k", b"plain")], T0 + 2)  # 2 supersedes the transaction's only record
    settle(log)
    cleaner = make_cleaner(log, clock=clock)
    cleaner.clean_once()
    assert markers(log) == {commit_at: T0 + 1000}
    clock.advance(5000)
    append(log, [(b"k", b"plain-2")], T0 + 3)
    settle(log)
    cleaner.clean_once()
    # its producer's epoch lives in it (fencing): kept, as Kafka does
    assert markers(log) == {commit_at: T0 + 1000}
    log.close()


def test_committed_transactional_records_are_compacted_like_others(tmp_path):
    clock = ManualClock(T0)
    log = fresh(tmp_path, clock)
    append(log, [(b"a", b"plain-1")], T0)  # 0
    p = Producer(log, 11)
    p.send([(b"a", b"txn-2"), (b"b", b"txn-2")], T0 + 1)  # 1-2
    commit_at = p.end(COMMIT, T0 + 2)  # 3
    append(log, [(b"b", b"plain-3")], T0 + 3)  # 4
    settle(log)
    make_cleaner(log, clock=clock).clean_once()
    # the committed transactional record superseded the plain one, and was superseded in turn
    assert kept(log) == [(1, b"a", b"txn-2"), (4, b"b", b"plain-3")]
    assert markers(log) == {commit_at: None}  # its transaction still has a record
    log.close()


def test_nothing_past_the_first_open_transaction_is_cleaned(tmp_path):
    clock = ManualClock(T0)
    log = fresh(tmp_path, clock)
    append(log, [(b"k", b"v0")], T0)  # 0
    append(log, [(b"k", b"v1")], T0 + 1)  # 1
    p = Producer(log, 12)
    p.send([(b"k", b"open")], T0 + 2)  # 2, transaction open
    append(log, [(b"k", b"v3")], T0 + 3)  # 3
    settle(log)
    assert log.last_stable_offset == 2
    cleaner = make_cleaner(log, clock=clock)
    result = cleaner.clean_once()
    assert result.end_offset == 2  # the cleaner checkpoint stops at the LSO
    assert [o for o, _k, _v in kept(log)] == [1, 2, 3]
    p.end(COMMIT, T0 + 4)  # 4
    settle(log)
    cleaner.clean_once()
    assert [(o, v) for o, _k, v in kept(log)] == [(3, b"v3")]
    log.close()


def test_aborted_batch_whose_marker_is_not_yet_cleanable_goes_but_last_batch_stays_empty(tmp_path):
    clock = ManualClock(T0)
    log = fresh(tmp_path, clock)
    p = Producer(log, 13)
    append(log, [(b"k", b"plain")], T0)  # 0
    p.send([(b"k", b"aborted")], T0 + 1)  # 1
    log.roll()  # the marker lands in the next (active) segment
    abort_at = p.end(ABORT, T0 + 2)  # 2
    log.update_high_watermark(log.log_end_offset)
    make_cleaner(log, clock=clock).clean_once()
    headers = {h.base_offset: h for h in read_headers(log)}
    # the aborted record is gone, but its batch stays empty: the producer's
    # last batch in the cleaned range keeps its sequence state
    assert headers[1].record_count == 0 and headers[1].producer_id == 13
    assert kept(log) == [(0, b"k", b"plain")] and abort_at in markers(log)
    log.close()


def test_tracker_follows_kafkas_marker_rules():
    def data(pid, offset, transactional=True):
        return parse_header(make_batch(1, producer_id=pid, producer_epoch=0, base_sequence=0,
                                       is_transactional=transactional, base_offset=offset))

    def marker(pid, offset, kind):
        return parse_header(build_control_batch(kind, pid, 0, 1, T0, base_offset=offset))

    t = CleanedTransactions([AbortedTxn(1, 0, 2, 3)])
    assert t.is_aborted(data(1, 0)) and not t.is_aborted(data(2, 1))
    t.kept_committed(2)
    assert t.marker_discardable(marker(1, 2, ABORT), ABORT) is False  # its data was seen
    assert t.retained_aborts == [AbortedTxn(1, 0, 2, 3)]
    assert t.marker_discardable(marker(2, 3, COMMIT), COMMIT) is False  # kept a record
    assert t.marker_discardable(marker(2, 4, COMMIT), COMMIT) is True  # nothing left of it
    assert not t.is_aborted(data(1, 5))  # after its abort, producer 1 writes anew
    assert marker_type(build_control_batch(ABORT, 1, 0, 1, T0)) is ABORT
    assert marker_type(build_control_batch(COMMIT, 1, 0, 1, T0)[:-2]) is None
