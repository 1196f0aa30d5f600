"""Listener endpoints and ZooKeeper connect strings, as written in ``server.properties``.

Formats (Kafka's):

- a listener is ``NAME://host:port``: ``NAME`` is a listener name mapped to a
  security protocol by ``listener.security.protocol.map``; ``host`` may be
  empty (bind every interface / advertise the canonical host name), a name,
  an IPv4 address or a bracketed IPv6 address; ``port`` is 0..65535, 0 asking
  the OS for a free port when binding.
- ``zookeeper.connect`` is ``host:port[,host:port...][/chroot]``; the chroot
  applies to every server (ZooKeeper's own client syntax).

Pure values and functions; any thread. Errors are ``ConfigError`` naming the
config key and what is allowed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from kavka.common.config import ConfigError

# Kafka's security protocols. Kavka serves PLAINTEXT only: the others are
# known names (so a Kafka server.properties parses) but refused with a clear
# message when a listener actually uses them.
SECURITY_PROTOCOLS: tuple[str, ...] = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SUPPORTED_SECURITY_PROTOCOLS: tuple[str, ...] = ("PLAINTEXT",)

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
