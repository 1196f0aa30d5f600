"""Helpers of the fault-matrix cluster tests (Kafka's replication system
tests; Jepsen's anomaly classes for a log: lost, unseen, duplicate and
inconsistent writes, non-monotonic or skipped offsets): a workload of one acks=all
producer and one live consumer run from threads while a fault is injected,
a pure checker of what was acknowledged against what was read, and the
per-batch fingerprint of every replica's segment files.

The workload writes unique values (``b"v%08d"``) round-robin over the
topic's partitions with confluent-kafka (librdkafka), acks=all and
``enable.idempotence`` as the caller asks (without it
the idempotent producer cannot be exercised: a retried batch may land
twice, which the checker counts as a duplicate and tolerates). A write that
failed is indeterminate (it may or may not be in the log); only
acknowledged writes are promised.

``check_history`` (with ``Record``, ``HistoryReport`` and ``BatchPrint``) is
the pure checker of ``kavka.testing.checker``, shared with the chaos runs
and tested there without a cluster.
Everything else is synchronous, called from the test's thread, and every
wait is bounded.
"""

from __future__ import annotations

import re
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from kavka.protocol.records.batch import iter_batches
from kavka.testing.checker import BatchPrint, Record
from kavka.testing.checker import check_history as check_history  # the fault-matrix tests import it from here
from kavka.tools.cluster import LocalCluster


class Workload:
    """An acks=all producer and an ``assign``-mode consumer on ``topic``,
    each in its own thread, from ``start()`` until ``stop()``. ``acked``,
    ``failed`` and ``live_reads`` are filled by the threads (appends only;
    read them after ``stop()``). The producer writes about one record per
    ``pace_s`` and is bounded by ``limit`` records."""

    def __init__(self, bootstrap: str, topic: str, partitions: int, *, pace_s: float = 0.003,
                 limit: int = 50_000, message_timeout_ms: int = 30_000, idempotent: bool = False,
                 client: Mapping[str, str] | None = None) -> None:
        from confluent_kafka import Consumer, Producer

        self.topic = topic
        self.partitions = partitions
        self.pace_s = pace_s
        self.limit = limit
        self.sent = 0
        self.acked: list[Record] = []
        self.failed: list[str] = []
        self.live_reads: list[Record] = []
        self.consumer_errors: list[str] = []
        self.unflushed = -1
        self._stop_producing = threading.Event()
        self._stop_consuming = threading.Event()
        # ``client``: librdkafka settings of both clients (a secured cluster's
        # LocalCluster.client_config()), the bootstrap servers included.
        base = {"bootstrap.servers": bootstrap, **(client or {})}
        self._producer = Producer({
            **base, "acks": "all", "enable.idempotence": idempotent,
            "linger.ms": 2, "batch.num.messages": 100, "max.in.flight.requests.per.connection": 1,
            "message.timeout.ms": message_timeout_ms, "retry.backoff.ms": 100,
            "topic.metadata.refresh.interval.ms": 1000})
        self._consumer = Consumer({
            **base, "group.id": f"{topic}-live", "enable.auto.commit": False,
            # An out-of-range answer must show up, not be papered over by a reset.
            "auto.offset.reset": "error", "fetch.wait.max.ms": 100,
            "topic.metadata.refresh.interval.ms": 1000})
        self._threads = [threading.Thread(target=self._produce, name=f"produce-{topic}", daemon=True),
                         threading.Thread(target=self._consume, name=f"consume-{topic}", daemon=True)]

    def _delivered(self, err, msg) -> None:
        if err is None:
            self.acked.append(Record(msg.partition(), msg.offset(), msg.value()))
        else:
            self.failed.append(f"{msg.partition()}:{msg.value()!r}: {err}")

    def _produce(self) -> None:
        while not self._stop_producing.is_set() and self.sent < self.limit:
            try:
                self._producer.produce(self.topic, b"v%08d" % self.sent, partition=self.sent % self.partitions,
                                       on_delivery=self._delivered)
                self.sent += 1
            except BufferError:
                pass
            self._producer.poll(self.pace_s)
        self.unflushed = self._producer.flush(45)

    def _consume(self) -> None:
        from confluent_kafka import TopicPartition

        self._consumer.assign([TopicPartition(self.topic, p, 0) for p in range(self.partitions)])
        try:
            while not self._stop_consuming.is_set():
                for m in self._consumer.consume(500, 0.2):
                    if m.error() is not None:
                        self.consumer_errors.append(str(m.error()))
                        continue
                    self.live_reads.append(Record(m.partition(), m.offset(), m.value()))
        finally:
            self._consumer.close()

    def acked_per_partition(self) -> dict[int, int]:
        return dict(Counter(r.partition for r in list(self.acked)))

    def _consumer_caught_up(self) -> bool:
        """The live consumer has read up to the highest acknowledged offset of every partition."""
        top: dict[int, int] = {}
        for r in list(self.acked):
            top[r.partition] = max(top.get(r.partition, -1), r.offset)
        read: dict[int, int] = {}
        for r in list(self.live_reads):
            read[r.partition] = max(read.get(r.partition, -1), r.offset)
        return all(read.get(p, -1) >= o for p, o in top.items())

    def start(self) -> Workload:
        for t in self._threads:
            t.start()
        return self

    def stop(self) -> None:
        """Stop producing, wait for every outstanding delivery report
        (bounded by the flush), give the consumer a moment (at most 2 s)
        to catch up with what was acknowledged, then stop it. How long each
        thread took to stop is printed; a thread that did not stop fails
        the case with its stack."""
        self._stop_producing.set()
        began = time.monotonic()
        self._threads[0].join(60)
        print(f"workload stop: producer thread joined in {time.monotonic() - began:.1f} s "
              f"({self.unflushed} unflushed)")
        deadline = time.monotonic() + 2.0
        while not self._consumer_caught_up() and time.monotonic() < deadline:
            time.sleep(0.05)
        self._stop_consuming.set()
        began = time.monotonic()
        # librdkafka's close may wait out a request to the group coordinator
        # (socket.timeout.ms, 60 s by default); anything longer is a hang.
        self._threads[1].join(65)
        print(f"workload stop: consumer thread joined in {time.monotonic() - began:.1f} s")
        stuck = [t for t in self._threads if t.is_alive()]
        assert not stuck, f"workload threads did not stop:\n{_stacks(stuck)}"


