"""Offsets JSON of the ``kavka`` source: the option values and the streaming
checkpoint, in the shapes Spark's Kafka source uses.

- per-partition offsets (``startingOffsets``/``endingOffsets`` JSON and a
  stream's offset): ``{"topicA": {"0": 23, "1": -1}, "topicB": {"0": -2}}``
  where -2 means earliest and -1 latest in options;
- per-partition timestamps (``startingOffsetsByTimestamp``,
  ``endingOffsetsByTimestamp``): the same shape, milliseconds;
- an ``assign`` list: ``{"topicA": [0, 1], "topicB": [2]}``.

Spark compares stream offsets as JSON strings, so ``to_json_dict`` orders
topics by name and partitions by number: equal offsets always serialise to
the same text (a different order would look like new data and trigger an
endless run of empty micro-batches).

Pure functions; any process. Errors are ``OffsetJsonError`` (a
``ValueError``) naming the option, the expected shape and what was given.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from kavka.common.topic_partition import TopicPartition

EARLIEST = -2
LATEST = -1

_OFFSETS_EXAMPLE = '{"topicA":{"0":23,"1":-1},"topicB":{"0":-2}}'
_ASSIGN_EXAMPLE = '{"topicA":[0,1],"topicB":[2,4]}'


class OffsetJsonError(ValueError):
    """An offsets, timestamps or assign JSON option that does not parse."""


def _load(option: str, text: str, example: str) -> dict:
    try:
        value = json.loads(text)
    except (TypeError, ValueError) as e:
        raise OffsetJsonError(f"option '{option}': expected JSON like {example}, got {text!r} ({e})") from None
    if not isinstance(value, dict):
        raise OffsetJsonError(f"option '{option}': expected a JSON object like {example}, got {text!r}")
    return value


def _partition_number(option: str, raw, text: str, example: str) -> int:
    if isinstance(raw, bool):
        raise OffsetJsonError(f"option '{option}': partition {raw!r} is not a number in {text!r}; expected {example}")
    try:
        number = int(raw)
    except (TypeError, ValueError):
        raise OffsetJsonError(f"option '{option}': partition {raw!r} is not a number in {text!r}; "
                              f"expected {example}") from None
    if number < 0 or str(number) != str(raw).strip():
        raise OffsetJsonError(f"option '{option}': partition {raw!r} must be a non-negative integer in {text!r}")
    return number


def parse_partition_offsets(option: str, text: str, *, allowed_negative: frozenset[int] = frozenset({EARLIEST, LATEST})
                            ) -> dict[TopicPartition, int]:
    """``{"t": {"0": n}}`` -> ``{TopicPartition("t", 0): n}``. Values must be
    integers >= 0 or one of ``allowed_negative``."""
    doc = _load(option, text, _OFFSETS_EXAMPLE)
    out: dict[TopicPartition, int] = {}
    for topic, parts in doc.items():
        if not isinstance(parts, dict):
            raise OffsetJsonError(f"option '{option}': topic {topic!r} must map partitions to numbers, "
                                  f"like {_OFFSETS_EXAMPLE}; got {text!r}")
        for raw_partition, value in parts.items():
            partition = _partition_number(option, raw_partition, text, _OFFSETS_EXAMPLE)
            if isinstance(value, bool) or not isinstance(value, int):
                raise OffsetJsonError(f"option '{option}': the value for {topic}-{partition} must be an integer, "
                                      f"got {value!r} in {text!r}")
            if value < 0 and value not in allowed_negative:
                allowed = ", ".join(str(v) for v in sorted(allowed_negative)) or "none"
                raise OffsetJsonError(f"option '{option}': {value} for {topic}-{partition} is not allowed here "
                                      f"(values must be >= 0; special values allowed: {allowed})")
            out[TopicPartition(topic, partition)] = value
    return out


def parse_assign(option: str, text: str) -> tuple[TopicPartition, ...]:
    """``{"t": [0, 1]}`` -> sorted, distinct topic-partitions (not empty)."""
    doc = _load(option, text, _ASSIGN_EXAMPLE)
    out: set[TopicPartition] = set()
    for topic, parts in doc.items():
        if not isinstance(parts, list):
            raise OffsetJsonError(f"option '{option}': topic {topic!r} must map to a list of partitions, "
                                  f"like {_ASSIGN_EXAMPLE}; got {text!r}")
        for raw in parts:
            if isinstance(raw, (str, bool)) or not isinstance(raw, int):
                raise OffsetJsonError(f"option '{option}': partition {raw!r} of topic {topic!r} must be an integer "
                                      f"in {text!r}")
            out.add(TopicPartition(topic, _partition_number(option, raw, text, _ASSIGN_EXAMPLE)))
    if not out:
        raise OffsetJsonError(f"option '{option}': no partitions given in {text!r}; expected e.g. {_ASSIGN_EXAMPLE}")
    return tuple(sorted(out))


def to_json_dict(offsets: Mapping[TopicPartition, int]) -> dict[str, dict[str, int]]:
    """The stable checkpoint form: topics by name, partitions by number."""
    out: dict[str, dict[str, int]] = {}
    for tp in sorted(offsets):
        out.setdefault(tp.topic, {})[str(tp.partition)] = int(offsets[tp])
    return out


def from_json_dict(doc: Mapping[str, Mapping[str, int]]) -> dict[TopicPartition, int]:
    """Inverse of ``to_json_dict`` (a checkpointed stream offset)."""
    if not isinstance(doc, Mapping):
        raise OffsetJsonError(f"a stream offset must be a JSON object like {_OFFSETS_EXAMPLE}, got {doc!r}")
    return parse_partition_offsets("stream offset", json.dumps(doc), allowed_negative=frozenset())


def to_json(offsets: Mapping[TopicPartition, int]) -> str:
    return json.dumps(to_json_dict(offsets), separators=(",", ":"))
