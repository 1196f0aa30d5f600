"""KIP-112 end to end with real broker processes, real ZooKeeper and
librdkafka: a log directory on a size-capped tmpfs is filled while an
idempotent producer writes with acks=all and min.insync.replicas=2.

- A broker with two log directories, one of which fills: it keeps running,
  the partitions of the full directory get a new leader among the other
  ISR members and leave the broker's ISR, the partitions of its other
  directory stay led by it, the /log_dir_event_notification znode is
  handled and deleted. Restarted with that disk gone, it starts on the
  other directory and refuses to recreate the lost replicas empty.
- A broker whose only log directory fills halts (exit code 1, the
  directories and the error in its log); the others take over; after the
  disk is freed it starts again and rejoins the ISR.

In both, every acknowledged record is read back at the offset it was
acknowledged at. Needs root for the tmpfs mounts (skipped otherwise)."""

from __future__ import annotations

import contextlib
import subprocess
import time
from pathlib import Path

import pytest

from kavka.zk.notifications import LOG_DIR_EVENT_NOTIFICATION_PATH
from tests.tmpfs import capped_tmpfs

from .cluster_helpers import wait_until
from .replication_helpers import REPLICATION_CONFIG

RECORDS = 6_000
WAIT = 60.0


@pytest.fixture
def tmpfs_factory(tmp_path):
    with contextlib.ExitStack() as mounts:
        def mount(name: str, size_bytes: int = 4 << 20) -> Path:
            return mounts.enter_context(capped_tmpfs(tmp_path / name, size_bytes))

        yield mount


def fill(directory: Path) -> None:
    """Write a ballast file until the file system is full to the last byte."""
    with open(directory / "ballast", "ab", buffering=0) as f:
        for chunk in (1 << 20, 4096, 1):
            with contextlib.suppress(OSError):
                while True:
                    f.write(b"\0" * chunk)


def create_topic(cluster, topic: str, assignment: list[list[int]]) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    wait_until(lambda: len(admin.list_topics(timeout=10).brokers) == len(cluster.brokers), 30, "every broker in the metadata")
    futures = admin.create_topics([NewTopic(topic, num_partitions=len(assignment), replica_assignment=assignment, config={"min.insync.replicas": "2"})],
                                  request_timeout=30)
    futures[topic].result(timeout=30)


def state(cluster, topic: str, partition: int) -> dict | None:
    import json

    client = cluster._zk()
    try:
        path = f"/brokers/topics/{topic}/partitions/{partition}/state"
        return json.loads(client.get(path)[0]) if client.exists(path) else None
    finally:
        client.stop()
        client.close()


def pending_log_dir_events(cluster) -> list[str]:
    client = cluster._zk()
    try:
        return client.get_children(LOG_DIR_EVENT_NOTIFICATION_PATH) if client.exists(LOG_DIR_EVENT_NOTIFICATION_PATH) else []
    finally:
        client.stop()
        client.close()


def produce(cluster, topic: str, partitions: int, fault_at: int, fault) -> dict[bytes, tuple[int, int]]:
    """``RECORDS`` records round-robin over the partitions, acks=all and
    idempotent; ``fault()`` once ``fault_at`` are acknowledged. Returns
    value -> (partition, offset) of every acknowledged record."""
    from confluent_kafka import Producer

    producer = Producer({
        "bootstrap.servers": cluster.bootstrap, "acks": "all", "enable.idempotence": True, "linger.ms": 5,
        "message.timeout.ms": 90_000, "retry.backoff.ms": 200, "topic.metadata.refresh.interval.ms": 1000,
    })
    acked: dict[bytes, tuple[int, int]] = {}
    failed: list[str] = []

    def delivered(err, msg) -> None:
        if err is None:
            acked[msg.value()] = (msg.partition(), msg.offset())
        else:
            failed.append(str(err))

    faulted = False
    for i in range(RECORDS):
        while True:
            try:
                producer.produce(topic, b"r-%06d" % i, partition=i % partitions, on_delivery=delivered)
                break
            except BufferError:
                producer.poll(0.05)
        producer.poll(0)
        if not faulted and i >= fault_at:
            deadline = time.monotonic() + 30
            while len(acked) < fault_at // 2 and time.monotonic() < deadline:
                producer.poll(0.01)
            fault()
            faulted = True
            # Keep records flowing to the failed directory's partitions while it fails.
            time.sleep(0.5)
    assert producer.flush(120) == 0, "records still unanswered after 120 s"
    assert not failed, failed[:5]  # one replica lost, min.insync.replicas=2: nothing may fail
    return acked


def check_read_back(cluster, topic: str, partitions: int, acked: dict[bytes, tuple[int, int]]) -> None:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": f"{topic}-check",
                         "enable.auto.commit": False, "fetch.wait.max.ms": 100})
    try:
        highs = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=20)[1] for p in range(partitions)}
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
        at: dict[tuple[int, int], bytes] = {}
        last = dict.fromkeys(range(partitions), -1)
        deadline = time.monotonic() + 60
        while any(last[p] < highs[p] - 1 for p in range(partitions)) and time.monotonic() < deadline:
            for msg in consumer.consume(1000, 1.0):
                assert msg.error() is None, msg.error()
                at[(msg.partition(), msg.offset())] = msg.value()
                last[msg.partition()] = max(last[msg.partition()], msg.offset())
    finally:
        consumer.close()
    wrong = [(v, where, at.get(where)) for v, where in acked.items() if at.get(where) != v]
    assert not wrong, f"{len(wrong)} acknowledged records not read back at their offset, e.g. {wrong[:3]}"


