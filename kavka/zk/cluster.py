"""Cluster-wide znodes: ``/cluster/id``, ``/latest_producer_id_block``, and
the list of persistent paths every broker creates at startup.

- ``/cluster/id``: the cluster id returned by Metadata and DescribeCluster,
  created once by the first broker (create-if-absent, then read back).
- ``/latest_producer_id_block``: the last block of producer ids handed out;
  a broker claims the next block with a conditional write on the znode
  version, so two brokers never get overlapping ids.

Pure; any thread.
"""

from __future__ import annotations

import base64
import uuid
from dataclasses import dataclass

from kavka.zk.admin import DELETE_TOPICS_PATH
from kavka.zk.brokers import BROKER_IDS_PATH, BROKER_SEQUENCE_ID_PATH, TOPICS_PATH
from kavka.zk.codec import ZnodeDataError, build, check_id, dump_json, field, load_json
from kavka.zk.config_nodes import ConfigEntityZNode
from kavka.zk.notifications import (
    CONFIG_CHANGES_PATH,
    CONFIG_ENTITY_TYPES,
    ISR_CHANGE_NOTIFICATION_PATH,
    LOG_DIR_EVENT_NOTIFICATION_PATH,
)

CLUSTER_ID_PATH = "/cluster/id"
PRODUCER_ID_BLOCK_PATH = "/latest_producer_id_block"
# Producer ids are handed to brokers in blocks of this size (Kafka's).
PRODUCER_ID_BLOCK_SIZE = 1000


@dataclass(frozen=True, slots=True)
class ClusterIdZNode:
    """``/cluster/id``: ``{"version":"1","id":"<22-char base64url>"}`` (Kafka
    writes the version as a string here)."""

    cluster_id: str

    def __post_init__(self) -> None:
        if not self.cluster_id or not isinstance(self.cluster_id, str):
            raise ValueError("cluster id must be a non-empty string")

    @staticmethod
    def path() -> str:
        return CLUSTER_ID_PATH

    @staticmethod
    def generate() -> ClusterIdZNode:
        return ClusterIdZNode(base64.urlsafe_b64encode(uuid.uuid4().bytes).decode("ascii").rstrip("="))

    def encode(self) -> bytes:
        return dump_json({"version": "1", "id": self.cluster_id})

    @classmethod
    def decode(cls, data: bytes, path: str = CLUSTER_ID_PATH) -> ClusterIdZNode:
        doc = load_json(path, data)
        if str(doc.get("version")) != "1":
            raise ZnodeDataError(path, f"version {doc.get('version')!r} is not supported; supported: 1")
        cluster_id = field(path, doc, "id", "str")
        return build(path, lambda: cls(cluster_id))


@dataclass(frozen=True, slots=True)
class ProducerIdBlockZNode:
    """``/latest_producer_id_block``: the last block of producer ids claimed.

    JSON (longs as strings, as Kafka writes them)::

        {"version":1,"broker":0,"block_start":"0","block_end":"999"}

    Invariants: 0 <= block_start <= block_end.
    """

    broker_id: int
    block_start: int
    block_end: int

    def __post_init__(self) -> None:
        check_id("broker id", self.broker_id)
        if not 0 <= self.block_start <= self.block_end:
            raise ValueError(f"block [{self.block_start}, {self.block_end}] must satisfy 0 <= start <= end")

    @staticmethod
    def path() -> str:
        return PRODUCER_ID_BLOCK_PATH

    def next_block(self, broker_id: int, size: int = PRODUCER_ID_BLOCK_SIZE) -> ProducerIdBlockZNode:
        """The block a broker claims after this one."""
        start = self.block_end + 1
        return ProducerIdBlockZNode(broker_id, start, start + size - 1)

    @staticmethod
    def first_block(broker_id: int, size: int = PRODUCER_ID_BLOCK_SIZE) -> ProducerIdBlockZNode:
        return ProducerIdBlockZNode(broker_id, 0, size - 1)

    def encode(self) -> bytes:
        return dump_json({"version": 1, "broker": self.broker_id, "block_start": str(self.block_start), "block_end": str(self.block_end)})

    @classmethod
    def decode(cls, data: bytes, path: str = PRODUCER_ID_BLOCK_PATH) -> ProducerIdBlockZNode:
        doc = load_json(path, data)
        if field(path, doc, "version", "int") != 1:
            raise ZnodeDataError(path, f"version {doc['version']} is not supported; supported: 1")
        broker = field(path, doc, "broker", "int")
        start = field(path, doc, "block_start", "int_or_str")
        end = field(path, doc, "block_end", "int_or_str")
        return build(path, lambda: cls(broker, start, end))


# Created (if missing) by every broker at startup, as Kafka's
# KafkaZkClient.createTopLevelPaths does, so watches and children reads
# never meet a missing parent.
PERSISTENT_PATHS: tuple[str, ...] = (
    BROKER_IDS_PATH,
    TOPICS_PATH,
    CONFIG_CHANGES_PATH,
    DELETE_TOPICS_PATH,
    BROKER_SEQUENCE_ID_PATH,
    ISR_CHANGE_NOTIFICATION_PATH,
    LOG_DIR_EVENT_NOTIFICATION_PATH,
    *(ConfigEntityZNode.type_path(t) for t in CONFIG_ENTITY_TYPES),
)


def generated_broker_id(seqid_version: int, reserved_max_id: int) -> int:
    """Broker id from the version of ``/brokers/seqid`` after a write:
    generated ids start above ``reserved.broker.max.id`` (Kafka's scheme)."""
    check_id("znode version", seqid_version)
    return reserved_max_id + seqid_version
