"""DescribeUserScramCredentials (key 50, KIP-554): each user's SCRAM
mechanisms and iteration counts (``kavka.server.scram_admin``) — never a
salt, a key or a salted password.

Needs DESCRIBE on the CLUSTER when an authorizer is configured (else the
whole request is CLUSTER_AUTHORIZATION_FAILED, as Kafka). Version 0.
"""

from __future__ import annotations

from kavka.common.errors import ErrorCode
from kavka.protocol.messages import DescribeUserScramCredentialsRequest, DescribeUserScramCredentialsResponse
from kavka.security.acl import AclOperation
from kavka.server.authorization import AuthHelper
from kavka.server.network import Dispatcher, RequestContext
from kavka.server.scram_admin import ScramCredentialAdmin
from kavka.zk.codec import ZnodeDataError
from kavka.zk.store_types import ZkError

API_KEY = 50
MIN_VERSION = 0
MAX_VERSION = 0


class DescribeUserScramCredentialsHandler:
    def __init__(self, admin: ScramCredentialAdmin, auth: AuthHelper) -> None:
        self.admin = admin
        self.auth = auth

    async def __call__(self, ctx: RequestContext, request: DescribeUserScramCredentialsRequest
                       ) -> DescribeUserScramCredentialsResponse:
        R = DescribeUserScramCredentialsResponse

        def error(code: ErrorCode, message: str) -> DescribeUserScramCredentialsResponse:
            return R(throttle_time_ms=0, error_code=int(code), error_message=message, results=[])

        if not self.auth.authorize_cluster(ctx, AclOperation.DESCRIBE):
            return error(ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                         f"{ctx.session.principal} may not DESCRIBE the cluster, which describing credentials needs")
        users = None if request.users is None else [u.name for u in request.users]
        try:
            results = await self.admin.describe(users)
        except (ZkError, ZnodeDataError) as e:
            return error(ErrorCode.UNKNOWN_SERVER_ERROR, f"Error retrieving user SCRAM credentials: {e}")
        return R(throttle_time_ms=0, error_code=0, error_message=None, results=[
            R.Results(user=r.user, error_code=int(r.error), error_message=r.message, credential_infos=[
                R.Results.CredentialInfos(mechanism=m, iterations=i) for m, i in r.credentials])
            for r in results])


def register(dispatcher: Dispatcher, handler: DescribeUserScramCredentialsHandler) -> None:
    dispatcher.register(API_KEY, handler, MIN_VERSION, MAX_VERSION)
