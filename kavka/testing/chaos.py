"""``python -m kavka.testing.chaos`` (``make chaos``): a chaos run.

Brokers and a ZooKeeper ensemble on their own hosts (``HostCluster``), the
queue, transactional and acks=1 workloads (``kavka.testing.workloads``),
the seeded random schedule of faults (``kavka.testing.schedule``, kept by
its conductor however late the run falls; ``kavka.testing.nemesis``), then
every fault healed and the cluster waited for (a supervisor starting
again any broker that exits by itself, as throughout the run), the
workloads stopped, every topic read back in full,
the replicas' segment files fingerprinted, ``kavka replica-verification``
run, ZooKeeper's own transaction logs read for transactions it lost
(``kavka.testing.zookeeper_history``: a loss the checker finds may be the
coordination service's; a line among the notes), and the whole history
checked (``kavka.testing.checker``). Prints
the seed first (``--seed`` replays a run's schedule), then a table:
injections by kind; per topic the records acknowledged, reported failed
(the delivery report's error), read, lost, duplicated (``dup``: a
violation; ``resent``: written again by the client under a new producer
epoch after its own epoch bump, the first copy never acknowledged, see
``kavka.testing.duplicates``), divergent partitions and availability (the
share of seconds in which a partition had a write acknowledged); then
every finding with the faults around it. ``--history`` keeps the whole
history (pickle) to check again. Exit status 1 when the checker found a violation of what
the configuration promises (acks=1 losses are expected and only counted),
2 when the harness could not run (no network namespaces here).

``--unsafe``: ``unclean.leader.election.enable=true``,
``min.insync.replicas=1``, ``replica.truncation.mode=hw`` (the seeds'
original design, KIP-101's lost and divergent writes): the run is expected
to lose acknowledged writes and the checker must say so.
"""

from __future__ import annotations

import argparse
import pickle
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kavka.protocol.records.batch import iter_batches
from kavka.testing import zookeeper_history
from kavka.testing.checker import BatchPrint, History, NemesisEvent, Report, check
from kavka.testing.hosts import HostCluster
from kavka.testing.nemesis import Nemesis
from kavka.testing.network import unavailable
from kavka.testing.schedule import ALL_KINDS, Conductor, Done, Heal, Inject, Planned, Wait, plan
from kavka.testing.workloads import AcksOneWorkload, Clock, QueueWorkload, TransactionalWorkload, drain

SAFE = {"min.insync.replicas": "2", "unclean.leader.election.enable": "false",
        "replica.truncation.mode": "leader-epoch"}
UNSAFE = {"min.insync.replicas": "1", "unclean.leader.election.enable": "true", "replica.truncation.mode": "hw"}
WORKLOADS = ("queue", "txn", "acks1")
PROGRESS_EVERY_S = 60.0  # how often a run says how far its workloads got
READY_CHECK_S = 5.0  # after a heal, how long each readiness check waits before the supervisor looks again


@dataclass
class RunResult:
    seed: int
    history: History
    report: Report
    injections: Counter[str]
    availability: dict[str, float]
    divergent: dict[str, int]
    verification: str
    notes: list[str] = field(default_factory=list)


def availability(history: History, topic: str, partitions: int, start: float, end: float) -> float:
    """Mean over partitions of the share of whole seconds in [start, end)
    in which the partition had a write acknowledged."""
    seconds = max(1, int(end - start))
    hit: set[tuple[int, int]] = set()
    for a in history.acks:
        if a.topic == topic and start <= a.time < end:
            hit.add((a.partition, int(a.time - start)))
    return len(hit) / (seconds * partitions)


def replica_prints(cluster: HostCluster, topic: str, partition: int, brokers: Sequence[int]) -> dict[int, list[BatchPrint]]:
    out = {}
    for b in brokers:
        directory = cluster.brokers[b].log_dir / f"{topic}-{partition}"
        prints = []
        for segment in sorted(directory.glob("*.log")):
            for _, h in iter_batches(segment.read_bytes()):
                prints.append(BatchPrint(h.base_offset, h.base_offset + h.last_offset_delta,
                                         h.partition_leader_epoch, h.crc, h.producer_id, h.producer_epoch,
                                         h.base_sequence))
        out[b] = prints
    return out


