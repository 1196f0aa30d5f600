"""The options of format ``"kavka"``, parsed and checked once, into frozen
values the readers and writers carry to the executors.

Names and meanings are those of Spark's Kafka source and sink. Spark hands
a Python data source its options with lower-cased keys and string values,
so every key here is matched lower-cased (``startingoffsets``) while error
messages use the documented spelling (``startingOffsets``).

Reading: ``kafka.bootstrap.servers`` (required); exactly one of
``assign`` / ``subscribe`` / ``subscribePattern``; starting position by
priority ``startingTimestamp`` > ``startingOffsetsByTimestamp`` >
``startingOffsets`` (default ``latest`` for streams, ``earliest`` for
batch); for batch the ending position likewise (``endingTimestamp`` >
``endingOffsetsByTimestamp`` > ``endingOffsets``, default ``latest``);
``startingOffsetsByTimestampStrategy`` (``error`` | ``latest``) for
partitions with no record at or after the timestamp; ``failOnDataLoss``
(default true); ``maxOffsetsPerTrigger``; ``minPartitions``;
``includeHeaders``; ``kafka.*`` client settings: ``isolation.level``
(default ``read_committed``: only committed data is read),
``max.partition.fetch.bytes``, ``fetch.max.wait.ms``, ``request.timeout.ms``,
``retry.backoff.ms``, ``default.api.timeout.ms``, ``client.id`` are used,
and ``client.rack``: the readers send it with their fetches (KIP-392), so
a cluster with ``replica.selector.class`` serves each from an in-sync
replica in that rack; others are ignored, as Kafka's consumer ignores
settings it does not know. Without ``kafka.client.rack``, a reader takes
its executor's environment variable ``KAVKA_CLIENT_RACK`` as its rack
(set on each worker host, as Spark's per-host ``SPARK_LOCAL_IP``): on a
cluster every executor then reads from the replica in its own rack.

Security, reading and writing: ``kafka.security.protocol``, ``kafka.sasl.*``
and ``kafka.ssl.*`` (the Java client's names, as for Spark's Kafka source:
``kafka.sasl.jaas.config``, ``kafka.ssl.truststore.location``, ...; or
librdkafka's: ``kafka.sasl.username``, ``kafka.ssl.ca.location``, ...) go to
every client the source and sink open (``kavka.spark.client_security``).
They are checked when the options are parsed (on the driver: TLS files are
read then), so a bad one fails the query before any task runs; an unknown
``kafka.ssl.*``/``kafka.sasl.*`` key is refused, not ignored.

Writing: ``kafka.bootstrap.servers``, optional ``topic`` (overrides the
column), ``kafka.*`` handed to librdkafka (security settings in librdkafka's
names).

Any process; pure apart from the TLS files the security options name.
Errors are ``KavkaOptionError`` (``ValueError``) with Spark-like wording:
which option, what is wrong, what to do.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import overload

from kavka.common.topic_partition import TopicPartition
from kavka.security.client_properties import (
    SECURITY_KEYS,
    client_security_from_properties,
    librdkafka_security_config,
)
from kavka.spark.offsets import EARLIEST, LATEST, OffsetJsonError, parse_assign, parse_partition_offsets

RACK_ENV = "KAVKA_CLIENT_RACK"  # an executor's rack, when the query sets no kafka.client.rack


class KavkaOptionError(ValueError):
    """An option of format "kavka" is missing, malformed or conflicting."""


# Lower-cased key -> the documented spelling, for messages.
_SPELLING = {k.lower(): k for k in (
    "kafka.bootstrap.servers", "assign", "subscribe", "subscribePattern", "startingOffsets", "endingOffsets",
    "startingTimestamp", "endingTimestamp", "startingOffsetsByTimestamp", "endingOffsetsByTimestamp",
    "startingOffsetsByTimestampStrategy", "failOnDataLoss", "maxOffsetsPerTrigger", "minOffsetsPerTrigger",
    "maxTriggerDelay", "minPartitions",
    "includeHeaders", "topic")}
_STRATEGIES = ("assign", "subscribe", "subscribepattern")
# kafka.* settings Spark's Kafka source refuses because the source manages them itself.
_SOURCE_MANAGED = {
    "kafka.group.id": "the source does not join a consumer group; offsets live in Spark's checkpoint",
    "kafka.auto.offset.reset": "set startingOffsets instead",
    "kafka.key.deserializer": "keys are always read as bytes; cast or decode in the query",
    "kafka.value.deserializer": "values are always read as bytes; cast or decode in the query",
    "kafka.enable.auto.commit": "the source never commits offsets to Kafka",
    "kafka.interceptor.classes": "interceptors are not supported",
}
_SINK_MANAGED = {
    "kafka.key.serializer": "keys are written as bytes: cast the column to binary or string",
    "kafka.value.serializer": "values are written as bytes: cast the column to binary or string",
    "kafka.transactional.id": "the streaming sink derives transactional ids from the query and task",
}


Settings = tuple[tuple[str, str], ...]
SECURITY_OPTIONS_SOURCE = "the kafka.* security options"


def security_settings(client: Settings) -> Settings:
    """The security keys among the ``kafka.*`` settings (prefix removed)."""
    return tuple((k, v) for k, v in client if k in SECURITY_KEYS or k.startswith(("ssl.", "sasl.")))


def _check_security(client: Settings, *, librdkafka: bool) -> None:
    """Build the security settings once (and their librdkafka translation
    for the sink), so that a bad one fails here, naming the option."""
    settings = dict(security_settings(client))
    try:
        client_security_from_properties(settings, SECURITY_OPTIONS_SOURCE)
        if librdkafka and settings:
            librdkafka_security_config(settings, SECURITY_OPTIONS_SOURCE)
    except ValueError as e:
        raise KavkaOptionError(str(e)) from None


def spelled(key: str) -> str:
    return _SPELLING.get(key, key)


def _lower(options: Mapping[str, str]) -> dict[str, str]:
    return {str(k).lower(): str(v) for k, v in options.items() if v is not None}


def _bool(opts: Mapping[str, str], key: str, default: bool) -> bool:
    raw = opts.get(key)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value not in ("true", "false"):
        raise KavkaOptionError(f"option '{spelled(key)}' must be 'true' or 'false', got {raw!r}")
    return value == "true"


def _positive(opts: Mapping[str, str], key: str) -> int | None:
    raw = opts.get(key)
    if raw is None:
        return None
    try:
        value = int(raw.strip())
    except ValueError:
        raise KavkaOptionError(f"option '{spelled(key)}' must be a positive integer, got {raw!r}") from None
    if value <= 0:
        raise KavkaOptionError(f"option '{spelled(key)}' must be a positive integer, got {raw!r}")
    return value


def _timestamp(opts: Mapping[str, str], key: str) -> int | None:
    raw = opts.get(key)
    if raw is None:
        return None
    try:
        value = int(raw.strip())
    except ValueError:
        raise KavkaOptionError(f"option '{spelled(key)}' must be milliseconds since the epoch, got {raw!r}") from None
    if value < 0:
        raise KavkaOptionError(f"option '{spelled(key)}' must be >= 0 (milliseconds since the epoch), got {raw!r}")
    return value


_DURATION = re.compile(r"^\s*(\d+)\s*(ms|s|m|min|h)?\s*$")
_UNIT_MS = {"ms": 1, "s": 1000, None: 1000, "m": 60_000, "min": 60_000, "h": 3_600_000}


def _duration_ms(opts: Mapping[str, str], key: str, default: int) -> int:
    """A duration like Spark's: ``15m``, ``30s``, ``500ms`` (bare number: seconds)."""
    raw = opts.get(key)
    if raw is None:
        return default
    match = _DURATION.match(raw.lower())
    if not match:
        raise KavkaOptionError(f"option '{spelled(key)}' must be a duration like '15m', '30s' or '500ms', got {raw!r}")
    return int(match.group(1)) * _UNIT_MS[match.group(2)]


