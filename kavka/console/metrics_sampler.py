"""Scrapes each ``--metrics-url`` every interval into a ``MetricsHistory``
(``kavka.console.metrics``) for the Metrics page. A URL that does not
answer is recorded as an error on the page, and scraping goes on. Reads are
bounded (``MAX_SCRAPE_BYTES``, a 3 s timeout) and run in a worker thread
(urllib blocks); the history belongs to the console's event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import urllib.error
import urllib.request

from kavka.console.metrics import MAX_SCRAPE_BYTES, MetricsHistory

SCRAPE_TIMEOUT_S = 3.0


def fetch(url: str) -> str:
    """The body of ``url`` as text (at most MAX_SCRAPE_BYTES); raises
    OSError (urllib's errors included) or ValueError."""
    with urllib.request.urlopen(url, timeout=SCRAPE_TIMEOUT_S) as resp:  # noqa: S310 - operator-given URL
        body = resp.read(MAX_SCRAPE_BYTES + 1)
    if len(body) > MAX_SCRAPE_BYTES:
        raise ValueError(f"answered more than {MAX_SCRAPE_BYTES} bytes")
    return body.decode("utf-8", errors="replace")


class MetricsSampler:
    def __init__(self, urls: tuple[str, ...], interval_s: float = 5.0) -> None:
        self.history = MetricsHistory(urls)
        self.interval_s = interval_s
        self._task: asyncio.Task | None = None

    @property
    def urls(self) -> tuple[str, ...]:
        return self.history.urls

    def start(self) -> None:
        if self.history.urls and self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def scrape_once(self) -> None:
        async def one(url: str) -> None:
            try:
                text = await asyncio.to_thread(fetch, url)
            except (OSError, ValueError) as e:
                reason = getattr(e, "reason", None)  # urllib's URLError wraps the socket's error
                self.history.failed(url, str(reason or e) or type(e).__name__)
                return
            self.history.record(url, time.monotonic(), text)
        await asyncio.gather(*(one(u) for u in self.history.urls))

    async def _run(self) -> None:
        while True:
            await self.scrape_once()
            await asyncio.sleep(self.interval_s)
