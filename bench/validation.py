"""Record validation benchmark: what Kafka's LogValidator (every record
walked on the leader, ``kavka.storage.log_validator``) costs a leader append.

``Log.append_as_leader`` of 1M records of 100 B (values; keyed, timestamps
checked against ``message.timestamp.after.max.ms``) in 16 KiB and 1 MiB
batches, two sides in the same run, alternating, each case ``--repeat``
times (best kept), timed in CPU seconds of the appending thread (the
``pwritev`` to the page cache included; wall time on a shared machine
mostly measures the other jobs):

* validated: the append as the broker does it (header, CRC32C, the record
  walk in C — decompressing compressed batches —, offsets, ``pwritev``);
* unvalidated: the same append with the record walk replaced by the
  header's own facts (what an append cost before records were walked).

Goal: validated >= 0.8x of unvalidated for uncompressed batches. For lz4
and zstd the decompression is the walk's floor, so the codec's own speed is
printed as the reference: decompress-only over the same batches (cramjam,
as the validator uses it). Also printed: the C walk alone over the
uncompressed sections (one call per batch), and the Python fallback's walk on a tenth of them
(what a broker without the extension pays).

Run: ``.venv/bin/python bench/validation.py [--records 1000000] [--repeat 3]
[--codecs none,lz4,zstd] [--dir /var/tmp]``.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from kavka.protocol.records import Compression, SimpleRecord, build_batch
from kavka.protocol.records.batch import HEADER_SIZE, parse_header
from kavka.protocol.records.compression import decompress
from kavka.protocol.records.validation import NATIVE, RecordWalk, walk_records, walk_records_py
from kavka.storage.log import Log
from kavka.storage.log_config import LogConfig
from kavka.storage.log_validator import MAX_DECOMPRESSED, LogValidator

MiB = 1 << 20
VALUE = 100
# CPU time of this thread (user + system, so the pwritev counts): on a
# shared machine wall time mostly measures the neighbours.
CLOCK = time.thread_time


def make_batches(records: int, batch_bytes: int, codec: Compression, now: int) -> list[bytes]:
    """``records`` records of 100 B values in batches of about ``batch_bytes``
    (measured on the uncompressed records, as a producer's batch.size)."""
    per_batch = max(1, batch_bytes // (VALUE + 20))
    value = bytes(range(VALUE))  # mildly compressible, the same in every record
    batches = []
    for start in range(0, records, per_batch):
        n = min(per_batch, records - start)
        batches.append(build_batch([SimpleRecord(b"key-%08d" % (start + i), value, now + i % 1000)
                                    for i in range(n)], compression=codec))
    return batches


def header_only(self: LogValidator, view: memoryview, pos: int, header) -> tuple[RecordWalk, memoryview]:
    """The unvalidated side: the header's facts, no record read."""
    return RecordWalk(header.max_timestamp, header.last_offset_delta, 0, None), view[pos + HEADER_SIZE:
                                                                                   pos + header.size]


def append_all(directory: Path, config: LogConfig, batches: list[bytes]) -> float:
    shutil.rmtree(directory, ignore_errors=True)
    log = Log(directory, config)
    log.append_as_leader(batches[0], 1)  # the epoch checkpoint's fsync: kept out of the figure
    start = CLOCK()
    for batch in batches[1:]:
        log.append_as_leader(batch, 1)
    elapsed = CLOCK() - start
    log.close()
    return elapsed


def timed(action) -> float:
    start = CLOCK()
    action()
    return CLOCK() - start


def decompress_all(batches: list[bytes]) -> None:
    for b in batches[1:]:
        h = parse_header(b)
        decompress(h.compression, memoryview(b)[HEADER_SIZE:h.size], MAX_DECOMPRESSED)


def sections(batches: list[bytes]) -> list[tuple[memoryview, int, int]]:
    """(records section, record count, base timestamp) of each uncompressed batch."""
    out = []
    for b in batches:
        h = parse_header(b)
        out.append((memoryview(b)[HEADER_SIZE:h.size], h.record_count, h.base_timestamp))
    return out


def walk_all(parts: list[tuple[memoryview, int, int]], walk) -> None:
    for section, count, base_timestamp in parts:
        walk(section, count, 0, base_timestamp)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000, help="records appended per case (default 1M)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per side and case; the best is kept")
    parser.add_argument("--codecs", default="none,lz4,zstd", help="comma-separated: none,gzip,snappy,lz4,zstd")
    parser.add_argument("--dir", default=None, help="directory for the logs (default: a temp dir)")
    args = parser.parse_args()
    codecs = [Compression[c.strip().upper()] for c in args.codecs.split(",")]
    root = Path(tempfile.mkdtemp(prefix="kavka-bench-validation-", dir=args.dir))
    now = int(time.time() * 1000)
    config = LogConfig.from_props({"segment.bytes": 1 << 30, "max.message.bytes": 2 * MiB,
                                   "message.timestamp.after.max.ms": 3_600_000})
    print(f"{args.records:,} records of {VALUE} B per case, best of {args.repeat}, alternating sides, records per "
          f"CPU-second; "
          f"record walk in {'C' if NATIVE else 'Python (extension not built)'}; logs under {root}")
    print(f"{'case':<16}{'validated':>14}{'unvalidated':>14}{'ratio':>8}{'decompress only':>18}"
          f"{'walk only':>12}")
    walk_original = LogValidator.walk
    try:
        for batch_bytes in (16 * 1024, MiB):
            for codec in codecs:
                batches = make_batches(args.records, batch_bytes, codec, now)
                records = args.records - parse_header(batches[0]).record_count
                validated, unvalidated = [], []
                for _ in range(args.repeat):
                    LogValidator.walk = walk_original
                    validated.append(append_all(root / "v-0", config, batches))
                    LogValidator.walk = header_only
                    unvalidated.append(append_all(root / "u-0", config, batches))
                LogValidator.walk = walk_original
                t_v, t_u = min(validated), min(unvalidated)
                label = f"{batch_bytes // 1024} KiB {codec.name.lower()}"
                extra = ""
                if codec is Compression.NONE:
                    parts = sections(batches[1:])
                    t_walk = min(timed(lambda p=parts: walk_all(p, walk_records)) for _ in range(args.repeat))
                    extra = f"{'—':>18}{records / t_walk / 1e6:>8.1f} M/s"
                else:
                    t_d = min(timed(lambda b=batches: decompress_all(b)) for _ in range(args.repeat))
                    extra = f"{records / t_d / 1e6:>14.2f} M/s{'':>12}"
                print(f"{label:<16}{records / t_v / 1e6:>10.2f} M/s{records / t_u / 1e6:>10.2f} M/s"
                      f"{t_u / t_v:>7.2f}x{extra}")
        # the Python fallback's walk, on a tenth of the uncompressed 1 MiB batches
        parts = sections(make_batches(args.records // 10, MiB, Compression.NONE, now))
        t_py = timed(lambda: walk_all(parts, walk_records_py))
        t_c = min(timed(lambda: walk_all(parts, walk_records)) for _ in range(args.repeat))
        print(f"record walk alone, 1 MiB batches: C {args.records // 10 / t_c / 1e6:.1f} M records/s, Python "
              f"fallback {args.records // 10 / t_py / 1e6:.2f} M records/s ({t_py / t_c:.0f}x slower)")
    finally:
        LogValidator.walk = walk_original
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
