"""Znodes under ``/brokers`` (seed 000 §HA 相关 ZooKeeper 结构 "brokers").

- ``/brokers/ids/<id>`` (ephemeral, written by the broker): ``BrokerIdZNode``.
- ``/brokers/seqid`` (persistent, no data): its version generates broker ids.
- ``/brokers/topics/<topic>`` (persistent, written by admin/CreateTopics):
  ``TopicZNode``, the replica assignment; the first replica is preferred.
- ``/brokers/topics/<topic>/partitions/<p>/state`` (persistent, written by
  the controller, and by the leader for ISR changes — always as a
  conditional update on its znode version, seed 001 #3): ``PartitionStateZNode``.

Each class: ``path(...)`` builds the path, ``encode()`` gives the JSON bytes,
``decode(data, path)`` parses and validates, naming the path on error.
Pure; any thread.
"""

from __future__ import annotations

import base64
import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field as dc_field
from types import MappingProxyType
from typing import cast

from kavka.common.config import ConfigError
from kavka.common.ids import BrokerId, ControllerEpoch, LeaderEpoch
from kavka.common.leader_and_isr import LeaderAndIsr, LeaderIsrAndControllerEpoch
from kavka.common.listeners import EndPoint, parse_listeners
from kavka.common.topic_partition import TopicPartition
from kavka.zk.codec import (
    ZnodeDataError,
    build,
    check_id,
    check_replicas,
    check_topic,
    check_version,
    dump_json,
    field,
    int_list,
    load_json,
    parse_path,
)

BROKERS_PATH = "/brokers"
BROKER_IDS_PATH = "/brokers/ids"
TOPICS_PATH = "/brokers/topics"
BROKER_SEQUENCE_ID_PATH = "/brokers/seqid"

_BROKER_ID_RE = re.compile(r"^/brokers/ids/(\d+)$")
_TOPIC_RE = re.compile(r"^/brokers/topics/([^/]+)$")
_STATE_RE = re.compile(r"^/brokers/topics/([^/]+)/partitions/(\d+)/state$")


