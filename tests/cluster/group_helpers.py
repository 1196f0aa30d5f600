"""Helpers of the consumer-group tests with real clients: a
thread-safe ledger of what each member consumed and which partitions it
believes it owns, the group as the coordinator describes it
(DescribeGroups through librdkafka's admin client), and the checks.

A "split" of a 6-partition topic among members is reached when every
member's own view of its assignment is non-empty, the views are disjoint
and cover every partition, and the coordinator describes the group as
Stable with exactly those members holding exactly those partitions.

Every wait is bounded and fails naming what it waited for. Called from
the test's thread; the ledger is also written from member threads.
"""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass

from .cluster_helpers import wait_until


@dataclass(frozen=True, slots=True)
class Consumed:
    member: str
    partition: int
    offset: int
    value: bytes


class Ledger:
    """What the members reported: records consumed (in order), commit
    failures, client errors, and each live member's assignment view."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.records: list[Consumed] = []
        self.commit_failures: list[tuple[str, int, int, str]] = []
        self.errors: list[tuple[str, str]] = []
        self._views: dict[str, frozenset[int]] = {}

    def consumed(self, member: str, partition: int, offset: int, value: bytes) -> None:
        with self._lock:
            self.records.append(Consumed(member, partition, offset, value))

    def commit_failed(self, member: str, partition: int, offset: int, error: str) -> None:
        with self._lock:
            self.commit_failures.append((member, partition, offset, error))

    def error(self, member: str, error: str) -> None:
        with self._lock:
            self.errors.append((member, error))

    def assigned(self, member: str, partitions: set[int]) -> None:
        with self._lock:
            self._views[member] = frozenset(partitions)

    def left(self, member: str) -> None:
        with self._lock:
            self._views.pop(member, None)

    def views(self) -> dict[str, frozenset[int]]:
        with self._lock:
            return dict(self._views)

    def consumed_values(self) -> Counter[bytes]:
        with self._lock:
            return Counter(r.value for r in self.records)

    def snapshot(self) -> list[Consumed]:
        with self._lock:
            return list(self.records)


def is_split(parts: dict[str, frozenset[int]], partitions: int) -> bool:
    """Non-empty, pairwise disjoint, covering 0..partitions-1."""
    return (bool(parts) and all(parts.values()) and sum(map(len, parts.values())) == partitions
            and frozenset().union(*parts.values()) == frozenset(range(partitions)))


class GroupView:
    """The coordinator's description of one group (librdkafka admin client)."""

    def __init__(self, bootstrap: str, group: str) -> None:
        from confluent_kafka.admin import AdminClient

        self.group = group
        self.admin = AdminClient({"bootstrap.servers": bootstrap, "socket.timeout.ms": 10000})

    def describe(self) -> tuple[str, dict[str, frozenset[int]]]:
        """(state name, client id -> partitions) as DescribeGroups answers."""
        desc = self.admin.describe_consumer_groups([self.group], request_timeout=10)[self.group].result(15)
        members = {m.client_id: frozenset(tp.partition for tp in m.assignment.topic_partitions)
                   for m in desc.members}
        assert len(members) == len(desc.members), f"two members share a client id: {desc.members}"
        return desc.state.name, members

    def committed(self, topic: str, partitions: int) -> dict[int, int]:
        from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition

        request = ConsumerGroupTopicPartitions(self.group, [TopicPartition(topic, p) for p in range(partitions)])
        got = self.admin.list_consumer_group_offsets([request], request_timeout=10)[self.group].result(15)
        return {tp.partition: tp.offset for tp in got.topic_partitions}


def wait_split(view: GroupView, ledger: Ledger, names: set[str], partitions: int,
               timeout: float = 60.0) -> dict[str, frozenset[int]]:
    """Wait until ``names`` (and only they) hold a split, in their own
    views and in the coordinator's; returns it."""
    last: list[object] = []

    def probe():
        views = ledger.views()
        state, described = view.describe()
        last[:] = ["coordinator", state, described, "client views", views]
        if set(views) != names or not is_split(views, partitions):
            return None
        return views if state == "STABLE" and described == views else None

    try:
        return wait_until(probe, timeout, f"a split of {partitions} partitions among {sorted(names)}", 0.2)
    except AssertionError as e:
        raise AssertionError(f"{e}; last seen {last}; errors {ledger.errors}") from None


def phase_values(phase: str, partitions: int, per_partition: int) -> dict[int, list[bytes]]:
    return {p: [f"{phase}-{p}-{i}".encode() for i in range(per_partition)] for p in range(partitions)}


def wait_consumed(ledger: Ledger, values: set[bytes], what: str, timeout: float = 60.0) -> None:
    def probe():
        return values <= set(ledger.consumed_values())
    try:
        wait_until(probe, timeout, what, 0.1)
    except AssertionError as e:
        missing = sorted(values - set(ledger.consumed_values()))
        raise AssertionError(f"{e}: {len(missing)} missing, e.g. {missing[:5]}; views {ledger.views()}; "
                             f"errors {ledger.errors}") from None


def assert_owned(ledger: Ledger, values: set[bytes], owners: list[dict[str, frozenset[int]]]) -> None:
    """Each of ``values`` was consumed by a member that held its partition
    in one of the ``owners`` splits (before or after a rebalance)."""
    wrong = []
    for r in ledger.snapshot():
        if r.value in values and not any(r.partition in split.get(r.member, ()) for split in owners):
            wrong.append(r)
    assert not wrong, f"records consumed by a member not owning their partition: {wrong[:5]}"


def assert_exactly_once(ledger: Ledger, produced: set[bytes]) -> None:
    """Nothing skipped, nothing consumed twice, nothing unknown; every
    commit succeeded and no client reported an error."""
    counts = ledger.consumed_values()
    missing = produced - set(counts)
    twice = {v: [r.member for r in ledger.snapshot() if r.value == v] for v, n in counts.items() if n > 1}
    unknown = set(counts) - produced
    assert not missing, f"{len(missing)} records never consumed, e.g. {sorted(missing)[:5]}"
    assert not twice, f"{len(twice)} records consumed twice, e.g. {sorted(twice.items())[:5]}"
    assert not unknown, f"consumed records never produced: {sorted(unknown)[:5]}"
    assert not ledger.commit_failures, f"commits failed: {ledger.commit_failures[:5]}"
    assert not ledger.errors, f"client errors: {ledger.errors[:5]}"


def group_log(cluster, group: str, limit: int = 60) -> str:
    """The brokers' log lines about ``group`` (for a failure message)."""
    lines = []
    for broker_id, b in cluster.brokers.items():
        try:
            text = b.log_path.read_text(errors="replace")
        except OSError:
            continue
        lines += [f"[broker {broker_id}] {line}" for line in text.splitlines() if group in line]
    return "\n".join(sorted(lines, key=lambda line: line.split("] ", 1)[1][:23])[-limit:])
