"""``InterBrokerFence``: who may send this broker the requests only brokers
send, whether or not an authorizer is configured.

Any process that reaches a broker port can send LeaderAndIsr, StopReplica
or UpdateMetadata, or a Fetch claiming to be a follower; the wire carries
no proof of who sent it. Kafka trusts the authorizer (CLUSTER_ACTION on the
cluster) and, without one, nothing. Kavka checks, for every one of them:

Control requests (LeaderAndIsr, UpdateMetadata, StopReplica:
``check_control_request``), in this order:

1. with an authorizer, CLUSTER_ACTION on the cluster, else
   CLUSTER_AUTHORIZATION_FAILED (Kafka's check);
2. the broker epoch (KIP-380): it must be this broker's current one, the
   czxid of its ``/brokers/ids/<id>`` registration, which the controller
   reads and a client cannot see. A request carrying another (an older
   registration's, or -1: an old version without the field) is
   STALE_BROKER_EPOCH and changes nothing. A higher one is checked against
   ZooKeeper (the controller may have seen a re-registration before this
   broker's registrar recorded it). Without an epoch, only a connection
   authenticated as a broker (``Session.inter_broker``) is believed;
3. the controller epoch: a broker never believes in a higher controller
   epoch than ZooKeeper shows. A request whose epoch is newer than the
   last one accepted must name the controller and epoch that ``/controller``
   and ``/controller_epoch`` hold (cached with watches; re-read after a
   sync when they disagree), else STALE_CONTROLLER_EPOCH; one with the
   accepted epoch must name the same controller; an older one is
   STALE_CONTROLLER_EPOCH, as before. A connection authenticated as a
   broker is believed without asking ZooKeeper (the brokers of a cluster
   share their inter-broker principal, so it proves "a broker", which
   Kafka trusts with CLUSTER_ACTION). So no client can raise the epoch a
   broker believes in and shut the real controller out.

Follower fetches (``verified_replica``): a Fetch with replica id >= 0
reads past the high watermark and moves that follower's log end offset
and the ISR, so the replica id is believed only from a connection
authenticated as a broker (``Session.inter_broker``), or — when the
inter-broker listener does not authenticate — with that broker's current
epoch (Fetch v15+ ``replica_state.replica_epoch``, KIP-903; Kavka's
followers send it) — looked up only for an assigned replica of a partition
the request names. Otherwise the Fetch handler refuses it as Kafka refuses
a fetch from a replica it does not recognise (NOT_LEADER_OR_FOLLOWER):
nothing is read and no state moves. While ZooKeeper cannot be reached the
epochs last read stand (replication goes on through a ZooKeeper outage);
one that would need ZooKeeper to confirm is refused until it answers.

``from_broker``: whether the connection authenticated as a broker
(ControlledShutdown of old versions, which carry no epoch).

Runs on the broker's event loop. ZooKeeper errors while verifying a
control request propagate: the request then fails and the controller's
channel retries it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from kavka.common.errors import ErrorCode
from kavka.security.acl import AclOperation
from kavka.server.authorization import AuthHelper
from kavka.server.network import RequestContext
from kavka.zk.epoch_views import ZkBrokerEpochs, ZkControllerView
from kavka.zk.store_types import ZkError

log = logging.getLogger("kavka.state.change")


class InterBrokerFence:
    """See the module docstring. ``own_epoch()``: this broker's registration
    czxid as its registrar knows it (None while unregistered);
    ``require_authenticated_replicas``: the inter-broker listener
    authenticates brokers, so a follower must have authenticated."""

    def __init__(self, broker_id: int, auth: AuthHelper, own_epoch: Callable[[], int | None],
                 broker_epochs: ZkBrokerEpochs, controller_view: ZkControllerView, *,
                 require_authenticated_replicas: bool) -> None:
        self.broker_id = broker_id
        self.auth = auth
        self._own_epoch = own_epoch
        self.broker_epochs = broker_epochs
        self.controller_view = controller_view
        self.require_authenticated_replicas = require_authenticated_replicas
        # The newest (controller epoch, controller id) this broker accepted.
        self.accepted: tuple[int, int] | None = None

    @staticmethod
    def from_broker(ctx: RequestContext) -> bool:
        return ctx.session.inter_broker

    async def check_control_request(self, ctx: RequestContext, controller_id: int, controller_epoch: int,
                                    broker_epoch: int) -> ErrorCode:
        """NONE, or the error the whole request is answered with (see the
        module docstring); refusals are logged with the peer's address."""
        api = self.auth.request_name(ctx)
        if not self.auth.authorize_cluster(ctx, AclOperation.CLUSTER_ACTION):
            return ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        from_controller = self.from_broker(ctx)
        problem = await self._broker_epoch_problem(broker_epoch, from_controller)
        if problem is not None:
            log.warning("broker %d refused %s from %s (claiming controller %d epoch %d): %s", self.broker_id, api,
                        ctx.client_host, controller_id, controller_epoch, problem)
            return ErrorCode.STALE_BROKER_EPOCH
        problem = await self._controller_problem(controller_id, controller_epoch, from_controller)
        if problem is not None:
            log.warning("broker %d refused %s from %s (broker epoch %d): %s", self.broker_id, api, ctx.client_host,
                        broker_epoch, problem)
            return ErrorCode.STALE_CONTROLLER_EPOCH
        return ErrorCode.NONE

    async def _broker_epoch_problem(self, claimed: int, from_controller: bool) -> str | None:
        if claimed < 0:
            if from_controller:
                return None
            return "it carries no broker epoch and the connection is not authenticated as a broker"
        ours = self._own_epoch()
        if claimed == ours:
            return None
        if ours is not None and claimed < ours:
            return f"broker epoch {claimed} is older than this broker's registration ({ours})"
        current = await self.broker_epochs.epoch(self.broker_id, fresh=True)
        if claimed == current:
            return None
        return f"broker epoch {claimed} is not this broker's registration ({current})"

    async def _controller_problem(self, controller_id: int, epoch: int, from_controller: bool) -> str | None:
        accepted = self.accepted
        if accepted is not None and epoch < accepted[0]:
            return f"controller epoch {epoch} is older than the current {accepted[0]}"
        if accepted is not None and epoch == accepted[0]:
            if controller_id == accepted[1]:
                return None
            return f"controller epoch {epoch} belongs to controller {accepted[1]}, not {controller_id}"
        if not from_controller:
            view = await self.controller_view.current()
            if view != (controller_id, epoch):
                view = await self.controller_view.current(fresh=True)
            if view != (controller_id, epoch):
                return (f"controller {controller_id} epoch {epoch} is not what ZooKeeper shows "
                        f"(controller {view[0]}, epoch {view[1]})")
        self.accepted = (epoch, controller_id)
        return None

    async def verified_replica(self, ctx: RequestContext, replica_id: int, replica_epoch: int, *,
                               assigned: bool) -> bool:
        """Whether a Fetch's replica id may be believed (module docstring).
        ``assigned``: the id is an assigned replica of a partition the
        request names here (only those are looked up in ZooKeeper, so a
        client cannot make the broker watch made-up ids)."""
        if self.from_broker(ctx):
            return True
        if self.require_authenticated_replicas or replica_epoch < 0 or not assigned:
            return False
        try:
            current = await self.broker_epochs.epoch(replica_id)
            if current == replica_epoch:
                return True
            if current is None or replica_epoch > current:
                # A re-registration whose watch event has not reached us yet.
                return await self.broker_epochs.epoch(replica_id, fresh=True) == replica_epoch
        except ZkError as e:
            log.warning("cannot verify the broker epoch %d of replica %d (%s): its fetch is refused until "
                        "ZooKeeper answers", replica_epoch, replica_id, e)
        return False
