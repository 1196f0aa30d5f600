"""ListTransactions (key 66, KIP-664): the transactional ids this broker
coordinates (the admin client asks every broker and merges), each with its
producer id and Kafka's state name, filtered as the request asks: by state
names (the names no state has come back in ``unknown_state_filters``), by
producer ids, and from v1 (KIP-994) by duration: only transactions running
longer than ``duration_filter`` ms (-1: no filter), and from v2 (KIP-1152)
by a regular expression the transactional id must match whole, compiled by
RE2 as Kafka's RE2/J (a pattern RE2 refuses: INVALID_REGULAR_EXPRESSION).
While a ``__transaction_state`` partition is loading,
COORDINATOR_LOAD_IN_PROGRESS.

Only ids the session may DESCRIBE are listed (the rest are left out, as
Kafka's KafkaApis.handleListTransactionsRequest does).
"""

from __future__ import annotations

from kavka.protocol.messages import ListTransactionsRequest, ListTransactionsResponse
from kavka.security.acl import AclOperation, ResourceType
from kavka.server.authorization import AuthHelper
from kavka.server.network import Dispatcher, RequestContext
from kavka.transaction.coordinator import TransactionCoordinator

API_KEY = 66
MIN_VERSION = 0
MAX_VERSION = 2


class ListTransactionsHandler:
    def __init__(self, coordinator: TransactionCoordinator, auth: AuthHelper) -> None:
        self.coordinator = coordinator
        self.auth = auth

    async def __call__(self, ctx: RequestContext, request: ListTransactionsRequest) -> ListTransactionsResponse:
        R = ListTransactionsResponse
        duration = request.duration_filter if ctx.api_version >= 1 else -1
        pattern = request.transactional_id_pattern if ctx.api_version >= 2 else None
        code, unknown, found = self.coordinator.list_transactions(
            frozenset(request.producer_id_filters), frozenset(request.state_filters), duration,
            self.coordinator.now_ms(), pattern)
        allowed = self.auth.filter_by_authorized(ctx, AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID,
                                                 (m.transactional_id for m in found), log_if_denied=False)
        return R(throttle_time_ms=0, error_code=int(code), unknown_state_filters=unknown, transaction_states=[
            R.TransactionStates(transactional_id=m.transactional_id, producer_id=m.producer_id,
                                transaction_state=m.state.kafka_name)
            for m in found if m.transactional_id in allowed])


def register(dispatcher: Dispatcher, handler: ListTransactionsHandler) -> None:
    dispatcher.register(API_KEY, handler, MIN_VERSION, MAX_VERSION)
