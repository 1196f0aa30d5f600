"""The broker configuration (``server.properties``) with Kafka's names and defaults.

``KafkaConfig`` holds every key of ``broker_config_keys.BROKER_CONFIG`` typed
and cross-checked, plus the values derived from several keys (listeners,
log directories, retention from ms/minutes/hours, the ZooKeeper connect
string and its chroot). ``from_properties_file(path, overrides)`` reads a
Java-properties file and ``key=value`` overrides (``kavka server start
--override``). ``log_defaults(config)`` gives the topic-level defaults
(``segment.bytes``, ``retention.ms`` ...) the log manager applies to every
topic without its own override (seed 002 §8).

Every failure is a ``ConfigError`` naming the key, where it came from (file
or ``--override``), the bad value and what is allowed, e.g.::

    config 'log.cleanup.policy' in /x/server.properties: value 'foo' is not
    allowed; allowed values: delete, compact

Pure values; any thread. ``from_properties_file`` reads one file.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, ClassVar

from kavka.common.broker_config_keys import (
    BROKER_CONFIG,
    CONNECTION_LISTENER_KEYS,
    DYNAMIC_BROKER_KEYS,
    LISTENER_KEYS,
    MECHANISM_KEYS,
    REFUSED_BROKER_KEYS,
    SASL_LISTENER_KEYS,
    SSL_KEYS,
    TOPIC_SYNONYMS,
)
from kavka.common.config import NO_DEFAULT, ConfigError, load_properties
from kavka.common.listeners import (
    SASL_PROTOCOLS,
    TLS_PROTOCOLS,
    EndPoint,
    ListenerConfig,
    ListenerKey,
    ZkConnect,
    parse_listener_key,
    parse_listeners,
    parse_security_protocol_map,
    parse_zk_connect,
)

OVERRIDE_SOURCE = "--override"

__all__ = [
    "ConfigError",
    "ConfigFileError",
    "KafkaConfig",
    "from_properties_file",
    "log_defaults",
    "parse_overrides",
]


class ConfigFileError(ConfigError):
    """The properties file cannot be read (missing, unreadable, not UTF-8)."""

    def __init__(self, path: str, reason: str) -> None:
        ConfigError.__init__(self, "server.properties", f"cannot read {path}: {reason}")
        self.path = path


@dataclass(frozen=True, slots=True)
class KafkaConfig:
    """A validated broker configuration.

    ``values`` maps every key of ``BROKER_CONFIG`` to its typed value (given or
    default; nullable keys may be None); ``config["log.segment.bytes"]`` reads
    one. The other fields are derived and cross-checked:

    - ``listeners`` / ``advertised_listeners``: parsed endpoints; advertised
      defaults to listeners, its names are a subset of the listeners' names,
      and its hosts are never the unroutable 0.0.0.0.
    - ``listener_overrides``: listener name -> its ``listener.name.<l>.*``
      keys, typed (``listener_config(name)`` applies them); each names a
      listener of ``listeners``, TLS keys only on SSL/SASL_SSL listeners,
      SASL keys only on SASL listeners, a mechanism's keys only for a
      mechanism the listener enables.
    - ``inter_broker_listener_name``: a name present in advertised listeners;
      when it is a SASL listener, it enables
      ``sasl.mechanism.inter.broker.protocol``.
    - ``log_dirs``: ``log.dirs`` or else ``log.dir``, no duplicates, not empty.
    - ``retention_ms``, ``roll_ms``, ``roll_jitter_ms``, ``flush_ms``: Kafka's
      ms > minutes > hours precedence; ``retention_ms`` is -1 for "forever".
    - ``zookeeper``: servers and chroot; ``zookeeper_connection_timeout_ms``
      defaults to the session timeout.
    - ``originals``: the static key/values as given (file then overrides),
      kept so dynamic broker configs can be layered over them.
    """

    # Not in repr: passwords are Password values, but originals hold them as given.
    values: Mapping[str, Any] = field(repr=False)
    originals: Mapping[str, Any] = field(repr=False)
    listener_overrides: Mapping[str, Mapping[str, Any]] = field(repr=False)
    source: str
    broker_id: int
    listeners: tuple[EndPoint, ...]
    advertised_listeners: tuple[EndPoint, ...]
    inter_broker_listener_name: str
    log_dirs: tuple[str, ...]
    zookeeper: ZkConnect
    zookeeper_connection_timeout_ms: int
    retention_ms: int
    roll_ms: int
    roll_jitter_ms: int
    flush_ms: int

    # Each derived field and the keys it is computed from: reading the field
    # reads them (the config-key walk counts it so).
    DERIVED_FROM: ClassVar[Mapping[str, tuple[str, ...]]] = MappingProxyType({
        "broker_id": ("broker.id",),
        "listeners": ("listeners", "listener.security.protocol.map"),
        "advertised_listeners": ("advertised.listeners", "listeners", "listener.security.protocol.map"),
        "inter_broker_listener_name": ("inter.broker.listener.name", "security.inter.broker.protocol"),
        "log_dirs": ("log.dirs", "log.dir"),
        "zookeeper": ("zookeeper.connect",),
        "zookeeper_connection_timeout_ms": ("zookeeper.connection.timeout.ms", "zookeeper.session.timeout.ms"),
        "retention_ms": ("log.retention.ms", "log.retention.minutes", "log.retention.hours"),
        "roll_ms": ("log.roll.ms", "log.roll.hours"),
        "roll_jitter_ms": ("log.roll.jitter.ms", "log.roll.jitter.hours"),
        "flush_ms": ("log.flush.interval.ms", "log.flush.scheduler.interval.ms"),
    })

    def __getitem__(self, name: str) -> Any:
        try:
            return self.values[name]
        except KeyError:
            raise ConfigError(name, _unknown_message(name)) from None

    def listener_config(self, listener_name: str) -> ListenerConfig:
        """The config as listener ``listener_name`` sees it, its
        ``listener.name.<listener>.*`` overrides applied."""
        for ep in self.listeners:
            if ep.listener_name == listener_name:
                return ListenerConfig(listener_name, ep.security_protocol, self.values,
                                      self.listener_overrides.get(listener_name, MappingProxyType({})))
        raise ConfigError("listeners", f"there is no listener {listener_name} "
                                       f"(listeners: {', '.join(ep.listener_name for ep in self.listeners)})")

    @classmethod
    def from_props(
        cls,
        props: Mapping[str, Any],
        source: str = "",
        sources: Mapping[str, str] | None = None,
        *,
        assigned_broker_id: int | None = None,
    ) -> KafkaConfig:
        """Parse and cross-check raw values (strings or typed). ``sources``
        optionally names where each key came from, for error messages;
        ``source`` is used for keys without an entry there.
        ``assigned_broker_id``: the id the broker took at startup
        (``with_broker_id``), which replaces the configured one once that
        is checked."""
        sources = sources or {}
        values: dict[str, Any] = {}
        overrides: dict[str, dict[str, Any]] = {}
        listener_keys: dict[str, ListenerKey] = {}
        for name, raw in props.items():
            where = sources.get(name, source)
            if name in REFUSED_BROKER_KEYS:
                raise ConfigError(name, f"is not supported: {REFUSED_BROKER_KEYS[name]}", where)
            if name not in BROKER_CONFIG:
                lk = _wrap(where, lambda name=name: parse_listener_key(name, LISTENER_KEYS, MECHANISM_KEYS))
                if lk is None:
                    raise ConfigError(name, _unknown_message(name), where)
                value = BROKER_CONFIG.parse_value(lk.key, raw, where)
                overrides.setdefault(lk.listener, {})[lk.scoped_key] = value
                listener_keys[name] = lk
                continue
            values[name] = BROKER_CONFIG.parse_value(name, raw, where)
        for name, key in BROKER_CONFIG.keys.items():
            if name not in values:
                if key.default is NO_DEFAULT:
                    raise ConfigError(name, f"is required but was not given; {key.doc}", source)
                # Defaults are written as server.properties would (lists as
                # "a,b"), so they go through the same coercion.
                values[name] = None if key.default is None else BROKER_CONFIG.parse_value(name, key.default, "default")
        return cls._derive(values, overrides, listener_keys, dict(props), source, sources, assigned_broker_id)

    @classmethod
    def _derive(cls, v: dict[str, Any], overrides: dict[str, dict[str, Any]], listener_keys: Mapping[str, ListenerKey],
                originals: dict[str, Any], source: str, sources: Mapping[str, str],
                assigned_broker_id: int | None = None) -> KafkaConfig:
        def err(key: str, message: str) -> ConfigError:
            return ConfigError(key, message, sources.get(key, source))

        broker_id = v["broker.id"]
        if broker_id < 0 and not v["broker.id.generation.enable"]:
            raise err("broker.id", "is -1 but broker.id.generation.enable is false; set broker.id to an id >= 0")
        if broker_id > v["reserved.broker.max.id"] and v["broker.id.generation.enable"]:
            raise err("broker.id", f"value {broker_id} is above reserved.broker.max.id ({v['reserved.broker.max.id']}), where generated ids live; use a smaller id or raise reserved.broker.max.id")
        if assigned_broker_id is not None:
            if assigned_broker_id < 0:
                raise ValueError(f"an assigned broker id is >= 0, not {assigned_broker_id}")
            v["broker.id"] = broker_id = assigned_broker_id
        if v["max.connections.per.ip"] == 0 and not v["max.connections.per.ip.overrides"]:
            raise err("max.connections.per.ip", "can be 0 only with max.connections.per.ip.overrides "
                                                "(the addresses that may connect at all)")

        protocol_map = _wrap(sources.get("listener.security.protocol.map", source), lambda: parse_security_protocol_map("listener.security.protocol.map", v["listener.security.protocol.map"]))
        listeners = _wrap(sources.get("listeners", source), lambda: parse_listeners("listeners", v["listeners"], protocol_map))
        if not listeners:
            raise err("listeners", "no listener given; expected e.g. PLAINTEXT://127.0.0.1:9092")
        _check_listener_overrides(v, overrides, listener_keys,
                                  {ep.listener_name: ep.security_protocol for ep in listeners}, source, sources)
        if v["advertised.listeners"] is None:
            advertised = listeners
        else:
            advertised = _wrap(sources.get("advertised.listeners", source), lambda: parse_listeners("advertised.listeners", v["advertised.listeners"], protocol_map))
            names = {ep.listener_name for ep in listeners}
            for ep in advertised:
                if ep.listener_name not in names:
                    raise err("advertised.listeners", f"listener name {ep.listener_name} is not in listeners ({', '.join(sorted(names))})")
        for ep in advertised:
            if ep.host == "0.0.0.0" or ep.host == "::":
                raise err("advertised.listeners" if v["advertised.listeners"] is not None else "listeners", f"{ep.connection_string()} advertises the unroutable meta-address {ep.host}; set advertised.listeners to an address clients can reach")

        ibl = v["inter.broker.listener.name"]
        if ibl is not None:
            if "security.inter.broker.protocol" in originals:
                raise err("inter.broker.listener.name", "set either inter.broker.listener.name or security.inter.broker.protocol, not both")
            ibl = ibl.upper()
            key = "inter.broker.listener.name"
        else:
            ibl = v["security.inter.broker.protocol"]
            key = "security.inter.broker.protocol"
        if ibl not in {ep.listener_name for ep in advertised}:
            raise err(key, f"listener {ibl} is not among the advertised listeners ({', '.join(ep.listener_name for ep in advertised)}); brokers must be able to reach each other on it")
        ibl_protocol = next(ep.security_protocol for ep in listeners if ep.listener_name == ibl)
        if ibl_protocol in SASL_PROTOCOLS:
            mechanism = v["sasl.mechanism.inter.broker.protocol"]
            enabled = overrides.get(ibl, {}).get("sasl.enabled.mechanisms", v["sasl.enabled.mechanisms"])
            if mechanism not in enabled:
                raise err("sasl.mechanism.inter.broker.protocol",
                          f"{mechanism} is not among the SASL mechanisms of the inter-broker listener {ibl} "
                          f"({', '.join(enabled) or 'none'}); brokers could not authenticate to each other")
        if v["connection.failed.authentication.delay.ms"] >= v["connections.max.idle.ms"]:
            raise err("connection.failed.authentication.delay.ms",
                      f"value {v['connection.failed.authentication.delay.ms']} must be less than "
                      f"connections.max.idle.ms ({v['connections.max.idle.ms']})")

        log_dirs = tuple(v["log.dirs"]) if v["log.dirs"] is not None else (v["log.dir"],)
        log_dirs_key = "log.dirs" if v["log.dirs"] is not None else "log.dir"
        if not log_dirs or any(not d for d in log_dirs):
            raise err(log_dirs_key, "no data directory given; expected e.g. /var/lib/kavka/data")
        if len(set(log_dirs)) != len(log_dirs):
            raise err(log_dirs_key, f"a directory is listed twice in {', '.join(log_dirs)}")

        zk = _wrap(sources.get("zookeeper.connect", source), lambda: parse_zk_connect("zookeeper.connect", v["zookeeper.connect"]))

        if v["replica.fetch.wait.max.ms"] > v["replica.lag.time.max.ms"]:
            raise err("replica.fetch.wait.max.ms", f"value {v['replica.fetch.wait.max.ms']} exceeds replica.lag.time.max.ms ({v['replica.lag.time.max.ms']}); followers would fall out of the ISR while waiting")
        if v["group.min.session.timeout.ms"] > v["group.max.session.timeout.ms"]:
            raise err("group.min.session.timeout.ms", "is larger than group.max.session.timeout.ms")
        if not v["log.cleanup.policy"]:
            raise err("log.cleanup.policy", "is empty; allowed values: delete, compact (or both)")

        # Kafka's precedence: ms beats minutes beats hours (KafkaConfig.logRetentionTimeMillis).
        if v["log.retention.ms"] is not None:
            retention = v["log.retention.ms"]
        elif v["log.retention.minutes"] is not None:
            retention = v["log.retention.minutes"] * 60_000
        else:
            retention = v["log.retention.hours"] * 3_600_000
        if retention < 0:
            retention = -1
        roll = v["log.roll.ms"] if v["log.roll.ms"] is not None else v["log.roll.hours"] * 3_600_000
        jitter = v["log.roll.jitter.ms"] if v["log.roll.jitter.ms"] is not None else v["log.roll.jitter.hours"] * 3_600_000
        flush = v["log.flush.interval.ms"] if v["log.flush.interval.ms"] is not None else v["log.flush.scheduler.interval.ms"]
        zk_timeout = v["zookeeper.connection.timeout.ms"]
        if zk_timeout is None:
            zk_timeout = v["zookeeper.session.timeout.ms"]

        return cls(
            values=MappingProxyType(dict(v)),
            originals=MappingProxyType(dict(originals)),
            listener_overrides=MappingProxyType({k: MappingProxyType(o) for k, o in overrides.items()}),
            source=source,
            broker_id=broker_id,
            listeners=listeners,
            advertised_listeners=advertised,
            inter_broker_listener_name=ibl,
            log_dirs=log_dirs,
            zookeeper=zk,
            zookeeper_connection_timeout_ms=zk_timeout,
            retention_ms=retention,
            roll_ms=roll,
            roll_jitter_ms=jitter,
            flush_ms=flush,
        )

    def with_broker_id(self, broker_id: int) -> KafkaConfig:
        """The config of a broker whose id came from ``meta.properties`` or
        was generated (``broker.id=-1``): as Kafka sets ``config.brokerId``
        at startup, past the check that keeps configured ids at or below
        ``reserved.broker.max.id`` (generated ids live above it)."""
        return KafkaConfig.from_props(self.originals, self.source, assigned_broker_id=broker_id)

    def with_dynamic(self, cluster_default: Mapping[str, Any], per_broker: Mapping[str, Any]) -> KafkaConfig:
        """The config with dynamic broker configs layered on: per-broker
        (/config/brokers/<id>) beats cluster-default (/config/brokers/<default>)
        beats static (server.properties) beats the built-in default, as in
        Kafka. A key that cannot change live raises ``ConfigError``."""
        merged = dict(self.originals)
        sources: dict[str, str] = {k: self.source for k in merged}
        for where, layer in (("/config/brokers/<default>", cluster_default), (f"/config/brokers/{self.broker_id}", per_broker)):
            for key, raw in layer.items():
                if key not in DYNAMIC_BROKER_KEYS and not _dynamic_listener_key(key, where):
                    if key not in BROKER_CONFIG and not key.startswith("listener.name."):
                        raise ConfigError(key, _unknown_message(key), where)
                    raise ConfigError(key, "cannot be changed while the broker runs; set it in server.properties and restart", where)
                merged[key] = raw
                sources[key] = where
        config = KafkaConfig.from_props(merged, self.source, sources)
        if config.broker_id != self.broker_id:  # an id taken from meta.properties or generated stays
            config = KafkaConfig.from_props(merged, self.source, sources, assigned_broker_id=self.broker_id)
        return config


def _dynamic_listener_key(key: str, where: str) -> bool:
    """``listener.name.<listener>.max.connections`` and
    ``...max.connection.creation.rate`` may change live, as in Kafka."""
    lk = _wrap(where, lambda: parse_listener_key(key, LISTENER_KEYS, MECHANISM_KEYS))
    return lk is not None and lk.mechanism is None and lk.key in CONNECTION_LISTENER_KEYS


def _check_listener_overrides(v: Mapping[str, Any], overrides: Mapping[str, Mapping[str, Any]],
                              listener_keys: Mapping[str, ListenerKey], protocols: Mapping[str, str], source: str,
                              sources: Mapping[str, str]) -> None:
    """Every ``listener.name.<l>.*`` key must be one the listener uses: a
    key Kafka would silently ignore is refused here instead."""
    for name, lk in listener_keys.items():
        listener = lk.listener
        where = sources.get(name, source)
        protocol = protocols.get(listener)
        if protocol is None:
            raise ConfigError(name, f"there is no listener {listener} in listeners ({', '.join(protocols)})", where)
        if lk.key in SSL_KEYS and lk.mechanism is None and protocol not in TLS_PROTOCOLS:
            raise ConfigError(name, f"listener {listener} is {protocol}, which does not use TLS; "
                                    "ssl.* keys apply to SSL and SASL_SSL listeners", where)
        if (lk.mechanism is not None or lk.key in SASL_LISTENER_KEYS) and protocol not in SASL_PROTOCOLS:
            raise ConfigError(name, f"listener {listener} is {protocol}, which does not use SASL; "
                                    "SASL keys apply to SASL_PLAINTEXT and SASL_SSL listeners", where)
        if lk.mechanism is not None:
            enabled = overrides.get(listener, {}).get("sasl.enabled.mechanisms", v["sasl.enabled.mechanisms"])
            if lk.mechanism not in enabled:
                raise ConfigError(name, f"{lk.mechanism} is not among the SASL mechanisms of listener {listener} "
                                        f"({', '.join(enabled) or 'none'}; sasl.enabled.mechanisms)", where)


def _wrap(source: str, fn: Any) -> Any:
    """Run a listener/zk parser and add the source to its ConfigError."""
    try:
        return fn()
    except ConfigError as e:
        if not source:
            raise
        message = str(e).split(": ", 1)[1]
        raise ConfigError(e.key, message, source) from None


def _unknown_message(name: str) -> str:
    close = difflib.get_close_matches(name, list(BROKER_CONFIG.names()), n=3, cutoff=0.75)
    hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else "; see kavka/common/broker_config_keys.py for the keys Kavka knows"
    return f"unknown configuration key{hint}"


def parse_overrides(overrides: Iterable[str]) -> dict[str, str]:
    """``["key=value", ...]`` to a dict; later entries win. An entry without
    ``=`` or with an empty key raises ``ConfigError``."""
    out: dict[str, str] = {}
    for item in overrides:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ConfigError(item, "an override must be key=value, e.g. --override log.segment.bytes=1048576", OVERRIDE_SOURCE)
        out[key] = value.strip()
    return out


def from_properties_file(path: str, overrides: Iterable[str] = ()) -> KafkaConfig:
    """Read ``server.properties`` at ``path`` and apply ``key=value``
    overrides on top; raises ``ConfigFileError`` or ``ConfigError``."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise ConfigFileError(path, e.strerror or str(e)) from None
    except UnicodeDecodeError as e:
        raise ConfigFileError(path, f"not UTF-8 text ({e.reason} at byte {e.start})") from None
    props: dict[str, Any] = dict(load_properties(text, source=path))
    sources = {k: path for k in props}
    for key, value in parse_overrides(overrides).items():
        props[key] = value
        sources[key] = OVERRIDE_SOURCE
    return KafkaConfig.from_props(props, source=path, sources=sources)


def log_defaults(config: KafkaConfig) -> dict[str, Any]:
    """Topic-level defaults from the broker config, keyed by topic-level
    names (``segment.bytes``, ``retention.ms``, ``cleanup.policy`` ...), the
    values typed as the broker keys are. Derived keys use the broker's
    precedence rules (``retention.ms`` from ms/minutes/hours)."""
    derived = {
        "retention.ms": config.retention_ms,
        "segment.ms": config.roll_ms,
        "segment.jitter.ms": config.roll_jitter_ms,
        "flush.ms": config.flush_ms,
    }
    out: dict[str, Any] = {}
    for topic_key, broker_keys in TOPIC_SYNONYMS.items():
        if topic_key in derived:
            out[topic_key] = derived[topic_key]
        else:
            value = config[broker_keys[0]]
            out[topic_key] = list(value) if isinstance(value, list) else value
    return out
