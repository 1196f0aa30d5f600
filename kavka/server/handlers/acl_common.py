"""What DescribeAcls, CreateAcls and DeleteAcls share: the answer without
an authorizer (SECURITY_DISABLED, as Kafka), the CLUSTER check each makes
first (DESCRIBE for DescribeAcls, ALTER for the other two), and filters
read from the wire (enum codes Kafka does not define read as UNKNOWN, which
the filter then refuses by name).
"""

from __future__ import annotations

from kavka.security.acl import (
    CLUSTER_NAME,
    AccessControlEntryFilter,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    Action,
    PatternType,
    ResourcePatternFilter,
    ResourceType,
    enum_code,
)
from kavka.security.acl_authorizer import AclAuthorizer
from kavka.server.network import RequestContext

NO_AUTHORIZER = "No Authorizer is configured on the broker"


def cluster_allowed(authorizer: AclAuthorizer, ctx: RequestContext, operation: AclOperation, request: str) -> bool:
    return authorizer.authorize(ctx.session, [Action(operation, ResourceType.CLUSTER, CLUSTER_NAME)],
                                request=request)[0]


def binding_filter(resource_type: int, name: str | None, pattern_type: int, principal: str | None,
                   host: str | None, operation: int, permission_type: int) -> AclBindingFilter:
    return AclBindingFilter(
        ResourcePatternFilter(enum_code(ResourceType, resource_type), name, enum_code(PatternType, pattern_type)),
        AccessControlEntryFilter(principal, host, enum_code(AclOperation, operation),
                                 enum_code(AclPermissionType, permission_type)))
