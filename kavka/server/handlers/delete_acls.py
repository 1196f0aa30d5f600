"""DeleteAcls (key 31, KIP-140; pattern types since v1, KIP-290): remove the
ACLs each filter matches; each filter is answered with the bindings it
deleted (a binding matched by several filters is reported under the first).

Needs ALTER on the CLUSTER (else every filter is
CLUSTER_AUTHORIZATION_FAILED); without an authorizer every filter is
SECURITY_DISABLED, as Kafka's. A filter with an UNKNOWN element is
INVALID_REQUEST. Versions 0-3 (v0 filters LITERAL patterns only).
"""

from __future__ import annotations

from kavka.common.errors import ErrorCode
from kavka.protocol.messages import DeleteAclsRequest, DeleteAclsResponse
from kavka.security.acl import AclOperation
from kavka.security.acl_authorizer import AclAuthorizer
from kavka.server.acl_manager import AclManager
from kavka.server.handlers.acl_common import binding_filter, cluster_allowed
from kavka.server.network import Dispatcher, RequestContext

API_KEY = 31
MIN_VERSION = 0
MAX_VERSION = 3


class DeleteAclsHandler:
    def __init__(self, authorizer: AclAuthorizer | None, acls: AclManager | None) -> None:
        self.authorizer = authorizer
        self.acls = acls

    async def __call__(self, ctx: RequestContext, request: DeleteAclsRequest) -> DeleteAclsResponse:
        R = DeleteAclsResponse

        def all_failed(code: ErrorCode, message: str) -> DeleteAclsResponse:
            return R(throttle_time_ms=0, filter_results=[
                R.FilterResults(error_code=int(code), error_message=message, matching_acls=[])
                for _ in request.filters])

        if self.authorizer is None or self.acls is None:
            return all_failed(ErrorCode.SECURITY_DISABLED, "No Authorizer is configured.")
        if not cluster_allowed(self.authorizer, ctx, AclOperation.ALTER, "DeleteAcls"):
            return all_failed(ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                              f"{ctx.session.principal} may not ALTER the cluster, which deleting ACLs needs")
        filters = [binding_filter(f.resource_type_filter, f.resource_name_filter, f.pattern_type_filter,
                                  f.principal_filter, f.host_filter, f.operation, f.permission_type)
                   for f in request.filters]
        results = await self.acls.delete_acls(filters)
        M = R.FilterResults.MatchingAcls
        return R(throttle_time_ms=0, filter_results=[
            R.FilterResults(error_code=int(r.error), error_message=r.message, matching_acls=[
                M(error_code=int(m.error), error_message=m.message,
                  resource_type=int(m.binding.pattern.resource_type), resource_name=m.binding.pattern.name,
                  pattern_type=int(m.binding.pattern.pattern_type), principal=m.binding.entry.principal,
                  host=m.binding.entry.host, operation=int(m.binding.entry.operation),
                  permission_type=int(m.binding.entry.permission_type))
                for m in r.matches])
            for r in results])


def register(dispatcher: Dispatcher, handler: DeleteAclsHandler) -> None:
    dispatcher.register(API_KEY, handler, MIN_VERSION, MAX_VERSION)
