"""LeaderAndIsr (key 4): the controller tells this broker which partitions
it leads and which it follows (seed 000 §LeaderAndIsrRequest 响应过程).

Before handing the request to the replica manager (which applies steps
1-7), the broker makes sure every topic it is about to host has its
configuration: a new topic's overrides are written to ``/config/topics/<t>``
before its assignment, without a change notification, so they are read here
(seed 002 §8). First the ``InterBrokerFence`` decides whether the
request may act at all (CLUSTER_ACTION with an authorizer, this broker's
current epoch — KIP-380, versions before v2 carry none — and a controller
epoch ZooKeeper confirms); a refused request is answered with the error for
every partition and changes nothing.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Callable

from kavka.common.errors import ErrorCode
from kavka.protocol.messages import ZERO_UUID, LeaderAndIsrRequest, LeaderAndIsrResponse
from kavka.replication.replica_manager import ReplicaManager
from kavka.replication.state import BrokerEndPoint, PartitionState
from kavka.server.inter_broker_fence import InterBrokerFence
from kavka.server.network import Dispatcher, RequestContext

API_KEY = 4
MIN_VERSION = 0
MAX_VERSION = 7

state_change = logging.getLogger("kavka.state.change")


def partition_states(request, version: int):
    """(topic id or None, PartitionState) for every entry, whatever the layout."""
    if version <= 1:
        for s in request.ungrouped_partition_states:
            yield None, _state(s.topic_name, s, version)
    else:
        for t in request.topic_states:
            tid = t.topic_id if version >= 5 else None
            for s in t.partition_states:
                yield tid, _state(t.topic_name, s, version, tid)


def _state(topic: str, s, version: int, topic_id: uuid.UUID | None = None) -> PartitionState:
    return PartitionState(topic=topic, partition=s.partition_index, controller_epoch=s.controller_epoch,
                          leader=s.leader, leader_epoch=s.leader_epoch, isr=tuple(s.isr),
                          zk_version=s.partition_epoch, replicas=tuple(s.replicas),
                          is_new=s.is_new if version >= 1 else False,
                          topic_id=topic_id if topic_id != ZERO_UUID else None)


class LeaderAndIsrHandler:
    """``ensure_topic_config(topic)`` loads a topic's config into the log
    manager if it has not been yet; ``fence`` decides whether the request
    may act (CLUSTER_ACTION, broker and controller epochs)."""

    def __init__(self, replica_manager: ReplicaManager,
                 ensure_topic_config: Callable[[str], Awaitable[None]],
                 fence: InterBrokerFence,
                 on_leadership_change: Callable[[list[PartitionState], dict], None] | None = None) -> None:
        self.replica_manager = replica_manager
        # Seed 002 §6.8 step 6: the group coordinator follows __consumer_offsets leadership.
        self.on_leadership_change = on_leadership_change
        self.ensure_topic_config = ensure_topic_config
        self.fence = fence

    async def __call__(self, ctx: RequestContext, request: LeaderAndIsrRequest) -> LeaderAndIsrResponse:
        version = ctx.api_version
        entries = list(partition_states(request, version))
        state_change.info("broker %d received LeaderAndIsr v%d from controller %d epoch %d for %d partitions",
                          self.replica_manager.broker_id, version, request.controller_id,
                          request.controller_epoch, len(entries))
        code = await self.fence.check_control_request(ctx, request.controller_id, request.controller_epoch,
                                                      request.broker_epoch if version >= 2 else -1)
        if code is not ErrorCode.NONE:
            return self._response(version, code, {(tid, s.topic_partition): int(code) for tid, s in entries})
        for topic in {s.topic for _, s in entries}:
            await self.ensure_topic_config(topic)
        live = {b.broker_id: BrokerEndPoint(b.broker_id, b.host_name, b.port) for b in request.live_leaders}
        result = self.replica_manager.become_leader_or_follower(
            request.controller_id, request.controller_epoch, [s for _, s in entries], live)
        if self.on_leadership_change is not None and result.error == int(ErrorCode.NONE):
            self.on_leadership_change([s for _, s in entries], result.partition_errors)
        errors = {(tid, s.topic_partition): result.partition_errors.get(s.topic_partition, int(ErrorCode.NONE))
                  for tid, s in entries}
        return self._response(version, ErrorCode.of(result.error), errors)

    @staticmethod
    def _response(version: int, code: ErrorCode, errors: dict) -> LeaderAndIsrResponse:
        R = LeaderAndIsrResponse
        if version <= 4:
            return R(error_code=int(code), partition_errors=[
                R.PartitionErrors(topic_name=tp.topic, partition_index=tp.partition, error_code=e)
                for (_, tp), e in errors.items()])
        by_topic: dict = {}
        for (tid, tp), e in errors.items():
            by_topic.setdefault(tid, []).append(R.Topics.PartitionErrors(partition_index=tp.partition, error_code=e))
        return R(error_code=int(code), topics=[R.Topics(topic_id=tid, partition_errors=parts)
                                              for tid, parts in by_topic.items()])


def register(dispatcher: Dispatcher, handler: LeaderAndIsrHandler) -> None:
    dispatcher.register(API_KEY, handler, MIN_VERSION, MAX_VERSION)
