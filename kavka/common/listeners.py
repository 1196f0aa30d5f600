"""Listener endpoints and ZooKeeper connect strings, as written in ``server.properties``.

Formats (Kafka's):

- a listener is ``NAME://host:port``: ``NAME`` is a listener name mapped to a
  security protocol by ``listener.security.protocol.map``; ``host`` may be
  empty (bind every interface / advertise the canonical host name), a name,
  an IPv4 address or a bracketed IPv6 address; ``port`` is 0..65535, 0 asking
  the OS for a free port when binding.
- ``zookeeper.connect`` is ``host:port[,host:port...][/chroot]``; the chroot
  applies to every server (ZooKeeper's own client syntax).
- a per-listener override is ``listener.name.<listener>.<key>``, or
  ``listener.name.<listener>.<mechanism>.<key>`` for a SASL mechanism's own
  settings, names lower-case (Kafka's ``ListenerName.configPrefix`` and
  ``saslMechanismConfigPrefix``); ``ListenerConfig`` is one listener's view
  of the broker config with its overrides applied.

Pure values and functions; any thread. Errors are ``ConfigError`` naming the
config key and what is allowed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kavka.common.config import ConfigError

# Kafka's security protocols, in the order of their wire ids (UpdateMetadata's
# security_protocol: PLAINTEXT 0, SSL 1, SASL_PLAINTEXT 2, SASL_SSL 3).
SECURITY_PROTOCOLS: tuple[str, ...] = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
TLS_PROTOCOLS = frozenset({"SSL", "SASL_SSL"})
SASL_PROTOCOLS = frozenset({"SASL_PLAINTEXT", "SASL_SSL"})
LISTENER_PREFIX = "listener.name."
_LISTENER_KEY_RE = re.compile(r"^listener\.name\.(?P<name>[A-Za-z_][A-Za-z0-9_]*)\.(?P<rest>.+)$")
_MECHANISM_RE = re.compile(r"^[a-z0-9][a-z0-9_-]*$")

_LISTENER_RE = re.compile(r"^(?P<name>[A-Za-z_][A-Za-z0-9_]*)://(?P<host>\[[0-9A-Fa-f:.]+\]|[^:/\[\]\s]*):(?P<port>-?\d+)$")
_HOST_PORT_RE = re.compile(r"^(?P<host>\[[0-9A-Fa-f:.]+\]|[^:/\[\]\s,]+):(?P<port>\d+)$")


@dataclass(frozen=True, slots=True)
class EndPoint:
    """One listener: where a broker binds or what it advertises.

    ``listener_name`` is upper-case (Kafka normalises names); ``host`` is
    stored without IPv6 brackets and may be empty; ``port`` is 0..65535.
    """

    listener_name: str
    host: str
    port: int
    security_protocol: str

    def connection_string(self) -> str:
        """``NAME://host:port`` as written in ``endpoints`` of /brokers/ids/<id>."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.listener_name}://{host}:{self.port}"


def parse_security_protocol_map(key: str, items: Iterable[str]) -> dict[str, str]:
    """``NAME:PROTOCOL`` pairs to a dict (names upper-cased). Each protocol
    must be one of Kafka's security protocols; each name appears once."""
    out: dict[str, str] = {}
    for item in items:
        name, sep, proto = item.partition(":")
        name, proto = name.strip().upper(), proto.strip().upper()
        if not sep or not name or not proto:
            raise ConfigError(key, f"entry {item!r} is not NAME:PROTOCOL (e.g. PLAINTEXT:PLAINTEXT)")
        if proto not in SECURITY_PROTOCOLS:
            raise ConfigError(key, f"entry {item!r}: security protocol {proto!r} is not allowed; allowed values: {', '.join(SECURITY_PROTOCOLS)}")
        if name in out:
            raise ConfigError(key, f"listener name {name} is mapped twice")
        out[name] = proto
    return out


