"""ControllerBrokerRequestBatch: one request per broker and API, with the
fields brokers need, encodable at every version the controller sends; and
the state-change.log lines it and the state machines write."""

from __future__ import annotations

import logging
import uuid

import pytest

from kavka.common.ids import BrokerId
from kavka.common.leader_and_isr import LeaderAndIsr
from kavka.common.listeners import EndPoint
from kavka.common.topic_partition import TopicPartition
from kavka.controller.context import ControllerContext, PartitionReplica, ReplicaAssignment
from kavka.controller.partition_state import PartitionState
from kavka.controller.replica_state import ReplicaState
from kavka.controller.request_batch import ControllerBrokerRequestBatch
from kavka.controller.state_change_log import STATE_CHANGE_LOGGER, StateChangeLogger
from kavka.protocol.codec import decode_body, encode_body
from kavka.protocol.messages import Message
from kavka.zk.brokers import BrokerIdZNode

TID = uuid.UUID("12345678-1234-5678-1234-567812345678")


class Sink:
    def __init__(self) -> None:
        self.sent: list[tuple[int, Message]] = []

    def send(self, broker_id: int, request: Message, callback=None) -> None:
        self.sent.append((broker_id, request))


def _context() -> ControllerContext:
    ctx = ControllerContext(epoch=4)
    for b in (1, 2):
        ctx.live_brokers[b] = BrokerIdZNode(
            b, (EndPoint("PLAINTEXT", "127.0.0.1", 9000 + b, "PLAINTEXT"), EndPoint("INTERNAL", "10.0.0.1", 9100 + b, "PLAINTEXT")), rack=f"r{b}"
        )
        ctx.broker_epochs[b] = 100 + b
    ctx.topic_ids["t"] = TID
    for p, replicas in {0: (1, 2, 3), 1: (2, 1, 3)}.items():
        tp = TopicPartition("t", p)
        ctx.update_assignment(tp, ReplicaAssignment(replicas))
        ctx.put_leadership(tp, LeaderAndIsr(replicas[0], 7, replicas[:2], 11 + p))
    return ctx


def _batch(ctx: ControllerContext, sink: Sink) -> ControllerBrokerRequestBatch:
    return ControllerBrokerRequestBatch(9, ctx, sink, "INTERNAL", StateChangeLogger(9))


def test_one_request_per_broker_and_api_in_leader_metadata_stop_order() -> None:
    ctx, sink = _context(), Sink()
    batch = _batch(ctx, sink)
    tps = ctx.all_partitions()
    for tp in tps:
        batch.add_leader_and_isr(ctx.partition_replicas(tp), tp, is_new=True)  # replica 3 is dead: skipped
    batch.add_stop_replica([2], TopicPartition("t", 0), delete=False)
    batch.add_stop_replica([2], TopicPartition("t", 0), delete=True)
    batch.add_stop_replica([3], TopicPartition("t", 0), delete=True)
    assert not batch.is_empty
    batch.send_requests()
    assert batch.is_empty
    assert [(b, r.API_NAME) for b, r in sink.sent] == [
        (1, "LeaderAndIsr"), (2, "LeaderAndIsr"), (1, "UpdateMetadata"), (2, "UpdateMetadata"), (2, "StopReplica"),
    ]
    lai = sink.sent[0][1]
    assert (lai.controller_id, lai.controller_epoch, lai.broker_epoch) == (9, 4, 101)
    (ts,) = lai.topic_states
    assert ts.topic_name == "t" and ts.topic_id == TID
    p0 = ts.partition_states[0]
    assert (p0.leader, p0.leader_epoch, list(p0.isr), p0.partition_epoch, list(p0.replicas), p0.is_new, p0.controller_epoch) == (1, 7, [1, 2], 11, [1, 2, 3], True, 4)
    # Leaders' inter-broker endpoints (the INTERNAL listener, not PLAINTEXT).
    assert sorted((l.broker_id, l.host_name, l.port) for l in lai.live_leaders) == [(1, "10.0.0.1", 9101), (2, "10.0.0.1", 9102)]
    um = sink.sent[2][1]
    ps = {p.partition_index: p for p in um.topic_states[0].partition_states}
    assert list(ps[0].offline_replicas) == [3] and ps[1].zk_version == 12
    assert [(b.id, b.rack, [(e.listener, e.port, e.security_protocol) for e in b.endpoints]) for b in um.live_brokers] == [
        (1, "r1", [("PLAINTEXT", 9001, 0), ("INTERNAL", 9101, 0)]),
        (2, "r2", [("PLAINTEXT", 9002, 0), ("INTERNAL", 9102, 0)]),
    ]
    stop = sink.sent[4][1]
    (sp,) = stop.topic_states[0].partition_states
    assert (sp.partition_index, sp.delete_partition, sp.leader_epoch) == (0, True, -2)  # the delete wins


def test_update_metadata_marks_topics_being_deleted() -> None:
    ctx, sink = _context(), Sink()
    ctx.topics_to_delete.add("t")
    batch = _batch(ctx, sink)
    batch.add_update_metadata([1], ctx.all_partitions())
    batch.send_requests()
    ((_, um),) = sink.sent
    assert {p.leader for p in um.topic_states[0].partition_states} == {-2}


