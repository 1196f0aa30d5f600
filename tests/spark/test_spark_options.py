"""Option parsing, offsets JSON and range planning of kavka.spark: pure
functions, no SparkSession, no cluster."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kavka.common.topic_partition import TopicPartition
from kavka.spark.offsets import (
    OffsetJsonError,
    from_json_dict,
    parse_assign,
    parse_partition_offsets,
    to_json,
    to_json_dict,
)
from kavka.spark.options import (
    Assign,
    KavkaOptionError,
    Subscribe,
    SubscribePattern,
    parse_sink_options,
    parse_source_options,
)
from kavka.spark.ranges import OffsetRange, split_ranges
from kavka.spark.stream_reader import rate_limit

pytestmark = pytest.mark.spark

BASE = {"kafka.bootstrap.servers": "127.0.0.1:9092"}

topics = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789._-", min_size=1, max_size=12)
offset_maps = st.dictionaries(st.builds(TopicPartition, topics, st.integers(0, 1000)), st.integers(0, 2**62),
                              max_size=12)


def src(streaming: bool = False, **opts):
    return parse_source_options({**BASE, **{k.lower(): v for k, v in opts.items()}}, streaming=streaming)


# -- offsets JSON ------------------------------------------------------------------------

@settings(max_examples=60)
@given(offset_maps)
def test_offsets_json_round_trip(offsets):
    doc = to_json_dict(offsets)
    assert from_json_dict(json.loads(json.dumps(doc))) == offsets


@settings(max_examples=60)
@given(offset_maps, st.randoms())
def test_offsets_json_text_does_not_depend_on_insertion_order(offsets, rnd):
    items = list(offsets.items())
    rnd.shuffle(items)
    assert to_json(dict(items)) == to_json(offsets)
    # and it is what json.dumps of the stable dict gives (PySpark's own serialisation)
    assert json.dumps(to_json_dict(dict(items))) == json.dumps(to_json_dict(offsets))


def test_offsets_json_shapes():
    assert parse_partition_offsets("startingOffsets", '{"a":{"0":23,"1":-1},"b":{"0":-2}}') == {
        TopicPartition("a", 0): 23, TopicPartition("a", 1): -1, TopicPartition("b", 0): -2}
    assert parse_assign("assign", '{"b":[2,0],"a":[1]}') == (
        TopicPartition("a", 1), TopicPartition("b", 0), TopicPartition("b", 2))


@pytest.mark.parametrize("text, words", [
    ("{not json", "expected JSON"),
    ("[1, 2]", "JSON object"),
    ('{"a": [1]}', "must map partitions"),
    ('{"a": {"x": 1}}', "not a number"),
    ('{"a": {"-1": 1}}', "non-negative"),
    ('{"a": {"0": "5"}}', "must be an integer"),
    ('{"a": {"0": -7}}', "not allowed"),
])
def test_malformed_offsets_json_names_the_problem(text, words):
    with pytest.raises(OffsetJsonError, match=words):
        parse_partition_offsets("startingOffsets", text)


@pytest.mark.parametrize("text, words", [
    ('{"a": {"0": 1}}', "list of partitions"),
    ('{"a": ["0"]}', "must be an integer"),
    ('{}', "no partitions"),
])
def test_malformed_assign(text, words):
    with pytest.raises(OffsetJsonError, match=words):
        parse_assign("assign", text)


# -- source options ----------------------------------------------------------------------

def test_defaults_follow_spark():
    batch, stream = src(subscribe="a"), src(True, subscribe="a")
    assert batch.starting.kind == "earliest" and batch.ending.kind == "latest"
    assert stream.starting.kind == "latest"
    assert batch.fail_on_data_loss and not batch.include_headers and batch.read_committed
    assert batch.subscription == Subscribe(("a",))


def test_subscriptions():
    assert src(subscribe="a, b,a").subscription == Subscribe(("a", "b"))
    assert src(subscribePattern="ev.*").subscription == SubscribePattern("ev.*")
    assert src(assign='{"a":[0]}').subscription == Assign((TopicPartition("a", 0),))


@pytest.mark.parametrize("opts, words", [
    ({}, "one of the options 'assign', 'subscribe', 'subscribePattern' must be specified"),
    ({"subscribe": "a", "assign": '{"a":[0]}'}, "only one of the options"),
    ({"subscribe": "a", "subscribePattern": "a.*"}, "only one of the options"),
    ({"subscribe": " , "}, "must list topics"),
    ({"subscribePattern": "("}, "not a valid regular expression"),
    ({"assign": "{"}, "option 'assign'"),
    ({"subscribe": "a", "startingOffsets": '{"a":{"0":x}}'}, "option 'startingOffsets'"),
    ({"subscribe": "a", "startingOffsets": "latest"}, "cannot be 'latest' for a batch"),
    ({"subscribe": "a", "endingOffsets": "earliest"}, "cannot be 'earliest'"),
    ({"subscribe": "a", "endingOffsets": '{"a":{"0":-2}}'}, "not allowed"),
    ({"subscribe": "a", "failOnDataLoss": "maybe"}, "'failOnDataLoss' must be 'true' or 'false'"),
    ({"subscribe": "a", "minPartitions": "0"}, "'minPartitions' must be a positive integer"),
    ({"subscribe": "a", "minPartitions": "many"}, "'minPartitions' must be a positive integer"),
    ({"subscribe": "a", "startingTimestamp": "yesterday"}, "'startingTimestamp' must be milliseconds"),
    ({"subscribe": "a", "maxOffsetsPerTrigger": "10"}, "streaming queries only"),
    ({"subscribe": "a", "kafka.group.id": "g"}, "'kafka.group.id' is not supported"),
    ({"subscribe": "a", "kafka.isolation.level": "dirty"}, "kafka.isolation.level"),
    ({"subscribe": "a", "kafka.max.partition.fetch.bytes": "-1"}, "kafka.max.partition.fetch.bytes"),
    ({"subscribe": "a", "startingOffsetsByTimestampStrategy": "guess"}, "'error' or 'latest'"),
    ({"subscribe": "a", "kafka.security.protocol": "TLS"}, "security.protocol='TLS' is not one of"),
    ({"subscribe": "a", "kafka.ssl.truststore.location": "/ca.p12"}, "security.protocol is PLAINTEXT, which does not use TLS"),
    ({"subscribe": "a", "kafka.security.protocol": "SSL", "kafka.ssl.trust.store": "x"}, "'ssl.trust.store' is not a security setting"),
    ({"subscribe": "a", "kafka.security.protocol": "SSL", "kafka.ssl.ca.location": "/nonexistent/ca.pem"}, "cannot read /nonexistent/ca.pem"),
    ({"subscribe": "a", "kafka.security.protocol": "SASL_PLAINTEXT", "kafka.sasl.mechanism": "GSSAPI"}, "GSSAPI is not supported"),
    ({"subscribe": "a", "kafka.security.protocol": "SASL_PLAINTEXT", "kafka.sasl.mechanism": "PLAIN"}, "PLAIN needs sasl.username"),
])
def test_bad_batch_options_fail_clearly(opts, words):
    with pytest.raises(KavkaOptionError, match=words.replace("(", r"\(").replace(".", r"\.").replace("*", r"\*")):
        src(**opts)


def test_bootstrap_servers_required():
    with pytest.raises(KavkaOptionError, match="kafka.bootstrap.servers' must be specified"):
        parse_source_options({"subscribe": "a"}, streaming=False)


@pytest.mark.parametrize("opts, words", [
    ({"subscribe": "a", "maxOffsetsPerTrigger": "0"}, "'maxOffsetsPerTrigger' must be a positive integer"),
    ({"subscribe": "a", "endingOffsets": "latest"}, "for batch queries only"),
])
def test_bad_stream_options_fail_clearly(opts, words):
    with pytest.raises(KavkaOptionError, match=words):
        src(True, **opts)


def test_positions_priority_timestamp_first():
    o = src(subscribe="a", startingTimestamp="1000", startingOffsetsByTimestamp='{"a":{"0":5}}',
            startingOffsets="earliest")
    assert o.starting.kind == "timestamp" and o.starting.timestamp == 1000
    o = src(subscribe="a", startingOffsetsByTimestamp='{"a":{"0":5}}', startingOffsets="earliest")
    assert o.starting.kind == "timestamps" and o.starting.offsets == {TopicPartition("a", 0): 5}
    stream = src(True, subscribe="a", startingOffsets='{"a":{"0":-1,"1":7}}')
    assert stream.starting.offsets == {TopicPartition("a", 0): -1, TopicPartition("a", 1): 7}


def test_security_options_reach_both_clients_in_their_own_names(tmp_path):
    """Java's names (as Spark's Kafka source documents them) for Kavka's
    client; the sink's librdkafka gets them translated."""
    from kavka.spark.client_security import librdkafka_settings, security_for

    jaas = ('org.apache.kafka.common.security.scram.ScramLoginModule required '
            'username="alice" password="pw-Secret-1";')
    opts = {"kafka.security.protocol": "SASL_PLAINTEXT", "kafka.sasl.mechanism": "SCRAM-SHA-512",
            "kafka.sasl.jaas.config": jaas}
    source = src(subscribe="a", **opts)
    security = security_for(source.security)
    assert (security.protocol, security.sasl_mechanism) == ("SASL_PLAINTEXT", "SCRAM-SHA-512")
    sink = parse_sink_options({**BASE, "topic": "out", "kafka.linger.ms": "7", **opts})
    assert librdkafka_settings(sink.security) == {"security.protocol": "SASL_PLAINTEXT",
                                                  "sasl.mechanism": "SCRAM-SHA-512",
                                                  "sasl.username": "alice", "sasl.password": "pw-Secret-1"}
    from kavka.spark.writer_rows import producer_config

    config = producer_config(sink)
    assert "sasl.jaas.config" not in config and config["sasl.username"] == "alice" and config["linger.ms"] == "7"
    with pytest.raises(KavkaOptionError, match="ssl.protocol has no librdkafka equivalent"):
        parse_sink_options({**BASE, "topic": "out", "kafka.security.protocol": "SSL", "kafka.ssl.protocol": "TLSv1.3"})


