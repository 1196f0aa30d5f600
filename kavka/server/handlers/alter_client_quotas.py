"""AlterClientQuotas (key 49, KIP-546): set or remove quota keys of user,
client-id and (user, client-id) entities, defaults included, in ZooKeeper
(``kavka.server.client_quota_admin``); every broker applies them through
its config change notifications.

Each entity is answered on its own: INVALID_REQUEST with Kafka's message
for a malformed entity, an unknown key, a negative or non-finite value, a
fraction for a byte rate, a key altered twice; nothing of a refused entity
is written, and with ``validate_only`` nothing is written at all. Needs
ALTER_CONFIGS on the CLUSTER when an authorizer is configured (else every
entity is CLUSTER_AUTHORIZATION_FAILED). Versions 0-1.
"""

from __future__ import annotations

from kavka.common.errors import ErrorCode
from kavka.protocol.messages import AlterClientQuotasRequest, AlterClientQuotasResponse
from kavka.security.acl import AclOperation
from kavka.security.quota.entity import ClientQuotaEntity
from kavka.server.authorization import AuthHelper
from kavka.server.client_quota_admin import ClientQuotaAdmin, ClientQuotaError, QuotaOp
from kavka.server.network import Dispatcher, RequestContext
from kavka.zk.codec import ZnodeDataError
from kavka.zk.store_types import ZkError

API_KEY = 49
MIN_VERSION = 0
MAX_VERSION = 1


class AlterClientQuotasHandler:
    def __init__(self, admin: ClientQuotaAdmin, auth: AuthHelper) -> None:
        self.admin = admin
        self.auth = auth

    async def __call__(self, ctx: RequestContext, request: AlterClientQuotasRequest) -> AlterClientQuotasResponse:
        R = AlterClientQuotasResponse
        allowed = self.auth.authorize_cluster(ctx, AclOperation.ALTER_CONFIGS)
        entries = []
        for entry in request.entries:
            code, message = ErrorCode.NONE, None
            if not allowed:
                code = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
                message = f"{ctx.session.principal} may not ALTER_CONFIGS the cluster, which altering quotas needs"
            else:
                try:
                    try:
                        entity = ClientQuotaEntity.from_components([(e.entity_type, e.entity_name) for e in entry.entity])
                    except ValueError as e:
                        raise ClientQuotaError(ErrorCode.INVALID_REQUEST, str(e)) from None
                    ops = [QuotaOp(op.key, op.value, op.remove) for op in entry.ops]
                    await self.admin.alter(entity, ops, request.validate_only)
                except ClientQuotaError as e:
                    code, message = e.code, e.message
                except (ZkError, ZnodeDataError) as e:
                    code, message = ErrorCode.UNKNOWN_SERVER_ERROR, f"could not update ZooKeeper: {e}"
            entries.append(R.Entries(error_code=int(code), error_message=message, entity=[
                R.Entries.Entity(entity_type=e.entity_type, entity_name=e.entity_name) for e in entry.entity]))
        return R(throttle_time_ms=0, entries=entries)


def register(dispatcher: Dispatcher, handler: AlterClientQuotasHandler) -> None:
    dispatcher.register(API_KEY, handler, MIN_VERSION, MAX_VERSION)
