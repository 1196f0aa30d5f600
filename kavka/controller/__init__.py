"""The controller (seeds 000, 001): one broker elected through ``/controller``
decides leadership for every partition and tells brokers over the Kafka
protocol.

Pure cores, no I/O: ``context`` (cluster state and value types),
``partition_state`` and ``replica_state`` (state machines' states and
transition rules), ``election`` (leader election functions),
``assignment`` (replica placement), ``rebalance`` (preferred-leader
imbalance). On ZooKeeper only: ``elector`` (competing for ``/controller``).
"""
