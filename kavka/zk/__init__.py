"""ZooKeeper: one class per znode of seed 000 (path, encode, decode) and an
asyncio-facing store over kazoo (``kavka.zk.store``) behind the ``ZkStore``
protocol, with an in-memory double (``kavka.zk.memory``) for unit tests,
and ``kavka.zk.client.KavkaZkClient``: the typed operations of brokers and
the controller (registration, controller election with epoch fencing,
conditional partition-state writes, notifications, configs), and
``kavka.zk.registration.BrokerRegistrar`` (keeps /brokers/ids/<id> alive
across session expiries).

Modules:

* znodes of seed 000, one class per znode (path, encode, decode):
  ``brokers`` (/brokers/ids, /brokers/topics and the partition state
  znodes), ``controller_nodes`` (/controller, /controller_epoch), ``admin``
  (/admin/...: tools' requests to the controller), ``notifications``
  (sequential change notifications), ``config_nodes``
  (/config/<type>/<name>), ``cluster`` (/cluster/id,
  /latest_producer_id_block, the persistent paths), ``acls`` (Kafka's
  AclAuthorizer znodes: /kafka-acl, /kafka-acl-extended/prefixed and their
  change notifications), ``codec`` (errors naming the path, JSON helpers);
* the store: ``store_types`` (the ``ZkStore`` seam and its value types),
  ``store`` (``KazooZkStore`` over kazoo, callbacks re-posted to the loop),
  ``multi_read`` (ZooKeeper's multiRead request for kazoo), ``memory``
  (the in-memory double);
* typed operations: ``client`` (``KavkaZkClient``: registration,
  controller election, partition state), ``client_admin`` (``AdminZkOps``, its
  requests, notifications, configs and producer-id operations), ``registration``
  (``BrokerRegistrar``), ``acl_store`` (``ZkAclStore``: ACLs read, loaded
  and updated conditionally, changes announced), ``change_listener``
  (``ChangeNotificationListener``: follows a sequential notification queue,
  purging entries older than 15 minutes);
* cached reads for per-request checks: ``cached_node`` (``CachedZnode``: a
  znode kept by a watch, re-read after a sync on demand, paced),
  ``epoch_views`` (``ZkControllerView``: /controller and /controller_epoch;
  ``ZkBrokerEpochs``: the czxid of /brokers/ids/<id>, KIP-380).
"""