def _bootstrap(opts: Mapping[str, str]) -> str:
    servers = opts.get("kafka.bootstrap.servers", "").strip()
    if not servers:
        raise KavkaOptionError("option 'kafka.bootstrap.servers' must be specified "
                               "(e.g. .option(\"kafka.bootstrap.servers\", \"127.0.0.1:9092\"))")
    return servers


def _client_settings(opts: Mapping[str, str], refused: Mapping[str, str]) -> Settings:
    out = []
    for key, value in sorted(opts.items()):
        if not key.startswith("kafka.") or key == "kafka.bootstrap.servers":
            continue
        if key in refused:
            raise KavkaOptionError(f"option '{key}' is not supported: {refused[key]}")
        out.append((key[len("kafka."):], value))
    return tuple(out)


# -- subscriptions ----------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Assign:
    """A fixed list of topic-partitions (option ``assign``)."""

    partitions: tuple[TopicPartition, ...]


@dataclass(frozen=True, slots=True)
class Subscribe:
    """Every partition of the named topics (option ``subscribe``)."""

    topics: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class SubscribePattern:
    """Every partition of every topic matching the regex (``subscribePattern``),
    internal topics excluded."""

    pattern: str


Subscription = Assign | Subscribe | SubscribePattern


def parse_subscription(opts: Mapping[str, str]) -> Subscription:
    given = [k for k in _STRATEGIES if k in opts]
    if not given:
        raise KavkaOptionError("one of the options 'assign', 'subscribe', 'subscribePattern' must be specified "
                               "for a kavka source")
    if len(given) > 1:
        raise KavkaOptionError("only one of the options 'assign', 'subscribe', 'subscribePattern' may be specified "
                               f"for a kavka source; got {', '.join(spelled(k) for k in given)}")
    key = given[0]
    raw = opts[key]
    if key == "assign":
        try:
            return Assign(parse_assign("assign", raw))
        except OffsetJsonError as e:
            raise KavkaOptionError(str(e)) from None
    if key == "subscribe":
        topics = tuple(dict.fromkeys(t.strip() for t in raw.split(",") if t.strip()))
        if not topics:
            raise KavkaOptionError(f"option 'subscribe' must list topics separated by commas, got {raw!r}")
        return Subscribe(topics)
    if not raw.strip():
        raise KavkaOptionError("option 'subscribePattern' must be a non-empty regular expression")
    try:
        re.compile(raw)
    except re.error as e:
        raise KavkaOptionError(f"option 'subscribePattern' is not a valid regular expression: {raw!r} ({e})") from None
    return SubscribePattern(raw)


