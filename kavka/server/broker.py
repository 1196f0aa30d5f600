"""``KafkaServer``: one broker process, assembled and run (seed 000 §Broker
启动过程; seed 002 §5.2, §6.3, §8, §9).

Startup, in order:

1. connect to ZooKeeper (``zookeeper.connect`` with its chroot, created if
   missing) and make sure the top-level paths and the cluster id exist;
   check the data directories' ``meta.properties`` against the cluster id
   and ``broker.id``, or take the broker's id from them or from
   ``/brokers/seqid`` (``broker.id=-1``; ``kavka.storage.broker_metadata``);
2. read every topic's config overrides, then load the logs
   (``LogManager``: locks, recovery, checkpoints — seed 002 §5.2/5.3) in a
   worker thread, and delete local partitions no longer assigned to this
   broker (seed 001 #5: a topic deleted while it was down);
   once the logs are loaded, ``meta.properties`` is written where missing;
3. the replica manager, then the request path (``_build_handlers``, the
   composition root: admin, config repository, the group and transaction
   coordinators with their internal topics, and every API handler with the
   collaborators it uses; ``handler_table`` maps them to API keys) behind
   the socket server, which starts listening;
   With ``authorizer.class.name`` set, the ACL authorizer comes first
   (``AclAuthorizer`` fed by the ``AclManager``, which loads every ACL from
   ZooKeeper and follows the change notifications), so that the first
   request is already checked against the ACLs (every handler asks it
   through one ``AuthHelper``, ``kavka.server.authorization``; the
   requests only brokers send also pass the ``InterBrokerFence``: broker
   and controller epochs checked against ZooKeeper, follower identity,
   authorizer or not); and before the socket
   server listens, the dynamic config manager applies every override —
   topics, brokers, users' SCRAM credentials (the ``ScramCredentialCache``
   the SASL servers read) and client quotas (``QuotaManagers``) — then
   follows ``/config/changes`` (seed 002 §8);
4. register ``/brokers/ids/<id>`` (re-registered after every session
   expiry, waiting out an old session's node: seed 002 §9, seed 003);
5. the controller component competes for ``/controller``;
6. periodic work: the log manager's jobs (flush, checkpoints, retention,
   producer-id expiry, file deletion) on the ``KafkaScheduler``'s
   ``background.threads`` threads (``kavka.server.scheduler``), ISR expiry
   and propagation on the loop.

Shutdown (SIGTERM/SIGINT through ``kavka server start``) reverses it and
ends with the log manager's clean shutdown, which writes
``.kafka_cleanshutdown``.

Runs on one asyncio event loop; blocking storage work goes to threads.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping

from prometheus_client import CollectorRegistry

from kavka.common.broker_config import KafkaConfig
from kavka.common.clock import SystemClock
from kavka.common.ids import BrokerId
from kavka.common.topic_partition import TopicPartition
from kavka.controller.broker_transport import KavkaBrokerTransport
from kavka.controller.controller import KafkaController
from kavka.controller.settings import ControllerConfig
from kavka.group.consumer_group import TopicMetadata
from kavka.group.coordinator import GROUP_METADATA_TOPIC, ConsumerGroupConfig, GroupConfig, GroupCoordinator
from kavka.metrics.broker_metrics import (
    BrokerTopicMetricsCollector,
    ConsumerGroupMetrics,
    ControllerMetrics,
    FetchSessionCacheMetrics,
    LogMetrics,
    QuotaMetrics,
    ReplicaManagerMetrics,
    RequestMetricsCollector,
    SocketServerMetrics,
    ZooKeeperMetrics,
)
from kavka.metrics.event_loop import EventLoopMonitor
from kavka.metrics.exporter import MetricsExporter
from kavka.metrics.request_metrics import RequestMetrics
from kavka.metrics.throttle_times import ThrottleTimes
from kavka.replication.fetch_session import FetchManager, FetchSessionCache
from kavka.replication.fetcher.manager import ReplicaFetcherManager
from kavka.replication.isr import ZkIsrChangeNotifier, ZkIsrWriter
from kavka.replication.log_dir_events import ZkLogDirEventNotifier
from kavka.replication.quota import LeaderReplicationQuota, follower_throttled
from kavka.replication.replica_manager import ReplicaManager, ReplicaManagerConfig
from kavka.replication.replica_selector import replica_selector
from kavka.security.acl_authorizer import AclAuthorizer
from kavka.security.client_security import PLAINTEXT_SECURITY, ClientSecurity
from kavka.security.quota.manager import QuotaManagers
from kavka.security.quota.rate import QuotaWindow
from kavka.security.sasl.credential_cache import ScramCredentialCache
from kavka.server import handler_table
from kavka.server.acl_manager import AclManager
from kavka.server.admin_manager import AdminManager
from kavka.server.authorization import AuthHelper
from kavka.server.channel_builder import ChannelBuilder, build_channel_builders, inter_broker_client_security
from kavka.server.client_quota_admin import ClientQuotaAdmin
from kavka.server.config_repository import ConfigRepository
from kavka.server.connection_quotas import ConnectionQuotaConfig, ConnectionQuotas
from kavka.server.controlled_shutdown import ControlledShutdownClient, ControlledShutdownSettings
from kavka.server.dynamic_config import BrokerConfigs, DynamicConfigManager
from kavka.server.end_offsets_client import EndOffsetsClient
from kavka.server.handlers import (
    add_offsets_to_txn,
    add_partitions_to_txn,
    alter_client_quotas,
    alter_configs,
    alter_partition_reassignments,
    alter_user_scram_credentials,
    consumer_group_describe,
    consumer_group_heartbeat,
    controlled_shutdown,
    create_acls,
    create_partitions,
    create_topics,
    delete_acls,
    delete_groups,
    delete_records,
    delete_topics,
    describe_acls,
    describe_client_quotas,
    describe_cluster,
    describe_configs,
    describe_groups,
    describe_log_dirs,
    describe_producers,
    describe_topic_partitions,
    describe_transactions,
    describe_user_scram_credentials,
    elect_leaders,
    end_txn,
    fetch,
    find_coordinator,
    heartbeat,
    incremental_alter_configs,
    init_producer_id,
    join_group,
    leader_and_isr,
    leave_group,
    list_groups,
    list_offsets,
    list_partition_reassignments,
    list_transactions,
    metadata,
    offset_commit,
    offset_delete,
    offset_fetch,
    offset_for_leader_epoch,
    produce,
    sasl_authenticate,
    sasl_handshake,
    stop_replica,
    sync_group,
    txn_offset_commit,
    update_metadata,
    write_txn_markers,
)
from kavka.server.ignored_configs import IgnoredConfigs
from kavka.server.inter_broker_fence import InterBrokerFence
from kavka.server.internal_topic import (
    TRANSACTION_APPEND_TIMEOUT_MS,
    CoordinatorLeadership,
    InternalTopic,
    InternalTopicLog,
    InternalTopicSettings,
)
from kavka.server.io_threads import IoThreadPool
from kavka.server.metadata_cache import ZERO_UUID, MetadataCache, MetadataUpdate
from kavka.server.network import Dispatcher, Handler, NetworkConfig, RequestLimits, SocketServer
from kavka.server.producer_id_manager import ProducerIdManager
from kavka.server.quota_config_handler import IpConfigHandler, QuotaConfigHandler
from kavka.server.scheduler import KafkaScheduler
from kavka.server.scram_admin import ScramCredentialAdmin
from kavka.server.throttling import ThrottlingHandler
from kavka.server.txn_markers import BrokerMarkerWriter
from kavka.server.zk_session_fence import ZkSessionFence, ZkSessionFencing
from kavka.storage import broker_metadata
from kavka.storage.cleaner.config import LogCleanerConfig
from kavka.storage.flush_stats import LOG_FLUSH_STATS
from kavka.storage.log_config import LogConfig
from kavka.storage.log_manager import LogManager
from kavka.storage.log_manager_config import LogManagerConfig
from kavka.storage.read_buffers import ReadBuffers
from kavka.transaction.coordinator import TRANSACTION_STATE_TOPIC, TransactionConfig, TransactionCoordinator
from kavka.zk.acl_store import ZkAclStore
from kavka.zk.brokers import BrokerIdZNode
from kavka.zk.client import KavkaZkClient
from kavka.zk.epoch_views import ZkBrokerEpochs, ZkControllerView
from kavka.zk.registration import BrokerRegistrar
from kavka.zk.store import KazooZkStore
from kavka.zk.store_types import NoNodeError

log = logging.getLogger("kavka.server")


class KafkaServer:
    """See the module docstring."""

    def __init__(self, config: KafkaConfig) -> None:
        self.static_config = config
        self.configs: BrokerConfigs | None = None
        self.broker_id = BrokerId(config.broker_id)
        self.store: KazooZkStore | None = None
        self.session_fencing: ZkSessionFencing | None = None
        self.zk: KavkaZkClient | None = None
        self.log_manager: LogManager | None = None
        self.replica_manager: ReplicaManager | None = None
        self.metadata_cache = MetadataCache(self.broker_id)
        self.cluster_id: str | None = None
        self.socket_servers: list[SocketServer] = []
        self.registrar: BrokerRegistrar | None = None
        self.controller: KafkaController | None = None
        self.dynamic_config: DynamicConfigManager | None = None
        self.group_coordinator: GroupCoordinator | None = None
        self.txn_coordinator: TransactionCoordinator | None = None
        # The ACL authorizer (None without authorizer.class.name): every
        # handler that checks a request asks it (Kafka's Authorizer).
        self.authorizer: AclAuthorizer | None = None
        self.acl_manager: AclManager | None = None
        # What ZooKeeper says about the controller and broker epochs, for
        # the InterBrokerFence; watched, so closed at shutdown.
        self.controller_view: ZkControllerView | None = None
        self.broker_epochs: ZkBrokerEpochs | None = None
        # Every user's SCRAM credentials (what the SASL servers look up) and
        # the client quotas, both kept current from /config/users and
        # /config/clients by the dynamic config manager.
        self.scram_credentials = ScramCredentialCache()
        self.quotas = QuotaManagers(
            QuotaWindow(config["quota.window.num"], config["quota.window.size.seconds"] * 1000),
            QuotaWindow(config["controller.quota.window.num"], config["controller.quota.window.size.seconds"] * 1000),
            SystemClock())
        # The periodic storage jobs (retention, flush, checkpoints ...) on
        # background.threads threads (Kafka's KafkaScheduler).
        self.scheduler: KafkaScheduler | None = None
        self.io_threads: IoThreadPool | None = None
        self._background: set[asyncio.Task] = set()  # the loop keeps only weak references
        self.bound: list[tuple[str, int]] = []
        self.connection_quotas: ConnectionQuotas | None = None
        self._quota_reconfiguration: asyncio.Task | None = None
        self.channels: Mapping[str, ChannelBuilder] = {}
        self.inter_broker_security: ClientSecurity = PLAINTEXT_SECURITY
        self.marker_writer: BrokerMarkerWriter | None = None
        # metrics.port >= 0: the Prometheus endpoint and what only it needs
        # measured (request times, throttle times, the loop's lag)
        self.request_metrics: RequestMetrics | None = None
        self.throttle_times: ThrottleTimes | None = None
        self.loop_monitor: EventLoopMonitor | None = None
        self.metrics_exporter: MetricsExporter | None = None
        self.lag_admin: EndOffsetsClient | None = None

    @property
    def config(self) -> KafkaConfig:
        """The effective broker config: server.properties with the dynamic
        broker configs once they are read (``BrokerConfigs``)."""
        return self.configs.current if self.configs is not None else self.static_config

    # -- startup --------------------------------------------------------------
    async def start(self) -> None:
        cfg = self.config
        started = time.monotonic()
        log.info("starting broker %d", self.broker_id)
        # Every listener's TLS context and SASL setup first: a keystore that
        # does not open or a JAAS config that does not parse stops the broker
        # before it touches ZooKeeper or its logs.
        self.channels = channels = build_channel_builders(cfg, self.scram_credentials)
        # How this broker's own clients reach the others' inter-broker
        # listener: replica fetchers, the controller's channel, transaction
        # markers and controlled shutdown all use it.
        self.inter_broker_security = inter_broker = inter_broker_client_security(cfg)
        # Blocking work (asyncio.to_thread) runs on num.io.threads threads
        # from the first ZooKeeper connect on.
        self.io_threads = io_threads = IoThreadPool(asyncio.get_running_loop(), cfg["num.io.threads"])
        self.store = store = KazooZkStore(cfg.zookeeper, session_timeout_ms=cfg["zookeeper.session.timeout.ms"],
                                          connection_timeout_ms=cfg.zookeeper_connection_timeout_ms,
                                          max_in_flight_requests=cfg["zookeeper.max.in.flight.requests"])
        await store.start()
        self.zk = zk = KavkaZkClient(store)
        await zk.create_top_level_paths()
        self.cluster_id = await zk.get_or_create_cluster_id()
        # Which broker the data directories belong to (meta.properties,
        # Kafka's BrokerMetadataCheckpoint): checked against the cluster and
        # broker.id, or, for broker.id=-1, the id they record or a new one
        # from /brokers/seqid above reserved.broker.max.id.
        # KIP-112: a directory whose meta.properties cannot be read (a failed
        # disk) is offline from the start; the broker runs on the others.
        offline_dirs: set[str] = set()
        stored = await asyncio.to_thread(broker_metadata.load, cfg.log_dirs, offline_dirs)
        readable_dirs = [d for d in cfg.log_dirs if d not in offline_dirs]
        broker_metadata.check_cluster_id(stored, self.cluster_id, readable_dirs)
        broker_id = broker_metadata.resolve_broker_id(
            cfg.broker_id, stored, readable_dirs, generation_enabled=cfg["broker.id.generation.enable"])
        if broker_id is None:
            broker_id = await zk.generate_broker_id(cfg["reserved.broker.max.id"])
            log.info("broker.id is -1: this broker takes the generated id %d (/brokers/seqid above "
                     "reserved.broker.max.id=%d)", broker_id, cfg["reserved.broker.max.id"])
        if broker_id != self.broker_id:
            self._take_broker_id(broker_id)
            cfg = self.config

        # Topic overrides first: logs are loaded with their topic's config.
        self.configs = configs = BrokerConfigs(self.static_config, zk)
        topic_configs = await configs.load(await _children(store, "/config/topics"))
        io_threads.reconfigure(configs.current)  # /config/brokers may set num.io.threads
        # Keys Kafka accepts that do nothing here: said once each, now and
        # after a live change (kavka.server.ignored_configs).
        ignored = IgnoredConfigs()
        ignored.check(configs.current)
        configs.add_listener(ignored.check)
        configs.add_listener(io_threads.reconfigure)
        manager_config = LogManagerConfig.from_broker(self.config.values)
        default_config = LogConfig.with_defaults(configs.log_defaults())
        self.log_manager = log_manager = await asyncio.to_thread(
            LogManager, manager_config, default_config, topic_configs=topic_configs, initial_offline_dirs=offline_dirs)
        configs.attach(log_manager)
        # log.cleaner.* changed live: the cleaner restarts its threads with
        # them (off the loop: stopping threads blocks)
        configs.add_listener(lambda c: self._in_background(asyncio.to_thread(
            log_manager.reconfigure_cleaner, LogCleanerConfig.from_broker(c.values)), "log cleaner reconfiguration"))
        # num.recovery.threads.per.data.dir changed live: the next shutdown's pools
        configs.add_listener(lambda c: log_manager.reconfigure_recovery_threads(
            int(c["num.recovery.threads.per.data.dir"])))
        await self._delete_unassigned_logs(zk, log_manager)
        log_manager.startup()  # the cleaner threads (seed 002 §5.2)
        await asyncio.to_thread(broker_metadata.write, log_manager.live_log_dirs,
                                broker_metadata.BrokerMetadata(self.broker_id, self.cluster_id))

        cache = self.metadata_cache
        # The fetchers find partitions in the replica manager built around them.
        fetchers = ReplicaFetcherManager.for_broker(
            self.broker_id, lambda: configs.current, log_manager, lambda tp: rm.get_partition(tp),
            throttled=follower_throttled(self.broker_id, lambda tp: rm.get_partition(tp)),
            broker_epoch=self._registered_epoch, security=inter_broker,
            high_watermark_moved=lambda tp: rm.complete_delayed_requests(tp))

        def replica_rack(broker_id: int, listener: str) -> tuple[bool, str | None]:
            b = cache.alive_broker(broker_id)
            return (b is not None and b.endpoint(listener) is not None), (b.rack if b is not None else None)

        self.replica_manager = rm = ReplicaManager(
            self.broker_id, log_manager, ReplicaManagerConfig.from_broker(self.config),
            isr_writer=ZkIsrWriter(zk), isr_change_listener=ZkIsrChangeNotifier(zk),
            log_dir_event_notifier=ZkLogDirEventNotifier(zk),
            fetcher_manager=fetchers,
            leader_quota=LeaderReplicationQuota.for_broker(self.broker_id, lambda: configs.current),
            known_partition=lambda tp: cache.partition(tp.topic, tp.partition) is not None,
            replica_selector=replica_selector("replica.selector.class", cfg["replica.selector.class"]),
            replica_rack=replica_rack, read_buffers=ReadBuffers(),
            broker_alive=lambda broker_id: cache.alive_broker(broker_id) is not None)
        rm.start()
        # num.replica.fetchers changed live: the fetchers are resized at once
        configs.add_listener(lambda c: fetchers.resize_thread_pool(int(c["num.replica.fetchers"])))
        # The controller component is built now, for the handlers that ask
        # it; it competes for /controller once this broker is registered.
        transport = KavkaBrokerTransport(self.broker_id, request_timeout_ms=cfg["controller.socket.timeout.ms"],
                                         security=inter_broker)
        controller = KafkaController(self.broker_id, zk, transport, ControllerConfig.from_kafka_config(cfg))
        if cfg["authorizer.class.name"]:
            self.authorizer = AclAuthorizer.from_config(cfg.values)
            self.acl_manager = AclManager(ZkAclStore(store), self.authorizer)
            await self.acl_manager.start()
        auth = AuthHelper(self.authorizer)
        self.controller_view = ZkControllerView(store)
        self.broker_epochs = ZkBrokerEpochs(store)
        fence = InterBrokerFence(self.broker_id, auth, self._registered_epoch, self.broker_epochs,
                                 self.controller_view,
                                 require_authenticated_replicas=_inter_broker_protocol(cfg).startswith("SASL_"))
        if cfg["metrics.port"] >= 0:
            self.request_metrics, self.throttle_times = RequestMetrics(), ThrottleTimes()
        dispatcher = Dispatcher()
        handler_table.register_all(dispatcher, self._build_handlers(zk, configs, log_manager, rm, controller,
                                                                    self.authorizer, self.acl_manager, auth, fence))

        # Every override, user credential and quota is read before the first
        # request is served (a SCRAM login must find its user); then the
        # manager follows /config/changes.
        # The connection limits follow dynamic broker config changes too
        # (host names of the overrides resolved off the loop).
        self.connection_quotas = connection_quotas = ConnectionQuotas(await _connection_quota_config(configs.current))

        async def reconfigure_connection_quotas(config: KafkaConfig) -> None:
            try:
                connection_quotas.update(await _connection_quota_config(config))
            except Exception:
                log.exception("applying the changed connection limits failed")

        def connection_limits_changed(config: KafkaConfig) -> None:
            self._quota_reconfiguration = asyncio.get_running_loop().create_task(
                reconfigure_connection_quotas(config), name="connection-quotas-reconfigure")

        configs.add_listener(connection_limits_changed)
        quota_configs = QuotaConfigHandler(self.quotas, self.scram_credentials)
        ip_configs = IpConfigHandler(connection_quotas)  # KIP-612 connection rates per address
        self.dynamic_config = dynamic_config = DynamicConfigManager(
            zk, {**configs.handlers(), **quota_configs.handlers(), **ip_configs.handlers()})
        await dynamic_config.start()

        net = NetworkConfig(max_request_size=cfg["socket.request.max.bytes"],
                            connections_max_idle_ms=cfg["connections.max.idle.ms"],
                            listen_backlog=cfg["socket.listen.backlog.size"],
                            send_buffer_bytes=cfg["socket.send.buffer.bytes"],
                            receive_buffer_bytes=cfg["socket.receive.buffer.bytes"])
        # One request queue and memory pool for all listeners, as Kafka's
        # SocketServer has one RequestChannel and one MemoryPool.
        limits = RequestLimits.create(cfg["queued.max.requests"], cfg["queued.max.request.bytes"],
                                      connection_quotas)
        for listener in cfg.listeners:
            server = SocketServer(dispatcher, net, channel=channels[listener.listener_name], limits=limits,
                                  request_metrics=self.request_metrics)
            self.bound.append(await server.start(listener.host or "0.0.0.0", listener.port))
            self.socket_servers.append(server)

        # A node left by this broker's previous session (killed and started
        # again at once) vanishes within one session timeout: wait that out
        # with room to spare, then call it a conflict (seed 003, ZOOKEEPER-1740).
        wait_s = 2 * cfg["zookeeper.session.timeout.ms"] / 1000.0 + 5
        self.registrar = registrar = BrokerRegistrar(zk, self._registration, wait_s=wait_s)
        await self._warn_if_registration_held(store, wait_s)
        await registrar.start()
        log.info("broker %d registered with broker epoch %s", self.broker_id, registrar.broker_epoch)

        self.controller = controller
        await controller.start()
        if cfg["metrics.port"] >= 0:
            self._start_metrics(cfg, store, log_manager, rm, controller)
        self.scheduler = scheduler = KafkaScheduler(int(configs.current["background.threads"]))
        for job in log_manager.periodic_jobs():
            scheduler.schedule(job.name, job.run, job.period_ms / 1000.0)
        # background.threads changed live: the pool is resized at once
        configs.add_listener(lambda c: scheduler.resize_thread_pool(int(c["background.threads"])))
        log.info("broker %d started in %.2f s, listening on %s", self.broker_id, time.monotonic() - started,
                 ", ".join(f"{h}:{p}" for h, p in self.bound))

    def _take_broker_id(self, broker_id: int) -> None:
        """The id stored in meta.properties or generated (broker.id=-1), set
        before anything is built around the id."""
        log.info("broker id %d (broker.id=%d in %s)", broker_id, self.static_config.broker_id,
                 self.static_config.source or "the config")
        self.static_config = self.static_config.with_broker_id(broker_id)
        self.broker_id = BrokerId(broker_id)
        self.metadata_cache = MetadataCache(self.broker_id)

    def _build_handlers(self, zk: KavkaZkClient, configs: BrokerConfigs, log_manager: LogManager,
                        rm: ReplicaManager, controller: KafkaController, authorizer: AclAuthorizer | None,
                        acls: AclManager | None, auth: AuthHelper, fence: InterBrokerFence) -> dict[int, Handler]:
        """The composition root of the request path: the group and
        transaction coordinators, the admin and config services, and every
        API handler with the collaborators it uses (API key -> handler).
        ``authorizer`` is None when no authorizer is configured; ``auth``
        asks it (or allows everything); ``fence`` guards the requests only
        brokers send."""
        cfg, cache, broker_id = configs.current, self.metadata_cache, self.broker_id
        known_cluster_id = self.cluster_id  # read from ZooKeeper before the handlers are built
        cluster_id = lambda: known_cluster_id  # noqa: E731
        admin = AdminManager(zk, configs.log_defaults, lambda: {b.id: b.rack for b in cache.alive_brokers()},
                             cfg["num.partitions"], cfg["default.replication.factor"])
        repo = ConfigRepository(zk, self.static_config)
        quota_admin, scram_admin = ClientQuotaAdmin(zk), ScramCredentialAdmin(zk)

        # The coordinators (kavka.group, kavka.transaction) with their
        # internal topics: logs through the replica manager, created on first use.
        producer_ids = ProducerIdManager(broker_id, lambda b: zk.claim_producer_id_block(b))
        self.marker_writer = markers = BrokerMarkerWriter(cache, cfg.inter_broker_listener_name,
                                                          request_timeout_ms=max(cfg["request.timeout.ms"], 1),
                                                          security=self.inter_broker_security)
        txns = TransactionCoordinator(
            broker_id, TransactionConfig.from_broker(cfg),
            InternalTopicLog(rm, TRANSACTION_STATE_TOPIC, TRANSACTION_APPEND_TIMEOUT_MS,
                             cfg["transaction.state.log.load.buffer.size"]),
            markers,
            producer_ids.generate_producer_id)
        def consumer_topics() -> dict[str, TopicMetadata]:
            # what the server-side assignors of consumer groups (KIP-848) see:
            # topics with an id (assignments name topics by id, KIP-516)
            return {t: TopicMetadata(tid, len(cache.topic_partitions(t))) for t in cache.topics()
                    if (tid := cache.topic_id(t)) != ZERO_UUID}

        groups = GroupCoordinator(broker_id, GroupConfig.from_broker(cfg), InternalTopicLog(
            rm, GROUP_METADATA_TOPIC, cfg["offsets.commit.timeout.ms"], cfg["offsets.load.buffer.size"]),
            ConsumerGroupConfig.from_broker(cfg), consumer_topics)
        self.group_coordinator, self.txn_coordinator = groups, txns
        offsets_topic = InternalTopic(InternalTopicSettings.consumer_offsets(cfg), groups.partition_of, cache, admin)
        txn_topic = InternalTopic(InternalTopicSettings.transaction_state(cfg), txns.partition_of, cache, admin)
        leadership = CoordinatorLeadership(broker_id, {GROUP_METADATA_TOPIC: groups, TRANSACTION_STATE_TOPIC: txns})
        # A broker whose ZooKeeper session may be gone stops leading and
        # coordinating until it knows who leads (see the module).
        self.session_fencing = ZkSessionFencing(
            zk.store, ZkSessionFence.for_session_timeout(cfg["zookeeper.session.timeout.ms"]), rm, leadership)
        self.session_fencing.start()
        rm.add_leadership_listener(leadership.stopped_leading)

        def metadata_updated(update: MetadataUpdate) -> None:
            # Delayed fetches may wait on a partition whose leader moved;
            # offsets of deleted partitions go (Kafka's handleDeletedPartitions).
            for t, p in (*update.updated, *update.deleted):
                rm.complete_delayed_requests(TopicPartition(t, p))
            groups.partitions_deleted(list(update.deleted))

        auto_create = admin.auto_create if cfg["auto.create.topics.enable"] else None
        quotas = self.quotas
        fetch_sessions = FetchManager.for_request_size(
            FetchSessionCache(cfg["max.incremental.fetch.session.cache.slots"]), SystemClock(),
            cfg["socket.request.max.bytes"])
        self.fetch_sessions = fetch_sessions
        fetch_handler = fetch.FetchHandler(rm, cache, quotas.fetch, auth, fence, fetch_sessions)
        handlers: dict[int, Handler] = {
            # data path (kavka.replication)
            produce.API_KEY: produce.ProduceHandler(rm, cache, quotas.produce, auth),
            fetch.API_KEY: fetch_handler,
            list_offsets.API_KEY: list_offsets.ListOffsetsHandler(rm, auth),
            offset_for_leader_epoch.API_KEY: offset_for_leader_epoch.OffsetForLeaderEpochHandler(rm, auth),
            delete_records.API_KEY: delete_records.DeleteRecordsHandler(rm, auth),
            describe_log_dirs.API_KEY: describe_log_dirs.DescribeLogDirsHandler(log_manager, auth),
            describe_producers.API_KEY: describe_producers.DescribeProducersHandler(rm, cache, auth),
            # metadata and administration
            metadata.API_KEY: metadata.MetadataHandler(cache, cluster_id, auto_create, auth),
            describe_cluster.API_KEY: describe_cluster.DescribeClusterHandler(cache, cluster_id, auth),
            describe_topic_partitions.API_KEY: describe_topic_partitions.DescribeTopicPartitionsHandler(
                cache, auth, cfg["max.request.partition.size.limit"]),
            create_topics.API_KEY: create_topics.CreateTopicsHandler(admin, cache, quotas.controller_mutation, auth),
            delete_topics.API_KEY: delete_topics.DeleteTopicsHandler(admin, cache, cfg["delete.topic.enable"],
                                                                     quotas.controller_mutation, auth),
            create_partitions.API_KEY: create_partitions.CreatePartitionsHandler(admin, cache,
                                                                                 quotas.controller_mutation, auth),
            describe_configs.API_KEY: describe_configs.DescribeConfigsHandler(repo, cache, auth),
            alter_configs.API_KEY: alter_configs.AlterConfigsHandler(repo, cache, auth),
            incremental_alter_configs.API_KEY: incremental_alter_configs.IncrementalAlterConfigsHandler(
                repo, cache, auth),
            # users and client ids: quotas (KIP-546) and SCRAM credentials (KIP-554)
            describe_client_quotas.API_KEY: describe_client_quotas.DescribeClientQuotasHandler(quota_admin, auth),
            alter_client_quotas.API_KEY: alter_client_quotas.AlterClientQuotasHandler(quota_admin, auth),
            describe_user_scram_credentials.API_KEY:
                describe_user_scram_credentials.DescribeUserScramCredentialsHandler(scram_admin, auth),
            alter_user_scram_credentials.API_KEY:
                alter_user_scram_credentials.AlterUserScramCredentialsHandler(scram_admin, auth),
            # ACLs (KIP-140)
            describe_acls.API_KEY: describe_acls.DescribeAclsHandler(authorizer),
            create_acls.API_KEY: create_acls.CreateAclsHandler(authorizer, acls),
            delete_acls.API_KEY: delete_acls.DeleteAclsHandler(authorizer, acls),
            # from the controller (seed 000)
            leader_and_isr.API_KEY: leader_and_isr.LeaderAndIsrHandler(
                rm, configs.ensure_topic_config, fence, leadership.leadership_changed),
            update_metadata.API_KEY: update_metadata.UpdateMetadataHandler(cache, fence, metadata_updated),
            stop_replica.API_KEY: stop_replica.StopReplicaHandler(rm, fence, leadership.replicas_stopped),
            # to the controller
            controlled_shutdown.API_KEY: controlled_shutdown.ControlledShutdownHandler(controller, auth),
            elect_leaders.API_KEY: elect_leaders.ElectLeadersHandler(controller, cache, auth),
            alter_partition_reassignments.API_KEY:
                alter_partition_reassignments.AlterPartitionReassignmentsHandler(controller, auth),
            list_partition_reassignments.API_KEY:
                list_partition_reassignments.ListPartitionReassignmentsHandler(controller, auth),
            # the group coordinator (kavka.group)
            find_coordinator.API_KEY: find_coordinator.FindCoordinatorHandler(offsets_topic, txn_topic, auth),
            join_group.API_KEY: join_group.JoinGroupHandler(groups, auth),
            sync_group.API_KEY: sync_group.SyncGroupHandler(groups, auth),
            heartbeat.API_KEY: heartbeat.HeartbeatHandler(groups, auth),
            consumer_group_heartbeat.API_KEY: consumer_group_heartbeat.ConsumerGroupHeartbeatHandler(groups, auth),
            consumer_group_describe.API_KEY:
                consumer_group_describe.ConsumerGroupDescribeHandler(groups, cache, auth),
            leave_group.API_KEY: leave_group.LeaveGroupHandler(groups, auth),
            offset_commit.API_KEY: offset_commit.OffsetCommitHandler(groups, cache, auth),
            offset_fetch.API_KEY: offset_fetch.OffsetFetchHandler(groups, auth),
            describe_groups.API_KEY: describe_groups.DescribeGroupsHandler(groups, auth),
            list_groups.API_KEY: list_groups.ListGroupsHandler(groups, auth),
            # SASL outside the authentication phase (the authenticator answers during it)
            sasl_handshake.API_KEY: sasl_handshake.SaslHandshakeHandler(),
            sasl_authenticate.API_KEY: sasl_authenticate.SaslAuthenticateHandler(),
            delete_groups.API_KEY: delete_groups.DeleteGroupsHandler(groups, auth),
            offset_delete.API_KEY: offset_delete.OffsetDeleteHandler(groups, auth),
            # the transaction coordinator (kavka.transaction, KIP-98)
            init_producer_id.API_KEY: init_producer_id.InitProducerIdHandler(producer_ids, txns, auth),
            add_partitions_to_txn.API_KEY: add_partitions_to_txn.AddPartitionsToTxnHandler(txns, cache, auth),
            add_offsets_to_txn.API_KEY: add_offsets_to_txn.AddOffsetsToTxnHandler(txns, groups, auth),
            end_txn.API_KEY: end_txn.EndTxnHandler(txns, auth),
            txn_offset_commit.API_KEY: txn_offset_commit.TxnOffsetCommitHandler(groups, cache, auth),
            # operators' view of the transactions (KIP-664)
            describe_transactions.API_KEY: describe_transactions.DescribeTransactionsHandler(txns, auth),
            list_transactions.API_KEY: list_transactions.ListTransactionsHandler(txns, auth),
            write_txn_markers.API_KEY: write_txn_markers.WriteTxnMarkersHandler(
                rm, lambda: int(time.time() * 1000), groups.complete_txn_offsets, auth),
        }
        # KIP-219: every response carries its throttle time and a throttled
        # connection is muted; request_percentage charges each handler's time.
        return {key: ThrottlingHandler(h, key, quotas.request,
                                       fetch_handler.without_data if key == fetch.API_KEY else None,
                                       self.throttle_times)
                for key, h in handlers.items()}

    def _start_metrics(self, cfg: KafkaConfig, store: KazooZkStore, log_manager: LogManager, rm: ReplicaManager,
                       controller: KafkaController) -> None:
        """The Prometheus endpoint (``metrics.port``): the collectors over
        the components they read, served on a thread by ``MetricsExporter``."""
        assert self.request_metrics is not None and self.throttle_times is not None
        assert self.group_coordinator is not None
        registry = CollectorRegistry()
        self.loop_monitor = monitor = EventLoopMonitor(registry)
        monitor.start()
        servers = self.socket_servers

        def end_offset(tp: TopicPartition) -> int | None:
            partition = rm.get_partition(tp)
            return partition.log.high_watermark if partition is not None else None

        self.lag_admin = lag_admin = EndOffsetsClient(self.metadata_cache, self.broker_id,
                                                      cfg.inter_broker_listener_name, self.inter_broker_security)

        collectors = [
            ReplicaManagerMetrics(rm),
            FetchSessionCacheMetrics(self.fetch_sessions.cache),
            BrokerTopicMetricsCollector(rm.topic_stats),
            LogMetrics(log_manager, LOG_FLUSH_STATS),
            ControllerMetrics(controller),
            RequestMetricsCollector(self.request_metrics),
            SocketServerMetrics(lambda: {s.listener_name: len(s.connections) for s in servers}, monitor),
            QuotaMetrics(self.throttle_times),
            ZooKeeperMetrics(store),
            ConsumerGroupMetrics(self.group_coordinator, end_offset, lag_admin.end_offsets),
        ]
        self.metrics_exporter = exporter = MetricsExporter(registry, collectors)
        try:
            host, port = exporter.start(cfg["metrics.host"], cfg["metrics.port"])
        except OSError as e:
            raise OSError(e.errno, f"cannot serve metrics on metrics.host={cfg['metrics.host']!r} "
                                   f"metrics.port={cfg['metrics.port']}: {e.strerror}") from e
        log.info("broker %d serves metrics on http://%s:%d/metrics", self.broker_id, host or "0.0.0.0", port)

    async def _warn_if_registration_held(self, store: KazooZkStore, wait_s: float) -> None:
        """Say why startup pauses when ``/brokers/ids/<id>`` is already there."""
        path = BrokerIdZNode.path(self.broker_id)
        stat = await store.exists(path)
        if stat is not None and stat.ephemeral_owner != store.session_id:
            log.warning("%s is held by ZooKeeper session %#x, not ours: an earlier run of broker %d whose session "
                        "has not expired yet, or another broker with broker.id=%d; waiting up to %.0f s for it to go",
                        path, stat.ephemeral_owner, self.broker_id, self.broker_id, wait_s)

    def _in_background(self, work, what: str) -> None:
        """Run ``work`` (a coroutine) as a task the broker holds and awaits
        at shutdown; a failure is logged."""
        async def run() -> None:
            try:
                await work
            except Exception:
                log.exception("%s failed", what)

        task = asyncio.get_running_loop().create_task(run(), name=what)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def _registration(self) -> BrokerIdZNode:
        return BrokerIdZNode(self.broker_id, tuple(self.config.advertised_listeners),
                             rack=self.config["broker.rack"], timestamp_ms=int(time.time() * 1000))

    def broker_epoch(self) -> int:
        epoch = self._registered_epoch()
        return -1 if epoch is None else epoch

    def _registered_epoch(self) -> int | None:
        """This broker's registration czxid (KIP-380), None while unregistered."""
        return self.registrar.broker_epoch if self.registrar is not None else None

    async def _delete_unassigned_logs(self, zk: KavkaZkClient, log_manager: LogManager) -> None:
        """Seed 001 #5: partitions this broker holds but no longer hosts
        (their topic was deleted, or they moved away while it was down)."""
        local = log_manager.all_logs()
        if not local:
            return
        topics = {tp.topic for tp in local}
        assignments = await zk.get_topics_assignments(topics)
        for tp in local:
            node = assignments.get(tp.topic)
            replicas = node.partitions.get(tp.partition, ()) if node is not None else ()
            if self.broker_id not in replicas:
                log.warning("deleting local log of %s: not assigned to broker %d any more", tp, self.broker_id)
                await asyncio.to_thread(log_manager.delete_log, tp.topic, tp.partition)

    # -- shutdown -------------------------------------------------------------
    async def shutdown(self) -> None:
        log.info("shutting down broker %d", self.broker_id)
        # Only a registered broker can have leaderships to move, and only its
        # epoch can ask (KIP-380): one stopped while waiting to register (its
        # id held by another session) leaves that other broker alone.
        if (self.config["controlled.shutdown.enable"] and self.zk is not None
                and self._registered_epoch() is not None):
            await _quietly(ControlledShutdownClient(self.broker_id, self.broker_epoch, self.zk, self.metadata_cache,
                                                    ControlledShutdownSettings.from_kafka_config(self.config),
                                                    self.inter_broker_security).run(),
                           "controlled shutdown")
        if self.scheduler is not None:
            # no periodic job starts any more; a running one ends first
            await asyncio.to_thread(self.scheduler.shutdown)
        if self.metrics_exporter is not None:
            await _quietly(self.metrics_exporter.stop(), "metrics endpoint")
        if self.loop_monitor is not None:
            self.loop_monitor.stop()
        if self.lag_admin is not None:
            await _quietly(self.lag_admin.close(), "consumer lag client")
        if self.controller is not None:
            await _quietly(self.controller.stop(), "controller")
        for server in self.socket_servers:
            await _quietly(server.stop(), "socket server")
        if self.dynamic_config is not None:
            self.dynamic_config.stop()
        # a reconfiguration in flight ends before the parts it touches stop
        await asyncio.gather(*self._background, return_exceptions=True)
        if self.acl_manager is not None:
            self.acl_manager.stop()
        if self.controller_view is not None:
            self.controller_view.close()
        if self.broker_epochs is not None:
            self.broker_epochs.close()
        if self.marker_writer is not None:
            self.marker_writer.close()
        if self.replica_manager is not None:
            await _quietly(self.replica_manager.fetcher_manager.shutdown(), "replica fetchers")
            await _quietly(self.replica_manager.shutdown(), "replica manager")
        if self.registrar is not None:
            await _quietly(self.registrar.stop(), "registration")
        if self.log_manager is not None:
            await asyncio.to_thread(self.log_manager.shutdown)
        if self.session_fencing is not None:
            self.session_fencing.stop()
        if self.store is not None:
            await _quietly(self.store.close(), "ZooKeeper session")
        log.info("broker %d shut down", self.broker_id)


def _inter_broker_protocol(cfg: KafkaConfig) -> str:
    """The security protocol of the inter-broker listener. Where it is SASL,
    brokers authenticate to each other, and a follower must have (an SSL
    listener may not ask for client certificates: there the broker epoch
    stays the proof)."""
    for ep in cfg.listeners:
        if ep.listener_name == cfg.inter_broker_listener_name:
            return ep.security_protocol
    return "PLAINTEXT"


async def _children(store: KazooZkStore, path: str) -> list[str]:
    try:
        return await store.get_children(path)
    except NoNodeError:
        return []


async def _quietly(awaitable, what: str) -> None:
    try:
        await awaitable
    except Exception:
        log.exception("stopping the %s failed", what)


async def _connection_quota_config(config: KafkaConfig) -> ConnectionQuotaConfig:
    """The connection limits of ``config`` (host names of
    max.connections.per.ip.overrides resolved in a thread, off the loop)."""
    return await asyncio.to_thread(ConnectionQuotaConfig.from_broker, config, config.listener_overrides,
                                   config.inter_broker_listener_name)
