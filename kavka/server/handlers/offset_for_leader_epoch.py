"""OffsetForLeaderEpoch (key 23, KIP-101/279/320): for a requested leader
epoch, the largest epoch <= it that the leader knows and that epoch's end
offset (the start of the next epoch, or the log end for the current one).
A follower truncates to min(that, its own end for that epoch) instead of to
its high watermark; a consumer (v3+, replica id -1) uses it to detect log
truncation after an unclean election. ``current_leader_epoch`` (v2+) fences
stale callers (FENCED_LEADER_EPOCH) and callers ahead of us
(UNKNOWN_LEADER_EPOCH). Authorization (Kafka's): CLUSTER_ACTION on the
cluster (a follower) allows every topic; otherwise (a consumer) each topic
needs DESCRIBE, else TOPIC_AUTHORIZATION_FAILED. The answer moves no state.
"""

from __future__ import annotations

from kavka.common.errors import ErrorCode, KafkaError
from kavka.common.topic_partition import TopicPartition
from kavka.protocol.messages import OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse
from kavka.replication.replica_manager import ReplicaManager
from kavka.security.acl import AclOperation, ResourceType
from kavka.server.authorization import AuthHelper
from kavka.server.network import Dispatcher, RequestContext

API_KEY = 23
MIN_VERSION = 0
MAX_VERSION = 4


class OffsetForLeaderEpochHandler:
    def __init__(self, replica_manager: ReplicaManager, auth: AuthHelper) -> None:
        self.replica_manager = replica_manager
        self.auth = auth

    async def __call__(self, ctx: RequestContext, request: OffsetForLeaderEpochRequest) -> OffsetForLeaderEpochResponse:
        version = ctx.api_version
        R = OffsetForLeaderEpochResponse
        names = [t.topic for t in request.topics]
        if self.auth.authorize_cluster(ctx, AclOperation.CLUSTER_ACTION, log_if_denied=False):
            described = set(names)
        else:
            described = self.auth.filter_by_authorized(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, names)
        topics = []
        for t in request.topics:
            parts = []
            for p in t.partitions:
                out = R.Topics.Partitions(partition=p.partition, error_code=int(ErrorCode.NONE),
                                          leader_epoch=-1, end_offset=-1)
                if t.topic not in described:
                    out.error_code = int(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
                    parts.append(out)
                    continue
                try:
                    r = self.replica_manager.last_offset_for_leader_epoch(
                        TopicPartition(t.topic, p.partition),
                        p.current_leader_epoch if version >= 2 else -1, p.leader_epoch)
                except KafkaError as e:
                    out.error_code = int(e.code)
                else:
                    out.leader_epoch, out.end_offset = r.epoch, r.end_offset
                parts.append(out)
            topics.append(R.Topics(topic=t.topic, partitions=parts))
        return R(throttle_time_ms=0, topics=topics)


def register(dispatcher: Dispatcher, handler: OffsetForLeaderEpochHandler) -> None:
    dispatcher.register(API_KEY, handler, MIN_VERSION, MAX_VERSION)
