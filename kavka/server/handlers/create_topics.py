"""CreateTopics (key 19): validate, write the assignment to ZooKeeper, and
answer once every partition has a leader in this broker's metadata (or
``timeout_ms`` passes: REQUEST_TIMED_OUT, the topic still being created) —
the behaviour of Kafka's delayed create-topics operation, so that a client
can produce right after the call returns. ``validate_only`` (v1+) writes
nothing. v5+ returns the partition count, replication factor and the
topic's effective configs.

KIP-599: the partitions created are charged to the client's
``controller_mutation_rate``; from v6 a topic created while the quota is
exhausted is refused with THROTTLING_QUOTA_EXCEEDED, earlier versions are
only throttled.

Authorization (Kafka's): CREATE on the cluster, or else on each topic
(TOPIC_AUTHORIZATION_FAILED, "Authorization failed."); the configs,
partition count and replication factor come back only with
DESCRIBE_CONFIGS on the topic, else ``topic_config_error_code`` is
TOPIC_AUTHORIZATION_FAILED (v5+).
"""

from __future__ import annotations

from kavka.common.errors import ErrorCode
from kavka.protocol.messages import CreateTopicsRequest, CreateTopicsResponse
from kavka.security.acl import AclOperation, ResourceType
from kavka.security.quota.manager import ControllerMutationQuotaManager
from kavka.server.admin_manager import AdminManager, NewTopic
from kavka.server.authorization import AuthHelper
from kavka.server.metadata_cache import MetadataCache
from kavka.server.network import Dispatcher, RequestContext
from kavka.server.throttling import quota_client_id, quota_user

API_KEY = 19
MIN_VERSION = 0
MAX_VERSION = 7
CONFIG_SOURCE_DEFAULT = 5  # DEFAULT_CONFIG
CONFIG_SOURCE_TOPIC = 1  # DYNAMIC_TOPIC_CONFIG


class CreateTopicsHandler:
    def __init__(self, admin: AdminManager, cache: MetadataCache, mutations: ControllerMutationQuotaManager,
                 auth: AuthHelper) -> None:
        self.admin = admin
        self.cache = cache
        self.mutations = mutations
        self.auth = auth

    async def __call__(self, ctx: RequestContext, request: CreateTopicsRequest) -> CreateTopicsResponse:
        version = ctx.api_version
        R = CreateTopicsResponse
        seen: dict[str, int] = {}
        for t in request.topics:
            seen[t.name] = seen.get(t.name, 0) + 1
        names = [t.name for t in request.topics]
        if self.auth.authorize_cluster(ctx, AclOperation.CREATE, log_if_denied=False):
            creatable = set(names)
        else:
            creatable = self.auth.filter_by_authorized(ctx, AclOperation.CREATE, ResourceType.TOPIC, names)
        configs_visible = self.auth.filter_by_authorized(ctx, AclOperation.DESCRIBE_CONFIGS, ResourceType.TOPIC,
                                                         names, log_if_denied=False)
        config_error = int(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
        wanted, out = [], []
        for t in request.topics:
            if seen[t.name] > 1:
                out.append(R.Topics(name=t.name, error_code=int(ErrorCode.INVALID_REQUEST),
                                    error_message=f"topic {t.name!r} appears more than once in the request"))
                continue
            if t.name not in creatable:
                entry = R.Topics(name=t.name, error_code=int(ErrorCode.TOPIC_AUTHORIZATION_FAILED),
                                 error_message="Authorization failed.")
                if version >= 5 and t.name not in configs_visible:
                    entry.topic_config_error_code = config_error
                out.append(entry)
                continue
            wanted.append(NewTopic(
                t.name, t.num_partitions, t.replication_factor,
                {a.partition_index: list(a.broker_ids) for a in t.assignments} or None,
                {c.name: c.value for c in t.configs}))
        validate_only = version >= 1 and request.validate_only
        quota = self.mutations.new_quota_for(quota_user(ctx), quota_client_id(ctx), strict=version >= 6)
        results = await self.admin.create_topics(wanted, validate_only, quota)
        created = [r for r in results if r.error == ErrorCode.NONE]
        timed_out: set[str] = set()
        if created and not validate_only:
            timeout_s = max(request.timeout_ms, 0) / 1000.0
            ok = await self.cache.wait_until(
                lambda c: all(c.topic_has_leaders(r.name, r.num_partitions) for r in created), timeout_s)
            if not ok:
                timed_out = {r.name for r in created if not self.cache.topic_has_leaders(r.name, r.num_partitions)}
        by_name = {t.name: t for t in request.topics}
        for r in results:
            explicit = {c.name for c in by_name[r.name].configs}
            error, message = r.error, r.message
            if r.name in timed_out:
                error, message = ErrorCode.REQUEST_TIMED_OUT, (
                    f"topic {r.name!r} was created but its leaders were not elected within "
                    f"{request.timeout_ms} ms; it will become available shortly")
            entry = R.Topics(name=r.name, error_code=int(error),
                             error_message=message if message is not None else None)
            if version >= 7 and r.topic_id is not None and error == ErrorCode.NONE:
                entry.topic_id = r.topic_id
            if version >= 5 and r.error == ErrorCode.NONE and r.name not in configs_visible:
                entry.topic_config_error_code = config_error
            elif version >= 5 and r.error == ErrorCode.NONE:
                entry.num_partitions = r.num_partitions
                entry.replication_factor = r.replication_factor
                entry.configs = [
                    R.Topics.Configs(name=k, value=None if v is None else str(v).lower() if isinstance(v, bool) else str(v),
                                     read_only=False, is_sensitive=False,
                                     config_source=CONFIG_SOURCE_TOPIC if k in explicit else CONFIG_SOURCE_DEFAULT)
                    for k, v in sorted(r.configs.items())]
            out.append(entry)
        ctx.throttle_time_ms = max(ctx.throttle_time_ms, quota.throttle_time_ms)
        return R(throttle_time_ms=0, topics=out)


def register(dispatcher: Dispatcher, handler: CreateTopicsHandler) -> None:
    dispatcher.register(API_KEY, handler, MIN_VERSION, MAX_VERSION)
