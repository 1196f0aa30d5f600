"""Kafka's default key partitioner: murmur2 of the key bytes, made
positive, modulo the partition count.

This is the rule Kafka's Java producer (and librdkafka's
``murmur2_random``, kafka-python's default) use for keyed records, so a key
lands on the same partition whichever of these clients wrote it: the
32-bit MurmurHash2 variant with seed 0x9747b28c, read in little-endian
4-byte words, and ``hash & 0x7fffffff`` (not ``abs``) as the positive value.
Records without a key are spread round-robin by the producer.

Pure functions; any thread.
"""

from __future__ import annotations

_M = 0x5BD1E995
_SEED = 0x9747B28C
_MASK = 0xFFFFFFFF


def murmur2(data: bytes) -> int:
    """Kafka's murmur2 of ``data`` as a signed 32-bit int (as Java returns)."""
    length = len(data)
    h = (_SEED ^ length) & _MASK
    whole = length - length % 4
    for i in range(0, whole, 4):
        k = int.from_bytes(data[i:i + 4], "little")
        k = (k * _M) & _MASK
        k ^= k >> 24
        k = (k * _M) & _MASK
        h = ((h * _M) & _MASK) ^ k
    tail = length % 4
    if tail == 3:
        h ^= data[whole + 2] << 16
    if tail >= 2:
        h ^= data[whole + 1] << 8
    if tail >= 1:
        h ^= data[whole]
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for_key(key: bytes, num_partitions: int) -> int:
    """The partition Kafka's default partitioner picks for ``key``."""
    if num_partitions <= 0:
        raise ValueError(f"num_partitions must be > 0, got {num_partitions}")
    return (murmur2(key) & 0x7FFFFFFF) % num_partitions
