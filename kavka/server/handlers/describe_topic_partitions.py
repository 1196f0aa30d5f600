"""DescribeTopicPartitions (key 75, KIP-966): topics described a page of
partitions at a time, for clusters whose topics are too many or too large
for one Metadata response.

The request names topics (none: every topic), the most partitions wanted
(``response_partition_limit``, capped by the broker's
``max.request.partition.size.limit`` and at least 1) and an optional
cursor (topic, first partition). Topics are taken in name order from the
cursor's topic on; partitions from the cursor's partition for that topic,
from 0 for the others, until the limit: the response then carries
``next_cursor``, the topic and partition to ask for next (Kafka's
DescribeTopicPartitionsRequestHandler and KRaftMetadataCache.
describeTopicResponse, followed step by step):

- a topic cut short: the cursor names it and its next partition; a topic
  that exactly used up the limit: the cursor names the next topic at 0;
- a named topic the session may not DESCRIBE is TOPIC_AUTHORIZATION_FAILED
  with no topic id (whether it exists or not), reported with the page in
  which the walk passed it; a listing of every topic leaves such topics
  out; a named topic that does not exist is UNKNOWN_TOPIC_OR_PARTITION (or
  INVALID_TOPIC_EXCEPTION for an illegal name);
- a cursor naming a topic that is not among the named ones, or a negative
  cursor partition, is an invalid request: every named topic is answered
  INVALID_REQUEST, as Kafka's error response for the request.

Per partition: leader (-1 and LEADER_NOT_AVAILABLE when it is not alive,
LISTENER_NOT_FOUND when it has no endpoint on this connection's
listener), leader epoch, replicas, ISR and offline replicas (those on
brokers not alive). KIP-966's eligible leader replicas belong to KRaft's
unclean-recovery election, which a ZooKeeper-mode cluster does not run:
both ELR lists are empty. Each described topic carries the operations the
session may do on it (KIP-430).
"""

from __future__ import annotations

from collections.abc import Iterator

from kavka.common.errors import ErrorCode
from kavka.common.topic_names import validate_topic_name
from kavka.protocol.messages import ZERO_UUID, DescribeTopicPartitionsRequest, DescribeTopicPartitionsResponse
from kavka.security.acl import AclOperation, ResourceType
from kavka.server.authorization import AuthHelper
from kavka.server.metadata_cache import MetadataCache
from kavka.server.network import Dispatcher, RequestContext

API_KEY = 75
MIN_VERSION = 0
MAX_VERSION = 0
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})

R = DescribeTopicPartitionsResponse


def _java_order(name: str) -> bytes:
    # Java's String.compareTo orders by UTF-16 code units, Kafka's topic order.
    return name.encode("utf-16-be", "surrogatepass")


class DescribeTopicPartitionsHandler:
    def __init__(self, cache: MetadataCache, auth: AuthHelper, max_partitions: int) -> None:
        self.cache = cache
        self.auth = auth
        self.max_partitions = max_partitions

    async def __call__(self, ctx: RequestContext,
                       request: DescribeTopicPartitionsRequest) -> DescribeTopicPartitionsResponse:
        cursor = request.cursor
        cursor_topic = cursor.topic_name if cursor is not None else ""
        start = _java_order(cursor_topic)
        fetch_all = not request.topics
        names = self.cache.topics() if fetch_all else [t.name for t in request.topics]
        topics = sorted({n for n in names if _java_order(n) >= start}, key=_java_order)
        if cursor is not None and ((not fetch_all and cursor.topic_name not in topics) or cursor.partition_index < 0):
            return self._invalid(request)

        unauthorized: list = []

        def authorized() -> Iterator[str]:
            # Lazy, as Kafka's stream: only topics the walk reaches are checked.
            for name in topics:
                if self.auth.authorize(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, name):
                    yield name
                elif not fetch_all:
                    unauthorized.append(R.Topics(error_code=int(ErrorCode.TOPIC_AUTHORIZATION_FAILED), name=name,
                                                 topic_id=ZERO_UUID, partitions=[]))

        limit = max(min(self.max_partitions, request.response_partition_limit), 1)
        response = R(throttle_time_ms=0)
        remaining = limit
        for name in authorized():
            if remaining == 0:
                # The previous topic used the limit up exactly: go on from this one.
                response.next_cursor = R.NextCursor(topic_name=name, partition_index=0)
                break
            first = cursor.partition_index if cursor is not None and name == cursor_topic else 0
            described = self._topic(ctx, name, first, remaining)
            if described is None:
                if not fetch_all:
                    problem = validate_topic_name(name)
                    code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if problem is None else ErrorCode.INVALID_TOPIC_EXCEPTION
                    response.topics.append(R.Topics(error_code=int(code), name=name, topic_id=ZERO_UUID,
                                                    is_internal=name in INTERNAL_TOPICS))
                continue
            topic, next_partition = described
            response.topics.append(topic)
            if next_partition >= 0:
                response.next_cursor = R.NextCursor(topic_name=name, partition_index=next_partition)
                break
            remaining -= len(topic.partitions)
        response.topics.extend(unauthorized)
        return response

    def _topic(self, ctx: RequestContext, name: str, first: int,
               most: int) -> tuple[DescribeTopicPartitionsResponse.Topics, int] | None:
        """The topic's partitions [first, first + most) and the next
        partition to ask for (-1: none left); None when it does not exist."""
        cache = self.cache
        if not cache.contains_topic(name):
            return None
        partitions = cache.topic_partitions(name)
        count = len(partitions)
        upper = min(count, first + most)
        P = R.Topics.Partitions
        described = []
        for index in range(first, upper):
            p = partitions.get(index)
            if p is None:
                continue
            offline = [r for r in p.replicas if cache.alive_broker(r) is None or r in p.offline_replicas]
            leader = cache.alive_broker(p.leader) if p.leader >= 0 else None
            error = ErrorCode.NONE
            if leader is None:
                error = ErrorCode.LEADER_NOT_AVAILABLE
            elif leader.endpoint(ctx.listener) is None:
                error = ErrorCode.LISTENER_NOT_FOUND
            described.append(P(error_code=int(error), partition_index=index,
                               leader_id=p.leader if error is ErrorCode.NONE else -1, leader_epoch=p.leader_epoch,
                               replica_nodes=list(p.replicas), isr_nodes=list(p.isr),
                               eligible_leader_replicas=[], last_known_elr=[], offline_replicas=offline))
        topic = R.Topics(error_code=int(ErrorCode.NONE), name=name, topic_id=cache.topic_id(name),
                         is_internal=name in INTERNAL_TOPICS, partitions=described,
                         topic_authorized_operations=self.auth.authorized_operations(ctx, ResourceType.TOPIC, name))
        return topic, upper if upper < count else -1

    @staticmethod
    def _invalid(request: DescribeTopicPartitionsRequest) -> DescribeTopicPartitionsResponse:
        # Kafka's DescribeTopicPartitionsRequest.getErrorResponse for an InvalidRequestException.
        return R(throttle_time_ms=0, topics=[
            R.Topics(error_code=int(ErrorCode.INVALID_REQUEST), name=t.name, topic_id=ZERO_UUID, partitions=[])
            for t in request.topics])


def register(dispatcher: Dispatcher, handler: DescribeTopicPartitionsHandler) -> None:
    dispatcher.register(API_KEY, handler, MIN_VERSION, MAX_VERSION)
