"""``/controller`` and ``/controller_epoch`` (seed 000 "controller", §Controller Failover).

- ``/controller`` is ephemeral: the broker that creates it is the controller;
  every broker watches it and competes when it disappears.
- ``/controller_epoch`` is persistent and holds a bare integer (not JSON, seed
  000); each new controller increments it with a conditional write, and its
  znode version fences writes of a deposed controller (every controller
  write is a multi guarded by a check on that version, as Kafka does since
  KAFKA-6082).

Pure; any thread.
"""

from __future__ import annotations

from dataclasses import dataclass

from kavka.zk.codec import ZnodeDataError, build, check_id, check_version, dump_json, field, load_json

CONTROLLER_PATH = "/controller"
CONTROLLER_EPOCH_PATH = "/controller_epoch"
# The epoch /controller_epoch is created with; the first controller makes it 1.
INITIAL_CONTROLLER_EPOCH = 0


@dataclass(frozen=True, slots=True)
class ControllerZNode:
    """``/controller``: which broker is the controller.

    JSON::

        {"version":1,"brokerid":8,"timestamp":"1700000000000"}

    Seed 000's example lacks ``timestamp``; it is optional when decoding.
    """

    broker_id: int
    timestamp_ms: int = 0

    def __post_init__(self) -> None:
        check_id("broker id", self.broker_id)

    @staticmethod
    def path() -> str:
        return CONTROLLER_PATH

    def encode(self) -> bytes:
        return dump_json({"version": 1, "brokerid": self.broker_id, "timestamp": str(self.timestamp_ms)})

    @classmethod
    def decode(cls, data: bytes, path: str = CONTROLLER_PATH) -> ControllerZNode:
        doc = load_json(path, data)
        check_version(path, doc, (1,))
        broker_id = field(path, doc, "brokerid", "int")
        timestamp = field(path, doc, "timestamp", "int_or_str", 0)
        return build(path, lambda: cls(broker_id, timestamp))


@dataclass(frozen=True, slots=True)
class ControllerEpochZNode:
    """``/controller_epoch``: the controller epoch as a decimal integer, e.g.
    ``29`` (no JSON, seed 000). Invariant: epoch >= 0."""

    epoch: int

    def __post_init__(self) -> None:
        if not isinstance(self.epoch, int) or isinstance(self.epoch, bool) or self.epoch < 0:
            raise ValueError(f"controller epoch {self.epoch!r} must be an integer >= 0")

    @staticmethod
    def path() -> str:
        return CONTROLLER_EPOCH_PATH

    def encode(self) -> bytes:
        return str(self.epoch).encode("ascii")

    @classmethod
    def decode(cls, data: bytes, path: str = CONTROLLER_EPOCH_PATH) -> ControllerEpochZNode:
        text = data.decode("ascii", errors="replace").strip() if data else ""
        if not text.isdigit():
            raise ZnodeDataError(path, f"holds {text[:40]!r}; expected a decimal controller epoch")
        return build(path, lambda: cls(int(text)))
