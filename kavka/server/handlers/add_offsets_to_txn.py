"""AddOffsetsToTxn (key 25): a transactional producer is about to commit a
group's offsets in its transaction (TxnOffsetCommit); the coordinator adds
the group's ``__consumer_offsets`` partition to the transaction, so EndTxn
sends it a marker too (KIP-98).

Versions 0-3 (v3 flexible); before v2, PRODUCER_FENCED is answered as
INVALID_PRODUCER_EPOCH (KIP-588). Needs WRITE on the transactional id
(else TRANSACTIONAL_ID_AUTHORIZATION_FAILED) and READ on the group (else
GROUP_AUTHORIZATION_FAILED), as Kafka.
"""

from __future__ import annotations

from kavka.common.errors import ErrorCode
from kavka.common.topic_partition import TopicPartition
from kavka.group.coordinator import GROUP_METADATA_TOPIC, GroupCoordinator
from kavka.protocol.messages import AddOffsetsToTxnRequest, AddOffsetsToTxnResponse
from kavka.security.acl import AclOperation, ResourceType
from kavka.server.authorization import AuthHelper
from kavka.server.handlers.add_partitions_to_txn import fenced_as
from kavka.server.network import Dispatcher, RequestContext
from kavka.transaction.coordinator import TransactionCoordinator

API_KEY = 25
MIN_VERSION = 0
MAX_VERSION = 3


class AddOffsetsToTxnHandler:
    def __init__(self, coordinator: TransactionCoordinator, groups: GroupCoordinator, auth: AuthHelper) -> None:
        self.coordinator = coordinator
        self.groups = groups
        self.auth = auth

    async def __call__(self, ctx: RequestContext, request: AddOffsetsToTxnRequest) -> AddOffsetsToTxnResponse:
        if not self.auth.authorize(ctx, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, request.transactional_id):
            return AddOffsetsToTxnResponse(throttle_time_ms=0,
                                           error_code=int(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED))
        if not self.auth.authorize(ctx, AclOperation.READ, ResourceType.GROUP, request.group_id):
            return AddOffsetsToTxnResponse(throttle_time_ms=0, error_code=int(ErrorCode.GROUP_AUTHORIZATION_FAILED))
        if not request.group_id:
            return AddOffsetsToTxnResponse(throttle_time_ms=0, error_code=int(ErrorCode.INVALID_GROUP_ID))
        offsets_partition = TopicPartition(GROUP_METADATA_TOPIC, self.groups.partition_of(request.group_id))
        code = await self.coordinator.add_partitions(request.transactional_id, request.producer_id,
                                                     request.producer_epoch, frozenset({offsets_partition}))
        return AddOffsetsToTxnResponse(throttle_time_ms=0, error_code=int(fenced_as(code, ctx.api_version, 2)))


def register(dispatcher: Dispatcher, handler: AddOffsetsToTxnHandler) -> None:
    dispatcher.register(API_KEY, handler, MIN_VERSION, MAX_VERSION)