def _create_topics(cluster: HostCluster, topics: dict[str, int], topic_config: dict[str, str]) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap, "socket.timeout.ms": 10000})
    rf = min(3, len(cluster.brokers))
    futures = admin.create_topics([NewTopic(t, n, rf, config=dict(topic_config)) for t, n in topics.items()],
                                  operation_timeout=30, request_timeout=30)
    for f in futures.values():
        f.result(60)


def _wait_healthy(cluster: HostCluster, topics: dict[str, int], timeout: float, clock: Clock, notes: list[str],
                  say: Callable[[str], None]) -> bool:
    """Every broker ready and every partition's ISR full again. The
    supervisor goes on meanwhile: a broker started by the last heal may
    still give up on a ZooKeeper that is only now reachable again, and is
    started again as during the run."""
    deadline = time.monotonic() + timeout
    while True:
        _supervise(cluster, clock, notes, say)
        try:
            cluster.wait_ready(set(cluster.brokers), max(0.0, min(READY_CHECK_S, deadline - time.monotonic())))
            break
        except Exception as e:  # noqa: BLE001 - reported, and the checker still runs
            if time.monotonic() >= deadline:
                say(f"brokers not all ready after the heal: {e}")
                return False
            time.sleep(1)
    while time.monotonic() < deadline:
        try:
            short = [(t, p) for t in topics for p, s in cluster.partition_states(t).items()
                     if len(s["isr"]) < len(cluster.assignment(t)[p]) or s["leader"] < 0]
        except Exception:  # noqa: BLE001 - ZooKeeper still settling
            short = [("?", -1)]
        if not short:
            return True
        time.sleep(1)
    say(f"partitions with a short ISR after {timeout:.0f} s: {short[:8]}")
    return False


def run(*, seconds: float, seed: int, brokers: int = 5, zookeepers: int = 3, unsafe: bool = False,
        kinds: Sequence[str] = ALL_KINDS, workloads: Sequence[str] = WORKLOADS,
        schedule: Sequence[tuple[float, float, str, int]] | None = None,
        say: Callable[[str], None] = print, data_dir: Path | None = None, pace_s: float = 0.01) -> RunResult:
    """One chaos run. ``schedule``: explicit (start, duration, kind, target
    seed) faults instead of ``plan(seed, seconds, kinds)``."""
    settings = UNSAFE if unsafe else SAFE
    broker_config = {"replica.truncation.mode": settings["replica.truncation.mode"],
                     "unclean.leader.election.enable": settings["unclean.leader.election.enable"],
                     "min.insync.replicas": settings["min.insync.replicas"],
                     "auto.create.topics.enable": "false",
                     "group.initial.rebalance.delay.ms": "0"}
    topic_config = {k: settings[k] for k in ("min.insync.replicas", "unclean.leader.election.enable")}
    disk_broker = brokers - 1 if "disk-full" in kinds else None
    cluster = HostCluster(brokers, zookeepers, config=broker_config, disk_full_broker=disk_broker,
                          data_dir=data_dir)
    history = History(topics={})
    clock = Clock()
    timeline = plan(seed, seconds, kinds) if schedule is None else None
    injections: Counter[str] = Counter()
    notes: list[str] = []
    try:
        cluster.start(progress=say)
        topics = {}
        if "queue" in workloads:
            topics["queue"] = 6
        if "txn" in workloads:
            topics.update({"txn-in": 3, "txn-out": 3})
        if "acks1" in workloads:
            topics["acks1"] = 3
        _create_topics(cluster, topics, topic_config)
        nemesis_topic = "queue" if "queue" in topics else next(iter(topics))
        nemesis = Nemesis(cluster, nemesis_topic, disk_full_broker=disk_broker)
        running: list[QueueWorkload | TransactionalWorkload | AcksOneWorkload] = []
        if "queue" in workloads:
            running.append(QueueWorkload(history, clock, cluster.bootstrap, pace_s=pace_s).start())
        if "txn" in workloads:
            running.append(TransactionalWorkload(history, clock, cluster.bootstrap, pace_s=pace_s * 2).start())
        if "acks1" in workloads:
            running.append(AcksOneWorkload(history, clock, cluster.bootstrap, pace_s=pace_s * 2).start())
        time.sleep(3)  # the workloads running before the first fault
        start = clock.now()
        steps = timeline if timeline is not None else [Planned(*s) for s in schedule or []]
        _conduct(Conductor(steps), nemesis, clock, start, history, injections, notes, say)
        _supervised_sleep(cluster, clock, start + seconds, notes, say)
        end = clock.now()
        nemesis.heal_everything()
        say(f"{clock.now():7.1f}s every fault healed; waiting for the cluster to recover")
        healthy = _wait_healthy(cluster, topics, 180, clock, notes, say)
        if not healthy:
            notes.append("the cluster did not fully recover within 180 s of the heal")
        for w in running:
            w.stop()
            notes += w.errors
        say(f"{clock.now():7.1f}s workloads stopped; reading every topic back")
        for t, n in topics.items():
            try:
                history.final[t] = drain(cluster.bootstrap, t, n)
                if t == "txn-out":
                    history.final_committed[t] = drain(cluster.bootstrap, t, n, read_committed=True)
            except Exception as e:  # noqa: BLE001 - the checker reports what could not be read as lost
                notes.append(f"final read of {t} failed: {e!r}")
                history.final.setdefault(t, [])
        _wait_healthy(cluster, topics, 60, clock, notes, say)
        divergent: Counter[str] = Counter()
        for t, n in topics.items():
            assignment = cluster.assignment(t)
            for p in range(n):
                prints = _settled_prints(cluster, t, p, assignment[p])
                history.replicas[(t, p)] = prints
        verification = _replica_verification(cluster, list(topics))
        if cluster.ensemble is not None:
            notes += _zookeeper_history(cluster.ensemble.data_dirs())
        report = check(history)
        for f in report.findings:
            if f.kind == "divergent":
                divergent[f.topic] += 1
        avail = {t: availability(history, t, n, start, end) for t, n in topics.items() if t != "txn-out"}
        return RunResult(seed, history, report, injections, avail, dict(divergent), verification, notes)
    finally:
        cluster.close()


