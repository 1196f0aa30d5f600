"""Kavka's own small asyncio Kafka client, used between brokers (the
controller's channel, follower fetchers) and by the command-line tools.

It speaks the Kafka protocol through ``kavka.protocol`` only (layering:
``kavka.client`` imports ``kavka.common``, ``kavka.protocol`` and
``kavka.security`` for TLS and SASL), so it works against Kavka and any
Kafka-compatible broker.

Modules:
    ``connection``  ``BrokerConnection``: one socket (TLS when its
                    ``ClientSecurity`` says), KIP-511 ApiVersions
                    handshake, per-API version negotiation, pipelined
                    requests matched by correlation id, timeouts;
                    responses received straight into their buffers
                    (``kavka.protocol.framing.FrameReader``), buffers
                    handed on between the process's connections
                    (``RESPONSE_BUFFERS``).
    ``sasl_authenticator``  the SASL exchange after ApiVersions
                    (SaslHandshake v1, SaslAuthenticate) and KIP-368's
                    re-authentication point; imported by the connections
                    that authenticate.
    ``cluster``     ``Cluster``: bootstrap, Metadata, leader lookup, one
                    connection per node, ``call`` with retries and backoff.
    ``metadata``    immutable snapshots: ``ClusterMetadata``,
                    ``TopicMetadata``, ``PartitionMetadata``, ... (keyed
                    by ``kavka.common``'s ``TopicPartition``)
    ``admin``       ``KafkaAdmin``: topics, partitions, configs, offsets,
                    delete records, describe cluster, the transaction
                    tools of KIP-664 (values in
                    ``admin_types``; wire building in ``admin_requests``).
    ``group_admin`` ``GroupAdmin``: list, describe, committed offsets,
                    offsets of a member-less group, delete (consumer
                    groups, through their coordinator).
    ``consumer_protocol``  the Subscription and Assignment bytes of the
                    consumer protocol (what DescribeGroups returns opaque).
    ``replica_admin``  ``ReplicaAdmin``: DescribeLogDirs, partition
                    reassignments (KIP-455) and ElectLeaders.
    ``producer``    ``Producer``: per-partition batches, acks, Kafka's
                    murmur2 key partitioning (``partitioner``).
    ``consumer``    ``Consumer``: assign/seek/poll, follows leader changes;
                    transaction markers on request.
    ``errors``      ``ConnectionClosed``, ``ConnectFailed``,
                    ``RequestTimedOut``, ``UnsupportedVersion``,
                    ``NoBrokersAvailable``, ``AuthenticationFailed`` (broker error codes are
                    ``kavka.common.errors`` exceptions).

Everything runs on one asyncio event loop; nothing here is thread-safe.
"""
