"""EndTxn (key 26): a transactional producer commits or aborts its open
transaction. Answered once the coordinator has durably written
PrepareCommit/PrepareAbort; the markers to every partition and the
Complete* record follow in the background (KIP-98).

Versions 0-3 (v3 flexible; v4's TRANSACTION_ABORTABLE and v5's per-
transaction epoch bump, KIP-890, are not advertised). Before v2,
PRODUCER_FENCED is answered as INVALID_PRODUCER_EPOCH (KIP-588). Needs
WRITE on the transactional id (else TRANSACTIONAL_ID_AUTHORIZATION_FAILED),
as Kafka.
"""

from __future__ import annotations

from kavka.common.errors import ErrorCode
from kavka.protocol.messages import EndTxnRequest, EndTxnResponse
from kavka.security.acl import AclOperation, ResourceType
from kavka.server.authorization import AuthHelper
from kavka.server.handlers.add_partitions_to_txn import fenced_as
from kavka.server.network import Dispatcher, RequestContext
from kavka.transaction.coordinator import TransactionCoordinator

API_KEY = 26
MIN_VERSION = 0
MAX_VERSION = 3


class EndTxnHandler:
    def __init__(self, coordinator: TransactionCoordinator, auth: AuthHelper) -> None:
        self.coordinator = coordinator
        self.auth = auth

    async def __call__(self, ctx: RequestContext, request: EndTxnRequest) -> EndTxnResponse:
        if not self.auth.authorize(ctx, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, request.transactional_id):
            return EndTxnResponse(throttle_time_ms=0, error_code=int(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED))
        code = await self.coordinator.end_txn(request.transactional_id, request.producer_id,
                                              request.producer_epoch, request.committed)
        return EndTxnResponse(throttle_time_ms=0, error_code=int(fenced_as(code, ctx.api_version, 2)))


def register(dispatcher: Dispatcher, handler: EndTxnHandler) -> None:
    dispatcher.register(API_KEY, handler, MIN_VERSION, MAX_VERSION)
