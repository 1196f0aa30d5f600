"""Znodes under ``/admin`` (seed 000 "admin"): requests from tools to the
controller. They exist only while an operation is pending; the controller
deletes them when done.

- ``/admin/delete_topics/<topic>``: one child per topic to delete, no data
  (Kafka's layout since 0.8.2). Seed 000 also shows an older form where
  ``/admin/delete_topics`` itself holds ``{"version":1,"topics":[...]}``;
  ``DeleteTopicsZNode`` reads and writes that form so such requests are
  honoured too.
- ``/admin/reassign_partitions``: ``ReassignPartitionsZNode``.
- ``/admin/preferred_replica_election``: ``PreferredReplicaElectionZNode``.

Pure; any thread.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kavka.zk.codec import (
    ZnodeDataError,
    build,
    check_id,
    check_replicas,
    check_topic,
    check_version,
    dump_json,
    field,
    int_list,
    load_json,
    parse_path,
)

ADMIN_PATH = "/admin"
DELETE_TOPICS_PATH = "/admin/delete_topics"
REASSIGN_PARTITIONS_PATH = "/admin/reassign_partitions"
PREFERRED_REPLICA_ELECTION_PATH = "/admin/preferred_replica_election"

_DELETE_TOPIC_RE = re.compile(r"^/admin/delete_topics/([^/]+)$")


@dataclass(frozen=True, slots=True)
class DeleteTopicZNode:
    """``/admin/delete_topics/<topic>``: a request to delete one topic. The
    name is the request; the data is empty."""

    topic: str

    def __post_init__(self) -> None:
        check_topic(self.topic)

    @staticmethod
    def path(topic: str) -> str:
        return f"{DELETE_TOPICS_PATH}/{check_topic(topic)}"

    @property
    def znode_path(self) -> str:
        return self.path(self.topic)

    def encode(self) -> bytes:
        return b""

    @classmethod
    def decode(cls, data: bytes, path: str) -> DeleteTopicZNode:
        topic = parse_path(path, _DELETE_TOPIC_RE, "/admin/delete_topics/<topic>").group(1)
        return build(path, lambda: cls(topic))


@dataclass(frozen=True, slots=True)
class DeleteTopicsZNode:
    """``/admin/delete_topics`` holding seed 000's document::

        {"version":1,"topics":["topic4","topic5"]}

    Empty data (the usual case: requests are children) decodes to no topics.
    """

    topics: tuple[str, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "topics", tuple(self.topics))
        for t in self.topics:
            check_topic(t)

    @staticmethod
    def path() -> str:
        return DELETE_TOPICS_PATH

    def encode(self) -> bytes:
        return dump_json({"version": 1, "topics": list(self.topics)})

    @classmethod
    def decode(cls, data: bytes, path: str = DELETE_TOPICS_PATH) -> DeleteTopicsZNode:
        if not data:
            return cls(())
        doc = load_json(path, data)
        check_version(path, doc, (1,))
        topics = field(path, doc, "topics", "list")
        if not all(isinstance(t, str) for t in topics):
            raise ZnodeDataError(path, "field 'topics' must be a list of topic names")
        return build(path, lambda: cls(tuple(topics)))


def _partition_entries(path: str, doc: dict, with_replicas: bool) -> list[tuple[str, int, tuple[int, ...]]]:
    entries = field(path, doc, "partitions", "list")
    out: list[tuple[str, int, tuple[int, ...]]] = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise ZnodeDataError(path, f"partitions[{i}] is not an object")
        where = f"partitions[{i}] "
        topic = field(path, entry, "topic", "str", where=where)
        partition = field(path, entry, "partition", "int", where=where)
        replicas = int_list(path, field(path, entry, "replicas", "list", where=where), f"partitions[{i}].replicas") if with_replicas else ()
        out.append((topic, partition, replicas))
    return out


@dataclass(frozen=True, slots=True)
class ReassignPartitionsZNode:
    """``/admin/reassign_partitions``: target replica lists (RAR) per partition.

    JSON (seed 000)::

        {"version":1,"partitions":[{"topic":"topic3","partition":1,"replicas":[1,2,3]}]}

    Invariants: each (topic, partition) appears once; each replica list is
    non-empty with distinct broker ids >= 0.
    """

    reassignments: tuple[tuple[str, int, tuple[int, ...]], ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "reassignments", tuple((t, p, tuple(r)) for t, p, r in self.reassignments))
        seen: set[tuple[str, int]] = set()
        for topic, partition, replicas in self.reassignments:
            check_topic(topic)
            check_id("partition", partition)
            check_replicas(f"replicas of {topic}-{partition}", replicas)
            if (topic, partition) in seen:
                raise ValueError(f"partition {topic}-{partition} is listed twice")
            seen.add((topic, partition))

    @staticmethod
    def path() -> str:
        return REASSIGN_PARTITIONS_PATH

    def as_dict(self) -> dict[tuple[str, int], tuple[int, ...]]:
        return {(t, p): r for t, p, r in self.reassignments}

    def encode(self) -> bytes:
        return dump_json(
            {"version": 1, "partitions": [{"topic": t, "partition": p, "replicas": list(r)} for t, p, r in self.reassignments]}
        )

    @classmethod
    def decode(cls, data: bytes, path: str = REASSIGN_PARTITIONS_PATH) -> ReassignPartitionsZNode:
        doc = load_json(path, data)
        check_version(path, doc, (1,))
        entries = _partition_entries(path, doc, with_replicas=True)
        return build(path, lambda: cls(tuple(entries)))


@dataclass(frozen=True, slots=True)
class PreferredReplicaElectionZNode:
    """``/admin/preferred_replica_election``: partitions whose preferred
    replica should become leader.

    JSON (seed 000)::

        {"version":1,"partitions":[{"topic":"topic1","partition":8},{"topic":"topic2","partition":16}]}

    Invariant: each (topic, partition) appears once.
    """

    partitions: tuple[tuple[str, int], ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "partitions", tuple((t, p) for t, p in self.partitions))
        for topic, partition in self.partitions:
            check_topic(topic)
            check_id("partition", partition)
        if len(set(self.partitions)) != len(self.partitions):
            raise ValueError("a partition is listed twice")

    @staticmethod
    def path() -> str:
        return PREFERRED_REPLICA_ELECTION_PATH

    def encode(self) -> bytes:
        return dump_json({"version": 1, "partitions": [{"topic": t, "partition": p} for t, p in self.partitions]})

    @classmethod
    def decode(cls, data: bytes, path: str = PREFERRED_REPLICA_ELECTION_PATH) -> PreferredReplicaElectionZNode:
        doc = load_json(path, data)
        check_version(path, doc, (1,))
        entries = _partition_entries(path, doc, with_replicas=False)
        return build(path, lambda: cls(tuple((t, p) for t, p, _ in entries)))
