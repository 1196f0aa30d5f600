"""Chaos testing at the network level: brokers and a ZooKeeper ensemble on
separate hosts (network namespaces on a bridge), the faults a network and
a machine can have, workloads of real clients, and a Jepsen-style checker
of what they saw.

- ``kavka.testing.network``: namespaces, the bridge, directed cuts.
- ``kavka.testing.ensemble``: a three-member ZooKeeper ensemble.
- ``kavka.testing.hosts``: ``HostCluster``, brokers on their own hosts.
"""
