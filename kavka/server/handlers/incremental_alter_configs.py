"""IncrementalAlterConfigs (key 44, KIP-339): SET, DELETE, APPEND and
SUBTRACT individual keys of a topic's or broker's overrides, validating the
complete result before writing; ``validate_only`` writes nothing.
"""

from __future__ import annotations

from kavka.common.errors import ErrorCode
from kavka.protocol.messages import IncrementalAlterConfigsResponse
from kavka.server.config_repository import (
    LIST_KEYS,
    RESOURCE_TOPIC,
    ConfigRepository,
    ConfigRequestError,
    apply_incremental,
)
from kavka.server.metadata_cache import MetadataCache
from kavka.server.network import Dispatcher, RequestContext

API_KEY = 44
MIN_VERSION = 0
MAX_VERSION = 1


class IncrementalAlterConfigsHandler:
    def __init__(self, repo: ConfigRepository, cache: MetadataCache) -> None:
        self.repo = repo
        self.cache = cache

    async def __call__(self, ctx: RequestContext, request) -> IncrementalAlterConfigsResponse:
        R = IncrementalAlterConfigsResponse
        out = []
        for res in request.resources:
            code, message = ErrorCode.NONE, None
            try:
                if res.resource_type == RESOURCE_TOPIC and not self.cache.contains_topic(res.resource_name):
                    raise ConfigRequestError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                             f"topic {res.resource_name!r} does not exist")
                current = await self.repo.current_overrides(res.resource_type, res.resource_name)
                updated = apply_incremental(current, [(c.name, c.config_operation, c.value) for c in res.configs],
                                            LIST_KEYS)
                await self.repo.validate_and_write(res.resource_type, res.resource_name, updated,
                                                   request.validate_only)
            except ConfigRequestError as e:
                code, message = e.code, e.message
            out.append(R.Responses(error_code=int(code), error_message=message,
                                   resource_type=res.resource_type, resource_name=res.resource_name))
        return R(throttle_time_ms=0, responses=out)


def register(dispatcher: Dispatcher, handler: IncrementalAlterConfigsHandler) -> None:
    dispatcher.register(API_KEY, handler, MIN_VERSION, MAX_VERSION)
