"""DeleteRecords (key 21): move each partition's log start offset forward
on its leader (offset -1: up to the high watermark). Records below it are
no longer served and whole segments below it are deleted by retention; the
answer is the new log start (``low_watermark``). Followers learn it from the
log start offset in their fetch responses. Each topic needs DELETE
(Kafka's rule), else its partitions are TOPIC_AUTHORIZATION_FAILED with
low watermark -1.
"""

from __future__ import annotations

from kavka.common.errors import ErrorCode
from kavka.common.topic_partition import TopicPartition
from kavka.protocol.messages import DeleteRecordsRequest, DeleteRecordsResponse
from kavka.replication.replica_manager import ReplicaManager
from kavka.replication.requests import DeleteRecordsResult
from kavka.security.acl import AclOperation, ResourceType
from kavka.server.authorization import AuthHelper
from kavka.server.network import Dispatcher, RequestContext

API_KEY = 21
MIN_VERSION = 0
MAX_VERSION = 2


class DeleteRecordsHandler:
    def __init__(self, replica_manager: ReplicaManager, auth: AuthHelper) -> None:
        self.replica_manager = replica_manager
        self.auth = auth

    async def __call__(self, ctx: RequestContext, request: DeleteRecordsRequest) -> DeleteRecordsResponse:
        R = DeleteRecordsResponse
        deletable = self.auth.filter_by_authorized(ctx, AclOperation.DELETE, ResourceType.TOPIC,
                                                   (t.name for t in request.topics for _ in t.partitions))
        wanted = {TopicPartition(t.name, p.partition_index): p.offset
                  for t in request.topics if t.name in deletable for p in t.partitions}
        results = self.replica_manager.delete_records(wanted)
        denied = DeleteRecordsResult(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
        for t in request.topics:
            if t.name not in deletable:
                for p in t.partitions:
                    results[TopicPartition(t.name, p.partition_index)] = denied
        topics = []
        for t in request.topics:
            parts = []
            for p in t.partitions:
                r = results[TopicPartition(t.name, p.partition_index)]
                parts.append(R.Topics.Partitions(partition_index=p.partition_index,
                                                 low_watermark=r.low_watermark, error_code=int(r.error)))
            topics.append(R.Topics(name=t.name, partitions=parts))
        return R(throttle_time_ms=0, topics=topics)


def register(dispatcher: Dispatcher, handler: DeleteRecordsHandler) -> None:
    dispatcher.register(API_KEY, handler, MIN_VERSION, MAX_VERSION)
