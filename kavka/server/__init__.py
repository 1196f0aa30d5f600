"""The broker: the asyncio listener, the request handlers and the broker's
lifecycle, over the replication, controller, group and transaction layers.

- ``broker``: ``KafkaServer`` — startup and shutdown in order, and the
  composition root: every coordinator, service and API handler is built
  there with the collaborators it uses;
- ``main``: ``kavka server start`` (one broker in the foreground);
- ``network``: socket server, per-connection request ordering, the
  ``Dispatcher`` (API key -> handler and served versions);
- ``frame_receiver``: ``FrameReceiver``, a connection's frames read into
  buffers granted before they are used;
- ``memory_pool``: ``MemoryPool``, the budget of requests held in memory
  (``queued.max.request.bytes``) and of requests read ahead
  (``queued.max.requests``);
- ``connection_quotas``: ``ConnectionQuotas``, the connection limits
  (``max.connections``, per listener and per address, creation rates,
  KIP-612's per-address ``connection_creation_rate``);
- ``channel_builder``: each listener's security (Kafka's ChannelBuilders):
  its TLS context, its SASL setup, who a connection is (``Session``), and
  the inter-broker principal;
- ``tls_acceptor``: a TLS listener's accept loop; every handshake completes
  (or fails, logged with the peer) before the Kafka connection exists;
- ``authenticator``: ``SaslServerAuthenticator``, the authentication phase
  of a SASL connection (KIP-152 SaslHandshake/SaslAuthenticate, v0 raw
  tokens, KIP-368 session expiry and re-authentication);
- ``handler_table``: which handler module serves which API key;
- ``handlers``: one module per API (see its package docstring);
- ``metadata_cache``: live brokers and partition leadership from the
  controller's UpdateMetadata;
- ``admin_manager``: topic creation, partition addition and deletion
  through ZooKeeper (seed 000 §创建 / 删除 Topic);
- ``config_repository``: effective configs with sources and synonyms, and
  validated changes (DescribeConfigs, AlterConfigs, IncrementalAlterConfigs);
- ``dynamic_config``: ``BrokerConfigs`` (the effective broker config and
  the topics' log configs) and ``DynamicConfigManager``, which applies
  ``/config/changes`` on every broker (seed 002 §8);
- ``quota_config_handler``: what a broker does with ``/config/users``,
  ``/config/clients`` and ``/config/ips``: the client quotas, the SCRAM
  credential cache and the per-address connection rates;
- ``client_quota_admin``, ``scram_admin``: client quotas and SCRAM
  credentials read and written in ZooKeeper (DescribeClientQuotas,
  AlterClientQuotas, Describe/AlterUserScramCredentials);
- ``throttling``: KIP-219 — ``ThrottlingHandler`` around every API charges
  request_percentage, answers ``throttle_time_ms`` and mutes the connection;
- ``internal_topic``: ``__consumer_offsets`` and ``__transaction_state`` seen
  from the broker — log seam, coordinator lookup with creation on first use,
  leadership moving the coordinators' partitions;
- ``txn_markers``: ``BrokerMarkerWriter``, WriteTxnMarkers to partition
  leaders for the transaction coordinator;
- ``acl_manager``: ``AclManager``, the ZooKeeper half of Kafka's
  AclAuthorizer: loads every ACL into the broker's ``AclAuthorizer``
  cache, follows the ACL change notifications, and stores what CreateAcls
  and DeleteAcls change;
- ``authorization``: ``AuthHelper``, how every handler asks the
  authorizer (batched per resource, KIP-430 authorized-operations bit
  fields, KIP-679's check by resource type; everything allowed without
  ``authorizer.class.name``);
- ``inter_broker_fence``: ``InterBrokerFence``, who may send the requests
  only brokers send — CLUSTER_ACTION, this broker's epoch (KIP-380) and a
  controller epoch ZooKeeper confirms for LeaderAndIsr, UpdateMetadata and
  StopReplica; a follower's replica id proven by authentication or its
  broker epoch (KIP-903) — with or without an authorizer;
- ``io_threads``: ``IoThreadPool``, the threads of the broker's blocking
  work, sized by ``num.io.threads``;
- ``scheduler``: ``KafkaScheduler``, the ``background.threads`` threads
  running the log manager's periodic jobs;
- ``ignored_configs``: ``IgnoredConfigs``, the Kafka keys that do nothing
  here (num.network.threads, sasl.kerberos.*, log.message.format.version
  below 3.0), logged once as ignored;
- ``producer_id_manager``: producer id blocks claimed in ZooKeeper;
- ``zk_session_fence``: ``ZkSessionFence``, a broker whose ZooKeeper
  session may be gone stops leading partitions and coordinating groups and
  transactions until the same session is back or the controller says who
  leads;
- ``controlled_shutdown``: the broker's side of a controlled shutdown.
"""
