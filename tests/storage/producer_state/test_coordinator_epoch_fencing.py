"""Coordinator-epoch fencing of transaction markers (KIP-98, Kafka's
checkCoordinatorEpoch) in a real ``Log``: the leader remembers the epoch of
the coordinator whose marker it last appended for each producer and refuses
a marker from an older one with TRANSACTION_COORDINATOR_FENCED; a newer or
equal one is accepted; a follower records without checking; the epoch
survives a producer snapshot and a rebuild from the log after a crash."""

from __future__ import annotations

import pytest

from kavka.common.errors import ErrorCode
from kavka.protocol.records.batch import parse_header
from kavka.protocol.records.control import ControlRecordType, build_control_batch
from kavka.storage.append_origin import AppendOrigin
from kavka.storage.producer_state.append_check import TransactionCoordinatorFencedError
from kavka.storage.producer_state.end_txn_marker import NO_COORDINATOR_EPOCH, coordinator_epoch_of, coordinator_epochs
from tests.storage.conftest import T0, make_batch
from tests.storage.test_log_transactions import open_log, txn

COORDINATOR = AppendOrigin.COORDINATOR  # markers are written by the transaction coordinator

COMMIT, ABORT = ControlRecordType.COMMIT, ControlRecordType.ABORT


def marker(pid: int, coordinator_epoch: int, kind=COMMIT, producer_epoch: int = 0, base_offset: int = 0) -> bytes:
    return build_control_batch(kind, pid, producer_epoch, coordinator_epoch, T0, base_offset=base_offset)


def test_coordinator_epochs_read_only_markers():
    data = make_batch(2)
    assert coordinator_epochs(data, [parse_header(data)]) is None
    m = marker(1, 12)
    both = data + m
    assert coordinator_epochs(both, [parse_header(data), parse_header(m)]) == [NO_COORDINATOR_EPOCH, 12]
    assert coordinator_epoch_of(m[:-3]) == NO_COORDINATOR_EPOCH  # unreadable: no fencing information


def test_older_coordinator_epoch_is_fenced(tmp_path):
    log = open_log(tmp_path)
    txn(log, 1, 0)
    log.append_as_leader(marker(1, 5), 0, COORDINATOR)
    txn(log, 1, 2)
    end = log.log_end_offset
    with pytest.raises(TransactionCoordinatorFencedError, match="coordinator epoch 4") as info:
        log.append_as_leader(marker(1, 4, ABORT), 0, COORDINATOR)
    assert info.value.code is ErrorCode.TRANSACTION_COORDINATOR_FENCED
    assert log.log_end_offset == end and log.producer_state.first_unstable_offset() is not None
    log.append_as_leader(marker(1, 5, ABORT), 0, COORDINATOR)  # the same coordinator again: accepted
    log.append_as_leader(marker(1, 9), 0, COORDINATOR)  # a newer one: accepted and remembered
    assert log.producer_state.last_entry(1).coordinator_epoch == 9
    with pytest.raises(TransactionCoordinatorFencedError):
        log.append_as_leader(marker(1, 8), 0, COORDINATOR)
    log.append_as_leader(marker(2, 0), 0, COORDINATOR)  # per producer: another one is not affected
    log.close()


def test_follower_records_without_checking(tmp_path):
    log = open_log(tmp_path)
    log.append_as_follower(marker(1, 7, base_offset=0))
    log.append_as_follower(marker(1, 3, base_offset=1))  # the leader decided; recorded as is
    assert log.producer_state.last_entry(1).coordinator_epoch == 3
    log.close()


def test_epoch_survives_snapshot_and_crash_recovery(tmp_path):
    log = open_log(tmp_path)
    txn(log, 1, 0)
    log.append_as_leader(marker(1, 6), 0, COORDINATOR)
    log.close()  # clean: a producer snapshot at the log end
    again = open_log(tmp_path, had_clean_shutdown=True, recovery_point=log.log_end_offset)
    with pytest.raises(TransactionCoordinatorFencedError):
        again.append_as_leader(marker(1, 5), 0, COORDINATOR)
    again.append_as_leader(marker(1, 7), 0, COORDINATOR)
    again.close_quietly()  # a crash: the marker at epoch 7 is only in the log
    for snapshot in (tmp_path / "t-0").glob("*.snapshot"):
        snapshot.unlink()
    rebuilt = open_log(tmp_path)
    assert rebuilt.producer_state.last_entry(1).coordinator_epoch == 7
    with pytest.raises(TransactionCoordinatorFencedError):
        rebuilt.append_as_leader(marker(1, 6), 0, COORDINATOR)
    rebuilt.close()
