"""``InterBrokerFence`` over the in-memory ZooKeeper: which control requests
(LeaderAndIsr, UpdateMetadata, StopReplica) may act and which follower
fetches are believed — the broker epoch (KIP-380) exactly this broker's
registration, a controller epoch only as high as ZooKeeper confirms (so a
client cannot raise it), CLUSTER_ACTION with an authorizer, a connection
authenticated as a broker (``Session.inter_broker``) believed without
asking ZooKeeper."""

from __future__ import annotations

import asyncio

import pytest

from kavka.common.errors import ErrorCode
from kavka.protocol.headers import RequestHeader
from kavka.security.acl import (
    CLUSTER_NAME,
    AccessControlEntry,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from kavka.security.acl_authorizer import AclAuthorizer
from kavka.security.principal import KafkaPrincipal, Session
from kavka.server.authorization import AuthHelper
from kavka.server.inter_broker_fence import InterBrokerFence
from kavka.server.network import RequestContext
from kavka.zk.epoch_views import ZkBrokerEpochs, ZkControllerView
from kavka.zk.memory import InMemoryZkStore, InMemoryZooKeeper

ME, CONTROLLER, FOLLOWER = 1, 2, 3
STOP_REPLICA = 5


def ctx(session: Session | None = None, api_key: int = STOP_REPLICA) -> RequestContext:
    return RequestContext(RequestHeader(api_key, 3, 1, "c"), "conn", "10.0.0.9", 5000, "PLAINTEXT", 0,
                          session=session or Session(client_host="10.0.0.9"))


class Zk:
    """A ZooKeeper with a controller and registered brokers, and a writer session."""

    def __init__(self, server: InMemoryZooKeeper, writer: InMemoryZkStore) -> None:
        self.server = server
        self.writer = writer
        self.epochs: dict[int, int] = {}

    async def register(self, broker_id: int) -> int:
        path = f"/brokers/ids/{broker_id}"
        if await self.writer.exists(path) is not None:
            await self.writer.delete(path)
        await self.writer.create(path, b"{}", make_parents=True)
        stat = await self.writer.exists(path)
        assert stat is not None
        self.epochs[broker_id] = stat.czxid
        return stat.czxid

    async def elect(self, controller_id: int, epoch: int) -> None:
        if await self.writer.exists("/controller") is not None:
            await self.writer.delete("/controller")
        await self.writer.create("/controller", b'{"version":1,"brokerid":%d,"timestamp":"0"}' % controller_id)
        if await self.writer.exists("/controller_epoch") is None:
            await self.writer.create("/controller_epoch", b"%d" % epoch)
        else:
            await self.writer.set("/controller_epoch", b"%d" % epoch)


async def setup(authorizer: AclAuthorizer | None = None, *,
                require_authenticated_replicas: bool = False) -> tuple[InterBrokerFence, Zk]:
    server = InMemoryZooKeeper()
    writer, store = InMemoryZkStore(server), InMemoryZkStore(server)
    await writer.start()
    await store.start()
    zk = Zk(server, writer)
    for b in (ME, CONTROLLER, FOLLOWER):
        await zk.register(b)
    await zk.elect(CONTROLLER, 5)
    fence = InterBrokerFence(ME, AuthHelper(authorizer), lambda: zk.epochs.get(ME), ZkBrokerEpochs(store),
                             ZkControllerView(store), require_authenticated_replicas=require_authenticated_replicas)
    return fence, zk


async def test_only_this_brokers_current_epoch_lets_a_control_request_act() -> None:
    fence, zk = await setup()
    mine = zk.epochs[ME]
    assert await fence.check_control_request(ctx(), CONTROLLER, 5, mine) is ErrorCode.NONE
    for wrong in (-1, 0, mine - 1, mine + 1, mine + 10**9, zk.epochs[CONTROLLER]):
        assert await fence.check_control_request(ctx(), CONTROLLER, 5, wrong) is ErrorCode.STALE_BROKER_EPOCH, wrong


async def test_a_newer_registration_not_yet_seen_by_the_registrar_is_checked_in_zookeeper() -> None:
    fence, zk = await setup()
    old = zk.epochs[ME]
    new = await zk.register(ME)  # re-registered; the broker's registrar has not recorded it yet
    zk.epochs[ME] = old
    assert await fence.check_control_request(ctx(), CONTROLLER, 5, new) is ErrorCode.NONE
    zk.epochs[ME] = new  # the registrar has: the previous life's epoch no longer acts
    assert await fence.check_control_request(ctx(), CONTROLLER, 5, old) is ErrorCode.STALE_BROKER_EPOCH


async def test_no_client_can_raise_the_controller_epoch() -> None:
    fence, zk = await setup()
    mine = zk.epochs[ME]
    # The attack: a high controller epoch (and a right broker epoch, at worst).
    assert await fence.check_control_request(ctx(), CONTROLLER, 999, mine) is ErrorCode.STALE_CONTROLLER_EPOCH
    assert await fence.check_control_request(ctx(), 7, 6, mine) is ErrorCode.STALE_CONTROLLER_EPOCH
    assert fence.accepted is None
    # The real controller is still believed afterwards.
    assert await fence.check_control_request(ctx(), CONTROLLER, 5, mine) is ErrorCode.NONE
    assert fence.accepted == (5, CONTROLLER)
    # Same epoch, another controller: refused; older epochs: stale.
    assert await fence.check_control_request(ctx(), FOLLOWER, 5, mine) is ErrorCode.STALE_CONTROLLER_EPOCH
    assert await fence.check_control_request(ctx(), CONTROLLER, 4, mine) is ErrorCode.STALE_CONTROLLER_EPOCH
    # A new controller is believed once ZooKeeper says so (the cached view is refreshed).
    await zk.elect(FOLLOWER, 6)
    assert await fence.check_control_request(ctx(), FOLLOWER, 6, mine) is ErrorCode.NONE
    assert await fence.check_control_request(ctx(), CONTROLLER, 5, mine) is ErrorCode.STALE_CONTROLLER_EPOCH


async def test_a_connection_authenticated_as_a_broker_is_believed() -> None:
    fence, zk = await setup()
    broker = Session(KafkaPrincipal("User", "broker"), "10.0.0.2", inter_broker=True)
    # The same principal without the inter-broker flag (another listener): a client.
    client = Session(KafkaPrincipal("User", "broker"), "10.0.0.3")
    assert await fence.check_control_request(ctx(broker), CONTROLLER, 5, -1) is ErrorCode.NONE
    assert await fence.check_control_request(ctx(client), CONTROLLER, 5, -1) is ErrorCode.STALE_BROKER_EPOCH
    assert await fence.check_control_request(ctx(client), CONTROLLER, 9, zk.epochs[ME]) \
        is ErrorCode.STALE_CONTROLLER_EPOCH
    # A broker is believed as Kafka believes its inter-broker principal: here
    # a controller epoch ZooKeeper has not shown yet (its watch is on the way).
    assert await fence.check_control_request(ctx(broker), FOLLOWER, 6, zk.epochs[ME]) is ErrorCode.NONE
    assert fence.accepted == (6, FOLLOWER)


async def test_with_an_authorizer_cluster_action_comes_first() -> None:
    authorizer = AclAuthorizer(super_users=[KafkaPrincipal("User", "broker")])
    authorizer.update_cache(ResourcePattern(ResourceType.CLUSTER, CLUSTER_NAME, PatternType.LITERAL), [
        AccessControlEntry("User:ops", "*", AclOperation.ALTER, AclPermissionType.ALLOW)])
    fence, zk = await setup(authorizer)
    alice = Session(KafkaPrincipal("User", "alice"), "10.0.0.9")
    broker = Session(KafkaPrincipal("User", "broker"), "10.0.0.2")
    mine = zk.epochs[ME]
    assert await fence.check_control_request(ctx(alice), CONTROLLER, 5, mine) is ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    assert await fence.check_control_request(ctx(broker), CONTROLLER, 5, mine) is ErrorCode.NONE
    # CLUSTER_ACTION does not excuse a wrong epoch.
    assert await fence.check_control_request(ctx(broker), CONTROLLER, 5, 12345) is ErrorCode.STALE_BROKER_EPOCH


async def test_a_follower_is_believed_with_its_current_epoch_or_its_authentication() -> None:
    fence, zk = await setup()
    anonymous = ctx()
    epoch = zk.epochs[FOLLOWER]
    assert await fence.verified_replica(anonymous, FOLLOWER, epoch, assigned=True)
    for wrong in (-1, 0, epoch - 1, epoch + 1, zk.epochs[ME]):
        assert not await fence.verified_replica(anonymous, FOLLOWER, wrong, assigned=True), wrong
    assert not await fence.verified_replica(anonymous, FOLLOWER, epoch, assigned=False)  # not its replica here
    # Restarted follower: its new epoch is checked in ZooKeeper, the old one no longer passes.
    new = await zk.register(FOLLOWER)
    assert await fence.verified_replica(anonymous, FOLLOWER, new, assigned=True)
    await asyncio.sleep(0)
    assert not await fence.verified_replica(anonymous, FOLLOWER, epoch, assigned=True)
    authenticated = ctx(Session(KafkaPrincipal("User", "broker"), "10.0.0.3", inter_broker=True))
    assert await fence.verified_replica(authenticated, FOLLOWER, -1, assigned=True)


@pytest.mark.parametrize("epoch_known", [True, False])
async def test_where_brokers_authenticate_an_epoch_alone_proves_nothing(epoch_known: bool) -> None:
    fence, zk = await setup(require_authenticated_replicas=True)
    epoch = zk.epochs[FOLLOWER] if epoch_known else -1
    assert not await fence.verified_replica(ctx(), FOLLOWER, epoch, assigned=True)
    authenticated = ctx(Session(KafkaPrincipal("User", "broker"), "10.0.0.3", inter_broker=True))
    assert await fence.verified_replica(authenticated, FOLLOWER, epoch, assigned=True)


async def test_replication_goes_on_while_zookeeper_is_unreachable() -> None:
    server = InMemoryZooKeeper()
    writer, store = InMemoryZkStore(server), InMemoryZkStore(server)
    await writer.start()
    await store.start()
    zk = Zk(server, writer)
    for b in (ME, CONTROLLER, FOLLOWER):
        await zk.register(b)
    fence = InterBrokerFence(ME, AuthHelper(None), lambda: zk.epochs.get(ME), ZkBrokerEpochs(store),
                             ZkControllerView(store), require_authenticated_replicas=False)
    epoch = zk.epochs[FOLLOWER]
    assert await fence.verified_replica(ctx(), FOLLOWER, epoch, assigned=True)
    store.disconnect()
    await asyncio.sleep(0)
    assert await fence.verified_replica(ctx(), FOLLOWER, epoch, assigned=True)  # the epoch last read stands
    assert not await fence.verified_replica(ctx(), FOLLOWER, epoch + 1, assigned=True)  # needs ZooKeeper: refused
    store.reconnect()
    assert await fence.verified_replica(ctx(), FOLLOWER, epoch, assigned=True)
