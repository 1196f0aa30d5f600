"""The console's composition root: one ``Cluster`` (Kavka's client) opened
when the app starts and closed when it stops, the ``ConsoleService`` over
it, the metrics sampler, and the routes of every page module.

``build_app`` takes the already-checked settings; ``kavka.console.main``
parses the command line and serves the app with uvicorn.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from kavka.client.cluster import Cluster
from kavka.console.metrics_sampler import MetricsSampler
from kavka.console.pages import groups, messages, metrics_page, overview, reassign, security, topics
from kavka.console.service import ConsoleService
from kavka.console.web import Web
from kavka.security.client_security import PLAINTEXT_SECURITY, ClientSecurity

STATIC = Path(__file__).with_name("static")


@dataclass(frozen=True)
class ConsoleSettings:
    bootstrap: str
    security: ClientSecurity = PLAINTEXT_SECURITY
    client_id: str = "kavka-console"
    request_timeout_ms: int = 10_000
    metrics_urls: tuple[str, ...] = ()
    metrics_interval_s: float = 5.0


def build_app(settings: ConsoleSettings) -> Starlette:
    # One request may take half of an operation's time: a broker that stands still costs one
    # timeout, its connection is closed, and the retry goes to another broker within the deadline.
    per_request = max(500, settings.request_timeout_ms // 2)
    cluster = Cluster(settings.bootstrap, client_id=settings.client_id, request_timeout_ms=per_request,
                      connect_timeout_ms=min(5_000, per_request),
                      default_deadline_ms=settings.request_timeout_ms, security=settings.security)
    service = ConsoleService(cluster, timeout_ms=settings.request_timeout_ms)
    web = Web(service, settings.bootstrap)
    sampler = MetricsSampler(settings.metrics_urls, settings.metrics_interval_s)

    @contextlib.asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        # The cluster may be down when the console starts: pages say so and retry.
        with contextlib.suppress(Exception):
            await cluster.start()
        sampler.start()
        try:
            yield
        finally:
            await sampler.stop()
            await service.close()
            await cluster.close()

    async def health(_request: Request) -> Response:
        return Response("ok\n", media_type="text/plain")

    routes = [Route("/healthz", health), Mount("/static", StaticFiles(directory=STATIC), name="static")]
    for module in (overview, topics, messages, groups, reassign, security):
        routes.extend(module.routes(web))
    routes.extend(metrics_page.routes(web, sampler))
    return Starlette(routes=routes, lifespan=lifespan)
