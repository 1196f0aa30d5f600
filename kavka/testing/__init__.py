"""Chaos testing at the network level: brokers and a ZooKeeper ensemble on
separate hosts (network namespaces on a bridge), the faults a network and
a machine can have, workloads of real clients, and a Jepsen-style checker
of what they saw.

- ``kavka.testing.network``: namespaces, the bridge, directed cuts.
- ``kavka.testing.ensemble``: a three-member ZooKeeper ensemble.
- ``kavka.testing.hosts``: ``HostCluster``, brokers on their own hosts.
- ``kavka.testing.spark_cluster``: ``SparkStandalone``, a Spark master and
  workers on hosts of the same network (workers beside brokers).
"""
