"""DescribeProducers (key 61, KIP-664): the idempotent and transactional
producers a partition remembers, read from this broker's replica of it —
the leader's by default, but an operator may ask any replica (Kafka's
``--broker-id``): per producer its epoch, last sequence and timestamp, the
coordinator epoch of its last marker and the first offset of its open
transaction. An open transaction no coordinator knows of is a *hanging*
one (``kavka transactions find-hanging``), which an operator then ends with
an ABORT marker (WriteTxnMarkers).

Per topic, in Kafka's order (KafkaApis.handleDescribeProducersRequest): an
illegal name is INVALID_TOPIC_EXCEPTION; without READ on the topic,
TOPIC_AUTHORIZATION_FAILED; a topic the cluster does not have,
UNKNOWN_TOPIC_OR_PARTITION — each for every partition asked, with the
reason in ``error_message``. Then per partition: not hosted here,
NOT_LEADER_OR_FOLLOWER when the cluster has it, else
UNKNOWN_TOPIC_OR_PARTITION.
"""

from __future__ import annotations

from kavka.common.errors import ErrorCode, KafkaError
from kavka.common.topic_names import validate_topic_name
from kavka.common.topic_partition import TopicPartition
from kavka.protocol.messages import DescribeProducersRequest, DescribeProducersResponse
from kavka.replication.replica_manager import ReplicaManager
from kavka.security.acl import AclOperation, ResourceType
from kavka.server.authorization import AuthHelper
from kavka.server.metadata_cache import MetadataCache
from kavka.server.network import Dispatcher, RequestContext

API_KEY = 61
MIN_VERSION = 0
MAX_VERSION = 0


class DescribeProducersHandler:
    def __init__(self, replica_manager: ReplicaManager, cache: MetadataCache, auth: AuthHelper) -> None:
        self.replica_manager = replica_manager
        self.cache = cache
        self.auth = auth

    async def __call__(self, ctx: RequestContext, request: DescribeProducersRequest) -> DescribeProducersResponse:
        R = DescribeProducersResponse
        P = R.Topics.Partitions
        legal = {t.name for t in request.topics if validate_topic_name(t.name) is None}
        readable = self.auth.filter_by_authorized(ctx, AclOperation.READ, ResourceType.TOPIC,
                                                  (t.name for t in request.topics if t.name in legal))
        topics = []
        for t in request.topics:
            problem = self._topic_error(t.name, legal, readable)
            if problem is not None:
                code, message = problem
                topics.append(R.Topics(name=t.name, partitions=[
                    P(partition_index=p, error_code=int(code), error_message=message) for p in t.partition_indexes]))
                continue
            partitions = []
            for p in t.partition_indexes:
                try:
                    producers = self.replica_manager.active_producers(TopicPartition(t.name, p))
                except KafkaError as e:
                    partitions.append(P(partition_index=p, error_code=int(e.code), error_message=e.message))
                    continue
                partitions.append(P(partition_index=p, error_code=int(ErrorCode.NONE), active_producers=[
                    P.ActiveProducers(producer_id=a.producer_id, producer_epoch=a.producer_epoch,
                                      last_sequence=a.last_sequence, last_timestamp=a.last_timestamp,
                                      coordinator_epoch=a.coordinator_epoch,
                                      current_txn_start_offset=a.current_txn_start_offset)
                    for a in producers]))
            topics.append(R.Topics(name=t.name, partitions=partitions))
        return R(throttle_time_ms=0, topics=topics)

    def _topic_error(self, name: str, legal: set[str], readable: set[str]) -> tuple[ErrorCode, str] | None:
        if name not in legal:
            return ErrorCode.INVALID_TOPIC_EXCEPTION, validate_topic_name(name) or "invalid topic name"
        if name not in readable:
            return ErrorCode.TOPIC_AUTHORIZATION_FAILED, f"not authorized to READ topic {name!r}"
        if not self.cache.contains_topic(name):
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {name!r} does not exist"
        return None


def register(dispatcher: Dispatcher, handler: DescribeProducersHandler) -> None:
    dispatcher.register(API_KEY, handler, MIN_VERSION, MAX_VERSION)
