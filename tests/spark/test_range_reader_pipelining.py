"""The range reader's pipelining (``kavka.spark.range_reader``): the next
Fetch is in flight while a batch is with Spark. Every offset of the range
still comes exactly once and in order, and a reader Spark stops early
(a ``limit``, a failed task) drops the fetch in flight with its client,
leaving no task behind."""

from __future__ import annotations

import gc
import logging

import pytest

from kavka.spark.options import parse_source_options
from kavka.spark.range_reader import RangeReader
from kavka.spark.ranges import OffsetRange
from tests.spark.conftest import create_topic, produce

pytestmark = pytest.mark.spark

TOPIC = "pipelined"
RECORDS = 400


@pytest.fixture(scope="module")
def pipelined(kavka_cluster):
    create_topic(kavka_cluster, TOPIC)
    # One produce call per 50 records: several record batches on the log.
    for start in range(0, RECORDS, 50):
        produce(kavka_cluster, TOPIC, [(b"k%d" % i, b"v%05d" % i + b"x" * 200) for i in range(start, start + 50)])
    return kavka_cluster


def reader(cluster, start: int, end: int, **client) -> RangeReader:
    # Fetches of ~2 KiB by default: one record batch each, so many batches and fetches.
    opts = parse_source_options({"kafka.bootstrap.servers": cluster.bootstrap, "subscribe": TOPIC,
                                 "kafka.max.partition.fetch.bytes": "2048", **client}, streaming=False)
    return RangeReader(opts, OffsetRange(TOPIC, 0, start, end))


def test_every_offset_once_and_in_order_across_many_fetches(pipelined):
    for start, end in ((37, 371), (0, RECORDS), (350, 351)):
        batches = list(reader(pipelined, start, end).batches())
        offsets = [o for b in batches for o in b.column("offset").to_pylist()]
        assert offsets == list(range(start, end))
        values = [bytes(v)[:6] for b in batches for v in b.column("value").to_pylist()]
        assert values == [b"v%05d" % i for i in range(start, end)]
        assert end - start < 50 or len(batches) > 3


def test_a_reader_stopped_after_its_first_batch_leaves_no_fetch_behind(pipelined, caplog):
    caplog.set_level(logging.ERROR, logger="asyncio")
    # The range ends one past the log's end: the fetch sent after the first
    # batch (all 400 records) waits on the broker for more data.
    batches = reader(pipelined, 0, RECORDS + 1, **{"kafka.max.partition.fetch.bytes": "1048576",
                                                   "kafka.fetch.max.wait.ms": "20000"}).batches()
    first = next(batches)
    assert first.num_rows == RECORDS
    batches.close()  # what Spark does to a task's iterator it stops reading
    del batches
    gc.collect()
    assert not [r for r in caplog.records if "pending" in r.getMessage() or "never retrieved" in r.getMessage()]