def test_sink_options():
    o = parse_sink_options({**BASE, "topic": "out", "kafka.linger.ms": "7"})
    assert o.topic == "out" and dict(o.producer) == {"linger.ms": "7"}
    with pytest.raises(KavkaOptionError, match="for reading"):
        parse_sink_options({**BASE, "subscribe": "a"})
    with pytest.raises(KavkaOptionError, match="kafka.value.serializer"):
        parse_sink_options({**BASE, "kafka.value.serializer": "x"})


# -- ranges and rate limits ----------------------------------------------------------------

range_lists = st.lists(st.tuples(st.integers(0, 50), st.integers(0, 10_000)), min_size=1, max_size=8).map(
    lambda xs: [OffsetRange("t", i, start, start + size) for i, (size, start) in enumerate(xs)])


@settings(max_examples=80)
@given(range_lists, st.one_of(st.none(), st.integers(1, 40)))
def test_split_ranges_covers_each_range_exactly(ranges, min_partitions):
    pieces = split_ranges(ranges, min_partitions)
    for r in ranges:
        mine = [p for p in pieces if p.partition == r.partition]
        covered = [o for p in mine for o in range(p.start, p.end)]
        assert covered == list(range(r.start, r.end))  # contiguous, in order, no overlap, nothing lost
        assert all(p.size > 0 for p in mine)
    total = sum(r.size for r in ranges)
    if min_partitions and total >= min_partitions:
        assert len(pieces) >= min_partitions


