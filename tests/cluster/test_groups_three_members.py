"""Consumer groups split, rebalance and commit with each of confluent-kafka,
kafka-python, aiokafka and kcat (``kcat -G``, librdkafka's balanced
consumer, one process per member) against a 3-broker Kavka (``__consumer_offsets`` RF=3, the topic RF=3):

1. three members of one group on a 6-partition topic get disjoint
   assignments covering every partition - each member's own view and the
   coordinator's DescribeGroups agree - and each consumes exactly the
   records of its own partitions;
2. one member leaves (close / SIGTERM, LeaveGroup) while new records
   arrive: the other two take its partitions over;
3. a fourth member joins while new records arrive: the group rebalances
   into a split among three again;

and over the whole run every record is consumed exactly once (nothing
twice after the commits, nothing skipped), every commit succeeded, and
the group's committed offsets end at each partition's end.
"""

from __future__ import annotations

import uuid

import pytest

from kavka.tools.cluster import LocalCluster

from .cluster_helpers import create_topic, leaders, produce, wait_until
from .group_helpers import (
    GroupView,
    Ledger,
    assert_exactly_once,
    assert_owned,
    group_log,
    phase_values,
    wait_consumed,
    wait_split,
)
from .group_members import MEMBERS

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

PARTITIONS = 6
PER_PARTITION = 10  # records per partition in each of the three phases
CONFIG = {"offsets.topic.num.partitions": "6", "offsets.topic.replication.factor": "3",
          "group.initial.rebalance.delay.ms": "0", "group.min.session.timeout.ms": "1000"}


@pytest.fixture(scope="module")
def cluster(zookeeper, tmp_path_factory):
    c = LocalCluster(3, tmp_path_factory.mktemp("groups-three"),
                     zookeeper=f"{zookeeper}/kavka-groups-three-{uuid.uuid4().hex[:8]}", config=CONFIG)
    c.start()
    yield c
    c.stop()


def _produce_phase(cluster, topic: str, phase: str) -> set[bytes]:
    values = phase_values(phase, PARTITIONS, PER_PARTITION)
    produce(cluster, topic, values)
    return {v for vs in values.values() for v in vs}


def _stop_all(members: dict) -> None:
    """Stop every member (all asked first, so they leave together) even if
    one fails to; then report the first failure."""
    for member in members.values():
        member.request_stop()
    failures = []
    for name in list(members):
        try:
            members.pop(name).stop()
        except AssertionError as e:
            failures.append(e)
    if failures:
        raise failures[0]


@pytest.mark.parametrize("client", sorted(MEMBERS))
def test_three_members_split_leave_and_join(cluster, client):
    topic, group = f"three-{client}", f"g-three-{client}"
    create_topic(cluster, topic, partitions=PARTITIONS, replication_factor=3)
    wait_until(lambda: all(leader >= 0 for leader in leaders(cluster, topic).values())
               and len(leaders(cluster, topic)) == PARTITIONS, 30, f"a leader for every partition of {topic}")
    member_class = MEMBERS[client]
    ledger = Ledger()
    view = GroupView(cluster.bootstrap, group)
    members = {}

    def start(name: str) -> None:
        members[name] = member_class(name, cluster.bootstrap, group, topic, ledger)

    try:
        _scenario(cluster, topic, ledger, view, start, members)
    except AssertionError as e:
        raise AssertionError(f"{e}\n--- the brokers on {group}:\n{group_log(cluster, group)}") from None
    finally:
        _stop_all(members)
    phase1, phase2, phase3 = (set().union(*phase_values(ph, PARTITIONS, PER_PARTITION).values())
                              for ph in ("one", "two", "three"))
    assert_exactly_once(ledger, phase1 | phase2 | phase3)
    assert view.committed(topic, PARTITIONS) == {p: 3 * PER_PARTITION for p in range(PARTITIONS)}
    state, described = view.describe()
    assert state == "EMPTY" and not described


def _scenario(cluster, topic: str, ledger: Ledger, view: GroupView, start, members: dict) -> None:
    """Three members split; a leaves; d joins; each while records arrive."""
    for name in ("a", "b", "c"):
        start(name)
    first = wait_split(view, ledger, {"a", "b", "c"}, PARTITIONS)
    phase1 = _produce_phase(cluster, topic, "one")
    wait_consumed(ledger, phase1, "the first phase consumed by the three members")
    assert_owned(ledger, phase1, [first])

    members.pop("a").stop()  # LeaveGroup; its partitions go to b and c
    phase2 = _produce_phase(cluster, topic, "two")  # while the group rebalances
    second = wait_split(view, ledger, {"b", "c"}, PARTITIONS)
    wait_consumed(ledger, phase2, "the second phase consumed after a left")
    assert_owned(ledger, phase2, [first, second])
    assert first["a"] <= second["b"] | second["c"]

    start("d")
    phase3 = _produce_phase(cluster, topic, "three")  # while d joins
    third = wait_split(view, ledger, {"b", "c", "d"}, PARTITIONS)
    wait_consumed(ledger, phase3, "the third phase consumed after d joined")
    assert_owned(ledger, phase3, [second, third])
