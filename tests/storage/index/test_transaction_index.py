"""The ``.txnindex`` file: 34-byte entries, append order, range collection
for read_committed fetches, truncation, torn tails."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kavka.storage.index.transaction_index import (
    ENTRY_SIZE,
    AbortedTxn,
    TransactionIndex,
    TransactionIndexError,
)
from tests.storage.conftest import STORAGE_SETTINGS

i64 = st.integers(-(2**63), 2**63 - 1)


@STORAGE_SETTINGS
@given(i64, i64, i64, i64)
def test_entry_round_trip(pid, first, last, lso):
    txn = AbortedTxn(pid, first, last, lso)
    data = txn.encode()
    assert len(data) == ENTRY_SIZE == 34
    assert AbortedTxn.decode(data) == txn


def test_file_layout_is_kafkas(tmp_path):
    idx = TransactionIndex.for_segment(tmp_path, 100)
    assert not idx.path.exists()
    idx.append(AbortedTxn(7, 100, 105, 106))
    assert idx.path.name == "00000000000000000100.txnindex"
    assert idx.path.read_bytes() == (
        (0).to_bytes(2, "big") + (7).to_bytes(8, "big") + (100).to_bytes(8, "big")
        + (105).to_bytes(8, "big") + (106).to_bytes(8, "big")
    )


def test_append_out_of_order_is_refused(tmp_path):
    idx = TransactionIndex.for_segment(tmp_path, 0)
    idx.append(AbortedTxn(1, 0, 10, 11))
    with pytest.raises(TransactionIndexError, match="log order"):
        idx.append(AbortedTxn(2, 3, 9, 11))


def test_collect_overlapping_range(tmp_path):
    idx = TransactionIndex.for_segment(tmp_path, 0)
    a, b, c = AbortedTxn(1, 0, 4, 5), AbortedTxn(2, 3, 9, 10), AbortedTxn(3, 12, 15, 16)
    for t in (a, b, c):
        idx.append(t)
    assert idx.collect_aborted(5, 12).aborted == [b]
    assert idx.collect_aborted(0, 3).aborted == [a]
    assert idx.collect_aborted(16, 20).aborted == []
    assert idx.collect_aborted(0, 16).complete
    assert not idx.collect_aborted(0, 17).complete


def test_reopen_truncate_and_torn_tail(tmp_path):
    idx = TransactionIndex.for_segment(tmp_path, 0)
    for i in range(3):
        idx.append(AbortedTxn(i, i * 10, i * 10 + 5, i * 10 + 6))
    with open(idx.path, "ab") as f:
        f.write(b"\x00" * 7)  # a crash mid-append
    again = TransactionIndex(idx.path)
    assert [t.producer_id for t in again.entries] == [0, 1, 2]
    assert idx.path.stat().st_size == 3 * ENTRY_SIZE
    again.truncate_to(15)
    assert [t.producer_id for t in again.entries] == [0]
    assert TransactionIndex(idx.path).entries == again.entries
    again.reset()
    assert not idx.path.exists() and again.entries == []
