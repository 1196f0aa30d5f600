"""Wire codec benchmark: CPU per request on the Produce and Fetch paths.

Figures printed (best of --repeat runs, one process):

* Produce: decode a request holding one 1 MiB record batch and validate the
  batch (size, magic, CRC32C) — the broker's per-request work before the
  append. Reported as microseconds and effective GB/s (goal >= 1 GB/s),
  next to a plain 1 MiB CRC32C as the reference floor.
* Fetch request / response, 1, 100 and 1,000 partitions: decode and encode
  microseconds, for a flexible version (v16, what librdkafka sends) and a
  classic one (v11, aiokafka/kcat), with kafka-python 3.0's compiled codec
  decoding the same bytes as a reference ratio when it is installed.

Run: ``.venv/bin/python bench/protocol.py [--repeat N] [--quick]``.
"""

from __future__ import annotations

import argparse
import struct
import time
import uuid

from kavka.protocol.codec import REQUEST, RESPONSE, decode_body, encode_body
from kavka.protocol.headers import RequestHeader, decode_request, encode_request
from kavka.protocol.messages import FetchRequest, FetchResponse, ProduceRequest
from kavka.protocol.records.batch import HEADER_SIZE, crc32c, validate_batch


def make_batch(payload_size: int) -> bytes:
    """One magic-2 batch whose record area is ``payload_size`` opaque bytes
    (the broker validates the header and CRC only)."""
    records = bytes(range(256)) * (payload_size // 256) + b"\x00" * (payload_size % 256)
    after_crc = struct.pack(">hiqqqhii", 0, 0, 1_700_000_000_000, 1_700_000_000_000, -1, -1, -1, 1)
    body = after_crc + records
    crc = crc32c(body)
    batch_length = HEADER_SIZE - 12 + len(records)
    return struct.pack(">qiibI", 0, batch_length, -1, 2, crc) + body


def best(fn, repeat: int, inner: int) -> float:
    """Best seconds per call over ``repeat`` runs of ``inner`` calls."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(inner):
            fn()
        times.append((time.perf_counter() - t0) / inner)
    return min(times)


def bench_produce(repeat: int) -> None:
    batch = make_batch(1 << 20)
    R = ProduceRequest
    body = R(acks=-1, timeout_ms=30000, topic_data=[R.TopicData(name="bench", partition_data=[
        R.TopicData.PartitionData(index=0, records=batch)])])
    print("Produce request, one 1 MiB batch (decode + validate size/magic/CRC32C):")
    for version in (7, 9, 11):
        frame = encode_request(RequestHeader(0, version, 1, "bench"), body)

        def work(frame: bytes = frame) -> None:
            _, req = decode_request(frame)
            validate_batch(req.topic_data[0].partition_data[0].records)

        t = best(work, repeat, 20)
        print(f"  v{version:<2} {t * 1e6:9.1f} us/request  {len(batch) / t / 1e9:6.2f} GB/s effective")
    view = memoryview(batch)[21:]
    t_crc = best(lambda: crc32c(view), repeat, 20)
    print(f"  reference: CRC32C of 1 MiB alone {t_crc * 1e6:9.1f} us  {len(batch) / t_crc / 1e9:6.2f} GB/s")


def fetch_messages(n: int):
    topics, per = max(1, n // 100), min(n, 100)
    Q = FetchRequest
    req = Q(replica_id=-1, max_wait_ms=500, min_bytes=1, max_bytes=52428800, session_id=0,
            session_epoch=-1, topics=[Q.Topics(topic=f"topic-{t}", topic_id=uuid.UUID(int=t + 1), partitions=[
                Q.Topics.Partitions(partition=p, fetch_offset=1000 + p, partition_max_bytes=1048576)
                for p in range(per)]) for t in range(topics)])
    records = make_batch(200)
    S = FetchResponse
    resp = S(responses=[S.Responses(topic=f"topic-{t}", topic_id=uuid.UUID(int=t + 1), partitions=[
        S.Responses.Partitions(partition_index=p, high_watermark=5000, last_stable_offset=5000,
                               log_start_offset=0, records=records) for p in range(per)])
        for t in range(topics)])
    return req, resp


def kafka_python_classes():
    try:
        from kafka.protocol.consumer import FetchRequest as KReq
        from kafka.protocol.consumer import FetchResponse as KResp
    except ImportError:
        return None
    return KReq, KResp


def bench_fetch(repeat: int, sizes: list[int]) -> None:
    kp = kafka_python_classes()
    print("Fetch (us per message; ratio = kafka-python decode time / ours):")
    print(f"  {'version':>7} {'parts':>6} {'req dec':>9} {'req enc':>9} {'resp dec':>9} {'resp enc':>9}"
          f" {'ratio req':>9} {'ratio resp':>10}")
    for version in (11, 16):
        for n in sizes:
            req, resp = fetch_messages(n)
            rb, sb = encode_body(req, version), encode_body(resp, version)
            mv_r, mv_s = memoryview(rb), memoryview(sb)
            inner = max(1, 2000 // n)
            rd = best(lambda version=version, mv_r=mv_r: decode_body(1, REQUEST, version, mv_r), repeat, inner)
            re_ = best(lambda req=req, version=version: encode_body(req, version), repeat, inner)
            sd = best(lambda version=version, mv_s=mv_s: decode_body(1, RESPONSE, version, mv_s), repeat, inner)
            se = best(lambda resp=resp, version=version: encode_body(resp, version), repeat, inner)
            ratio_r = ratio_s = float("nan")
            if kp is not None:
                kr = best(lambda rb=rb, version=version: kp[0].decode(rb, version=version), repeat, inner)
                ks = best(lambda sb=sb, version=version: kp[1].decode(sb, version=version), repeat, inner)
                ratio_r, ratio_s = kr / rd, ks / sd
            print(f"  {'v' + str(version):>7} {n:>6} {rd * 1e6:9.1f} {re_ * 1e6:9.1f} {sd * 1e6:9.1f}"
                  f" {se * 1e6:9.1f} {ratio_r:9.2f} {ratio_s:10.2f}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="Prints figures; asserts nothing.")
    parser.add_argument("--repeat", type=int, default=5, help="runs per figure; the best is kept (default 5)")
    parser.add_argument("--quick", action="store_true", help="1 and 100 partitions only, 2 runs")
    args = parser.parse_args(argv)
    repeat = 2 if args.quick else args.repeat
    bench_produce(repeat)
    bench_fetch(repeat, [1, 100] if args.quick else [1, 100, 1000])


if __name__ == "__main__":
    main()