def _conduct(conductor: Conductor, nemesis: Nemesis, clock: Clock, start: float, history: History,
             injections: Counter[str], notes: list[str], say: Callable[[str], None]) -> None:
    """Injects and heals the schedule as the conductor says (its invariants
    hold however late the run is) and says how late it ran."""
    lateness: list[float] = []
    early = 0
    shown = start
    while True:
        now = clock.now() - start
        action = conductor.next_action(now)
        if isinstance(action, Done):
            break
        if clock.now() - shown >= PROGRESS_EVERY_S:
            # a workload whose count stops moving is stuck: seen while the run goes on
            shown = clock.now()
            ended = Counter(t.outcome for t in history.txns)
            say(f"{shown:7.1f}s progress: {len(history.acks)} records acknowledged, {len(history.polls)} polled, "
                f"transactions {dict(ended)}")
        _supervise(nemesis.cluster, clock, notes, say)
        if isinstance(action, Wait):
            # a second at most: the supervisor and the progress line run between
            _sleep_until(clock, min(start + action.until, clock.now() + 1.0))
        elif isinstance(action, Heal):
            f = action.fault
            heal = f.heal
            assert callable(heal)
            heal()
            conductor.healed(f)
            history.nemesis.append(NemesisEvent(start + f.began, clock.now(), f.step.kind, f.detail))
            why = (f" (early: the plan ended it at {start + f.step.end:.1f}s, before the next fault's start)" if action.early
                   else f" ({action.late:.1f}s late)" if action.late >= 1 else "")
            early += action.early
            say(f"{clock.now():7.1f}s heal   {f.step.kind}: {f.detail}{why}")
        elif isinstance(action, Inject):
            kind = action.step.kind
            lateness.append(action.late)
            try:
                detail, heal = nemesis.inject(kind, action.step.target_seed)
            except Exception as e:  # noqa: BLE001 - a fault that could not be made is reported, the run goes on
                conductor.skipped(action.index)
                notes.append(f"{kind} at {clock.now():.1f}s not injected: {e!r}")
                continue
            began = clock.now()
            injections[kind] += 1
            late = f" ({action.late:.1f}s behind the plan)" if action.late >= 1 else ""
            say(f"{began:7.1f}s inject {kind}: {detail}{late}")
            if conductor.injected(action.index, began - start, detail, heal) is None:
                history.nemesis.append(NemesisEvent(began, began, kind, detail))
    if lateness:
        behind = sorted(lateness)
        notes.append(f"schedule: {len(behind)} injections, behind the plan by median {behind[len(behind) // 2]:.1f}s, "
                     f"max {behind[-1]:.1f}s; {early} faults healed early to keep the plan's overlaps")


