"""ControlledShutdown (key 7, v0-3): a broker about to stop asks the
controller to move its leaderships away first (the broker side is
``kavka.server.controlled_shutdown``; the controller side
``kavka.controller.controlled_shutdown``).

Needs CLUSTER_ACTION on the cluster with an authorizer (else
CLUSTER_AUTHORIZATION_FAILED, as Kafka). Only the active controller
answers; any other broker says NOT_CONTROLLER (the asking broker looks the
controller up again and retries). v2+ carry the asking broker's epoch
(KIP-380), which must be that broker's current one (the controller
compares): anything else is STALE_BROKER_EPOCH, so a client cannot drain a
broker it does not know the registration of. A request without an epoch
(v0-1, or -1) is believed only from a connection authenticated as a
broker. The answer lists the partitions the broker still leads. The wait
for the controller does not hold up other requests on the connection (the
handler returns an awaitable).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable
from typing import TYPE_CHECKING

from kavka.common.errors import ErrorCode, KafkaError
from kavka.common.ids import NO_EPOCH
from kavka.controller.events import ControlledShutdown
from kavka.protocol.messages import ControlledShutdownRequest, ControlledShutdownResponse
from kavka.security.acl import AclOperation
from kavka.server.authorization import AuthHelper
from kavka.server.inter_broker_fence import InterBrokerFence
from kavka.server.network import Dispatcher, RequestContext

if TYPE_CHECKING:
    from kavka.controller.controller import KafkaController

API_KEY = 7
MIN_VERSION = 0
MAX_VERSION = 3

log = logging.getLogger("kavka.state.change")


class ControlledShutdownHandler:
    def __init__(self, controller: KafkaController, auth: AuthHelper) -> None:
        self.controller = controller
        self.auth = auth

    async def __call__(self, ctx: RequestContext, request: ControlledShutdownRequest) -> Awaitable[ControlledShutdownResponse] | ControlledShutdownResponse:
        R = ControlledShutdownResponse
        if not self.auth.authorize_cluster(ctx, AclOperation.CLUSTER_ACTION):
            return R(error_code=int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED), remaining_partitions=[])
        epoch = request.broker_epoch if ctx.api_version >= 2 else NO_EPOCH
        if epoch < 0 and not InterBrokerFence.from_broker(ctx):
            log.warning("refused ControlledShutdown v%d of broker %d from %s: it carries no broker epoch and the "
                        "connection is not authenticated as a broker", ctx.api_version, request.broker_id,
                        ctx.client_host)
            return R(error_code=int(ErrorCode.STALE_BROKER_EPOCH), remaining_partitions=[])
        return self._answer(request.broker_id, epoch)

    async def _answer(self, broker_id: int, broker_epoch: int) -> ControlledShutdownResponse:
        R = ControlledShutdownResponse
        try:
            result = await self.controller.ask(lambda reply: ControlledShutdown(reply, broker_id=broker_id, broker_epoch=broker_epoch))
        except KafkaError as e:  # NOT_CONTROLLER, or the controller failed
            return R(error_code=int(e.code), remaining_partitions=[])
        return R(
            error_code=int(result.error),
            remaining_partitions=[R.RemainingPartitions(topic_name=tp.topic, partition_index=tp.partition) for tp in result.remaining],
        )


def register(dispatcher: Dispatcher, handler: ControlledShutdownHandler) -> None:
    dispatcher.register(API_KEY, handler, MIN_VERSION, MAX_VERSION)