def _stacks(threads: list[threading.Thread]) -> str:
    """Where each of ``threads`` is (its Python stack), for a failure message."""
    import sys
    import traceback

    frames = sys._current_frames()
    return "\n".join(f"{t.name}:\n" + "".join(traceback.format_stack(frames[t.ident]))
                     for t in threads if t.ident in frames)


def drain(cluster: LocalCluster, topic: str, partitions: int, timeout: float = 60.0) -> list[Record]:
    """Every record of every partition, from offset 0 to the high watermark
    each partition has when the drain starts."""
    from confluent_kafka import Consumer, KafkaException, TopicPartition

    c = Consumer({**cluster.client_config(), "group.id": f"{topic}-drain",
                  "enable.auto.commit": False, "auto.offset.reset": "error", "fetch.wait.max.ms": 100})

    def high(p: int) -> int:
        # Right after a broker restart the client's metadata may not name the
        # partition yet ("Unknown partition"): ask again until it does.
        until = time.monotonic() + timeout
        while True:
            try:
                return int(c.get_watermark_offsets(TopicPartition(topic, p), timeout=15)[1])
            except KafkaException:
                if time.monotonic() > until:
                    raise
                time.sleep(0.5)

    try:
        highs = {p: high(p) for p in range(partitions)}
        c.assign([TopicPartition(topic, p, 0) for p in range(partitions) if highs[p] > 0])
        out: list[Record] = []
        next_offset = {p: 0 for p in range(partitions)}
        deadline = time.monotonic() + timeout
        while any(next_offset[p] < highs[p] for p in highs):
            assert time.monotonic() < deadline, f"drain of {topic}: at {next_offset} of {highs}"
            for m in c.consume(1000, 0.5):
                if m.error() is not None:
                    continue
                out.append(Record(m.partition(), m.offset(), m.value()))
                next_offset[m.partition()] = m.offset() + 1
        return out
    finally:
        c.close()


def replica_batches(cluster: LocalCluster, broker_id: int, topic: str, partition: int) -> list[BatchPrint]:
    """The batches of one replica, read from its segment files (a torn tail
    of a batch being appended is left out by ``iter_batches``)."""
    directory = Path(cluster.brokers[broker_id].directory) / "logs" / f"{topic}-{partition}"
    out: list[BatchPrint] = []
    for segment in sorted(directory.glob("*.log")):
        for _, h in iter_batches(segment.read_bytes()):
            out.append(BatchPrint(h.base_offset, h.base_offset + h.last_offset_delta, h.partition_leader_epoch, h.crc))
    return out


