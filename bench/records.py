"""Record batch v2 throughput: build and iterate per codec, and header
validation (CRC32C) on a 1 MiB batch.

References measured in the same run: kafka-python's DefaultRecordBatchBuilder
and DefaultRecordBatch reader (same records, same codec) when its codec is
installed, and a bare crc32c over the same bytes for validation.

Prints figures and ratios; asserts nothing about time.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import crc32c  # noqa: E402

from kavka.protocol.records import (  # noqa: E402
    Compression,
    SimpleRecord,
    build_batch,
    iter_records,
    validate_batch,
)


def best_of(repeat: int, fn) -> float:
    """Fastest of ``repeat`` timed calls (seconds)."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def make_records(count: int, value_size: int) -> list[SimpleRecord]:
    # Text-like values so every codec has something to do.
    word = b"jackdaw-"
    values = (word * (value_size // len(word) + 1))[:value_size]
    return [
        SimpleRecord(b"key-%06d" % i, values[: value_size - 6] + b"%06d" % i, 1_700_000_000_000 + i, (("h", b"v"),))
        for i in range(count)
    ]


def kafka_python_pair(codec: Compression):
    """(build, read) closures over kafka-python, or None if it lacks the codec."""
    try:
        from kafka import codec as kcodec
        from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
    except ImportError:
        return None
    available = {
        Compression.NONE: True,
        Compression.GZIP: kcodec.has_gzip(),
        Compression.SNAPPY: kcodec.has_snappy(),
        Compression.LZ4: kcodec.has_lz4(),
        Compression.ZSTD: kcodec.has_zstd(),
    }
    if not available[codec]:
        return None

    def build(records):
        builder = DefaultRecordBatchBuilder(2, int(codec), False, -1, -1, -1, batch_size=1 << 30)
        for i, r in enumerate(records):
            builder.append(i, r.timestamp, r.key, r.value, list(r.headers))
        return bytes(builder.build())

    def read(raw):
        return sum(1 for _ in DefaultRecordBatch(bytearray(raw)))

    return build, read


def bench_codecs(args) -> None:
    records = make_records(args.records, args.value_size)
    raw_bytes = sum(len(r.key) + len(r.value) for r in records)
    print(f"build/iterate: {args.records} records of {args.value_size}-byte values ({raw_bytes / 1e6:.2f} MB raw), best of {args.repeat}")
    print(f"{'codec':7} {'batch B':>10} {'build rec/s':>12} {'iter rec/s':>12} {'kp build':>10} {'kp iter':>10}")
    for name in args.codecs:
        codec = Compression[name.upper()]
        raw = build_batch(records, compression=codec)
        t_build = best_of(args.repeat, lambda codec=codec: build_batch(records, compression=codec))
        t_iter = best_of(args.repeat, lambda raw=raw: sum(1 for _ in iter_records(raw)))
        ref = kafka_python_pair(codec)
        kp_build = kp_iter = "n/a"
        if ref is not None:
            kbuild, kread = ref
            kraw = kbuild(records)
            kb = best_of(args.repeat, lambda kbuild=kbuild: kbuild(records))
            ki = best_of(args.repeat, lambda kread=kread, kraw=kraw: kread(kraw))
            # Ratios > 1 mean Kavka is faster than kafka-python.
            kp_build = f"x{kb / t_build:.2f}"
            kp_iter = f"x{ki / t_iter:.2f}"
        print(
            f"{codec.name.lower():7} {len(raw):>10} {args.records / t_build:>12,.0f} "
            f"{args.records / t_iter:>12,.0f} {kp_build:>10} {kp_iter:>10}"
        )
    print("(kp build / kp iter: kafka-python's time divided by ours, same records and codec)")


def bench_validate(args) -> None:
    value = b"v" * 1000
    count = (1 << 20) // 1030
    batch = build_batch([SimpleRecord(None, value, i) for i in range(count)])
    size = len(batch)
    loops = args.crc_loops
    t_validate = best_of(args.repeat, lambda: [validate_batch(batch) for _ in range(loops)])
    view = memoryview(batch)[21:]
    t_crc = best_of(args.repeat, lambda: [crc32c.crc32c(view) for _ in range(loops)])
    gbs_v = size * loops / t_validate / 1e9
    gbs_c = size * loops / t_crc / 1e9
    print(f"validate_batch on a {size}-byte batch: {gbs_v:.2f} GB/s; bare crc32c: {gbs_c:.2f} GB/s; ratio {gbs_v / gbs_c:.3f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=5000, help="records per batch (default 5000)")
    parser.add_argument("--value-size", type=int, default=200, help="value bytes per record (default 200)")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per figure, best kept (default 3)")
    parser.add_argument("--crc-loops", type=int, default=50, help="validations per timed run (default 50)")
    parser.add_argument(
        "--codecs",
        nargs="+",
        default=[c.name.lower() for c in Compression],
        choices=[c.name.lower() for c in Compression],
        help="codecs to measure (default: all)",
    )
    args = parser.parse_args(argv)
    if not 1 <= args.records <= 1_000_000 or not 1 <= args.repeat <= 100 or not 1 <= args.crc_loops <= 10_000:
        parser.error("--records 1..1e6, --repeat 1..100, --crc-loops 1..10000")
    bench_codecs(args)
    bench_validate(args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
