"""``KafkaController``: every broker's controller component (seeds 000, 001).

Every broker runs one. It competes for ``/controller`` through
``ControllerElector``; while it holds an epoch it is *active*: an
``ActiveController`` holds that epoch's state, and every ZooKeeper change,
broker answer and election outcome arrives as an event on ONE queue
consumed by ONE task (``ControllerEventManager``), so decisions are made
one at a time, in order, without locks.

Lifecycle, as the broker embeds it::

    controller = KafkaController(broker_id, zk_client, transport, ControllerConfig.from_kafka_config(cfg))
    await controller.start()   # after the broker registered in /brokers/ids
    ...                        # controller.is_active / .epoch / .active_controller_id
    await controller.stop()    # on shutdown: resigns (deletes /controller) if active

Resignation (seed 000 §Controller Failover, fencing as KAFKA-6082): when
the session expires, ``/controller`` names another broker, or a fenced
write fails with ``ControllerMovedError``, the active state is dropped: the
channel closes and nothing more is written or sent for that epoch. A
ZooKeeper failure that leaves the state uncertain (a connection lost in
the middle of an event) makes it give up the epoch and compete again
(``Reelect``): the next epoch starts from what ZooKeeper holds.

All methods run on the broker's event loop.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from kavka.common.errors import ErrorCode, KafkaError, NotControllerError
from kavka.common.topic_partition import TopicPartition
from kavka.controller.active import ActiveController
from kavka.controller.channel import BrokerTransport, ControllerChannelManager
from kavka.controller.controlled_shutdown import on_controlled_shutdown
from kavka.controller.elector import ControllerElector
from kavka.controller.event_manager import ControllerEventManager
from kavka.controller.events import (
    AlterPartitionReassignments,
    AutoPreferredReplicaLeaderElection,
    BrokerChange,
    ControlledShutdown,
    ControllerEvent,
    ControllerRequest,
    ElectLeaders,
    IsrChangeNotification,
    LeaderAndIsrResponseReceived,
    ListPartitionReassignments,
    LogDirEventNotification,
    PartitionModifications,
    PartitionReassignmentIsrChange,
    PreferredReplicaElection,
    ReassignPartitions,
    Reelect,
    Resign,
    Startup,
    StopReplicaResponseReceived,
    TopicChange,
    TopicDeletion,
    WatchesLost,
)
from kavka.controller.settings import ControllerConfig
from kavka.controller.state_change_log import StateChangeLogger
from kavka.controller.stats import ControllerStats
from kavka.zk.client import ControllerClaim, ControllerMovedError, KavkaZkClient
from kavka.zk.store_types import SessionEvent, SessionState, ZkError, ZkSessionExpiredError

log = logging.getLogger(__name__)

# Pause before competing again after a failover failed for a reason other than ZooKeeper.
_FAILOVER_RETRY_S = 1.0

Handler = Callable[[ActiveController, ControllerEvent], Awaitable[None]]

# Events that only make sense while active, and what handles them.
_HANDLERS: dict[type[ControllerEvent], Handler] = {
    BrokerChange: lambda a, e: a.on_broker_change(),
    TopicChange: lambda a, e: a.on_topic_change(),
    PartitionModifications: lambda a, e: a.on_partition_modifications(e.topic),  # type: ignore[attr-defined]
    TopicDeletion: lambda a, e: a.on_topic_deletion(),
    IsrChangeNotification: lambda a, e: a.on_isr_change_notification(),
    LogDirEventNotification: lambda a, e: a.on_log_dir_event_notification(),
    WatchesLost: lambda a, e: a.on_watches_lost(),
    StopReplicaResponseReceived: lambda a, e: a.deletion.on_stop_replica_response(e.broker_id, e.request, e.response),  # type: ignore[attr-defined]
    LeaderAndIsrResponseReceived: lambda a, e: a.on_leader_and_isr_response(e.broker_id, e.request, e.response),  # type: ignore[attr-defined]
    ReassignPartitions: lambda a, e: a.reassignment_requests.on_reassign_partitions(),
    PreferredReplicaElection: lambda a, e: a.elections.on_preferred_replica_election(),
    AutoPreferredReplicaLeaderElection: lambda a, e: a.elections.on_auto_rebalance(),
    PartitionReassignmentIsrChange: lambda a, e: a.reassigner.on_state_znode_change(TopicPartition(e.topic, e.partition)),  # type: ignore[attr-defined]
    # Requests from this broker's API handlers: the result goes to the event's future.
    ControlledShutdown: lambda a, e: _reply(e, on_controlled_shutdown(a.context, a.partitions, a.replicas, a.deletion, e.broker_id, e.broker_epoch)),  # type: ignore[attr-defined]
    ElectLeaders: lambda a, e: _reply(e, a.elections.elect_leaders(e.partitions, e.election_type)),  # type: ignore[attr-defined]
    AlterPartitionReassignments: lambda a, e: _reply(e, a.reassignment_requests.alter_partition_reassignments(e.reassignments, e.allow_replication_factor_change)),  # type: ignore[attr-defined]
    ListPartitionReassignments: lambda a, e: _reply(e, _ready(a.reassignment_requests.list_partition_reassignments(e.partitions))),  # type: ignore[attr-defined]
}


async def _ready(value: Any) -> Any:
    return value


async def _reply(event: ControllerEvent, work: Awaitable[Any]) -> None:
    result = await work
    reply = event.reply  # type: ignore[attr-defined]
    if not reply.done():
        reply.set_result(result)


def _not_controller(event: ControllerEvent, why: str) -> None:
    if isinstance(event, ControllerRequest) and not event.reply.done():
        event.reply.set_exception(NotControllerError(why))


class KafkaController:
    """See module doc."""

    def __init__(
        self,
        broker_id: int,
        zk: KavkaZkClient,
        transport: BrokerTransport,
        config: ControllerConfig = ControllerConfig(),
        *,
        elector_retry_backoff_s: float = 1.0,
    ) -> None:
        self.broker_id = broker_id
        self.zk = zk
        self.transport = transport
        self.config = config
        self.state_log = StateChangeLogger(broker_id)
        self.events = ControllerEventManager(self._process, self._on_error, name=f"controller-event-thread-{broker_id}")
        self.elector = ControllerElector(zk, broker_id, self._on_elected, self._on_resigned, retry_backoff_s=elector_retry_backoff_s)
        self.active: ActiveController | None = None
        self.failovers = 0  # epochs this broker became active in (tests, metrics)
        self.stats = ControllerStats()  # kept across epochs, as Kafka's ControllerStats
        self._requests: set[asyncio.Future[Any]] = set()  # answers owed to API handlers

    # -- what the broker reads ------------------------------------------------------------------

    @property
    def is_active(self) -> bool:
        return self.active is not None

    @property
    def epoch(self) -> int | None:
        """The epoch this broker is active in, or None."""
        return self.active.context.epoch if self.active is not None else None

    @property
    def active_controller_id(self) -> int | None:
        """The controller as this broker last saw ``/controller`` (Metadata's controller_id)."""
        return self.elector.controller_id

    async def ask(self, make: Callable[[asyncio.Future[Any]], ControllerRequest]) -> Any:
        """Put a request event (``make(future)``) on the controller's queue
        and wait for its answer. Raises ``NotControllerError`` if this broker
        is not the active controller, or stops being it before the event is
        handled (the broker then answers NOT_CONTROLLER)."""
        if self.active is None:
            raise NotControllerError(f"broker {self.broker_id} is not the controller (the controller is {self.active_controller_id})")
        reply: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._requests.add(reply)
        reply.add_done_callback(self._requests.discard)
        self.events.put(make(reply))
        return await reply

    def _fail_requests(self, why: str) -> None:
        for reply in list(self._requests):
            if not reply.done():
                reply.set_exception(NotControllerError(why))

    # -- lifecycle -------------------------------------------------------------------------------

    async def start(self) -> None:
        self.events.start()
        self.zk.store.add_session_listener(self._on_session)
        await self.elector.start()

    async def stop(self) -> None:
        """Stop competing; if active, hand over cleanly (``/controller``
        deleted so the other brokers compete at once) and drop the state."""
        self.zk.store.remove_session_listener(self._on_session)
        await self.elector.stop()
        await self.events.stop()
        await self._resign("controller shutting down")
        self._fail_requests("the controller is shutting down")

    # -- inputs (all on the loop; they only queue events) ----------------------------------------

    async def _on_elected(self, claim: ControllerClaim) -> None:
        self.events.put(Startup(claim))

    async def _on_resigned(self) -> None:
        self.events.put(Resign("no longer the controller"))

    def _on_session(self, event: SessionEvent) -> None:
        if event.state is SessionState.RECONNECTED and self.active is not None:
            self.events.put(WatchesLost())

    # -- the event task ----------------------------------------------------------------------------

    async def _process(self, event: ControllerEvent) -> None:
        if isinstance(event, Startup):
            await self._failover(event.claim)
        elif isinstance(event, Resign):
            await self._resign(event.reason)
        elif isinstance(event, Reelect):
            await self._resign(event.reason)
            self.elector.reelect()
        elif self.active is not None:
            active = self.active
            await _HANDLERS[type(event)](active, event)
            active.batch.send_requests()
        else:
            log.debug("controller %d: %s ignored: not the controller", self.broker_id, event.name)
            _not_controller(event, f"broker {self.broker_id} is no longer the controller")

    async def _failover(self, claim: ControllerClaim) -> None:
        if self.active is not None:
            await self._resign(f"epoch {claim.epoch} supersedes epoch {self.active.context.epoch}")
        if self.elector.claim != claim:
            log.info("controller %d: epoch %d was lost before its failover started", self.broker_id, claim.epoch)
            return
        channel = ControllerChannelManager(
            self.transport, retry_backoff_ms=self.config.retry_backoff_ms, max_backoff_ms=self.config.max_retry_backoff_ms
        )
        self.active = ActiveController(self.broker_id, claim, self.zk, channel, self.config, self.events.put, self.state_log,
                                       self.stats)
        self.failovers += 1
        await self.active.on_controller_failover()
        self.active.batch.send_requests()

    async def _resign(self, reason: str) -> None:
        active, self.active = self.active, None
        if active is None:
            return
        log.info("controller %d: resigning epoch %d: %s", self.broker_id, active.context.epoch, reason)
        await active.close()
        # Work queued for the old epoch is moot; elections and resignations stay.
        self.events.clear(lambda e: isinstance(e, (Startup, Resign, Reelect)))
        self._fail_requests(f"broker {self.broker_id} resigned as controller: {reason}")

    async def _on_error(self, event: ControllerEvent, error: Exception) -> None:
        if isinstance(event, ControllerRequest) and not event.reply.done():
            # ZooKeeper trouble means this broker is resigning or re-electing:
            # the asker should find the controller again. Anything else is a
            # server error with its message.
            if isinstance(error, ZkError):
                event.reply.set_exception(NotControllerError(f"the controller is changing: {error}"))
            elif isinstance(error, KafkaError):
                event.reply.set_exception(error)
            else:
                event.reply.set_exception(KafkaError(f"the controller failed: {error}", code=ErrorCode.UNKNOWN_SERVER_ERROR))
        if isinstance(error, (ControllerMovedError, ZkSessionExpiredError)):
            # Someone else holds a newer epoch (or our session is gone): stop
            # now, and let the elector see who the controller is.
            log.warning("controller %d: %s while handling %s; resigning", self.broker_id, error, event.name)
            if self.active is not None:
                self.active.batch.discard()
            await self._resign(str(error))
            self.elector.resign()
        elif isinstance(error, ZkError):
            # E.g. a connection lost mid-event: what reached ZooKeeper is
            # unknown, so start over from ZooKeeper in a new epoch.
            log.warning("controller %d: ZooKeeper failed while handling %s (%s); re-electing", self.broker_id, event.name, error)
            if self.active is not None:
                self.active.batch.discard()
            self.events.put(Reelect(f"ZooKeeper failed during {event.name}: {error}"))
        elif isinstance(event, Startup):
            # A failover that did not complete leaves no usable state: give
            # the epoch up and try again after a pause (not in a tight loop).
            log.error("controller %d: failover failed; re-electing in %.1fs", self.broker_id, _FAILOVER_RETRY_S, exc_info=error)
            await self._resign(f"failover failed: {error}")
            asyncio.get_running_loop().call_later(_FAILOVER_RETRY_S, self.events.put, Reelect(f"failover failed: {error}"))
        else:
            log.error("controller %d: error handling %s", self.broker_id, event.name, exc_info=error)
            if self.active is not None:
                self.active.batch.send_requests()  # what was written to ZooKeeper must still reach brokers
