"""The JSON documents of ``kavka reassign-partitions`` (seed 000 §Kafka
Reassign Partitions Tool) and the pure steps on them.

Formats, as kafka-reassign-partitions.sh reads and writes them:

- topics to move: ``{"topics":[{"topic":"t"}],"version":1}``;
- a reassignment plan:
  ``{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[4,5,6]}]}``
  — the first replica of each list is the partition's preferred leader. A
  ``log_dirs`` list (newer Kafka writes it) is accepted when every entry is
  ``"any"``; Kavka places replicas on brokers, not on chosen directories.

``version`` may be left out; when present it must be 1. Bad input raises
``PlanError`` naming the entry and what to fix; nothing here touches the
network or the disk. Any thread.
"""

from __future__ import annotations

import enum
import json
import random
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from kavka.controller.assignment import AssignmentError, assign_replicas

PLAN_VERSION = 1
MAX_BROKER_ID = (1 << 31) - 1


class PlanError(ValueError):
    """A reassignment or topics-to-move document (or --broker-list) is not
    valid; the message says which entry and why."""


@dataclass(frozen=True, slots=True)
class PartitionMove:
    """One partition's target replica list (RAR); ``replicas[0]`` is the
    preferred leader. Invariant: replicas are distinct, non-negative and
    there is at least one."""

    topic: str
    partition: int
    replicas: tuple[int, ...]

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"


class MoveStatus(enum.Enum):
    """Where a planned move stands (--verify)."""

    COMPLETED = "completed successfully"
    IN_PROGRESS = "is still in progress"
    FAILED = "failed"


def _load(text: str, what: str) -> dict:
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise PlanError(f"{what} is not valid JSON: {e}") from None
    if not isinstance(doc, dict):
        raise PlanError(f"{what} must be a JSON object, got {type(doc).__name__}")
    version = doc.get("version", PLAN_VERSION)
    if version != PLAN_VERSION or isinstance(version, bool):
        raise PlanError(f"{what} has version {version!r}; only version 1 is known")
    return doc


def _int(value: object, what: str, *, low: int = 0, high: int = MAX_BROKER_ID) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise PlanError(f"{what} must be an integer between {low} and {high}, got {value!r}")
    return value


def _topic(value: object, what: str) -> str:
    if not isinstance(value, str) or not value:
        raise PlanError(f"{what} must be a non-empty topic name, got {value!r}")
    return value


def parse_reassignment(text: str) -> tuple[PartitionMove, ...]:
    """A reassignment plan -> its moves, in document order."""
    doc = _load(text, "the reassignment JSON")
    entries = doc.get("partitions")
    if not isinstance(entries, list) or not entries:
        raise PlanError('the reassignment JSON needs a non-empty "partitions" list')
    moves: list[PartitionMove] = []
    seen: set[tuple[str, int]] = set()
    for i, entry in enumerate(entries):
        where = f"partitions[{i}]"
        if not isinstance(entry, dict):
            raise PlanError(f"{where} must be an object with topic, partition and replicas")
        topic = _topic(entry.get("topic"), f"{where}.topic")
        partition = _int(entry.get("partition"), f"{where}.partition")
        replicas = entry.get("replicas")
        if not isinstance(replicas, list) or not replicas:
            raise PlanError(f"{where} ({topic}-{partition}) needs a non-empty replicas list")
        ids = tuple(_int(r, f"{where}.replicas[{j}]") for j, r in enumerate(replicas))
        if len(set(ids)) != len(ids):
            raise PlanError(f"{where} ({topic}-{partition}) lists a broker twice in replicas {list(ids)}")
        dirs = entry.get("log_dirs")
        if dirs is not None:
            if not isinstance(dirs, list) or len(dirs) != len(ids):
                raise PlanError(f"{where} ({topic}-{partition}): log_dirs must list one entry per replica")
            if any(d != "any" for d in dirs):
                raise PlanError(f"{where} ({topic}-{partition}): log_dirs other than \"any\" are not supported "
                                f"(Kavka moves replicas between brokers, not between directories)")
        if (topic, partition) in seen:
            raise PlanError(f"partition {topic}-{partition} appears more than once in the reassignment JSON")
        seen.add((topic, partition))
        moves.append(PartitionMove(topic, partition, ids))
    return tuple(moves)


