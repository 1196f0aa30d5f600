"""Multiple leaders in transition (seed 001 #3), with real processes.

Broker A leads a partition with ISR {A, B, D}; A stands still (SIGSTOP, a
long GC pause) until ZooKeeper expires its session; the controller makes B
leader with ISR {B, D} and a new version of the state znode, and B and D act
on it (B leads, D follows B). A wakes up
before it has heard of the change — the test holds the controller (SIGSTOP)
for that window, which is exactly the seed's "A wakes up from GC but hasn't
acted on the leadership change command". A still believes it leads with ISR
{A, B, D} and takes an acks=all write; B and D no longer fetch from it, so
the write cannot be committed unless A shrinks the ISR to {A}; that write
to the state znode is conditional on the version A knew, fails, and A stops
acting as leader. (A that first learns its ZooKeeper session expired stops
leading on that alone: kavka.server.zk_session_fence; either way it steps
down.) The write is answered with an error, never acknowledged;
it is gone from every replica once A follows B; and no acknowledged write
of the producer running throughout is lost.

Four brokers, so that the controller is none of the partition's replicas
and holding it does not stall replication itself.
"""

from __future__ import annotations

import threading
import time

import pytest

from .cluster_helpers import RawConnection, ZkView, wait_until
from .fault_helpers import Workload, check_history, compare_replicas, create_topic, drain, grep_logs

pytestmark = pytest.mark.cluster

# Also the window in which A must act while the controller is held (paused
# for less than its session): A, just resumed, has to run its ISR check and
# its conditional write within it, which took over 3.5 s on a loaded
# machine (make test with more workers than cores).
SESSION_TIMEOUT_MS = 6000
CONFIG = {
    "zookeeper.session.timeout.ms": str(SESSION_TIMEOUT_MS),
    # The ISR check runs every lag/2 = 1 s: A proposes its shrink well
    # within the window in which the controller is held.
    "replica.lag.time.max.ms": "2000",
    "replica.fetch.wait.max.ms": "200",
    "replica.fetch.backoff.ms": "200",
    "unclean.leader.election.enable": "false",
    "auto.leader.rebalance.enable": "false",
}
TOPIC = "transition"
FENCED_VALUE = b"written-to-the-deposed-leader"


def produce_raw(address: str, value: bytes, outcome: list) -> None:
    """One acks=all Produce v8 of ``value`` to partition 0, straight to
    ``address``; appends the partition's error code (or the exception)."""
    from kavka.protocol.messages import ProduceRequest
    from kavka.protocol.records.builder import build_batch
    from kavka.protocol.records.record import SimpleRecord

    batch = build_batch([SimpleRecord(None, value, int(time.time() * 1000))])
    body = ProduceRequest(acks=-1, timeout_ms=10_000, topic_data=[ProduceRequest.TopicData(
        name=TOPIC, partition_data=[ProduceRequest.TopicData.PartitionData(index=0, records=batch)])])
    try:
        with RawConnection(address, timeout=40) as conn:
            response = conn.request(body, 8)
        outcome.append(response.responses[0].partition_responses[0].error_code)
    except Exception as e:  # noqa: BLE001 - reported by the test
        outcome.append(e)


def acted_on(cluster, broker_id: int, line: str) -> bool:
    """Whether ``broker_id`` logged a state change starting with ``line``."""
    return any(line in ln for ln in grep_logs(cluster, TOPIC).get(broker_id, []))


def test_a_deposed_leader_cannot_commit_and_steps_down(make_cluster):
    cluster = make_cluster(brokers=4, config=CONFIG)
    with ZkView(cluster) as zk:
        controller = wait_until(zk.controller, 30, "a controller")[0]
        a, b, d = sorted(set(cluster.brokers) - {controller})
        create_topic(cluster, TOPIC, {0: [a, b, d]}, {"min.insync.replicas": "2"})
        wait_until(lambda: (s := zk.partition_state(TOPIC, 0)) and s.leader == a and len(s.isr) == 3, 30,
                   f"broker {a} leading {TOPIC} with a full ISR")
        before = zk.partition_state(TOPIC, 0)

        workload = Workload(cluster.bootstrap, TOPIC, 1).start()
        outcome: list = []
        sender = threading.Thread(target=produce_raw, args=(cluster.brokers[a].address, FENCED_VALUE, outcome))
        try:
            wait_until(lambda: len(workload.acked) >= 50, 30, "the first acknowledged writes")
            cluster.pause_broker(a)
            try:
                wait_until(lambda: a not in zk.broker_ids(), 30, f"ZooKeeper to expire broker {a}'s session")
                moved = wait_until(lambda: (s := zk.partition_state(TOPIC, 0)) and s.leader != a and s, 30,
                                   "the controller to elect a new leader")
                assert moved.leader == b and a not in moved.isr and moved.leader_epoch > before.leader_epoch
                # The controller writes the znode first and sends LeaderAndIsr
                # after: held in between, B and D never hear of the change,
                # keep following A, and A — rightly — has no ISR to shrink.
                # The seed's case is A alone behind: wait for B and D to act.
                wait_until(lambda: acted_on(cluster, b, f"broker {b} leads {TOPIC}-0: epoch {moved.leader_epoch},")
                           and acted_on(cluster, d, f"broker {d} follows {b} for {TOPIC}-0: epoch {moved.leader_epoch},"),
                           30, f"broker {b} to lead and broker {d} to follow it in epoch {moved.leader_epoch}")
                # A wakes up before the controller can tell it anything.
                cluster.pause_broker(controller)
                sender.start()  # queued in A's socket; A reads it as soon as it runs
                time.sleep(0.5)
            finally:
                cluster.resume_broker(a)
            try:
                # A steps down before the controller tells it anything: it
                # learns its session expired and stops leading
                # (kavka.server.zk_session_fence), or, if it looks first,
                # tries to shrink the ISR to itself and finds the state
                # znode moved on (seed 001 #3).
                wait_until(lambda: any("no longer the leader" in ln or "stops leading" in ln
                                       for ln in grep_logs(cluster, TOPIC)[a]),
                           SESSION_TIMEOUT_MS / 1000 - 0.5,
                           f"broker {a} to step down (its session expired, or the state znode moved on)")
                during = zk.partition_state(TOPIC, 0)
            finally:
                cluster.resume_broker(controller)
            sender.join(30)
            assert not sender.is_alive(), "the write to the deposed leader was never answered"
            # Everyone back: A follows B, the ISR is full again.
            wait_until(lambda: (s := zk.partition_state(TOPIC, 0)) and len(s.isr) == 3 and s.leader == b
                       and zk.broker_ids() == set(cluster.brokers), 60, f"broker {a} back in the ISR under {b}")
            time.sleep(1.0)
        finally:
            workload.stop()

        # A's conditional write never landed: the znode kept the controller's decision.
        assert during.leader == b and a not in during.isr and during.leader_epoch == moved.leader_epoch
        assert outcome and outcome[0] != 0, f"the deposed leader acknowledged an acks=all write: {outcome}"
        print(f"the deposed leader answered {outcome[0]}; producer: sent {workload.sent}, "
              f"failed {len(workload.failed)}")

        final = drain(cluster, TOPIC, 1)
        report = check_history(workload.acked, {"live consumer": workload.live_reads}, final)
        assert report.ok, report.summary()
        assert FENCED_VALUE not in {r.value for r in final}
        replicas = compare_replicas(cluster, TOPIC, {0: [a, b, d]})
        assert replicas.identical, replicas.describe()
