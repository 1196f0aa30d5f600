"""Open file descriptors per partition and per segment of a real broker
process: what bounds how many partitions a broker can host under
``ulimit -n`` (bench/failover.py --processes sizes its run by it).

One ``LocalCluster`` broker (RF 1). Its ``/proc/<pid>/fd`` table is read and
every descriptor classified by what it points at (a segment's ``.log``,
``.index``, ``.timeindex``, ``.txnindex``, a checkpoint, a producer
snapshot, a socket ...) at these moments:

1. ``--partitions`` partitions created (one empty segment each);
2. one record produced to each;
3. every partition read from offset 0 by a consumer (fetches look the
   offset up in the segment's index);
4. after a clean restart of the broker (the log loaded from disk);
5. one partition with ``segment.bytes`` small enough to roll
   ``--segments`` segments, written and read back from offset 0: the
   descriptors per inactive segment.

The reference is the broker's table before any topic exists (the same
process): every figure is the difference from it, divided by the
partitions or segments.

Run: ``.venv/bin/python bench/descriptors.py [--partitions 500] [--segments 20]``
"""

from __future__ import annotations

import argparse
import collections
import os
import shutil
import tempfile
import time
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kavka.tools.cluster import LocalCluster

KINDS = (".log", ".index", ".timeindex", ".txnindex", ".snapshot", "leader-epoch-checkpoint")


def classify(target: str) -> str:
    if target.startswith("socket:"):
        return "socket"
    if target.startswith(("pipe:", "anon_inode:")):
        return "pipe/anon"
    name = target.rsplit("/", 1)[-1]
    for kind in KINDS:
        if name.endswith(kind):
            return kind
    return "other file"


def descriptors(pid: int) -> collections.Counter[str]:
    table = Path(f"/proc/{pid}/fd")
    found: collections.Counter[str] = collections.Counter()
    for entry in table.iterdir():
        try:
            found[classify(os.readlink(entry))] += 1
        except FileNotFoundError:  # closed while we looked
            continue
    return found


def mappings(pid: int) -> int:
    """File mappings of the process' index files (its /proc maps)."""
    with open(f"/proc/{pid}/maps") as f:
        return sum(1 for line in f if line.rstrip().endswith((".index", ".timeindex")))


def report(label: str, now: collections.Counter[str], base: collections.Counter[str], per: int, unit: str,
           mapped: int) -> None:
    diff = {k: now[k] - base[k] for k in sorted(set(now) | set(base)) if now[k] != base[k]}
    total = sum(diff.values())
    parts = ", ".join(f"{k} {v:+d}" for k, v in diff.items()) or "none"
    print(f"{label:<44} {total:+7d} fds  {total / per:5.2f} per {unit:<9} index mappings {mapped:6d}  ({parts})")


def wait_quiet(pid: int, seconds: float = 2.0) -> collections.Counter[str]:
    """The table once transient descriptors (checkpoint writes) are gone:
    the smallest total of a few reads."""
    best: collections.Counter[str] | None = None
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        now = descriptors(pid)
        if best is None or sum(now.values()) < sum(best.values()):
            best = now
        time.sleep(0.2)
    assert best is not None
    return best


def consume_all(bootstrap: str, topic: str, partitions: int, records: int) -> None:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"fd-{topic}", "enable.auto.commit": False,
                         "log_level": 2})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    got, deadline = 0, time.monotonic() + 120
    while got < records and time.monotonic() < deadline:
        for msg in consumer.consume(1000, timeout=1.0):
            if msg.error() is None:
                got += 1
    consumer.close()
    if got < records:
        raise RuntimeError(f"read {got}/{records} records of {topic}")


def run(args: argparse.Namespace) -> None:
    root = Path(tempfile.mkdtemp(prefix="kavka-fds-", dir=args.dir))
    cluster = LocalCluster(brokers=1, data_dir=root, metrics=False, config={
        "auto.create.topics.enable": "false", "offsets.topic.num.partitions": "1"})
    try:
        cluster.start(timeout=60)
        pid = cluster.brokers[0].popen().pid
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        # The group coordinator's __consumer_offsets exists before the reference is read.
        admin.create_topics([NewTopic("warmup", 1, 1)])["warmup"].result(60)
        consume_all(cluster.bootstrap, "warmup", 1, 0)
        base = wait_quiet(pid)
        print(f"broker pid {pid}: {sum(base.values())} descriptors before the topics ({dict(base)}); "
              f"ulimit -n {os.sysconf('SC_OPEN_MAX')}")
        n = args.partitions
        admin.create_topics([NewTopic("fds", n, 1)])["fds"].result(120)
        cluster.wait_for(lambda: descriptors(pid)[".log"] - base[".log"] >= n, 120, "the partitions' logs")
        report(f"{n} partitions created", wait_quiet(pid), base, n, "partition", mappings(pid))
        producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "linger.ms": 5, "log_level": 2})
        for p in range(n):
            producer.produce("fds", b"x" * 100, partition=p)
        producer.flush(60)
        report("one record in each", wait_quiet(pid), base, n, "partition", mappings(pid))
        consume_all(cluster.bootstrap, "fds", n, n)
        report("each read from offset 0", wait_quiet(pid), base, n, "partition", mappings(pid))

        segments = args.segments
        record = b"r" * 1000
        admin.create_topics([NewTopic("rolled", 1, 1, config={"segment.bytes": str(8 * 1024)})])["rolled"].result(60)
        time.sleep(1)
        before = wait_quiet(pid)
        before_maps = mappings(pid)
        # About seven 1 KB batches fill an 8 KiB segment; one send at a time
        # keeps one record per batch.
        count = segments * 7
        for _ in range(count):
            producer.produce("rolled", record, partition=0)
            producer.flush(10)
        consume_all(cluster.bootstrap, "rolled", 1, count)
        rolled = sum(1 for f in (cluster.brokers[0].directory / "logs" / "rolled-0").iterdir()
                     if f.suffix == ".log")
        report(f"1 partition, {rolled} segments written and read", wait_quiet(pid), before, rolled, "segment",
               mappings(pid) - before_maps)

        cluster.restart_broker(0, timeout=120)
        pid = cluster.brokers[0].popen().pid
        time.sleep(3)
        report("after a clean restart (all of the above)", wait_quiet(pid), base, n + rolled, "segment",
               mappings(pid))
        consume_all(cluster.bootstrap, "fds", n, n)
        consume_all(cluster.bootstrap, "rolled", 1, count)
        report("after the restart, everything read again", wait_quiet(pid), base, n + rolled, "segment",
               mappings(pid))
    finally:
        cluster.stop()
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--partitions", type=int, default=500, help="partitions of the first topic (default 500)")
    parser.add_argument("--segments", type=int, default=20, help="segments rolled in one partition (default 20)")
    parser.add_argument("--dir", default=None, help="where the cluster's data goes (default: a temporary directory)")
    run(parser.parse_args())


if __name__ == "__main__":
    main()
