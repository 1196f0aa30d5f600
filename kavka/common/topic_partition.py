"""``TopicPartition``: the name of one partition of one topic, the key every
layer uses (log manager, replica manager, controller, coordinators, client).

An immutable value ordered by (topic, partition); ``str`` gives
``topic-partition`` as Kafka prints it. Where it is named on disk (the log
directory ``<topic>-<partition>``) is the storage layer's business
(``kavka.storage.log_dir_names``).

It is a named tuple, not a dataclass, because it keys every per-partition
table and is hashed, compared and sorted on every path that touches a
partition (each follower fetch looks up every partition of its session,
the controller sorts every partition it elects): a tuple does those in C,
where a dataclass runs a Python ``__hash__``, ``__eq__`` and ``__lt__``
per call. So it also equals, and unpacks like, the plain tuple
``(topic, partition)``; code keeps one of the two as a table's key, not
both.

Pure value; any thread.
"""

from __future__ import annotations

from typing import NamedTuple


class TopicPartition(NamedTuple):
    """A topic name and a partition index (>= 0 for a real partition)."""

    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"