@dataclass(frozen=True, slots=True)
class BrokerIdZNode:
    """``/brokers/ids/<id>``: a live broker's registration (ephemeral).

    JSON, version 4 as written::

        {"version":4,"host":"h","port":9092,"jmx_port":-1,"timestamp":"1700000000000",
         "endpoints":["PLAINTEXT://h:9092"],
         "listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},"rack":"r1"}

    ``host``/``port`` repeat the PLAINTEXT endpoint for old readers (null/-1
    when there is none); ``rack`` appears only when set. Decoding accepts
    versions 1 (seed 000: host, port, jmx_port only) to 5 (``features``,
    ignored). ``endpoints`` are the advertised listeners, non-empty.
    """

    broker_id: int
    endpoints: tuple[EndPoint, ...]
    rack: str | None = None
    jmx_port: int = -1
    timestamp_ms: int = 0

    VERSION = 4

    def __post_init__(self) -> None:
        check_id("broker id", self.broker_id)
        if not self.endpoints:
            raise ValueError("a broker registration needs at least one endpoint")

    @staticmethod
    def path(broker_id: int) -> str:
        return f"{BROKER_IDS_PATH}/{check_id('broker id', broker_id)}"

    @property
    def znode_path(self) -> str:
        return self.path(self.broker_id)

    def endpoint(self, listener_name: str) -> EndPoint | None:
        for ep in self.endpoints:
            if ep.listener_name == listener_name:
                return ep
        return None

    def encode(self) -> bytes:
        plain = next((e for e in self.endpoints if e.security_protocol == "PLAINTEXT"), None)
        doc: dict[str, object] = {
            "version": self.VERSION,
            "host": plain.host if plain else None,
            "port": plain.port if plain else -1,
            "jmx_port": self.jmx_port,
            "timestamp": str(self.timestamp_ms),
            "endpoints": [e.connection_string() for e in self.endpoints],
            "listener_security_protocol_map": {e.listener_name: e.security_protocol for e in self.endpoints},
        }
        if self.rack is not None:
            doc["rack"] = self.rack
        return dump_json(doc)

    @classmethod
    def decode(cls, data: bytes, path: str) -> BrokerIdZNode:
        broker_id = int(parse_path(path, _BROKER_ID_RE, "/brokers/ids/<id>").group(1))
        doc = load_json(path, data)
        version = check_version(path, doc, (1, 2, 3, 4, 5))
        jmx_port = field(path, doc, "jmx_port", "int", -1)
        timestamp = field(path, doc, "timestamp", "int_or_str", 0)
        rack = field(path, doc, "rack", "str_or_null", None)
        if version == 1:
            host = field(path, doc, "host", "str")
            port = field(path, doc, "port", "int")
            raw = [f"PLAINTEXT://{'[' + host + ']' if ':' in host else host}:{port}"]
            protocol_map = {"PLAINTEXT": "PLAINTEXT"}
        else:
            raw = field(path, doc, "endpoints", "list")
            if not all(isinstance(e, str) for e in raw):
                raise ZnodeDataError(path, "field 'endpoints' must be a list of NAME://host:port strings")
            if version >= 3:
                pm = field(path, doc, "listener_security_protocol_map", "dict")
                protocol_map = {str(k).upper(): str(v).upper() for k, v in pm.items()}
            else:
                # Version 2 endpoints are named after their security protocol.
                protocol_map = {p: p for p in ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")}
        try:
            endpoints = parse_listeners("endpoints", raw, protocol_map)
        except ConfigError as e:
            raise ZnodeDataError(path, str(e).split(": ", 1)[1]) from None
        return build(path, lambda: cls(broker_id, endpoints, rack, jmx_port, timestamp))


def _int_key_map(path: str, raw: object, what: str) -> dict[int, tuple[int, ...]]:
    if not isinstance(raw, dict):
        raise ZnodeDataError(path, f"field {what!r} must be an object from partition id to replica list")
    out: dict[int, tuple[int, ...]] = {}
    for key, replicas in raw.items():
        if not (isinstance(key, str) and key.isdigit()):
            raise ZnodeDataError(path, f"field {what!r} has key {key!r}; expected a partition id")
        out[int(key)] = int_list(path, replicas, f"{what}[{key}]")
    return out


def _frozen(m: Mapping[int, tuple[int, ...]]) -> Mapping[int, tuple[int, ...]]:
    return MappingProxyType({int(k): tuple(v) for k, v in sorted(m.items())})


@dataclass(frozen=True, slots=True)
class TopicZNode:
    """``/brokers/topics/<topic>``: a topic's replica assignment.

    JSON as written (version 3 with a topic id, else 2)::

        {"version":3,"topic_id":"<22-char base64url UUID>",
         "partitions":{"0":[1,2],"1":[2,0]},
         "adding_replicas":{},"removing_replicas":{}}

    Version 1 (seed 000) has only ``partitions``. Invariants: partitions are
    numbered 0..n-1, n >= 1; each replica list is non-empty with distinct
    broker ids >= 0, its first entry the preferred replica; adding/removing
    replicas (KIP-455, during a reassignment) refer to existing partitions.
    """

    topic: str
    partitions: Mapping[int, tuple[int, ...]]
    topic_id: uuid.UUID | None = None
    adding_replicas: Mapping[int, tuple[int, ...]] = dc_field(default_factory=dict)
    removing_replicas: Mapping[int, tuple[int, ...]] = dc_field(default_factory=dict)

    def __post_init__(self) -> None:
        check_topic(self.topic)
        for name in ("partitions", "adding_replicas", "removing_replicas"):
            object.__setattr__(self, name, _frozen(getattr(self, name)))
        if sorted(self.partitions) != list(range(len(self.partitions))) or not self.partitions:
            raise ValueError(f"partitions {sorted(self.partitions)} must be numbered 0..n-1 with n >= 1")
        for p, replicas in self.partitions.items():
            check_replicas(f"partition {p} replicas", replicas)
        for name in ("adding_replicas", "removing_replicas"):
            for p, replicas in getattr(self, name).items():
                if p not in self.partitions:
                    raise ValueError(f"{name} names partition {p}, which the topic does not have")
                check_replicas(f"{name}[{p}]", replicas)

    @staticmethod
    def path(topic: str) -> str:
        return f"{TOPICS_PATH}/{check_topic(topic)}"

    @property
    def znode_path(self) -> str:
        return self.path(self.topic)

    def encode(self) -> bytes:
        doc: dict[str, object] = {"version": 3 if self.topic_id is not None else 2}
        if self.topic_id is not None:
            doc["topic_id"] = encode_topic_id(self.topic_id)
        doc["partitions"] = {str(p): list(r) for p, r in self.partitions.items()}
        doc["adding_replicas"] = {str(p): list(r) for p, r in self.adding_replicas.items()}
        doc["removing_replicas"] = {str(p): list(r) for p, r in self.removing_replicas.items()}
        return dump_json(doc)

    @classmethod
    def decode(cls, data: bytes, path: str) -> TopicZNode:
        topic = parse_path(path, _TOPIC_RE, "/brokers/topics/<topic>").group(1)
        doc = load_json(path, data)
        version = check_version(path, doc, (1, 2, 3))
        partitions = _int_key_map(path, field(path, doc, "partitions", "dict"), "partitions")
        adding = _int_key_map(path, field(path, doc, "adding_replicas", "dict", {}), "adding_replicas")
        removing = _int_key_map(path, field(path, doc, "removing_replicas", "dict", {}), "removing_replicas")
        topic_id = None
        if version >= 3 and doc.get("topic_id") is not None:
            raw_id = field(path, doc, "topic_id", "str")
            try:
                topic_id = decode_topic_id(raw_id)
            except ValueError as e:
                raise ZnodeDataError(path, f"field 'topic_id' {raw_id!r}: {e}") from None
        return build(path, lambda: cls(topic, partitions, topic_id, adding, removing))


def encode_topic_id(topic_id: uuid.UUID) -> str:
    """Kafka writes topic ids as URL-safe base64 of the 16 bytes, unpadded."""
    return base64.urlsafe_b64encode(topic_id.bytes).decode("ascii").rstrip("=")


def decode_topic_id(text: str) -> uuid.UUID:
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (ValueError, TypeError):
        raise ValueError("is not base64url") from None
    if len(raw) != 16:
        raise ValueError(f"decodes to {len(raw)} bytes; a topic id has 16")
    return uuid.UUID(bytes=raw)


@dataclass(frozen=True, slots=True)
class PartitionStateZNode:
    """``/brokers/topics/<t>/partitions/<p>/state``: leader, ISR and epochs.

    JSON (version 1, seed 000)::

        {"controller_epoch":29,"leader":2,"version":1,"leader_epoch":48,"isr":[2]}

    ``leader`` is -1 when the partition has no leader (offline; the ISR then
    keeps its last member so a later clean election knows who has the
    data); a leader >= 0 is always in ``isr`` (an unclean election makes
    the ISR just the new leader). Epochs are >= 0; the ISR holds distinct
    broker ids. The znode's version (not in the JSON) fences
    concurrent writers: every update is conditional on it (seed 001 #3).
    """

    topic: str
    partition: int
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    controller_epoch: int

    def __post_init__(self) -> None:
        check_topic(self.topic)
        check_id("partition", self.partition)
        object.__setattr__(self, "isr", tuple(self.isr))
        if not isinstance(self.leader, int) or self.leader < -1:
            raise ValueError(f"leader {self.leader} must be a broker id or -1")
        if self.leader_epoch < 0 or self.controller_epoch < 0:
            raise ValueError(f"epochs must be >= 0 (leader_epoch {self.leader_epoch}, controller_epoch {self.controller_epoch})")
        check_replicas("isr", self.isr, allow_empty=True)
        if self.leader >= 0 and self.leader not in self.isr:
            raise ValueError(f"leader {self.leader} is not in the isr {list(self.isr)}")

    @staticmethod
    def path(topic: str, partition: int) -> str:
        return f"{TopicZNode.path(topic)}/partitions/{check_id('partition', partition)}/state"

    @staticmethod
    def partitions_path(topic: str) -> str:
        """``/brokers/topics/<t>/partitions``: persistent parent, no data."""
        return f"{TopicZNode.path(topic)}/partitions"

    @staticmethod
    def partition_path(topic: str, partition: int) -> str:
        """``/brokers/topics/<t>/partitions/<p>``: persistent parent, no data."""
        return f"{TopicZNode.path(topic)}/partitions/{check_id('partition', partition)}"

    @property
    def znode_path(self) -> str:
        return self.path(self.topic, self.partition)

    @classmethod
    def of(cls, tp: TopicPartition, state: LeaderIsrAndControllerEpoch) -> PartitionStateZNode:
        """The znode content for ``tp`` holding ``state`` (its ``zk_version``
        is the znode's version, not part of the JSON)."""
        lai = state.leader_and_isr
        return cls(tp.topic, tp.partition, lai.leader, lai.leader_epoch, lai.isr, state.controller_epoch)

    def leader_isr_and_controller_epoch(self, zk_version: int) -> LeaderIsrAndControllerEpoch:
        """This content as read at znode version ``zk_version``."""
        return LeaderIsrAndControllerEpoch(
            LeaderAndIsr(BrokerId(self.leader), LeaderEpoch(self.leader_epoch), cast("tuple[BrokerId, ...]", self.isr), zk_version),
            ControllerEpoch(self.controller_epoch),
        )

    def encode(self) -> bytes:
        return dump_json(
            {
                "controller_epoch": self.controller_epoch,
                "leader": self.leader,
                "version": 1,
                "leader_epoch": self.leader_epoch,
                "isr": list(self.isr),
            }
        )

    @classmethod
    def decode(cls, data: bytes, path: str) -> PartitionStateZNode:
        m = parse_path(path, _STATE_RE, "/brokers/topics/<topic>/partitions/<p>/state")
        doc = load_json(path, data)
        check_version(path, doc, (1,))
        leader = field(path, doc, "leader", "int")
        leader_epoch = field(path, doc, "leader_epoch", "int")
        controller_epoch = field(path, doc, "controller_epoch", "int")
        isr = int_list(path, field(path, doc, "isr", "list"), "field 'isr'")
        return build(path, lambda: cls(m.group(1), int(m.group(2)), leader, leader_epoch, isr, controller_epoch))
