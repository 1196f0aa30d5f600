"""The follower side of replication (seed 002 §6.7; seed 000 §Follower 从
Leader Fetch 数据): fetching from each partition's leader, truncating by
leader epoch first (KIP-101/279).

* ``assignments`` — the ``FetcherManager`` seam the replica manager drives,
  ``InitialFetchState``, ``FetcherKey`` and ``FetcherAssignments`` (which
  partitions are followed from which leader, by which fetcher).
* ``manager`` — ``ReplicaFetcherManager``: keeps the assignments and runs
  one ``ReplicaFetcher`` per (source broker, fetcher id).
* ``task`` — ``ReplicaFetcher``: one asyncio task fetching every partition
  followed from one leader (Kafka's ReplicaFetcherThread).
* ``state`` — ``PartitionFetchState`` and ``truncation_offset`` (KIP-279).
* ``config`` — ``ReplicaFetcherConfig`` (the ``replica.fetch.*`` settings).
* ``leader_endpoint`` — the ``LeaderEndPoint`` seam (Fetch,
  OffsetsForLeaderEpoch, ListOffsets as a replica).
* ``remote_leader_endpoint`` — ``RemoteLeaderEndPoint``: it over the Kafka
  wire to the leader's inter-broker listener.
* ``fetch_session_handler`` — ``FetchSessionHandler``: the follower's half
  of an incremental fetch session with one leader (KIP-227): full, then
  incremental requests.

Event loop only.
"""
