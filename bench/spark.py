"""Spark benchmark: format "kavka" (kavka.spark) against Spark's own
parquet reader over the same rows, in one run on this machine.

Set-up: a one-broker ``LocalCluster`` (its own ZooKeeper), a topic of
``--partitions`` partitions (RF=1), ``--records`` records of ``--size``
bytes produced with confluent-kafka; a SparkSession configured for a
2-core machine (``local[2]``, as in the tests); the same rows (all seven
columns of the Kafka-source schema) copied once to a parquet file.

Measured, each case ``--repeat`` times, kavka, parquet and the null source
alternating, the side that goes first rotating with each repeat (the best
of each kept: the machine is shared), after one warm-up query each:

* ``count``: ``spark.read.format("kavka")...load().count()`` against
  ``spark.read.parquet(path).count()``;
* ``scan value``: a full ``select("value")`` scan, forced through the
  ``noop`` sink, against the same on parquet;
* ``stream``: a streaming query, ``startingOffsets=earliest``,
  ``maxOffsetsPerTrigger`` unset, ``Trigger.AvailableNow``, to the noop
  sink, against a parquet file stream over the same file.

A third reference for every case: a "null" Python data source with the
same schema and partitions (its stream: one micro-batch of all rows) that
re-yields one pre-built Arrow batch:
Spark's Python-data-source path alone (Arrow hand-over to the JVM, rows
built there), i.e. the ceiling of any Python data source here. PySpark
4.3 gives a Python source no column pruning, so ``count()`` still moves
every column, while parquet's ``count()`` reads row-group metadata.

Printed: rows/s of each, kavka/parquet and kavka/null ratios. Goal:
>= 0.5x parquet for the batch reads, and every case >= 0.9x of the null
source. Then the CPU seconds each query took across the whole process tree
(JVM, Python workers, broker, ZooKeeper; median over the repeats): on a
shared 2-core machine the wall-time ratios swing by 2x from run to run,
CPU seconds far less, and ``kavka - null`` is what the source itself and
the broker add to Spark's own work.

JVM flags: as the tests' session but without ``-XX:TieredStopAtLevel=1``
(fast start-up, slow steady state: it cost both sides 2-3x here).

Bytecode: the ``kavka`` package is byte-compiled first (``compileall``,
as ``make test`` does, and as an installed package is), so that with
``PYTHONDONTWRITEBYTECODE`` set (some sandboxes and CI images) the Python
processes Spark starts do not compile Kavka from source on every import,
while PySpark's own modules come precompiled: a streaming query starts a
fresh planning interpreter per query, which would otherwise pay that
compilation on the kavka side only.

Run: ``.venv/bin/python bench/spark.py [--records 1000000] [--size 100]
[--partitions 4] [--repeat 3]`` (needs the ``spark`` extra and Java).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time

from kavka.tools.cluster import LocalCluster


def produce(bootstrap: str, topic: str, records: int, size: int) -> float:
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "batch.size": 1_000_000,
                  "enable.idempotence": True, "queue.buffering.max.messages": 1_000_000})
    value = os.urandom(size)
    failed = []
    start = time.perf_counter()
    for i in range(records):
        while True:
            try:
                p.produce(topic, value, b"%d" % i, on_delivery=lambda e, m: failed.append(e) if e else None)
                break
            except BufferError:
                p.poll(0.01)
    if p.flush(300) or failed:
        raise SystemExit(f"producing the bench records failed: {failed[:1]}")
    return time.perf_counter() - start


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(60)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        t = admin.list_topics(topic, timeout=10).topics.get(topic)
        if t is not None and t.error is None and all(p.leader >= 0 for p in t.partitions.values()):
            return
        time.sleep(0.1)
    raise SystemExit(f"topic {topic} got no leaders")


def compile_kavka() -> None:
    """Byte-compile the kavka package (see the module docstring)."""
    import compileall

    import kavka

    if not compileall.compile_dir(os.path.dirname(kavka.__file__), quiet=1):
        raise SystemExit("byte-compiling the kavka package failed")


def session():
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    import kavka.spark

    spark = (SparkSession.builder.master("local[2]").appName("kavka-bench")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "2").config("spark.default.parallelism", "2")
             .config("spark.driver.memory", "1g").config("spark.sql.session.timeZone", "UTC")
             .config("spark.sql.adaptive.enabled", "false").config("spark.sql.streaming.stopTimeout", "10s")
             .config("spark.driver.extraJavaOptions", "-XX:+UseSerialGC")
             .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    kavka.spark.register(spark)
    return spark


class NullSource:
    """Built lazily (pyspark imported only when the bench runs): a Python
    data source with the Kafka-source schema that re-yields one pre-built
    Arrow batch, so it measures Spark's Python-data-source path alone: the
    ceiling any Python source can reach here."""

    @staticmethod
    def make(rows: int, partitions: int, size: int):
        from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader, InputPartition

        def batches(partition):
            import pyarrow as pa

            from kavka.spark.schema import arrow_schema

            step = 65_536
            mine = rows // partitions + (1 if partition.value < rows % partitions else 0)
            full = None
            for start in range(0, mine, step):
                m = min(step, mine - start)
                if full is None or m != full.num_rows:
                    ts = pa.array([0] * m, pa.int64()).cast(pa.timestamp("us", tz="UTC"))
                    full = pa.RecordBatch.from_arrays(
                        [pa.array([b"k"] * m, pa.binary()), pa.array([b"x" * size] * m, pa.binary()),
                         pa.array(["bench"] * m, pa.string()), pa.array([partition.value] * m, pa.int32()),
                         pa.array(range(m), pa.int64()), ts, pa.array([0] * m, pa.int32())],
                        schema=arrow_schema(False))
                yield full

        class NullReader(DataSourceReader):
            def partitions(self):
                return [InputPartition(i) for i in range(partitions)]

            def read(self, partition):
                return batches(partition)

        class NullStreamReader(DataSourceStreamReader):
            """One micro-batch holding every row."""

            def initialOffset(self):
                return {"done": 0}

            def latestOffset(self, start=None, limit=None):
                return {"done": 1}

            def partitions(self, start, end):
                return [InputPartition(i) for i in range(partitions)] if start["done"] < end["done"] else []

            def read(self, partition):
                return batches(partition)

        class NullSource(DataSource):
            @classmethod
            def name(cls):
                return "kavka-bench-null"

            def schema(self):
                from kavka.spark.schema import read_schema

                return read_schema(False)

            def reader(self, schema):
                return NullReader()

            def streamReader(self, schema):
                return NullStreamReader()

        return NullSource


def tree_cpu() -> float:
    """CPU seconds used so far by this process and every descendant: the
    JVM, Spark's Python workers, the broker and ZooKeeper (``/proc``:
    utime+stime of each live one, plus cutime+cstime, which holds the
    reaped children's). Unlike wall time it does not count the time the
    neighbours on a shared machine take."""
    stats = _tree_stats()
    return sum(sum(int(x) for x in fields[11:15]) for fields in stats.values()) / os.sysconf("SC_CLK_TCK")


def _tree_stats() -> dict[int, list[str]]:
    """``/proc/<pid>/stat`` fields (after the command name) of this process
    and every live descendant."""
    stats = {}
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/stat") as f:
                    stats[int(pid)] = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
    children: dict[int, list[int]] = {}
    for pid, fields in stats.items():
        children.setdefault(int(fields[1]), []).append(pid)
    tree, todo = {}, [os.getpid()]
    while todo:
        pid = todo.pop()
        todo.extend(children.get(pid, ()))
        if pid in stats:
            tree[pid] = stats[pid]
    return tree


def _role(pid: int) -> str:
    """Which part of the process tree ``pid`` is, from its command line."""
    if pid == os.getpid():
        return "bench driver (py4j)"
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            args = f.read().decode(errors="replace").split("\0")
    except OSError:
        return "gone"
    line = " ".join(args)
    if "zookeeper" in line.lower():
        return "ZooKeeper"
    if "org.apache.spark" in line:
        return "JVM (Spark)"
    if "kavka server start" in line:
        return "broker"
    if "pyspark.daemon" in line:
        return "Python workers"
    if "-m" in args:
        return "Python " + args[args.index("-m") + 1].rsplit(".", 1)[-1]
    return os.path.basename(args[0]) if args and args[0] else "other"


class TreeSampler:
    """``--breakdown``: the CPU seconds of a query split by process role
    (``_role``): a thread reads ``/proc`` every ``interval`` s and keeps
    each live descendant's last utime+stime. A process that exits between
    two samples loses its last interval; ``unsampled`` is what the exact
    ``tree_cpu`` total holds beyond the sum of the roles."""

    def __init__(self, interval: float = 0.05) -> None:
        import threading

        self.interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.first: dict[tuple[int, int], float] = {}
        self.last: dict[tuple[int, int], float] = {}
        # minor page faults (each a zeroed page mapped in: memory the
        # process had handed back, or never touched)
        self.first_faults: dict[tuple[int, int], int] = {}
        self.last_faults: dict[tuple[int, int], int] = {}
        self.roles: dict[tuple[int, int], str] = {}

    def _sweep(self, initial: bool) -> None:
        tick = os.sysconf("SC_CLK_TCK")
        for pid, fields in _tree_stats().items():
            key = (pid, int(fields[19]))  # (pid, start time): a reused pid is another process
            cpu = (int(fields[11]) + int(fields[12])) / tick
            faults = int(fields[7])
            if key not in self.roles:
                self.roles[key] = _role(pid)
                self.first[key] = cpu if initial else 0.0
                self.first_faults[key] = faults if initial else 0
            self.last[key] = cpu
            self.last_faults[key] = faults

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self._sweep(False)

    def __enter__(self) -> TreeSampler:
        self._sweep(True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self._sweep(False)

    def by_role(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for key, role in self.roles.items():
            out[role] = out.get(role, 0.0) + self.last[key] - self.first[key]
        return out

    def faults_by_role(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for key, role in self.roles.items():
            out[role] = out.get(role, 0) + self.last_faults[key] - self.first_faults[key]
        return out


def timed(fn, cpu: list[float], roles: list[dict[str, float]] | None = None,
          faults: list[dict[str, int]] | None = None) -> float:
    """Wall seconds of ``fn()``; its CPU seconds (``tree_cpu``) appended to
    ``cpu``, and with ``roles`` the split by process (``TreeSampler``),
    with ``faults`` its minor page faults by process."""
    sampler = TreeSampler() if roles is not None else None
    if sampler is not None:
        sampler.__enter__()
    c0 = tree_cpu()
    start = time.perf_counter()
    fn()
    wall = time.perf_counter() - start
    total = tree_cpu() - c0
    cpu.append(total)
    if sampler is not None and roles is not None:
        sampler.__exit__(None, None, None)
        split = sampler.by_role()
        split["unsampled"] = total - sum(split.values())
        roles.append(split)
        if faults is not None:
            faults.append(sampler.faults_by_role())
    return wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--breakdown", action="store_true",
                    help="also split each query's CPU seconds by process (JVM, Python workers, broker, ...)")
    args = ap.parse_args()
    n = args.records
    compile_kavka()
    work = tempfile.mkdtemp(prefix="kavka-bench-spark-")
    cluster = LocalCluster(1, os.path.join(work, "cluster"), config={"num.partitions": "1"})
    try:
        cluster.start()
        create_topic(cluster.bootstrap, "bench", args.partitions)
        secs = produce(cluster.bootstrap, "bench", n, args.size)
        print(f"produced {n:,} records of {args.size} B to {args.partitions} partitions in {secs:.1f} s")
        spark = session()

        def kavka_df():
            return (spark.read.format("kavka").option("kafka.bootstrap.servers", cluster.bootstrap)
                    .option("subscribe", "bench").load())

        spark.dataSource.register(NullSource.make(n, args.partitions, args.size))
        parquet_path = os.path.join(work, "bench.parquet")
        kavka_df().write.parquet(parquet_path)
        assert spark.read.parquet(parquet_path).count() == n, "the parquet copy lost rows"

        def stream(fmt: str) -> None:
            if fmt == "kavka":
                src = (spark.readStream.format("kavka").option("kafka.bootstrap.servers", cluster.bootstrap)
                       .option("subscribe", "bench").option("startingOffsets", "earliest").load())
            elif fmt == "null":
                src = spark.readStream.format("kavka-bench-null").load()
            else:
                src = spark.readStream.schema(spark.read.parquet(parquet_path).schema).parquet(parquet_path)
            cp = tempfile.mkdtemp(prefix="cp-", dir=work)
            q = (src.writeStream.format("noop").option("checkpointLocation", cp)
                 .trigger(availableNow=True).start())
            q.awaitTermination(600)
            rows = sum(p["numInputRows"] for p in q.recentProgress)
            if rows != n:
                raise SystemExit(f"the {fmt} stream read {rows} rows, expected {n}")

        def scan(df) -> None:
            df.select("value").write.format("noop").mode("overwrite").save()

        def null_df():
            return spark.read.format("kavka-bench-null").load()

        cases = {
            "count": (lambda: kavka_df().count(), lambda: spark.read.parquet(parquet_path).count(),
                      lambda: null_df().count()),
            "scan value": (lambda: scan(kavka_df()), lambda: scan(spark.read.parquet(parquet_path)),
                           lambda: scan(null_df())),
            "stream": (lambda: stream("kavka"), lambda: stream("parquet"), lambda: stream("null")),
        }
        for fns in cases.values():  # warm-up: Python workers, JIT, page cache
            for fn in fns:
                fn()
        best: dict[str, list[float]] = {}
        cpu: dict[tuple[str, int], list[float]] = {(name, side): [] for name in cases for side in range(3)}
        roles: dict[tuple[str, int], list[dict[str, float]]] = {(name, side): [] for name in cases for side in range(3)}
        faults: dict[tuple[str, int], list[dict[str, int]]] = {(name, side): [] for name in cases for side in range(3)}
        for r in range(args.repeat):
            for name, fns in cases.items():
                # The side that goes first in a case changes with each
                # repeat: the JVM is not at a steady state after one warm-up
                # (its JIT compiles in every query), and the first query of a
                # case after another case's pays most of that (measured: C2
                # compiler threads took ~0.15 CPU-s more in whichever count()
                # ran first), which a fixed order charges to one side.
                times = [0.0] * 3
                for side in ((r + i) % 3 for i in range(3)):
                    times[side] = timed(fns[side], cpu[name, side], roles[name, side] if args.breakdown else None,
                                        faults[name, side] if args.breakdown else None)
                best[name] = [min(a, b) for a, b in zip(best.get(name, [float("inf")] * 3), times, strict=True)]
        print(f"\nkavka.spark vs parquet, {n:,} rows of {args.size} B, {args.partitions} partitions, local[2], "
              f"best of {args.repeat}\n")
        print(f"{'case':<12}{'kavka rows/s':>15}{'parquet rows/s':>17}{'kavka/parquet':>15}"
              f"{'null py-source rows/s':>24}{'kavka/null':>12}")
        for name, (tk, tp, tn) in best.items():
            null = f"{n / tn:>24,.0f}{tn / tk:>11.2f}x"
            print(f"{name:<12}{n / tk:>15,.0f}{n / tp:>17,.0f}{tp / tk:>14.2f}x{null}")
        print("\nCPU seconds per query (JVM, Python workers, broker, ZooKeeper; median of the runs above): "
              "less swayed by a loaded machine than wall time\n")
        print(f"{'case':<12}{'kavka':>9}{'parquet':>9}{'null':>9}{'kavka - null':>14}{'null/kavka':>12}")
        for name in cases:
            ck, cp, cn = (statistics.median(cpu[name, side]) for side in range(3))
            print(f"{name:<12}{ck:>9.2f}{cp:>9.2f}{cn:>9.2f}{ck - cn:>14.2f}{cn / ck:>11.2f}x")
        if args.breakdown:
            print("\nCPU seconds per query by process (median of the runs; kavka / null; "
                  "the sampler's own reads of /proc are in the bench driver), "
                  "then minor page faults (kavka / null)\n")
            for name in cases:
                kinds = sorted({r for side in (0, 2) for split in roles[name, side] for r in split})
                print(f"{name}:")
                for r in kinds:
                    k, z = (statistics.median(split.get(r, 0.0) for split in roles[name, side]) for side in (0, 2))
                    fk, fz = (statistics.median(split.get(r, 0) for split in faults[name, side]) for side in (0, 2))
                    faults_col = f"{fk:>10,.0f}{fz:>10,.0f}" if r != "unsampled" else ""
                    print(f"  {r:<28}{k:>8.3f}{z:>8.3f}{k - z:>+9.3f}{faults_col}")
        for name in ("count", "scan value"):
            tk, tp, tn = best[name]
            print(f"  goal {name} >= 0.5x parquet: {tp / tk:.2f}x {'met' if tp / tk >= 0.5 else 'NOT met'} "
                  f"(a Python data source that does no work reaches {tp / tn:.2f}x)")
        spark.stop()
    finally:
        cluster.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
