"""Producer ids for idempotent producers, handed out from blocks of 1000
that this broker claims in ZooKeeper (``/latest_producer_id_block``, the
JSON Kafka writes; KIP-98 in ZooKeeper mode).

Each broker claims a whole block with a conditional write (the znode's
version), so two brokers never hand out the same id; the ids of a block
this broker did not use before a restart are simply skipped, as in Kafka.

Invariant: every id returned lies in a block this broker claimed, and ids
increase. Event loop only (``generate_producer_id`` is a coroutine; a lock
makes concurrent callers wait for one claim).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from kavka.common.errors import ErrorCode, KafkaError
from kavka.common.ids import ProducerId
from kavka.zk.cluster import ProducerIdBlockZNode

INT64_MAX = 2**63 - 1

ClaimBlock = Callable[[int], Awaitable[ProducerIdBlockZNode]]


class ProducerIdManager:
    """See the module docstring. ``claim_block(broker_id)`` is
    ``KavkaZkClient.claim_producer_id_block``."""

    def __init__(self, broker_id: int, claim_block: ClaimBlock) -> None:
        self.broker_id = broker_id
        self._claim_block = claim_block
        self._block: ProducerIdBlockZNode | None = None
        self._next = 0
        self._lock = asyncio.Lock()

    @property
    def current_block(self) -> ProducerIdBlockZNode | None:
        return self._block

    async def generate_producer_id(self) -> ProducerId:
        """The next unused producer id; claims a new block when this one is
        used up. Raises ``KafkaError`` when the id space is exhausted."""
        async with self._lock:
            if self._block is None or self._next > self._block.block_end:
                block = await self._claim_block(self.broker_id)
                if block.block_end >= INT64_MAX:
                    raise KafkaError("the producer id space (int64) is exhausted", code=ErrorCode.UNKNOWN_SERVER_ERROR)
                self._block, self._next = block, block.block_start
            pid = ProducerId(self._next)
            self._next += 1
            return pid
