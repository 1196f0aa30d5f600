"""Replication benchmark: acks=all on a replicated partition (RF=3) against
an unreplicated one (RF=1), on one 3-broker Kavka cluster, with confluent-kafka.

Everything is measured in one run on this machine and printed as figures
and RF=3 / RF=1 ratios. The failover timings of 10,000 partitions (broker
and controller failover) are ``bench/failover.py``. Sections
(``--sections``, all by default):

* ``throughput``: N records of each size produced with acks=all and the
  client settings of ``bench/broker.py`` (``linger.ms=5``,
  ``batch.size=1000000``; its ``produce`` is reused) to a topic with one
  partition and three replicas (ISR of three: every batch is acknowledged
  once both followers fetched it) and to a topic with one partition and
  one replica, both led by the same broker. Records/s and MB/s from the
  first ``produce()`` to the end of ``flush()``, the leader's CPU and the
  whole cluster's CPU (all three broker processes) per 100 MB of values.
  Goal on the project's 2-core machine: RF=3 >= 0.5x RF=1.
* ``latency``: single-record produce, acks=all, one in flight (bench/broker.py's
  ``latency``): p50/p99/max on each topic — the follower round trip that
  RF=3 adds.
* ``catch-up``: a follower of a fresh RF=3 topic is stopped, the leader
  takes a backlog (``--catch-up-mb``), the follower is started again and
  the time from its first copied byte until its log holds the backlog is
  measured without a throttle
  and then (a second backlog) with ``leader.replication.throttled.rate`` set
  to ``--throttle-rate`` on the leader for that topic (seed 002 §8); the
  reference is the configured rate (the throttled figure exceeds it by the
  quota's one second of burst spread over the run). Also the seconds from
  the follower's process start until it holds the backlog.

RF=1 and RF=3 alternate case by case so that load from other processes
hits both alike; with ``--repeat N`` every case runs N times and the best
figure is kept (a shared 2-core machine swings by 2x between runs). The
three brokers, the client and ZooKeeper all share the machine's cores, so
RF=3 pays for two more processes doing the followers' work.

Every loop is bounded by a count and by ``--phase-timeout``. A section is
one function taking the running ``Bench`` and reporting through
``Bench.record``, listed in ``SECTIONS``.

Run: ``.venv/bin/python bench/replication.py [--records 200000] [--sizes 100,1000]
[--repeat 2] [--sections throughput,latency,catch-up]``.
"""

from __future__ import annotations

import argparse
import shutil
import signal
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from confluent_kafka import Producer
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
    ResourceType,
)

# bench/broker.py's loads and helpers (this script's directory is on sys.path)
from broker import BrokerUnderTest, cpu_seconds, fmt, latency, produce, say
from kavka.tools.cluster import LocalCluster

BROKERS = 3
LEADER = 0  # every topic here is led by broker 0 (the first replica of its assignment)


@dataclass
class Bench:
    """The running cluster, the parsed arguments and the figures so far."""

    cluster: LocalCluster
    args: argparse.Namespace
    runs: dict[tuple[str, str, str], list[float]] = field(default_factory=dict)  # (case, metric, topic) -> values

    def record(self, case: str, metric: str, column: str, value: float) -> None:
        self.runs.setdefault((case, metric, column), []).append(value)

    def leader(self) -> BrokerUnderTest:
        b = self.cluster.brokers[LEADER]
        return BrokerUnderTest(f"broker {LEADER}", self.cluster.bootstrap, b.process.pid, lambda: None, b.log_tail)

    def cluster_cpu(self) -> float:
        return sum(cpu_seconds(b.process.pid) for b in self.cluster.brokers.values() if b.running())

    def admin(self) -> AdminClient:
        return AdminClient({"bootstrap.servers": self.cluster.bootstrap})

    def create_topic(self, rf: int, timeout: float = 30.0) -> str:
        """A one-partition topic on brokers 0..rf-1 led by broker 0, once its
        ISR holds every replica."""
        name = f"bench-rf{rf}-{uuid.uuid4().hex[:8]}"
        topic = NewTopic(name, num_partitions=1, replica_assignment=[list(range(rf))])
        admin = self.admin()  # alive until the future settles
        admin.create_topics([topic], operation_timeout=timeout)[name].result(timeout)
        self.wait_isr(name, rf, timeout)
        return name

    def wait_isr(self, topic: str, size: int, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while True:
            md = self.admin().list_topics(topic, timeout=5).topics.get(topic)
            p = md.partitions.get(0) if md is not None and md.error is None else None
            if p is not None and p.leader == LEADER and len(p.isrs) == size:
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"{topic}: no ISR of {size} led by broker {LEADER} after {timeout:.0f} s")
            time.sleep(0.1)

    def delete_topic(self, topic: str, timeout: float = 30.0) -> None:
        try:
            admin = self.admin()
            admin.delete_topics([topic], operation_timeout=timeout)[topic].result(timeout)
        except Exception as e:  # a leftover topic only costs disk until the cluster stops
            say(f"could not delete {topic}: {e}")


