"""What the metrics cost the produce path: a broker with ``metrics.port``
on (and scraped every second) against one with it off, in the same run.

Two one-broker clusters on one ZooKeeper (``LocalCluster``; the broker
with metrics on also times every request, which the one with metrics off
does not). Each round produces N records of 100 B with confluent-kafka
(acks=all, ``linger.ms=5``, ``batch.size=1000000``) to a fresh
1-partition topic on each side, the order flipping every round; while the
metrics side produces, a thread scrapes its ``/metrics`` every
``--scrape-interval`` seconds (1 s: fifteen times Prometheus' default
rate, so the scrapes' own cost on the loop is in the figure). Best of
``--repeat`` per side. Printed: records/s, the broker's CPU-seconds per
100 MB of values, the scrapes (count, mean time, body size), and
on/off for the best rates, the median rates and the median CPU. Goal:
on/off >= 0.97.

Run: ``.venv/bin/python bench/metrics.py [--records 1000000] [--repeat 3]
[--scrape-interval 1]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import time
import urllib.request
import uuid
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from confluent_kafka import Producer  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from kavka.tools.cluster import LocalCluster  # noqa: E402

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
START = time.monotonic()
VALUE_BYTES = 100


def say(msg: str) -> None:
    print(f"[{time.monotonic() - START:7.1f}s] {msg}", file=sys.stderr, flush=True)


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat", "rb") as f:
        fields = f.read().rsplit(b")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


@dataclass
class Scraper:
    """Scrapes ``url`` every ``interval`` seconds until stopped."""

    url: str
    interval: float
    times: list[float] = field(default_factory=list)
    sizes: list[int] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> None:
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(30)

    def _run(self) -> None:
        while not self._stop.is_set():
            t = time.perf_counter()
            with urllib.request.urlopen(self.url, timeout=30) as r:  # noqa: S310 - loopback
                self.sizes.append(len(r.read()))
            self.times.append(time.perf_counter() - t)
            self._stop.wait(self.interval)


@dataclass
class Side:
    name: str
    cluster: LocalCluster
    scraper: Scraper | None
    rates: list[float] = field(default_factory=list)
    cpu_per_100mb: list[float] = field(default_factory=list)

    @property
    def pid(self) -> int:
        return self.cluster.brokers[0].popen().pid


def create_topic(bootstrap: str, name: str, timeout: float = 30.0) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, 1, 1)], operation_timeout=timeout)[name].result(timeout)
    deadline = time.monotonic() + timeout
    while True:
        md = admin.list_topics(name, timeout=5).topics.get(name)
        if md is not None and md.error is None and all(p.leader >= 0 for p in md.partitions.values()):
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"topic {name} has no leader after {timeout:.0f} s")
        time.sleep(0.1)


def produce(side: Side, records: int, timeout: float) -> tuple[float, float]:
    """records/s and broker CPU-seconds of one produce of ``records``."""
    bootstrap = side.cluster.bootstrap
    topic = f"bench-{side.name}-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, topic)
    errors: list[str] = []

    def on_error(err, msg) -> None:
        if err is not None and len(errors) < 10:
            errors.append(str(err))

    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5, "batch.size": 1000000,
                  "delivery.report.only.error": True, "on_delivery": on_error})
    value = os.urandom(VALUE_BYTES)
    deadline = time.monotonic() + timeout
    if side.scraper is not None:
        side.scraper.start()
    try:
        cpu0 = cpu_seconds(side.pid)
        start = time.perf_counter()
        i = 0
        while i < records:
            try:
                p.produce(topic, value, partition=0)
                i += 1
            except BufferError:
                p.poll(0.001)
                if time.monotonic() > deadline:
                    raise RuntimeError(f"produce to {side.name} timed out after {i} records") from None
        left = p.flush(max(0.1, deadline - time.monotonic()))
        seconds = time.perf_counter() - start
        cpu = cpu_seconds(side.pid) - cpu0
    finally:
        if side.scraper is not None:
            side.scraper.stop()
    if left or errors:
        raise RuntimeError(f"produce to {side.name}: {left} undelivered, errors {errors}")
    admin = AdminClient({"bootstrap.servers": bootstrap})  # alive until the future settles
    admin.delete_topics([topic], operation_timeout=30)[topic].result(30)
    return records / seconds, cpu


def request_timing_cost_us(n: int = 200_000) -> float:
    """What the socket server adds per request with metrics on (the
    clock reads and ``ApiRequestMetrics.record``), measured here, in µs."""
    from kavka.metrics.request_metrics import RequestMetrics
    from kavka.protocol.messages import ProduceRequest

    metrics, body = RequestMetrics(), ProduceRequest()
    clock = time.monotonic_ns
    start = time.perf_counter()
    for _ in range(n):
        read = clock()
        begin = clock()
        api = metrics.of(0, body)
        end = clock()
        picked = clock()
        api.record(9, read, begin, end, 0, picked, clock())
    return (time.perf_counter() - start) / n * 1e6


def total_requests(url: str) -> float:
    """Requests the broker behind ``url`` answered, all types."""
    from prometheus_client.parser import text_string_to_metric_families

    with urllib.request.urlopen(url, timeout=30) as r:  # noqa: S310 - loopback
        text = r.read().decode()
    return sum(s.value for f in text_string_to_metric_families(text) for s in f.samples
               if s.name == "kafka_network_requestmetrics_requests_total")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=1_000_000, help="records of 100 B per produce (default 1M)")
    ap.add_argument("--repeat", type=int, default=3, help="rounds, best kept per side (default 3)")
    ap.add_argument("--scrape-interval", type=float, default=1.0, help="seconds between scrapes of the metrics side")
    ap.add_argument("--phase-timeout", type=float, default=300.0)
    args = ap.parse_args()

    on = LocalCluster(1, metrics=True)
    off: LocalCluster | None = None
    try:
        say("starting the broker with metrics on (and ZooKeeper)")
        on.start()
        assert on.zk_server is not None
        off = LocalCluster(1, zookeeper=on.zk_server.connect_string + "/kavka-metrics-off", metrics=False)
        say("starting the broker with metrics off")
        off.start()
        url = on.metrics_urls[0]
        sides = [Side("metrics-on", on, Scraper(url, args.scrape_interval)), Side("metrics-off", off, None)]
        say(f"warm-up: {args.records // 10:,} records each")
        for side in sides:
            produce(side, args.records // 10, args.phase_timeout)
        if sides[0].scraper is not None:
            sides[0].scraper.times.clear()
            sides[0].scraper.sizes.clear()
        for round_ in range(args.repeat):
            order = sides if round_ % 2 == 0 else sides[::-1]
            for side in order:
                rate, cpu = produce(side, args.records, args.phase_timeout)
                side.rates.append(rate)
                side.cpu_per_100mb.append(cpu / (args.records * VALUE_BYTES / 1e8))
                say(f"round {round_ + 1} {side.name}: {rate:,.0f} records/s, broker CPU {cpu:.2f} s")
        print(f"\nproduce {args.records:,} x {VALUE_BYTES} B, acks=all, 1 partition, best of {args.repeat} "
              f"(sides alternating)")
        print(f"{'side':<12} {'records/s':>12} {'MB/s':>8} {'CPU s/100MB':>12}")
        best = {}
        for side in sides:
            i = max(range(len(side.rates)), key=side.rates.__getitem__)
            best[side.name] = side.rates[i]
            print(f"{side.name:<12} {side.rates[i]:>12,.0f} {side.rates[i] * VALUE_BYTES / 1e6:>8.1f} "
                  f"{side.cpu_per_100mb[i]:>12.2f}")
        scraper = sides[0].scraper
        if scraper is not None and scraper.times:
            print(f"scrapes of the metrics side while producing: {len(scraper.times)}, "
                  f"mean {statistics.mean(scraper.times) * 1000:.1f} ms, max {max(scraper.times) * 1000:.1f} ms, "
                  f"{statistics.mean(scraper.sizes) / 1024:.0f} KiB each")
        per_request_us = request_timing_cost_us()
        requests = total_requests(url)
        cpu_on = sum(sides[0].cpu_per_100mb) / len(sides[0].cpu_per_100mb) * (args.records * VALUE_BYTES / 1e8)
        rounds = args.repeat + 1  # the warm-up's requests are counted too
        print(f"request timing in this process: {per_request_us:.2f} us per request; the metrics broker answered "
              f"{requests:,.0f} requests over {rounds} produces ({requests / rounds:,.0f} each): "
              f"{requests / rounds * per_request_us / 1e6 / cpu_on * 100:.2f} % of its CPU per produce")
        ratio = best["metrics-on"] / best["metrics-off"]
        print(f"metrics on / off: {ratio:.3f}x (goal >= 0.97x)")
        cpu = {s.name: statistics.median(s.cpu_per_100mb) for s in sides}
        print(f"broker CPU per 100 MB (medians): on {cpu['metrics-on']:.2f} s, off {cpu['metrics-off']:.2f} s, "
              f"{cpu['metrics-on'] / cpu['metrics-off']:.3f}x")
        medians = {s.name: statistics.median(s.rates) for s in sides}
        print(f"(medians: on {medians['metrics-on']:,.0f}, off {medians['metrics-off']:,.0f}, "
              f"{medians['metrics-on'] / medians['metrics-off']:.3f}x)")
    finally:
        if off is not None:
            off.cleanup()
        on.cleanup()


if __name__ == "__main__":
    main()
