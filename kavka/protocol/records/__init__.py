"""Record batch v2: header handling for the hot path (``batch``), and record
encoding, compression, building and reading for everything else.

Modules:

* ``batch`` — the 61-byte batch header: parse, validate (size, magic,
  CRC32C), patch base offset and leader epoch — without decoding records;
  iterate the batches of a records section.
* ``record`` — one record inside a batch: ``SimpleRecord`` (input),
  ``Record`` (decoded) and their codec; ``varint`` — the varint codec of
  ``kavka.protocol.varint`` with the record layer's error (``VarintError``).
* ``builder`` — new batches from records, and the log cleaner's rebuild of
  a batch from its surviving records.
* ``reader`` — decode the records of one batch, decompressing (bounded).
* ``validation`` — the record walk of the leader's LogValidator: every
  record of a batch checked without building objects, in C (the extension
  ``_validate``, built by setup.py) with a Python fallback giving the same
  answers.
* ``compression`` — the codecs of attribute bits 0-2, every decompression
  bounded; ``lz4_frame`` — LZ4's frame format as Kafka uses it.
* ``control`` — control batches: the transaction markers (KIP-98).

Public names are re-exported here; see each module for formats."""

from kavka.protocol.records.batch import (
    ATTR_COMPRESSION_MASK,
    ATTR_CONTROL,
    ATTR_DELETE_HORIZON,
    ATTR_TIMESTAMP_TYPE,
    ATTR_TRANSACTIONAL,
    HEADER_SIZE,
    LOG_OVERHEAD,
    MAGIC_V2,
    NO_PARTITION_LEADER_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    Compression,
    CorruptRecordBatch,
    InvalidRecordBatch,
    RecordBatchHeader,
    TimestampType,
    crc32c,
    iter_batches,
    parse_header,
    patch_base_offset,
    patch_leader_epoch,
    peek_size,
    validate_batch,
)
from kavka.protocol.records.builder import build_batch, rebuild_batch
from kavka.protocol.records.compression import DecompressionError, compress, decompress
from kavka.protocol.records.control import (
    ControlRecordType,
    EndTxnMarker,
    InvalidControlRecord,
    build_control_batch,
    parse_control_record,
)
from kavka.protocol.records.reader import DEFAULT_MAX_DECOMPRESSED, decode_batch, iter_records
from kavka.protocol.records.record import CorruptRecord, Record, SimpleRecord
from kavka.protocol.records.varint import VarintError

__all__ = [
    "ATTR_COMPRESSION_MASK",
    "ATTR_CONTROL",
    "ATTR_DELETE_HORIZON",
    "ATTR_TIMESTAMP_TYPE",
    "ATTR_TRANSACTIONAL",
    "DEFAULT_MAX_DECOMPRESSED",
    "HEADER_SIZE",
    "LOG_OVERHEAD",
    "MAGIC_V2",
    "NO_PARTITION_LEADER_EPOCH",
    "NO_PRODUCER_EPOCH",
    "NO_PRODUCER_ID",
    "NO_SEQUENCE",
    "Compression",
    "ControlRecordType",
    "CorruptRecord",
    "CorruptRecordBatch",
    "DecompressionError",
    "EndTxnMarker",
    "InvalidControlRecord",
    "InvalidRecordBatch",
    "Record",
    "RecordBatchHeader",
    "SimpleRecord",
    "TimestampType",
    "VarintError",
    "build_batch",
    "build_control_batch",
    "compress",
    "crc32c",
    "decode_batch",
    "decompress",
    "iter_batches",
    "iter_records",
    "parse_control_record",
    "parse_header",
    "patch_base_offset",
    "patch_leader_epoch",
    "peek_size",
    "rebuild_batch",
    "validate_batch",
]
