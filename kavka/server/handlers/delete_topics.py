"""DeleteTopics (key 20): mark each topic for deletion in
``/admin/delete_topics`` (seed 000 §创建 / 删除 Topic) and answer once it has
left this broker's metadata, or ``timeout_ms`` passes (REQUEST_TIMED_OUT).
Refused with TOPIC_DELETION_DISABLED when ``delete.topic.enable`` is false
(v3+; older versions get INVALID_REQUEST, as Kafka). v6 names topics by
name or by id (KIP-516).

KIP-599: the partitions of each deleted topic are charged to the
client's ``controller_mutation_rate``; from v5 a deletion while the quota
is exhausted is refused with THROTTLING_QUOTA_EXCEEDED, earlier versions
are only throttled.
"""

from __future__ import annotations

import uuid

from kavka.common.errors import ErrorCode
from kavka.protocol.messages import ZERO_UUID, DeleteTopicsRequest, DeleteTopicsResponse
from kavka.security.quota.manager import ControllerMutationQuotaManager
from kavka.server.admin_manager import AdminManager
from kavka.server.metadata_cache import MetadataCache
from kavka.server.network import Dispatcher, RequestContext
from kavka.server.throttling import quota_client_id, quota_user

API_KEY = 20
MIN_VERSION = 0
MAX_VERSION = 6


class DeleteTopicsHandler:
    def __init__(self, admin: AdminManager, cache: MetadataCache, delete_enabled: bool,
                 mutations: ControllerMutationQuotaManager) -> None:
        self.admin = admin
        self.cache = cache
        self.delete_enabled = delete_enabled
        self.mutations = mutations

    async def __call__(self, ctx: RequestContext, request: DeleteTopicsRequest) -> DeleteTopicsResponse:
        version = ctx.api_version
        R = DeleteTopicsResponse
        wanted: list[tuple[str | None, uuid.UUID | None]]
        if version >= 6:
            wanted = [(t.name, t.topic_id) for t in request.topics]
        else:
            wanted = [(name, None) for name in request.topic_names]
        responses: list[DeleteTopicsResponse.Responses] = []
        quota = self.mutations.new_quota_for(quota_user(ctx), quota_client_id(ctx), strict=version >= 5)
        pending: list[tuple[str, DeleteTopicsResponse.Responses]] = []
        for name, topic_id in wanted:
            if name is None:  # v6+: by id (a null name with no id is no known topic either)
                name = self.cache.topic_by_id(topic_id) if topic_id is not None else None
                if name is None:
                    responses.append(R.Responses(name=None, topic_id=topic_id if topic_id is not None else ZERO_UUID,
                                                 error_code=int(ErrorCode.UNKNOWN_TOPIC_ID)))
                    continue
            if not self.delete_enabled:
                code = ErrorCode.TOPIC_DELETION_DISABLED if version >= 3 else ErrorCode.INVALID_REQUEST
                responses.append(R.Responses(name=name, error_code=int(code),
                                             error_message="topic deletion is disabled (delete.topic.enable=false)"))
                continue
            code, message = await self.admin.delete_topic(name, quota)
            resp = R.Responses(name=name, error_code=int(code), error_message=message)
            if version >= 6:
                resp.topic_id = self.cache.topic_id(name)
            responses.append(resp)
            if code == ErrorCode.NONE:
                pending.append((name, resp))
        if pending:
            names = {n for n, _ in pending}
            ok = await self.cache.wait_until(lambda c: not any(c.contains_topic(n) for n in names),
                                             max(request.timeout_ms, 0) / 1000.0)
            if not ok:
                for n, r in pending:
                    if self.cache.contains_topic(n):
                        r.error_code = int(ErrorCode.REQUEST_TIMED_OUT)
                        r.error_message = "deletion was requested but has not completed yet"
        ctx.throttle_time_ms = max(ctx.throttle_time_ms, quota.throttle_time_ms)
        return R(throttle_time_ms=0, responses=responses)


def register(dispatcher: Dispatcher, handler: DeleteTopicsHandler) -> None:
    dispatcher.register(API_KEY, handler, MIN_VERSION, MAX_VERSION)
