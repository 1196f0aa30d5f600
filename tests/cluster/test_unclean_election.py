"""Unclean leader election, with real processes (seed 000 §如何处理所有
Replica 都不工作, seed 003 §Broker Failure; Jepsen's Kafka 0.8 analysis of 2013).

Two topics with the same replicas [A, B] on a 3-broker cluster (the
controller is the third broker), min.insync.replicas=1 so the leader alone
may acknowledge: "offline" keeps unclean.leader.election.enable=false,
"unclean" overrides it to true. B stops, the ISR shrinks to {A}, more
acks=all writes are acknowledged by A alone, then A is killed and only B
(out of the ISR) comes back:

- "offline" stays without a leader (leader -1) rather than lose the
  acknowledged writes; once A returns it leads again with every one of them;
- "unclean" gets B as leader with ISR [B]: the writes only A had are lost,
  and the controller says so loudly in its state-change log; when A returns
  it truncates to B's log and both replicas end identical.
"""

from __future__ import annotations

import time

import pytest

from .cluster_helpers import ZkView, produce, wait_until
from .fault_helpers import compare_replicas, create_topic, drain, grep_logs

pytestmark = pytest.mark.cluster

CONFIG = {
    "zookeeper.session.timeout.ms": "3000",
    "replica.lag.time.max.ms": "2000",
    "replica.fetch.wait.max.ms": "200",
    "replica.fetch.backoff.ms": "200",
    "unclean.leader.election.enable": "false",
    "auto.leader.rebalance.enable": "false",
}
OFFLINE, UNCLEAN = "offline", "unclean"
N = 100


def test_unclean_election_off_keeps_the_partition_offline_on_loses_data_loudly(make_cluster):
    cluster = make_cluster(brokers=3, config=CONFIG)
    with ZkView(cluster) as zk:
        controller = wait_until(zk.controller, 30, "a controller")[0]
        a, b = sorted(set(cluster.brokers) - {controller})
        for topic, unclean in ((OFFLINE, "false"), (UNCLEAN, "true")):
            create_topic(cluster, topic, {0: [a, b]},
                         {"min.insync.replicas": "1", "unclean.leader.election.enable": unclean})
        state = lambda t: zk.partition_state(t, 0)  # noqa: E731
        for topic in (OFFLINE, UNCLEAN):
            wait_until(lambda topic=topic: (s := state(topic)) and s.leader == a and len(s.isr) == 2, 30,
                       f"{topic}: leader {a}, ISR of 2")
        first = [b"first-%04d" % i for i in range(N)]
        second = [b"second-%04d" % i for i in range(N)]
        for topic in (OFFLINE, UNCLEAN):
            produce(cluster, topic, {0: first})

        cluster.stop_broker(b)
        for topic in (OFFLINE, UNCLEAN):
            wait_until(lambda topic=topic: (s := state(topic)) and list(s.isr) == [a], 30,
                       f"{topic}: ISR shrunk to [{a}]")
            produce(cluster, topic, {0: second})  # acknowledged by A alone

        cluster.kill_broker(a)
        for topic in (OFFLINE, UNCLEAN):
            wait_until(lambda topic=topic: (s := state(topic)) and s.leader == -1, 30, f"{topic}: offline")
        cluster.start_broker(b)
        cluster.wait_registered({b}, 60)

        elected = wait_until(lambda: (s := state(UNCLEAN)) and s.leader == b and s, 30,
                             f"{UNCLEAN}: broker {b} elected from outside the ISR")
        assert list(elected.isr) == [b]
        # The controller logs its election once the znode write has returned,
        # so the line may land just after the state above was read.
        wait_until(lambda: [ln for ln in grep_logs(cluster, "UNCLEAN leader election").get(controller, [])
                            if UNCLEAN in ln], 10,
                   f"a loud line about the unclean election of {UNCLEAN} in broker {controller}'s log")
        # The same broker-startup event decided both partitions; give it time anyway.
        time.sleep(3.0)
        st = state(OFFLINE)
        assert st.leader == -1 and list(st.isr) == [a], f"{OFFLINE} must stay offline, got {st}"
        assert [r.value for r in drain(cluster, UNCLEAN, 1)] == first  # B never had the second half

        cluster.start_broker(a)
        cluster.wait_ready({a}, 60)
        wait_until(lambda: (s := state(OFFLINE)) and s.leader == a, 30, f"{OFFLINE}: broker {a} leads again")
        assert [r.value for r in drain(cluster, OFFLINE, 1)] == first + second  # nothing acknowledged lost
        wait_until(lambda: (s := state(UNCLEAN)) and len(s.isr) == 2, 30, f"{UNCLEAN}: broker {a} back in the ISR")
        replicas = compare_replicas(cluster, UNCLEAN, {0: [a, b]})
        assert replicas.identical, replicas.describe()
        assert [r.value for r in drain(cluster, UNCLEAN, 1)] == first
