"""The fault matrix of Kafka's replication system test
(kafkatest's replication_test: clean and hard shutdown and bounce, aimed
at the leader or the controller), with real broker
processes, a real ZooKeeper and a real client (confluent-kafka).

3 brokers, RF=3, min.insync.replicas=2, unclean election off, acks=all,
with idempotence off (duplicates from retried batches are counted and
tolerated) and on (the broker's producer state must answer every retry with
its original offsets: no duplicate at all). A producer and a consumer run through every case while one
fault is aimed at one target:

- faults: clean shutdown (SIGTERM, restart), kill -9 (restart), clean
  bounce x5, hard bounce x5 (kill -9, restart once ZooKeeper has expired
  the session), SIGSTOP past the session timeout then SIGCONT;
- targets: the leader of partition 0 (a broker that is not the
  controller), the controller (which leads partition 1). A bounce re-aims at
  the current leader / controller each round.

``make test`` runs a quarter of the cells: each fault once, the target
alternating from fault to fault and idempotence every second fault, so
that each target meets each idempotence setting; ``make chaos`` runs them
all (the ``full_matrix`` mark).

Checked after each case (``fault_helpers.check_history``): every
acknowledged record is read back at its acknowledged offset, no gap below
the highest acknowledged offset, offsets strictly increase in the live
consumer and the final drain, no two reads disagree on an offset; and every
replica of both partitions holds the same batches (offsets, leader epoch,
CRC) read from its segment files.

One cluster serves every case of a worker (a fresh topic per case) to keep
the matrix short; each case begins by checking the cluster is whole. When
the cluster is stopped cleanly at the end, every replica of every case is
compared once more from its final segment files.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable

import pytest

from kavka.tools.cluster import LocalCluster

from .cluster_helpers import ZkView, wait_until
from .fault_helpers import Workload, check_history, compare_replicas, create_topic, drain, matrix_cluster

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

# Short sessions: a killed or paused broker is noticed once its session
# expires, and a hard bounce waits that out five times.
SESSION_TIMEOUT_MS = 2000
CONFIG = {
    "zookeeper.session.timeout.ms": str(SESSION_TIMEOUT_MS),
    "replica.lag.time.max.ms": "3000",
    "replica.fetch.wait.max.ms": "200",
    "replica.fetch.backoff.ms": "200",
    "unclean.leader.election.enable": "false",
    "min.insync.replicas": "2",
    "auto.leader.rebalance.enable": "false",
    # The live consumer's group.id makes the brokers create __consumer_offsets
    # (it never commits): with Kafka's 50 partitions every restart of a
    # broker loads, and every failover moves, 50 more partitions than the
    # case's own two.
    "offsets.topic.num.partitions": "3",
}
BOUNCES = 5
WARM_UP_S = 1.0
# Writes that must be acknowledged while a victim is down, and on every
# partition once the cluster is whole again (before the workload stops).
WRITES_DURING = 50
WRITES_AFTER = 100


@pytest.fixture(scope="module")
def cluster(zk_server, tmp_path_factory):
    with matrix_cluster(zk_server.connect_string, tmp_path_factory.mktemp("faultmatrix"), "faultmatrix",
                        CONFIG) as c:
        yield c


class Case:
    """One cell of the matrix: the topic, its assignment, a ZooKeeper view."""

    def __init__(self, cluster: LocalCluster, zk: ZkView, topic: str, assignment: dict[int, list[int]]) -> None:
        self.cluster = cluster
        self.zk = zk
        self.topic = topic
        self.assignment = assignment
        self.reactions = 0  # faults the controller was seen to react to (wait_acted)
        self.workload: Workload | None = None

    def writes_go_on(self, what: str) -> None:
        """The surviving brokers take writes: ``WRITES_DURING`` more
        acknowledged (on whichever partitions are led) while ``what``."""
        if self.workload is None:
            return
        mark = len(self.workload.acked)
        wait_until(lambda: len(self.workload.acked) >= mark + WRITES_DURING, 30,
                   f"{self.topic}: {WRITES_DURING} more writes acknowledged while {what}")

    def writes_on_every_partition(self, what: str) -> None:
        """Every partition takes ``WRITES_AFTER`` more writes ``what``."""
        counts = self.workload.acked_per_partition()
        wait_until(lambda: all(self.workload.acked_per_partition().get(p, 0) >= counts.get(p, 0) + WRITES_AFTER
                               for p in self.assignment), 60,
                   f"{self.topic}: {WRITES_AFTER} more writes acknowledged on every partition {what}")

    def whole(self) -> bool:
        """Every broker running and registered, every partition led with a full ISR."""
        if not all(b.running() for b in self.cluster.brokers.values()):
            return False
        if self.zk.broker_ids() != set(self.cluster.brokers):
            return False
        for p, replicas in self.assignment.items():
            st = self.zk.partition_state(self.topic, p)
            if st is None or st.leader < 0 or sorted(st.isr) != sorted(replicas):
                return False
        return True

    def wait_whole(self, what: str, timeout: float = 60.0) -> None:
        wait_until(self.whole, timeout, f"{self.topic}: {what}: every broker back and every ISR full")

    def wait_gone(self, victim: int, timeout: float = 40.0) -> None:
        """The controller moved leadership off ``victim`` and its replicas left the ISR."""
        def moved() -> bool:
            for p in self.assignment:
                st = self.zk.partition_state(self.topic, p)
                if st is None or st.leader in (victim, -1) or victim in st.isr:
                    return False
            return True
        wait_until(moved, timeout, f"{self.topic}: leadership and ISR membership off broker {victim}")

    def wait_expired(self, victim: int, timeout: float = 30.0) -> None:
        wait_until(lambda: victim not in self.zk.broker_ids(), timeout,
                   f"ZooKeeper to expire the session of broker {victim}")

    def wait_registered_anew(self, victim: int, before: tuple[int, int] | None, timeout: float = 60.0) -> None:
        """``/brokers/ids/<victim>`` exists under a session other than the
        one of ``before`` (its czxid, session): the old registration of a
        killed process can outlive it by a session timeout, and the cluster
        is not whole again until the new process has replaced it."""
        wait_until(lambda: (r := self.zk.broker_registration(victim)) is not None and r != before, timeout,
                   f"broker {victim} to register under a new session")

    def roles(self) -> tuple[int, int, dict[int, tuple[int, int]]]:
        """(controller id, controller epoch, partition -> (leader, leader epoch))."""
        controller, epoch = self.zk.controller()
        return controller, epoch, {p: (s.leader, s.leader_epoch) for p in self.assignment
                                   if (s := self.zk.partition_state(self.topic, p)) is not None}

    def wait_acted(self, victim: int, roles: tuple[int, int, dict[int, tuple[int, int]]], timeout: float = 40.0) -> None:
        """The cluster reacted to the loss of ``victim`` (``roles`` taken
        before the fault): a new controller if it was the controller, else a
        new leader epoch on every partition it led. Without this, a broker that
        comes back faster than the controller notices could be "bounced"
        twice for one reaction."""
        controller, epoch, leaders = roles

        def acted() -> bool:
            now = self.roles()
            if controller == victim:
                # The next controller learns the live brokers when it takes
                # over; a victim already registered again by then is simply
                # live, and keeps its partitions at their epoch (as in Kafka).
                return now[1] > epoch
            return all(now[2][p][1] > e for p, (leader, e) in leaders.items() if leader == victim)
        wait_until(acted, timeout, f"the controller to react to the loss of broker {victim}")
        self.reactions += 1

    def before(self, victim: int) -> tuple[tuple[int, int] | None, tuple[int, int, dict[int, tuple[int, int]]]]:
        """What a fault on ``victim`` must change: its registration, the roles."""
        return self.zk.broker_registration(victim), self.roles()

    def restart(self, victim: int, what: str, before) -> None:
        """Start ``victim`` again and wait until it replaced its old
        registration, the controller reacted, and the cluster is whole."""
        self.cluster.start_broker(victim)
        self.wait_registered_anew(victim, before[0])
        self.wait_acted(victim, before[1])
        self.cluster.wait_ready({victim}, 60)
        self.wait_whole(what)


# -- the faults: each takes the case and a function naming the current target ----------

def clean_shutdown(case: Case, target: Callable[[], int]) -> None:
    victim = target()
    before = case.before(victim)
    case.cluster.stop_broker(victim, signal.SIGTERM)
    case.wait_gone(victim)
    case.writes_go_on(f"broker {victim} is shut down")  # traffic with the two others
    case.restart(victim, f"after broker {victim}'s clean shutdown", before)


def kill_9(case: Case, target: Callable[[], int]) -> None:
    victim = target()
    before = case.before(victim)
    case.cluster.kill_broker(victim)
    case.wait_gone(victim)
    case.writes_go_on(f"broker {victim} is killed")
    case.restart(victim, f"after broker {victim} was killed", before)


def clean_bounce(case: Case, target: Callable[[], int]) -> None:
    for i in range(BOUNCES):
        victim = target()
        before = case.before(victim)
        case.cluster.stop_broker(victim, signal.SIGTERM)
        case.restart(victim, f"clean bounce {i + 1} of broker {victim}", before)


def hard_bounce(case: Case, target: Callable[[], int]) -> None:
    for i in range(BOUNCES):
        victim = target()
        before = case.before(victim)
        case.cluster.kill_broker(victim)
        case.wait_expired(victim)
        case.restart(victim, f"hard bounce {i + 1} of broker {victim}", before)


def fast_hard_bounce(case: Case, target: Callable[[], int]) -> None:
    """kill -9 and restart at once: the new process finds its old
    registration still there (the session has not expired yet) and must
    wait it out (seed 003, ZOOKEEPER-1740); the controller may see the
    broker's znode go and come back as one change of /brokers/ids."""
    for i in range(BOUNCES):
        victim = target()
        before = case.before(victim)
        case.cluster.kill_broker(victim)
        case.restart(victim, f"fast hard bounce {i + 1} of broker {victim}", before)


