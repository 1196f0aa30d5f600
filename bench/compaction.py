"""Compaction throughput: one cleaning pass over a log of duplicated keys.

For each codec a log of ``--mb`` MiB is written (batches of ``--batch``
records with ``--value``-byte values over ``--keys`` distinct keys, so most
records are superseded), then ``LogCleaner.clean_once`` cleans everything
below the active segment. Figures: MiB/s of log cleaned (bytes of the dirty
section read / time of the pass), the share of bytes kept, and ratios
against two references measured in the same run over the same files:

* a raw read of the segment files (the I/O floor), and
* decoding every record with ``iter_records`` (one of the cleaner's two
  decode passes: the offset map pass and the copy pass each decode all).

``bench_compaction()`` is importable (bench/storage.py may call it). Prints
figures; asserts nothing about time.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from kavka.common.clock import ManualClock  # noqa: E402
from kavka.common.topic_partition import TopicPartition  # noqa: E402
from kavka.protocol.records import Compression, SimpleRecord, build_batch, iter_batches, iter_records  # noqa: E402
from kavka.storage.cleaner.config import LogCleanerConfig  # noqa: E402
from kavka.storage.cleaner.thread import LogCleaner  # noqa: E402
from kavka.storage.log import Log  # noqa: E402
from kavka.storage.log_config import LogConfig  # noqa: E402

T0 = 1_700_000_000_000


class _Source:
    def __init__(self, log: Log) -> None:
        self.log = log

    def all_logs(self) -> dict[TopicPartition, Log]:
        return {self.log.topic_partition: self.log}

    def log_dir_of(self, topic: str, partition: int) -> Path:
        return self.log.dir.parent


def _build_log(root: Path, codec: Compression, mib: int, batch: int, value: int, keys: int) -> Log:
    config = LogConfig.from_props(
        {"cleanup.policy": "compact", "segment.bytes": 64 << 20, "file.delete.delay.ms": 0, "min.cleanable.dirty.ratio": 0.01}
    )
    log = Log(root / "bench-0", config, clock=ManualClock(T0))
    # Half random, half text: codecs find something to do but not everything
    # (a few-fold ratio, not the 20x of a repeated filler).
    rng = random.Random(1)
    text = (b"jackdaw-" * (value // 8 + 1))[: value - value // 2]
    pool = [rng.randbytes(value // 2) + text for _ in range(1024)]
    target = mib << 20
    i = 0
    while log.size_in_bytes() < target:
        records = [
            SimpleRecord(b"key-%08d" % ((i + j) * 7919 % keys), pool[(i + j) % 1021], T0 + i + j) for j in range(batch)
        ]
        log.append_as_leader(build_batch(records, compression=codec), leader_epoch=0)
        i += batch
    log.roll()
    log.update_high_watermark(log.log_end_offset)
    return log


def _raw_read(paths: list[Path]) -> float:
    start = time.perf_counter()
    for p in paths:
        with open(p, "rb") as f:
            while f.read(1 << 20):
                pass
    return time.perf_counter() - start


def _decode_all(paths: list[Path]) -> float:
    start = time.perf_counter()
    for p in paths:
        data = p.read_bytes()
        for pos, header in iter_batches(data):
            for _rec in iter_records(data[pos : pos + header.size]):
                pass
    return time.perf_counter() - start


def bench_compaction(mib: int = 8, batch: int = 100, value: int = 100, keys: int = 5000,
                     codecs: tuple[Compression, ...] = (Compression.NONE, Compression.LZ4, Compression.ZSTD)) -> list[dict]:
    """Run the benchmark; print and return one row per codec."""
    rows = []
    print(f"compaction: {mib} MiB per log, {batch} records/batch, {value}-byte values, {keys} distinct keys at most")
    for codec in codecs:
        root = Path(tempfile.mkdtemp(prefix="kavka-bench-compaction-"))
        try:
            log = _build_log(root, codec, mib, batch, value, keys)
            paths = [s.log.path for s in log.segments()[:-1]]
            size = sum(p.stat().st_size for p in paths)
            raw_s = min(_raw_read(paths) for _ in range(3))
            decode_s = _decode_all(paths)
            cleaner = LogCleaner(_Source(log), LogCleanerConfig(dedupe_buffer_size=64 << 20), clock=log.clock)
            start = time.perf_counter()
            outcome = cleaner.clean_once()
            clean_s = time.perf_counter() - start
            assert outcome.error is None and outcome.stats is not None
            kept = outcome.stats.bytes_written / size
            mbps = size / clean_s / (1 << 20)
            row = {
                "codec": codec.name.lower(),
                "log_mib": size / (1 << 20),
                "clean_mib_s": mbps,
                "kept": kept,
                "records_per_s": outcome.stats.records_read / clean_s,
                "vs_raw_read": raw_s / clean_s,
                "vs_decode_once": decode_s / clean_s,
            }
            rows.append(row)
            print(
                f"  {row['codec']:>5}: {row['log_mib']:.1f} MiB cleaned at {mbps:.1f} MiB/s "
                f"= {row['records_per_s'] / 1000:.0f}k records/s ({outcome.stats.records_read} records, "
                f"{kept:.1%} of bytes kept); "
                f"raw read {size / raw_s / (1 << 20):.0f} MiB/s (ratio {row['vs_raw_read']:.3f}), "
                f"decode-only {size / decode_s / (1 << 20):.1f} MiB/s (ratio {row['vs_decode_once']:.2f})"
            )
            log.close()
        finally:
            shutil.rmtree(root, ignore_errors=True)
    return rows


def bench_unique_keys(mib: int = 8) -> list[dict]:
    """The other extreme: every key distinct, so every batch is kept and
    copied byte for byte (the cleaner still reads every key twice)."""
    print("no duplicates (every batch copied as is):")
    return bench_compaction(mib, keys=10**9, codecs=(Compression.NONE, Compression.ZSTD))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=8, help="MiB of log per codec")
    parser.add_argument("--batch", type=int, default=100, help="records per batch")
    parser.add_argument("--value", type=int, default=100, help="value size in bytes")
    parser.add_argument("--keys", type=int, default=5000, help="distinct keys")
    args = parser.parse_args()
    bench_compaction(args.mb, args.batch, args.value, args.keys)
    bench_unique_keys(args.mb)


if __name__ == "__main__":
    main()
