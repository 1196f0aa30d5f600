"""UpdateMetadata (key 6): the controller's view of live brokers and
partition leadership, cached by every broker to answer Metadata (seed 000
§Broker 启动过程 step 1). The ``InterBrokerFence`` decides first whether it
may act (CLUSTER_ACTION with an authorizer; this broker's current epoch,
KIP-380 — versions before v5 carry none; a controller epoch ZooKeeper
confirms); then a request from an older controller epoch than the cache
holds gets STALE_CONTROLLER_EPOCH. Partitions whose leader or epoch changed
may have delayed fetches waiting on them: they are woken to answer.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from kavka.common.errors import ErrorCode
from kavka.protocol.messages import UpdateMetadataRequest, UpdateMetadataResponse
from kavka.server.inter_broker_fence import InterBrokerFence
from kavka.server.metadata_cache import MetadataCache, MetadataUpdate
from kavka.server.network import Dispatcher, RequestContext

API_KEY = 6
MIN_VERSION = 0
MAX_VERSION = 8

state_change = logging.getLogger("kavka.state.change")


class UpdateMetadataHandler:
    def __init__(self, cache: MetadataCache, fence: InterBrokerFence,
                 on_update: Callable[[MetadataUpdate], None] | None = None) -> None:
        self.cache = cache
        self.fence = fence
        self.on_update = on_update

    async def __call__(self, ctx: RequestContext, request: UpdateMetadataRequest) -> UpdateMetadataResponse:
        version = ctx.api_version
        code = await self.fence.check_control_request(ctx, request.controller_id, request.controller_epoch,
                                                      request.broker_epoch if version >= 5 else -1)
        if code is not ErrorCode.NONE:
            return UpdateMetadataResponse(error_code=int(code))
        if request.controller_epoch < self.cache.controller_epoch:
            state_change.warning("broker %d refused UpdateMetadata from controller %d epoch %d (current epoch %d)",
                                 self.cache.broker_id, request.controller_id, request.controller_epoch,
                                 self.cache.controller_epoch)
            return UpdateMetadataResponse(error_code=int(ErrorCode.STALE_CONTROLLER_EPOCH))
        update = self.cache.update(request, version)
        state_change.info("broker %d cached metadata from controller %d epoch %d: %d partitions updated, %d deleted, "
                          "%d live brokers", self.cache.broker_id, request.controller_id, request.controller_epoch,
                          len(update.updated), len(update.deleted), len(self.cache.brokers))
        if self.on_update is not None:
            self.on_update(update)
        return UpdateMetadataResponse(error_code=int(ErrorCode.NONE))


def register(dispatcher: Dispatcher, handler: UpdateMetadataHandler) -> None:
    dispatcher.register(API_KEY, handler, MIN_VERSION, MAX_VERSION)
