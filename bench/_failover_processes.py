"""bench/failover.py's ``--processes`` mode: failover as a client sees it,
with real broker processes (``LocalCluster``: a standalone ZooKeeper and
three ``python -m kavka server start`` brokers) and confluent-kafka.

Setup: ``--partitions`` partitions, RF 3 (topics of 100 partitions, leaders
spread evenly by the controller's assignment), every ISR full. Each broker
hosts every partition, and every partition keeps its active segment's
``.log`` open: its indexes are opened only once they hold an entry
(``LazyIndex``, ``kavka.storage.index.lazy_index``), which the few small
records written here never make (``bench/descriptors.py`` counts what a
broker holds). With the process' descriptor limit (``ulimit -n``, raised
here to the hard limit) that bounds how many partitions fit; the mode
refuses a count that does not.

Two kills, one after the other, each ``kill -9``:

1. broker failover: the broker (not the controller) leading the most
   partitions;
2. controller failover: the controller (then leading its own share plus
   what it took over in 1; the survivor leads everything afterwards).

Before the kills the benchmark waits until every broker has made every
partition's log (``wait_for_logs``), then samples the brokers' CPU, 5 s at
a time with no client, until it has settled (``settled_idle_cpu``): what
replication's idle fetch rounds cost at this partition count, and a
cluster done creating its partitions when the first kill comes. Before each
kill a producer (acks=all, ``linger.ms=5``) has written one record to
every partition the victim leads or follows in sync (the warm-up, timed),
so its connections and metadata are warm. At the kill it writes one more
record to each of them, and the figures are:

* detection: kill -> the victim's ZooKeeper registration
  (``/brokers/ids/<id>``, broker failover) or ``/controller`` (controller
  failover) deleted, i.e. its session expired: about
  ``zookeeper.session.timeout.ms`` (``--session-timeout-ms``), which a kill
  -9 cannot shorten;
* leaders moved: that deletion -> Metadata (polled from a live broker every
  50 ms) naming a live leader for every one of them: the controller's
  election and UpdateMetadata;
* recovery: that deletion -> the last of those records acknowledged
  (acks=all), with the p50 over the partitions: the controller's election
  and LeaderAndIsr, the new leaders' and followers' handling of it, and the
  client's own metadata refresh;
* isr recovery: the same for the partitions the victim followed in sync.
  Their leaders live on, but an acks=all write waits for every ISR member
  until the dead one leaves the ISR: the controller's ISR removals (or the
  leader's own shrink after ``replica.lag.time.max.ms``). A client writing
  to every partition waits for both.
"""

from __future__ import annotations

import argparse
import math
import os
import resource
import shutil
import statistics
import tempfile
import threading
import time
from pathlib import Path

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kazoo.client import KazooClient

from kavka.tools.cluster import LocalCluster

PARTITIONS_PER_TOPIC = 100
# The active segment's .log; its indexes stay closed while they hold no entry
# (an entry every index.interval.bytes of appends; a partition that has one
# holds four more: each index's descriptor and the duplicate Python's mmap keeps).
FDS_PER_PARTITION = 1
FD_HEADROOM = 2000  # sockets, ZooKeeper, checkpoints, Python's own files


def say(msg: str, start: float = time.monotonic()) -> None:
    print(f"[{time.monotonic() - start:7.1f}s] {msg}", flush=True)


