"""Partition directory names (seed 002 §5.2): ``<topic>-<partition>`` and
``<topic>-<partition>.<uuid>-delete``, read back into a TopicPartition."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kavka.common.topic_partition import TopicPartition
from kavka.storage.log_dir_names import (
    InvalidLogDirName,
    delete_dir_name,
    is_delete_dir,
    log_dir_name,
    parse_topic_partition,
)

topics = st.from_regex(r"[A-Za-z0-9._-]{1,60}", fullmatch=True)


@given(topics, st.integers(min_value=0, max_value=10**6))
def test_dir_names_round_trip(topic, partition):
    tp = TopicPartition(topic, partition)
    assert log_dir_name(tp) == f"{topic}-{partition}" == str(tp)
    assert parse_topic_partition(log_dir_name(tp)) == tp
    deleted = delete_dir_name(tp)
    assert deleted.startswith(f"{topic}-{partition}.") and is_delete_dir(deleted)
    assert not is_delete_dir(log_dir_name(tp))
    assert delete_dir_name(tp) != deleted  # unique per deletion


@pytest.mark.parametrize("name", ["orders", "orders-", "-3", "orders-x", "bad topic-1"])
def test_other_names_are_refused_naming_the_directory(name):
    with pytest.raises(InvalidLogDirName, match="not in the form <topic>-<partition>"):
        parse_topic_partition(name)
