"""``kavka dump-log FILE...``: print what is in Kafka-format log files (like
kafka-dump-log).

Understands, by name (a ``.deleted``/``.cleaned``/``.swap`` suffix is
looked through):

* ``<base>.log``: one line per batch — base/last offset, record count,
  producer id/epoch and base/last sequence, partition leader epoch,
  transactional/control flags, delete horizon, position, max timestamp,
  size, magic, codec, CRC and whether it is valid (computed);
  ``--deep-iteration`` adds one line per record (offset, timestamp, sizes,
  sequence, header keys; transaction markers decoded) and
  ``--print-data-log`` its key, value and headers; ``--offsets-decoder``
  decodes ``__consumer_offsets`` records as JSON
  (``kavka.tools.offsets_decoder``: offsets, classic groups and the
  consumer-protocol groups of KIP-848) and ``--transaction-log-decoder``
  those of ``__transaction_state`` (``kavka.tools.transaction_log_decoder``);
* ``<base>.index`` (8-byte entries: relative offset, position) and
  ``<base>.timeindex`` (12-byte entries: timestamp, relative offset);
* ``--verify-index``: checks both indexes of a segment against its
  ``.log``: each offset entry points at a batch start and no batch before
  that position reaches its offset; time entries are monotonic and each
  equals the largest batch timestamp up to its offset;
* checkpoint files (``recovery-point-offset-checkpoint``,
  ``replication-offset-checkpoint``, ``log-start-offset-checkpoint``,
  ``cleaner-offset-checkpoint``) and ``leader-epoch-checkpoint``.

Damage is reported with the byte position (or line) and a plain message;
the exit code is 1 when anything is corrupt or inconsistent, 2 when a file
cannot be read or is of an unknown kind, else 0. Reads are bounded: one
batch at a time, decompression capped by ``--max-message-bytes``.
"""

from __future__ import annotations

import argparse
import os
import struct
import sys
from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from kavka.protocol.records.batch import (
    HEADER_SIZE,
    LOG_OVERHEAD,
    MAGIC_V2,
    CorruptRecordBatch,
    InvalidRecordBatch,
    RecordBatchHeader,
    crc32c,
    parse_header,
)
from kavka.protocol.records.control import InvalidControlRecord, parse_control_record
from kavka.protocol.records.reader import DEFAULT_MAX_DECOMPRESSED, iter_records
from kavka.storage.checkpoint import LEADER_EPOCH_CHECKPOINT, LeaderEpochCheckpointFile, OffsetCheckpointFile
from kavka.storage.errors import CheckpointFormatError
from kavka.tools.offsets_decoder import decode_offsets_record
from kavka.tools.transaction_log_decoder import decode_transaction_log_record

DESCRIPTION = (
    "Print the record batches of .log segments, the entries of .index/.timeindex files, "
    "checkpoint files and leader-epoch-checkpoint files; report corruption with its byte position."
)
TEMP_SUFFIXES = (".deleted", ".cleaned", ".swap")
OFFSET_CHECKPOINTS = (
    "recovery-point-offset-checkpoint",
    "replication-offset-checkpoint",
    "log-start-offset-checkpoint",
    "cleaner-offset-checkpoint",
)
_OFFSET_ENTRY = struct.Struct(">ii")
_TIME_ENTRY = struct.Struct(">qi")
_INT32 = struct.Struct(">i")
OK, CORRUPT, UNREADABLE = 0, 1, 2


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < HEADER_SIZE:
        raise argparse.ArgumentTypeError(f"{value} is smaller than a batch header ({HEADER_SIZE} bytes)")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", nargs="+", metavar="FILE", help="segment, index, checkpoint or leader-epoch files")
    parser.add_argument("--deep-iteration", action="store_true", help="print every record, not only batches")
    parser.add_argument(
        "--print-data-log", action="store_true", help="print record keys, values and headers (implies --deep-iteration)"
    )
    decoders = parser.add_mutually_exclusive_group()
    decoders.add_argument(
        "--offsets-decoder", action="store_true",
        help="decode __consumer_offsets records (offsets, classic and consumer-protocol groups) as JSON "
             "(implies --print-data-log)",
    )
    decoders.add_argument(
        "--transaction-log-decoder", action="store_true",
        help="decode __transaction_state records (each transactional id's state) as JSON (implies --print-data-log)",
    )
    parser.add_argument("--verify-index", action="store_true", help="check .index/.timeindex entries against the .log")
    parser.add_argument(
        "--max-message-bytes",
        type=_positive_int,
        default=DEFAULT_MAX_DECOMPRESSED,
        help=f"largest batch read or decompressed, in bytes (default {DEFAULT_MAX_DECOMPRESSED})",
    )


