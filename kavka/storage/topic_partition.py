"""Topic-partition identity and the partition directory names of seed 002.

A partition's log lives in ``<log.dir>/<topic>-<partition>``; a log being
deleted is first renamed ``<topic>-<partition>.<uuid hex>-delete`` (removed
after ``file.delete.delay.ms``, or at the next startup), as Kafka does.

Pure values and functions; any thread.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass

DELETE_DIR_SUFFIX = "-delete"
_LEGAL_TOPIC = re.compile(r"^[A-Za-z0-9._-]{1,249}$")
_DELETE_DIR = re.compile(r"^(.+)-(\d+)\.([0-9a-f]{32})-delete$")


class InvalidLogDirName(ValueError):
    """A directory under a log dir that is not ``<topic>-<partition>``."""


@dataclass(frozen=True, slots=True, order=True)
class TopicPartition:
    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"

    @property
    def dir_name(self) -> str:
        return f"{self.topic}-{self.partition}"

    def delete_dir_name(self) -> str:
        return f"{self.dir_name}.{uuid.uuid4().hex}{DELETE_DIR_SUFFIX}"


def parse_topic_partition(dir_name: str) -> TopicPartition:
    """``orders-3`` -> TopicPartition("orders", 3); topics may contain '-'.
    Raises ``InvalidLogDirName`` naming the directory."""
    topic, sep, part = dir_name.rpartition("-")
    if not sep or not topic or not part.isdigit() or not _LEGAL_TOPIC.match(topic):
        raise InvalidLogDirName(
            f"directory {dir_name!r} is not in the form <topic>-<partition>; move it out of the log dir"
        )
    return TopicPartition(topic, int(part))


def is_delete_dir(dir_name: str) -> bool:
    return _DELETE_DIR.match(dir_name) is not None
