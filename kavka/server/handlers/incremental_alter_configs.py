"""IncrementalAlterConfigs (key 44, KIP-339): SET, DELETE, APPEND and
SUBTRACT individual keys of a topic's or broker's overrides (a list key
without an override is appended to or subtracted from its default, as in
Kafka), validating the complete result before writing; ``validate_only`` writes nothing. A
topic's configs need ALTER_CONFIGS on the topic, a broker's on the cluster
(Kafka's rule): else TOPIC_/CLUSTER_AUTHORIZATION_FAILED, nothing written.
"""

from __future__ import annotations

from kavka.common.errors import ErrorCode
from kavka.protocol.messages import IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse
from kavka.security.acl import AclOperation
from kavka.server.authorization import AuthHelper
from kavka.server.config_repository import (
    ConfigRepository,
    apply_incremental,
    list_defaults_for,
)
from kavka.server.metadata_cache import MetadataCache
from kavka.server.network import Dispatcher, RequestContext

API_KEY = 44
MIN_VERSION = 0
MAX_VERSION = 1


class IncrementalAlterConfigsHandler:
    def __init__(self, repo: ConfigRepository, cache: MetadataCache, auth: AuthHelper) -> None:
        self.repo = repo
        self.cache = cache
        self.auth = auth

    async def __call__(self, ctx: RequestContext, request: IncrementalAlterConfigsRequest) -> IncrementalAlterConfigsResponse:
        R = IncrementalAlterConfigsResponse
        out = []
        for res in request.resources:
            denied = self.auth.config_resource_error(ctx, AclOperation.ALTER_CONFIGS, res.resource_type,
                                                     res.resource_name)
            if denied is not ErrorCode.NONE:
                out.append(R.Responses(error_code=int(denied), error_message=None,
                                       resource_type=res.resource_type, resource_name=res.resource_name))
                continue
            ops = [(c.name, c.config_operation, c.value) for c in res.configs]
            defaults = list_defaults_for(res.resource_type)
            code, message = await self.repo.alter(
                res.resource_type, res.resource_name, self.cache.contains_topic(res.resource_name),
                lambda current: apply_incremental(current, ops, defaults), request.validate_only)  # noqa: B023 - called within this await
            out.append(R.Responses(error_code=int(code), error_message=message,
                                   resource_type=res.resource_type, resource_name=res.resource_name))
        return R(throttle_time_ms=0, responses=out)


def register(dispatcher: Dispatcher, handler: IncrementalAlterConfigsHandler) -> None:
    dispatcher.register(API_KEY, handler, MIN_VERSION, MAX_VERSION)
