"""DescribeClientQuotas (key 48, KIP-546): the quotas of the entities a
filter selects (``kavka.server.client_quota_admin`` says how filters match).

Needs DESCRIBE_CONFIGS on the CLUSTER when an authorizer is configured
(else CLUSTER_AUTHORIZATION_FAILED, as Kafka). A bad filter fails the whole
request with INVALID_REQUEST (UNSUPPORTED_VERSION for an entity type Kafka
does not know) and its message; ``entries`` is then null. Versions 0-1.
"""

from __future__ import annotations

from kavka.common.errors import ErrorCode
from kavka.protocol.messages import DescribeClientQuotasRequest, DescribeClientQuotasResponse
from kavka.security.acl import AclOperation
from kavka.server.authorization import AuthHelper
from kavka.server.client_quota_admin import ClientQuotaAdmin, ClientQuotaError, FilterComponent
from kavka.server.network import Dispatcher, RequestContext

API_KEY = 48
MIN_VERSION = 0
MAX_VERSION = 1


class DescribeClientQuotasHandler:
    def __init__(self, admin: ClientQuotaAdmin, auth: AuthHelper) -> None:
        self.admin = admin
        self.auth = auth

    async def __call__(self, ctx: RequestContext, request: DescribeClientQuotasRequest) -> DescribeClientQuotasResponse:
        R = DescribeClientQuotasResponse

        def error(code: ErrorCode, message: str) -> DescribeClientQuotasResponse:
            return R(throttle_time_ms=0, error_code=int(code), error_message=message, entries=None)

        if not self.auth.authorize_cluster(ctx, AclOperation.DESCRIBE_CONFIGS):
            return error(ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                         f"{ctx.session.principal} may not DESCRIBE_CONFIGS the cluster, which describing quotas needs")
        try:
            components = [FilterComponent.from_wire(c.entity_type, c.match_type, c.match) for c in request.components]
            found = await self.admin.describe(components, request.strict)
        except ClientQuotaError as e:
            return error(e.code, e.message)
        return R(throttle_time_ms=0, error_code=0, error_message=None, entries=[
            R.Entries(entity=[R.Entries.Entity(entity_type=t, entity_name=n) for t, n in entity.components()],
                      values=[R.Entries.Values(key=k, value=v) for k, v in sorted(values.items())])
            for entity, values in found])


def register(dispatcher: Dispatcher, handler: DescribeClientQuotasHandler) -> None:
    dispatcher.register(API_KEY, handler, MIN_VERSION, MAX_VERSION)
