"""What a broker does with a user's, a client id's or an address's configs
(Kafka's UserConfigHandler, ClientIdConfigHandler, QuotaConfigHandler and
IpConfigHandler).

The ``DynamicConfigManager`` hands every ``/config/users/...`` and
``/config/clients/...`` entity here, at startup and on each change
notification:

- the quota keys (``producer_byte_rate``, ``consumer_byte_rate``,
  ``request_percentage``, ``controller_mutation_rate``) become the
  entity's quotas in the broker's ``QuotaManagers`` (a key that is absent
  removes that quota);
- on ``/config/users/<user>`` (a named user, not a user's client id nor
  ``<default>``), the ``SCRAM-SHA-*`` keys replace the user's credentials in
  the ``ScramCredentialCache`` the SASL servers read.

``IpConfigHandler`` takes ``/config/ips/<ip>`` and ``/config/ips/<default>``:
their ``connection_creation_rate`` (KIP-612) becomes the address's (or
every address's default) connection rate quota in the broker's
``ConnectionQuotas``; an absent key removes it.

A value that does not parse is logged with its entity and key and leaves
that quota unset; the entity's other keys still apply.

Event loop only.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from kavka.security.quota.entity import (
    DEFAULT,
    IP_CONNECTION_RATE,
    QUOTA_CONFIGS,
    ClientQuotaEntity,
    parse_ip_connection_rate,
    parse_quota_value,
)
from kavka.security.quota.manager import QuotaManagers
from kavka.security.sasl.credential_cache import ScramCredentialCache
from kavka.server.connection_quotas import ConnectionQuotas
from kavka.server.dynamic_config import EntityHandler

log = logging.getLogger("kavka.dynamic_config")


class QuotaConfigHandler:
    """See the module docstring."""

    def __init__(self, quotas: QuotaManagers, credentials: ScramCredentialCache) -> None:
        self.quotas = quotas
        self.credentials = credentials

    def handlers(self) -> dict[str, EntityHandler]:
        """The entity handlers of the ``DynamicConfigManager``."""
        return {"users": self.apply_user_config, "clients": self.apply_client_config}

    def apply_user_config(self, name: str, config: Mapping[str, str]) -> None:
        entity = self._entity("users", name)
        if entity is None:
            return
        if entity.client_id is None and isinstance(entity.user, str):
            self.credentials.update_user(entity.user, config)
        self._update_quotas(entity, config)

    def apply_client_config(self, name: str, config: Mapping[str, str]) -> None:
        entity = self._entity("clients", name)
        if entity is not None:
            self._update_quotas(entity, config)

    @staticmethod
    def _entity(entity_type: str, name: str) -> ClientQuotaEntity | None:
        try:
            return ClientQuotaEntity.from_zk(entity_type, name)
        except ValueError as e:
            log.error("ignoring /config/%s/%s: %s", entity_type, name, e)
            return None

    def _update_quotas(self, entity: ClientQuotaEntity, config: Mapping[str, str]) -> None:
        for key, quota_type in QUOTA_CONFIGS.items():
            value: float | None = None
            text = config.get(key)
            if text is not None:
                try:
                    value = parse_quota_value(key, text)
                except ValueError as e:
                    log.error("ignoring the quota of %s: %s", entity, e)
            self.quotas.update_quota(entity, quota_type, value)



class IpConfigHandler:
    """``/config/ips``: each address's connection rate quota (see the
    module docstring)."""

    def __init__(self, connection_quotas: ConnectionQuotas) -> None:
        self.connection_quotas = connection_quotas

    def handlers(self) -> dict[str, EntityHandler]:
        """The entity handlers of the ``DynamicConfigManager``."""
        return {"ips": self.apply_ip_config}

    def apply_ip_config(self, name: str, config: Mapping[str, str]) -> None:
        try:
            entity = ClientQuotaEntity.from_zk("ips", name)
        except ValueError as e:
            log.error("ignoring /config/ips/%s: %s", name, e)
            return
        rate: int | None = None
        text = config.get(IP_CONNECTION_RATE)
        if text is not None:
            try:
                rate = parse_ip_connection_rate(text)
            except ValueError as e:
                log.error("ignoring the quota of %s: %s", entity, e)
        ip = None if entity.ip is DEFAULT else str(entity.ip)
        self.connection_quotas.update_ip_connection_rate(ip, rate)
