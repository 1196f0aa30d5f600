"""Effective topic and broker configs, with their sources and synonyms, and
validated changes to them (DescribeConfigs, AlterConfigs,
IncrementalAlterConfigs).

Where a value comes from (Kafka's ConfigSource), highest precedence first:

- topic: ``/config/topics/<t>`` (DYNAMIC_TOPIC_CONFIG), then the broker key
  that defaults it (``log.segment.bytes`` for ``segment.bytes``...) set
  dynamically for this broker (DYNAMIC_BROKER_CONFIG) or for all brokers
  (DYNAMIC_DEFAULT_BROKER_CONFIG) or in server.properties
  (STATIC_BROKER_CONFIG), then Kafka's default (DEFAULT_CONFIG);
- broker: ``/config/brokers/<id>``, ``/config/brokers/<default>``,
  server.properties, default.

Changes are validated in full before anything is written (a topic's whole
LogConfig is rebuilt from the new overrides; a broker's dynamic keys go
through ``KafkaConfig.with_dynamic``), then written to the entity znode with
a ``/config/changes`` notification (seed 002 §8), which every broker's
DynamicConfigManager applies.

Runs on the broker's event loop.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kavka.common.broker_config import KafkaConfig, log_defaults
from kavka.common.broker_config_keys import (
    BROKER_CONFIG,
    DYNAMIC_BROKER_KEYS,
    LISTENER_KEYS,
    MECHANISM_KEYS,
    TOPIC_SYNONYMS,
)
from kavka.common.config import NO_DEFAULT, ConfigError, ConfigType
from kavka.common.errors import ErrorCode
from kavka.common.listeners import parse_listener_key
from kavka.storage.log_config import TOPIC_CONFIG_DEF, LogConfig, check_topic_key
from kavka.zk.client import KavkaZkClient

RESOURCE_TOPIC = 2
RESOURCE_BROKER = 4

SOURCE_DYNAMIC_TOPIC = 1
SOURCE_DYNAMIC_BROKER = 2
SOURCE_DYNAMIC_DEFAULT_BROKER = 3
SOURCE_STATIC_BROKER = 4
SOURCE_DEFAULT = 5

_CONFIG_TYPES = {ConfigType.BOOLEAN: 1, ConfigType.STRING: 2, ConfigType.INT: 3, ConfigType.LONG: 5,
                 ConfigType.DOUBLE: 6, ConfigType.LIST: 7, ConfigType.PASSWORD: 9}

OP_SET, OP_DELETE, OP_APPEND, OP_SUBTRACT = 0, 1, 2, 3


@dataclass(frozen=True, slots=True)
class ConfigEntry:
    name: str
    value: str | None
    source: int
    read_only: bool
    sensitive: bool
    config_type: int
    documentation: str | None
    synonyms: tuple[tuple[str, str | None, int], ...]  # (name, value, source)


class ConfigRequestError(Exception):
    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def render(value: Any) -> str | None:
    """A typed config value as Kafka's clients show it."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return str(value)


