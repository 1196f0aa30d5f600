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

Authorization (Kafka's): each topic needs DELETE, else
TOPIC_AUTHORIZATION_FAILED (asked before its existence); a topic named by
id without DESCRIBE on it is answered without its name.
"""

from __future__ import annotations

import uuid

from kavka.common.errors import ErrorCode
from kavka.protocol.messages import ZERO_UUID, DeleteTopicsRequest, DeleteTopicsResponse
from kavka.security.acl import AclOperation, ResourceType
from kavka.security.quota.manager import ControllerMutationQuotaManager
from kavka.server.admin_manager import AdminManager
from kavka.server.authorization import AuthHelper
from kavka.server.metadata_cache import MetadataCache
from kavka.server.network import Dispatcher, RequestContext
from kavka.server.throttling import quota_client_id, quota_user

API_KEY = 20
MIN_VERSION = 0
MAX_VERSION = 6


class DeleteTopicsHandler:
    def __init__(self, admin: AdminManager, cache: MetadataCache, delete_enabled: bool,
                 mutations: ControllerMutationQuotaManager, auth: AuthHelper) -> None:
        self.admin = admin
        self.cache = cache
        self.delete_enabled = delete_enabled
        self.mutations = mutations
        self.auth = auth

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
        if not self.delete_enabled:
            code = ErrorCode.TOPIC_DELETION_DISABLED if version >= 3 else ErrorCode.INVALID_REQUEST
            for name, topic_id in wanted:
                responses.append(R.Responses(name=name, topic_id=topic_id or ZERO_UUID, error_code=int(code),
                                             error_message="topic deletion is disabled (delete.topic.enable=false)"))
            return R(throttle_time_ms=0, responses=responses)
        resolved = [(name if name is not None or topic_id is None else self.cache.topic_by_id(topic_id), topic_id)
                    for name, topic_id in wanted]
        named = [n for n, _ in resolved if n is not None]
        deletable = self.auth.filter_by_authorized(ctx, AclOperation.DELETE, ResourceType.TOPIC, named)
        by_id = [n for (n, _), (orig, _) in zip(resolved, wanted, strict=True) if n is not None and orig is None]
        described = self.auth.filter_by_authorized(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, by_id)
        for (name, topic_id), (original, _) in zip(resolved, wanted, strict=True):
            if name is None:  # v6+: by id (a null name with no id is no known topic either)
                responses.append(R.Responses(name=None, topic_id=topic_id if topic_id is not None else ZERO_UUID,
                                             error_code=int(ErrorCode.UNKNOWN_TOPIC_ID)))
                continue
            if original is None and name not in described:
                # Named by id without DESCRIBE: the id is not secret, the name is.
                responses.append(R.Responses(name=None, topic_id=topic_id or ZERO_UUID,
                                             error_code=int(ErrorCode.TOPIC_AUTHORIZATION_FAILED)))
                continue
            if name not in deletable:
                responses.append(R.Responses(name=name, topic_id=topic_id or ZERO_UUID,
                                             error_code=int(ErrorCode.TOPIC_AUTHORIZATION_FAILED)))
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
