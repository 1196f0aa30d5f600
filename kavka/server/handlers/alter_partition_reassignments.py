"""AlterPartitionReassignments (key 45, v0-1; KIP-455): start, replace or
(null replicas) cancel partition reassignments. Served by the active
controller (``kavka.controller.reassignment_requests``), which runs seed
000 §Partition 重新分配 steps 1-11; any other broker answers NOT_CONTROLLER.
The answer means "accepted"; ListPartitionReassignments shows progress.

Per partition: NONE, UNKNOWN_TOPIC_OR_PARTITION (no such partition, or its
topic is being deleted), INVALID_REPLICA_ASSIGNMENT (empty, duplicate or
dead brokers), INVALID_REPLICATION_FACTOR (v1 with
``allow_replication_factor_change`` false and a different count),
NO_REASSIGNMENT_IN_PROGRESS (cancelling nothing). A partition listed twice
gets INVALID_REQUEST. Needs ALTER on the cluster (Kafka's rule), else
CLUSTER_AUTHORIZATION_FAILED for the request and every partition.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable
from typing import TYPE_CHECKING

from kavka.common.errors import ErrorCode, KafkaError
from kavka.controller.events import AlterPartitionReassignments
from kavka.protocol.messages import AlterPartitionReassignmentsRequest, AlterPartitionReassignmentsResponse
from kavka.security.acl import AclOperation
from kavka.server.authorization import AuthHelper
from kavka.server.network import Dispatcher, RequestContext

if TYPE_CHECKING:
    from kavka.controller.controller import KafkaController

API_KEY = 45
MIN_VERSION = 0
MAX_VERSION = 1


class AlterPartitionReassignmentsHandler:
    def __init__(self, controller: KafkaController, auth: AuthHelper) -> None:
        self.controller = controller
        self.auth = auth

    async def __call__(self, ctx: RequestContext, request: AlterPartitionReassignmentsRequest
                       ) -> Awaitable[AlterPartitionReassignmentsResponse] | AlterPartitionReassignmentsResponse:
        allow_rf_change = request.allow_replication_factor_change if ctx.api_version >= 1 else True
        if not self.auth.authorize_cluster(ctx, AclOperation.ALTER):
            R = AlterPartitionReassignmentsResponse
            denied, message = int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED), ErrorCode.CLUSTER_AUTHORIZATION_FAILED.message
            return R(throttle_time_ms=0, allow_replication_factor_change=allow_rf_change, error_code=denied,
                     error_message=message, responses=[
                         R.Responses(name=t.name, partitions=[
                             R.Responses.Partitions(partition_index=p.partition_index, error_code=denied,
                                                    error_message=message) for p in t.partitions])
                         for t in request.topics])
        entries = [(t.name, p.partition_index, None if p.replicas is None else tuple(p.replicas)) for t in request.topics for p in t.partitions]
        return self._answer(ctx.api_version, entries, allow_rf_change)

    async def _answer(self, version: int, entries: list, allow_rf_change: bool) -> AlterPartitionReassignmentsResponse:
        R = AlterPartitionReassignmentsResponse
        results: dict[tuple[str, int], tuple[ErrorCode, str | None]] = {}
        counts = Counter((t, p) for t, p, _ in entries)
        dup = {key for key, n in counts.items() if n > 1}
        for key in dup:
            results[key] = (ErrorCode.INVALID_REQUEST, f"partition {key[0]}-{key[1]} is listed more than once")
        todo = tuple(e for e in entries if (e[0], e[1]) not in dup)
        top, top_message = ErrorCode.NONE, None
        try:
            if todo:
                answer = await self.controller.ask(
                    lambda reply: AlterPartitionReassignments(reply, reassignments=todo, allow_replication_factor_change=allow_rf_change)
                )
                results.update({(tp.topic, tp.partition): (r.code, r.message) for tp, r in answer.items()})
        except KafkaError as e:  # NOT_CONTROLLER, or the controller failed
            top, top_message = e.code, e.message
            results.update({(t, p): (e.code, e.message) for t, p, _ in todo})
        by_topic: dict[str, list] = {}
        for (topic, partition), (code, message) in sorted(results.items()):
            by_topic.setdefault(topic, []).append(
                R.Responses.Partitions(partition_index=partition, error_code=int(code), error_message=None if code is ErrorCode.NONE else message)
            )
        return R(
            throttle_time_ms=0,
            allow_replication_factor_change=allow_rf_change,
            error_code=int(top),
            error_message=top_message,
            responses=[R.Responses(name=t, partitions=ps) for t, ps in by_topic.items()],
        )


def register(dispatcher: Dispatcher, handler: AlterPartitionReassignmentsHandler) -> None:
    dispatcher.register(API_KEY, handler, MIN_VERSION, MAX_VERSION)
