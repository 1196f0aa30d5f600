"""``TopicPartition``: the name of one partition of one topic, the key every
layer uses (log manager, replica manager, controller, coordinators, client).

A frozen, slotted value ordered by (topic, partition); ``str`` gives
``topic-partition`` as Kafka prints it. It is not a tuple: it neither
unpacks nor compares equal to ``(topic, partition)``, so a table keyed by
one never silently misses a lookup by the other. Where it is named on disk
(the log directory ``<topic>-<partition>``) is the storage layer's business
(``kavka.storage.log_dir_names``).

Pure value; any thread.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True, order=True)
class TopicPartition:
    """A topic name and a partition index (>= 0 for a real partition)."""

    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"
