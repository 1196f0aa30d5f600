"""``BrokerTopicStats``: bytes and records a broker took in and served,
per topic (Kafka's BrokerTopicMetrics: BytesInPerSec, MessagesInPerSec,
BytesOutPerSec, Total/FailedProduceRequestsPerSec,
Total/FailedFetchRequestsPerSec, and their all-topics sums).

As Kafka counts them: bytes in and messages in are what a leader appended
for producers and coordinators (a batch's validated size and record
count; a follower's appends are replication, not counted); bytes out are
the record bytes of Fetch answers to consumers (followers' fetches are
replication, not counted). Produce and fetch requests count once per
partition a leader was asked to append or read (followers' fetches
included, as Kafka counts them); failed are those whose error is not one
a client meets in normal operation (a moved leader, an unknown or
deleted partition, an offset out of range, a fenced epoch, a batch too
large or corrupt, a bad timestamp, a storage error): Kafka's
failedProduceRequestRate and failedFetchRequestRate. Counted once per
partition of a request,
never per record: a dict lookup and two additions on the produce path.

Event loop only (the replica manager's appends and fetch answers); read
by the metrics scrape on the loop.
"""

from __future__ import annotations


class TopicCounters:
    """One topic's totals since the broker started."""

    __slots__ = ("bytes_in", "messages_in", "bytes_out", "produce_requests", "failed_produce_requests",
                 "fetch_requests", "failed_fetch_requests")

    def __init__(self) -> None:
        self.bytes_in = 0
        self.messages_in = 0
        self.bytes_out = 0
        self.produce_requests = 0
        self.failed_produce_requests = 0
        self.fetch_requests = 0
        self.failed_fetch_requests = 0


class BrokerTopicStats:
    """See the module docstring. ``topics`` maps a topic to its counters;
    ``all_topics`` holds the sums (kept apart so a deleted topic's bytes
    stay in them, as Kafka's all-topics meters keep them)."""

    def __init__(self) -> None:
        self.topics: dict[str, TopicCounters] = {}
        self.all_topics = TopicCounters()

    def _topic(self, topic: str) -> TopicCounters:
        counters = self.topics.get(topic)
        if counters is None:
            counters = self.topics[topic] = TopicCounters()
        return counters

    def record_in(self, topic: str, size: int, messages: int) -> None:
        counters = self._topic(topic)
        counters.bytes_in += size
        counters.messages_in += messages
        total = self.all_topics
        total.bytes_in += size
        total.messages_in += messages

    def record_produce(self, topic: str, failed: bool) -> None:
        counters = self._topic(topic)
        counters.produce_requests += 1
        self.all_topics.produce_requests += 1
        if failed:
            counters.failed_produce_requests += 1
            self.all_topics.failed_produce_requests += 1

    def record_fetch(self, topic: str, failed: bool) -> None:
        counters = self._topic(topic)
        counters.fetch_requests += 1
        self.all_topics.fetch_requests += 1
        if failed:
            counters.failed_fetch_requests += 1
            self.all_topics.failed_fetch_requests += 1

    def record_out(self, topic: str, size: int) -> None:
        if size:
            self._topic(topic).bytes_out += size
            self.all_topics.bytes_out += size

    def remove_topic(self, topic: str) -> None:
        """A deleted topic's series go (Kafka's removeMetrics on deletion)."""
        self.topics.pop(topic, None)