# ---- sections ---------------------------------------------------------------------------------
def section_throughput(bench: Bench) -> None:
    args = bench.args
    for size in (int(s) for s in args.sizes.split(",")):
        case = f"produce {size} B"
        for rf in (1, 3):
            for _ in range(args.repeat):
                topic = bench.create_topic(rf)
                say(f"RF={rf}: produce {args.records} x {size} B, acks=all")
                cpu0 = bench.cluster_cpu()
                r = produce(bench.leader(), topic, 1, args.records, size, args.phase_timeout)
                total_cpu = bench.cluster_cpu() - cpu0
                say(f"RF={rf}: {r.rate:,.0f} records/s, {r.mb_s:.1f} MB/s, leader {r.broker_cpu:.2f} CPU-s, "
                    f"cluster {total_cpu:.2f} CPU-s")
                column = f"RF={rf}"
                bench.record(case, "records/s", column, r.rate)
                bench.record(case, "MB/s", column, r.mb_s)
                bench.record(case, "leader CPU-s/100MB", column, r.cpu_per_100mb)
                bench.record(case, "cluster CPU-s/100MB", column, total_cpu / (r.value_bytes / 1e8))
                bench.delete_topic(topic)


def section_latency(bench: Bench) -> None:
    args = bench.args
    if args.latency_sends < 1:
        return
    topics = {rf: bench.create_topic(rf) for rf in (1, 3)}
    for _ in range(args.repeat):
        for rf, topic in topics.items():
            p50, p99, worst, cpu_us = latency(bench.leader(), topic, args.latency_sends, args.phase_timeout)
            say(f"RF={rf}: acks=all latency p50 {p50:.2f} ms, p99 {p99:.2f} ms, max {worst:.2f} ms")
            for metric, value in (("p50 ms", p50), ("p99 ms", p99), ("max ms", worst),
                                  ("leader CPU µs/send", cpu_us)):
                bench.record("latency 100 B", metric, f"RF={rf}", value)
    for topic in topics.values():
        bench.delete_topic(topic)


def _set_config(bench: Bench, resource: ConfigResource) -> None:
    admin = bench.admin()
    for future in admin.incremental_alter_configs([resource], request_timeout=30).values():
        future.result(30)


def _follower_bytes(bench: Bench, broker_id: int, topic: str) -> int:
    directory = Path(bench.cluster.brokers[broker_id].directory) / "logs" / f"{topic}-0"
    return sum(p.stat().st_size for p in directory.glob("*.log")) if directory.exists() else 0


def _catch_up_once(bench: Bench, topic: str, follower: int, throttled: bool) -> tuple[int, float, float]:
    """Stop ``follower``, give the leader a backlog, start the follower;
    (backlog bytes, seconds from its first copied byte until its log holds
    them, seconds from its process start until then)."""
    args = bench.args
    cluster = bench.cluster
    cluster.stop_broker(follower)
    before = _follower_bytes(bench, LEADER, topic)
    records = max(1, args.catch_up_mb * 1_000_000 // 10_000)
    p = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "1", "linger.ms": 5, "batch.size": 65536})
    deadline = time.monotonic() + args.phase_timeout
    value = b"x" * 10_000
    i = 0
    while i < records:
        try:
            p.produce(topic, value, partition=0)
            i += 1
        except BufferError:
            p.poll(0.01)
            if time.monotonic() > deadline:
                raise RuntimeError("producing the catch-up backlog timed out") from None
    if p.flush(max(0.1, deadline - time.monotonic())):
        raise RuntimeError("producing the catch-up backlog timed out")
    target = _follower_bytes(bench, LEADER, topic)
    rate = ResourceType.BROKER, str(LEADER)
    if throttled:
        _set_config(bench, ConfigResource(*rate, incremental_configs=[ConfigEntry(
            "leader.replication.throttled.rate", str(args.throttle_rate), incremental_operation=AlterConfigOpType.SET)]))
    had = _follower_bytes(bench, follower, topic)
    launched = time.monotonic()
    cluster.start_broker(follower)
    deadline = launched + args.phase_timeout
    start = None  # from the last sample before the follower's first copied byte: start-up is not replication
    sampled = launched
    while (copied := _follower_bytes(bench, follower, topic)) < target:
        now = time.monotonic()
        if start is None and copied > had:
            start = sampled
        if now > deadline:
            raise RuntimeError(f"the follower did not catch up within {args.phase_timeout:.0f} s")
        sampled = now
        time.sleep(0.002)  # fine-grained: an unthrottled follower copies tens of MB in a fraction of a second
    done = time.monotonic()
    seconds = done - (start if start is not None else sampled)
    if throttled:
        _set_config(bench, ConfigResource(*rate, incremental_configs=[ConfigEntry(
            "leader.replication.throttled.rate", "", incremental_operation=AlterConfigOpType.DELETE)]))
    return target - before, seconds, done - launched


