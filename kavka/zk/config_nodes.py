"""Entity config znodes (seed 002 §8; Kafka's ConfigEntityZNode):

- ``/config/topics/<topic>``: topic overrides;
- ``/config/brokers/<id>``, ``/config/brokers/<default>``: dynamic broker configs;
- ``/config/users/<user>``, ``/config/users/<user>/clients/<client-id>``,
  ``/config/clients/<client-id>``, each name possibly ``<default>``: client
  quotas (KIP-55) and, on a user, its SCRAM credentials (KIP-554). Users
  and client ids are sanitized (``kavka.common.sanitizer``).

A writer updates the entity znode, then creates a
``/config/changes/config_change_<seq>`` notification (see notifications.py).
A znode that exists only as the parent of others (``/config/users/alice``
created for ``/config/users/alice/clients/app``) may hold no data: it has
no configs.

Values are strings, as Kafka stores them; the broker parses them with its
``ConfigDef`` when applying them. Pure; any thread.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field as dc_field
from types import MappingProxyType

from kavka.zk.codec import ZnodeDataError, ZnodePathError, build, check_version, dump_json, field, load_json, parse_path
from kavka.zk.notifications import BROKER_DEFAULT_ENTITY, CONFIG_ENTITY_TYPES, check_entity

CONFIG_PATH = "/config"
_ENTITY_RE = re.compile(r"^/config/([^/]+)/([^/]+(?:/clients/[^/]+)?)$")


@dataclass(frozen=True, slots=True)
class ConfigEntityZNode:
    """``/config/<type>/<name>``: config overrides of one entity.

    JSON::

        {"version":1,"config":{"retention.ms":"3600000","cleanup.policy":"compact"}}

    ``entity_type`` is one of ``CONFIG_ENTITY_TYPES``; for brokers the
    name is a broker id or ``<default>`` (the cluster-wide default); for
    users ``<user>`` or ``<user>/clients/<client-id>``. Keys and values are
    strings. Empty data decodes to no configs.
    """

    entity_type: str
    entity_name: str
    config: Mapping[str, str] = dc_field(default_factory=dict)

    def __post_init__(self) -> None:
        check_entity(self.entity_type, self.entity_name)
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in self.config.items()):
            raise ValueError("config keys and values must be strings")
        object.__setattr__(self, "config", MappingProxyType(dict(self.config)))

    @staticmethod
    def path(entity_type: str, entity_name: str) -> str:
        check_entity(entity_type, entity_name)
        return f"{CONFIG_PATH}/{entity_type}/{entity_name}"

    @staticmethod
    def topic_path(topic: str) -> str:
        return ConfigEntityZNode.path("topics", topic)

    @staticmethod
    def broker_path(broker_id: int | None) -> str:
        """``/config/brokers/<id>``, or ``/config/brokers/<default>`` for None."""
        return ConfigEntityZNode.path("brokers", BROKER_DEFAULT_ENTITY if broker_id is None else str(broker_id))

    @staticmethod
    def type_path(entity_type: str) -> str:
        """``/config/<type>``: persistent parent of the entities of a type."""
        if entity_type not in CONFIG_ENTITY_TYPES:
            raise ZnodePathError(f"config entity type {entity_type!r} is not allowed; allowed values: {', '.join(CONFIG_ENTITY_TYPES)}")
        return f"{CONFIG_PATH}/{entity_type}"

    @property
    def znode_path(self) -> str:
        return self.path(self.entity_type, self.entity_name)

    def encode(self) -> bytes:
        return dump_json({"version": 1, "config": dict(self.config)})

    @classmethod
    def decode(cls, data: bytes, path: str) -> ConfigEntityZNode:
        m = parse_path(path, _ENTITY_RE, "/config/<type>/<name>")
        if not data:
            return build(path, lambda: cls(m.group(1), m.group(2), {}))
        doc = load_json(path, data)
        check_version(path, doc, (1,))
        config = field(path, doc, "config", "dict")
        for k, v in config.items():
            if not isinstance(v, str):
                raise ZnodeDataError(path, f"config {k!r} is {v!r}; values are strings")
        return build(path, lambda: cls(m.group(1), m.group(2), config))
