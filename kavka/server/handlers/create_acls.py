"""CreateAcls (key 30, KIP-140; PREFIXED patterns since v1, KIP-290): add
ACL bindings, each answered on its own.

Needs ALTER on the CLUSTER (else every creation is
CLUSTER_AUTHORIZATION_FAILED); without an authorizer every creation is
SECURITY_DISABLED, as Kafka's. A binding Kafka refuses (UNKNOWN or ANY
values, a principal that is not ``Type:name``, an empty name, a CLUSTER not
named ``kafka-cluster``, a name ZooKeeper cannot hold...) is
INVALID_REQUEST with the reason; the others are stored
(``kavka.server.acl_manager``). Versions 0-3.
"""

from __future__ import annotations

from kavka.common.errors import ErrorCode
from kavka.protocol.messages import CreateAclsRequest, CreateAclsResponse
from kavka.security.acl import (
    AccessControlEntry,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
    enum_code,
)
from kavka.security.acl_authorizer import AclAuthorizer
from kavka.server.acl_manager import AclManager
from kavka.server.handlers.acl_common import cluster_allowed
from kavka.server.network import Dispatcher, RequestContext

API_KEY = 30
MIN_VERSION = 0
MAX_VERSION = 3


class CreateAclsHandler:
    def __init__(self, authorizer: AclAuthorizer | None, acls: AclManager | None) -> None:
        self.authorizer = authorizer
        self.acls = acls

    async def __call__(self, ctx: RequestContext, request: CreateAclsRequest) -> CreateAclsResponse:
        R = CreateAclsResponse
        if self.authorizer is None or self.acls is None:
            return R(throttle_time_ms=0, results=[
                R.Results(error_code=int(ErrorCode.SECURITY_DISABLED), error_message="No Authorizer is configured.")
                for _ in request.creations])
        if not cluster_allowed(self.authorizer, ctx, AclOperation.ALTER, "CreateAcls"):
            message = f"{ctx.session.principal} may not ALTER the cluster, which creating ACLs needs"
            return R(throttle_time_ms=0, results=[
                R.Results(error_code=int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED), error_message=message)
                for _ in request.creations])
        bindings = [AclBinding(ResourcePattern(enum_code(ResourceType, c.resource_type), c.resource_name,
                                               enum_code(PatternType, c.resource_pattern_type)),
                               AccessControlEntry(c.principal, c.host, enum_code(AclOperation, c.operation),
                                                  enum_code(AclPermissionType, c.permission_type)))
                    for c in request.creations]
        results = await self.acls.create_acls(bindings)
        return R(throttle_time_ms=0, results=[
            R.Results(error_code=int(r.error), error_message=r.message) for r in results])


def register(dispatcher: Dispatcher, handler: CreateAclsHandler) -> None:
    dispatcher.register(API_KEY, handler, MIN_VERSION, MAX_VERSION)
