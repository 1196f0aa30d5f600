"""AlterConfigs (key 33): replace a topic's or broker's overrides as a
whole (keys not given return to their defaults), after validating the
complete result; ``validate_only`` writes nothing. A topic's configs need
ALTER_CONFIGS on the topic, a broker's on the cluster (Kafka's rule): else
TOPIC_/CLUSTER_AUTHORIZATION_FAILED, nothing written.
"""

from __future__ import annotations

from kavka.common.errors import ErrorCode
from kavka.protocol.messages import AlterConfigsRequest, AlterConfigsResponse
from kavka.security.acl import AclOperation
from kavka.server.authorization import AuthHelper
from kavka.server.config_repository import ConfigRepository, ConfigRequestError
from kavka.server.metadata_cache import MetadataCache
from kavka.server.network import Dispatcher, RequestContext

API_KEY = 33
MIN_VERSION = 0
MAX_VERSION = 2


class AlterConfigsHandler:
    def __init__(self, repo: ConfigRepository, cache: MetadataCache, auth: AuthHelper) -> None:
        self.repo = repo
        self.cache = cache
        self.auth = auth

    async def __call__(self, ctx: RequestContext, request: AlterConfigsRequest) -> AlterConfigsResponse:
        R = AlterConfigsResponse
        out = []
        for res in request.resources:
            denied = self.auth.config_resource_error(ctx, AclOperation.ALTER_CONFIGS, res.resource_type,
                                                     res.resource_name)
            if denied is not ErrorCode.NONE:
                out.append(R.Responses(error_code=int(denied), error_message=None,
                                       resource_type=res.resource_type, resource_name=res.resource_name))
                continue
            code, message = await self.repo.alter(
                res.resource_type, res.resource_name, self.cache.contains_topic(res.resource_name),
                lambda current: _replacement(res.configs), request.validate_only)  # noqa: B023 - called within this await
            out.append(R.Responses(error_code=int(code), error_message=message,
                                   resource_type=res.resource_type, resource_name=res.resource_name))
        return R(throttle_time_ms=0, responses=out)


def _replacement(configs) -> dict[str, str]:
    """AlterConfigs replaces the overrides as a whole; every value is required."""
    overrides = {}
    for c in configs:
        if c.value is None:
            raise ConfigRequestError(ErrorCode.INVALID_CONFIG, f"config {c.name!r}: a value is required")
        overrides[c.name] = c.value
    return overrides


def register(dispatcher: Dispatcher, handler: AlterConfigsHandler) -> None:
    dispatcher.register(API_KEY, handler, MIN_VERSION, MAX_VERSION)
