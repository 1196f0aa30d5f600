"""Client quotas (KIP-13 byte rates, KIP-55 user and client-id entities with
their precedence, KIP-124 request time, KIP-219 throttling, KIP-546 entity
filters, KIP-599 controller mutations), pure: what is measured and how long
a client is throttled. Where the values come from (ZooKeeper) and how a
throttle is applied (the response's ``throttle_time_ms`` and a muted
connection) are the broker's.

Modules:

- ``entity``: ``ClientQuotaEntity``, the quota keys, KIP-55's eight levels.
- ``rate``: ``SampledRate``, ``TokenBucket`` and the throttle-time formula.
- ``manager``: ``ClientQuotaManager`` (produce, fetch, request),
  ``ControllerMutationQuotaManager`` and ``QuotaManagers``.
"""
