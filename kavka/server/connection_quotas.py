"""Connection limits of a broker (Kafka's ``ConnectionQuotas``; KIP-402,
KIP-612).

Every connection accepted on any listener asks ``accept(listener, ip)``
before it is served, and ``release(listener, ip)`` when it closes. The
limits, as Kafka's broker configs name them:

- ``max.connections``: connections of the whole broker. Connections of the
  inter-broker listener count toward it but are never refused by it, so
  that brokers and the controller always reach each other (Kafka's
  protected listener, KIP-402);
- ``listener.name.<listener>.max.connections``: connections of one
  listener (inter-broker included);
- ``max.connections.per.ip``: connections from one address, all listeners
  together; ``max.connections.per.ip.overrides`` (``host:n,ip:n``, a host
  name resolved to its addresses when the config is applied, as Kafka
  does) sets another limit for some addresses;
- ``max.connection.creation.rate``: new connections per second on every
  listener but the inter-broker one, and
  ``listener.name.<listener>.max.connection.creation.rate`` on one
  listener (KIP-612). Each is measured over the client quotas' window
  (``quota.window.num`` x ``quota.window.size.seconds``, as Kafka's
  connection rate sensors are), as a token bucket (KIP-599's,
  ``kavka.security.quota.rate``): a burst of up to one window's worth of
  connections, then ``rate`` a second;
- ``connection_creation_rate`` of an ip entity (KIP-612, set through
  AlterClientQuotas or ``kavka configs --entity-type ips``, kept in
  ``/config/ips/<ip>`` and ``/config/ips/<default>``, applied by
  ``update_ip_connection_rate``): new connections a second from one
  address, the address's own quota else the default one, measured as the
  creation rates are, on every listener, the inter-broker one included (as
  Kafka's ConnectionQuotas.recordIpConnectionMaybeThrottle). Kafka
  keeps such a connection for the throttle time before closing it; Kavka
  closes it at once, as for the other rates. At most ``MAX_IP_RATES``
  addresses are measured at once (the least recently seen is forgotten:
  a flood from many addresses cannot grow the table without bound).

A connection over a limit is closed at once, unserved, and counted in
``refused`` by the config key that refused it (the metrics read these
attributes); connections already open keep working, also when a limit is
lowered while the broker runs (``update``). Kafka's acceptor instead stops
accepting for a while when ``max.connections`` or a creation rate is
reached (the client's connection waits in the listen backlog); asyncio's
accept loop cannot be held back per listener, so Kavka refuses, and the
client retries after its reconnect backoff. The address checks come first,
then the rates: a refused connection takes no token.

Refusals are logged at most once per ``LOG_INTERVAL_S`` per key, with the
count since the last line (a connection storm must not flood the log).

Event loop only (not thread-safe). Time comes from a ``Clock`` (tests
drive the rates with ``ManualClock``).
"""

from __future__ import annotations

import collections
import ipaddress
import logging
import socket
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from kavka.common.broker_config_keys import parse_ip_overrides
from kavka.common.clock import Clock, SystemClock
from kavka.security.quota.rate import QuotaWindow, TokenBucket

log = logging.getLogger("kavka.network")

INT_MAX = 2**31 - 1
LOG_INTERVAL_S = 10.0
MAX_IP_RATES = 50_000
IP_CONNECTION_RATE = "connection_creation_rate"

MAX_CONNECTIONS = "max.connections"
MAX_CONNECTIONS_PER_IP = "max.connections.per.ip"
MAX_CONNECTION_CREATION_RATE = "max.connection.creation.rate"


def listener_key(listener: str, key: str) -> str:
    """``listener.name.<listener>.<key>``, the listener's name lower-case
    (Kafka's ``ListenerName.configPrefix``)."""
    return f"listener.name.{listener.lower()}.{key}"


def _canonical(ip: str) -> str:
    try:
        addr = ipaddress.ip_address(ip)
    except ValueError:
        return ip
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        addr = addr.ipv4_mapped
    return str(addr)


def resolve_overrides(overrides: Mapping[str, int]) -> dict[str, int]:
    """Host names to every address they resolve to (Kafka resolves each
    with ``InetAddress.getByName`` when the config is applied). A name that
    does not resolve is logged and left out."""
    out: dict[str, int] = {}
    for host, n in overrides.items():
        try:
            ipaddress.ip_address(host)
            out[_canonical(host)] = n
            continue
        except ValueError:
            pass
        try:
            infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
        except OSError as e:
            log.warning("max.connections.per.ip.overrides: cannot resolve %r (%s); no override for it", host, e)
            continue
        for info in infos:
            out[_canonical(str(info[4][0]))] = n
    return out


