"""Chaos testing at the network level: brokers and a ZooKeeper ensemble on
separate hosts (network namespaces on a bridge), the faults a network and
a machine can have, workloads of real clients, and a Jepsen-style checker
of what they saw.

- ``kavka.testing.network``: namespaces, the bridge, directed cuts.
- ``kavka.testing.ensemble``: a three-member ZooKeeper ensemble.
- ``kavka.testing.hosts``: ``HostCluster``, brokers on their own hosts.
- ``kavka.testing.nemesis``: the faults and their heals.
- ``kavka.testing.schedule``: the seeded schedule of faults and the
  conductor keeping its invariants (faults at a time, exclusive kinds)
  however late a run falls behind it.
- ``kavka.testing.workloads``: real clients recording every send's delivery
  outcome, polls, commits, transactions, and the idempotent producers' own
  log of their epochs and sequences.
- ``kavka.testing.checker``: the history and its Jepsen-style checker.
- ``kavka.testing.duplicates``: why a value is stored twice (the broker's
  fault, or a resend by the client under a new producer epoch).
- ``kavka.testing.zookeeper_history``: ZooKeeper's own transaction logs
  read for committed transactions it lost (a session writing after its
  close).
- ``kavka.testing.chaos``: a whole run (``make chaos``) and its table.
- ``kavka.testing.spark_cluster``: ``SparkStandalone``, a Spark master and
  workers on hosts of the same network (workers beside brokers).
"""
