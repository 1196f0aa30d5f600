"""Marker delivery never stalls a transaction, end to end (3 broker
processes, RF=3): a librdkafka transactional producer has its records
acknowledged by the ISR of a partition led by a broker that is not the
transaction's coordinator; that leader is killed (SIGKILL) or frozen
(SIGSTOP: a hung host, whose connections accept but never answer) before
the commit, so the coordinator's first WriteTxnMarkers attempts meet a
refused connection or time out (``request.timeout.ms``). The coordinator
retries against whichever leader the metadata names, the controller elects
a survivor, and the marker lands there: the
transaction completes (the next one starts), a read_committed consumer
sees every committed record exactly once, and the aborted ones never."""

from __future__ import annotations

import pytest

from kavka.protocol.messages import ListOffsetsRequest

from .cluster_zk import controller_id, create_topic, request
from .fault_helpers import grep_logs
from .replication_helpers import REPLICATION_CONFIG, wait_state
from .test_transaction_failover import _committed_values, _coordinator

TOPIC = "txn-failover"  # the name _committed_values reads
TID = "failover-app"
CONFIG = {**REPLICATION_CONFIG, "transaction.state.log.replication.factor": "3",
          "transaction.state.log.min.isr": "2", "transaction.state.log.num.partitions": "3",
          "offsets.topic.replication.factor": "3", "offsets.topic.num.partitions": "3",
          "request.timeout.ms": "3000",
          # The failed leader must still be the one the metadata names when the
          # coordinator sends its first markers (right after EndTxn), so that the
          # retry path is what this test exercises: a 3 s session could expire,
          # and a survivor be elected, before a loaded machine got there.
          "zookeeper.session.timeout.ms": "8000"}


def _end_offsets(cluster, broker: int) -> tuple[int, int]:
    """(read_committed, read_uncommitted) latest offsets from ``broker``
    itself: the last stable offset and the high watermark (-1 while it
    answers an error, e.g. before it knows it leads)."""
    def latest(isolation: int) -> int:
        body = ListOffsetsRequest(replica_id=-1, isolation_level=isolation, topics=[ListOffsetsRequest.Topics(
            name=TOPIC, partitions=[ListOffsetsRequest.Topics.Partitions(partition_index=0, timestamp=-1)])])
        answer = request(cluster, broker, body, version=2).topics[0].partitions[0]
        return answer.offset if answer.error_code == 0 else -1
    return latest(1), latest(0)


@pytest.mark.parametrize("fault", ["kill", "pause"])
def test_commit_completes_after_the_data_leader_fails(make_cluster, fault):
    from confluent_kafka import Producer

    cluster = make_cluster(brokers=3, config=CONFIG)
    p = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": TID, "linger.ms": 5,
                  "transaction.timeout.ms": 60_000, "topic.metadata.refresh.interval.ms": 1000})
    p.init_transactions(60)
    coordinator = _coordinator(cluster, 0)
    controller = controller_id(cluster)
    victim = next(b for b in sorted(cluster.brokers) if b not in (coordinator, controller))
    others = [b for b in sorted(cluster.brokers) if b != victim]
    create_topic(cluster, TOPIC, {0: [victim, *others]})
    wait_state(cluster, TOPIC, lambda s: s["leader"] == victim and len(s["isr"]) == 3, "leader and an ISR of 3")

    p.begin_transaction()
    p.produce(TOPIC, b"aborted", partition=0)
    p.flush(30)  # written (offset 0), so the abort has data to mark (ABORT at 1)
    p.abort_transaction(60)
    p.begin_transaction()
    for i in range(5):
        p.produce(TOPIC, b"committed-%d" % i, partition=0)
    p.flush(30)  # offsets 2-6, acknowledged by the ISR (acks=all)
    if fault == "kill":
        cluster.kill_broker(victim)
    else:
        cluster.pause_broker(victim)
    p.commit_transaction(90)  # Prepare written; the first markers are refused or time out
    leader = wait_state(cluster, TOPIC, lambda s: s["leader"] in others, "a surviving leader")["leader"]
    # While the old leader is still down (or frozen) the COMMIT marker lands on
    # the new one (offset 7): its last stable offset reaches its high watermark.
    cluster.wait_for(lambda: _end_offsets(cluster, leader) == (8, 8), 60, "the COMMIT marker on the new leader")
    # the first attempts did go to the failed leader, and were retried
    assert grep_logs(cluster, f"to broker {victim}: ").get(coordinator)
    if fault == "pause":
        cluster.resume_broker(victim)  # it rejoins as a follower (librdkafka's requests to it end)
        wait_state(cluster, TOPIC, lambda s: len(s["isr"]) == 3, "the resumed broker back in the ISR", timeout=60)
    # The transaction reached CompleteCommit: the next one may begin and commit.
    p.begin_transaction()
    p.produce(TOPIC, b"after", partition=0)
    p.commit_transaction(90)
    assert _committed_values(cluster) == [*(b"committed-%d" % i for i in range(5)), b"after"]
