"""``MetricsExporter``: a broker's Prometheus endpoint (``metrics.port``).

prometheus-client's HTTP server answers ``GET /metrics`` on its own
thread. The broker's metrics are read on the event loop that owns the
state they read: the scrape thread hands one gathering to the loop
(``run_coroutine_threadsafe``), waits for the families (at most
``SCRAPE_TIMEOUT_S``: a loop that does not answer makes the scrape fail
with a 500 rather than hang), and formats them on its own thread. The
process's own metrics (CPU, memory, open files, GC counts: the client's
process, platform and GC collectors) are read on the scrape thread.

Start and stop on the loop. The endpoint serves plain HTTP to whoever
reaches ``metrics.host``:``metrics.port`` (like the JMX exporter's agent):
bind it to an address only the monitoring network reaches.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Sequence
from typing import Any

from prometheus_client import GC_COLLECTOR, PLATFORM_COLLECTOR, PROCESS_COLLECTOR, CollectorRegistry, start_http_server
from prometheus_client.core import Metric

from kavka.metrics.broker_metrics import collect_all, refresh_all

log = logging.getLogger("kavka.metrics")

SCRAPE_TIMEOUT_S = 10.0


class _OnTheLoop:
    """A prometheus-client collector that gathers ``collectors`` on ``loop``."""

    def __init__(self, loop: asyncio.AbstractEventLoop, collectors: Sequence[Any]) -> None:
        self._loop = loop
        self._loop_thread = threading.get_ident()  # made on the loop
        self._collectors = collectors

    def describe(self) -> list[Metric]:
        return []  # registering must not scrape (the registry would call collect)

    def collect(self) -> list[Metric]:
        if threading.get_ident() == self._loop_thread:
            return collect_all(self._collectors)  # (a caller on the loop: what is known without waiting)
        future = asyncio.run_coroutine_threadsafe(self._gather(), self._loop)
        try:
            return future.result(SCRAPE_TIMEOUT_S)
        except TimeoutError:
            future.cancel()
            raise RuntimeError(f"the broker's event loop did not answer the scrape within {SCRAPE_TIMEOUT_S:.0f} s") from None

    async def _gather(self) -> list[Metric]:
        await refresh_all(self._collectors)
        return collect_all(self._collectors)


class MetricsExporter:
    """See the module docstring. ``registry`` may already hold collectors
    (the ``EventLoopMonitor``'s histograms); ``collectors`` are read on the
    loop at every scrape."""

    def __init__(self, registry: CollectorRegistry, collectors: Sequence[Any]) -> None:
        self.registry = registry
        self._collectors = collectors
        self._server: Any = None
        self._thread: threading.Thread | None = None
        self.address: tuple[str, int] | None = None

    def start(self, host: str, port: int) -> tuple[str, int]:
        """Register the collectors and listen; returns the bound address
        (port 0: a free one). Raises OSError if the port is taken."""
        registry = self.registry
        registry.register(_OnTheLoop(asyncio.get_running_loop(), self._collectors))
        for collector in (PROCESS_COLLECTOR, PLATFORM_COLLECTOR, GC_COLLECTOR):
            registry.register(collector)
        self._server, self._thread = start_http_server(port, host, registry=registry)
        bound = self._server.server_address
        self.address = (host or str(bound[0]), int(bound[1]))
        return self.address

    async def stop(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            # shutdown waits for the serving thread's loop to end: off the event loop
            await asyncio.to_thread(server.shutdown)
            server.server_close()
