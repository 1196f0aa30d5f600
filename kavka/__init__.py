"""Kavka: a replicated, partitioned commit log speaking the Kafka protocol.

Packages, bottom layer first (the layers and the import-linter contracts
that enforce them: docs/ARCHITECTURE.md):

* ``common`` — the shared vocabulary: ``TopicPartition``, ``LeaderAndIsr``,
  typed ids and sentinels, ``Clock``, the error-code table, configs.
* ``protocol`` — the sans-IO Kafka wire codec and record batch v2.
* ``security`` — principals and sessions, Kafka's ACL vocabulary, the
  authorizer seam (below both the broker and the client).
* ``storage`` — segments, indexes, the log, recovery, retention,
  compaction, checkpoints, the log manager.
* ``zk`` — the ZooKeeper layout of seed 000, one class per znode, and the
  asyncio-facing store over kazoo.
* ``client`` — Kavka's own asyncio Kafka client (brokers, tools).
* ``replication`` — partitions (ISR, high watermark), the replica manager,
  follower fetchers, the purgatory of delayed produce and fetch.
* ``controller`` — controller election, state machines, leader election,
  reassignment, topic deletion, the channel to brokers.
* ``group`` — the consumer group coordinator and ``__consumer_offsets``.
* ``transaction`` — the transaction coordinator and ``__transaction_state``.
* ``server`` — the broker process: network, dispatcher, API handlers,
  metadata cache, the composition root.
* ``tools`` — the command-line tools; ``spark`` — the PySpark data source.

Modules: ``cli`` (the ``kavka`` command, one sub-command per tool) and
``__main__`` (``python -m kavka``, the same command).
"""
