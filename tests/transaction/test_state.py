"""The transaction state machine: valid previous states, the clock of a
transaction, expiry."""

from __future__ import annotations

import pytest

from kavka.common.topic_partition import TopicPartition
from kavka.transaction.state import IllegalTransactionTransition, TransactionMetadata, TransactionState

S = TransactionState
A, B = TopicPartition("a", 0), TopicPartition("b", 1)


def test_commit_path_and_partitions():
    m = TransactionMetadata("t", 1, 0, 1000)
    m = m.add_partitions(frozenset({A}), now_ms=10)
    assert (m.state, m.start_ms, m.partitions) == (S.ONGOING, 10, {A})
    m = m.add_partitions(frozenset({B}), now_ms=20)
    assert (m.start_ms, m.partitions, m.last_update_ms) == (10, {A, B}, 20)
    m = m.transition(S.PREPARE_COMMIT, 30)
    with pytest.raises(IllegalTransactionTransition, match="PREPARE_COMMIT to ONGOING"):
        m.add_partitions(frozenset({A}), 31)
    m = m.transition(S.COMPLETE_COMMIT, 40, partitions=frozenset())
    assert m.state.is_complete and not m.partitions
    assert m.add_partitions(frozenset({B}), 50).start_ms == 50  # the next transaction's clock


def test_abort_needs_ongoing_or_fence():
    m = TransactionMetadata("t", 1, 0, 1000).add_partitions(frozenset({A}), 0)
    assert m.transition(S.PREPARE_EPOCH_FENCE, 1).transition(S.PREPARE_ABORT, 2).state is S.PREPARE_ABORT
    with pytest.raises(IllegalTransactionTransition):
        TransactionMetadata("t", 1, 0, 1000).transition(S.PREPARE_ABORT, 1)


def test_expiry_only_for_ongoing_past_timeout():
    m = TransactionMetadata("t", 1, 0, 1000).add_partitions(frozenset({A}), 0)
    assert not m.has_expired(1000) and m.has_expired(1001)
    assert not m.transition(S.PREPARE_ABORT, 5).has_expired(10_000)
