"""Shared pieces of the znode codecs: errors that name the znode path, JSON
field readers, and checks on the names that become path segments.

Every znode class in ``kavka.zk`` decodes with ``decode(data, path)``; a
malformed document raises ``ZnodeDataError`` whose message starts with the
znode path and names the field, so an operator knows which node to fix.
Values are validated when constructed (``__post_init__`` raises
``ValueError``); ``decode`` turns those into ``ZnodeDataError`` as well.

Pure functions; any thread.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any, TypeVar

from kavka.common.topic_names import validate_topic_name

T = TypeVar("T")



class ZnodeDataError(ValueError):
    """A znode holds data that does not match its schema (seed 000)."""

    def __init__(self, path: str, message: str) -> None:
        self.path = path
        super().__init__(f"znode {path}: {message}")


class ZnodePathError(ValueError):
    """A name cannot be used as a znode path segment (bad topic name,
    negative broker id, or a path that is not the expected znode)."""


def check_topic(topic: str) -> str:
    """The name, if legal (checked before it becomes a path segment, so
    that no topic can escape its znode: "a/../b")."""
    problem = validate_topic_name(topic)
    if problem is not None:
        raise ZnodePathError(f"{topic!r} is not a legal topic name: {problem}")
    return topic


def check_id(what: str, value: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ZnodePathError(f"{what} {value!r} must be an integer >= 0")
    return value


def parse_path(path: str, pattern: re.Pattern[str], what: str) -> re.Match[str]:
    m = pattern.match(path)
    if m is None:
        raise ZnodeDataError(path, f"is not a {what} path")
    return m


def load_json(path: str, data: bytes) -> dict[str, Any]:
    """Decode a JSON object; anything else is a ZnodeDataError."""
    if data is None or len(data) == 0:
        raise ZnodeDataError(path, "is empty; expected a JSON object")
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ZnodeDataError(path, f"is not valid JSON ({e})") from None
    if not isinstance(doc, dict):
        raise ZnodeDataError(path, f"holds a JSON {type(doc).__name__}; expected an object")
    return doc


def dump_json(doc: dict[str, Any]) -> bytes:
    return json.dumps(doc, separators=(",", ":")).encode("utf-8")


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


# A JSON kind -> its check (built once: ``field`` runs for every field of
# every znode read, 10,000 partition states at a controller's failover).
_KINDS: dict[str, Callable[[Any], bool]] = {
    "int": _is_int,
    "str": lambda v: isinstance(v, str),
    "str_or_null": lambda v: v is None or isinstance(v, str),
    "list": lambda v: isinstance(v, list),
    "dict": lambda v: isinstance(v, dict),
    "int_or_str": lambda v: _is_int(v) or (isinstance(v, str) and re.fullmatch(r"-?\d{1,19}", v) is not None),
}


def field(path: str, doc: dict[str, Any], name: str, kind: str, default: Any = ..., where: str = "") -> Any:
    """Read ``doc[name]`` checking its JSON kind: 'int', 'str', 'list',
    'dict', 'int_or_str' (Kafka writes some longs as strings), 'str_or_null'.
    ``where`` locates a nested object in messages, e.g. "partitions[2] "."""
    if name not in doc:
        if default is not ...:
            return default
        raise ZnodeDataError(path, f"{where}field {name!r} is missing")
    value = doc[name]
    if not _KINDS[kind](value):
        raise ZnodeDataError(path, f"{where}field {name!r} is {json.dumps(value)[:80]}; expected {kind.replace('_', ' ')}")
    return int(value) if kind == "int_or_str" else value


def int_list(path: str, value: Any, what: str) -> tuple[int, ...]:
    if not isinstance(value, list) or not all(isinstance(x, int) and not isinstance(x, bool) for x in value):
        raise ZnodeDataError(path, f"{what} is {json.dumps(value)[:80]}; expected a list of integers")
    return tuple(value)


def check_version(path: str, doc: dict[str, Any], supported: tuple[int, ...]) -> int:
    version = field(path, doc, "version", "int")
    if version not in supported:
        raise ZnodeDataError(path, f"version {version} is not supported; supported: {', '.join(map(str, supported))}")
    return version


def build(path: str, make: Callable[[], T]) -> T:
    """Construct a value, turning its validation errors into ZnodeDataError."""
    try:
        return make()
    except (ValueError, TypeError) as e:
        if isinstance(e, ZnodeDataError):
            raise
        raise ZnodeDataError(path, str(e)) from None


def check_replicas(what: str, replicas: tuple[int, ...], allow_empty: bool = False) -> None:
    if not replicas and not allow_empty:
        raise ValueError(f"{what} is empty")
    if any(not isinstance(r, int) or isinstance(r, bool) or r < 0 for r in replicas):
        raise ValueError(f"{what} {list(replicas)} holds a broker id that is not an integer >= 0")
    if len(set(replicas)) != len(replicas):
        raise ValueError(f"{what} {list(replicas)} lists a broker twice")


def sequence_number(name: str, prefix: str) -> int:
    """The 10-digit counter ZooKeeper appends to a sequential node's name."""
    if not name.startswith(prefix) or not name[len(prefix):].isdigit():
        raise ZnodePathError(f"{name!r} is not a sequential node named {prefix}<sequence>")
    return int(name[len(prefix):])