def _supervise(cluster: HostCluster, clock: Clock, notes: list[str], say: Callable[[str], None]) -> None:
    for b, code in cluster.supervise():
        line = f"supervisor: broker {b} exited by itself (code {code}); started again"
        say(f"{clock.now():7.1f}s {line}")
        notes.append(f"{line} at {clock.now():.1f}s")


def _supervised_sleep(cluster: HostCluster, clock: Clock, t: float, notes: list[str],
                      say: Callable[[str], None]) -> None:
    """Until ``t``, the supervisor looking after the brokers every second."""
    while clock.now() < t:
        _supervise(cluster, clock, notes, say)
        _sleep_until(clock, min(t, clock.now() + 1.0))


def _sleep_until(clock: Clock, t: float) -> None:
    delay = t - clock.now()
    if delay > 0:
        time.sleep(delay)


def _settled_prints(cluster: HostCluster, topic: str, partition: int, brokers: list[int],
                    timeout: float = 30.0) -> dict[int, list[BatchPrint]]:
    """The replicas' batches once every replica holds as many (a follower
    may be a fetch behind), or the last look after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        prints = replica_prints(cluster, topic, partition, brokers)
        ends = {(v[-1].last_offset if v else -1) for v in prints.values()}
        if len(ends) == 1 or time.monotonic() > deadline:
            return prints
        time.sleep(0.5)


def _replica_verification(cluster: HostCluster, topics: list[str]) -> str:
    """``kavka replica-verification`` over the topics: its exit status and last line."""
    cmd = [sys.executable, "-m", "kavka", "replica-verification", "--bootstrap-server", cluster.bootstrap,
           "--topics-include", "|".join(topics), "--time-limit-ms", "15000", "--report-interval-ms", "5000"]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=90)
    except subprocess.TimeoutExpired:
        return "did not finish within 90 s"
    lines = (done.stdout + done.stderr).strip().splitlines()
    return f"exit {done.returncode}: {lines[-1] if lines else '(no output)'}"


def _zookeeper_history(data_dirs: dict[str, Path]) -> list[str]:
    """What ZooKeeper's own transaction logs say (``zookeeper_history``): a
    loss the checker reports may be the coordination service's."""
    try:
        return zookeeper_history.check(data_dirs)
    except (OSError, RuntimeError, subprocess.TimeoutExpired) as e:
        return [f"zookeeper-history: the members' logs could not be read: {e}"]


