"""The partition directory names of seed 002 §5.2.

A partition's log lives in ``<log.dir>/<topic>-<partition>``
(``log_dir_name``); a log being deleted is first renamed
``<topic>-<partition>.<uuid hex>-delete`` (``delete_dir_name``; removed
after ``file.delete.delay.ms``, or at the next startup), as Kafka does.
``parse_topic_partition`` reads a directory name back into the
``kavka.common.topic_partition.TopicPartition`` it names.

Pure functions; any thread.
"""

from __future__ import annotations

import re
import uuid

from kavka.common.topic_partition import TopicPartition

DELETE_DIR_SUFFIX = "-delete"
_LEGAL_TOPIC = re.compile(r"^[A-Za-z0-9._-]{1,249}$")
_DELETE_DIR = re.compile(r"^(.+)-(\d+)\.([0-9a-f]{32})-delete$")


class InvalidLogDirName(ValueError):
    """A directory under a log dir that is not ``<topic>-<partition>``."""


def log_dir_name(tp: TopicPartition) -> str:
    """``orders-3``: the directory of ``tp``'s log under a log dir."""
    return f"{tp.topic}-{tp.partition}"


def delete_dir_name(tp: TopicPartition) -> str:
    """A fresh ``<topic>-<partition>.<uuid hex>-delete`` name for ``tp``'s
    directory while it awaits deletion (unique, so a partition deleted and
    recreated twice never collides)."""
    return f"{log_dir_name(tp)}.{uuid.uuid4().hex}{DELETE_DIR_SUFFIX}"


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
