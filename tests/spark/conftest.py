"""Fixtures of the Spark data-source tests: one SparkSession for the whole
session (configured for a 2-core machine: ``local[2]``, two shuffle
partitions, no UI, a 1 GB driver, serial GC; format "kavka" registered) and
Kavka clusters of real broker processes on the session's ZooKeeper.

``spark``: the session. ``kavka_cluster``: a 1-broker cluster for the
session (modules use distinct topics). ``make_module_cluster(brokers=3)``:
clusters of a module's own (e.g. to kill brokers in; ``secure=True``: the
secured cluster of ``kavka up --secure``).
Helpers: ``create_topic``, ``produce`` (confluent-kafka), ``read_all``
(confluent-kafka, read_committed or not) and ``checkpoint_dir``; their
clients connect with ``cluster.client_config()`` (SASL_SSL on a secured
cluster).

Run without pytest-xdist (one JVM): ``pytest tests/spark``.
"""

from __future__ import annotations

import os
import sys
import uuid
from collections.abc import Iterator

import pytest

from kavka.tools.cluster import LocalCluster

try:  # without the spark extra (make venv EXTRAS=dev,spark) these tests are not collected
    import aiokafka  # noqa: F401
    import pyarrow  # noqa: F401
    import pyspark  # noqa: F401
except ModuleNotFoundError:
    collect_ignore_glob = ["test_*.py"]


@pytest.fixture(scope="session")
def spark():
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    # Workers must run this venv's Python (pyarrow, kavka), not python3 on PATH.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    import kavka.spark

    session = (
        SparkSession.builder.master("local[2]")
        .appName("kavka-spark-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.driver.memory", "1g")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.adaptive.enabled", "false")
        .config("spark.sql.streaming.stopTimeout", "10s")
        .config("spark.driver.extraJavaOptions", "-XX:+UseSerialGC -XX:TieredStopAtLevel=1")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    kavka.spark.register(session)
    try:
        yield session
    finally:
        session.stop()


class _Clusters:
    """Starts LocalClusters on fresh ZooKeeper chroots; ``stop_all`` at the end."""

    def __init__(self, zookeeper: str, tmp_path_factory) -> None:
        self.zookeeper = zookeeper
        self.tmp = tmp_path_factory
        self.made: list[LocalCluster] = []

    def make(self, brokers: int = 1, config: dict | None = None, secure: bool = False,
             racks: list[str | None] | None = None) -> LocalCluster:
        chroot = f"{self.zookeeper}/kavka-spark-{uuid.uuid4().hex[:12]}"
        # Small internal topics: creating 50 partitions of __transaction_state
        # or __consumer_offsets on first use costs a test seconds.
        base = {"num.partitions": "1", "default.replication.factor": str(min(brokers, 3)),
                "auto.create.topics.enable": "false", "transaction.state.log.num.partitions": "2",
                "offsets.topic.num.partitions": "2"}
        cluster = LocalCluster(brokers, self.tmp.mktemp("kavka-spark"), zookeeper=chroot,
                               config={**base, **(config or {})}, secure=secure, racks=racks)
        self.made.append(cluster)
        cluster.start()
        return cluster

    def stop_all(self) -> None:
        for cluster in self.made:
            cluster.stop()


@pytest.fixture(scope="module")
def make_module_cluster(zookeeper: str, tmp_path_factory) -> Iterator:
    """A factory of LocalClusters (``make(brokers, config, secure, racks)``) on fresh
    ZooKeeper chroots, stopped at the end of the module."""
    clusters = _Clusters(zookeeper, tmp_path_factory)
    yield clusters.make
    clusters.stop_all()


@pytest.fixture(scope="session")
def kavka_cluster(zookeeper: str, tmp_path_factory) -> Iterator[LocalCluster]:
    """One 1-broker cluster shared by the modules that do not kill brokers
    (each uses its own topic names)."""
    clusters = _Clusters(zookeeper, tmp_path_factory)
    yield clusters.make(1)
    clusters.stop_all()


@pytest.fixture
def checkpoint_dir(tmp_path) -> str:
    return str(tmp_path / "checkpoint")


def create_topic(cluster: LocalCluster, name: str, partitions: int = 1, replication_factor: int = 1,
                 config: dict | None = None) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient(cluster.client_config())
    topic = NewTopic(name, partitions, replication_factor, config=config or {})
    admin.create_topics([topic], operation_timeout=30, request_timeout=30)[name].result(60)
    wait_for_leaders(cluster, name, partitions)


def wait_for_leaders(cluster: LocalCluster, name: str, partitions: int, timeout: float = 30.0) -> None:
    import time

    from confluent_kafka.admin import AdminClient

    admin = AdminClient(cluster.client_config())
    deadline = time.monotonic() + timeout
    while True:
        md = admin.list_topics(name, timeout=10)
        t = md.topics.get(name)
        if t is not None and t.error is None and len(t.partitions) == partitions \
                and all(p.leader >= 0 for p in t.partitions.values()):
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"topic {name} has no leader for every partition after {timeout} s")
        time.sleep(0.1)


def produce(cluster: LocalCluster, topic: str, records, partition: int | None = None) -> None:
    """``records``: iterable of (key, value) or (key, value, headers)."""
    from confluent_kafka import Producer

    errors = []
    p = Producer({**cluster.client_config(), "enable.idempotence": True, "linger.ms": 5,
                  "partitioner": "murmur2_random"})
    for rec in records:
        key, value, *rest = rec
        kwargs = {"on_delivery": lambda err, msg: errors.append(err) if err else None}
        if partition is not None:
            kwargs["partition"] = partition
        if rest:
            kwargs["headers"] = rest[0]
        while True:
            try:
                p.produce(topic, value, key, **kwargs)
                break
            except BufferError:
                p.poll(0.05)
    assert p.flush(60) == 0
    assert not errors, errors


def read_all(cluster: LocalCluster, topic: str, *, committed: bool = True, timeout: float = 30.0) -> list:
    """Every record of ``topic`` up to its end, as confluent-kafka Messages."""
    import time

    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({**cluster.client_config(), "group.id": f"check-{uuid.uuid4().hex[:8]}",
                  "enable.auto.commit": False,
                  "isolation.level": "read_committed" if committed else "read_uncommitted"})
    try:
        md = c.list_topics(topic, timeout=10).topics[topic]
        tps = [TopicPartition(topic, p) for p in sorted(md.partitions)]
        ends = {}
        for tp in tps:
            low, high = c.get_watermark_offsets(tp, timeout=10)
            ends[tp.partition] = high
        c.assign([TopicPartition(topic, tp.partition, 0) for tp in tps])
        out, positions = [], {p: 0 for p in ends}
        deadline = time.monotonic() + timeout
        while any(positions[p] < ends[p] for p in ends):
            if time.monotonic() > deadline:
                raise AssertionError(f"reading {topic}: positions {positions} short of {ends} after {timeout} s")
            for msg in c.consume(1000, 0.2):
                if msg.error():
                    continue
                out.append(msg)
                positions[msg.partition()] = msg.offset() + 1
            for tp in c.position([TopicPartition(topic, p) for p in ends]):
                if tp.offset >= 0:
                    positions[tp.partition] = max(positions[tp.partition], tp.offset)
        return out
    finally:
        c.close()
