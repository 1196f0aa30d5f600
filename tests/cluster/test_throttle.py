"""End to end with real broker processes: replication throttling (seed 002
§8, KIP-73) on a follower catching up a large backlog.

Two brokers, one partition with two replicas. The follower is stopped, the
leader takes a backlog of several megabytes, and the topic gets
``leader.replication.throttled.replicas`` / ``follower.replication.throttled.replicas``
naming the leader and the follower (set with librdkafka's
IncrementalAlterConfigs, which also refuses a malformed list). Then:

1. leader side: ``leader.replication.throttled.rate`` on the leader; the
   follower comes back and copies at most ``rate`` bytes a second (plus one
   second of burst and one fetch admitted whole);
2. follower side: ``follower.replication.throttled.rate`` on the follower,
   the leader's rate removed; the same bound holds;
3. the follower's rate removed: it catches up, its batches equal the
   leader's and it rejoins the ISR.

The bounds are upper bounds on bytes copied in a measured window, so a slow
machine only makes them easier to meet (no wall-clock threshold); the
backlog is many times what the throttled windows allow, so an unthrottled
follower would blow through them. Progress is read from the follower's
segment files.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from .cluster_helpers import set_topic_config, wait_until
from .replication_helpers import REPLICATION_CONFIG, create_topic, replica_batches, wait_state

TOPIC = "throttled"
RATE = 100_000  # bytes/s
FETCH_MAX = 64 * 1024  # replica.fetch.max.bytes: the most one fetch adds past the quota
RECORD = 10_000
BACKLOG_RECORDS = 600  # ~6 MB: far beyond what the throttled windows let through
WINDOW_S = 4.0
# A response the leader admitted just before a window may be appended by the
# follower inside it: allow this much in-flight time on a loaded machine.
SLACK_S = 1.0
CONFIG = dict(REPLICATION_CONFIG, **{"replica.fetch.max.bytes": str(FETCH_MAX)})


def replica_bytes(cluster, broker_id: int) -> int:
    directory = Path(cluster.brokers[broker_id].directory) / "logs" / f"{TOPIC}-0"
    return sum(p.stat().st_size for p in directory.glob("*.log")) if directory.exists() else 0


def set_broker_config(cluster, broker_id: int, key: str, value: str | None) -> None:
    """IncrementalAlterConfigs SET (or DELETE when ``value`` is None) of a
    dynamic config of one broker, through librdkafka."""
    from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

    op = AlterConfigOpType.SET if value is not None else AlterConfigOpType.DELETE
    resource = ConfigResource(ResourceType.BROKER, str(broker_id),
                              incremental_configs=[ConfigEntry(key, value or "", incremental_operation=op)])
    client = AdminClient({"bootstrap.servers": cluster.bootstrap})
    for future in client.incremental_alter_configs([resource], request_timeout=20).values():
        future.result(20)


def applied_count(cluster, broker_id: int) -> int:
    """How many broker-config changes the broker logged as applied."""
    text = cluster.brokers[broker_id].log_path.read_text(errors="replace")
    return text.count(f"applied brokers config of {broker_id}:")


def set_and_wait_applied(cluster, broker_id: int, key: str, value: str | None) -> None:
    before = applied_count(cluster, broker_id)
    set_broker_config(cluster, broker_id, key, value)
    wait_until(lambda: applied_count(cluster, broker_id) > before, 30, f"broker {broker_id} to apply {key}={value}")


def window(cluster, follower: int, what: str) -> int:
    """Bytes the follower copies in WINDOW_S, checked against the quota."""
    b0, t0 = replica_bytes(cluster, follower), time.monotonic()
    time.sleep(WINDOW_S)
    b1, t1 = replica_bytes(cluster, follower), time.monotonic()
    copied = b1 - b0
    bound = RATE * (t1 - t0 + SLACK_S) + RATE + FETCH_MAX
    print(f"{what}: {copied} bytes in {t1 - t0:.1f} s ({copied / (t1 - t0):.0f} B/s; bound {bound:.0f})")
    assert copied <= bound, f"{what}: the follower copied {copied} bytes in {t1 - t0:.1f} s, over the bound {bound:.0f}"
    return copied


def test_follower_catching_up_is_rate_limited_by_either_side_then_catches_up(make_cluster):
    from confluent_kafka import KafkaException, Producer

    cluster = make_cluster(brokers=2, config=CONFIG)
    create_topic(cluster, TOPIC, rf=2)
    st = wait_state(cluster, TOPIC, lambda s: len(s["isr"]) == 2, "an ISR of 2")
    leader = st["leader"]
    follower = next(b for b in st["isr"] if b != leader)
    cluster.stop_broker(follower)
    wait_state(cluster, TOPIC, lambda s: s["isr"] == [leader], "the ISR without the stopped follower")

    # Small batches: a fetch returns whole batches, so the batch size bounds
    # how far one fetch admitted by the quota can go past it (KIP-74).
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "1", "linger.ms": 5,
                         "batch.size": FETCH_MAX // 2, "enable.idempotence": False})
    for i in range(BACKLOG_RECORDS):
        producer.produce(TOPIC, b"%08d" % i + b"x" * (RECORD - 8), partition=0)
        producer.poll(0)
    assert producer.flush(60) == 0
    backlog = replica_bytes(cluster, leader)
    assert backlog > 5_000_000

    with pytest.raises(KafkaException, match="partition:broker"):
        set_topic_config(cluster, TOPIC, {"leader.replication.throttled.replicas": "0-1"})
    set_topic_config(cluster, TOPIC, {"leader.replication.throttled.replicas": f"0:{leader}",
                                      "follower.replication.throttled.replicas": f"0:{follower}"})

    # 1. Leader side.
    set_and_wait_applied(cluster, leader, "leader.replication.throttled.rate", str(RATE))
    start = time.monotonic()
    base = replica_bytes(cluster, follower)
    cluster.start_broker(follower)
    wait_until(lambda: replica_bytes(cluster, follower) > base, 60, "the follower to copy its first bytes")
    copied = window(cluster, follower, "leader throttle")
    since_start = replica_bytes(cluster, follower) - base
    assert since_start <= RATE * (time.monotonic() - start + SLACK_S) + RATE + FETCH_MAX, since_start
    assert copied > 0, "the throttled follower stopped copying altogether"

    # 2. Follower side (set before the leader's rate goes, so nothing runs unthrottled).
    set_and_wait_applied(cluster, follower, "follower.replication.throttled.rate", str(RATE))
    set_and_wait_applied(cluster, leader, "leader.replication.throttled.rate", None)
    window(cluster, follower, "follower throttle")
    throttled_total = replica_bytes(cluster, follower) - base
    assert base + throttled_total < backlog, "the follower caught up while throttled"

    # 3. No throttle: it catches up and rejoins the ISR.
    released = time.monotonic()
    set_and_wait_applied(cluster, follower, "follower.replication.throttled.rate", None)
    wait_until(lambda: replica_bytes(cluster, follower) >= backlog, 120, "the follower to copy the whole backlog")
    elapsed = time.monotonic() - released
    print(f"unthrottled: {backlog - throttled_total - base} bytes in {elapsed:.1f} s "
          f"({(backlog - throttled_total - base) / elapsed:.0f} B/s)")
    wait_state(cluster, TOPIC, lambda s: len(s["isr"]) == 2, "the follower back in the ISR", 60)
    assert replica_batches(cluster, follower, TOPIC) == replica_batches(cluster, leader, TOPIC)