def run(args: argparse.Namespace) -> int:
    out = sys.stdout
    worst = OK
    for name in args.files:
        path = Path(name)
        print(f"Dumping {path}", file=out)
        try:
            code = dump_file(path, args, out)
        except OSError as e:
            print(f"error: cannot read {path}: {e.strerror or e}", file=out)
            code = UNREADABLE
        except Exception as e:  # a tool reports, never a traceback
            print(f"error: {path} could not be dumped: {type(e).__name__}: {e}", file=out)
            code = UNREADABLE
        worst = max(worst, code)
    return worst


def file_kind(path: Path) -> str:
    name = path.name
    for suffix in TEMP_SUFFIXES:
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    if name == LEADER_EPOCH_CHECKPOINT:
        return "epochs"
    if name in OFFSET_CHECKPOINTS or name.endswith("-offset-checkpoint"):
        return "offsets"
    for ext in (".log", ".index", ".timeindex"):
        if name.endswith(ext) and name[: -len(ext)].isdigit():
            return ext[1:]
    return "unknown"


def segment_base(path: Path) -> int:
    return int(path.name.split(".", 1)[0])


def sibling(path: Path, ext: str) -> Path:
    """The same segment's file of another kind, with the same temp suffix."""
    name = path.name
    suffix = next((s for s in TEMP_SUFFIXES if name.endswith(s)), "")
    return path.with_name(f"{name.split('.', 1)[0]}.{ext}{suffix}")


def dump_file(path: Path, args: argparse.Namespace, out: TextIO) -> int:
    kind = file_kind(path)
    if kind == "unknown":
        print(
            f"error: {path.name} is not a .log/.index/.timeindex segment file, a *-offset-checkpoint "
            "or a leader-epoch-checkpoint file",
            file=out,
        )
        return UNREADABLE
    if not path.is_file():
        print(f"error: {path} does not exist or is not a file", file=out)
        return UNREADABLE
    if kind == "offsets":
        return dump_offset_checkpoint(path, out)
    if kind == "epochs":
        return dump_epoch_checkpoint(path, out)
    if kind == "log":
        code, batches = dump_log_file(path, args, out)
        if args.verify_index:
            for ext in ("index", "timeindex"):
                other = sibling(path, ext)
                if other.exists():
                    code = max(code, verify(other, ext, batches, out))
        return code
    code = dump_index_file(path, kind, out)
    if args.verify_index:
        log_path = sibling(path, "log")
        if not log_path.exists():
            print(f"error: cannot verify {path.name}: {log_path.name} is missing", file=out)
            return UNREADABLE
        quiet = argparse.Namespace(deep_iteration=False, print_data_log=False, offsets_decoder=False,
                                   transaction_log_decoder=False, max_message_bytes=args.max_message_bytes)
        log_code, batches = dump_log_file(log_path, quiet, None)
        code = max(code, log_code, verify(path, kind, batches, out))
    return code


# ---- .log ------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class BatchInfo:
    position: int
    base_offset: int
    last_offset: int
    max_timestamp: int