class ConfigRepository:
    """See the module docstring."""

    def __init__(self, zk: KavkaZkClient, static: KafkaConfig) -> None:
        self.zk = zk
        self.static = static

    async def _broker_layers(self) -> tuple[dict[str, str], dict[str, str]]:
        default = await self.zk.get_entity_config("brokers", "<default>")
        mine = await self.zk.get_entity_config("brokers", str(self.static.broker_id))
        return default, mine

    # -- describe ---------------------------------------------------------
    async def describe_topic(self, topic: str) -> list[ConfigEntry]:
        overrides = await self.zk.get_entity_config("topics", topic)
        default_layer, broker_layer = await self._broker_layers()
        effective = self.static.with_dynamic(default_layer, broker_layer)
        defaults = log_defaults(effective)
        out = []
        for name, key in TOPIC_CONFIG_DEF.keys.items():
            synonyms: list[tuple[str, str | None, int]] = []
            if name in overrides:
                synonyms.append((name, overrides[name], SOURCE_DYNAMIC_TOPIC))
            for broker_key in TOPIC_SYNONYMS.get(name, ()):
                if broker_key in broker_layer:
                    synonyms.append((broker_key, broker_layer[broker_key], SOURCE_DYNAMIC_BROKER))
                if broker_key in default_layer:
                    synonyms.append((broker_key, default_layer[broker_key], SOURCE_DYNAMIC_DEFAULT_BROKER))
                if broker_key in self.static.originals:
                    synonyms.append((broker_key, render(self.static.originals[broker_key]), SOURCE_STATIC_BROKER))
            value: str | None
            if name in overrides:
                value, source = overrides[name], SOURCE_DYNAMIC_TOPIC
            elif name in defaults and synonyms:
                value, source = render(defaults[name]), synonyms[0][2]
            else:
                value, source = render(key.default), SOURCE_DEFAULT
            synonyms.append((name if not TOPIC_SYNONYMS.get(name) else TOPIC_SYNONYMS[name][0],
                             render(key.default), SOURCE_DEFAULT))
            out.append(ConfigEntry(name, value, source, False, key.type is ConfigType.PASSWORD,
                                   _CONFIG_TYPES.get(key.type, 0), key.doc or None, tuple(synonyms)))
        return out

    async def describe_broker(self, name: str) -> list[ConfigEntry]:
        default_layer, broker_layer = await self._broker_layers()
        if name == "":
            broker_layer = {}
        elif name != str(self.static.broker_id):
            raise ConfigRequestError(ErrorCode.INVALID_REQUEST,
                                     f"broker {self.static.broker_id} cannot describe the configs of broker {name!r}; "
                                     "send the request to that broker")
        out = []
        for key_name, key in BROKER_CONFIG.keys.items():
            sensitive = key.type is ConfigType.PASSWORD
            synonyms: list[tuple[str, str | None, int]] = []
            if key_name in broker_layer:
                synonyms.append((key_name, broker_layer[key_name], SOURCE_DYNAMIC_BROKER))
            if key_name in default_layer:
                synonyms.append((key_name, default_layer[key_name], SOURCE_DYNAMIC_DEFAULT_BROKER))
            if key_name in self.static.originals:
                synonyms.append((key_name, render(self.static.originals[key_name]), SOURCE_STATIC_BROKER))
            synonyms.append((key_name, render(key.default), SOURCE_DEFAULT))
            value, source = synonyms[0][1], synonyms[0][2]
            if sensitive:
                value = None
                synonyms = [(n, None, s) for n, _, s in synonyms]
            out.append(ConfigEntry(key_name, value, source, key_name not in DYNAMIC_BROKER_KEYS, sensitive,
                                   _CONFIG_TYPES.get(key.type, 0), key.doc or None, tuple(synonyms)))
        # Per-listener overrides (listener.name.<l>[.<mechanism>].<key>), as
        # Kafka lists the broker's originals: typed and hidden as the key
        # they override (a JAAS config or a keystore password is null).
        for key_name, raw in self.static.originals.items():
            listener_key = parse_listener_key(key_name, LISTENER_KEYS, MECHANISM_KEYS)
            if listener_key is None:
                continue
            base = BROKER_CONFIG.keys[listener_key.key]
            sensitive = base.type is ConfigType.PASSWORD
            value = None if sensitive else render(raw)
            out.append(ConfigEntry(key_name, value, SOURCE_STATIC_BROKER, True, sensitive,
                                   _CONFIG_TYPES.get(base.type, 0), base.doc or None,
                                   ((key_name, value, SOURCE_STATIC_BROKER),)))
        return out

    # -- alter --------------------------------------------------------------
    async def current_overrides(self, resource_type: int, name: str) -> dict[str, str]:
        entity_type, entity = self._entity(resource_type, name)
        return await self.zk.get_entity_config(entity_type, entity)

    def _entity(self, resource_type: int, name: str) -> tuple[str, str]:
        if resource_type == RESOURCE_TOPIC:
            return "topics", name
        if resource_type == RESOURCE_BROKER:
            if name not in ("", str(self.static.broker_id)) and not name.isdigit():
                raise ConfigRequestError(ErrorCode.INVALID_REQUEST, f"broker resource name {name!r} is not a broker id")
            return "brokers", name or "<default>"
        raise ConfigRequestError(ErrorCode.INVALID_REQUEST,
                                 f"resource type {resource_type} is not supported (2 topic, 4 broker)")

    async def alter(self, resource_type: int, name: str, topic_exists: bool,
                    new_overrides: Callable[[dict[str, str]], dict[str, str]],
                    validate_only: bool) -> tuple[ErrorCode, str | None]:
        """One resource of AlterConfigs / IncrementalAlterConfigs: the new
        overrides computed from the current ones, validated whole, written
        (unless ``validate_only``); the resource's error code and message."""
        try:
            if resource_type == RESOURCE_TOPIC and not topic_exists:
                raise ConfigRequestError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {name!r} does not exist")
            current = await self.current_overrides(resource_type, name)
            await self.validate_and_write(resource_type, name, new_overrides(current), validate_only)
        except ConfigRequestError as e:
            return e.code, e.message
        return ErrorCode.NONE, None

    async def validate_and_write(self, resource_type: int, name: str, overrides: Mapping[str, str],
                                 validate_only: bool) -> None:
        """Replace the entity's overrides with ``overrides`` after checking
        that the whole resulting config is valid."""
        entity_type, entity = self._entity(resource_type, name)
        try:
            if entity_type == "topics":
                default_layer, broker_layer = await self._broker_layers()
                defaults = log_defaults(self.static.with_dynamic(default_layer, broker_layer))
                for key in overrides:
                    check_topic_key(key, f"topic {name}")
                LogConfig.from_props({**defaults, **overrides}, source=f"topic {name}")
            else:
                default_layer, broker_layer = await self._broker_layers()
                if entity == "<default>":
                    self.static.with_dynamic(overrides, broker_layer)
                else:
                    self.static.with_dynamic(default_layer, overrides)
        except ConfigError as e:
            raise ConfigRequestError(ErrorCode.INVALID_CONFIG, str(e)) from None
        if not validate_only:
            await self.zk.set_entity_config(entity_type, entity, dict(overrides))


