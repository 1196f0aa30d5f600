"""OffsetFetch (key 9): a group's committed offsets (-1 where none).

Versions 1-9: v2+ a null topic list asks for everything committed and a
top-level error code; v5 the committed leader epoch; v8+ several groups in
one request (KIP-709). ``require_stable`` (v7, KIP-447): a partition with
transactional offsets still waiting for their marker answers
UNSTABLE_OFFSET_COMMIT (retriable) instead of an offset the open
transaction may be about to replace.
"""

from __future__ import annotations

from kavka.common.errors import ErrorCode
from kavka.group.coordinator import GroupCoordinator
from kavka.protocol.messages import OffsetFetchRequest, OffsetFetchResponse
from kavka.server.network import Dispatcher, RequestContext

API_KEY = 9
MIN_VERSION = 1
MAX_VERSION = 9


class OffsetFetchHandler:
    def __init__(self, coordinator: GroupCoordinator) -> None:
        self.coordinator = coordinator

    def _lookup(self, group_id: str, topics, require_stable: bool = False) -> tuple[ErrorCode, dict[str, list]]:
        wanted = None if topics is None else [(t.name, p) for t in topics for p in t.partition_indexes]
        code, found = self.coordinator.fetch_offsets(group_id, wanted)
        by_topic: dict[str, list] = {}
        if code is not ErrorCode.NONE and wanted is not None:
            found = {tp: None for tp in wanted}
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
                code, by_topic = self._lookup(g.group_id, g.topics, request.require_stable)
                groups.append(R.Groups(group_id=g.group_id, error_code=int(code), topics=[
                    R.Groups.Topics(name=t, partitions=[R.Groups.Topics.Partitions(
                        partition_index=p, committed_offset=o.offset if o else -1,
                        committed_leader_epoch=o.leader_epoch if o else -1, metadata=o.metadata if o else "",
                        error_code=_unstable(c)) for p, o, c in ps]) for t, ps in by_topic.items()]))
            return R(throttle_time_ms=0, groups=groups)
        code, by_topic = self._lookup(request.group_id, request.topics, version >= 7 and request.require_stable)
        part_code = int(code) if version < 2 else 0
        return R(throttle_time_ms=0, error_code=int(code), topics=[
            R.Topics(name=t, partitions=[R.Topics.Partitions(
                partition_index=p, committed_offset=o.offset if o else -1,
                committed_leader_epoch=o.leader_epoch if o else -1, metadata=o.metadata if o else "",
                error_code=_unstable(c) or part_code) for p, o, c in ps]) for t, ps in by_topic.items()])


def _unstable(code: ErrorCode) -> int:
    return int(code) if code is ErrorCode.UNSTABLE_OFFSET_COMMIT else 0


def register(dispatcher: Dispatcher, handler: OffsetFetchHandler) -> None:
    dispatcher.register(API_KEY, handler, MIN_VERSION, MAX_VERSION)
