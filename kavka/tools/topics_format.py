"""Pure text functions of ``kavka topics``: the ``--replica-assignment``
syntax, topic selection by ``--topic`` pattern, and the ``--describe``
output of kafka-topics.sh.

``--replica-assignment``: partitions separated by commas, the replicas of one
partition by colons, the first replica being the preferred leader:
``0:1,1:2,2:0`` is three partitions of replication factor 2. Every
partition must name distinct brokers and the same number of them.

``--describe``: per topic one line
``Topic: T<TAB>TopicId: ID<TAB>PartitionCount: N<TAB>ReplicationFactor: R<TAB>Configs: k=v,...``
then per partition
``<TAB>Topic: T<TAB>Partition: P<TAB>Leader: L<TAB>Replicas: a,b<TAB>Isr: a,b``
(``<TAB>Offline: c`` appended when replicas are offline; ``Leader: none``
when it has none). The topic id is printed as Kafka prints a Uuid: URL-safe
base64 without padding. ``Configs`` lists the topic's own overrides, not
broker defaults.

Pure functions over values; any thread.
"""

from __future__ import annotations

import base64
import re
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from kavka.client.metadata import PartitionMetadata, TopicMetadata
from kavka.common.ids import NO_LEADER


class AssignmentError(ValueError):
    """A ``--replica-assignment`` that is not valid syntax or not a valid
    assignment; the message names the offending partition."""


def parse_replica_assignment(text: str) -> list[tuple[int, ...]]:
    """``"0:1,1:2"`` -> ``[(0, 1), (1, 2)]`` (index = partition)."""
    if not text.strip():
        raise AssignmentError("--replica-assignment is empty; expected e.g. 0:1,1:2,2:0")
    out: list[tuple[int, ...]] = []
    for p, part in enumerate(text.split(",")):
        items = [s.strip() for s in part.split(":")]
        if any(not s.lstrip("-").isdigit() for s in items):
            raise AssignmentError(f"--replica-assignment partition {p} ({part!r}) is not broker ids "
                                  "separated by ':' (e.g. 0:1:2)")
        brokers = tuple(int(s) for s in items)
        if any(b < 0 for b in brokers):
            raise AssignmentError(f"--replica-assignment partition {p} names a negative broker id: {part!r}")
        if len(set(brokers)) != len(brokers):
            raise AssignmentError(f"--replica-assignment partition {p} lists a broker twice: {part!r}")
        if out and len(brokers) != len(out[0]):
            raise AssignmentError(f"--replica-assignment partition {p} has {len(brokers)} replicas but "
                                  f"partition 0 has {len(out[0])}; every partition needs the same number")
        out.append(brokers)
    return out


def format_replica_assignment(assignment: Iterable[Iterable[int]]) -> str:
    return ",".join(":".join(str(b) for b in replicas) for replicas in assignment)


def select_topics(names: Iterable[str], pattern: str | None) -> list[str]:
    """The names ``pattern`` matches in full (kafka-topics treats
    ``--topic`` as a regular expression outside ``--create``); every name
    when ``pattern`` is None. Sorted."""
    if pattern is None:
        return sorted(names)
    try:
        rx = re.compile(pattern)
    except re.error as e:
        raise ValueError(f"--topic {pattern!r} is not a valid regular expression: {e}") from None
    return sorted(n for n in names if rx.fullmatch(n))


def topic_id_text(topic_id: uuid.UUID | None) -> str:
    """Kafka's Uuid string: 16 bytes, URL-safe base64, no padding."""
    raw = (topic_id or uuid.UUID(int=0)).bytes
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


@dataclass(frozen=True, slots=True)
class DescribeFilter:
    """Which partitions ``--describe`` prints. With any filter set only the
    matching partition lines are printed, without the topic line (as
    kafka-topics.sh does). ``min_isr`` is the topic's min.insync.replicas."""

    under_replicated: bool = False
    unavailable: bool = False
    under_min_isr: bool = False
    at_min_isr: bool = False

    @property
    def active(self) -> bool:
        return self.under_replicated or self.unavailable or self.under_min_isr or self.at_min_isr

    def keep(self, p: PartitionMetadata, live_brokers: frozenset[int], min_isr: int = 1) -> bool:
        if not self.active:
            return True
        return ((self.under_replicated and len(p.isr) < len(p.replicas))
                or (self.unavailable and is_unavailable(p, live_brokers))
                or (self.under_min_isr and len(p.isr) < min_isr)
                or (self.at_min_isr and len(p.isr) == min_isr))


def is_unavailable(p: PartitionMetadata, live_brokers: frozenset[int]) -> bool:
    return p.leader == NO_LEADER or p.leader not in live_brokers


def _ids(ids: Iterable[int]) -> str:
    return ",".join(str(i) for i in ids)


def describe_topic(topic: TopicMetadata, topic_id: uuid.UUID | None, configs: Mapping[str, str | None],
                   live_brokers: frozenset[int], filters: DescribeFilter = DescribeFilter(),
                   min_isr: int = 1) -> list[str]:
    """The ``--describe`` lines of one topic (see the module docstring);
    ``configs`` are its overrides, ``min_isr`` its min.insync.replicas."""
    lines: list[str] = []
    if not filters.active:
        rf = len(topic.partitions[0].replicas) if topic.partitions else 0
        config_text = ",".join(f"{k}={'' if v is None else v}" for k, v in sorted(configs.items()))
        lines.append(f"Topic: {topic.name}\tTopicId: {topic_id_text(topic_id)}\t"
                     f"PartitionCount: {len(topic.partitions)}\tReplicationFactor: {rf}\tConfigs: {config_text}")
    for p in topic.partitions:
        if not filters.keep(p, live_brokers, min_isr):
            continue
        leader = "none" if p.leader == NO_LEADER else str(p.leader)
        line = (f"\tTopic: {topic.name}\tPartition: {p.partition}\tLeader: {leader}\t"
                f"Replicas: {_ids(p.replicas)}\tIsr: {_ids(p.isr)}")
        if p.offline_replicas:
            line += f"\tOffline: {_ids(p.offline_replicas)}"
        lines.append(line)
    return lines
