"""DescribeConfigs (key 32): topic and broker configs with their source,
synonyms (v1+ ``include_synonyms``), type and documentation (v3+).
``configuration_keys`` null means every key. Values of sensitive keys are
null. See ``kavka.server.config_repository`` for the precedence rules.
A topic's configs need DESCRIBE_CONFIGS on the topic, a broker's on the
cluster (Kafka's rule): else TOPIC_/CLUSTER_AUTHORIZATION_FAILED, asked
before the topic's existence.
"""

from __future__ import annotations

from kavka.common.errors import ErrorCode
from kavka.protocol.messages import DescribeConfigsRequest, DescribeConfigsResponse
from kavka.security.acl import AclOperation
from kavka.server.authorization import AuthHelper
from kavka.server.config_repository import (
    RESOURCE_BROKER,
    RESOURCE_TOPIC,
    SOURCE_DEFAULT,
    ConfigRepository,
    ConfigRequestError,
)
from kavka.server.metadata_cache import MetadataCache
from kavka.server.network import Dispatcher, RequestContext

API_KEY = 32
MIN_VERSION = 0
MAX_VERSION = 4


class DescribeConfigsHandler:
    def __init__(self, repo: ConfigRepository, cache: MetadataCache, auth: AuthHelper) -> None:
        self.repo = repo
        self.cache = cache
        self.auth = auth

    async def __call__(self, ctx: RequestContext, request: DescribeConfigsRequest) -> DescribeConfigsResponse:
        version = ctx.api_version
        R = DescribeConfigsResponse
        synonyms_wanted = version >= 1 and request.include_synonyms
        docs_wanted = version >= 3 and request.include_documentation
        results = []
        for res in request.resources:
            entry = R.Results(resource_type=res.resource_type, resource_name=res.resource_name,
                              error_code=int(ErrorCode.NONE), error_message=None, configs=[])
            denied = self.auth.config_resource_error(ctx, AclOperation.DESCRIBE_CONFIGS, res.resource_type,
                                                     res.resource_name)
            if denied is not ErrorCode.NONE:
                entry.error_code, entry.error_message = int(denied), denied.message
                results.append(entry)
                continue
            try:
                if res.resource_type == RESOURCE_TOPIC:
                    if not self.cache.contains_topic(res.resource_name):
                        raise ConfigRequestError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                                 f"topic {res.resource_name!r} does not exist")
                    configs = await self.repo.describe_topic(res.resource_name)
                elif res.resource_type == RESOURCE_BROKER:
                    configs = await self.repo.describe_broker(res.resource_name)
                else:
                    raise ConfigRequestError(ErrorCode.INVALID_REQUEST,
                                             f"resource type {res.resource_type} is not supported (2 topic, 4 broker)")
            except ConfigRequestError as e:
                entry.error_code, entry.error_message = int(e.code), e.message
                results.append(entry)
                continue
            keys = None if res.configuration_keys is None else set(res.configuration_keys)
            for c in configs:
                if keys is not None and c.name not in keys:
                    continue
                item = R.Results.Configs(name=c.name, value=c.value, read_only=c.read_only,
                                         is_sensitive=c.sensitive)
                if version == 0:
                    item.is_default = c.source == SOURCE_DEFAULT
                else:
                    item.config_source = c.source
                if synonyms_wanted:
                    item.synonyms = [R.Results.Configs.Synonyms(name=n, value=v, source=s) for n, v, s in c.synonyms]
                if version >= 3:
                    item.config_type = c.config_type
                    if docs_wanted:
                        item.documentation = c.documentation
                entry.configs.append(item)
            results.append(entry)
        return R(throttle_time_ms=0, results=results)


def register(dispatcher: Dispatcher, handler: DescribeConfigsHandler) -> None:
    dispatcher.register(API_KEY, handler, MIN_VERSION, MAX_VERSION)
