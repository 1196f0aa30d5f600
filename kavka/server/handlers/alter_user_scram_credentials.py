"""AlterUserScramCredentials (key 51, KIP-554): delete or upsert users'
SCRAM credentials from the salt and salted password the client computed
(``kavka.server.scram_admin`` checks them as Kafka does, answers once per
user, and writes ``/config/users/<user>``); every broker's credential cache
follows through the change notification.

Needs ALTER on the CLUSTER when an authorizer is configured (else every
user named is CLUSTER_AUTHORIZATION_FAILED). The salted passwords are never
logged. Version 0.
"""

from __future__ import annotations

from kavka.common.errors import ErrorCode
from kavka.protocol.messages import AlterUserScramCredentialsRequest, AlterUserScramCredentialsResponse
from kavka.security.acl import AclOperation
from kavka.server.authorization import AuthHelper
from kavka.server.network import Dispatcher, RequestContext
from kavka.server.scram_admin import Deletion, ScramCredentialAdmin, Upsertion

API_KEY = 51
MIN_VERSION = 0
MAX_VERSION = 0


class AlterUserScramCredentialsHandler:
    def __init__(self, admin: ScramCredentialAdmin, auth: AuthHelper) -> None:
        self.admin = admin
        self.auth = auth

    async def __call__(self, ctx: RequestContext, request: AlterUserScramCredentialsRequest
                       ) -> AlterUserScramCredentialsResponse:
        R = AlterUserScramCredentialsResponse
        if not self.auth.authorize_cluster(ctx, AclOperation.ALTER):
            users = dict.fromkeys([*(d.name for d in request.deletions), *(u.name for u in request.upsertions)])
            message = f"{ctx.session.principal} may not ALTER the cluster, which altering credentials needs"
            return R(throttle_time_ms=0, results=[
                R.Results(user=u, error_code=int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED), error_message=message)
                for u in users])
        results = await self.admin.alter(
            [Upsertion(u.name, u.mechanism, u.iterations, u.salt, u.salted_password) for u in request.upsertions],
            [Deletion(d.name, d.mechanism) for d in request.deletions])
        return R(throttle_time_ms=0, results=[
            R.Results(user=r.user, error_code=int(r.error), error_message=r.message) for r in results])


def register(dispatcher: Dispatcher, handler: AlterUserScramCredentialsHandler) -> None:
    dispatcher.register(API_KEY, handler, MIN_VERSION, MAX_VERSION)
