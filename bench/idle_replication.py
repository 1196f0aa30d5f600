"""What replication costs when nobody writes: 3 real brokers, ``--partitions``
partitions x RF 3, no client; each broker's CPU (share of one core) and the
follower fetches it answers per second, over ``--window`` seconds after
``--settle`` seconds of quiet.

Followers fetch through incremental fetch sessions (KIP-227): an idle
round carries no partition either way. The reference, in the same run and
alternating with it, is the same cluster with
``max.incremental.fetch.session.cache.slots=0``: the leaders keep no
session, so every follower fetch carries, and every answer holds, every
partition the follower follows (3,333 each at 10,000), as before sessions.
Each round waits ``replica.fetch.wait.max.ms`` (500 ms) on the leader, so
at most 2 rounds per second per follower and leader, 4 answered per broker;
fewer means the rounds themselves take that long.

    .venv/bin/python bench/idle_replication.py --partitions 3000
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from confluent_kafka.admin import AdminClient, NewTopic

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kavka.tools.cluster import LocalCluster  # noqa: E402
from tests.metrics.scrape import scrape  # noqa: E402

TOPIC_PARTITIONS = 100


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def follower_fetches(cluster: LocalCluster) -> dict[int, float]:
    return {b: scrape(p.metrics_url).total("kafka_network_requestmetrics_requests_total", request="FetchFollower")
            for b, p in cluster.brokers.items() if p.metrics_url is not None}


def measure(parent: Path, partitions: int, slots: int, settle: float, window: float) -> tuple[list[float], list[float]]:
    """(CPU share per broker, FetchFollower answered per second per broker)."""
    directory = Path(tempfile.mkdtemp(prefix="idle-", dir=parent))
    cluster = LocalCluster(3, directory, config={"max.incremental.fetch.session.cache.slots": str(slots),
                                                 "zookeeper.session.timeout.ms": "6000"})
    try:
        cluster.start()
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        for i in range(0, partitions, TOPIC_PARTITIONS):
            count = min(TOPIC_PARTITIONS, partitions - i)
            for f in admin.create_topics([NewTopic(f"idle{i // TOPIC_PARTITIONS}", count, 3)],
                                         request_timeout=60).values():
                f.result(60)
        time.sleep(settle)
        pids = {b: p.popen().pid for b, p in cluster.brokers.items()}
        fetched, used, start = follower_fetches(cluster), {b: cpu_seconds(p) for b, p in pids.items()}, time.monotonic()
        time.sleep(window)
        fetched_after, used_after = follower_fetches(cluster), {b: cpu_seconds(p) for b, p in pids.items()}
        elapsed = time.monotonic() - start
        return ([(used_after[b] - used[b]) / elapsed for b in sorted(pids)],
                [(fetched_after[b] - fetched[b]) / elapsed for b in sorted(pids)])
    finally:
        cluster.stop()
        shutil.rmtree(directory, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--partitions", type=int, default=3000, help="partitions x RF 3 (default 3,000)")
    parser.add_argument("--settle", type=float, default=20.0, help="seconds of quiet before measuring (default 20)")
    parser.add_argument("--window", type=float, default=10.0, help="seconds measured (default 10)")
    parser.add_argument("--rounds", type=int, default=1, help="pairs of runs, sessions and reference alternating")
    parser.add_argument("--dir", default=None, help="parent of the temporary data directories")
    args = parser.parse_args()
    parent = Path(args.dir or tempfile.gettempdir())
    print(f"idle replication: {args.partitions} partitions x RF 3 on 3 brokers, no client; "
          f"{args.window:.0f} s measured after {args.settle:.0f} s")
    print(f"{'fetch sessions':<26} {'CPU per broker (share of a core)':<34} {'FetchFollower answered/s':<26} load")
    totals: dict[str, list[float]] = {"sessions": [], "reference": []}
    for r in range(args.rounds):
        sides = [("sessions", 1000), ("reference", 0)]
        for name, slots in sides if r % 2 == 0 else sides[::-1]:
            cpu, fetches = measure(parent, args.partitions, slots, args.settle, args.window)
            totals[name].append(sum(cpu) / sum(fetches) if sum(fetches) else float("nan"))
            label = "on (1000 slots)" if slots else "off (slots=0: reference)"
            print(f"{label:<26} {', '.join(f'{c:.3f}' for c in cpu):<34} {', '.join(f'{f:.1f}' for f in fetches):<26} "
                  f"{os.getloadavg()[0]:.1f}")
    per_fetch = {k: sum(v) / len(v) for k, v in totals.items()}
    print(f"CPU per follower fetch answered (both sides' share, core-seconds): sessions {per_fetch['sessions']:.3f}, "
          f"reference {per_fetch['reference']:.3f}, ratio {per_fetch['sessions'] / per_fetch['reference']:.2f}")


if __name__ == "__main__":
    main()
