"""Helpers for the fault tests in tests/cluster: read ZooKeeper as an
operator would (``/controller``, ``/brokers/ids/<id>``, partition state),
drive a cluster with confluent-kafka (librdkafka: a real client, not ours),
and wait for conditions with a bound.

Every wait takes a timeout and fails with what it was waiting for; nothing
here loops without one. Synchronous: called from the test's thread.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TypeVar

from kazoo.client import KazooClient

from kavka.tools.cluster import LocalCluster

T = TypeVar("T")


def wait_until(probe: Callable[[], T], timeout: float, what: str, interval: float = 0.1) -> T:
    """Call ``probe`` until it returns something truthy; return that."""
    deadline = time.monotonic() + timeout
    last_error: Exception | None = None
    while True:
        try:
            value = probe()
            if value:
                return value
        except Exception as e:  # noqa: BLE001 - a probe may fail while the cluster moves
            last_error = e
        if time.monotonic() > deadline:
            hint = f" (last probe error: {last_error!r})" if last_error else ""
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}{hint}")
        time.sleep(interval)


@dataclass(frozen=True, slots=True)
class PartitionState:
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    controller_epoch: int


class ZkView:
    """A kazoo session on the cluster's chroot, for reading znodes."""

    def __init__(self, cluster: LocalCluster) -> None:
        self.client = KazooClient(hosts=cluster.zk_connect)
        self.client.start(15)

    def close(self) -> None:
        self.client.stop()
        self.client.close()

    def __enter__(self) -> ZkView:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def controller(self) -> tuple[int, int] | None:
        """(broker id in /controller, /controller_epoch)."""
        if not self.client.exists("/controller"):
            return None
        data, _ = self.client.get("/controller")
        epoch, _ = self.client.get("/controller_epoch")
        return int(json.loads(data)["brokerid"]), int(epoch)

    def broker_ids(self) -> set[int]:
        return {int(c) for c in self.client.get_children("/brokers/ids")}

    def broker_registration(self, broker_id: int) -> tuple[int, int] | None:
        """(czxid = broker epoch, ephemeral owner session) of /brokers/ids/<id>."""
        stat = self.client.exists(f"/brokers/ids/{broker_id}")
        return None if stat is None else (stat.czxid, stat.ephemeralOwner)

    def partition_state(self, topic: str, partition: int) -> PartitionState | None:
        path = f"/brokers/topics/{topic}/partitions/{partition}/state"
        if not self.client.exists(path):
            return None
        data, _ = self.client.get(path)
        d = json.loads(data)
        return PartitionState(d["leader"], d["leader_epoch"], tuple(d["isr"]), d["controller_epoch"])

    def topic_exists(self, topic: str) -> bool:
        return self.client.exists(f"/brokers/topics/{topic}") is not None


# -- confluent-kafka ------------------------------------------------------------------

def admin(cluster: LocalCluster):
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": cluster.bootstrap, "socket.timeout.ms": 10000})


def create_topic(cluster: LocalCluster, name: str, *, partitions: int = 1, replication_factor: int = 1,
                 assignment: list[list[int]] | None = None, timeout: float = 20.0) -> None:
    """CreateTopics through librdkafka's AdminClient; raises on any error."""
    from confluent_kafka.admin import NewTopic

    if assignment is not None:
        topic = NewTopic(name, num_partitions=len(assignment), replica_assignment=assignment)
    else:
        topic = NewTopic(name, partitions, replication_factor)
    client = admin(cluster)  # keep the handle alive until the future settles
    client.create_topics([topic], operation_timeout=timeout, request_timeout=timeout)[name].result(timeout)


def delete_topic(cluster: LocalCluster, name: str, timeout: float = 20.0) -> None:
    client = admin(cluster)
    client.delete_topics([name], operation_timeout=timeout, request_timeout=timeout)[name].result(timeout)


def leaders(cluster: LocalCluster, topic: str, timeout: float = 10.0) -> dict[int, int]:
    """partition -> leader id as a client's Metadata request sees it."""
    md = admin(cluster).list_topics(topic, timeout=timeout)
    t = md.topics[topic]
    if t.error is not None:
        raise AssertionError(f"metadata of {topic}: {t.error}")
    return {p.id: p.leader for p in t.partitions.values()}


