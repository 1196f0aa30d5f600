"""WriteTxnMarkers (key 27): a transaction coordinator has this broker, as
leader, append the COMMIT or ABORT marker of a producer's transaction to
each listed partition (KIP-98).

Each marker becomes one control batch (``build_control_batch``: producer id
and epoch of the transaction, the coordinator's epoch in the value) appended
like a produce with acks=-1 — internal topics allowed, since the group
coordinator's ``__consumer_offsets`` partitions take markers too — and
answered once the ISR has it, so a completed transaction survives the
leader's failure. Appending the marker closes the producer's open
transaction in the partition's producer state, which moves the last stable
offset; an ABORT is indexed in the segment's ``.txnindex``.

A COMMIT or ABORT reaching a ``__consumer_offsets`` partition is also
handed to the group coordinator (``on_offsets_marker``): the producer's
pending transactional offsets there become committed or are dropped —
a retried marker that had already landed too (see ``__call__``).

A partition this broker does not lead answers NOT_LEADER_OR_FOLLOWER (the
coordinator looks the leader up again and retries); a marker from an epoch
older than the producer's is INVALID_PRODUCER_EPOCH; one from a coordinator
epoch older than the one whose marker the partition last appended for the
producer is TRANSACTION_COORDINATOR_FENCED (a zombie coordinator: the
producer state remembers the epoch, in its snapshots too). Versions 0-2 (v1+
flexible); only brokers send it.

Who may send it: with an authorizer, CLUSTER_ACTION on the cluster (else
every partition is CLUSTER_AUTHORIZATION_FAILED, as Kafka). A marker is
appended as Kafka appends it, with one exception: a retry of a marker that
already landed (this broker leads the partition, the producer is known
there at the marker's epoch with nothing open) is answered NONE and not
written again (``ReplicaManager.marker_closes_nothing``). A marker of a
newer producer epoch, or for a producer the partition does not know, is
written even with nothing open: the coordinator bumps the epoch when it
aborts a transaction that timed out, and the marker is what fences a write
of that transaction arriving late (else it would open a transaction no
marker closes: KIP-890's hanging transaction). (On a cluster without an
authorizer a client that knows a producer id can so fence it, as it could
by InitProducerId with its transactional.id: only an authorizer tells a
coordinator from a client.)
"""

from __future__ import annotations

from collections.abc import Callable

from kavka.common.errors import ErrorCode
from kavka.common.topic_partition import TopicPartition
from kavka.protocol.messages import WriteTxnMarkersRequest, WriteTxnMarkersResponse
from kavka.protocol.records.control import ControlRecordType, build_control_batch
from kavka.replication.replica_manager import ReplicaManager
from kavka.replication.requests import ProducePartitionResult
from kavka.security.acl import AclOperation
from kavka.server.authorization import AuthHelper
from kavka.server.network import Dispatcher, RequestContext

API_KEY = 27
MIN_VERSION = 0
MAX_VERSION = 2
MARKER_APPEND_TIMEOUT_MS = 30_000  # Kafka waits request.timeout.ms for the ISR
OFFSETS_TOPIC = "__consumer_offsets"


class WriteTxnMarkersHandler:
    def __init__(self, replica_manager: ReplicaManager, now_ms: Callable[[], int],
                 on_offsets_marker: Callable[[int, int, bool], None], auth: AuthHelper) -> None:
        self.replica_manager = replica_manager
        self.now_ms = now_ms
        self.on_offsets_marker = on_offsets_marker
        self.auth = auth

    async def __call__(self, ctx: RequestContext, request: WriteTxnMarkersRequest) -> WriteTxnMarkersResponse:
        R = WriteTxnMarkersResponse
        if not self.auth.authorize_cluster(ctx, AclOperation.CLUSTER_ACTION):
            denied = int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
            return R(markers=[R.Markers(producer_id=m.producer_id, topics=[
                R.Markers.Topics(name=t.name, partitions=[
                    R.Markers.Topics.Partitions(partition_index=p, error_code=denied) for p in t.partition_indexes])
                for t in m.topics]) for m in request.markers])
        answers = []
        for marker in request.markers:
            kind = ControlRecordType.COMMIT if marker.transaction_result else ControlRecordType.ABORT
            entries: dict[TopicPartition, bytes] = {}
            nothing_open: dict[TopicPartition, ProducePartitionResult] = {}
            for t in marker.topics:
                for p in t.partition_indexes:
                    tp = TopicPartition(t.name, p)
                    # Checked in the same loop step as the append below (no await between).
                    if self.replica_manager.marker_closes_nothing(tp, marker.producer_id, marker.producer_epoch,
                                                                  marker.coordinator_epoch):
                        nothing_open[tp] = ProducePartitionResult(ErrorCode.NONE)
                        continue
                    entries[tp] = build_control_batch(
                        kind, marker.producer_id, marker.producer_epoch, marker.coordinator_epoch, self.now_ms()
                    )
            results = (
                await self.replica_manager.append_records(
                    MARKER_APPEND_TIMEOUT_MS, -1, entries, internal_topics_allowed=True
                )
                if entries else {}
            )
            # The group coordinator applies a marker to the producer's pending
            # offsets once it is in the log: appended now, or a retry of one
            # that landed before (``nothing_open``) — whose first append may
            # have been answered with an error after it was written (the
            # leader epoch moved while it waited for the ISR), so that the
            # coordinator never applied it and a later marker of the
            # producer's next transaction would have dropped or committed
            # these offsets with its own.
            for tp, result in [*results.items(), *nothing_open.items()]:
                if tp.topic == OFFSETS_TOPIC and result.error is ErrorCode.NONE:
                    self.on_offsets_marker(tp.partition, marker.producer_id, bool(marker.transaction_result))
            topics = [
                R.Markers.Topics(name=t.name, partitions=[
                    R.Markers.Topics.Partitions(
                        partition_index=p,
                        error_code=int((results.get(TopicPartition(t.name, p))
                                        or nothing_open[TopicPartition(t.name, p)]).error)
                    )
                    for p in t.partition_indexes
                ])
                for t in marker.topics
            ]
            answers.append(R.Markers(producer_id=marker.producer_id, topics=topics))
        return R(markers=answers)


def register(dispatcher: Dispatcher, handler: WriteTxnMarkersHandler) -> None:
    dispatcher.register(API_KEY, handler, MIN_VERSION, MAX_VERSION)