def parse_listeners(key: str, items: Iterable[str], protocol_map: Mapping[str, str]) -> tuple[EndPoint, ...]:
    """Parse a ``listeners`` / ``advertised.listeners`` list.

    Each entry must match ``NAME://host:port``, have a name present in
    ``protocol_map``, and a port in 0..65535. Names must be unique, and so
    must non-zero ports (two listeners cannot bind one port).
    """
    endpoints: list[EndPoint] = []
    for item in items:
        m = _LISTENER_RE.match(item.strip())
        if m is None:
            raise ConfigError(key, f"listener {item!r} is not NAME://host:port (e.g. PLAINTEXT://127.0.0.1:9092)")
        name = m.group("name").upper()
        host = m.group("host")
        if host.startswith("["):
            host = host[1:-1]
        port = int(m.group("port"))
        if not 0 <= port <= 65535:
            raise ConfigError(key, f"listener {item!r}: port {port} is out of range; allowed: [0, 65535]")
        proto = protocol_map.get(name)
        if proto is None:
            raise ConfigError(
                key,
                f"listener {item!r}: no security protocol for listener name {name}; "
                f"map it in listener.security.protocol.map (known names: {', '.join(sorted(protocol_map))})",
            )
        endpoints.append(EndPoint(name, host, port, proto))
    names = [e.listener_name for e in endpoints]
    for n in names:
        if names.count(n) > 1:
            raise ConfigError(key, f"listener name {n} is used more than once; each listener needs its own name")
    ports = [e.port for e in endpoints if e.port != 0]
    for p in ports:
        if ports.count(p) > 1:
            raise ConfigError(key, f"port {p} is used by more than one listener; each listener needs its own port")
    return tuple(endpoints)


@dataclass(frozen=True, slots=True)
class ListenerKey:
    """A parsed ``listener.name.<listener>[.<mechanism>].<key>``:
    ``listener`` upper-case (the listener's name), ``mechanism`` upper-case
    or None, ``key`` the broker key it overrides."""

    listener: str
    mechanism: str | None
    key: str

    @property
    def scoped_key(self) -> str:
        """The key as the listener sees it: ``key`` or ``<mechanism>.<key>``
        (Kafka's valuesWithPrefixOverride keeps the mechanism prefix)."""
        return self.key if self.mechanism is None else f"{self.mechanism.lower()}.{self.key}"


def parse_listener_key(name: str, listener_keys: frozenset[str],
                       mechanism_keys: frozenset[str]) -> ListenerKey | None:
    """``listener.name.sasl_ssl.ssl.keystore.location`` ->
    ListenerKey("SASL_SSL", None, "ssl.keystore.location");
    ``listener.name.sasl_ssl.plain.sasl.jaas.config`` -> ListenerKey("SASL_SSL",
    "PLAIN", "sasl.jaas.config"). None when ``name`` is not under
    ``listener.name.``; ``ConfigError`` naming ``name`` when it is but is not a
    key a listener may override."""
    if not name.startswith(LISTENER_PREFIX):
        return None
    m = _LISTENER_KEY_RE.match(name)
    if m is None:
        raise ConfigError(name, "is not listener.name.<listener>.<key> (e.g. listener.name.ssl.ssl.keystore.location)")
    listener, rest = m.group("name"), m.group("rest")
    if listener != listener.lower():
        raise ConfigError(name, f"the listener name in a listener.name. prefix is lower-case, as in Kafka: "
                                f"listener.name.{listener.lower()}.{rest}")
    if rest in listener_keys:
        return ListenerKey(listener.upper(), None, rest)
    mechanism, _, key = rest.partition(".")
    if key in mechanism_keys and _MECHANISM_RE.match(mechanism):
        return ListenerKey(listener.upper(), mechanism.upper(), key)
    if key in mechanism_keys:
        raise ConfigError(name, f"the SASL mechanism in listener.name.{listener}.<mechanism>.{key} is lower-case, "
                                f"as in Kafka (e.g. listener.name.{listener}.scram-sha-512.{key})")
    raise ConfigError(name, f"{rest!r} cannot be set per listener; a listener may override "
                            f"{', '.join(sorted(listener_keys))}, and per SASL mechanism "
                            f"(listener.name.<listener>.<mechanism>.<key>) {', '.join(sorted(mechanism_keys))}")


