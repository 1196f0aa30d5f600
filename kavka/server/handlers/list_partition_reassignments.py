"""ListPartitionReassignments (key 46, v0; KIP-455): the partitions being
reassigned — of the listed topics' partitions, or all when the list is
null — each with its replicas (AR = OAR + RAR during the move, seed 000
§Partition 重新分配 step 1), adding (RAR - OAR) and removing (OAR - RAR)
replicas. Partitions not being reassigned are left out. Served by the
active controller; any other broker answers NOT_CONTROLLER. Needs
DESCRIBE on the cluster (Kafka's rule), else CLUSTER_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kavka.common.errors import ErrorCode, KafkaError
from kavka.controller.events import ListPartitionReassignments
from kavka.protocol.messages import ListPartitionReassignmentsRequest, ListPartitionReassignmentsResponse
from kavka.security.acl import AclOperation
from kavka.server.authorization import AuthHelper
from kavka.server.network import Dispatcher, RequestContext

if TYPE_CHECKING:
    from kavka.controller.controller import KafkaController

API_KEY = 46
MIN_VERSION = 0
MAX_VERSION = 0


class ListPartitionReassignmentsHandler:
    def __init__(self, controller: KafkaController, auth: AuthHelper) -> None:
        self.controller = controller
        self.auth = auth

    async def __call__(self, ctx: RequestContext, request: ListPartitionReassignmentsRequest) -> ListPartitionReassignmentsResponse:
        R = ListPartitionReassignmentsResponse
        if not self.auth.authorize_cluster(ctx, AclOperation.DESCRIBE):
            denied = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
            return R(throttle_time_ms=0, error_code=int(denied), error_message=denied.message, topics=[])
        wanted = None
        if request.topics is not None:
            wanted = tuple((t.name, p) for t in request.topics for p in t.partition_indexes)
        try:
            listed = await self.controller.ask(lambda reply: ListPartitionReassignments(reply, partitions=wanted))
        except KafkaError as e:  # NOT_CONTROLLER, or the controller failed
            return R(throttle_time_ms=0, error_code=int(e.code), error_message=e.message, topics=[])
        by_topic: dict[str, list] = {}
        for tp, a in sorted(listed.items()):
            by_topic.setdefault(tp.topic, []).append(
                R.Topics.Partitions(partition_index=tp.partition, replicas=list(a.replicas), adding_replicas=list(a.adding), removing_replicas=list(a.removing))
            )
        return R(throttle_time_ms=0, error_code=0, error_message=None, topics=[R.Topics(name=t, partitions=ps) for t, ps in by_topic.items()])


def register(dispatcher: Dispatcher, handler: ListPartitionReassignmentsHandler) -> None:
    dispatcher.register(API_KEY, handler, MIN_VERSION, MAX_VERSION)