def table(result: RunResult, *, unsafe: bool) -> str:
    r, h = result.report, result.history
    lines = [f"seed {result.seed} ({'UNSAFE' if unsafe else 'safe'} configuration)", "",
             "injections by kind:"]
    for kind, n in sorted(result.injections.items()):
        lines.append(f"  {kind:20s} {n:5d}")
    lines.append(f"  {'total':20s} {sum(result.injections.values()):5d}")
    lines += ["", f"{'topic':8s} {'promise':22s} {'acked':>8s} {'failed':>7s} {'read':>8s} {'lost':>6s} {'dup':>5s} "
                  f"{'resent':>6s} {'diverg':>6s} {'avail':>6s}"]
    for t, spec in h.topics.items():
        promise = ("transactional" if spec.transactional else
                   f"acks={spec.acks}{' idempotent' if spec.idempotent else ''}")
        acked = sum(1 for a in h.acks if a.topic == t)
        if spec.transactional:
            acked = sum(len([w for w in x.writes if w[0] == t]) for x in h.txns if x.outcome == "committed")
        read = len(h.final_committed.get(t, h.final.get(t, [])))
        lost = len({f.values[0] if f.values else (f.partition, f.offset) for f in r.findings
                    if f.topic == t and f.kind in ("lost", "moved", "lost-committed-txn")})
        failed = sum(1 for f in h.failures if f.topic == t)
        avail = f"{result.availability[t]:.0%}" if t in result.availability else "-"
        lines.append(f"{t:8s} {promise:22s} {acked:8d} {failed:7d} {read:8d} {lost:6d} {r.count('duplicate', t):5d} "
                     f"{r.count('duplicate-resent', t):6d} {result.divergent.get(t, 0):6d} {avail:>6s}")
    kinds = Counter(f.kind for f in r.violations)
    lines += ["", f"violations: {dict(kinds) if kinds else 'none'}; allowed by the promise: "
                  f"{dict(Counter(f.kind for f in r.findings if f.expected)) or 'none'}",
              f"replica-verification: {result.verification}"]
    for note in result.notes:
        lines.append(f"note: {note}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kavka.testing.chaos", description=(
        "Run brokers and a ZooKeeper ensemble on their own network namespaces, inject a seeded random "
        "schedule of network, process and disk faults under real client workloads, and check the history."))
    parser.add_argument("--minutes", type=float, default=20.0, help="length of the fault schedule (default 20)")
    parser.add_argument("--seed", type=int, default=None, help="schedule seed (default: random; printed)")
    parser.add_argument("--brokers", type=int, default=5, help="brokers (default 5)")
    parser.add_argument("--zookeepers", type=int, default=3, help="ZooKeeper ensemble members (default 3)")
    parser.add_argument("--unsafe", action="store_true",
                        help="unclean election on, min.insync.replicas=1, replica.truncation.mode=hw")
    parser.add_argument("--kinds", default=",".join(ALL_KINDS),
                        help=f"comma-separated nemeses (default all: {','.join(ALL_KINDS)})")
    parser.add_argument("--workloads", default=",".join(WORKLOADS), help="comma-separated: queue,txn,acks1")
    parser.add_argument("--data-dir", default=None, help="keep the brokers' and ZooKeeper's files here")
    parser.add_argument("--history", default=None,
                        help="also write the run's full history here (pickle of checker.History), to check again")
    parser.add_argument("--findings", type=int, default=40, help="findings to print in full (default 40)")
    args = parser.parse_args(argv)

    def on_term(signum: int, frame: object) -> None:
        raise SystemExit(f"chaos: stopped by signal {signum}; tearing the hosts down")

    signal.signal(signal.SIGTERM, on_term)
    reason = unavailable()
    if reason is not None:
        print(f"chaos: skipped: {reason}", file=sys.stderr)
        return 2
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1 << 31)
    print(f"chaos seed {seed} (replay: --seed {seed})", flush=True)
    kinds = [k for k in args.kinds.split(",") if k]
    workloads = [w for w in args.workloads.split(",") if w]
    for w in workloads:
        if w not in WORKLOADS:
            parser.error(f"unknown workload {w!r}; known: {', '.join(WORKLOADS)}")
    try:
        result = run(seconds=args.minutes * 60, seed=seed, brokers=args.brokers, zookeepers=args.zookeepers,
                     unsafe=args.unsafe, kinds=kinds, workloads=workloads,
                     data_dir=Path(args.data_dir) if args.data_dir else None,
                     say=lambda m: print(m, flush=True))
    except ValueError as e:
        parser.error(str(e))
    if args.history:
        with open(args.history, "wb") as out:
            pickle.dump(result.history, out)
    print()
    print(table(result, unsafe=args.unsafe))
    shown = list(result.report.violations[:args.findings])
    allowed = [f for f in result.report.findings if f.expected]
    shown += allowed[:max(3, args.findings - len(shown))]
    for f in shown:
        print(f"  {f}")
    if len(result.report.findings) > len(shown):
        print(f"  ... {len(result.report.findings) - len(shown)} more")
    return 0 if result.report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