# -- positions ------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Position:
    """Where a read starts or ends. ``kind``: ``earliest``, ``latest``,
    ``offsets`` (``offsets``: per partition, -2 earliest / -1 latest
    allowed), ``timestamp`` (``timestamp`` for all partitions) or
    ``timestamps`` (``offsets`` holds per-partition timestamps)."""

    kind: str
    offsets: Mapping[TopicPartition, int] = field(default_factory=dict)
    timestamp: int | None = None


EARLIEST_POSITION = Position("earliest")
LATEST_POSITION = Position("latest")


def _position(opts: Mapping[str, str], prefix: str, default: Position, *, ending: bool,
              streaming: bool) -> Position:
    ts_key, by_ts_key, offsets_key = f"{prefix}timestamp", f"{prefix}offsetsbytimestamp", f"{prefix}offsets"
    ts = _timestamp(opts, ts_key)
    if ts is not None:
        return Position("timestamp", timestamp=ts)
    if by_ts_key in opts:
        try:
            stamps = parse_partition_offsets(spelled(by_ts_key), opts[by_ts_key], allowed_negative=frozenset())
        except OffsetJsonError as e:
            raise KavkaOptionError(str(e)) from None
        return Position("timestamps", offsets=stamps)
    raw = opts.get(offsets_key)
    if raw is None:
        return default
    word = raw.strip().lower()
    name = spelled(offsets_key)
    if word == "earliest":
        if ending:
            raise KavkaOptionError(f"option '{name}' cannot be 'earliest': a batch query would read nothing; "
                                   "use 'latest' or per-partition offsets")
        return EARLIEST_POSITION
    if word == "latest":
        if not ending and not streaming:
            raise KavkaOptionError(f"option '{name}' cannot be 'latest' for a batch query: it would read nothing; "
                                   "use 'earliest' or per-partition offsets")
        return LATEST_POSITION
    # A batch may neither start at latest (-1) nor end at earliest (-2).
    allowed = frozenset({LATEST}) if ending else (frozenset({EARLIEST, LATEST}) if streaming else frozenset({EARLIEST}))
    try:
        return Position("offsets", offsets=parse_partition_offsets(name, raw, allowed_negative=allowed))
    except OffsetJsonError as e:
        raise KavkaOptionError(f"{e} (or use 'earliest' / 'latest')") from None


# -- the option sets ----------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class SourceOptions:
    """Everything a batch or streaming read needs; pickled to executors."""

    bootstrap_servers: str
    subscription: Subscription
    starting: Position
    ending: Position
    fail_on_data_loss: bool
    max_offsets_per_trigger: int | None
    min_offsets_per_trigger: int | None
    max_trigger_delay_ms: int
    min_partitions: int | None
    include_headers: bool
    timestamp_strategy_latest: bool
    client: tuple[tuple[str, str], ...]

    @property
    def security(self) -> Settings:
        return security_settings(self.client)

    @property
    def client_rack(self) -> str:
        """``kafka.client.rack`` ("" when unset)."""
        return dict(self.client).get("client.rack", "").strip()

    def reader_rack(self, environ: Mapping[str, str]) -> str:
        """The rack a reader's fetches carry (KIP-392): ``kafka.client.rack``
        when the query sets it, else the executor's own ``KAVKA_CLIENT_RACK``
        (``environ``: the executor's environment, set on each worker host
        with its rack), else "" (read from the leaders). One query then
        reads, on every executor, from the replica in that executor's rack."""
        if self.client_rack:
            return self.client_rack
        rack = environ.get(RACK_ENV, "").strip()
        _check_rack(rack, f"environment variable {RACK_ENV} of this executor")
        return rack

    @property
    def read_committed(self) -> bool:
        return dict(self.client).get("isolation.level", "read_committed") == "read_committed"

    @overload
    def client_setting(self, key: str, default: str) -> str: ...

    @overload
    def client_setting(self, key: str, default: None = None) -> str | None: ...

    def client_setting(self, key: str, default: str | None = None) -> str | None:
        return dict(self.client).get(key, default)


