"""ApiVersions (key 18): the versions this broker serves, per API.

The list comes from the dispatcher, which holds for each API only the
versions its handler fully implements (kafka-python infers a broker version
from these maxima, so advertising more than is implemented misleads it).
An unknown ApiVersions version never reaches this handler: the connection
layer answers it at v0 with UNSUPPORTED_VERSION (KIP-511).
"""

from __future__ import annotations

from kavka.common.errors import ErrorCode
from kavka.protocol.messages import ApiVersionsRequest, ApiVersionsResponse
from kavka.server.network import Dispatcher, RequestContext

API_KEY = 18
MIN_VERSION = 0
MAX_VERSION = 4


def make_handler(dispatcher: Dispatcher):
    async def handle(ctx: RequestContext, request: ApiVersionsRequest) -> ApiVersionsResponse:
        R = ApiVersionsResponse
        return R(
            error_code=int(ErrorCode.NONE),
            api_keys=[R.ApiKeys(api_key=k, min_version=lo, max_version=hi)
                      for k, lo, hi in dispatcher.supported()],
            throttle_time_ms=0,
        )

    return handle


def register(dispatcher: Dispatcher) -> None:
    dispatcher.register(API_KEY, make_handler(dispatcher), MIN_VERSION, MAX_VERSION)