def apply_incremental(current: Mapping[str, str], ops: list[tuple[str, int, str | None]],
                      list_defaults: Mapping[str, str]) -> dict[str, str]:
    """IncrementalAlterConfigs: SET, DELETE, APPEND and SUBTRACT (the last
    two only on the list-typed keys of ``list_defaults``) applied to the
    current overrides. A list key without an override starts from its
    default, as Kafka's ConfigAdminManager.prepareIncrementalConfigs does:
    APPEND compact to a broker's log.cleanup.policy gives "delete,compact",
    and SUBTRACT compact then gives "delete" back."""
    out = dict(current)
    for name, op, value in ops:
        if op == OP_SET:
            if value is None:
                raise ConfigRequestError(ErrorCode.INVALID_CONFIG, f"config {name!r}: SET needs a value")
            out[name] = value
        elif op == OP_DELETE:
            out.pop(name, None)
        elif op in (OP_APPEND, OP_SUBTRACT):
            if name not in list_defaults:
                raise ConfigRequestError(ErrorCode.INVALID_CONFIG,
                                         f"config {name!r} is not a list; APPEND and SUBTRACT need a list-typed key")
            old = out[name] if name in out else list_defaults[name]
            items = [v for v in old.split(",") if v]
            given = [v.strip() for v in (value or "").split(",") if v.strip()]
            if op == OP_APPEND:
                items += [v for v in given if v not in items]
            else:
                items = [v for v in items if v not in given]
            out[name] = ",".join(items)
        else:
            raise ConfigRequestError(ErrorCode.INVALID_REQUEST, f"config {name!r}: unknown operation {op}")
    return out


def _list_defaults(keys: Mapping[str, Any]) -> dict[str, str]:
    """Each list-typed key with its default as a config string ("" for none)."""
    out = {}
    for name, key in keys.items():
        if key.type is ConfigType.LIST:
            default = key.default
            if default is NO_DEFAULT or default is None:
                out[name] = ""
            elif isinstance(default, (list, tuple)):
                out[name] = ",".join(str(v) for v in default)
            else:
                out[name] = str(default)
    return out


# The list-typed keys APPEND and SUBTRACT accept, per resource type, with
# the default each starts from when the resource has no override.
TOPIC_LIST_DEFAULTS = _list_defaults(TOPIC_CONFIG_DEF.keys)
BROKER_LIST_DEFAULTS = _list_defaults(BROKER_CONFIG.keys)


def list_defaults_for(resource_type: int) -> dict[str, str]:
    return TOPIC_LIST_DEFAULTS if resource_type == RESOURCE_TOPIC else BROKER_LIST_DEFAULTS