def _check_rack(rack: str, source: str) -> None:
    if len(rack.encode()) > 255 or any(not ch.isprintable() for ch in rack):
        raise KavkaOptionError(f"{source} must be a rack name of at most 255 printable "
                               f"characters (a broker's broker.rack), got {rack[:40]!r}")


def parse_source_options(options: Mapping[str, str], *, streaming: bool) -> SourceOptions:
    opts = _lower(options)
    servers = _bootstrap(opts)
    subscription = parse_subscription(opts)
    starting = _position(opts, "starting", LATEST_POSITION if streaming else EARLIEST_POSITION,
                         ending=False, streaming=streaming)
    if streaming:
        for key in ("endingoffsets", "endingtimestamp", "endingoffsetsbytimestamp"):
            if key in opts:
                raise KavkaOptionError(f"option '{spelled(key)}' is for batch queries only; "
                                       "a stream reads until it is stopped")
        ending = LATEST_POSITION
    else:
        ending = _position(opts, "ending", LATEST_POSITION, ending=True, streaming=False)
        for key in ("maxoffsetspertrigger", "minoffsetspertrigger", "maxtriggerdelay"):
            if key in opts:
                raise KavkaOptionError(f"option '{spelled(key)}' is for streaming queries only")
    strategy = opts.get("startingoffsetsbytimestampstrategy", "error").strip().lower()
    if strategy not in ("error", "latest"):
        raise KavkaOptionError("option 'startingOffsetsByTimestampStrategy' must be 'error' or 'latest', "
                               f"got {opts['startingoffsetsbytimestampstrategy']!r}")
    client = _client_settings(opts, _SOURCE_MANAGED)
    _check_security(client, librdkafka=False)
    isolation = dict(client).get("isolation.level", "read_committed")
    if isolation not in ("read_committed", "read_uncommitted"):
        raise KavkaOptionError(f"option 'kafka.isolation.level' must be 'read_committed' or 'read_uncommitted', "
                               f"got {isolation!r}")
    _check_rack(dict(client).get("client.rack", ""), "option 'kafka.client.rack'")
    for key in ("max.partition.fetch.bytes", "fetch.max.bytes", "request.timeout.ms", "fetch.max.wait.ms",
                "retry.backoff.ms", "default.api.timeout.ms"):
        _positive({f"kafka.{key}": v for k, v in client if k == key}, f"kafka.{key}")
    return SourceOptions(
        bootstrap_servers=servers, subscription=subscription, starting=starting, ending=ending,
        fail_on_data_loss=_bool(opts, "failondataloss", True),
        max_offsets_per_trigger=_positive(opts, "maxoffsetspertrigger"),
        min_offsets_per_trigger=_positive(opts, "minoffsetspertrigger"),
        max_trigger_delay_ms=_duration_ms(opts, "maxtriggerdelay", 15 * 60 * 1000),
        min_partitions=_positive(opts, "minpartitions"),
        include_headers=_bool(opts, "includeheaders", False),
        timestamp_strategy_latest=strategy == "latest",
        client=client)


@dataclass(frozen=True, slots=True)
class SinkOptions:
    """What a batch or streaming write needs; pickled to executors.
    ``producer`` holds the ``kafka.*`` settings for librdkafka."""

    bootstrap_servers: str
    topic: str | None
    producer: tuple[tuple[str, str], ...]
    commit_topic: str

    @property
    def security(self) -> Settings:
        return security_settings(self.producer)


DEFAULT_COMMIT_TOPIC = "_kavka_spark_sink_commits"


def parse_sink_options(options: Mapping[str, str]) -> SinkOptions:
    opts = _lower(options)
    servers = _bootstrap(opts)
    topic = opts.get("topic")
    if topic is not None and not topic.strip():
        raise KavkaOptionError("option 'topic' must be a non-empty topic name when given")
    for key in _STRATEGIES:
        if key in opts:
            raise KavkaOptionError(f"option '{spelled(key)}' is for reading; to write, set option 'topic' "
                                   "or a 'topic' column")
    commit_topic = opts.get("committopic", DEFAULT_COMMIT_TOPIC).strip()
    if not commit_topic:
        raise KavkaOptionError("option 'commitTopic' must be a non-empty topic name when given")
    producer = _client_settings(opts, _SINK_MANAGED)
    _check_security(producer, librdkafka=True)
    return SinkOptions(servers, topic.strip() if topic else None, producer, commit_topic)