def _text(data: bytes | None) -> str:
    return "null" if data is None else data.decode("utf-8", "backslashreplace")


def _batch_line(h: RecordBatchHeader, position: int, valid: bool) -> str:
    ts_type = "LogAppendTime" if h.attributes & 0x08 else "CreateTime"
    horizon = h.delete_horizon_ms if h.has_delete_horizon else "none"
    codec = ("none", "gzip", "snappy", "lz4", "zstd", "codec5", "codec6", "codec7")[h.attributes & 0x07]
    return (
        f"baseOffset: {h.base_offset} lastOffset: {h.last_offset} count: {h.record_count} "
        f"baseSequence: {h.base_sequence} lastSequence: {h.last_sequence} producerId: {h.producer_id} "
        f"producerEpoch: {h.producer_epoch} partitionLeaderEpoch: {h.partition_leader_epoch} "
        f"isTransactional: {str(h.is_transactional).lower()} isControl: {str(h.is_control).lower()} "
        f"deleteHorizonMs: {horizon} position: {position} {ts_type}: {h.max_timestamp} size: {h.size} "
        f"magic: {h.magic} compresscodec: {codec} crc: {h.crc} isvalid: {str(valid).lower()}"
    )


def _print_records(h: RecordBatchHeader, data: bytes, args, out: TextIO, position: int) -> bool:
    """Print each record; False when the records section is corrupt."""
    ts_type = "LogAppendTime" if h.attributes & 0x08 else "CreateTime"
    try:
        for rec in iter_records(data, max_decompressed=args.max_message_bytes, check_crc=False):
            seq = -1 if h.base_sequence < 0 else (h.base_sequence + rec.offset_delta) & 0x7FFFFFFF
            line = (
                f"| offset: {rec.offset} {ts_type}: {rec.timestamp} "
                f"keySize: {-1 if rec.key is None else len(rec.key)} "
                f"valueSize: {-1 if rec.value is None else len(rec.value)} sequence: {seq} "
                f"headerKeys: [{','.join(k for k, _v in rec.headers)}]"
            )
            if h.is_control:
                try:
                    marker = parse_control_record(rec)
                    line += f" endTxnMarker: {marker.kind.name} coordinatorEpoch: {marker.coordinator_epoch}"
                except InvalidControlRecord as e:
                    line += f" controlRecord: unreadable ({e})"
            elif args.offsets_decoder or args.transaction_log_decoder:
                decode = decode_offsets_record if args.offsets_decoder else decode_transaction_log_record
                key, payload = decode(None if rec.key is None else bytes(rec.key),
                                      None if rec.value is None else bytes(rec.value))
                line += f" key: {key} payload: {payload}"
            elif args.print_data_log:
                line += f" key: {_text(rec.key)} payload: {_text(rec.value)}"
                if rec.headers:
                    line += " headers: " + ",".join(f"{k}={_text(v)}" for k, v in rec.headers)
            print(line, file=out)
    except CorruptRecordBatch as e:
        print(f"corrupt: records of the batch at position {position}: {e}", file=out)
        return False
    return True


