"""Open transactions in the producer state (KIP-98): a transactional batch
opens one at its first offset, a marker closes it, the earliest open one is
the first unstable offset; all of it survives a snapshot and a reload."""

from __future__ import annotations

import pytest

from kavka.protocol.records.batch import parse_header
from kavka.protocol.records.control import ControlRecordType, build_control_batch
from kavka.storage.producer_state.append_check import InvalidProducerEpochError
from kavka.storage.producer_state.entry import ActiveProducer, CompletedTxn
from kavka.storage.producer_state.manager import ProducerStateManager
from tests.storage.conftest import T0, make_batch


def txn(pid: int, seq: int, count: int, base_offset: int, epoch: int = 0):
    return parse_header(
        make_batch(count, producer_id=pid, producer_epoch=epoch, base_sequence=seq, is_transactional=True,
                   base_offset=base_offset)
    )


def marker(pid: int, offset: int, kind=ControlRecordType.COMMIT, epoch: int = 0):
    return parse_header(build_control_batch(kind, pid, epoch, 3, T0, base_offset=offset))


def test_transactional_batches_open_and_markers_close(tmp_path):
    psm = ProducerStateManager(tmp_path)
    assert psm.first_unstable_offset() is None
    assert psm.update_replicated([txn(1, 0, 2, 10)]) == []
    assert psm.update_replicated([txn(2, 0, 1, 12), txn(1, 2, 1, 13)]) == []
    assert psm.first_unstable_offset() == 10
    assert psm.ongoing_transactions() == {1: 10, 2: 12}
    assert psm.update_replicated([marker(1, 14)]) == [CompletedTxn(1, 10, 14, 12)]
    assert psm.first_unstable_offset() == 12
    assert psm.update_replicated([marker(2, 15, ControlRecordType.ABORT)]) == [CompletedTxn(2, 12, 15, 16)]
    assert psm.first_unstable_offset() is None


def test_leader_update_assigns_offsets_and_reports_completion(tmp_path):
    psm = ProducerStateManager(tmp_path)
    assert psm.update_leader([txn(7, 0, 3, 0)], 100, None) == []
    assert psm.first_unstable_offset() == 100
    assert psm.update_leader([marker(7, 0)], 103, None) == [CompletedTxn(7, 100, 103, 104)]
    # a retried marker for the same (already closed) transaction closes nothing
    assert psm.update_leader([marker(7, 0)], 104, None) == []


def test_non_transactional_batches_open_nothing(tmp_path):
    psm = ProducerStateManager(tmp_path)
    psm.update_replicated([parse_header(make_batch(2, producer_id=5, producer_epoch=0, base_sequence=0))])
    assert psm.first_unstable_offset() is None


def test_marker_with_bumped_epoch_fences_older_epoch(tmp_path):
    psm = ProducerStateManager(tmp_path)
    psm.update_replicated([txn(1, 0, 1, 0, epoch=0)])
    psm.update_replicated([marker(1, 1, ControlRecordType.ABORT, epoch=1)])
    assert psm.last_entry(1).producer_epoch == 1
    assert psm.first_unstable_offset() is None


def test_open_transaction_survives_snapshot_and_is_not_expired(tmp_path):
    psm = ProducerStateManager(tmp_path, expiration_ms=10)
    psm.update_replicated([txn(1, 0, 2, 0)])
    psm.take_snapshot(2, T0 + 1_000_000)  # long past expiry, but the transaction is open
    again = ProducerStateManager(tmp_path)
    again.load([], 2, T0)
    assert again.first_unstable_offset() == 0


def test_marker_with_older_epoch_is_refused(tmp_path):
    psm = ProducerStateManager(tmp_path)
    psm.update_replicated([txn(1, 0, 1, 0, epoch=3)])
    with pytest.raises(InvalidProducerEpochError, match="older"):
        psm.check_leader_append([marker(1, 1, epoch=2)])
    assert psm.check_leader_append([marker(1, 1, epoch=3)]) is None


def test_epoch_bumped_by_a_marker_survives_a_snapshot(tmp_path):
    psm = ProducerStateManager(tmp_path)
    psm.update_replicated([marker(4, 0, ControlRecordType.ABORT, epoch=6)])
    psm.take_snapshot(1, T0)
    again = ProducerStateManager(tmp_path)
    again.load([], 1, T0)
    assert again.last_entry(4).producer_epoch == 6
    with pytest.raises(InvalidProducerEpochError):
        again.check_leader_append([txn(4, 0, 1, 1, epoch=5)])


def test_active_producers_report_what_describe_producers_shows(tmp_path):
    # KIP-664: per producer its epoch, last sequence and timestamp, the
    # coordinator epoch of its last marker and its open transaction's start.
    psm = ProducerStateManager(tmp_path)
    assert psm.active_producers() == []
    psm.update_replicated([txn(9, 0, 3, 40, epoch=2)])
    psm.update_replicated([parse_header(make_batch(2, producer_id=5, producer_epoch=0, base_sequence=7,
                                                   base_offset=43))])
    assert psm.active_producers() == [
        ActiveProducer(5, 0, 8, T0 + 1, -1, -1),
        ActiveProducer(9, 2, 2, T0 + 2, -1, 40),
    ]
    psm.update_replicated([marker(9, 45, ControlRecordType.ABORT, epoch=2)], [4])
    (_, nine) = psm.active_producers()
    assert (nine.coordinator_epoch, nine.current_txn_start_offset, nine.last_sequence) == (4, -1, 2)
    # a producer known only from a marker has no sequence yet
    psm.update_replicated([marker(11, 46)], [4])
    assert psm.active_producers()[-1] == ActiveProducer(11, 0, -1, T0, 4, -1)
