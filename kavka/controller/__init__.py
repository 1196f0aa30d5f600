"""The controller (seeds 000, 001): one broker elected through ``/controller``
decides leadership for every partition and tells brokers over the Kafka
protocol.

Pure cores, no I/O: ``context`` (cluster state and the controller's value
types; ``TopicPartition`` and ``LeaderAndIsr`` come from ``kavka.common``),
``partition_state`` and ``replica_state`` (state machines' states and
transition rules), ``election`` (leader election functions),
``assignment`` (replica placement), ``rebalance`` (preferred-leader
imbalance), ``events`` (the event values), ``settings`` (ControllerConfig).

Runtime (one asyncio task per broker, on the broker's loop):

- ``controller.KafkaController``: what a broker embeds — election through
  ``elector``, the single event queue of ``event_manager`` (with
  ``EventWatches``, the one-shot ZooKeeper watches that queue events),
  resignation and re-election; it maps each event to the active epoch's
  reaction;
- ``active.ActiveController``: one epoch's composition root and reactions —
  the failover steps, the ZooKeeper-triggered handlers (brokers, topics,
  partitions, deletions, ISR change notifications, lost watches) and the
  reactions they call;
- ``partition_state_machine`` / ``replica_state_machine``: the transitions'
  effects — fenced, batched ZooKeeper writes through ``leader_isr_update``,
  requests through ``request_batch``;
- ``topic_deletion`` (seed 000 §删除 Topic);
- ``reassignment`` (``PartitionReassigner``: seed 000 §Partition 重新分配
  steps 1-11) with ``reassignment_requests`` (``ReassignmentRequests``:
  ``/admin/reassign_partitions`` and the KIP-455 APIs);
- ``preferred_election`` (``LeaderElections``:
  ``/admin/preferred_replica_election``, ElectLeaders, the auto leader
  rebalance timer);
- ``controlled_shutdown`` (ControlledShutdown's controller side);
- ``channel`` (per-broker queues over the ``BrokerTransport`` seam;
  ``broker_transport`` is the real one over ``kavka.client``);
- ``state_change_log`` (state-change.log lines).

Each helper of an epoch gets the collaborators it uses (context, ZooKeeper
client, claim, batch, state machines), never the ``ActiveController``.
"""
