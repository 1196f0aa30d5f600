"""Client quotas applied to requests (KIP-13, KIP-124, KIP-219; Kafka's
``RequestHandlerHelper.sendResponseMaybeThrottle`` and the quota parts of
``KafkaApis``).

``ThrottlingHandler`` wraps every API's handler (the composition root does
it). It measures the time the handler's own code runs — the steps of its
coroutine, not the time it waits in a purgatory or on ZooKeeper — and
charges it to the ``request_percentage`` quota of the request's user and
client id, in percent of one second (Kafka's request handler time). The
request's throttle time is then the larger of that quota's and whatever
the handler asked for in ``ctx.throttle_time_ms`` (the produce and fetch
byte rates, the controller mutation rate); when it is positive, the
response carries it in ``throttle_time_ms`` and the connection is muted for
that long (``KafkaConnection.throttle``), once the response is ready — at
once, for a response the handler returned, or when a delayed one completes.
A request without a response (Produce with acks=0) still mutes.

A consumer's Fetch throttled by the request quota is answered with no data
(its bytes taken back off its consumer_byte_rate), as Kafka answers it.

Exempt from the request quota, as in Kafka: ApiVersions and the SASL
exchange (a client must be able to connect), the inter-broker APIs
(LeaderAndIsr, StopReplica, UpdateMetadata, ControlledShutdown,
WriteTxnMarkers) and a follower's Fetch (replication has its own quotas).
Without any request quota configured nothing is timed.

The quotas key on the principal's name (``ANONYMOUS`` before
authentication, as Kafka) and the client id (empty when absent).

Event loop only.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Awaitable, Callable, Generator
from typing import Any

from kavka.metrics.throttle_times import ThrottleTimes
from kavka.security.quota.manager import NANOS_TO_PERCENTAGE, ClientQuotaManager
from kavka.server.network import Handler, HandlerResult, RequestContext

# SaslHandshake, ApiVersions, SaslAuthenticate; LeaderAndIsr, StopReplica,
# UpdateMetadata, ControlledShutdown, WriteTxnMarkers.
EXEMPT_FROM_REQUEST_QUOTA = frozenset({17, 18, 36, 4, 5, 6, 7, 27})
FETCH_KEY = 1


def fetch_replica_id(ctx: RequestContext, request: Any) -> int:
    """A Fetch's replica id: -1 from a consumer, a broker id from a follower
    (v15+ carries it in ``replica_state``, KIP-903)."""
    return int(request.replica_state.replica_id if ctx.api_version >= 15 else request.replica_id)


def quota_user(ctx: RequestContext) -> str:
    return ctx.session.principal.name


def quota_client_id(ctx: RequestContext) -> str:
    return ctx.client_id or ""


class _Timed:
    """Awaits ``awaitable`` and adds up the time its steps run (each
    ``send``/``throw`` into it) in ``ns``."""

    __slots__ = ("_awaitable", "ns")

    def __init__(self, awaitable: Awaitable[Any]) -> None:
        self._awaitable = awaitable
        self.ns = 0

    def __await__(self) -> Generator[Any, Any, Any]:
        it = self._awaitable.__await__()
        value: Any = None
        error: BaseException | None = None
        while True:
            start = time.perf_counter_ns()
            try:
                yielded = it.throw(error) if error is not None else it.send(value)
            except StopIteration as stop:
                self.ns += time.perf_counter_ns() - start
                return stop.value
            except BaseException:
                self.ns += time.perf_counter_ns() - start
                raise
            self.ns += time.perf_counter_ns() - start
            value, error = None, None
            try:
                value = yield yielded
            except GeneratorExit:
                close = getattr(it, "close", None)
                if close is not None:
                    close()
                raise
            except BaseException as e:  # noqa: BLE001 - handed to the awaited code, as `await` does
                error = e


class ThrottlingHandler:
    """One API's handler with the quotas applied (see the module docstring)."""

    __slots__ = ("handler", "api_key", "request_quota", "throttled_response", "_exempt", "throttle_times",
                 "_resource")

    def __init__(self, handler: Handler, api_key: int, request_quota: ClientQuotaManager,
                 throttled_response: Callable[[RequestContext, Any], Any] | None = None,
                 throttle_times: ThrottleTimes | None = None) -> None:
        self.handler = handler
        # With metrics on: each throttled request's time, by the quota that set it
        self.throttle_times = throttle_times
        self._resource = BYTE_RATE_RESOURCES.get(api_key, "ControllerMutation")
        self.api_key = api_key
        self.request_quota = request_quota
        # What the API answers instead when the request quota throttles it
        # (a consumer's Fetch: no data, as Kafka's KafkaApis.handleFetchRequest).
        self.throttled_response = throttled_response
        self._exempt = api_key in EXEMPT_FROM_REQUEST_QUOTA

    async def __call__(self, ctx: RequestContext, request: Any) -> HandlerResult:
        charged = self.request_quota.enabled and not self._exempt and not self._from_follower(ctx, request)
        if charged:
            timed = _Timed(self.handler(ctx, request))
            result = await timed
            request_throttle = self.request_quota.record_and_get_throttle_ms(
                quota_user(ctx), quota_client_id(ctx), timed.ns * NANOS_TO_PERCENTAGE)
        else:
            result = await self.handler(ctx, request)
            request_throttle = 0
        if inspect.isawaitable(result):
            return self._finish_later(ctx, result, request_throttle)
        if request_throttle > 0 and result is not None and self.throttled_response is not None:
            result = self.throttled_response(ctx, result)
        return self._finish(ctx, result, request_throttle)

    def _from_follower(self, ctx: RequestContext, request: Any) -> bool:
        if self.api_key != FETCH_KEY:
            return False
        return fetch_replica_id(ctx, request) >= 0

    async def _finish_later(self, ctx: RequestContext, result: Awaitable[Any], request_throttle: int) -> Any:
        return self._finish(ctx, await result, request_throttle)

    def _finish(self, ctx: RequestContext, response: Any, request_throttle: int) -> Any:
        response = _finish(ctx, response, request_throttle)
        if ctx.throttle_time_ms > 0 and self.throttle_times is not None:
            # the request quota's, or the byte rate (or mutation) quota the handler applied
            resource = "Request" if request_throttle >= ctx.throttle_time_ms else self._resource
            self.throttle_times.record(resource, quota_user(ctx), quota_client_id(ctx), ctx.throttle_time_ms)
        return response


# The quota (Kafka's QuotaType) a handler's own throttle comes from: the
# byte rates of Produce and Fetch; the other APIs that throttle are
# CreateTopics, DeleteTopics and CreatePartitions (controller mutations).
BYTE_RATE_RESOURCES = {0: "Produce", FETCH_KEY: "Fetch"}


def _finish(ctx: RequestContext, response: Any, request_throttle: int) -> Any:
    throttle = max(ctx.throttle_time_ms, request_throttle)
    if throttle > 0:
        ctx.throttle_time_ms = throttle
        if response is not None and hasattr(response, "throttle_time_ms"):
            response.throttle_time_ms = throttle
        if ctx.connection is not None:
            ctx.connection.throttle(throttle)
    return response