def test_one_of_two_log_dirs_fails_and_the_broker_keeps_serving_the_other(make_cluster, tmpfs_factory):
    disk = tmpfs_factory("broker-1-disk2")
    cluster = make_cluster(brokers=3, start=False, config=REPLICATION_CONFIG)
    cluster.broker_config[1] = {"log.dirs": f"{cluster.brokers[1].directory / 'logs'},{disk}"}
    cluster.start()
    topic, partitions = "two-dirs", 4
    create_topic(cluster, topic, [[1, 0, 2], [1, 2, 0], [1, 0, 2], [1, 2, 0]])
    for p in range(partitions):
        wait_until(lambda p=p: (s := state(cluster, topic, p)) and len(s["isr"]) == 3, WAIT, f"{topic}-{p} ISR of 3")
    # The ISR of a new topic is all its replicas from the start: wait until
    # broker 1 has made the four logs, in one directory or the other.
    dirs = (cluster.brokers[1].directory / "logs", disk)
    wait_until(lambda: sum(1 for d in dirs for f in d.iterdir() if f.name.startswith(f"{topic}-")) == partitions,
               WAIT, f"broker 1 created the {partitions} logs of {topic}")
    on_disk = {int(d.name.rsplit("-", 1)[1]) for d in disk.iterdir() if d.name.startswith(f"{topic}-")}
    elsewhere = set(range(partitions)) - on_disk
    assert on_disk and elsewhere, f"broker 1 put partitions {sorted(on_disk)} on the small disk"

    acked = produce(cluster, topic, partitions, RECORDS // 3, lambda: fill(disk))
    assert len(acked) == RECORDS

    for p in sorted(on_disk):
        s = wait_until(lambda p=p: (s := state(cluster, topic, p)) and s["leader"] != 1 and 1 not in s["isr"] and s,
                       WAIT, f"{topic}-{p} led elsewhere without broker 1 in its ISR")
        assert s["leader"] in (0, 2) and sorted(s["isr"]) == [0, 2]
    for p in sorted(elsewhere):
        s = state(cluster, topic, p)
        assert s["leader"] == 1 and 1 in s["isr"], (p, s)
    wait_until(lambda: not pending_log_dir_events(cluster), WAIT, "the log dir event handled and deleted")
    b1 = cluster.brokers[1]
    assert b1.running(), b1.log_tail()
    text = b1.log_path.read_text(errors="replace")
    assert f"Stopping serving replicas in dir {disk}" in text and "No space left on device" in text
    check_read_back(cluster, topic, partitions, acked)

    # Restarted with the failed disk gone (its mount point left as a plain
    # file): broker 1 starts on its other directory, follows the partitions
    # kept there, and answers KAFKA_STORAGE_ERROR for the replicas that were
    # on the failed disk instead of recreating them empty.
    cluster.stop_broker(1)
    subprocess.run(["umount", "-l", str(disk)], check=True, capture_output=True)
    disk.rmdir()
    disk.write_bytes(b"the failed disk's mount point")
    cluster.start_broker(1)
    cluster.wait_registered({1}, WAIT)
    for p in sorted(elsewhere):
        wait_until(lambda p=p: 1 in state(cluster, topic, p)["isr"], WAIT, f"broker 1 back in {topic}-{p}'s ISR")
    for p in sorted(on_disk):
        wait_until(lambda p=p: f"Can not create log for {topic}-{p} because log directories {disk} are offline"
                   in b1.log_path.read_text(errors="replace"), WAIT, f"broker 1 refusing to recreate {topic}-{p}")
        s = state(cluster, topic, p)
        assert s["leader"] != 1 and 1 not in s["isr"], (p, s)
    assert b1.running(), b1.log_tail()


def test_a_broker_whose_only_log_dir_fails_halts_and_rejoins_after_the_disk_is_freed(make_cluster, tmpfs_factory):
    disk = tmpfs_factory("broker-2-disk")
    cluster = make_cluster(brokers=3, start=False, config=REPLICATION_CONFIG)
    cluster.broker_config[2] = {"log.dirs": str(disk)}
    cluster.start()
    topic, partitions = "one-dir", 2
    create_topic(cluster, topic, [[2, 0, 1], [2, 1, 0]])
    for p in range(partitions):
        wait_until(lambda p=p: (s := state(cluster, topic, p)) and len(s["isr"]) == 3, WAIT, f"{topic}-{p} ISR of 3")

    acked = produce(cluster, topic, partitions, RECORDS // 3, lambda: fill(disk))
    assert len(acked) == RECORDS

    b2 = cluster.brokers[2]
    wait_until(lambda: not b2.running(), WAIT, "broker 2 to halt")
    assert b2.popen().returncode == 1
    text = b2.log_path.read_text(errors="replace")
    assert f"Shutdown broker because all log dirs in {disk} have failed" in text, b2.log_tail()
    assert "No space left on device" in text
    for p in range(partitions):
        wait_until(lambda p=p: (s := state(cluster, topic, p)) and s["leader"] in (0, 1), WAIT, f"{topic}-{p} led elsewhere")
    check_read_back(cluster, topic, partitions, acked)

    (disk / "ballast").unlink()  # the operator frees the disk and starts the broker again
    cluster.start_broker(2)
    cluster.wait_registered({2}, WAIT)
    for p in range(partitions):
        wait_until(lambda p=p: (s := state(cluster, topic, p)) and 2 in s["isr"], WAIT, f"broker 2 back in {topic}-{p}'s ISR")
