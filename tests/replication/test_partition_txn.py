"""read_committed reads of a leader Partition (KIP-98): bounded by the last
stable offset, answered with the aborted transactions of the range; the
ListOffsets latest offset for read_committed is the LSO."""

from __future__ import annotations

from kavka.common.errors import ErrorCode
from kavka.protocol.records.batch import iter_batches
from kavka.protocol.records.builder import SimpleRecord, build_batch
from kavka.protocol.records.control import ControlRecordType, build_control_batch
from kavka.replication.requests import AbortedTransaction, FetchIsolation
from kavka.storage.append_origin import AppendOrigin
from kavka.storage.fetch_data_info import LATEST_TIMESTAMP

from .conftest import T0, batch, make_partition, state


def txn_batch(pid: int, seq: int, count: int = 2) -> bytes:
    return build_batch([SimpleRecord(b"k", b"v", T0) for _ in range(count)], producer_id=pid, producer_epoch=0,
                       base_sequence=seq, is_transactional=True)


def test_read_committed_stops_at_lso_and_lists_aborts(log, clock):
    p = make_partition(log, clock)
    p.make_leader(state(1, 0, (1,)))
    p.append_records_to_leader(batch(1), required_acks=1)  # 0
    p.append_records_to_leader(txn_batch(7, 0), required_acks=1)  # 1-2, open
    p.append_records_to_leader(batch(1), required_acks=1)  # 3
    assert p.last_stable_offset() == 1 and log.high_watermark == 4
    committed = p.read_records(0, 1 << 20, FetchIsolation.TXN_COMMITTED)
    assert committed.last_stable_offset == 1
    assert [h.last_offset for _, h in iter_batches(committed.records)] == [0]
    assert p.fetch_offset_for_timestamp(LATEST_TIMESTAMP, FetchIsolation.TXN_COMMITTED).offset == 1
    assert p.fetch_offset_for_timestamp(LATEST_TIMESTAMP, FetchIsolation.HIGH_WATERMARK).offset == 4

    p.append_records_to_leader(build_control_batch(ControlRecordType.ABORT, 7, 0, 0, T0), required_acks=1,
                               origin=AppendOrigin.COORDINATOR)  # 4
    after = p.read_records(0, 1 << 20, FetchIsolation.TXN_COMMITTED)
    assert after.error is ErrorCode.NONE and after.last_stable_offset == 5
    assert [h.last_offset for _, h in iter_batches(after.records)] == [0, 2, 3, 4]
    assert after.aborted_transactions == (AbortedTransaction(7, 1),)
    assert after.to_partition_data().aborted_transactions == (AbortedTransaction(7, 1),)
    uncommitted = p.read_records(0, 1 << 20, FetchIsolation.HIGH_WATERMARK)
    assert uncommitted.aborted_transactions == () and uncommitted.records == after.records
