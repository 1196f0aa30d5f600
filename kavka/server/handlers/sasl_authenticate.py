"""SaslAuthenticate (key 36) outside the authentication phase: on a
listener without SASL, or after authentication completed, Kafka answers
ILLEGAL_SASL_STATE ("SaslAuthenticate request received after successful
authentication") and the connection stays open. During authentication the
connection's ``SaslServerAuthenticator`` answers it. Versions 0-2 (v1
session_lifetime_ms, KIP-368; v2 flexible)."""

from __future__ import annotations

from kavka.common.errors import ErrorCode
from kavka.protocol.messages import SaslAuthenticateRequest, SaslAuthenticateResponse
from kavka.server.network import Dispatcher, RequestContext

API_KEY = 36
MIN_VERSION = 0
MAX_VERSION = 2


class SaslAuthenticateHandler:
    async def __call__(self, ctx: RequestContext, request: SaslAuthenticateRequest) -> SaslAuthenticateResponse:
        return SaslAuthenticateResponse(error_code=int(ErrorCode.ILLEGAL_SASL_STATE),
                                        error_message="SaslAuthenticate request received after successful "
                                                      "authentication",
                                        auth_bytes=b"", session_lifetime_ms=0)


def register(dispatcher: Dispatcher, handler: SaslAuthenticateHandler) -> None:
    dispatcher.register(API_KEY, handler, MIN_VERSION, MAX_VERSION)
