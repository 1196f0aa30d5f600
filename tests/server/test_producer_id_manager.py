"""Producer id blocks (claimed through a fake ZooKeeper claim) and the
InitProducerId handler's answers."""

from __future__ import annotations

import asyncio

from kavka.common.errors import ErrorCode
from kavka.protocol.messages import InitProducerIdRequest
from kavka.server.authorization import AuthHelper
from kavka.server.handlers.init_producer_id import MAX_VERSION, InitProducerIdHandler
from kavka.server.producer_id_manager import ProducerIdManager
from kavka.transaction.coordinator import TransactionConfig, TransactionCoordinator
from kavka.zk.cluster import ProducerIdBlockZNode


class FakeZk:
    """The znode as ``claim_producer_id_block`` maintains it."""

    def __init__(self) -> None:
        self.latest: ProducerIdBlockZNode | None = None
        self.claims = 0

    async def claim(self, broker_id: int) -> ProducerIdBlockZNode:
        self.claims += 1
        await asyncio.sleep(0)
        self.latest = (self.latest.next_block(broker_id) if self.latest
                       else ProducerIdBlockZNode.first_block(broker_id))
        return self.latest


async def test_ids_come_from_claimed_blocks_and_never_repeat():
    zk = FakeZk()
    a, b = ProducerIdManager(1, zk.claim), ProducerIdManager(2, zk.claim)
    ids_a = await asyncio.gather(*(a.generate_producer_id() for _ in range(1500)))
    ids_b = [await b.generate_producer_id() for _ in range(10)]
    assert ids_a == list(range(1500)) and zk.claims == 3  # blocks [0,999], [1000,1999]; b got [2000,2999]
    assert ids_b == list(range(2000, 2010))
    assert a.current_block.block_end == 1999


class _Ctx:
    api_version = 5


def _call(handler, **fields):
    req = InitProducerIdRequest(transaction_timeout_ms=60_000, **fields)
    return asyncio.run(handler(_Ctx(), req))


def _handler(claim) -> InitProducerIdHandler:
    ids = ProducerIdManager(0, claim)
    # a transaction coordinator that leads no __transaction_state partition
    txns = TransactionCoordinator(0, TransactionConfig(), None, None, ids.generate_producer_id)
    return InitProducerIdHandler(ids, txns, AuthHelper(None))


def test_handler_answers():
    zk = FakeZk()
    handler = _handler(zk.claim)
    first = _call(handler, transactional_id=None)
    assert (first.error_code, first.producer_id, first.producer_epoch) == (0, 0, 0)
    # KIP-360 bump request of an idempotent producer: a fresh id, epoch 0
    again = _call(handler, transactional_id=None, producer_id=0, producer_epoch=0)
    assert (again.error_code, again.producer_id, again.producer_epoch) == (0, 1, 0)
    assert _call(handler, transactional_id="").error_code == ErrorCode.INVALID_REQUEST
    txn = _call(handler, transactional_id="tx-1")
    assert (txn.error_code, txn.producer_id) == (ErrorCode.NOT_COORDINATOR, -1)
    assert MAX_VERSION == 5


def test_zookeeper_failure_is_retriable():
    async def broken(_broker_id):
        raise ConnectionError("zookeeper unreachable")

    answer = _call(_handler(broken), transactional_id=None)
    assert answer.error_code == ErrorCode.COORDINATOR_NOT_AVAILABLE
