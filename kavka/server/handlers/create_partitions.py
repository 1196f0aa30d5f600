"""CreatePartitions (key 37): raise a topic's partition count (never
lower it), with placement continuing seed 000's round robin or an explicit
assignment, written to ``/brokers/topics/<t>``; the controller elects the
new partitions' leaders. The answer waits, up to ``timeout_ms``, until this
broker's metadata shows every new partition with a leader.

KIP-599: the partitions added are charged to the client's
``controller_mutation_rate``; from v3 an addition while the quota is
exhausted is refused with THROTTLING_QUOTA_EXCEEDED, earlier versions are
only throttled. Each topic needs ALTER (Kafka's rule), else
TOPIC_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

from kavka.common.errors import ErrorCode
from kavka.protocol.messages import CreatePartitionsRequest, CreatePartitionsResponse
from kavka.security.acl import AclOperation, ResourceType
from kavka.security.quota.manager import ControllerMutationQuotaManager
from kavka.server.admin_manager import AdminManager
from kavka.server.authorization import AuthHelper
from kavka.server.metadata_cache import MetadataCache
from kavka.server.network import Dispatcher, RequestContext
from kavka.server.throttling import quota_client_id, quota_user

API_KEY = 37
MIN_VERSION = 0
MAX_VERSION = 3


class CreatePartitionsHandler:
    def __init__(self, admin: AdminManager, cache: MetadataCache, mutations: ControllerMutationQuotaManager,
                 auth: AuthHelper) -> None:
        self.admin = admin
        self.cache = cache
        self.mutations = mutations
        self.auth = auth

    async def __call__(self, ctx: RequestContext, request: CreatePartitionsRequest) -> CreatePartitionsResponse:
        R = CreatePartitionsResponse
        results, done = [], []
        quota = self.mutations.new_quota_for(quota_user(ctx), quota_client_id(ctx), strict=ctx.api_version >= 3)
        counts: dict[str, int] = {}
        for t in request.topics:
            counts[t.name] = counts.get(t.name, 0) + 1
        alterable = self.auth.filter_by_authorized(ctx, AclOperation.ALTER, ResourceType.TOPIC,
                                                   (t.name for t in request.topics if counts[t.name] == 1))
        for t in request.topics:
            if counts[t.name] > 1:
                results.append(R.Results(name=t.name, error_code=int(ErrorCode.INVALID_REQUEST),
                                         error_message=f"topic {t.name!r} appears more than once"))
                continue
            if t.name not in alterable:
                results.append(R.Results(name=t.name, error_code=int(ErrorCode.TOPIC_AUTHORIZATION_FAILED),
                                         error_message="The topic authorization is failed."))
                continue
            assignment = None if t.assignments is None else [list(a.broker_ids) for a in t.assignments]
            code, message = await self.admin.create_partitions(t.name, t.count, assignment, request.validate_only,
                                                               quota)
            entry = R.Results(name=t.name, error_code=int(code), error_message=message)
            results.append(entry)
            if code == ErrorCode.NONE and not request.validate_only:
                done.append((entry, t.count))
        if done:
            ok = await self.cache.wait_until(
                lambda c: all(c.topic_has_leaders(e.name, n) for e, n in done), max(request.timeout_ms, 0) / 1000)
            if not ok:
                for e, n in done:
                    if not self.cache.topic_has_leaders(e.name, n):
                        e.error_code = int(ErrorCode.REQUEST_TIMED_OUT)
                        e.error_message = "the partitions were added but their leaders are not elected yet"
        ctx.throttle_time_ms = max(ctx.throttle_time_ms, quota.throttle_time_ms)
        return R(throttle_time_ms=0, results=results)


def register(dispatcher: Dispatcher, handler: CreatePartitionsHandler) -> None:
    dispatcher.register(API_KEY, handler, MIN_VERSION, MAX_VERSION)
