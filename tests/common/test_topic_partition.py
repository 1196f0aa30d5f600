"""TopicPartition: one value for every layer (the storage dataclass, the
controller NamedTuple and the client dataclass it replaces hashed
differently), its order, its str, and that it is an immutable tuple."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kavka.common.topic_partition import TopicPartition
from kavka.controller.context import ControllerContext, PartitionReplica, ReplicaAssignment
from kavka.storage.log_dir_names import log_dir_name, parse_topic_partition

topics = st.from_regex(r"[A-Za-z0-9._-]{1,40}", fullmatch=True).filter(lambda t: t not in (".", ".."))
partitions = st.integers(min_value=0, max_value=2**31 - 1)


@given(topics, partitions)
def test_equal_values_hash_alike_whichever_layer_made_them(topic, partition):
    """The log manager (a directory name), the controller (its context) and
    a client (by hand) all make the same key."""
    direct = TopicPartition(topic, partition)
    from_disk = parse_topic_partition(log_dir_name(direct))
    ctx = ControllerContext()
    ctx.update_assignment(direct, ReplicaAssignment((1,)))
    (from_controller,) = ctx.all_partitions()
    assert direct == from_disk == from_controller
    assert hash(direct) == hash(from_disk) == hash(from_controller)
    table = {from_disk: "log"}
    assert table[from_controller] == "log" and table[direct] == "log"
    assert PartitionReplica(from_controller, 1) == PartitionReplica(direct, 1)


@given(topics, partitions)
def test_str_is_kafkas(topic, partition):
    assert str(TopicPartition(topic, partition)) == f"{topic}-{partition}"


@given(st.lists(st.tuples(topics, partitions), max_size=20))
def test_order_is_by_topic_then_partition(pairs):
    tps = [TopicPartition(t, p) for t, p in pairs]
    assert [(tp.topic, tp.partition) for tp in sorted(tps)] == sorted(pairs)


def test_order_puts_partition_10_after_2():
    assert sorted([TopicPartition("b", 0), TopicPartition("a", 10), TopicPartition("a", 2)]) == [
        TopicPartition("a", 2), TopicPartition("a", 10), TopicPartition("b", 0)]


def test_it_is_an_immutable_tuple_of_topic_and_partition():
    """A named tuple so that hashing, equality and order run in C (the
    module docstring): it equals, hashes and sorts as the plain tuple."""
    tp = TopicPartition("orders", 3)
    with pytest.raises(AttributeError):
        tp.partition = 4  # type: ignore[misc]
    assert not hasattr(tp, "__dict__")
    assert tp == ("orders", 3) and hash(tp) == hash(("orders", 3))
    topic, partition = tp
    assert (topic, partition) == ("orders", 3)
    assert tp < ("orders", 4)
