"""DescribeTransactions (key 65, KIP-664): the state of transactional ids
at their coordinator — this broker, for the ids whose
``__transaction_state`` partition it leads (the admin client finds it
with FindCoordinator): Kafka's state name, producer id and epoch, timeout,
the start time of the transaction and its partitions.

Per id, as Kafka's KafkaApis.handleDescribeTransactionsRequest: without
DESCRIBE on the transactional id, TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
else the coordinator's answer (NOT_COORDINATOR,
COORDINATOR_LOAD_IN_PROGRESS, TRANSACTIONAL_ID_NOT_FOUND, INVALID_REQUEST
for ""). Partitions of topics the session may not DESCRIBE are left out
of the answer.
"""

from __future__ import annotations

from kavka.common.errors import ErrorCode
from kavka.protocol.messages import DescribeTransactionsRequest, DescribeTransactionsResponse
from kavka.security.acl import AclOperation, ResourceType
from kavka.server.authorization import AuthHelper
from kavka.server.network import Dispatcher, RequestContext
from kavka.transaction.coordinator import TransactionCoordinator

API_KEY = 65
MIN_VERSION = 0
MAX_VERSION = 0


class DescribeTransactionsHandler:
    def __init__(self, coordinator: TransactionCoordinator, auth: AuthHelper) -> None:
        self.coordinator = coordinator
        self.auth = auth

    async def __call__(self, ctx: RequestContext,
                       request: DescribeTransactionsRequest) -> DescribeTransactionsResponse:
        R = DescribeTransactionsResponse
        T = R.TransactionStates
        allowed = self.auth.filter_by_authorized(ctx, AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID,
                                                 request.transactional_ids)
        described = {tid: self.coordinator.describe(tid) for tid in set(request.transactional_ids) & allowed}
        topics = {tp.topic for _, m in described.values() if m is not None for tp in m.partitions}
        visible = self.auth.filter_by_authorized(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, topics,
                                                 log_if_denied=False)
        states = []
        for tid in request.transactional_ids:
            if tid not in allowed:
                states.append(T(error_code=int(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED),
                                transactional_id=tid))
                continue
            code, m = described[tid]
            if m is None:
                states.append(T(error_code=int(code), transactional_id=tid))
                continue
            by_topic: dict[str, list[int]] = {}
            for tp in m.partitions:
                if tp.topic in visible:
                    by_topic.setdefault(tp.topic, []).append(tp.partition)
            states.append(T(
                error_code=int(ErrorCode.NONE), transactional_id=tid, transaction_state=m.state.kafka_name,
                transaction_timeout_ms=m.timeout_ms, transaction_start_time_ms=m.start_ms,
                producer_id=m.producer_id, producer_epoch=m.producer_epoch,
                topics=[T.Topics(topic=topic, partitions=sorted(ps)) for topic, ps in sorted(by_topic.items())]))
        return R(throttle_time_ms=0, transaction_states=states)


def register(dispatcher: Dispatcher, handler: DescribeTransactionsHandler) -> None:
    dispatcher.register(API_KEY, handler, MIN_VERSION, MAX_VERSION)