def partitions_that_fit() -> int:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    limit = hard if hard != resource.RLIM_INFINITY else soft
    return max(0, (limit - FD_HEADROOM) // FDS_PER_PARTITION)


def raise_fd_limit() -> int:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # the brokers inherit it
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def create_partitions(cluster: LocalCluster, count: int, timeout: float) -> list[str]:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    names = [f"failover-{i:04d}" for i in range((count + PARTITIONS_PER_TOPIC - 1) // PARTITIONS_PER_TOPIC)]
    sizes = [min(PARTITIONS_PER_TOPIC, count - i * PARTITIONS_PER_TOPIC) for i in range(len(names))]
    for i in range(0, len(names), 10):
        batch = [NewTopic(n, s, 3) for n, s in zip(names[i:i + 10], sizes[i:i + 10], strict=True)]
        for name, future in admin.create_topics(batch, operation_timeout=timeout).items():
            future.result(timeout)
            del name
        say(f"created {min(count, (i + 10) * PARTITIONS_PER_TOPIC)} partitions")
    deadline = time.monotonic() + timeout
    while True:
        md = admin.list_topics(timeout=60)
        ready = sum(1 for n in names if n in md.topics
                    for p in md.topics[n].partitions.values() if p.leader >= 0 and len(p.isrs) == 3)
        if ready == count:
            return names
        if time.monotonic() > deadline:
            raise RuntimeError(f"only {ready}/{count} partitions have a leader and a full ISR after {timeout:.0f} s")
        say(f"{ready}/{count} partitions led with a full ISR")
        time.sleep(2)


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def idle_cpu(cluster: LocalCluster, seconds: float = 5.0) -> list[float]:
    """Each broker's CPU share (of one core) over ``seconds`` with no client
    writing: what replication's idle fetch rounds cost at this partition
    count, on a machine whose two cores the three brokers share."""
    pids = [b.popen().pid for b in cluster.brokers.values()]
    before = [cpu_seconds(p) for p in pids]
    time.sleep(seconds)
    return [(cpu_seconds(p) - b) / seconds for p, b in zip(pids, before, strict=True)]


def wait_for_logs(cluster: LocalCluster, names: list[str], count: int, timeout: float) -> None:
    """Until every broker has created every partition's log. Metadata names
    a partition's leader and full ISR as soon as the controller has written
    them, while each broker is still working through its LeaderAndIsr: at
    10,000 partitions, tens of seconds of opening logs that a kill would
    otherwise be timed against."""
    dirs = [b.directory / "logs" for b in cluster.brokers.values()]
    topics = set(names)
    deadline = time.monotonic() + timeout
    while True:
        made = [sum(1 for entry in os.listdir(d) if entry.rpartition("-")[0] in topics) for d in dirs]
        if all(m >= count for m in made):
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"the brokers made {made} of {count} logs each in {timeout:.0f} s")
        say("logs made on each broker: " + ", ".join(f"{m}/{count}" for m in made))
        time.sleep(2)


def settled_idle_cpu(cluster: LocalCluster, readings: int = 6) -> list[float]:
    """The brokers' idle CPU: 5 s readings until one is within 15% of the
    one before (in total over the brokers), at most ``readings``."""
    last = idle_cpu(cluster)
    say("idle brokers' CPU (share of a core, 5 s, no client): " + ", ".join(f"{c:.2f}" for c in last))
    for _ in range(readings - 1):
        idle = idle_cpu(cluster)
        say("idle brokers' CPU (share of a core, 5 s, no client): " + ", ".join(f"{c:.2f}" for c in idle))
        if abs(sum(idle) - sum(last)) <= 0.15 * sum(last):
            return idle
        last = idle
    say(f"the brokers' idle CPU did not settle in {readings} readings; going on")
    return last


def leaders(cluster: LocalCluster, names: list[str]) -> dict[tuple[str, int], int]:
    return {tp: leader for tp, (leader, _) in leaders_and_isrs(cluster, names).items()}


def leaders_and_isrs(cluster: LocalCluster, names: list[str]) -> dict[tuple[str, int], tuple[int, list[int]]]:
    md = AdminClient({"bootstrap.servers": cluster.bootstrap}).list_topics(timeout=60)
    return {(n, p.id): (p.leader, list(p.isrs)) for n in names if n in md.topics for p in md.topics[n].partitions.values()}


class Deletion:
    """When a znode is deleted (a kazoo watch, so the moment ZooKeeper tells)."""

    def __init__(self, zk: KazooClient, path: str) -> None:
        self.at: float | None = None
        self._event = threading.Event()
        self._path = path

        def watch(event) -> None:
            if event.type == "DELETED":
                self.at = time.perf_counter()
                self._event.set()

        if zk.exists(path, watch=watch) is None:
            raise RuntimeError(f"{path} does not exist before the kill")

    def wait(self, timeout: float) -> float:
        if not self._event.wait(timeout):
            raise RuntimeError(f"{self._path} was not deleted within {timeout:.0f} s of the kill")
        assert self.at is not None
        return self.at


def write_all(producer: Producer, targets: list[tuple[str, int]], deadline: float) -> dict[tuple[str, int], float]:
    """One acks=all record to each target; when each was acknowledged
    (perf_counter). Failed deliveries are sent again until ``deadline``."""
    done: dict[tuple[str, int], float] = {}
    retry: list[tuple[str, int]] = []

    def on_delivery(err, msg) -> None:
        key = (msg.topic(), msg.partition())
        if err is None:
            done.setdefault(key, time.perf_counter())
        else:
            retry.append(key)

    for topic, partition in targets:
        producer.produce(topic, b"failover", partition=partition, on_delivery=on_delivery)
    while len(done) < len(targets):
        producer.poll(0.01)
        while retry:
            topic, partition = retry.pop()
            producer.produce(topic, b"failover", partition=partition, on_delivery=on_delivery)
        if time.monotonic() > deadline:
            raise RuntimeError(f"only {len(done)}/{len(targets)} partitions accepted a write before the deadline")
    return done


def failover(cluster: LocalCluster, names: list[str], zk: KazooClient, victim: int, path: str,
             timeout: float) -> dict[str, float]:
    states = leaders_and_isrs(cluster, names)
    led = sorted(tp for tp, (leader, _) in states.items() if leader == victim)
    followed = sorted(tp for tp, (leader, isr) in states.items() if leader != victim and victim in isr)
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "linger.ms": 5, "log_level": 2,
                         "message.timeout.ms": int(timeout * 1000), "retry.backoff.ms": 50,
                         "retry.backoff.max.ms": 200, "topic.metadata.refresh.fast.interval.ms": 50})
    t0 = time.perf_counter()
    write_all(producer, led + followed, time.monotonic() + timeout)  # warm: connections and metadata
    say(f"warm-up: one acks=all record to each of the {len(led)} partitions broker {victim} leads and the "
        f"{len(followed)} it follows in sync in {time.perf_counter() - t0:.2f} s")
    deletion = Deletion(zk, path)
    moved: list[float] = []
    watcher = threading.Thread(target=watch_leaders, args=(cluster, led, victim, moved, time.monotonic() + timeout),
                               daemon=True)
    say(f"kill -9 broker {victim} (leads {len(led)} partitions)")
    killed = time.perf_counter()
    cluster.kill_broker(victim)
    watcher.start()
    acked = write_all(producer, led + followed, time.monotonic() + timeout)
    detected = deletion.wait(timeout)
    watcher.join(timeout)
    after = sorted(acked[tp] - detected for tp in led)
    isr_after = sorted(acked[tp] - detected for tp in followed)
    producer.flush(10)
    return {"partitions": len(led), "detection": detected - killed, "recovery": after[-1],
            "recovery_p50": statistics.median(after), "moved": moved[0] - detected if moved else math.nan,
            "followed": len(followed), "isr_recovery": isr_after[-1] if isr_after else math.nan,
            "isr_recovery_p50": statistics.median(isr_after) if isr_after else math.nan}


