"""``BrokerTopicStats``: bytes and records a broker took in and served,
per topic (Kafka's BrokerTopicMetrics: BytesInPerSec, MessagesInPerSec,
BytesOutPerSec, and their all-topics sums).

As Kafka counts them: bytes in and messages in are what a leader appended
for producers and coordinators (a batch's validated size and record
count; a follower's appends are replication, not counted); bytes out are
the record bytes of Fetch answers to consumers (followers' fetches are
replication, not counted). Counted once per partition of a request,
never per record: a dict lookup and two additions on the produce path.

Event loop only (the replica manager's appends and fetch answers); read
by the metrics scrape on the loop.
"""

from __future__ import annotations


class TopicCounters:
    """One topic's totals since the broker started."""

    __slots__ = ("bytes_in", "messages_in", "bytes_out")

    def __init__(self) -> None:
        self.bytes_in = 0
        self.messages_in = 0
        self.bytes_out = 0


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

    def record_out(self, topic: str, size: int) -> None:
        if size:
            self._topic(topic).bytes_out += size
            self.all_topics.bytes_out += size

    def remove_topic(self, topic: str) -> None:
        """A deleted topic's series go (Kafka's removeMetrics on deletion)."""
        self.topics.pop(topic, None)