def produce(cluster: LocalCluster, topic: str, values_by_partition: dict[int, list[bytes]],
            timeout: float = 20.0, acks: str = "all", idempotent: bool = False) -> None:
    """Produce every value to its partition; fail unless every one is
    acknowledged. Without ``idempotent`` librdkafka may write a retried
    value twice (legal for a plain producer): tests that count values
    exactly ask for an idempotent one."""
    from confluent_kafka import Producer

    errors: list[str] = []
    acked = 0

    def on_delivery(err, msg) -> None:
        nonlocal acked
        if err is not None:
            errors.append(f"{msg.topic()}[{msg.partition()}]: {err}")
        else:
            acked += 1

    p = Producer({"bootstrap.servers": cluster.bootstrap, "acks": acks, "linger.ms": 5,
                  "message.timeout.ms": int(timeout * 1000), "enable.idempotence": idempotent})
    total = 0
    for partition, values in values_by_partition.items():
        for v in values:
            p.produce(topic, v, partition=partition, on_delivery=on_delivery)
            total += 1
    left = p.flush(timeout + 5)
    assert left == 0 and not errors and acked == total, \
        f"produce to {topic}: {acked}/{total} acknowledged, {left} unflushed, errors {errors[:5]}"


def produce_error(cluster: LocalCluster, topic: str, partition: int, value: bytes, timeout: float = 10.0) -> str | None:
    """Produce one record without retries; the error name, or None if acknowledged."""
    from confluent_kafka import Producer

    outcome: list[str | None] = []
    p = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "retries": 0,
                  "message.timeout.ms": int(timeout * 1000), "message.max.bytes": 10_000_000})
    p.produce(topic, value, partition=partition,
              on_delivery=lambda err, msg: outcome.append(None if err is None else err.name()))
    p.flush(timeout + 5)
    assert outcome, f"no delivery report for {topic}[{partition}]"
    return outcome[0]


def set_topic_config(cluster: LocalCluster, topic: str, configs: dict[str, str], timeout: float = 20.0) -> None:
    """IncrementalAlterConfigs SET through librdkafka's AdminClient."""
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

    resource = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[
        ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET) for k, v in configs.items()])
    client = admin(cluster)
    for future in client.incremental_alter_configs([resource], request_timeout=timeout).values():
        future.result(timeout)


def consume(cluster: LocalCluster, topic: str, partitions: Iterable[int], expected: int,
            timeout: float = 20.0) -> dict[int, list[bytes]]:
    """Read ``expected`` records from the start of ``partitions`` (assign,
    no group); partition -> values in offset order."""
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "kavka-fault-tests",
                  "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    got: dict[int, list[bytes]] = {p: [] for p in partitions}
    try:
        c.assign([TopicPartition(topic, p, 0) for p in got])
        deadline = time.monotonic() + timeout
        n = 0
        while n < expected and time.monotonic() < deadline:
            m = c.poll(0.2)
            if m is None or m.error() is not None:
                continue
            got[m.partition()].append(m.value())
            n += 1
    finally:
        c.close()
    return got


# -- the wire, byte by byte -------------------------------------------------------------

class RawConnection:
    """A blocking socket to one broker for hand-made frames: ``send`` bytes
    as they are, ``request`` one encoded Kafka request and read its answer,
    ``closed_by_peer`` to see whether the broker hung up."""

    def __init__(self, address: str, timeout: float = 10.0, source: str | None = None) -> None:
        import socket

        host, _, port = address.rpartition(":")
        # ``source``: the local address to connect from (any of 127.0.0.0/8 on loopback)
        self.sock = socket.create_connection((host, int(port)), timeout=timeout,
                                             source_address=None if source is None else (source, 0))
        self._correlation = 0

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> RawConnection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def _read_exactly(self, n: int) -> bytes:
        chunks = bytearray()
        while len(chunks) < n:
            chunk = self.sock.recv(n - len(chunks))
            if not chunk:
                raise ConnectionError(f"the broker closed the connection after {len(chunks)} of {n} bytes")
            chunks += chunk
        return bytes(chunks)

    def read_frame(self) -> bytes:
        size = int.from_bytes(self._read_exactly(4), "big", signed=True)
        assert 0 <= size < 64 << 20, f"response frame size {size}"
        return self._read_exactly(size)

    def request(self, body, version: int, client_id: str = "fault-test"):
        """Send ``body`` (a request Message) at ``version``; the response Message."""
        from kavka.protocol.framing import frame
        from kavka.protocol.headers import RequestHeader, decode_response, encode_request

        self._correlation += 1
        header = RequestHeader(body.API_KEY, version, self._correlation, client_id)
        self.send(frame(encode_request(header, body)))
        rh, response = decode_response(body.API_KEY, version, self.read_frame())
        assert rh.correlation_id == self._correlation
        return response

    def closed_by_peer(self, timeout: float = 10.0) -> bool:
        """True once the broker closes (EOF or reset) within ``timeout``;
        False if it sent bytes or stayed open."""

        self.sock.settimeout(timeout)
        try:
            data = self.sock.recv(65536)
        except TimeoutError:
            return False
        except ConnectionResetError:
            return True
        return data == b""