@dataclass(frozen=True, slots=True)
class ConnectionQuotaConfig:
    """The limits (see the module docstring); INT_MAX means none.
    ``per_ip_overrides`` maps addresses (names already resolved)."""

    max_connections: int = INT_MAX
    max_connections_per_ip: int = INT_MAX
    per_ip_overrides: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    max_connection_creation_rate: int = INT_MAX
    listener_max_connections: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    listener_max_connection_creation_rate: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    inter_broker_listener: str | None = None
    rate_window: QuotaWindow = QuotaWindow()

    @classmethod
    def from_broker(cls, config: Any, listeners: Mapping[str, Mapping[str, Any]] | None = None,
                    inter_broker_listener: str | None = None) -> ConnectionQuotaConfig:
        """From broker config values (``config[key]``); ``listeners`` maps a
        listener name to its own ``max.connections`` and
        ``max.connection.creation.rate`` where set."""
        listeners = listeners or {}
        return cls(
            max_connections=config[MAX_CONNECTIONS],
            max_connections_per_ip=config[MAX_CONNECTIONS_PER_IP],
            per_ip_overrides=MappingProxyType(resolve_overrides(
                parse_ip_overrides(config["max.connections.per.ip.overrides"] or ""))),
            max_connection_creation_rate=config[MAX_CONNECTION_CREATION_RATE],
            listener_max_connections=MappingProxyType(
                {name: v[MAX_CONNECTIONS] for name, v in listeners.items() if MAX_CONNECTIONS in v}),
            listener_max_connection_creation_rate=MappingProxyType(
                {name: v[MAX_CONNECTION_CREATION_RATE] for name, v in listeners.items()
                 if MAX_CONNECTION_CREATION_RATE in v}),
            inter_broker_listener=inter_broker_listener,
            rate_window=QuotaWindow(config["quota.window.num"], config["quota.window.size.seconds"] * 1000))

    def limit_per_ip(self, ip: str) -> int:
        return self.per_ip_overrides.get(ip, self.max_connections_per_ip)


class _Rate:
    """One creation rate: KIP-599's token bucket at ``rate`` a second."""

    __slots__ = ("rate", "bucket")

    def __init__(self, rate: int, window: QuotaWindow, now_ms: int) -> None:
        self.rate = rate
        self.bucket = TokenBucket(window, rate, now_ms)

    def available(self, now_ms: int) -> bool:
        return self.bucket.tokens(self.rate, now_ms) >= 1.0

    def take(self, now_ms: int) -> None:
        self.bucket.record(1.0, self.rate, now_ms)


