"""Client quota entities and their configs (KIP-13, KIP-55, KIP-546, KIP-599).

A quota applies to an entity: a user (the authenticated principal's name,
``ANONYMOUS`` on an unauthenticated listener), a client id, or a user's
client id; any of the names may be the default entity (``<default>``),
which gives every user / client id without its own quota the same one.
An ``ip`` entity (an IP address or the default, never combined with the
others) holds KIP-612's ``connection_creation_rate``, which the broker's
connection quotas apply (``/config/ips/<ip>``).

- ``ClientQuotaEntity``: one entity, as AlterClientQuotas and
  DescribeClientQuotas name it (``user`` and ``client-id`` components, a
  name or ``DEFAULT``), and where ZooKeeper keeps it
  (``/config/users/<user>``, ``/config/users/<user>/clients/<client-id>``,
  ``/config/clients/<client-id>``, names sanitized: ``to_zk``/``from_zk``).
- ``QuotaType`` and ``QUOTA_CONFIGS``: the four quota keys and their types
  (the byte rates are whole numbers, as Kafka's LONG configs).
- ``quota_levels``: KIP-55's eight levels, most specific first, at which a
  request from (user, client id) finds its quota, each with the key of the
  measurement it shares: a quota set for a user alone is shared by all that
  user's client ids, one that names a client id is measured per (user,
  client id) — as Kafka's DefaultQuotaCallback tags its sensors.

Pure values; any thread.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from enum import Enum

from kavka.common.sanitizer import DEFAULT_ENTITY, desanitize, sanitize


class _Default(Enum):
    DEFAULT = DEFAULT_ENTITY

    def __repr__(self) -> str:
        return "DEFAULT"


# The default entity of a component (null on the wire, ``<default>`` in ZooKeeper).
DEFAULT = _Default.DEFAULT
EntityName = str | _Default

USER = "user"
CLIENT_ID = "client-id"
# Sanitized as themselves, and no znode may be named so (Kafka's layout
# cannot hold them either).
UNSTORABLE_NAMES = frozenset({".", ".."})
IP = "ip"
# KIP-612: new connections a second from one address (QuotaConfigs.IP_CONNECTION_RATE_OVERRIDE_CONFIG),
# the one key of an ip entity; an INT.
IP_CONNECTION_RATE = "connection_creation_rate"
IP_CONNECTION_RATE_DOC = "An int representing the upper bound of connections accepted for the specified IP."
INT_MAX = 2**31 - 1


def canonical_ip(text: str) -> str:
    """An IP address as the broker compares it (an IPv4-mapped IPv6
    address as its IPv4 form); ValueError naming it when it is not one.
    (Kafka also takes a host name and resolves it once; Kavka asks for the
    address, so that a quota does not depend on DNS when it is applied.)"""
    try:
        addr = ipaddress.ip_address(text)
    except ValueError:
        raise ValueError(f"{text[:100]} is not a valid IP address") from None
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        return str(addr.ipv4_mapped)
    return str(addr)


class QuotaType(Enum):
    """A quota and its config key."""

    PRODUCE = "producer_byte_rate"
    FETCH = "consumer_byte_rate"
    REQUEST = "request_percentage"
    CONTROLLER_MUTATION = "controller_mutation_rate"

    @property
    def key(self) -> str:
        return self.value

    @property
    def integral(self) -> bool:
        """The byte rates are LONG configs; the others DOUBLE."""
        return self in (QuotaType.PRODUCE, QuotaType.FETCH)


QUOTA_CONFIGS: dict[str, QuotaType] = {t.key: t for t in QuotaType}
QUOTA_DOCS = {
    QuotaType.PRODUCE: "A rate representing the upper bound (bytes/sec) for producer traffic.",
    QuotaType.FETCH: "A rate representing the upper bound (bytes/sec) for consumer traffic.",
    QuotaType.REQUEST: "A percentage representing the upper bound of time spent for processing requests.",
    QuotaType.CONTROLLER_MUTATION: "The rate at which mutations are accepted for the create topics request, "
                                   "the create partitions request and the delete topics request.",
}


def _zk_name(name: EntityName) -> str:
    return DEFAULT_ENTITY if name is DEFAULT else sanitize(name)


def _from_zk_name(name: str) -> EntityName:
    return DEFAULT if name == DEFAULT_ENTITY else desanitize(name)


def _show(name: EntityName) -> str:
    return "<default>" if name is DEFAULT else repr(name)


@dataclass(frozen=True, slots=True)
class ClientQuotaEntity:
    """A user, a client id, or both; or an ip (see the module docstring);
    ``None`` means the component is not part of the entity."""

    user: EntityName | None = None
    client_id: EntityName | None = None
    ip: EntityName | None = None

    def __post_init__(self) -> None:
        if self.ip is not None:
            if self.user is not None or self.client_id is not None:
                raise ValueError("Invalid quota entity combination, IP entity should not be used with "
                                 "user/client ID entity.")
            if isinstance(self.ip, str):
                object.__setattr__(self, "ip", canonical_ip(self.ip))
            return
        if self.user is None and self.client_id is None:
            raise ValueError("a client quota entity names a user, a client id or both, or an ip")
        for what, name in ((USER, self.user), (CLIENT_ID, self.client_id)):
            if isinstance(name, str) and not name:
                raise ValueError(f"Empty {what} not supported")
            if name in UNSTORABLE_NAMES:
                raise ValueError(f"{what} {name!r} cannot be kept in ZooKeeper (a znode cannot be named . or ..)")

    def __str__(self) -> str:
        if self.ip is not None:
            return f"ip {_show(self.ip)}"
        parts = []
        if self.user is not None:
            parts.append(f"user {_show(self.user)}")
        if self.client_id is not None:
            parts.append(f"client-id {_show(self.client_id)}")
        return ", ".join(parts)

    @property
    def is_ip(self) -> bool:
        return self.ip is not None

    def components(self) -> list[tuple[str, str | None]]:
        """The wire form: (entity type, name or None for the default)."""
        out: list[tuple[str, str | None]] = []
        if self.ip is not None:
            out.append((IP, None if self.ip is DEFAULT else self.ip))
        if self.user is not None:
            out.append((USER, None if self.user is DEFAULT else self.user))
        if self.client_id is not None:
            out.append((CLIENT_ID, None if self.client_id is DEFAULT else self.client_id))
        return out

    @classmethod
    def from_components(cls, components: list[tuple[str, str | None]]) -> ClientQuotaEntity:
        """From the wire form. Raises ValueError with Kafka's message for an
        empty entity, an entity type other than user, client-id and ip, a
        type given twice, an empty name, an ip with a user or client id, or
        an ip that is not an IP address."""
        if not components:
            raise ValueError("Invalid empty client quota entity")
        names: dict[str, EntityName] = {}
        for entity_type, name in components:
            if entity_type not in (USER, CLIENT_ID, IP):
                raise ValueError(f"Unhandled client quota entity type: {entity_type[:100]}")
            if entity_type in names:
                raise ValueError(f"Duplicate {entity_type} entity in one client quota entity")
            names[entity_type] = DEFAULT if name is None else name
        return cls(names.get(USER), names.get(CLIENT_ID), names.get(IP))

    def to_zk(self) -> tuple[str, str]:
        """(entity type, entity name) under ``/config``."""
        if self.ip is not None:
            return "ips", DEFAULT_ENTITY if self.ip is DEFAULT else self.ip
        if self.user is None:
            assert self.client_id is not None
            return "clients", _zk_name(self.client_id)
        if self.client_id is None:
            return "users", _zk_name(self.user)
        return "users", f"{_zk_name(self.user)}/clients/{_zk_name(self.client_id)}"

    @classmethod
    def from_zk(cls, entity_type: str, entity_name: str) -> ClientQuotaEntity:
        """The entity of ``/config/<entity_type>/<entity_name>``; ValueError
        for another entity type or a name that is not sanitized."""
        if entity_type == "clients":
            return cls(None, _from_zk_name(entity_name))
        if entity_type == "ips":
            return cls(ip=DEFAULT if entity_name == DEFAULT_ENTITY else entity_name)
        if entity_type != "users":
            raise ValueError(f"/config/{entity_type} holds no client quota entities")
        user, sep, client = entity_name.partition("/clients/")
        return cls(_from_zk_name(user), _from_zk_name(client) if sep else None)


# (user tag, client-id tag): which requests share one measurement.
MetricKey = tuple[str, str]


def quota_levels(user: str, client_id: str) -> tuple[tuple[ClientQuotaEntity, MetricKey], ...]:
    """KIP-55's precedence for a request from ``user`` with ``client_id``,
    most specific first, each with its measurement key."""
    both = (user, client_id)
    return (
        (ClientQuotaEntity(user, client_id), both),
        (ClientQuotaEntity(user, DEFAULT), both),
        (ClientQuotaEntity(user, None), (user, "")),
        (ClientQuotaEntity(DEFAULT, client_id), both),
        (ClientQuotaEntity(DEFAULT, DEFAULT), both),
        (ClientQuotaEntity(DEFAULT, None), (user, "")),
        (ClientQuotaEntity(None, client_id), ("", client_id)),
        (ClientQuotaEntity(None, DEFAULT), ("", client_id)),
    )


def parse_quota_value(key: str, text: str) -> float:
    """A stored quota value (``/config/...`` string) as a number; ValueError
    naming the key for an unknown key, a non-number, a fraction where the
    key is whole, or a negative value."""
    quota_type = QUOTA_CONFIGS.get(key)
    if quota_type is None:
        raise ValueError(f"{key!r} is not a client quota key ({', '.join(QUOTA_CONFIGS)})")
    try:
        value = int(text) if quota_type.integral else float(text)
    except ValueError:
        kind = "a whole number" if quota_type.integral else "a number"
        raise ValueError(f"{key} must be {kind}, got {text[:100]!r}") from None
    if value != value or value < 0 or value == float("inf"):
        raise ValueError(f"{key} must be a finite non-negative number, got {text[:100]!r}")
    return float(value)


def format_quota_value(quota_type: QuotaType, value: float) -> str:
    """How a quota is stored: a whole number for the byte rates (Kafka's
    LONG), the float's shortest form otherwise."""
    return str(int(value)) if quota_type.integral else repr(float(value))


def parse_ip_connection_rate(text: str) -> int:
    """A stored ``connection_creation_rate`` as an int; ValueError naming
    the key for anything but a whole number from 0 to 2^31-1."""
    try:
        value = int(text)
    except ValueError:
        raise ValueError(f"{IP_CONNECTION_RATE} must be an int, got {text[:100]!r}") from None
    if not 0 <= value <= INT_MAX:
        raise ValueError(f"{IP_CONNECTION_RATE} must be between 0 and {INT_MAX}, got {value}")
    return value
