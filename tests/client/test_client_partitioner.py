"""Kafka's default partitioner: murmur2 as Kafka's Java client computes it
(published test vectors) and as kafka-python computes it (oracle)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kavka.client.partitioner import murmur2, partition_for_key

# Vectors from Kafka's own utility tests (Java's signed results).
JAVA_VECTORS = {
    b"21": -973932308,
    b"foobar": -790332482,
    b"a-little-bit-long-string": -985981536,
    b"a-little-bit-longer-string": -1486304829,
    b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
    b"abc": 479470107,
}


@pytest.mark.parametrize("key, expected", sorted(JAVA_VECTORS.items()))
def test_murmur2_matches_kafka_java_vectors(key, expected):
    assert murmur2(key) == expected


@settings(max_examples=200)
@given(st.binary(max_size=64), st.integers(1, 1000))
def test_partition_matches_kafka_python(key, n):
    kp = pytest.importorskip("kafka.partitioner.default")
    assert murmur2(key) & 0xFFFFFFFF == kp.murmur2(key) & 0xFFFFFFFF
    assert partition_for_key(key, n) == (kp.murmur2(key) & 0x7FFFFFFF) % n
    assert 0 <= partition_for_key(key, n) < n


def test_partition_count_must_be_positive():
    with pytest.raises(ValueError, match="num_partitions"):
        partition_for_key(b"k", 0)
