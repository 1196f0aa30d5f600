"""``AuthHelper``: how a request handler asks the authorizer (Kafka's
``kafka.server.AuthHelper``).

Every handler that checks a request gets one from the composition root
(``kavka.server.broker``) and asks it instead of the ``Authorizer``
directly, so that a broker without ``authorizer.class.name`` (``authorizer``
None) allows everything, as Kafka does, through the same code path.

- ``authorize``: one operation on one literal resource; ``authorize_cluster``
  the same on the one CLUSTER (``kafka-cluster``).
- ``filter_by_authorized``: the names of a request's resources the session
  may use, asked in ONE batch of one ``Action`` per distinct name (with how
  often the request named it, for the audit log), so a 1000-partition
  Produce costs one check per topic, not per partition.
- ``authorized_operations``: KIP-430's bit field of the operations the
  session may do on a resource (``include_*_authorized_operations`` in
  Metadata, DescribeCluster and DescribeGroups): bit ``op`` set for every
  operation the resource type supports that is allowed; every supported
  operation without an authorizer.
- ``authorize_by_resource_type``: may the session do an operation on at
  least one resource of a type (KIP-679: an idempotent producer without
  IDEMPOTENT_WRITE on the cluster needs WRITE on some topic).
- ``config_resource_error``: the DescribeConfigs/AlterConfigs/
  IncrementalAlterConfigs rule: a topic's configs need the operation on the
  topic (else TOPIC_AUTHORIZATION_FAILED), a broker's or broker logger's on
  the cluster (else CLUSTER_AUTHORIZATION_FAILED).

Audit logging is the authorizer's: ``log_if_denied`` False for resources a
request only filters (topics hidden from a Metadata listing),
``log_if_allowed`` as Kafka's defaults (True for named resources). The API
named in the audit log is the request's own (``Produce``, ``Fetch``...).

Runs on the broker's event loop; never blocks (the authorizer answers from
memory).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from kavka.common.errors import ErrorCode
from kavka.protocol.messages import request_class
from kavka.security.acl import (
    CLUSTER_NAME,
    SUPPORTED_OPERATIONS,
    AclOperation,
    Action,
    ResourceType,
)
from kavka.security.authorizer import Authorizer
from kavka.server.network import RequestContext

# KIP-430: the "not asked for" value of every *_authorized_operations field.
AUTHORIZED_OPERATIONS_OMITTED = -(1 << 31)
# Kafka's ConfigResource.Type codes that name a topic or the brokers.
CONFIG_TOPIC, CONFIG_BROKER, CONFIG_BROKER_LOGGER = 2, 4, 8


def operations_bit_field(operations: Iterable[AclOperation]) -> int:
    """Kafka's ``Utils.to32BitField``: bit ``op`` set for each operation."""
    field = 0
    for op in operations:
        field |= 1 << int(op)
    return field


class AuthHelper:
    """See the module docstring. ``authorizer`` None: everything is allowed."""

    def __init__(self, authorizer: Authorizer | None) -> None:
        self.authorizer = authorizer

    @property
    def enabled(self) -> bool:
        return self.authorizer is not None

    @staticmethod
    def request_name(ctx: RequestContext) -> str:
        try:
            return request_class(ctx.header.api_key).API_NAME
        except KeyError:
            return str(ctx.header.api_key)

    def authorize(self, ctx: RequestContext, operation: AclOperation, resource_type: ResourceType, name: str, *,
                  log_if_allowed: bool = True, log_if_denied: bool = True, count: int = 1) -> bool:
        if self.authorizer is None:
            return True
        action = Action(operation, resource_type, name, log_if_allowed=log_if_allowed, log_if_denied=log_if_denied,
                        resource_reference_count=count)
        return self.authorizer.authorize(ctx.session, [action], request=self.request_name(ctx))[0]

    def authorize_cluster(self, ctx: RequestContext, operation: AclOperation, *, log_if_allowed: bool = True,
                          log_if_denied: bool = True) -> bool:
        return self.authorize(ctx, operation, ResourceType.CLUSTER, CLUSTER_NAME, log_if_allowed=log_if_allowed,
                              log_if_denied=log_if_denied)

    def filter_by_authorized(self, ctx: RequestContext, operation: AclOperation, resource_type: ResourceType,
                             names: Iterable[str], *, log_if_allowed: bool = True,
                             log_if_denied: bool = True) -> set[str]:
        """The names (a request may repeat one) the session may ``operation``."""
        counts = Counter(names)
        if self.authorizer is None:
            return set(counts)
        if not counts:
            return set()
        wanted = list(counts)
        actions = [Action(operation, resource_type, name, log_if_allowed=log_if_allowed, log_if_denied=log_if_denied,
                          resource_reference_count=counts[name]) for name in wanted]
        answers = self.authorizer.authorize(ctx.session, actions, request=self.request_name(ctx))
        return {name for name, allowed in zip(wanted, answers, strict=True) if allowed}

    def authorized_operations(self, ctx: RequestContext, resource_type: ResourceType, name: str) -> int:
        supported = sorted(SUPPORTED_OPERATIONS[resource_type])
        if self.authorizer is None:
            return operations_bit_field(supported)
        actions = [Action(op, resource_type, name, log_if_allowed=False, log_if_denied=False) for op in supported]
        answers = self.authorizer.authorize(ctx.session, actions, request=self.request_name(ctx))
        return operations_bit_field(op for op, allowed in zip(supported, answers, strict=True) if allowed)

    def authorize_by_resource_type(self, ctx: RequestContext, operation: AclOperation,
                                   resource_type: ResourceType) -> bool:
        if self.authorizer is None:
            return True
        return self.authorizer.authorize_by_resource_type(ctx.session, operation, resource_type,
                                                          request=self.request_name(ctx))

    def config_resource_error(self, ctx: RequestContext, operation: AclOperation, resource_type: int,
                              name: str) -> ErrorCode:
        """NONE when the session may ``operation`` (DESCRIBE_CONFIGS or
        ALTER_CONFIGS) the configs of a config resource; other resource
        types are NONE here and left to the config repository to refuse."""
        if resource_type == CONFIG_TOPIC:
            allowed = self.authorize(ctx, operation, ResourceType.TOPIC, name)
            return ErrorCode.NONE if allowed else ErrorCode.TOPIC_AUTHORIZATION_FAILED
        if resource_type in (CONFIG_BROKER, CONFIG_BROKER_LOGGER):
            allowed = self.authorize_cluster(ctx, operation)
            return ErrorCode.NONE if allowed else ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        return ErrorCode.NONE