@dataclass
class ReplicaComparison:
    """Per partition, per broker: the replica's batches; ``identical`` when
    every replica of every partition holds the same list."""

    batches: dict[int, dict[int, list[BatchPrint]]] = field(default_factory=dict)

    @property
    def identical(self) -> bool:
        return all(len({tuple(b) for b in per_broker.values()}) == 1 for per_broker in self.batches.values())

    def describe(self) -> str:
        lines = []
        for p, per_broker in sorted(self.batches.items()):
            for b, batches in sorted(per_broker.items()):
                lines.append(f"p{p} broker {b}: {len(batches)} batches, last {batches[-1:]}")
        return "; ".join(lines)


def compare_replicas(cluster: LocalCluster, topic: str, replicas: dict[int, list[int]],
                     timeout: float = 30.0) -> ReplicaComparison:
    """Compare every replica of ``topic`` (partition -> assigned brokers),
    retrying until identical or ``timeout`` (a follower may be a fetch
    round behind); the last comparison."""
    deadline = time.monotonic() + timeout
    while True:
        result = ReplicaComparison({p: {b: replica_batches(cluster, b, topic, p) for b in brokers}
                                    for p, brokers in replicas.items()})
        if result.identical or time.monotonic() > deadline:
            return result
        time.sleep(0.3)


def grep_logs(cluster: LocalCluster, needle: str) -> dict[int, list[str]]:
    """Lines of each broker's broker.log and state-change.log (in its first
    log directory: the state-change logger writes only there, as Kafka's
    log4j.properties sends it) containing ``needle``."""
    out: dict[int, list[str]] = defaultdict(list)
    for b in cluster.brokers.values():
        for path in (b.log_path, b.directory / "logs" / "state-change.log"):
            try:
                text = path.read_text(errors="replace")
            except OSError:
                continue
            out[b.broker_id] += [ln for ln in text.splitlines() if needle in ln]
    return dict(out)


def create_topic(cluster: LocalCluster, topic: str, assignment: dict[int, list[int]],
                 config: dict[str, str] | None = None, timeout: float = 30.0) -> None:
    """CreateTopics with an explicit assignment (partition -> replicas, the
    first preferred) and topic overrides, through librdkafka's admin."""
    from confluent_kafka.admin import AdminClient, NewTopic

    client = AdminClient(cluster.client_config())
    new = NewTopic(topic, num_partitions=len(assignment), replica_assignment=[assignment[p] for p in sorted(assignment)], config=config or {})
    client.create_topics([new], request_timeout=timeout)[topic].result(timeout)


@contextmanager
def matrix_cluster(zk_connect: str, directory: Path, name: str, config: Mapping[str, str],
                   secure: bool = False) -> Iterator[LocalCluster]:
    """A 3-broker cluster for fault-matrix cases, in a ZooKeeper chroot of
    its own. Each case records what it checked in ``checked_topics``
    (topic -> assignment); at the end those topics' replicas are compared as
    the operator would (``kavka replica-verification``, fetching from each
    broker, over the cluster's own security as its admin) and, once every
    broker stopped cleanly (logs flushed and closed), once more from their
    final segment files; the chroot is then removed."""
    from kazoo.client import KazooClient

    chroot = f"/kavka-{name}-{uuid.uuid4().hex[:8]}"
    c = LocalCluster(3, directory, zookeeper=zk_connect + chroot, config=dict(config), secure=secure)
    c.start()
    c.checked_topics = {}
    try:
        yield c
        if c.checked_topics:
            topics = "|".join(re.escape(t) for t in c.checked_topics)
            command = [sys.executable, "-m", "kavka", "replica-verification", "--bootstrap-server", c.bootstrap,
                       "--topic-white-list", f"({topics})", "--time-limit-ms", "10000"]
            if c.secure is not None:
                command += ["--command-config", str(c.secure.admin_properties_path)]
            verify = subprocess.run(command, capture_output=True, text=True, timeout=120)
            print(verify.stdout[-2000:])
            assert verify.returncode == 0, f"kavka replica-verification:\n{verify.stdout}\n{verify.stderr}"
    finally:
        c.stop()
        differ = {t: r.describe() for t, a in c.checked_topics.items()
                  if not (r := compare_replicas(c, t, a, timeout=0)).identical}
        zk = KazooClient(hosts=zk_connect)
        zk.start(10)
        try:
            zk.delete(chroot, recursive=True)
        finally:
            zk.stop()
            zk.close()
        assert not differ, f"replicas differ after the clean stop: {differ}"