def watch_leaders(cluster: LocalCluster, led: list[tuple[str, int]], victim: int, moved: list[float],
                  deadline: float) -> None:
    """When Metadata (from any live broker) first names a live leader for
    every partition ``victim`` led: the cluster's part of the recovery,
    before the client's retries."""
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap, "log_level": 2})
    while time.monotonic() < deadline:
        try:
            md = admin.list_topics(timeout=10)
        except Exception:  # a broker just died under the request: ask again
            continue
        now = time.perf_counter()
        if all(t in md.topics and p in md.topics[t].partitions
               and md.topics[t].partitions[p].leader not in (-1, victim) for t, p in led):
            moved.append(now)
            return
        time.sleep(0.05)


def run(args: argparse.Namespace) -> None:
    fds = raise_fd_limit()
    fit = partitions_that_fit()
    if args.partitions is None:
        args.partitions = min(10_000, fit)
        print(f"--partitions {args.partitions}: the most that fit under a descriptor limit of {fds} "
              f"({FDS_PER_PARTITION} open files per partition on every broker)" if fit < 10_000 else "")
    if args.partitions > fit:
        raise SystemExit(f"--partitions {args.partitions} does not fit: each broker hosts every partition at "
                         f"{FDS_PER_PARTITION} open files each, and the descriptor limit is {fds} "
                         f"(at most {fit} partitions with {FD_HEADROOM} files of headroom)")
    root = Path(tempfile.mkdtemp(prefix="kavka-failover-", dir=args.dir))
    cluster = LocalCluster(brokers=3, data_dir=root, metrics=False, config={
        "zookeeper.session.timeout.ms": str(args.session_timeout_ms), "auto.create.topics.enable": "false",
        "auto.leader.rebalance.enable": "false"})
    zk: KazooClient | None = None
    try:
        cluster.start(timeout=120, progress=say)
        t0 = time.monotonic()
        names = create_partitions(cluster, args.partitions, args.timeout)
        say(f"{args.partitions} partitions x RF 3 ready in {time.monotonic() - t0:.0f} s")
        wait_for_logs(cluster, names, args.partitions, args.timeout)
        say(f"every broker has made its {args.partitions} logs, {time.monotonic() - t0:.0f} s after the first topic")
        idle = settled_idle_cpu(cluster)
        zk = KazooClient(hosts=cluster.zk_connect)
        zk.start(15)
        controller = cluster.controller()
        assert controller is not None
        counts: dict[int, int] = {}
        for leader in leaders(cluster, names).values():
            counts[leader] = counts.get(leader, 0) + 1
        victim = max((b for b in counts if b != controller[0]), key=lambda b: counts[b])
        results = {"broker": failover(cluster, names, zk, victim, f"/brokers/ids/{victim}", args.timeout)}
        say("broker failover: " + ", ".join(f"{k} {v:.2f}" for k, v in results["broker"].items()))  # kept if 2 fails
        controller = cluster.controller()
        assert controller is not None
        results["controller"] = failover(cluster, names, zk, controller[0], "/controller", args.timeout)
        print(f"\nreal-process failover: {args.partitions} partitions x RF 3 on 3 brokers, "
              f"zookeeper.session.timeout.ms={args.session_timeout_ms} (wall-clock; a shared machine)")
        print(f"{'kill -9 of':<12} {'partitions':>10} {'detection s':>12} {'leaders moved s':>16} "
              f"{'recovery s':>11} {'p50 s':>7} {'followed':>9} {'isr recovery s':>15} {'p50 s':>7}")
        for kind, r in results.items():
            print(f"{kind:<12} {r['partitions']:10.0f} {r['detection']:12.2f} {r['moved']:16.2f} "
                  f"{r['recovery']:11.2f} {r['recovery_p50']:7.2f} {r['followed']:9.0f} {r['isr_recovery']:15.2f} "
                  f"{r['isr_recovery_p50']:7.2f}")
        print("idle brokers' CPU before the kills (share of one core each): "
              + ", ".join(f"{c:.2f}" for c in idle) + f"; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
        print("detection: the kill until ZooKeeper deleted the victim's znode (its session expired); "
              "leaders moved: from then until Metadata named a live leader for every partition it led; "
              "recovery: from then until every one of them acknowledged an acks=all write; "
              "isr recovery: the same for the partitions it followed in sync (followed), whose acks=all "
              "writes wait until it leaves their ISR")
    finally:
        if zk is not None:
            zk.stop()
            zk.close()
        cluster.stop()
        shutil.rmtree(root, ignore_errors=True)
