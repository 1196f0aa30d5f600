"""The shared vocabulary every layer speaks (docs/ARCHITECTURE.md, "Layers":
the bottom layer; it imports nothing else of Kavka).

Modules:

* ``topic_partition`` — ``TopicPartition``, the one key for a partition in
  the log manager, the replica manager, the controller, the coordinators
  and the client.
* ``leader_and_isr`` — the partition state znode's content as values:
  ``LeaderAndIsr`` (leader, leader epoch, ISR, znode version) and
  ``LeaderIsrAndControllerEpoch``.
* ``ids`` — ``NewType`` ids with Kafka's names (``BrokerId``,
  ``LeaderEpoch``, ``ControllerEpoch``, ``BrokerEpoch``, ``ProducerId``,
  ``ProducerEpoch``) and the -1 sentinels ``NO_LEADER`` / ``NO_EPOCH``
  (and ``NO_PRODUCER_ID`` / ``NO_PRODUCER_EPOCH``).
* ``clock`` — the ``Clock`` seam, ``SystemClock`` and the tests'
  ``ManualClock``.
* ``errors`` — the one ``ErrorCode`` table and the typed exceptions for it.
* ``config`` — ``ConfigDef``: typed configuration keys with Kafka's names;
  ``broker_config_keys`` (every ``server.properties`` key) and
  ``broker_config`` (``KafkaConfig``, parsed and cross-checked).
* ``listeners`` — listener endpoints and ZooKeeper connect strings.
* ``topic_names`` — Kafka's rules for topic names.
* ``sanitizer`` — user and client-id names as they appear in ZooKeeper
  paths (Kafka's Sanitizer).
* ``throttled_replicas`` — the replication-throttle topic settings (KIP-73).
* ``fetch_metadata`` — a Fetch's session id and epoch (KIP-227): the
  sentinels and ``next_epoch``.
* ``loop_slice`` — ``LoopSlice``: long synchronous work on the event loop
  handing the loop a turn every few milliseconds.
"""
