"""ConsumerGroupDescribe (key 69, KIP-848): the state, epochs, assignor
and members of consumer-protocol groups, each member with its current and
target assignment (topics by id and name).

Versions 0-1: v1 adds each member's type (KIP-1099); every member here is
a consumer-protocol member (1), since classic members are not converted
into consumer groups. A group id that is not a consumer
group is answered GROUP_ID_NOT_FOUND, as Kafka does. Each group needs
DESCRIBE (Kafka's rule), else GROUP_AUTHORIZATION_FAILED;
``include_authorized_operations`` as KIP-430. A group whose members are
assigned (or targeted) a topic the session may not DESCRIBE is answered
TOPIC_AUTHORIZATION_FAILED without its members, so the describe does not
reveal topic names the client may not see (KAFKA-18813).
"""

from __future__ import annotations

import uuid

from kavka.common.errors import ErrorCode
from kavka.group.consumer_assignors import Assignment
from kavka.group.coordinator import GroupCoordinator
from kavka.protocol.messages import ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse
from kavka.security.acl import AclOperation, ResourceType
from kavka.server.authorization import AuthHelper
from kavka.server.metadata_cache import MetadataCache
from kavka.server.network import Dispatcher, RequestContext

API_KEY = 69
MIN_VERSION = 0
MAX_VERSION = 1

_R = ConsumerGroupDescribeResponse
_M = _R.Groups.Members


class ConsumerGroupDescribeHandler:
    def __init__(self, coordinator: GroupCoordinator, metadata: MetadataCache, auth: AuthHelper) -> None:
        self.coordinator = coordinator
        self.metadata = metadata
        self.auth = auth

    def _topics(self, a: Assignment) -> list[tuple[uuid.UUID, str, list[int]]]:
        return [(t, self.metadata.topic_by_id(t) or "", sorted(ps))
                for t, ps in sorted(a.items(), key=lambda kv: kv[0].bytes)]

    def _assignment(self, a: Assignment) -> ConsumerGroupDescribeResponse.Groups.Members.Assignment:
        return _M.Assignment(topic_partitions=[_M.Assignment.TopicPartitions(topic_id=t, topic_name=n, partitions=ps)
                                               for t, n, ps in self._topics(a)])

    def _target(self, a: Assignment) -> ConsumerGroupDescribeResponse.Groups.Members.TargetAssignment:
        return _M.TargetAssignment(topic_partitions=[
            _M.TargetAssignment.TopicPartitions(topic_id=t, topic_name=n, partitions=ps)
            for t, n, ps in self._topics(a)])

    async def __call__(self, ctx: RequestContext, request: ConsumerGroupDescribeRequest
                       ) -> ConsumerGroupDescribeResponse:
        allowed = self.auth.filter_by_authorized(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, request.group_ids)
        out = []
        for group_id in request.group_ids:
            if group_id not in allowed:
                code: ErrorCode = ErrorCode.GROUP_AUTHORIZATION_FAILED
                g = None
            else:
                code, g = self.coordinator.describe_consumer_group(group_id)
            if g is None:
                message = (f"group {group_id!r} is not a consumer group"
                           if code is ErrorCode.GROUP_ID_NOT_FOUND else code.message)
                out.append(_R.Groups(error_code=int(code), error_message=message, group_id=group_id,
                                     group_state="Dead", group_epoch=0, assignment_epoch=0, assignor_name="",
                                     members=[]))
                continue
            named = {n for m in g.members.values()
                     for a in (m.assignment.assigned, g.target.get(m.member_id, {}))
                     for _, n, _ in self._topics(a)}
            if named - self.auth.filter_by_authorized(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, named,
                                                      log_if_denied=False):
                code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
                out.append(_R.Groups(error_code=int(code), group_id=group_id, group_state="", group_epoch=0,
                                     assignment_epoch=0, assignor_name="", members=[],
                                     error_message="the group has described topic(s) that the client is not "
                                                   "authorized to describe"))
                continue
            members = [_M(member_id=m.member_id, instance_id=m.instance_id, rack_id=m.rack_id,
                          member_epoch=m.member_epoch, client_id=m.client_id, client_host=m.client_host,
                          subscribed_topic_names=list(m.subscribed_topic_names), subscribed_topic_regex=m.subscribed_topic_regex,
                          assignment=self._assignment(m.assignment.assigned), member_type=1,
                          target_assignment=self._target(g.target.get(m.member_id, {})))
                       for m in g.members.values()]
            entry = _R.Groups(error_code=0, error_message=None, group_id=group_id, group_state=g.state.value,
                              group_epoch=g.group_epoch, assignment_epoch=g.target_epoch,
                              assignor_name=g.assignor_name(), members=members)
            if request.include_authorized_operations:
                entry.authorized_operations = self.auth.authorized_operations(ctx, ResourceType.GROUP, group_id)
            out.append(entry)
        return _R(throttle_time_ms=0, groups=out)


def register(dispatcher: Dispatcher, handler: ConsumerGroupDescribeHandler) -> None:
    dispatcher.register(API_KEY, handler, MIN_VERSION, MAX_VERSION)
