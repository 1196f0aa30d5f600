"""``FetcherAssignments``: the table of followed partitions, grouped by
source broker and fetcher id."""

from __future__ import annotations

import pytest

from kavka.common.topic_partition import TopicPartition
from kavka.replication.fetcher.assignments import FetcherAssignments, InitialFetchState
from kavka.replication.state import BrokerEndPoint


def test_fetcher_assignments_group_by_source_and_fetcher():
    table = FetcherAssignments(num_fetchers=2)
    leader2, leader3 = BrokerEndPoint(2, "127.0.0.1", 9092), BrokerEndPoint(3, "127.0.0.1", 9093)
    tps = [TopicPartition("orders", i) for i in range(6)]
    table.add_fetcher_for_partitions({tp: InitialFetchState(leader2, 1, 0) for tp in tps[:4]})
    table.add_fetcher_for_partitions({tps[4]: InitialFetchState(leader3, 1, 0)})
    fetchers = table.fetchers()
    assert sum(len(v) for v in fetchers.values()) == 5
    assert {k.broker_id for k in fetchers} == {2, 3} and all(k.fetcher_id in (0, 1) for k in fetchers)
    assert table.fetcher_id(tps[0]) == FetcherAssignments(2).fetcher_id(tps[0])  # stable across instances
    table.add_fetcher_for_partitions({tps[0]: InitialFetchState(leader3, 2, 5)})  # leader moved
    assert table.fetch_state(tps[0]).leader == leader3
    table.remove_fetcher_for_partitions([tps[4], tps[0]])
    table.shutdown_idle_fetchers()
    assert {k.broker_id for k in table.fetchers()} == {2}
    with pytest.raises(ValueError):
        FetcherAssignments(0)