def metadata_from(address: str, topics: list[str] | None = None):
    """A Metadata v9 response from exactly this broker."""
    from kavka.protocol.messages import MetadataRequest

    req = MetadataRequest(topics=None if topics is None else [MetadataRequest.Topics(name=t) for t in topics],
                          allow_auto_topic_creation=False)
    with RawConnection(address) as conn:
        return conn.request(req, 9)


def rss_kib(pid: int) -> int:
    """Resident set size of a process, from /proc/<pid>/status."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError(f"no VmRSS for pid {pid}")


class ProducerThread:
    """confluent-kafka producing numbered records (``b"%08d"``) round-robin
    to ``partitions`` of ``topic`` from a thread until the ``with`` block
    ends (at most ``limit`` records), then flushing. ``acked`` holds
    (partition, value) acknowledged, in acknowledgement order; ``errors``
    the failures (under faults a failed write is indeterminate: it may or
    may not be in the log). One request in flight per connection.

    Send order is a guarantee only with ``idempotent`` (librdkafka's
    ``enable.idempotence``: per-partition sequence numbers the broker
    checks; librdkafka's INTRODUCTION.md promises strict ordering for the
    idempotent producer). Without it, one request in flight keeps the order
    only as far as librdkafka re-queues retried messages ahead of newer
    ones, which has had corner cases when a partition's leader goes away
    during the retry (confluentinc/librdkafka#1092): a broker writes the
    batches of one connection in the order it receives them, and a killed
    broker's connection delivers nothing to its successor, so a retried
    batch written after newer records was sent after them."""

    def __init__(self, bootstrap: str, topic: str, partitions: tuple[int, ...] = (0,), limit: int = 20000,
                 pace_s: float = 0.002, message_timeout_ms: int = 30000, idempotent: bool = False) -> None:
        import threading

        from confluent_kafka import Producer

        self.topic = topic
        self.partitions = partitions
        self.limit = limit
        self.pace_s = pace_s
        self.sent: list[tuple[int, bytes]] = []
        self.acked: list[tuple[int, bytes]] = []
        self.errors: list[str] = []
        self.unflushed = -1
        self._stop = threading.Event()
        self._producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 2,
                                   "max.in.flight.requests.per.connection": 1,
                                   "message.timeout.ms": message_timeout_ms, "retry.backoff.ms": 100,
                                   "enable.idempotence": idempotent})
        self._thread = threading.Thread(target=self._run, name=f"producer-{topic}", daemon=True)

    def _on_delivery(self, err, msg) -> None:
        if err is not None:
            self.errors.append(f"{msg.partition()}: {err}")
        else:
            self.acked.append((msg.partition(), msg.value()))

    def acked_on(self, partition: int) -> list[bytes]:
        return [v for p, v in list(self.acked) if p == partition]

    def _run(self) -> None:
        while not self._stop.is_set() and len(self.sent) < self.limit:
            partition = self.partitions[len(self.sent) % len(self.partitions)]
            value = b"%08d" % len(self.sent)
            self._producer.produce(self.topic, value, partition=partition, on_delivery=self._on_delivery)
            self.sent.append((partition, value))
            self._producer.poll(self.pace_s)
        self.unflushed = self._producer.flush(40)

    def __enter__(self) -> ProducerThread:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(60)


def consume_to_end(cluster: LocalCluster, topic: str, partition: int, timeout: float = 30.0) -> list[bytes]:
    """Every record of one partition from offset 0 to its high watermark."""
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "kavka-fault-tests",
                  "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    try:
        _, high = c.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)
        c.assign([TopicPartition(topic, partition, 0)])
        values: list[bytes] = []
        next_offset = 0
        deadline = time.monotonic() + timeout
        while next_offset < high:
            assert time.monotonic() < deadline, f"read {next_offset} of {high} records of {topic}[{partition}]"
            m = c.poll(0.2)
            if m is None or m.error() is not None:
                continue
            values.append(m.value())
            next_offset = m.offset() + 1
        return values
    finally:
        c.close()


def consumer_protocol_consumer(cluster: LocalCluster, group: str, topic: str, name: str):
    """A confluent-kafka consumer of ``topic`` in ``group`` with the consumer
    group protocol (KIP-848), reading from the earliest offset, committing by
    hand, quick to see metadata changes."""
    from confluent_kafka import Consumer

    c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group, "client.id": name,
                  "group.protocol": "consumer", "auto.offset.reset": "earliest", "enable.auto.commit": False,
                  "fetch.wait.max.ms": 100, "topic.metadata.refresh.interval.ms": 1000})
    c.subscribe([topic])
    return c
