"""DeleteRecords (key 21): move each partition's log start offset forward
on its leader (offset -1: up to the high watermark). Records below it are
no longer served and whole segments below it are deleted by retention; the
answer is the new log start (``low_watermark``). Followers learn it from the
log start offset in their fetch responses.
"""

from __future__ import annotations

from kavka.common.topic_partition import TopicPartition
from kavka.protocol.messages import DeleteRecordsRequest, DeleteRecordsResponse
from kavka.replication.replica_manager import ReplicaManager
from kavka.server.network import Dispatcher, RequestContext

API_KEY = 21
MIN_VERSION = 0
MAX_VERSION = 2


class DeleteRecordsHandler:
    def __init__(self, replica_manager: ReplicaManager) -> None:
        self.replica_manager = replica_manager

    async def __call__(self, ctx: RequestContext, request: DeleteRecordsRequest) -> DeleteRecordsResponse:
        R = DeleteRecordsResponse
        wanted = {TopicPartition(t.name, p.partition_index): p.offset
                  for t in request.topics for p in t.partitions}
        results = self.replica_manager.delete_records(wanted)
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