def parse_topics_to_move(text: str) -> tuple[str, ...]:
    """A topics-to-move document -> the topic names, in document order."""
    doc = _load(text, "the topics-to-move JSON")
    entries = doc.get("topics")
    if not isinstance(entries, list) or not entries:
        raise PlanError('the topics-to-move JSON needs a non-empty "topics" list')
    names: list[str] = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise PlanError(f'topics[{i}] must be an object like {{"topic": "name"}}')
        name = _topic(entry.get("topic"), f"topics[{i}].topic")
        if name in names:
            raise PlanError(f"topic {name} appears more than once in the topics-to-move JSON")
        names.append(name)
    return tuple(names)


def parse_broker_list(text: str) -> tuple[int, ...]:
    """``"4,5,6"`` -> (4, 5, 6): distinct non-negative ids."""
    items = [s.strip() for s in text.split(",") if s.strip()]
    if not items:
        raise PlanError("--broker-list is empty; give broker ids like 4,5,6")
    ids: list[int] = []
    for s in items:
        if not s.isdigit() or int(s) > MAX_BROKER_ID:
            raise PlanError(f"--broker-list entry {s!r} is not a broker id")
        if int(s) in ids:
            raise PlanError(f"--broker-list names broker {s} twice")
        ids.append(int(s))
    return tuple(ids)


def format_plan(moves: Iterable[PartitionMove]) -> str:
    """The moves as one line of plan JSON, partitions sorted by topic then
    partition (the form --execute and --verify read back)."""
    ordered = sorted(moves, key=lambda m: (m.topic, m.partition))
    doc = {"version": PLAN_VERSION,
           "partitions": [{"topic": m.topic, "partition": m.partition, "replicas": list(m.replicas)}
                          for m in ordered]}
    return json.dumps(doc, separators=(",", ":"))


def current_moves(assignment: Mapping[tuple[str, int], tuple[int, ...]],
                  keys: Iterable[tuple[str, int]]) -> tuple[PartitionMove, ...]:
    """The present replica lists of ``keys`` as a plan (for rollback)."""
    return tuple(PartitionMove(t, p, tuple(assignment[(t, p)])) for t, p in keys)


def generate(assignment: Mapping[tuple[str, int], tuple[int, ...]], topics: Iterable[str],
             brokers: Iterable[int], rng: random.Random | None = None,
             racks: Mapping[int, str | None] | None = None) -> tuple[PartitionMove, ...]:
    """A proposed plan placing every partition of ``topics`` on ``brokers``
    with the placement of new topics (seed 000 §如何将所有 Replica 均匀分布到
    整个集群, ``kavka.controller.assignment``), keeping each topic's
    replication factor (that of its partition 0, as Kafka does).
    ``assignment`` maps (topic, partition) to the present replicas;
    ``racks`` each broker's rack (rack-aware placement when every one of
    ``brokers`` has one; None: ignore racks, --disable-rack-aware)."""
    brokers = tuple(brokers)
    if racks is not None:
        unracked = sorted(b for b in brokers if racks.get(b) is None)
        if unracked and len(unracked) < len(brokers):
            # Kafka's ReassignPartitionsCommand.getBrokerMetadata
            raise PlanError(f"Not all brokers have rack information (brokers {unracked} have no broker.rack). Add "
                            "--disable-rack-aware in command line to make replica assignment without rack "
                            "information.")
    out: list[PartitionMove] = []
    for topic in topics:
        partitions = sorted(p for t, p in assignment if t == topic)
        if not partitions:
            raise PlanError(f"topic {topic} has no partitions in the cluster metadata")
        rf = len(assignment[(topic, partitions[0])])
        try:
            placed = assign_replicas(brokers, len(partitions), rf, racks=racks, rng=rng)
        except AssignmentError as e:
            raise PlanError(f"topic {topic}: {e}") from None
        out.extend(PartitionMove(topic, p, placed[i]) for i, p in enumerate(partitions))
    return tuple(out)


def move_status(move: PartitionMove, replicas: tuple[int, ...] | None, in_progress: bool) -> MoveStatus:
    """--verify for one move: still listed by the controller -> in progress;
    else the partition's replicas (None: the partition is gone) equal the
    plan's, in order -> completed; anything else failed."""
    if in_progress:
        return MoveStatus.IN_PROGRESS
    return MoveStatus.COMPLETED if replicas == move.replicas else MoveStatus.FAILED