def section_catch_up(bench: Bench) -> None:
    topic = bench.create_topic(3)
    follower = 2
    _set_config(bench, ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[ConfigEntry(
        "leader.replication.throttled.replicas", f"0:{LEADER}", incremental_operation=AlterConfigOpType.SET)]))
    for throttled in (False, True):
        nbytes, seconds, with_start = _catch_up_once(bench, topic, follower, throttled)
        column = "throttled" if throttled else "unthrottled"
        say(f"catch-up {column}: {nbytes / 1e6:.1f} MB in {seconds:.2f} s ({nbytes / seconds / 1e6:.2f} MB/s), "
            f"{with_start:.2f} s from the follower's process start")
        bench.record("follower catch-up", "MB/s", column, nbytes / seconds / 1e6)
        bench.record("follower catch-up", "s from its start", column, with_start)
        bench.wait_isr(topic, 3, bench.args.phase_timeout)
    bench.record("follower catch-up", "MB/s", "configured rate", bench.args.throttle_rate / 1e6)
    bench.delete_topic(topic)


SECTIONS: dict[str, Callable[[Bench], None]] = {
    "throughput": section_throughput,
    "latency": section_latency,
    "catch-up": section_catch_up,
}
# Higher is better for these metrics; for the others (CPU, latency) lower is.
HIGHER_IS_BETTER = ("records/s", "MB/s")


# ---- report -----------------------------------------------------------------------------------
def report(bench: Bench) -> None:
    print(f"\nKavka replication benchmark: {BROKERS} brokers, best of {bench.args.repeat}\n")
    cases: dict[str, dict[str, dict[str, float]]] = {}
    for (case, metric, column), values in bench.runs.items():
        best = max(values) if metric.startswith(HIGHER_IS_BETTER) else min(values)
        cases.setdefault(case, {}).setdefault(metric, {})[column] = best
    for case, metrics in cases.items():
        columns = sorted({c for m in metrics.values() for c in m})
        print(f"{case:<22}" + "".join(f"{c:>16}" for c in columns) + ("    RF=3/RF=1" if "RF=1" in columns else ""))
        for metric, by_column in metrics.items():
            line = f"  {metric:<20}" + "".join(f"{fmt(by_column.get(c), '16,.2f')}" for c in columns)
            one, three = by_column.get("RF=1"), by_column.get("RF=3")
            if one and three:
                line += f"    {three / one:6.2f}x"
            print(line)
        throughput = metrics.get("records/s", {})
        if throughput.get("RF=1") and throughput.get("RF=3"):
            r = throughput["RF=3"] / throughput["RF=1"]
            print(f"  goal RF=3 acks=all >= 0.5x RF=1: {r:.2f}x {'met' if r >= 0.5 else 'NOT met'}")
        print()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__.split("\n\n", 1)[1])
    parser.add_argument("--records", type=int, default=200_000, help="records per throughput case")
    parser.add_argument("--sizes", default="100,1000", help="record value sizes in bytes, comma-separated")
    parser.add_argument("--latency-sends", type=int, default=1000, help="single-record sends per topic (0: skip)")
    parser.add_argument("--repeat", type=int, default=2, help="runs of every case; the best of each is reported")
    parser.add_argument("--sections", default=",".join(SECTIONS), help=f"comma-separated, of {', '.join(SECTIONS)}")
    parser.add_argument("--catch-up-mb", type=int, default=20, help="backlog of each catch-up run, MB")
    parser.add_argument("--throttle-rate", type=int, default=2_000_000,
                        help="leader.replication.throttled.rate of the throttled catch-up, bytes/s")
    parser.add_argument("--phase-timeout", type=float, default=300.0, help="deadline of each phase, seconds")
    parser.add_argument("--dir", default=None, help="parent of the temporary data directory")
    args = parser.parse_args()
    sections = [s.strip() for s in args.sections.split(",") if s.strip()]
    unknown = [s for s in sections if s not in SECTIONS]
    if unknown:
        parser.error(f"unknown section(s) {', '.join(unknown)}; choose from {', '.join(SECTIONS)}")
    if args.repeat < 1 or args.records < 1 or args.catch_up_mb < 1 or args.throttle_rate < 1 \
            or any(int(s) < 1 for s in args.sizes.split(",")):
        parser.error("--records, --sizes, --repeat, --catch-up-mb and --throttle-rate must be positive")

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # unwind: the brokers are stopped
    root = Path(tempfile.mkdtemp(prefix="kavka-bench-replication-", dir=args.dir))
    cluster = LocalCluster(brokers=BROKERS, data_dir=root, config={
        "auto.create.topics.enable": "false", "auto.leader.rebalance.enable": "false"})
    try:
        cluster.start(timeout=90, progress=lambda m: say(f"kavka: {m}"))
        bench = Bench(cluster, args)
        for name in sections:
            say(f"== {name}")
            SECTIONS[name](bench)
        report(bench)
    finally:
        cluster.stop()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