@dataclass(frozen=True, slots=True)
class ListenerConfig:
    """One listener's view of the broker config (Kafka's
    ``valuesWithPrefixOverride(listenerName.configPrefix())``): ``self[key]``
    is the listener's override of ``key`` when it has one, else the broker's
    value; ``mechanism_value(mechanism, key)`` looks for the mechanism's own
    override first. ``source(key)`` names the config key a value came from,
    for error messages."""

    listener_name: str
    security_protocol: str
    base: Mapping[str, Any]
    overrides: Mapping[str, Any]  # scoped key (``key`` or ``<mechanism>.<key>``) -> typed value

    @property
    def prefix(self) -> str:
        return f"{LISTENER_PREFIX}{self.listener_name.lower()}."

    def __getitem__(self, key: str) -> Any:
        if key in self.overrides:
            return self.overrides[key]
        return self.base[key]

    def overridden(self, key: str) -> bool:
        return key in self.overrides

    def source(self, key: str) -> str:
        return self.prefix + key if key in self.overrides else key

    def mechanism_value(self, mechanism: str, key: str) -> Any:
        scoped = f"{mechanism.lower()}.{key}"
        return self.overrides[scoped] if scoped in self.overrides else self[key]

    def mechanism_source(self, mechanism: str, key: str) -> str:
        scoped = f"{mechanism.lower()}.{key}"
        return self.prefix + scoped if scoped in self.overrides else self.source(key)


@dataclass(frozen=True, slots=True)
class ZkConnect:
    """A parsed ``zookeeper.connect``: servers and an optional chroot.

    ``chroot`` is "" or an absolute path without a trailing slash, e.g.
    ``/kavka``. ``hosts_string()`` is what kazoo's ``hosts`` wants without the
    chroot; ``str()`` gives back the full connect string.
    """

    hosts: tuple[tuple[str, int], ...]
    chroot: str = ""

    def hosts_string(self) -> str:
        return ",".join(f"[{h}]:{p}" if ":" in h else f"{h}:{p}" for h, p in self.hosts)

    def __str__(self) -> str:
        return self.hosts_string() + self.chroot


def validate_chroot(key: str, chroot: str) -> str:
    """Check a ZooKeeper path used as a chroot: absolute, no empty, ``.`` or
    ``..`` segment, no trailing slash. Returns it unchanged."""
    if chroot == "":
        return chroot
    segments = chroot.split("/")
    if not chroot.startswith("/") or chroot == "/" or any(s in ("", ".", "..") for s in segments[1:]):
        raise ConfigError(key, f"chroot {chroot!r} is not a valid ZooKeeper path (absolute, e.g. /kavka, no trailing '/')")
    return chroot


def parse_zk_connect(key: str, value: str) -> ZkConnect:
    """Parse ``host:port[,host:port...][/chroot]``."""
    value = value.strip()
    slash = value.find("/")
    hosts_part, chroot = (value, "") if slash < 0 else (value[:slash], value[slash:])
    validate_chroot(key, chroot)
    hosts: list[tuple[str, int]] = []
    for part in hosts_part.split(","):
        m = _HOST_PORT_RE.match(part.strip())
        if m is None:
            raise ConfigError(key, f"{part.strip()!r} is not host:port; expected host:port[,host:port...][/chroot], e.g. 127.0.0.1:2181/kavka")
        host = m.group("host").strip("[]")
        port = int(m.group("port"))
        if not 1 <= port <= 65535:
            raise ConfigError(key, f"port {port} in {part.strip()!r} is out of range; allowed: [1, 65535]")
        hosts.append((host, port))
    return ZkConnect(tuple(hosts), chroot)
