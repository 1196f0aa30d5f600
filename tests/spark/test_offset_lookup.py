"""The planning-side ``OffsetLookup`` keeps its client (connections and
metadata) across look-ups, and a look-up after the broker restarted
reconnects instead of failing; the stream reader keeps one lookup for its
life, leaves it out of its pickle and closes it on ``stop()``. Real broker
processes on the session's ZooKeeper; no Spark session."""

from __future__ import annotations

import pickle

import pytest

from kavka.client.connection import BrokerConnection
from kavka.common.topic_partition import TopicPartition
from kavka.spark.offset_lookup import OffsetLookup
from kavka.spark.options import parse_source_options
from tests.spark.conftest import create_topic, produce

pytestmark = pytest.mark.spark


@pytest.fixture
def connects(monkeypatch) -> list[BrokerConnection]:
    """Every connection any Kavka client opens in the test."""
    made: list[BrokerConnection] = []
    real = BrokerConnection.connect

    async def counted(self: BrokerConnection) -> BrokerConnection:
        made.append(self)
        return await real(self)

    monkeypatch.setattr(BrokerConnection, "connect", counted)
    return made


def test_lookups_reuse_one_client_and_reconnect_after_a_broker_restart(make_module_cluster, connects):
    cluster = make_module_cluster(1)
    create_topic(cluster, "reused", partitions=2)
    produce(cluster, "reused", [(b"k", b"v%d" % i) for i in range(10)], partition=0)
    options = parse_source_options({"kafka.bootstrap.servers": cluster.bootstrap, "subscribe": "reused"},
                                   streaming=True)
    tps = [TopicPartition("reused", 0), TopicPartition("reused", 1)]
    with OffsetLookup(options) as lookup:
        assert lookup.latest(sorted(lookup.listing().partitions)) == {tps[0]: 10, tps[1]: 0}
        opened = len(connects)
        assert opened >= 1
        for _ in range(3):
            assert sorted(lookup.listing().partitions) == tps
            assert lookup.latest(tps, fresh=True) == {tps[0]: 10, tps[1]: 0}
            assert lookup.earliest(tps) == {tps[0]: 0, tps[1]: 0}
        assert len(connects) == opened, "a look-up opened a new connection instead of reusing the client's"

        # Restarted between look-ups: the pooled connections are dead, but
        # the lookup's loop has not run to notice; the next look-up must
        # reconnect, not fail.
        (broker,) = cluster.brokers
        cluster.restart_broker(broker)
        produce(cluster, "reused", [(b"k", b"w")], partition=1)
        assert sorted(lookup.listing().partitions) == tps
        assert lookup.latest(tps) == {tps[0]: 10, tps[1]: 1}
        assert len(connects) > opened


def test_the_stream_reader_keeps_one_lookup_and_closes_it_on_stop(make_module_cluster, connects):
    from kavka.spark.stream_reader import KavkaStreamReader

    cluster = make_module_cluster(1)
    create_topic(cluster, "kept", partitions=1)
    produce(cluster, "kept", [(b"k", b"v%d" % i) for i in range(4)])
    options = parse_source_options({"kafka.bootstrap.servers": cluster.bootstrap, "subscribe": "kept",
                                    "startingOffsets": "earliest"}, streaming=True)
    reader = KavkaStreamReader(options)
    start = reader.initialOffset()
    assert start == {"kept": {"0": 0}}
    opened = len(connects)
    from pyspark.sql.streaming.datasource import ReadAllAvailable

    for _ in range(3):
        end = reader.latestOffset(start, ReadAllAvailable())
        assert end == {"kept": {"0": 4}}
        assert len(reader.partitions(start, end)) == 1
    assert len(connects) == opened
    copy = pickle.loads(pickle.dumps(reader))  # what Spark ships to executors for read()
    assert copy.options == reader.options
    live = [c for c in connects if c.connected]
    assert live
    reader.stop()
    assert not any(c.connected for c in live)
    reader.stop()  # Spark may stop a reader that already stopped
    assert reader.latestOffset(start, ReadAllAvailable()) == {"kept": {"0": 4}}  # a new lookup after stop
    reader.stop()
