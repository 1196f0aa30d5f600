"""StopReplica (key 5): stop hosting partitions, deleting their logs when
asked (topic deletion, reassignment away from this broker; seed 002 §6.9).
v0-2 carry one delete flag for the request; v3+ one per partition with the
leader epoch, where a stale epoch gets FENCED_LEADER_EPOCH (-2 marks a
topic deletion and always passes). Nothing is stopped or deleted unless the
``InterBrokerFence`` lets the request act (CLUSTER_ACTION with an
authorizer; this broker's current epoch, KIP-380 — v0 carries none; a
controller epoch ZooKeeper confirms); a refused request is answered with
the error for every partition.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from kavka.common.errors import ErrorCode
from kavka.common.ids import NO_EPOCH
from kavka.common.topic_partition import TopicPartition
from kavka.protocol.messages import StopReplicaRequest, StopReplicaResponse
from kavka.replication.replica_manager import ReplicaManager
from kavka.server.inter_broker_fence import InterBrokerFence
from kavka.server.network import Dispatcher, RequestContext

API_KEY = 5
MIN_VERSION = 0
MAX_VERSION = 4
EPOCH_DURING_DELETE = -2

state_change = logging.getLogger("kavka.state.change")


class StopReplicaHandler:
    def __init__(self, replica_manager: ReplicaManager, fence: InterBrokerFence,
                 on_stopped: Callable[[list[TopicPartition]], None] | None = None) -> None:
        self.replica_manager = replica_manager
        self.fence = fence
        # The group coordinator drops the groups of a stopped __consumer_offsets replica.
        self.on_stopped = on_stopped

    async def __call__(self, ctx: RequestContext, request: StopReplicaRequest) -> StopReplicaResponse:
        version = ctx.api_version
        R = StopReplicaResponse
        wanted: list[tuple[TopicPartition, bool, int]] = []
        if version == 0:
            wanted = [(TopicPartition(p.topic_name, p.partition_index), request.delete_partitions, NO_EPOCH)
                      for p in request.ungrouped_partitions]
        elif version <= 2:
            wanted = [(TopicPartition(t.name, i), request.delete_partitions, NO_EPOCH)
                      for t in request.topics for i in t.partition_indexes]
        else:
            wanted = [(TopicPartition(t.topic_name, p.partition_index), p.delete_partition, p.leader_epoch)
                      for t in request.topic_states for p in t.partition_states]
        refused = await self.fence.check_control_request(ctx, request.controller_id, request.controller_epoch,
                                                         request.broker_epoch if version >= 1 else -1)
        if refused is not ErrorCode.NONE:
            code = int(refused)
            return R(error_code=code, partition_errors=[
                R.PartitionErrors(topic_name=tp.topic, partition_index=tp.partition, error_code=code)
                for tp, _, _ in wanted])
        errors: dict[TopicPartition, int] = {}
        groups: dict[bool, list[TopicPartition]] = {True: [], False: []}
        for tp, delete, epoch in wanted:
            partition = self.replica_manager.get_partition(tp)
            if (partition is not None and epoch not in (NO_EPOCH, EPOCH_DURING_DELETE)
                    and epoch < partition.leader_epoch):
                errors[tp] = int(ErrorCode.FENCED_LEADER_EPOCH)
                continue
            groups[delete].append(tp)
        top = ErrorCode.NONE
        for delete, tps in groups.items():
            if not tps:
                continue
            result = self.replica_manager.stop_replicas(request.controller_id, request.controller_epoch, tps, delete)
            if result.error != int(ErrorCode.NONE):
                top = ErrorCode.of(result.error)
            elif self.on_stopped is not None:
                self.on_stopped(tps)
            errors.update(result.partition_errors)
        return R(error_code=int(top), partition_errors=[
            R.PartitionErrors(topic_name=tp.topic, partition_index=tp.partition,
                              error_code=errors.get(tp, int(ErrorCode.NONE)))
            for tp, _, _ in wanted])


def register(dispatcher: Dispatcher, handler: StopReplicaHandler) -> None:
    dispatcher.register(API_KEY, handler, MIN_VERSION, MAX_VERSION)
