"""SaslHandshake (key 17) outside the authentication phase: on a listener
without SASL, or on a connection already authenticated (a re-authentication
that KIP-368 does not allow now: sessions without expiry, or a second one
within a second), Kafka answers ILLEGAL_SASL_STATE, listing no mechanism,
and the connection stays open. During authentication the connection's
``SaslServerAuthenticator`` answers SaslHandshake itself. Versions 0-1."""

from __future__ import annotations

from kavka.common.errors import ErrorCode
from kavka.protocol.messages import SaslHandshakeRequest, SaslHandshakeResponse
from kavka.server.network import Dispatcher, RequestContext

API_KEY = 17
MIN_VERSION = 0
MAX_VERSION = 1


class SaslHandshakeHandler:
    async def __call__(self, ctx: RequestContext, request: SaslHandshakeRequest) -> SaslHandshakeResponse:
        return SaslHandshakeResponse(error_code=int(ErrorCode.ILLEGAL_SASL_STATE), mechanisms=[])


def register(dispatcher: Dispatcher, handler: SaslHandshakeHandler) -> None:
    dispatcher.register(API_KEY, handler, MIN_VERSION, MAX_VERSION)
