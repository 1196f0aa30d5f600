"""Sequential notification znodes: brokers tell the controller, and admin
tools tell brokers, that something changed.

- ``/isr_change_notification/isr_change_<seq>``: a leader changed ISRs
  (it wrote the partition state znodes itself); the controller re-reads those
  partitions, sends UpdateMetadata, and deletes the notification.
- ``/log_dir_event_notification/log_dir_event_<seq>``: a broker lost a log
  directory; the controller marks its replicas there offline.
- ``/config/changes/config_change_<seq>``: an entity config under
  ``/config/<type>/<name>`` changed; every broker re-reads it (seed 002 §8).

Each is created with the sequential flag on its ``PREFIX``; ZooKeeper
appends a 10-digit counter. Pure; any thread.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from kavka.common.sanitizer import DEFAULT_ENTITY, is_sanitized
from kavka.zk.codec import ZnodeDataError, build, check_id, check_topic, check_version, dump_json, field, load_json

ISR_CHANGE_NOTIFICATION_PATH = "/isr_change_notification"
LOG_DIR_EVENT_NOTIFICATION_PATH = "/log_dir_event_notification"
CONFIG_CHANGES_PATH = "/config/changes"

# Config entity types Kavka keeps under /config/<type>/<name>: topic
# overrides, dynamic broker configs, and the user and client-id entities of
# client quotas and SCRAM credentials (KIP-55, KIP-554).
CONFIG_ENTITY_TYPES = ("topics", "brokers", "users", "clients", "ips")


@dataclass(frozen=True, slots=True)
class IsrChangeNotificationZNode:
    """``/isr_change_notification/isr_change_<seq>``: partitions whose ISR
    the leader changed.

    JSON::

        {"version":1,"partitions":[{"topic":"t","partition":0}]}
    """

    partitions: tuple[tuple[str, int], ...]

    PREFIX = ISR_CHANGE_NOTIFICATION_PATH + "/isr_change_"
    NAME_PREFIX = "isr_change_"

    def __post_init__(self) -> None:
        object.__setattr__(self, "partitions", tuple((t, p) for t, p in self.partitions))
        for topic, partition in self.partitions:
            check_topic(topic)
            check_id("partition", partition)

    @staticmethod
    def path(sequence: int) -> str:
        return f"{IsrChangeNotificationZNode.PREFIX}{sequence:010d}"

    def encode(self) -> bytes:
        return dump_json({"version": 1, "partitions": [{"topic": t, "partition": p} for t, p in self.partitions]})

    @classmethod
    def decode(cls, data: bytes, path: str) -> IsrChangeNotificationZNode:
        doc = load_json(path, data)
        check_version(path, doc, (1,))
        out: list[tuple[str, int]] = []
        for i, entry in enumerate(field(path, doc, "partitions", "list")):
            if not isinstance(entry, dict):
                raise ZnodeDataError(path, f"partitions[{i}] is not an object")
            where = f"partitions[{i}] "
            out.append((field(path, entry, "topic", "str", where=where), field(path, entry, "partition", "int", where=where)))
        return build(path, lambda: cls(tuple(out)))


# Event codes of /log_dir_event_notification (Kafka's LogDirEventNotificationHandler).
LOG_DIR_FAILURE_EVENT = 1


@dataclass(frozen=True, slots=True)
class LogDirEventNotificationZNode:
    """``/log_dir_event_notification/log_dir_event_<seq>``: a broker's log
    directory failed.

    JSON::

        {"version":1,"broker":1,"event":1}

    ``event`` 1 is a log directory failure, the only event defined.
    """

    broker_id: int
    event: int = LOG_DIR_FAILURE_EVENT

    PREFIX = LOG_DIR_EVENT_NOTIFICATION_PATH + "/log_dir_event_"
    NAME_PREFIX = "log_dir_event_"

    def __post_init__(self) -> None:
        check_id("broker id", self.broker_id)
        if self.event != LOG_DIR_FAILURE_EVENT:
            raise ValueError(f"event {self.event} is unknown; the only event is {LOG_DIR_FAILURE_EVENT} (log dir failure)")

    @staticmethod
    def path(sequence: int) -> str:
        return f"{LogDirEventNotificationZNode.PREFIX}{sequence:010d}"

    def encode(self) -> bytes:
        return dump_json({"version": 1, "broker": self.broker_id, "event": self.event})

    @classmethod
    def decode(cls, data: bytes, path: str) -> LogDirEventNotificationZNode:
        doc = load_json(path, data)
        check_version(path, doc, (1,))
        broker = field(path, doc, "broker", "int")
        event = field(path, doc, "event", "int")
        return build(path, lambda: cls(broker, event))


@dataclass(frozen=True, slots=True)
class ConfigChangeNotificationZNode:
    """``/config/changes/config_change_<seq>``: which entity config changed.

    JSON as written (version 2)::

        {"version":2,"entity_path":"topics/my-topic"}

    Version 1 (``{"version":1,"entity_type":"topics","entity_name":"t"}``)
    is accepted when decoding. ``entity_type`` is one of
    ``CONFIG_ENTITY_TYPES``; ``entity_name`` is as ``check_entity`` says
    (for a user's client-id entity, ``users/alice/clients/app`` names type
    ``users`` and name ``alice/clients/app``, as Kafka writes it).
    """

    entity_type: str
    entity_name: str

    PREFIX = CONFIG_CHANGES_PATH + "/config_change_"
    NAME_PREFIX = "config_change_"

    def __post_init__(self) -> None:
        check_entity(self.entity_type, self.entity_name)

    @staticmethod
    def path(sequence: int) -> str:
        return f"{ConfigChangeNotificationZNode.PREFIX}{sequence:010d}"

    @property
    def entity_path(self) -> str:
        return f"{self.entity_type}/{self.entity_name}"

    def encode(self) -> bytes:
        return dump_json({"version": 2, "entity_path": self.entity_path})

    @classmethod
    def decode(cls, data: bytes, path: str) -> ConfigChangeNotificationZNode:
        doc = load_json(path, data)
        version = check_version(path, doc, (1, 2))
        if version == 1:
            entity_type = field(path, doc, "entity_type", "str")
            entity_name = field(path, doc, "entity_name", "str")
        else:
            entity_path = field(path, doc, "entity_path", "str")
            entity_type, sep, entity_name = entity_path.partition("/")
            if not sep:
                raise ZnodeDataError(path, f"field 'entity_path' {entity_path!r} is not <type>/<name>")
        return build(path, lambda: cls(entity_type, entity_name))


BROKER_DEFAULT_ENTITY = DEFAULT_ENTITY
# The child entity type of a user: /config/users/<user>/clients/<client-id>.
USER_CLIENTS_SEPARATOR = "/clients/"


def check_entity(entity_type: str, entity_name: str) -> None:
    """A config entity: ``topics/<topic>``, ``brokers/<id>``,
    ``brokers/<default>``, ``users/<user>``, ``users/<user>/clients/<client-id>``,
    ``clients/<client-id>`` or ``ips/<ip>`` (KIP-612), where users and client
    ids are sanitized names (``kavka.common.sanitizer``) or ``<default>``,
    and an ip an IP address or ``<default>``."""
    if entity_type not in CONFIG_ENTITY_TYPES:
        raise ValueError(f"config entity type {entity_type!r} is not allowed; allowed values: {', '.join(CONFIG_ENTITY_TYPES)}")
    if entity_type == "topics":
        check_topic(entity_name)
    elif entity_type == "brokers":
        if entity_name != BROKER_DEFAULT_ENTITY and not (entity_name.isdigit() and entity_name == str(int(entity_name))):
            raise ValueError(f"broker config entity {entity_name!r} must be a broker id or {BROKER_DEFAULT_ENTITY}")
    elif entity_type == "clients":
        _check_quota_name("client-id", entity_name)
    elif entity_type == "ips":
        if entity_name != DEFAULT_ENTITY:
            try:
                ipaddress.ip_address(entity_name)
            except ValueError:
                raise ValueError(f"ip config entity {entity_name[:100]!r} is neither {DEFAULT_ENTITY} nor an IP "
                                 "address") from None
    else:
        user, sep, client = entity_name.partition(USER_CLIENTS_SEPARATOR)
        _check_quota_name("user", user)
        if sep:
            _check_quota_name("client-id", client)


def _check_quota_name(what: str, name: str) -> None:
    if not is_sanitized(name):
        raise ValueError(f"{what} config entity {name[:100]!r} is neither {DEFAULT_ENTITY} nor a sanitized name "
                         "(letters, digits, '.', '-', '_' and %XY escapes)")
