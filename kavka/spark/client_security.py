"""The security settings of the ``kafka.*`` options (``kafka.security.protocol``,
``kafka.sasl.*``, ``kafka.ssl.*``, in the Java client's names as Spark's
Kafka source documents them, or librdkafka's), for the two clients the
data source uses: Kavka's own (the reader, offset lookups, the sink's
commit log) and librdkafka (the sink's producer).

``kavka.spark.options`` picks those keys out of the option pairs
(``security_settings``) and checks them once on the driver, so that a bad
setting fails the query at planning time; ``security_for`` builds (and caches per process: an executor task must not re-read the
keystore for every partition) the ``ClientSecurity`` of Kavka's client;
``librdkafka_settings`` translates them for confluent-kafka.

Any process (driver or executor); ``security_for`` may be called from any
thread (the cache is thread-safe).
"""

from __future__ import annotations

import functools

from kavka.security.client_properties import client_security_from_properties, librdkafka_security_config
from kavka.security.client_security import ClientSecurity
from kavka.spark.options import SECURITY_OPTIONS_SOURCE, KavkaOptionError, Settings


@functools.lru_cache(maxsize=16)
def security_for(settings: Settings) -> ClientSecurity:
    """The ``ClientSecurity`` of Kavka's client for ``settings``; raises
    ``KavkaOptionError`` naming the option."""
    try:
        return client_security_from_properties(dict(settings), SECURITY_OPTIONS_SOURCE)
    except ValueError as e:
        raise KavkaOptionError(str(e)) from None


def librdkafka_settings(settings: Settings) -> dict[str, str]:
    """``settings`` in librdkafka's names (for the sink's producer)."""
    if not settings:
        return {}
    try:
        return librdkafka_security_config(dict(settings), SECURITY_OPTIONS_SOURCE)
    except ValueError as e:
        raise KavkaOptionError(str(e)) from None