def dump_log_file(path: Path, args, out: TextIO | None) -> tuple[int, list[BatchInfo]]:
    """Walk the batches of a ``.log`` (printing unless ``out`` is None);
    return the exit code and the batches whose header could be read."""
    deep = args.deep_iteration or args.print_data_log or args.offsets_decoder or args.transaction_log_decoder
    code = OK
    batches: list[BatchInfo] = []
    say = (lambda s: print(s, file=out)) if out is not None else (lambda s: None)
    with open(path, "rb") as f:
        fd = f.fileno()
        size = os.fstat(fd).st_size
        base = segment_base(path)
        say(f"Log starting offset: {base}")
        pos = 0
        previous_next = base
        while pos < size:
            if size - pos < LOG_OVERHEAD:
                say(f"corrupt: {size - pos} trailing bytes at position {pos} are too short for a batch")
                return CORRUPT, batches
            head = os.pread(fd, HEADER_SIZE, pos)
            batch_size = _INT32.unpack_from(head, 8)[0] + LOG_OVERHEAD
            if batch_size < HEADER_SIZE:
                say(f"corrupt: batch length {batch_size - LOG_OVERHEAD} at position {pos} is smaller than a batch header")
                return CORRUPT, batches
            if pos + batch_size > size:
                say(f"corrupt: batch at position {pos} declares {batch_size} bytes but only {size - pos} remain")
                return CORRUPT, batches
            if head[16] != MAGIC_V2:
                say(f"corrupt: batch at position {pos} has magic {head[16]}, only magic 2 is supported")
                return CORRUPT, batches
            if batch_size > args.max_message_bytes:
                say(f"corrupt: batch at position {pos} of {batch_size} bytes exceeds --max-message-bytes")
                return CORRUPT, batches
            data = os.pread(fd, batch_size, pos)
            try:
                header = parse_header(data)
            except InvalidRecordBatch as e:
                say(f"corrupt: batch at position {pos}: {e}")
                return CORRUPT, batches
            valid = crc32c(memoryview(data)[21:]) == header.crc
            say(_batch_line(header, pos, valid))
            if not valid:
                say(f"corrupt: CRC mismatch in the batch at position {pos} (base offset {header.base_offset})")
                code = CORRUPT
            if header.base_offset < previous_next:
                say(
                    f"corrupt: batch at position {pos} starts at offset {header.base_offset}, "
                    f"below the previous batch's next offset {previous_next}"
                )
                code = CORRUPT
            if header.record_count < 0 or header.last_offset_delta < 0:
                say(f"corrupt: batch at position {pos} has a negative record count or last offset delta")
                code = CORRUPT
            elif deep and valid and out is not None and not _print_records(header, data, args, out, pos):
                code = CORRUPT
            batches.append(BatchInfo(pos, header.base_offset, header.last_offset, header.max_timestamp))
            previous_next = max(previous_next, header.next_offset)
            pos += batch_size
    return code, batches


