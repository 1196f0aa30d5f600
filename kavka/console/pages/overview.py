"""Overview: the brokers (id, host, rack, controller, up or down, leaders,
replicas, disk used from DescribeLogDirs) and the cluster's health counts
(under-replicated, offline, under min ISR); refreshed live by the page's
script."""

from __future__ import annotations

from starlette.requests import Request
from starlette.routing import Route

from kavka.common.errors import KafkaError
from kavka.console.service import describe_error
from kavka.console.web import Web


def routes(web: Web) -> list[Route]:
    @web.page("Overview")
    async def overview(request: Request):
        try:
            view = await web.service.overview()
        except KafkaError as e:
            # The page stays up and says why; its refresh tries again.
            return web.render(request, "overview.html", view=None, error=describe_error(e),
                              seen=sorted(web.service.seen_brokers.values(), key=lambda b: b.node_id))
        return web.render(request, "overview.html", view=view, error=None, seen=())
    return [Route("/", overview)]
