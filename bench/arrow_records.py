"""Decoder benchmark: ``kavka.spark.arrow_records.ColumnBuilder`` turning
fetched bytes into an Arrow record batch, its C path
(``kavka.spark._recordcols``) against its aiokafka fallback, with Kavka's
pure-Python ``kavka.protocol.records`` decoder as the reference, all on
the same bytes in one run, one core, no broker.

The bytes: ``--records`` records of ``--size`` bytes (a short key, random
value), in uncompressed batches of ``--batch`` records, as a fetch returns
them. Each decoder runs ``--repeat`` times; the best is kept (the machine
is shared). Printed: records/s of each and the ratio to the reference.

Run: ``.venv/bin/python bench/arrow_records.py [--records 200000]
[--size 100] [--batch 2000] [--headers] [--repeat 3]`` (needs the
``spark`` extra).
"""

from __future__ import annotations

import argparse
import os
import time

from kavka.protocol.records import SimpleRecord, build_batch, iter_batches, iter_records


def fetched_bytes(records: int, size: int, per_batch: int, headers: bool) -> bytes:
    value = os.urandom(size)
    hdrs = (("trace", b"0123456789"),) if headers else ()
    out = bytearray()
    for base in range(0, records, per_batch):
        n = min(per_batch, records - base)
        out += build_batch([SimpleRecord(b"%d" % (base + i), value, 1_700_000_000_000 + i, hdrs) for i in range(n)],
                           base_offset=base)
    return bytes(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument("--batch", type=int, default=2000)
    ap.add_argument("--headers", action="store_true")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    from kavka.spark.arrow_records import NATIVE, ColumnBuilder

    data = fetched_bytes(args.records, args.size, args.batch, args.headers)

    def builder(native: bool):
        def run() -> int:
            b = ColumnBuilder("bench", 0, args.headers, 0, native=native)
            b.add_fetch(data, args.records)
            return b.record_batch().num_rows
        return run

    def reference() -> int:
        return sum(1 for pos, h in iter_batches(data) for _ in iter_records(data[pos:pos + h.size]))

    cases = {"kavka.protocol.records": reference, "aiokafka fallback": builder(False)}
    if NATIVE:
        cases["C _recordcols"] = builder(True)
    else:
        print("kavka.spark._recordcols is not built: the C path is not measured")
    best = {}
    for _ in range(args.repeat):
        for name, fn in cases.items():
            start = time.perf_counter()
            rows = fn()
            took = time.perf_counter() - start
            if rows != args.records:
                raise SystemExit(f"{name} decoded {rows} records, expected {args.records}")
            best[name] = min(best.get(name, took), took)
    print(f"\n{args.records:,} records of {args.size} B, {args.batch} per batch, headers {args.headers}, "
          f"best of {args.repeat}\n")
    ref = best["kavka.protocol.records"]
    for name, took in best.items():
        print(f"{name:<24}{args.records / took:>14,.0f} records/s{ref / took:>8.1f}x")


if __name__ == "__main__":
    main()