class ConnectionQuotas:
    """See the module docstring. ``connections`` (total), ``per_listener``
    and ``per_ip`` count the open connections accepted; ``refused`` counts
    refusals by the config key that refused them."""

    def __init__(self, config: ConnectionQuotaConfig | None = None, clock: Clock | None = None) -> None:
        self._clock: Clock = clock or SystemClock()
        self.config = ConnectionQuotaConfig()
        self.connections = 0
        self.per_listener: collections.Counter[str] = collections.Counter()
        self.per_ip: collections.Counter[str] = collections.Counter()
        self.refused: collections.Counter[str] = collections.Counter()
        self._broker_rate: _Rate | None = None
        self._listener_rates: dict[str, _Rate] = {}
        self._unlogged: collections.Counter[str] = collections.Counter()
        self._logged_ms: dict[str, int] = {}
        # KIP-612 ip quotas: the default (None: none), each address's own,
        # and the buckets of the addresses measured, least recently used first
        self._default_ip_rate: int | None = None
        self._ip_rates: dict[str, int] = {}
        self._ip_buckets: collections.OrderedDict[str, _Rate] = collections.OrderedDict()
        self.update(config or ConnectionQuotaConfig())

    @property
    def refused_total(self) -> int:
        return sum(self.refused.values())

    def update(self, config: ConnectionQuotaConfig) -> None:
        """Apply new limits (a dynamic broker config change); open
        connections stay, a rate keeps its bucket if it is unchanged."""
        old, self.config = self.config, config
        now = self._clock.milliseconds()
        same_window = old.rate_window == config.rate_window
        rate = config.max_connection_creation_rate
        if rate >= INT_MAX:
            self._broker_rate = None
        elif self._broker_rate is None or self._broker_rate.rate != rate or not same_window:
            self._broker_rate = _Rate(rate, config.rate_window, now)
        rates = {}
        for listener, r in config.listener_max_connection_creation_rate.items():
            if r < INT_MAX:
                kept = self._listener_rates.get(listener)
                rates[listener] = (kept if kept is not None and kept.rate == r and same_window
                                   else _Rate(r, config.rate_window, now))
        self._listener_rates = rates
        if not same_window:
            self._ip_buckets.clear()

    def update_ip_connection_rate(self, ip: str | None, rate: int | None) -> None:
        """KIP-612: the ``connection_creation_rate`` of address ``ip`` (None:
        the default of every address without its own); ``rate`` None
        removes it. The affected addresses start measuring afresh."""
        if ip is None:
            self._default_ip_rate = rate
            for address in [a for a in self._ip_buckets if a not in self._ip_rates]:
                del self._ip_buckets[address]
        else:
            ip = _canonical(ip)
            if rate is None:
                self._ip_rates.pop(ip, None)
            else:
                self._ip_rates[ip] = rate
            self._ip_buckets.pop(ip, None)

    def ip_connection_rate(self, ip: str) -> int | None:
        """The connection rate quota of ``ip``, None without one."""
        ip = _canonical(ip)
        return self._ip_rates.get(ip, self._default_ip_rate)

    def _ip_bucket(self, ip: str, now: int) -> _Rate | None:
        rate = self._ip_rates.get(ip, self._default_ip_rate)
        if rate is None:
            return None
        bucket = self._ip_buckets.get(ip)
        if bucket is None or bucket.rate != rate:
            bucket = self._ip_buckets[ip] = _Rate(rate, self.config.rate_window, now)
            if len(self._ip_buckets) > MAX_IP_RATES:
                self._ip_buckets.popitem(last=False)
        else:
            self._ip_buckets.move_to_end(ip)
        return bucket

    def accept(self, listener: str, ip: str) -> bool:
        """Count a new connection in, or refuse it (False: close it now)."""
        ip = _canonical(ip)
        cfg = self.config
        if self.per_listener[listener] >= cfg.listener_max_connections.get(listener, INT_MAX):
            return self._refuse(listener_key(listener, MAX_CONNECTIONS), listener, ip)
        protected = listener == cfg.inter_broker_listener
        if not protected and self.connections >= cfg.max_connections:
            return self._refuse(MAX_CONNECTIONS, listener, ip)
        if self.per_ip[ip] >= cfg.limit_per_ip(ip):
            key = "max.connections.per.ip.overrides" if ip in cfg.per_ip_overrides else MAX_CONNECTIONS_PER_IP
            return self._refuse(key, listener, ip)
        listener_rate = self._listener_rates.get(listener)
        broker_rate = None if protected else self._broker_rate
        ip_limited = self._default_ip_rate is not None or ip in self._ip_rates
        if listener_rate is not None or broker_rate is not None or ip_limited:
            now = self._clock.milliseconds()
            ip_rate = self._ip_bucket(ip, now) if ip_limited else None
            if listener_rate is not None and not listener_rate.available(now):
                return self._refuse(listener_key(listener, MAX_CONNECTION_CREATION_RATE), listener, ip)
            if broker_rate is not None and not broker_rate.available(now):
                return self._refuse(MAX_CONNECTION_CREATION_RATE, listener, ip)
            if ip_rate is not None and not ip_rate.available(now):
                return self._refuse(IP_CONNECTION_RATE, listener, ip)
            for rate in (listener_rate, broker_rate, ip_rate):
                if rate is not None:
                    rate.take(now)
        self.connections += 1
        self.per_listener[listener] += 1
        self.per_ip[ip] += 1
        return True

    def release(self, listener: str, ip: str) -> None:
        """A connection ``accept`` counted in has closed."""
        ip = _canonical(ip)
        self.connections -= 1
        self.per_listener[listener] -= 1
        if self.per_listener[listener] <= 0:
            del self.per_listener[listener]
        self.per_ip[ip] -= 1
        if self.per_ip[ip] <= 0:
            del self.per_ip[ip]

    def _refuse(self, key: str, listener: str, ip: str) -> bool:
        self.refused[key] += 1
        self._unlogged[key] += 1
        now = self._clock.milliseconds()
        last = self._logged_ms.get(key)
        if last is None or now - last >= LOG_INTERVAL_S * 1000:
            n = self._unlogged.pop(key)
            more = f" ({n - 1} more refused by it since the last such line)" if n > 1 else ""
            log.info("refused a connection from %s on listener %s: %s reached%s", ip, listener, key, more)
            self._logged_ms[key] = now
        return False