@settings(max_examples=80)
@given(st.dictionaries(st.integers(0, 5), st.tuples(st.integers(0, 1000), st.integers(0, 1000)), min_size=1),
       st.integers(1, 3000))
def test_rate_limit_takes_at_most_the_budget(spans, max_rows):
    start = {TopicPartition("t", p): a for p, (a, _) in spans.items()}
    latest = {TopicPartition("t", p): a + b for p, (a, b) in spans.items()}
    capped = rate_limit(start, latest, max_rows)
    assert set(capped) == set(latest)
    assert all(start[tp] <= capped[tp] <= latest[tp] for tp in latest)
    taken = sum(capped[tp] - start[tp] for tp in latest)
    backlog = sum(latest[tp] - start[tp] for tp in latest)
    assert taken == backlog if backlog <= max_rows else 0 < taken <= max_rows


def test_min_offsets_per_trigger_and_max_trigger_delay():
    o = src(True, subscribe="a", minOffsetsPerTrigger="5", maxTriggerDelay="30s")
    assert (o.min_offsets_per_trigger, o.max_trigger_delay_ms) == (5, 30_000)
    assert src(True, subscribe="a").max_trigger_delay_ms == 15 * 60_000
    assert src(True, subscribe="a", maxTriggerDelay="250ms").max_trigger_delay_ms == 250
    with pytest.raises(KavkaOptionError, match="'maxTriggerDelay' must be a duration"):
        src(True, subscribe="a", maxTriggerDelay="soon")
    with pytest.raises(KavkaOptionError, match="'minOffsetsPerTrigger' is for streaming queries only"):
        src(subscribe="a", minOffsetsPerTrigger="5")


# -- the reader's rack (KIP-392) ---------------------------------------------------------

def test_reader_rack_is_the_option_else_the_executors_environment():
    from kavka.spark.options import RACK_ENV
    from kavka.testing import spark_cluster

    assert spark_cluster.RACK_ENV == RACK_ENV  # the harness sets what the reader reads
    assert src(subscribe="t").reader_rack({}) == ""
    assert src(subscribe="t").reader_rack({RACK_ENV: " b1 "}) == "b1"
    assert src(subscribe="t", **{"kafka.client.rack": "r2"}).reader_rack({RACK_ENV: "b1"}) == "r2"


@pytest.mark.parametrize("value", ["r\n1", "x" * 256])
def test_a_bad_executor_rack_names_the_environment_variable(value):
    from kavka.spark.options import RACK_ENV

    with pytest.raises(KavkaOptionError, match=f"environment variable {RACK_ENV}"):
        src(subscribe="t").reader_rack({RACK_ENV: value})
