"""WriteTxnMarkers against a real replica manager: a retried marker that
already landed is not written again, and the group coordinator still
applies it to the producer's pending offsets (its first append may have
been answered with an error after it was written: the leader epoch moved
while it waited for the ISR; the chaos run then had the next transaction's
ABORT drop the offsets this COMMIT should have committed)."""

from __future__ import annotations

import uuid

import pytest

from kavka.common.clock import ManualClock
from kavka.common.topic_partition import TopicPartition
from kavka.protocol.messages import WriteTxnMarkersRequest
from kavka.protocol.records.builder import build_batch
from kavka.protocol.records.control import ControlRecordType, build_control_batch
from kavka.protocol.records.record import SimpleRecord
from kavka.replication.replica_manager import ReplicaManager, ReplicaManagerConfig
from kavka.replication.state import PartitionState
from kavka.server.authorization import AuthHelper
from kavka.server.handlers.write_txn_markers import WriteTxnMarkersHandler
from kavka.storage.log_config import LogConfig
from kavka.storage.log_manager import LogManager
from kavka.storage.log_manager_config import LogManagerConfig

OFFSETS = TopicPartition("__consumer_offsets", 3)


class _Isr:
    async def write_isr(self, tp, state, zk_version):
        return zk_version + 1


class _Changes:
    async def isr_changed(self, partitions):
        return None


@pytest.fixture
def rm(tmp_path):
    clock = ManualClock(1_700_000_000_000)
    logs = LogManager(LogManagerConfig(log_dirs=(str(tmp_path / "data"),)),
                      LogConfig.from_props({"segment.bytes": 1 << 20}), clock=clock)
    manager = ReplicaManager(1, logs, ReplicaManagerConfig(replica_lag_time_max_ms=10_000), isr_writer=_Isr(),
                             isr_change_listener=_Changes(), clock=clock)
    manager.become_leader_or_follower(0, 1, [PartitionState(
        OFFSETS.topic, OFFSETS.partition, 1, 1, 0, (1,), 0, (1,), topic_id=uuid.uuid4())], {})
    yield manager
    logs.shutdown()


def _marker(producer_id: int, epoch: int, coordinator_epoch: int) -> WriteTxnMarkersRequest:
    Q = WriteTxnMarkersRequest
    return Q(markers=[Q.Markers(producer_id=producer_id, producer_epoch=epoch, transaction_result=True,
                                topics=[Q.Markers.Topics(name=OFFSETS.topic, partition_indexes=[OFFSETS.partition])],
                                coordinator_epoch=coordinator_epoch)])


async def test_a_retried_marker_that_landed_is_applied_to_the_pending_offsets_not_written_again(rm):
    applied: list[tuple[int, int, bool]] = []
    handler = WriteTxnMarkersHandler(rm, lambda: 1, lambda *a: applied.append(a), AuthHelper(None))
    offsets = build_batch([SimpleRecord(b"k", b"v", 1)], producer_id=7, producer_epoch=0, base_sequence=0,
                          is_transactional=True)
    await rm.append_records(1000, -1, {OFFSETS: offsets}, internal_topics_allowed=True)
    # The first COMMIT landed, but its answer was lost: the coordinator never applied it.
    landed = build_control_batch(ControlRecordType.COMMIT, 7, 0, 5, 1)
    await rm.append_records(1000, -1, {OFFSETS: landed}, internal_topics_allowed=True)
    end = rm.get_partition(OFFSETS).log.log_end_offset
    answer = await handler(None, _marker(7, 0, 5))  # the transaction coordinator retries it
    assert answer.markers[0].topics[0].partitions[0].error_code == 0
    assert rm.get_partition(OFFSETS).log.log_end_offset == end  # not written twice
    assert applied == [(OFFSETS.partition, 7, True)]
