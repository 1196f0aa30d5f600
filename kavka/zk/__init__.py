"""ZooKeeper: one class per znode of seed 000 (path, encode, decode) and an
asyncio-facing store over kazoo (``kavka.zk.store``) behind the ``ZkStore``
protocol, with an in-memory double (``kavka.zk.memory``) for unit tests,
and ``kavka.zk.client.KavkaZkClient``: the typed operations of brokers and
the controller (registration, controller election with epoch fencing,
conditional partition-state writes, notifications, configs), and
``kavka.zk.registration.BrokerRegistrar`` (keeps /brokers/ids/<id> alive
across session expiries).

Modules: ``brokers`` (/brokers/...), ``controller_nodes`` (/controller,
/controller_epoch), ``admin`` (/admin/...), ``notifications`` (sequential
change notifications), ``config_nodes`` (/config/<type>/<name>), ``cluster``
(/cluster/id, /latest_producer_id_block, persistent paths), ``codec``
(errors and JSON helpers).
"""
