"""DescribeAcls (key 29, KIP-140; pattern types since v1, KIP-290): the
ACLs one filter selects, grouped by resource pattern.

Needs DESCRIBE on the CLUSTER (else CLUSTER_AUTHORIZATION_FAILED); without
an authorizer the answer is SECURITY_DISABLED, as Kafka's. A filter with an
UNKNOWN element is INVALID_REQUEST. Versions 0-3 (v0 filters and answers
LITERAL patterns only: its wire has no pattern type).
"""

from __future__ import annotations

from kavka.common.errors import ErrorCode
from kavka.protocol.messages import DescribeAclsRequest, DescribeAclsResponse
from kavka.security.acl import AclOperation, ResourcePattern
from kavka.security.acl_authorizer import AclAuthorizer
from kavka.server.handlers.acl_common import NO_AUTHORIZER, binding_filter, cluster_allowed
from kavka.server.network import Dispatcher, RequestContext

API_KEY = 29
MIN_VERSION = 0
MAX_VERSION = 3


class DescribeAclsHandler:
    def __init__(self, authorizer: AclAuthorizer | None) -> None:
        self.authorizer = authorizer

    async def __call__(self, ctx: RequestContext, request: DescribeAclsRequest) -> DescribeAclsResponse:
        R = DescribeAclsResponse

        def error(code: ErrorCode, message: str) -> DescribeAclsResponse:
            return R(throttle_time_ms=0, error_code=int(code), error_message=message, resources=[])

        if self.authorizer is None:
            return error(ErrorCode.SECURITY_DISABLED, NO_AUTHORIZER)
        if not cluster_allowed(self.authorizer, ctx, AclOperation.DESCRIBE, "DescribeAcls"):
            return error(ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                         f"{ctx.session.principal} may not DESCRIBE the cluster, which listing ACLs needs")
        f = binding_filter(request.resource_type_filter, request.resource_name_filter, request.pattern_type_filter,
                           request.principal_filter, request.host_filter, request.operation, request.permission_type)
        problem = f.unknown_element()
        if problem is not None:
            return error(ErrorCode.INVALID_REQUEST, f"DescribeAcls: {problem}")
        by_pattern: dict[ResourcePattern, list] = {}
        for b in self.authorizer.acls(f):
            by_pattern.setdefault(b.pattern, []).append(
                R.Resources.Acls(principal=b.entry.principal, host=b.entry.host, operation=int(b.entry.operation),
                                 permission_type=int(b.entry.permission_type)))
        return R(throttle_time_ms=0, error_code=0, error_message=None, resources=[
            R.Resources(resource_type=int(p.resource_type), resource_name=p.name, pattern_type=int(p.pattern_type),
                        acls=acls) for p, acls in by_pattern.items()])


def register(dispatcher: Dispatcher, handler: DescribeAclsHandler) -> None:
    dispatcher.register(API_KEY, handler, MIN_VERSION, MAX_VERSION)
