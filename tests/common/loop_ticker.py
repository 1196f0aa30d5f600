"""``Ticker``: a task that counts the event-loop turns it gets, to show
that long work handed the loop turns (``kavka.common.loop_slice``)."""

from __future__ import annotations

import asyncio
import contextlib


class Ticker:
    """Counts its turns from creation until ``stop``."""

    def __init__(self) -> None:
        self.ticks = 0
        self.task = asyncio.create_task(self._run())

    async def _run(self) -> None:
        while True:
            self.ticks += 1
            await asyncio.sleep(0)

    async def stop(self) -> None:
        self.task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self.task