@pytest.mark.parametrize("api, versions", [("LeaderAndIsr", range(2, 6)), ("UpdateMetadata", range(5, 8)), ("StopReplica", range(3, 4))])
def test_requests_encode_at_every_version_the_controller_sends(api: str, versions: range) -> None:
    ctx, sink = _context(), Sink()
    batch = _batch(ctx, sink)
    for tp in ctx.all_partitions():
        batch.add_leader_and_isr([1], tp)
        batch.add_stop_replica([1], tp, delete=True)
    batch.send_requests()
    (req,) = [r for b, r in sink.sent if api == r.API_NAME and b == 1]
    for v in versions:
        back = decode_body(req.API_KEY, "request", v, encode_body(req, v))
        assert back.controller_epoch == 4
        parts = {(ts.topic_name, ps.partition_index) for ts in back.topic_states for ps in ts.partition_states}
        assert parts == {("t", 0), ("t", 1)}
        if api != "StopReplica" and v >= (5 if api == "LeaderAndIsr" else 7):
            assert back.topic_states[0].topic_id == TID


def test_state_change_log_lines(caplog: pytest.LogCaptureFixture) -> None:
    ctx, sink = _context(), Sink()
    log = StateChangeLogger(9)
    log.epoch = 4
    with caplog.at_level(logging.DEBUG, logger=STATE_CHANGE_LOGGER):
        log.partition_change(TopicPartition("t", 0), PartitionState.NEW, PartitionState.ONLINE, LeaderAndIsr(1, 0, (1, 2)))
        ControllerBrokerRequestBatch(9, ctx, sink, "INTERNAL", log).add_stop_replica([1], TopicPartition("t", 1), delete=False)
        b = ControllerBrokerRequestBatch(9, ctx, sink, "INTERNAL", log)
        b.add_leader_and_isr([2], TopicPartition("t", 1))
        b.send_requests()
    lines = [r.getMessage() for r in caplog.records if r.name == STATE_CHANGE_LOGGER]
    assert lines[0] == "[Controller id=9 epoch=4] Partition t-0 state changed from NewPartition to OnlinePartition with leader 1, leader epoch 0, isr [1, 2]"
    assert lines[1] == "[Controller id=9 epoch=4] Sending LeaderAndIsr to broker 2 for partition t-1: leader 2, leader epoch 7, isr [2, 1], replicas [2, 1, 3]"
    assert lines[2] == "[Controller id=9 epoch=4] Sending LeaderAndIsr to broker 2 for 1 partitions (1 become-leader, 0 become-follower)"


def test_per_partition_sending_lines_are_debug_and_each_request_has_one_info_line(caplog: pytest.LogCaptureFixture) -> None:
    """Kafka's ControllerBrokerRequestBatch: a request's partitions at TRACE,
    one line per request at INFO (a failover at 10,000 partitions would
    otherwise write a line per partition and replica on the controller's loop)."""
    ctx, sink = _context(), Sink()
    log = StateChangeLogger(9)
    with caplog.at_level(logging.INFO, logger=STATE_CHANGE_LOGGER):
        b = ControllerBrokerRequestBatch(9, ctx, sink, "INTERNAL", log)
        for tp in ctx.all_partitions():
            b.add_leader_and_isr([1, 2], tp)
            b.add_stop_replica([1], tp, delete=False)
        b.send_requests()
    lines = [r.getMessage() for r in caplog.records if r.name == STATE_CHANGE_LOGGER]
    assert lines == [  # t-0 is led by broker 1, t-1 by broker 2
        "[Controller id=9 epoch=0] Sending LeaderAndIsr to broker 1 for 2 partitions (1 become-leader, 1 become-follower)",
        "[Controller id=9 epoch=0] Sending LeaderAndIsr to broker 2 for 2 partitions (1 become-leader, 1 become-follower)",
        "[Controller id=9 epoch=0] Sending StopReplica to broker 1 for 2 partitions",
    ]


def test_replica_changes_and_partitions_going_offline_are_debug_lines(caplog: pytest.LogCaptureFixture) -> None:
    """Kafka's state machines write these at TRACE: at INFO a broker failure
    would cost a line per replica it hosted on the controller's loop."""
    log = StateChangeLogger(9)
    tp = TopicPartition("t", 0)
    with caplog.at_level(logging.INFO, logger=STATE_CHANGE_LOGGER):
        log.replica_change(PartitionReplica(tp, BrokerId(2)), ReplicaState.ONLINE, ReplicaState.OFFLINE)
        log.partition_change(tp, PartitionState.ONLINE, PartitionState.OFFLINE)
        log.partition_change(tp, PartitionState.OFFLINE, PartitionState.NON_EXISTENT)
        log.partition_change(tp, PartitionState.NON_EXISTENT, PartitionState.NEW)
        log.partition_change(tp, PartitionState.OFFLINE, PartitionState.ONLINE, LeaderAndIsr(1, 1, (1,)))
    lines = [r.getMessage() for r in caplog.records if r.name == STATE_CHANGE_LOGGER]
    assert lines == ["[Controller id=9 epoch=0] Partition t-0 state changed from NonExistentPartition to NewPartition",
                     "[Controller id=9 epoch=0] Partition t-0 state changed from OfflinePartition to OnlinePartition "
                     "with leader 1, leader epoch 1, isr [1]"]
    caplog.clear()
    with caplog.at_level(logging.DEBUG, logger=STATE_CHANGE_LOGGER):
        log.replica_change(PartitionReplica(tp, BrokerId(2)), ReplicaState.ONLINE, ReplicaState.OFFLINE)
        log.partition_change(tp, PartitionState.ONLINE, PartitionState.OFFLINE)
    lines = [r.getMessage() for r in caplog.records if r.name == STATE_CHANGE_LOGGER]
    assert lines == ["[Controller id=9 epoch=0] Replica 2 of partition t-0 state changed from OnlineReplica to OfflineReplica",
                     "[Controller id=9 epoch=0] Partition t-0 state changed from OnlinePartition to OfflinePartition"]
