"""``python -m kavka.tools.demo``: Kavka end to end with a real Kafka
client, in well under a minute (``make demo`` runs the bigger flights
pipeline on Spark: ``pipelines/flights_demo.py``).

Steps, each announced on stdout as it starts:
1. start a local cluster (``LocalCluster``: a standalone ZooKeeper and
   ``--brokers`` broker processes) in a temporary directory;
2. create topic ``demo`` (``--partitions``, ``--replication-factor``) with
   Kavka's admin client and wait until every partition has a leader;
3. produce ``--records`` keyed records of ``--record-bytes`` with
   confluent-kafka (librdkafka), acks=all, collecting every delivery report;
4. consume them back with confluent-kafka (``assign`` from offset 0 of
   every partition) and check that each record arrived exactly once, on the
   partition and at the offset its delivery report named, with its value;
5. print the summary: records, bytes, throughput both ways, the topic as
   ``kavka topics --describe`` prints it, the controller and its epoch;
6. stop the brokers (SIGTERM: clean shutdown, exit code 0 required) and
   ZooKeeper, and remove the directory.

Exit code 0 when every step passed; otherwise the failure and the last
lines of every broker's log are printed and the exit code is 1.

The topic is replicated on all three brokers (RF 3, acks=all): every
acknowledged record is on every in-sync replica before it is confirmed.

Runs as a program on the main thread; the admin client runs on short-lived
event loops, confluent-kafka on its own threads.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from dataclasses import dataclass, field

from kavka.client.admin import KafkaAdmin
from kavka.client.admin_types import NewTopic
from kavka.client.cluster import Cluster
from kavka.tools.cluster import LocalCluster
from kavka.tools.topics import describe_lines, metadata_with_ids

TOPIC = "demo"
PRODUCE_TIMEOUT_S = 30
CONSUME_TIMEOUT_S = 30


class DemoFailed(RuntimeError):
    """A step of the demo failed; the message says which and why."""


@dataclass
class Report:
    """What the steps measured, for the summary."""

    produced: int = 0
    produce_seconds: float = 0.0
    consumed: int = 0
    consume_seconds: float = 0.0
    bytes_out: int = 0
    per_partition: dict[int, int] = field(default_factory=dict)
    describe: list[str] = field(default_factory=list)
    controller: tuple[int, int] | None = None


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m kavka.tools.demo", description=__doc__.split("\n\n")[0])
    p.add_argument("--brokers", type=int, default=3, help="broker processes (default 3)")
    p.add_argument("--partitions", type=int, default=6, help="partitions of topic 'demo' (default 6)")
    p.add_argument("--replication-factor", type=int, default=3, help="replicas per partition (default 3)")
    p.add_argument("--records", type=int, default=200_000, help="records to produce and consume (default 200000)")
    p.add_argument("--record-bytes", type=int, default=100, help="value size in bytes (default 100)")
    return p


class Demo:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.t0 = time.monotonic()
        self.report = Report()
        self.cluster: LocalCluster | None = None

    @property
    def local(self) -> LocalCluster:
        """The local cluster, once ``run`` has started it."""
        if self.cluster is None:
            raise DemoFailed("the local cluster is not started")
        return self.cluster

    def say(self, msg: str) -> None:
        print(f"[{time.monotonic() - self.t0:5.1f}s] {msg}", flush=True)

    def run(self) -> int:
        try:
            try:
                import confluent_kafka  # noqa: F401 - checked first: the demo's real client
            except ImportError:
                raise DemoFailed("confluent-kafka is not installed; run `make venv` (it installs .[dev])") from None
            self.cluster = LocalCluster(self.args.brokers)
            self.say(f"starting a local cluster of {self.args.brokers} brokers in {self.cluster.data_dir}")
            self.cluster.start(progress=self.say)
            self.say(f"cluster ready, bootstrap {self.cluster.bootstrap}")
            asyncio.run(self.create_topic())
            expected = self.produce()
            self.consume(expected)
            asyncio.run(self.describe())
            self.report.controller = self.cluster.controller()
            self.stop()
        except Exception as e:  # any failure: say what, show the brokers' logs, exit 1
            print(f"\nDEMO FAILED: {e}", file=sys.stderr, flush=True)
            self.print_logs()
            if self.cluster is not None:
                self.cluster.cleanup()
            return 1
        except KeyboardInterrupt:
            print("\ninterrupted; stopping the cluster", file=sys.stderr, flush=True)
            if self.cluster is not None:
                self.cluster.cleanup()
            return 130
        self.summary()
        return 0

    async def create_topic(self) -> None:
        a = self.args
        self.say(f"creating topic '{TOPIC}': {a.partitions} partitions, replication factor {a.replication_factor}")
        async with Cluster(self.local.bootstrap, client_id="kavka-demo") as cluster:
            await KafkaAdmin(cluster).create_topics([NewTopic(TOPIC, a.partitions, a.replication_factor)])

            async def leaders() -> None:
                md = await cluster.refresh_metadata([TOPIC])
                parts = md.partitions_of(TOPIC)
                if len(parts) != a.partitions or any(p.leader < 0 for p in parts):
                    raise DemoFailed(f"topic '{TOPIC}' does not have a leader for every partition yet")
            deadline = time.monotonic() + 30
            while True:  # bounded by the deadline
                try:
                    await leaders()
                    break
                except DemoFailed:
                    if time.monotonic() > deadline:
                        raise
                    await asyncio.sleep(0.1)
        self.say("every partition has a leader")

    def produce(self) -> dict[bytes, tuple[int, int, bytes]]:
        """Produce; returns key -> (partition, offset, value) from the
        delivery reports."""
        from confluent_kafka import Producer

        n, size = self.args.records, self.args.record_bytes
        self.say(f"producing {n} records of {size} B with confluent-kafka {_ck_version()} (acks=all)")
        producer = Producer({"bootstrap.servers": self.local.bootstrap, "acks": "all", "linger.ms": 5,
                             "batch.size": 1_000_000, "queue.buffering.max.messages": max(n, 100_000),
                             "message.timeout.ms": PRODUCE_TIMEOUT_S * 1000})
        delivered: dict[bytes, tuple[int, int, bytes]] = {}
        errors: list[str] = []

        def on_delivery(err, msg) -> None:
            if err is not None:
                errors.append(str(err))
            else:
                delivered[msg.key()] = (msg.partition(), msg.offset(), msg.value())

        start = time.monotonic()
        filler = b"x" * size
        for i in range(n):
            key = b"key-%d" % i
            value = (b"%d:" % i + filler)[:size] if size else b""
            while True:  # BufferError only while the local queue is full; poll drains it
                try:
                    producer.produce(TOPIC, value=value, key=key, on_delivery=on_delivery)
                    break
                except BufferError:
                    producer.poll(0.05)
            if i % 10_000 == 0:
                producer.poll(0)
        left = producer.flush(PRODUCE_TIMEOUT_S)
        self.report.produce_seconds = time.monotonic() - start
        if errors or left:
            raise DemoFailed(f"{len(errors)} records failed ({errors[:3]}) and {left} were still unacknowledged "
                             f"after {PRODUCE_TIMEOUT_S} s")
        if len(delivered) != n:
            raise DemoFailed(f"{n} records produced but {len(delivered)} delivery reports")
        self.report.produced = n
        self.report.bytes_out = sum(len(k) + len(v) for k, (_, _, v) in delivered.items())
        self.say(f"produced {n} records in {self.report.produce_seconds:.2f} s")
        return delivered

    def consume(self, expected: dict[bytes, tuple[int, int, bytes]]) -> None:
        from confluent_kafka import Consumer, TopicPartition

        n = len(expected)
        self.say(f"consuming them back with confluent-kafka (assign, from offset 0 of {self.args.partitions} partitions)")
        consumer = Consumer({"bootstrap.servers": self.local.bootstrap, "group.id": "kavka-demo",
                             "enable.auto.commit": False, "enable.partition.eof": False})
        consumer.assign([TopicPartition(TOPIC, p, 0) for p in range(self.args.partitions)])
        seen: set[bytes] = set()
        per_partition: dict[int, int] = {}
        start = time.monotonic()
        try:
            while len(seen) < n:  # bounded by the deadline below
                if time.monotonic() - start > CONSUME_TIMEOUT_S:
                    raise DemoFailed(f"consumed {len(seen)} of {n} records in {CONSUME_TIMEOUT_S} s")
                for msg in consumer.consume(10_000, 0.5):
                    if msg.error() is not None:
                        raise DemoFailed(f"consumer error: {msg.error()}")
                    key, partition = msg.key(), msg.partition()
                    want = expected.get(key) if key is not None else None
                    got = (partition, msg.offset(), msg.value())
                    if key is None or partition is None or want is None or want != got:
                        raise DemoFailed(f"record {key!r} came back as partition/offset {got[:2]}; "
                                         f"the producer was told {want[:2] if want else 'nothing'}")
                    if key in seen:
                        raise DemoFailed(f"record {key!r} was consumed twice")
                    seen.add(key)
                    per_partition[partition] = per_partition.get(partition, 0) + 1
        finally:
            consumer.close()
        self.report.consume_seconds = time.monotonic() - start
        self.report.consumed = len(seen)
        self.report.per_partition = dict(sorted(per_partition.items()))
        self.say(f"consumed {len(seen)} records in {self.report.consume_seconds:.2f} s; every one matched")

    async def describe(self) -> None:
        async with Cluster(self.local.bootstrap, client_id="kavka-demo") as cluster:
            md, ids = await metadata_with_ids(cluster, [TOPIC], 30_000)
            self.report.describe = await describe_lines(KafkaAdmin(cluster), md, ids, [TOPIC])

    def stop(self) -> None:
        self.say("stopping the brokers (SIGTERM, clean shutdown) and ZooKeeper")
        signalled = [b.broker_id for b in self.local.brokers.values() if b.running()]
        for bid in signalled:
            self.local.brokers[bid].popen().terminate()
        codes = {bid: self.local.stop_broker(bid, sig=None) for bid in self.local.brokers}
        bad = {bid: c for bid, c in codes.items() if c != 0}
        if bad:
            raise DemoFailed(f"brokers did not shut down cleanly (exit codes {bad})")
        self.local.cleanup()
        self.say("stopped")

    def summary(self) -> None:
        r = self.report
        mb = r.bytes_out / 1e6
        per = ", ".join(f"p{p}: {c}" for p, c in r.per_partition.items())
        controller = f"broker {r.controller[0]} (epoch {r.controller[1]})" if r.controller else "unknown"
        print("\n== Kavka demo summary ==")
        print(f"records produced:   {r.produced} ({mb:.1f} MB of keys and values)")
        print(f"produce:            {r.produce_seconds:.2f} s, {r.produced / r.produce_seconds:,.0f} records/s, "
              f"{mb / r.produce_seconds:.1f} MB/s (confluent-kafka, acks=all)")
        print(f"records consumed:   {r.consumed} (all matched: partition, offset, value)")
        print(f"consume:            {r.consume_seconds:.2f} s, {r.consumed / r.consume_seconds:,.0f} records/s, "
              f"{mb / r.consume_seconds:.1f} MB/s")
        print(f"records/partition:  {per}")
        print(f"controller:         {controller}")
        print("topic (kavka topics --describe):")
        for line in r.describe:
            print(f"  {line}")
        print(f"total time:         {time.monotonic() - self.t0:.1f} s")
        print("DEMO OK")

    def print_logs(self) -> None:
        if self.cluster is None:
            return
        for b in self.cluster.brokers.values():
            print(f"--- last lines of broker {b.broker_id}'s log ({b.log_path}) ---\n{b.log_tail(20)}", file=sys.stderr)


def _ck_version() -> str:
    import confluent_kafka
    return f"{confluent_kafka.__version__} (librdkafka {confluent_kafka.libversion()[0]})"


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    for name in ("brokers", "partitions", "replication_factor", "records"):
        if getattr(args, name) < 1:
            print(f"--{name.replace('_', '-')} must be at least 1", file=sys.stderr)
            return 2
    if args.record_bytes < 0:
        print("--record-bytes must not be negative", file=sys.stderr)
        return 2
    return Demo(args).run()


if __name__ == "__main__":
    sys.exit(main())