# ---- indexes -----------------------------------------------------------------------------------
def _index_entries(path: Path, entry_size: int, out: TextIO) -> tuple[list[bytes], int]:
    """Raw entries in use (up to the first all-zero entry after slot 0, the
    preallocated tail) and a code for a length not a multiple of the size."""
    raw = path.read_bytes()
    code = OK
    if len(raw) % entry_size:
        print(
            f"corrupt: {path.name} is {len(raw)} bytes, not a multiple of the {entry_size}-byte entry; "
            f"the last {len(raw) % entry_size} bytes at position {len(raw) - len(raw) % entry_size} are ignored",
            file=out,
        )
        code = CORRUPT
    zero = bytes(entry_size)
    entries = []
    for i in range(len(raw) // entry_size):
        chunk = raw[i * entry_size : (i + 1) * entry_size]
        if chunk == zero and i > 0:
            break
        if chunk == zero and i == 0 and (len(raw) < 2 * entry_size or raw[entry_size : 2 * entry_size] == zero):
            break
        entries.append(chunk)
    return entries, code


def dump_index_file(path: Path, kind: str, out: TextIO) -> int:
    base = segment_base(path)
    if kind == "index":
        entries, code = _index_entries(path, _OFFSET_ENTRY.size, out)
        for raw in entries:
            rel, position = _OFFSET_ENTRY.unpack(raw)
            print(f"offset: {base + rel} position: {position}", file=out)
    else:
        entries, code = _index_entries(path, _TIME_ENTRY.size, out)
        for raw in entries:
            ts, rel = _TIME_ENTRY.unpack(raw)
            print(f"timestamp: {ts} offset: {base + rel}", file=out)
    return code


def verify(path: Path, kind: str, batches: list[BatchInfo], out: TextIO) -> int:
    """Check index entries against the batches of the segment's log."""
    base = segment_base(path)
    problems: list[str] = []
    last_offset = batches[-1].last_offset if batches else base - 1
    if kind == "index":
        entries, code = _index_entries(path, _OFFSET_ENTRY.size, out)
        positions = [b.position for b in batches]
        prev = None
        for n, raw in enumerate(entries):
            rel, position = _OFFSET_ENTRY.unpack(raw)
            offset = base + rel
            where = f"{path.name} entry {n} (offset {offset}, position {position})"
            if prev is not None and (offset <= prev[0] or position < prev[1]):
                problems.append(f"{where} is not after the previous entry (offset {prev[0]}, position {prev[1]})")
            prev = (offset, position)
            i = bisect_left(positions, position)
            if i == len(positions) or positions[i] != position:
                problems.append(f"{where} does not point at the start of a batch")
            elif i > 0 and batches[i - 1].last_offset >= offset:
                problems.append(
                    f"{where}: the batch before that position already reaches offset {batches[i - 1].last_offset}"
                )
            elif offset > last_offset or offset < batches[i].base_offset:
                problems.append(
                    f"{where}: the batch there holds offsets [{batches[i].base_offset}, {batches[i].last_offset}] "
                    f"and the log ends at offset {last_offset}"
                )
    else:
        entries, code = _index_entries(path, _TIME_ENTRY.size, out)
        prev_ts = prev_off = None
        bases = [b.base_offset for b in batches]
        running: list[int] = []  # the largest timestamp up to and including each batch
        top = -1
        for b in batches:
            top = max(top, b.max_timestamp)
            running.append(top)
        for n, raw in enumerate(entries):
            ts, rel = _TIME_ENTRY.unpack(raw)
            offset = base + rel
            where = f"{path.name} entry {n} (timestamp {ts}, offset {offset})"
            if prev_ts is not None and (ts <= prev_ts or offset < prev_off):
                problems.append(f"{where} is not after the previous entry (timestamp {prev_ts}, offset {prev_off})")
            prev_ts, prev_off = ts, offset
            j = bisect_right(bases, offset) - 1
            if j < 0 or offset > last_offset:
                problems.append(f"{where}: the log holds offsets [{bases[0] if bases else base}, {last_offset}]")
            elif running[j] != ts:
                problems.append(f"{where}: the largest timestamp up to that offset in the log is {running[j]}")
    for p in problems:
        print(f"index mismatch: {p}", file=out)
    if not problems:
        print(f"{path.name}: {len(entries)} entries agree with the log", file=out)
    return max(code, CORRUPT if problems else OK)


# ---- checkpoints -------------------------------------------------------------------------------
def dump_offset_checkpoint(path: Path, out: TextIO) -> int:
    try:
        offsets = OffsetCheckpointFile(path).read()
    except CheckpointFormatError as e:
        print(f"corrupt: {e}", file=out)
        return CORRUPT
    print(f"version: 0 entries: {len(offsets)}", file=out)
    for (topic, partition), offset in offsets.items():
        print(f"topic: {topic} partition: {partition} offset: {offset}", file=out)
    return OK


def dump_epoch_checkpoint(path: Path, out: TextIO) -> int:
    try:
        entries = LeaderEpochCheckpointFile(path).read()
    except CheckpointFormatError as e:
        print(f"corrupt: {e}", file=out)
        return CORRUPT
    print(f"version: 0 entries: {len(entries)}", file=out)
    code = OK
    previous = None
    for n, (epoch, start) in enumerate(entries, start=3):
        print(f"epoch: {epoch} startOffset: {start}", file=out)
        if previous is not None and (epoch <= previous[0] or start < previous[1]):
            print(f"corrupt: line {n}: epoch {epoch} at {start} does not follow epoch {previous[0]} at {previous[1]}", file=out)
            code = CORRUPT
        previous = (epoch, start)
    return code
