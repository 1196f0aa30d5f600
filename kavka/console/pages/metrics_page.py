"""Metrics: charts of bytes in and out, requests per second and the p99 of
Produce and Fetch total time per broker, from each ``--metrics-url`` the
console scrapes (``MetricsSampler``); refreshed live."""

from __future__ import annotations

from starlette.requests import Request
from starlette.routing import Route

from kavka.console import metrics
from kavka.console.metrics_sampler import MetricsSampler
from kavka.console.web import Web

COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf")


def routes(web: Web, sampler: MetricsSampler) -> list[Route]:
    @web.page("Metrics")
    async def page(request: Request):
        charts = []
        for key, title, unit in metrics.CHARTS:
            lines = sampler.history.chart(key)
            paths, top = metrics.svg_paths(lines)
            last = {url: (line[-1][1] if line else None) for url, line in lines.items()}
            charts.append({"key": key, "title": title, "unit": unit, "paths": paths, "top": top, "last": last})
        colours = {url: COLOURS[i % len(COLOURS)] for i, url in enumerate(sampler.urls)}
        return web.render(request, "metrics.html", charts=charts, urls=sampler.urls, colours=colours,
                          errors=dict(sampler.history.errors),
                          samples={u: len(sampler.history.scrapes.get(u, ())) for u in sampler.urls})
    return [Route("/broker-metrics", page)]
