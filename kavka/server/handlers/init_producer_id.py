"""InitProducerId (key 22): give an idempotent producer its producer id
(KIP-98), taken from this broker's block (``ProducerIdManager``), with
epoch 0.

Versions 0-5 (v6 is KIP-939's unstable two-phase commit; not advertised).
With a null ``transactional_id`` every request gets a fresh id and epoch 0
(as Kafka does, whatever producer id and epoch v3+ requests carry: an
idempotent producer that must reset its sequences simply asks again,
KIP-360). An empty transactional id is INVALID_REQUEST (Kafka's answer).
A non-empty one goes to the transaction coordinator (``kavka.transaction``:
new id or epoch bump, fencing the previous instance); before v4 its
PRODUCER_FENCED is answered as INVALID_PRODUCER_EPOCH (KIP-588).
A ZooKeeper failure while claiming a block is COORDINATOR_NOT_AVAILABLE as
well (retriable: the client asks again).

Authorization (Kafka 3.9's): a transactional id needs WRITE on it, else
TRANSACTIONAL_ID_AUTHORIZATION_FAILED; an idempotent producer needs
IDEMPOTENT_WRITE on the cluster or, since KIP-679, WRITE on at least one
topic, else CLUSTER_AUTHORIZATION_FAILED. Asked before anything else.
"""

from __future__ import annotations

import logging

from kavka.common.errors import ErrorCode, KafkaError
from kavka.common.ids import NO_PRODUCER_EPOCH, NO_PRODUCER_ID, ProducerEpoch, ProducerId
from kavka.protocol.messages import InitProducerIdRequest, InitProducerIdResponse
from kavka.security.acl import AclOperation, ResourceType
from kavka.server.authorization import AuthHelper
from kavka.server.handlers.add_partitions_to_txn import fenced_as
from kavka.server.network import Dispatcher, RequestContext
from kavka.server.producer_id_manager import ProducerIdManager
from kavka.transaction.coordinator import TransactionCoordinator

API_KEY = 22
MIN_VERSION = 0
MAX_VERSION = 5

logger = logging.getLogger(__name__)


class InitProducerIdHandler:
    def __init__(self, producer_ids: ProducerIdManager, transactions: TransactionCoordinator,
                 auth: AuthHelper) -> None:
        self.producer_ids = producer_ids
        self.transactions = transactions
        self.auth = auth

    async def __call__(self, ctx: RequestContext, request: InitProducerIdRequest) -> InitProducerIdResponse:
        tid = request.transactional_id
        if tid is not None:
            if not self.auth.authorize(ctx, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, tid):
                return _answer(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        elif (not self.auth.authorize_cluster(ctx, AclOperation.IDEMPOTENT_WRITE, log_if_denied=False)
              and not self.auth.authorize_by_resource_type(ctx, AclOperation.WRITE, ResourceType.TOPIC)):
            return _answer(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
        if tid == "":
            return _answer(ErrorCode.INVALID_REQUEST)
        if tid is not None:
            version = ctx.api_version
            code, pid, epoch = await self.transactions.init_producer_id(
                tid, request.transaction_timeout_ms,
                ProducerId(request.producer_id) if version >= 3 else NO_PRODUCER_ID,
                ProducerEpoch(request.producer_epoch) if version >= 3 else NO_PRODUCER_EPOCH)
            if code is not ErrorCode.NONE:
                return _answer(fenced_as(code, version, 4))
            return InitProducerIdResponse(throttle_time_ms=0, error_code=0, producer_id=pid, producer_epoch=epoch)
        try:
            pid = await self.producer_ids.generate_producer_id()
        except KafkaError as e:
            logger.error("cannot allocate a producer id: %s", e)
            return _answer(e.code)
        except Exception as e:  # ZooKeeper unreachable, session lost ...
            logger.warning("cannot claim a producer id block from ZooKeeper: %s", e)
            return _answer(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        return InitProducerIdResponse(throttle_time_ms=0, error_code=0, producer_id=pid, producer_epoch=0)


def _answer(code: ErrorCode) -> InitProducerIdResponse:
    return InitProducerIdResponse(throttle_time_ms=0, error_code=int(code), producer_id=-1, producer_epoch=-1)


def register(dispatcher: Dispatcher, handler: InitProducerIdHandler) -> None:
    dispatcher.register(API_KEY, handler, MIN_VERSION, MAX_VERSION)
