"""What TLS and SASL cost: throughput over SASL_SSL against PLAINTEXT on the
same broker in the same run, and connection setup time.

One broker (``LocalCluster(secure=True)``: ``kavka up --secure``'s
certificates and SCRAM users) with three listeners: SASL_SSL (TLS +
SCRAM-SHA-512), SSL with client certificates (mutual TLS) and PLAINTEXT. The
ACL authorizer is off here, so the two sides differ by the channel alone
(TLS record encryption, the SASL phase), not by ACL checks.

1. Throughput, confluent-kafka (librdkafka): produce N records (acks=all,
   ``linger.ms=5``, ``batch.size=1000000``) to a fresh 1-partition topic,
   then consume them with ``assign`` from the beginning; 100 B and 1 KB
   values; PLAINTEXT and SASL_SSL alternate (the order flips every round),
   best of ``--repeat``. Printed: records/s, MB/s, the broker's CPU-seconds
   per 100 MB of values, and SASL_SSL/PLAINTEXT. Goal: TLS costs at most 30 %
   of throughput (ratio >= 0.70); Python's ssl runs in C, so the per-record
   path must not grow.
2. Connection setup, Kavka's client (``BrokerConnection.connect``: TCP,
   TLS handshake, ApiVersions, SaslHandshake + SaslAuthenticate with
   SCRAM's PBKDF2 in a worker thread), ``--connections`` times per side,
   interleaved: p50/p99/max for PLAINTEXT (the reference), SSL with a client
   certificate, and SASL_SSL; and SCRAM-SHA-512's client key derivation
   alone (4096 iterations), the part of SASL_SSL's cost that is arithmetic.

Run: ``.venv/bin/python bench/security.py [--records 1000000] [--sizes 100,1000]
[--repeat 2] [--connections 200]``.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import statistics
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from kavka.client.connection import BrokerConnection  # noqa: E402
from kavka.security.client_properties import client_security_from_properties  # noqa: E402
from kavka.security.client_security import ClientSecurity  # noqa: E402
from kavka.security.sasl.credentials import ScramFormatter, ScramMechanism  # noqa: E402
from kavka.tools.cluster import LocalCluster  # noqa: E402
from kavka.tools.ports import free_port  # noqa: E402

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
START = time.monotonic()


def say(msg: str) -> None:
    print(f"[{time.monotonic() - START:7.1f}s] {msg}", file=sys.stderr, flush=True)


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat", "rb") as f:
        fields = f.read().rsplit(b")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


@dataclass
class Side:
    name: str
    client: dict[str, str]  # librdkafka settings, bootstrap included


@dataclass
class Run:
    records: int
    value_bytes: int
    seconds: float
    broker_cpu: float

    @property
    def rate(self) -> float:
        return self.records / self.seconds

    @property
    def mb_s(self) -> float:
        return self.value_bytes / self.seconds / 1e6

    @property
    def cpu_per_100mb(self) -> float:
        return self.broker_cpu / (self.value_bytes / 1e8)


def create_topic(side: Side, name: str, timeout: float = 30.0) -> None:
    admin = AdminClient(side.client)
    admin.create_topics([NewTopic(name, 1, 1)], operation_timeout=timeout)[name].result(timeout)
    deadline = time.monotonic() + timeout
    while True:
        md = admin.list_topics(name, timeout=5).topics.get(name)
        if md is not None and md.error is None and all(p.leader >= 0 for p in md.partitions.values()):
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"topic {name} has no leader after {timeout:.0f} s")
        time.sleep(0.1)


def delete_topic(side: Side, name: str) -> None:
    admin = AdminClient(side.client)  # alive until the future settles
    admin.delete_topics([name], operation_timeout=30)[name].result(30)


def produce(side: Side, pid: int, topic: str, records: int, size: int, timeout: float) -> Run:
    errors: list[str] = []

    def on_error(err, msg) -> None:
        if err is not None and len(errors) < 10:
            errors.append(str(err))

    p = Producer({**side.client, "acks": "all", "linger.ms": 5, "batch.size": 1000000,
                  "delivery.report.only.error": True, "on_delivery": on_error})
    value = os.urandom(size)
    deadline = time.monotonic() + timeout
    cpu0 = cpu_seconds(pid)
    start = time.perf_counter()
    i = 0
    while i < records:
        try:
            p.produce(topic, value, partition=0)
            i += 1
        except BufferError:
            p.poll(0.001)
            if time.monotonic() > deadline:
                raise RuntimeError(f"produce over {side.name} timed out after {i} records") from None
    left = p.flush(max(0.1, deadline - time.monotonic()))
    run = Run(records, records * size, time.perf_counter() - start, cpu_seconds(pid) - cpu0)
    if left or errors:
        raise RuntimeError(f"produce over {side.name}: {left} undelivered, errors {errors}")
    return run


def consume(side: Side, pid: int, topic: str, records: int, size: int, timeout: float) -> Run:
    c = Consumer({**side.client, "group.id": f"bench-{uuid.uuid4()}", "enable.auto.commit": False,
                  "queued.min.messages": 10000000, "fetch.queue.backoff.ms": 1})
    deadline = time.monotonic() + timeout
    count = 0
    try:
        cpu0 = cpu_seconds(pid)
        start = time.perf_counter()
        c.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        while count < records:
            for m in c.consume(num_messages=100000, timeout=0.2):
                if m.error() is not None:
                    raise KafkaException(m.error())
                count += 1
            if time.monotonic() > deadline:
                raise RuntimeError(f"consume over {side.name} timed out at {count}/{records}")
        return Run(count, count * size, time.perf_counter() - start, cpu_seconds(pid) - cpu0)
    finally:
        c.close()


def percentile(sorted_ms: list[float], q: float) -> float:
    return sorted_ms[max(0, math.ceil(len(sorted_ms) * q) - 1)]


async def setup_times(host: str, ports: dict[str, int], security: dict[str, ClientSecurity],
                      n: int) -> dict[str, list[float]]:
    """``n`` connections per side, interleaved; ms from connect() to the
    connection being usable (authenticated where SASL)."""
    out: dict[str, list[float]] = {name: [] for name in ports}
    for i in range(n + 5):
        for name, port in ports.items():
            t0 = time.perf_counter()
            conn = BrokerConnection(host, port, "bench-security", security=security[name])
            await conn.connect()
            elapsed = (time.perf_counter() - t0) * 1000
            conn.close()
            if i >= 5:  # warm-up: imports, the first handshakes
                out[name].append(elapsed)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--sizes", default="100,1000", help="value sizes in bytes (default 100,1000)")
    ap.add_argument("--repeat", type=int, default=2, help="rounds per case, best kept (default 2)")
    ap.add_argument("--connections", type=int, default=200, help="connections per side for setup time")
    ap.add_argument("--phase-timeout", type=float, default=300.0)
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]

    with tempfile.TemporaryDirectory(prefix="kavka-bench-security-") as tmp:
        cluster = LocalCluster(1, Path(tmp), secure=True)
        broker = cluster.brokers[0]
        plain_port = free_port()
        assert cluster.secure is not None and broker.mtls_port is not None
        # Both channels on one broker; no authorizer: only the channel differs.
        cluster.config.update({
            "listeners": f"SASL_SSL://127.0.0.1:{broker.port},SSL://127.0.0.1:{broker.mtls_port},"
                         f"PLAINTEXT://127.0.0.1:{plain_port}",
            "listener.security.protocol.map": "SASL_SSL:SASL_SSL,SSL:SSL,PLAINTEXT:PLAINTEXT",
            "authorizer.class.name": "", "num.partitions": "1", "auto.create.topics.enable": "false",
            "offsets.topic.num.partitions": "1"})
        cluster.start(progress=lambda m: say(f"kavka: {m}"))
        try:
            pid = broker.popen().pid
            secure = cluster.secure
            sides = [Side("PLAINTEXT", {"bootstrap.servers": f"127.0.0.1:{plain_port}"}),
                     Side("SASL_SSL", cluster.client_config())]
            results: dict[tuple[int, str, str], Run] = {}
            for size in sizes:
                n = args.records
                for rnd in range(args.repeat):
                    order = sides if rnd % 2 == 0 else list(reversed(sides))
                    for side in order:
                        topic = f"bench-{side.name.lower()}-{size}-{rnd}"
                        create_topic(side, topic)
                        say(f"{side.name}: {n} x {size} B, round {rnd + 1}")
                        p = produce(side, pid, topic, n, size, args.phase_timeout)
                        c = consume(side, pid, topic, n, size, args.phase_timeout)
                        for phase, run in (("produce", p), ("consume", c)):
                            best = results.get((size, phase, side.name))
                            if best is None or run.seconds < best.seconds:
                                results[(size, phase, side.name)] = run
                        delete_topic(side, topic)

            say(f"connection setup, {args.connections} per side")
            security = {
                "PLAINTEXT": ClientSecurity(),
                "SSL (mTLS)": client_security_from_properties(secure.mtls_properties(), "mtls"),
                "SASL_SSL": client_security_from_properties(secure.client_properties(), "client"),
            }
            ports = {"PLAINTEXT": plain_port, "SSL (mTLS)": broker.mtls_port, "SASL_SSL": broker.port}
            times = asyncio.run(setup_times("127.0.0.1", ports, security, args.connections))
            formatter = ScramFormatter(ScramMechanism.SCRAM_SHA_512)
            derive: list[float] = []
            for _ in range(50):
                t0 = time.perf_counter()
                formatter.salted_password("a-password", b"salt" * 4, 4096)
                derive.append((time.perf_counter() - t0) * 1000)
        finally:
            cluster.stop()

    print(f"\n## Throughput: SASL_SSL (TLS + SCRAM-SHA-512) vs PLAINTEXT, one broker, confluent-kafka, "
          f"{args.records:,} records, best of {args.repeat}\n")
    print("| size | phase | metric | PLAINTEXT | SASL_SSL | SASL_SSL/PLAINTEXT |")
    print("| --- | --- | --- | ---: | ---: | ---: |")
    for size in sizes:
        for phase in ("produce", "consume"):
            plain, sasl = results[(size, phase, "PLAINTEXT")], results[(size, phase, "SASL_SSL")]
            unit = "records/s" if size < 1000 else "MB/s"
            pv, sv = (plain.rate, sasl.rate) if size < 1000 else (plain.mb_s, sasl.mb_s)
            spec = ",.0f" if size < 1000 else ".1f"
            print(f"| {size} B | {phase} | {unit} | {pv:{spec}} | {sv:{spec}} | {sv / pv:.2f}x |")
            print(f"| | | broker CPU-s/100 MB | {plain.cpu_per_100mb:.3f} | {sasl.cpu_per_100mb:.3f} | "
                  f"{sasl.cpu_per_100mb / plain.cpu_per_100mb:.2f}x |")
    print(f"\n## Connection setup, Kavka's client, {args.connections} connections per side (ms)\n")
    print("| channel | p50 | p99 | max | p50 vs PLAINTEXT |")
    print("| --- | ---: | ---: | ---: | ---: |")
    ref = statistics.median(times["PLAINTEXT"])
    for name, samples in times.items():
        samples.sort()
        p50 = statistics.median(samples)
        print(f"| {name} | {p50:.2f} | {percentile(samples, 0.99):.2f} | {samples[-1]:.2f} | +{p50 - ref:.2f} |")
    derive.sort()
    print(f"| (SCRAM-SHA-512 key derivation alone, 4096 iterations) | {statistics.median(derive):.2f} | "
          f"{percentile(derive, 0.99):.2f} | {derive[-1]:.2f} | |")


if __name__ == "__main__":
    main()
