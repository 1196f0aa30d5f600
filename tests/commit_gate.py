"""A coordinator log's committed point, held shut for a test: a load's
``wait_committed`` (``kavka.server.internal_topic.InternalTopicLog``) waits
until the test opens it, or gives up once the load is no longer wanted."""

from __future__ import annotations

import asyncio
from collections.abc import Callable


class CommitGate:
    def __init__(self) -> None:
        self.opened = asyncio.Event()

    async def wait(self, still_wanted: Callable[[], bool]) -> bool:
        while not self.opened.is_set():
            if not still_wanted():
                return False
            await asyncio.sleep(0.01)
        return still_wanted()
