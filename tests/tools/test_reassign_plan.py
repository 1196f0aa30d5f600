"""The reassignment JSON and the pure steps of ``kavka reassign-partitions``:
plan round trips, generated plans keep each topic's partition count and
replication factor and use only the given brokers, --verify statuses, and
every malformed document is a PlanError naming the problem."""

from __future__ import annotations

import json
import random
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kavka.tools.reassign_plan import (
    MoveStatus,
    PartitionMove,
    PlanError,
    format_plan,
    generate,
    move_status,
    parse_broker_list,
    parse_reassignment,
    parse_topics_to_move,
)

topics = st.text(alphabet="abcxyz._-0123", min_size=1, max_size=8)
moves = st.lists(
    st.builds(PartitionMove, topics, st.integers(0, 50),
              st.lists(st.integers(0, 1000), min_size=1, max_size=5, unique=True).map(tuple)),
    max_size=20, unique_by=lambda m: (m.topic, m.partition))


@given(moves.filter(bool))
def test_plans_round_trip(ms: list[PartitionMove]) -> None:
    text = format_plan(ms)
    assert json.loads(text)["version"] == 1
    assert sorted(parse_reassignment(text), key=lambda m: (m.topic, m.partition)) == \
        sorted(ms, key=lambda m: (m.topic, m.partition))


def test_the_seeds_documents_parse() -> None:
    assert parse_topics_to_move('{"topics":[{"topic":"topic1"}],"version":1}') == ("topic1",)
    plan = '{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[4,5,6]}]}'
    assert parse_reassignment(plan) == (PartitionMove("t", 0, (4, 5, 6)),)
    with_dirs = '{"partitions":[{"topic":"t","partition":1,"replicas":[4,5],"log_dirs":["any","any"]}]}'
    assert parse_reassignment(with_dirs) == (PartitionMove("t", 1, (4, 5)),)


@pytest.mark.parametrize("text, message", [
    ("[", "not valid JSON"),
    ("[]", "must be a JSON object"),
    ('{"version":2,"partitions":[]}', "only version 1"),
    ('{"version":1}', 'non-empty "partitions"'),
    ('{"partitions":[7]}', "partitions[0] must be an object"),
    ('{"partitions":[{"topic":"","partition":0,"replicas":[1]}]}', "partitions[0].topic"),
    ('{"partitions":[{"topic":"t","partition":-1,"replicas":[1]}]}', "partitions[0].partition"),
    ('{"partitions":[{"topic":"t","partition":true,"replicas":[1]}]}', "partitions[0].partition"),
    ('{"partitions":[{"topic":"t","partition":0,"replicas":[]}]}', "non-empty replicas"),
    ('{"partitions":[{"topic":"t","partition":0,"replicas":["1"]}]}', "replicas[0]"),
    ('{"partitions":[{"topic":"t","partition":0,"replicas":[1,1]}]}', "twice"),
    ('{"partitions":[{"topic":"t","partition":0,"replicas":[1],"log_dirs":["/d"]}]}', "not supported"),
    ('{"partitions":[{"topic":"t","partition":0,"replicas":[1],"log_dirs":[]}]}', "one entry per replica"),
    ('{"partitions":[{"topic":"t","partition":0,"replicas":[1]},{"topic":"t","partition":0,"replicas":[2]}]}',
     "more than once"),
])
def test_bad_plans(text: str, message: str) -> None:
    with pytest.raises(PlanError, match=re.escape(message)):
        parse_reassignment(text)


@pytest.mark.parametrize("text, message", [
    ('{"topics":[]}', 'non-empty "topics"'),
    ('{"topics":["t"]}', "must be an object"),
    ('{"topics":[{"topic":"t"},{"topic":"t"}]}', "more than once"),
    ('{"topics":[{"name":"t"}]}', "topics[0].topic"),
])
def test_bad_topics_to_move(text: str, message: str) -> None:
    with pytest.raises(PlanError, match=re.escape(message)):
        parse_topics_to_move(text)


def test_broker_list() -> None:
    assert parse_broker_list("4, 5,6") == (4, 5, 6)
    for bad, message in (("", "empty"), ("4,x", "not a broker id"), ("4,4", "twice"), ("-1", "not a broker id")):
        with pytest.raises(PlanError, match=message):
            parse_broker_list(bad)


@given(st.lists(st.integers(0, 30), min_size=1, max_size=8, unique=True),
       st.dictionaries(st.sampled_from(["a", "b", "c"]), st.tuples(st.integers(1, 12), st.integers(1, 3)),
                       min_size=1),
       st.integers(0, 1000))
def test_generated_plans_use_only_the_given_brokers(brokers, shapes, seed) -> None:
    assignment = {(t, p): tuple(range(rf)) for t, (n, rf) in shapes.items() for p in range(n)}
    if max(rf for _, rf in shapes.values()) > len(brokers):
        with pytest.raises(PlanError, match="replication factor"):
            generate(assignment, sorted(shapes), brokers, random.Random(seed))
        return
    proposed = generate(assignment, sorted(shapes), brokers, random.Random(seed))
    assert sorted((m.topic, m.partition) for m in proposed) == sorted(assignment)
    for m in proposed:
        assert len(m.replicas) == len(assignment[(m.topic, m.partition)])
        assert len(set(m.replicas)) == len(m.replicas) and set(m.replicas) <= set(brokers)


def test_generate_refuses_a_topic_without_partitions() -> None:
    with pytest.raises(PlanError, match="no partitions"):
        generate({("a", 0): (1,)}, ["b"], [1])


def test_move_status() -> None:
    m = PartitionMove("t", 0, (4, 5, 6))
    assert move_status(m, (1, 2, 3, 4, 5, 6), in_progress=True) is MoveStatus.IN_PROGRESS
    assert move_status(m, (4, 5, 6), in_progress=False) is MoveStatus.COMPLETED
    assert move_status(m, (5, 4, 6), in_progress=False) is MoveStatus.FAILED  # order names the preferred leader
    assert move_status(m, None, in_progress=False) is MoveStatus.FAILED


def test_generate_places_replicas_over_the_racks() -> None:
    racks = {1: "a", 2: "a", 3: "b", 4: "b", 5: "c", 6: "c"}
    assignment = {("t", p): (1, 2, 3) for p in range(10)}
    proposed = generate(assignment, ["t"], sorted(racks), random.Random(3), racks)
    assert len(proposed) == 10
    for m in proposed:
        assert sorted(racks[b] for b in m.replicas) == ["a", "b", "c"]


def test_generate_refuses_a_mix_of_racked_and_unracked_brokers_unless_racks_are_ignored() -> None:
    racks = {1: "a", 2: None, 3: "b"}
    assignment = {("t", 0): (1, 2)}
    with pytest.raises(PlanError, match=r"Not all brokers have rack information \(brokers \[2\].*--disable-rack-aware"):
        generate(assignment, ["t"], [1, 2, 3], random.Random(1), racks)
    # --disable-rack-aware: racks=None
    assert len(generate(assignment, ["t"], [1, 2, 3], random.Random(1), None)) == 1
    # only the brokers of --broker-list count
    assert len(generate(assignment, ["t"], [1, 3], random.Random(1), racks)) == 1
