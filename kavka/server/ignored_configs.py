"""``IgnoredConfigs``: the broker keys Kafka accepts that have no effect in
Kavka, each validated by its ``ConfigDef`` entry and, when given a value
other than its default, logged once as ignored, saying why (Kafka logs the
keys it does not use in the same spirit: AbstractConfig.logUnused).

- ``num.network.threads``: Kafka's network threads own a share of the
  connections each; Kavka serves every connection on one event loop, TLS
  included, so there is no pool to size. Kafka's sample server.properties
  sets it, so refusing it would stop a stock configuration.
- ``sasl.kerberos.*``: Kafka reads them only for a listener that enables
  GSSAPI, which Kavka does not implement (``sasl.enabled.mechanisms``
  refuses it, naming the key); librdkafka's admin tests alter them on a
  broker, as Kafka allows.
- ``log.message.format.version`` below 3.0: deprecated by KIP-724; from
  inter-broker protocol 3.0 Kafka ignores it and writes record format v2,
  as Kavka always does. (The topic-level ``message.format.version`` is
  logged by the log manager, per topic.)

Checked at startup and again after every live change of the broker config
(the keys Kafka takes live are in ``DYNAMIC_BROKER_KEYS``); each
(key, value) is logged once.

Event loop (a ``BrokerConfigs`` listener) or startup.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from kavka.common.broker_config_keys import BROKER_CONFIG, before_3_0

log = logging.getLogger("kavka.server")

_NO_NETWORK_THREADS = ("Kavka serves every connection on one event loop (TLS included), so there are no network "
                       "threads to size")
_NO_GSSAPI = ("no listener can serve GSSAPI, which Kavka does not implement (sasl.enabled.mechanisms refuses it), "
              "so the Kerberos settings tune nothing")
_FORMAT_V2 = ("deprecated (KIP-724): from inter-broker protocol 3.0 Kafka ignores it and writes record format v2, "
              "as Kavka always does")

# key -> why it has no effect
IGNORED_KEYS: Mapping[str, str] = {
    "num.network.threads": _NO_NETWORK_THREADS,
    **{k: _NO_GSSAPI for k in BROKER_CONFIG.names() if k.startswith("sasl.kerberos.")},
    "log.message.format.version": _FORMAT_V2,
}


class IgnoredConfigs:
    """See the module docstring. ``check`` reads a broker config."""

    def __init__(self) -> None:
        self._logged: set[tuple[str, str]] = set()

    def check(self, config: Mapping[str, Any] | Any) -> None:
        """Log each ignored key set to a value other than its default, once
        per value."""
        for key, why in IGNORED_KEYS.items():
            value = config[key]
            default = BROKER_CONFIG.keys[key].default
            if key == "log.message.format.version":
                ignored = value is not None and before_3_0(str(value))
            else:
                ignored = value != _typed_default(key, default)
            shown = _shown(value)
            if ignored and (key, shown) not in self._logged:
                self._logged.add((key, shown))
                log.warning("%s=%s is ignored: %s", key, shown, why)


def _typed_default(key: str, default: Any) -> Any:
    return None if default is None else BROKER_CONFIG.parse_value(key, default, "default")


def _shown(value: Any) -> str:
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    return str(value)
