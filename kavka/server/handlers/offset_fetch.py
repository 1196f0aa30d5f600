"""OffsetFetch (key 9): a group's committed offsets (-1 where none).

Versions 1-9: v2+ a null topic list asks for everything committed and a
top-level error code; v5 the committed leader epoch; v8+ several groups in
one request (KIP-709). ``require_stable`` (v7, KIP-447): a partition with
transactional offsets still waiting for their marker answers
UNSTABLE_OFFSET_COMMIT (retriable) instead of an offset the open
transaction may be about to replace.

Authorization (Kafka's): DESCRIBE on the group, else
GROUP_AUTHORIZATION_FAILED; a partition of a topic the session may not
DESCRIBE is answered TOPIC_AUTHORIZATION_FAILED (offset -1) when asked for
by name, and left out of an "every partition" answer.
"""

from __future__ import annotations

from kavka.common.errors import ErrorCode
from kavka.group.coordinator import GroupCoordinator
from kavka.protocol.messages import OffsetFetchRequest, OffsetFetchResponse
from kavka.security.acl import AclOperation, ResourceType
from kavka.server.authorization import AuthHelper
from kavka.server.network import Dispatcher, RequestContext

API_KEY = 9
MIN_VERSION = 1
MAX_VERSION = 9


class OffsetFetchHandler:
    def __init__(self, coordinator: GroupCoordinator, auth: AuthHelper) -> None:
        self.coordinator = coordinator
        self.auth = auth

    def _lookup(self, ctx: RequestContext, group_id: str, topics,
                require_stable: bool = False) -> tuple[ErrorCode, dict[str, list]]:
        wanted = None if topics is None else [(t.name, p) for t in topics for p in t.partition_indexes]
        by_topic: dict[str, list] = {}
        if not self.auth.authorize(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, group_id):
            code = ErrorCode.GROUP_AUTHORIZATION_FAILED
            for topic, partition in wanted or ():
                by_topic.setdefault(topic, []).append((partition, None, code))
            return code, by_topic
        hidden: list[tuple[str, int]] = []
        if wanted is not None:
            described = self.auth.filter_by_authorized(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC,
                                                       (t for t, _ in wanted))
            hidden = [tp for tp in wanted if tp[0] not in described]
            wanted = [tp for tp in wanted if tp[0] in described]
        code, found = self.coordinator.fetch_offsets(group_id, wanted)
        if code is not ErrorCode.NONE and wanted is not None:
            found = {tp: None for tp in [*wanted, *hidden]}
        elif wanted is None:
            described = self.auth.filter_by_authorized(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC,
                                                       (t for t, _ in found))
            found = {tp: o for tp, o in found.items() if tp[0] in described}
        else:
            for topic, partition in hidden:
                by_topic.setdefault(topic, []).append((partition, None, ErrorCode.TOPIC_AUTHORIZATION_FAILED))
        for (topic, partition), o in found.items():
            if require_stable and self.coordinator.has_pending_txn_offset(group_id, (topic, partition)):
                by_topic.setdefault(topic, []).append((partition, None, ErrorCode.UNSTABLE_OFFSET_COMMIT))
                continue
            by_topic.setdefault(topic, []).append((partition, o, code))
        return code, by_topic

    async def __call__(self, ctx: RequestContext, request: OffsetFetchRequest) -> OffsetFetchResponse:
        version = ctx.api_version
        R = OffsetFetchResponse
        if version >= 8:
            groups = []
            for g in request.groups:
                code, by_topic = self._lookup(ctx, g.group_id, g.topics, request.require_stable)
                groups.append(R.Groups(group_id=g.group_id, error_code=int(code), topics=[
                    R.Groups.Topics(name=t, partitions=[R.Groups.Topics.Partitions(
                        partition_index=p, committed_offset=o.offset if o else -1,
                        committed_leader_epoch=o.leader_epoch if o else -1, metadata=o.metadata if o else "",
                        error_code=_unstable(c)) for p, o, c in ps]) for t, ps in by_topic.items()]))
            return R(throttle_time_ms=0, groups=groups)
        code, by_topic = self._lookup(ctx, request.group_id, request.topics, version >= 7 and request.require_stable)
        part_code = int(code) if version < 2 else 0
        return R(throttle_time_ms=0, error_code=int(code), topics=[
            R.Topics(name=t, partitions=[R.Topics.Partitions(
                partition_index=p, committed_offset=o.offset if o else -1,
                committed_leader_epoch=o.leader_epoch if o else -1, metadata=o.metadata if o else "",
                error_code=_unstable(c) or part_code) for p, o, c in ps]) for t, ps in by_topic.items()])


def _unstable(code: ErrorCode) -> int:
    """The errors a partition carries whatever the version (the others are the request's)."""
    return int(code) if code in (ErrorCode.UNSTABLE_OFFSET_COMMIT, ErrorCode.TOPIC_AUTHORIZATION_FAILED) else 0


def register(dispatcher: Dispatcher, handler: OffsetFetchHandler) -> None:
    dispatcher.register(API_KEY, handler, MIN_VERSION, MAX_VERSION)
