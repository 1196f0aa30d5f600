"""ListOffsets (key 2): the earliest offset (-2), the latest (-1: the high
watermark, or the last stable offset for read_committed — never the last
batch's base offset), the record with the largest timestamp (-3, v7+), or
the first offset whose timestamp is at or after a given time.

Versions 1-9: v0's list-of-offsets form is gone from Kafka 4 and no client
here sends it. A consumer (replica id -1) sees offsets below the high
watermark; a replica (id >= 0) up to the log end. Partition errors carry the
Kafka code (NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION,
FENCED_LEADER_EPOCH, OFFSET_NOT_AVAILABLE ...). Each topic needs DESCRIBE
(Kafka's rule), else its partitions are TOPIC_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

from kavka.common.errors import ErrorCode, KafkaError
from kavka.common.topic_partition import TopicPartition
from kavka.protocol.messages import ListOffsetsRequest, ListOffsetsResponse
from kavka.replication.replica_manager import ReplicaManager
from kavka.replication.requests import FetchIsolation
from kavka.security.acl import AclOperation, ResourceType
from kavka.server.authorization import AuthHelper
from kavka.server.network import Dispatcher, RequestContext

API_KEY = 2
MIN_VERSION = 1
MAX_VERSION = 9
MAX_TIMESTAMP = -3


class ListOffsetsHandler:
    def __init__(self, replica_manager: ReplicaManager, auth: AuthHelper) -> None:
        self.replica_manager = replica_manager
        self.auth = auth

    async def __call__(self, ctx: RequestContext, request: ListOffsetsRequest) -> ListOffsetsResponse:
        version = ctx.api_version
        R = ListOffsetsResponse
        replica_id = request.replica_id
        isolation = None if replica_id >= 0 else FetchIsolation.of(
            replica_id, request.isolation_level if version >= 2 else 0)
        described = self.auth.filter_by_authorized(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC,
                                                   (t.name for t in request.topics))
        topics = []
        for t in request.topics:
            parts = []
            for p in t.partitions:
                tp = TopicPartition(t.name, p.partition_index)
                out = R.Topics.Partitions(partition_index=p.partition_index, error_code=int(ErrorCode.NONE),
                                          timestamp=-1, offset=-1, leader_epoch=-1)
                if t.name not in described:
                    out.error_code = int(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
                elif p.timestamp == MAX_TIMESTAMP and version < 7:
                    out.error_code = int(ErrorCode.UNSUPPORTED_VERSION)
                else:
                    try:
                        found = self.replica_manager.fetch_offset_for_timestamp(
                            tp, p.timestamp, isolation, p.current_leader_epoch if version >= 4 else -1)
                    except KafkaError as e:
                        out.error_code = int(e.code)
                    else:
                        if found is not None:
                            out.timestamp, out.offset = found.timestamp, found.offset
                            if version >= 4:
                                out.leader_epoch = found.leader_epoch
                parts.append(out)
            topics.append(R.Topics(name=t.name, partitions=parts))
        return R(throttle_time_ms=0, topics=topics)


def register(dispatcher: Dispatcher, handler: ListOffsetsHandler) -> None:
    dispatcher.register(API_KEY, handler, MIN_VERSION, MAX_VERSION)
