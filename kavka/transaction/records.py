"""Keys and values of the records in ``__transaction_state`` (KIP-98): one
record per change of a transactional id's metadata, the newest per key
kept by compaction.

Wire format (big-endian; Kafka's version-0 layout, written from its field
list so Kafka's tools can read our log):

- key: int16 version 0, string transactional_id.
- value: int16 version 0, int64 producer_id, int16 producer_epoch, int32
  transaction_timeout_ms, int8 transaction_status (``TransactionState``),
  nullable array (int32 count, -1 null) of {string topic, array of int32
  partition ids}, int64 last_update_timestamp_ms, int64
  start_timestamp_ms.

A null value is a tombstone (the transactional id expired). Strings are
int16-length UTF-8. Anything else — another version, a short buffer, an
unknown status, a negative count — raises ``InvalidTransactionRecord``
naming the field. Pure functions; anyone may call them.
"""

from __future__ import annotations

import struct
from collections import defaultdict
from collections.abc import Iterable

from kavka.common.topic_partition import TopicPartition
from kavka.transaction.state import TransactionMetadata, TransactionState

KEY_VERSION = 0
VALUE_VERSION = 0
_HEAD = struct.Struct(">hqhib")
_TIMES = struct.Struct(">qq")


class InvalidTransactionRecord(ValueError):
    """A ``__transaction_state`` record this codec cannot read; the loader
    skips it and logs the message."""


def _string(s: str) -> bytes:
    raw = s.encode()
    if len(raw) > 32_767:
        raise ValueError(f"string of {len(raw)} bytes does not fit an int16 length")
    return struct.pack(">h", len(raw)) + raw


def encode_key(transactional_id: str) -> bytes:
    return struct.pack(">h", KEY_VERSION) + _string(transactional_id)


def partitions_by_topic(partitions: Iterable[TopicPartition]) -> list[tuple[str, list[int]]]:
    """The value's transaction_partitions as written: per topic (sorted)
    its partition ids (sorted)."""
    by_topic: dict[str, list[int]] = defaultdict(list)
    for tp in partitions:
        by_topic[tp.topic].append(tp.partition)
    return [(topic, sorted(ids)) for topic, ids in sorted(by_topic.items())]


def encode_value(m: TransactionMetadata) -> bytes:
    topics = partitions_by_topic(m.partitions)
    out = bytearray(_HEAD.pack(VALUE_VERSION, m.producer_id, m.producer_epoch, m.timeout_ms, int(m.state)))
    out += struct.pack(">i", len(topics))
    for topic, ids in topics:
        out += _string(topic) + struct.pack(f">i{len(ids)}i", len(ids), *ids)
    out += _TIMES.pack(m.last_update_ms, m.start_ms)
    return bytes(out)


class _Reader:
    def __init__(self, buf: bytes, what: str) -> None:
        self.buf, self.pos, self.what = buf, 0, what

    def take(self, s: struct.Struct | str, field: str):
        st = struct.Struct(s) if isinstance(s, str) else s
        if self.pos + st.size > len(self.buf):
            raise InvalidTransactionRecord(f"{self.what}: {field} runs past the end ({len(self.buf)} bytes)")
        values = st.unpack_from(self.buf, self.pos)
        self.pos += st.size
        return values

    def string(self, field: str) -> str:
        (n,) = self.take(">h", f"{field} length")
        if n < 0 or self.pos + n > len(self.buf):
            raise InvalidTransactionRecord(f"{self.what}: {field} length {n} is invalid")
        raw = self.buf[self.pos:self.pos + n]
        self.pos += n
        try:
            return raw.decode()
        except UnicodeDecodeError as e:
            raise InvalidTransactionRecord(f"{self.what}: {field} is not UTF-8: {e}") from None

    def count(self, field: str, item_size: int) -> int:
        (n,) = self.take(">i", f"{field} count")
        if n < -1 or (n > 0 and self.pos + n * item_size > len(self.buf)):
            raise InvalidTransactionRecord(f"{self.what}: {field} count {n} is invalid")
        return n


def decode_key(buf: bytes) -> str:
    r = _Reader(buf, "transaction log key")
    (version,) = r.take(">h", "version")
    if version != KEY_VERSION:
        raise InvalidTransactionRecord(f"transaction log key version {version}; only {KEY_VERSION} is known")
    return r.string("transactional_id")


def decode_value(transactional_id: str, buf: bytes) -> TransactionMetadata:
    r = _Reader(buf, f"transaction log value of {transactional_id!r}")
    version, pid, epoch, timeout_ms, status = r.take(_HEAD, "header")
    if version != VALUE_VERSION:
        raise InvalidTransactionRecord(f"transaction log value version {version}; only {VALUE_VERSION} is known")
    try:
        state = TransactionState(status)
    except ValueError:
        raise InvalidTransactionRecord(f"transaction status {status} of {transactional_id!r} is unknown") from None
    partitions: set[TopicPartition] = set()
    for _ in range(max(r.count("transaction_partitions", 6), 0)):
        topic = r.string("topic")
        n = r.count("partition_ids", 4)
        partitions.update(TopicPartition(topic, p) for p in (r.take(f">{n}i", "partition_ids") if n > 0 else ()))
    last_update_ms, start_ms = r.take(_TIMES, "timestamps")
    return TransactionMetadata(transactional_id, pid, epoch, timeout_ms, state, frozenset(partitions), start_ms,
                               last_update_ms)