def pause_past_session(case: Case, target: Callable[[], int]) -> None:
    victim = target()
    before = case.before(victim)
    case.cluster.pause_broker(victim)
    try:
        case.wait_expired(victim)
        case.wait_gone(victim)
        case.writes_go_on(f"broker {victim} is paused")
    finally:
        case.cluster.resume_broker(victim)
    case.wait_registered_anew(victim, before[0])
    case.wait_acted(victim, before[1])
    case.wait_whole(f"after broker {victim} was paused past its session")


FAULTS = {"clean_shutdown": clean_shutdown, "kill_9": kill_9, "clean_bounce_x5": clean_bounce,
          "hard_bounce_x5": hard_bounce, "fast_hard_bounce_x5": fast_hard_bounce, "sigstop_past_session": pause_past_session}


def _cells() -> list:
    """Every (fault, target, idempotence). ``make test`` runs one cell of
    each fault: the leader for the first fault, the controller for the
    next, and so on, idempotence on for two faults and off for the next
    two; the other cells are marked ``full_matrix``, which ``make chaos``
    runs too."""
    cells = []
    for i, fault in enumerate(FAULTS):
        for target in ("leader", "controller"):
            for idempotence in ("off", "on"):
                smoke = target == ("leader", "controller")[i % 2] and idempotence == ("on", "off")[i // 2 % 2]
                cells.append(pytest.param(fault, target, idempotence, id=f"{fault}-{target}-{idempotence}",
                                          marks=() if smoke else pytest.mark.full_matrix))
    return cells


@pytest.mark.parametrize("fault,target,idempotence", _cells())
def test_acknowledged_writes_survive_the_fault_and_replicas_end_identical(cluster, fault, target, idempotence):
    run_case(cluster, fault, target, idempotence)


def run_case(cluster: LocalCluster, fault: str, target: str, idempotence: str, prefix: str = "fm") -> None:
    """One cell of the matrix (see the module docstring) on ``cluster``,
    plaintext or secured (test_fault_matrix_secure): its clients connect
    with ``cluster.client_config()``."""
    with ZkView(cluster) as zk:
        controller = wait_until(zk.controller, 30, "a controller")[0]
        a, b = sorted(set(cluster.brokers) - {controller})
        # Partition 0 is led by a broker that is not the controller, partition 1 by the controller.
        assignment = {0: [a, b, controller], 1: [controller, a, b]}
        topic = f"{prefix}-{fault}-{target}-idem-{idempotence}".replace("_", "-")
        create_topic(cluster, topic, assignment, {"min.insync.replicas": "2"})
        case = Case(cluster, zk, topic, assignment)
        case.wait_whole("after creation", 30)
        if target == "leader":
            def aim() -> int:
                return zk.partition_state(topic, 0).leader
        else:
            def aim() -> int:
                return zk.controller()[0]

        workload = Workload(cluster.bootstrap, topic, len(assignment), idempotent=idempotence == "on",
                            client=cluster.client_config()).start()
        case.workload = workload
        try:
            wait_until(lambda: len(workload.acked) >= 50, 30, "the first acknowledged writes")
            time.sleep(WARM_UP_S)
            FAULTS[fault](case, aim)
            case.writes_on_every_partition(f"after {fault}")
        finally:
            workload.stop()
        # The cluster reacted to every fault (a new controller, or a new leader epoch).
        assert case.reactions == (BOUNCES if "bounce" in fault else 1)
        final = drain(cluster, topic, len(assignment))
        report = check_history(workload.acked, {"live consumer": workload.live_reads}, final)
        print(f"{topic}: sent {workload.sent}, failed {len(workload.failed)} {workload.failed[:3]}, "
              f"consumer errors {len(workload.consumer_errors)} {workload.consumer_errors[:3]}; {report.summary()}")
        assert workload.unflushed == 0, f"{workload.unflushed} writes never answered"
        assert report.ok, report.summary()
        if idempotence == "on":
            assert report.duplicates == 0, report.summary()
        assert len(workload.acked) > 0 and len(workload.live_reads) > 0
        # Out-of-range answers to the live consumer would show as auto-offset-reset errors.
        assert not [e for e in workload.consumer_errors if "offset" in e.lower()], workload.consumer_errors[:5]
        replicas = compare_replicas(cluster, topic, assignment)
        assert replicas.identical, replicas.describe()
        cluster.checked_topics[topic] = assignment


NEMESIS_STEPS = 6


def test_a_seeded_random_sequence_of_faults_on_three_partitions(cluster):
    """A nemesis in Jepsen's manner: three partitions led by three different
    brokers, and a random (seeded, printed; ``KAVKA_NEMESIS_SEED`` replays
    one) sequence of the faults above on
    random brokers, one broker down at a time, each healed before the next;
    the same checks at the end."""
    import os
    import random

    # A failure names its seed; KAVKA_NEMESIS_SEED=<seed> replays the same sequence.
    seed = int(os.environ.get("KAVKA_NEMESIS_SEED") or random.randrange(1 << 30))
    rng = random.Random(seed)
    print(f"nemesis seed {seed}")
    ids = sorted(cluster.brokers)
    assignment = {p: ids[p:] + ids[:p] for p in range(3)}
    topic = f"fm-nemesis-{seed}"
    with ZkView(cluster) as zk:
        create_topic(cluster, topic, assignment, {"min.insync.replicas": "2"})
        case = Case(cluster, zk, topic, assignment)
        case.wait_whole("after creation", 30)
        single = {"term": lambda v, r: (cluster.stop_broker(v, signal.SIGTERM), case.restart(v, f"term {v}", r)),
                  "kill": lambda v, r: (cluster.kill_broker(v), case.restart(v, f"kill {v}", r)),
                  "kill_expire": lambda v, r: (cluster.kill_broker(v), case.wait_expired(v),
                                               case.restart(v, f"kill {v} past its session", r)),
                  "pause": lambda v, r: pause_past_session(case, lambda: v)}
        # Idempotent: random faults must not cost a duplicate either.
        workload = Workload(cluster.bootstrap, topic, len(assignment), idempotent=True).start()
        case.workload = workload
        try:
            wait_until(lambda: len(workload.acked) >= 50, 30, "the first acknowledged writes")
            for _ in range(NEMESIS_STEPS):
                fault, victim = rng.choice(sorted(single)), rng.choice(ids)
                print(f"nemesis: {fault} broker {victim}")
                single[fault](victim, case.before(victim))
                time.sleep(rng.uniform(0.2, 1.0))
        finally:
            workload.stop()
        final = drain(cluster, topic, len(assignment))
        report = check_history(workload.acked, {"live consumer": workload.live_reads}, final)
        print(f"{topic}: sent {workload.sent}, failed {len(workload.failed)}; {report.summary()}")
        assert workload.unflushed == 0 and report.ok and report.duplicates == 0, f"seed {seed}: {report.summary()}"
        replicas = compare_replicas(cluster, topic, assignment)
        assert replicas.identical, f"seed {seed}: {replicas.describe()}"
        cluster.checked_topics[topic] = assignment
