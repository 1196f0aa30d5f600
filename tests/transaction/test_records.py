"""``__transaction_state`` keys and values: Kafka's v0 layout, round trips,
and typed errors for what cannot be read."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kavka.common.topic_partition import TopicPartition
from kavka.transaction.records import (
    InvalidTransactionRecord,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
)
from kavka.transaction.state import TransactionMetadata, TransactionState

topics = st.text("abcxyz-._", min_size=1, max_size=8)
metadata = st.builds(
    TransactionMetadata,
    st.text(max_size=20),
    st.integers(-1, 2**63 - 1),
    st.integers(-1, 2**15 - 1),
    st.integers(0, 2**31 - 1),
    st.sampled_from(TransactionState),
    st.frozensets(st.builds(TopicPartition, topics, st.integers(0, 1000)), max_size=6),
    st.integers(-1, 2**62),
    st.integers(-1, 2**62),
)


@settings(max_examples=100)
@given(metadata)
def test_round_trip(m):
    assert decode_key(encode_key(m.transactional_id)) == m.transactional_id
    assert decode_value(m.transactional_id, encode_value(m)) == m


def test_layout_is_kafkas_v0():
    m = TransactionMetadata("t", 5, 2, 60_000, TransactionState.ONGOING,
                            frozenset({TopicPartition("a", 1), TopicPartition("a", 0)}), 100, 200)
    assert encode_key("t") == b"\x00\x00\x00\x01t"
    assert encode_value(m) == (
        struct.pack(">hqhib", 0, 5, 2, 60_000, 1) + struct.pack(">i", 1) + b"\x00\x01a"
        + struct.pack(">iii", 2, 0, 1) + struct.pack(">qq", 200, 100)
    )


@pytest.mark.parametrize("buf, field", [
    (b"\x00\x01", "header"),
    (struct.pack(">hqhib", 1, 5, 2, 1, 1), "version 1"),
    (struct.pack(">hqhib", 0, 5, 2, 1, 9), "status 9"),
    (struct.pack(">hqhib", 0, 5, 2, 1, 1) + struct.pack(">i", 1_000_000), "count"),
    (struct.pack(">hqhib", 0, 5, 2, 1, 1) + struct.pack(">i", 0), "timestamps"),
])
def test_bad_values_are_typed_errors(buf, field):
    with pytest.raises(InvalidTransactionRecord, match=field):
        decode_value("t", buf)
    with pytest.raises(InvalidTransactionRecord):
        decode_key(b"\x00\x03\x00")
