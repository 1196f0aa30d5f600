"""FindCoordinator (key 10): which broker coordinates a group.

Versions 0-4: v0 asks for one group; v1 adds the key type (0 group, 1
transaction); v4 batches keys (KIP-699). A group's coordinator is the
leader of its ``__consumer_offsets`` partition, a transactional id's the
leader of its ``__transaction_state`` partition (each topic created on
first use, answering COORDINATOR_NOT_AVAILABLE until it has leaders);
other key types INVALID_REQUEST. A group key needs DESCRIBE on the group
(else GROUP_AUTHORIZATION_FAILED), a transactional id DESCRIBE on it (else
TRANSACTIONAL_ID_AUTHORIZATION_FAILED), as Kafka, asked before anything
else about the key.
"""

from __future__ import annotations

from kavka.common.errors import ErrorCode
from kavka.protocol.messages import FindCoordinatorRequest, FindCoordinatorResponse
from kavka.security.acl import AclOperation, ResourceType
from kavka.server.authorization import AuthHelper
from kavka.server.internal_topic import InternalTopic
from kavka.server.network import Dispatcher, RequestContext

API_KEY = 10
MIN_VERSION = 0
MAX_VERSION = 4
GROUP_KEY, TRANSACTION_KEY = 0, 1


class FindCoordinatorHandler:
    def __init__(self, offsets_topic: InternalTopic, transaction_topic: InternalTopic, auth: AuthHelper) -> None:
        self.offsets_topic = offsets_topic
        self.transaction_topic = transaction_topic
        self.auth = auth

    async def _find(self, ctx: RequestContext, key: str, key_type: int, listener: str):
        if key_type == GROUP_KEY and not self.auth.authorize(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, key):
            return ErrorCode.GROUP_AUTHORIZATION_FAILED, -1, None, None
        if key_type == TRANSACTION_KEY and not self.auth.authorize(ctx, AclOperation.DESCRIBE,
                                                                   ResourceType.TRANSACTIONAL_ID, key):
            return ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, -1, None, None
        if key_type == TRANSACTION_KEY:
            if not key:
                return ErrorCode.INVALID_REQUEST, -1, None, "the transactional id is empty"
            code, node, endpoint = await self.transaction_topic.coordinator_for(key, listener)
            return code, node, endpoint, None
        if key_type != GROUP_KEY:
            return ErrorCode.INVALID_REQUEST, -1, None, f"key type {key_type} is not 0 (group) or 1 (transaction)"
        if not key:
            return ErrorCode.INVALID_GROUP_ID, -1, None, "the group id is empty"
        code, node, endpoint = await self.offsets_topic.coordinator_for(key, listener)
        return code, node, endpoint, None

    async def __call__(self, ctx: RequestContext, request: FindCoordinatorRequest) -> FindCoordinatorResponse:
        version = ctx.api_version
        R = FindCoordinatorResponse
        key_type = request.key_type if version >= 1 else GROUP_KEY
        if version >= 4:
            out = []
            for key in request.coordinator_keys:
                code, node, ep, message = await self._find(ctx, key, key_type, ctx.listener)
                out.append(R.Coordinators(key=key, node_id=node, host=ep.host if ep else "",
                                          port=ep.port if ep else -1, error_code=int(code),
                                          error_message=message or (code.message if code is not ErrorCode.NONE
                                                                    else None)))
            return R(throttle_time_ms=0, coordinators=out)
        code, node, ep, message = await self._find(ctx, request.key, key_type, ctx.listener)
        return R(throttle_time_ms=0, error_code=int(code), node_id=node, host=ep.host if ep else "",
                 port=ep.port if ep else -1,
                 error_message=message or (code.message if code is not ErrorCode.NONE else None))


def register(dispatcher: Dispatcher, handler: FindCoordinatorHandler) -> None:
    dispatcher.register(API_KEY, handler, MIN_VERSION, MAX_VERSION)
