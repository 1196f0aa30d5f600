"""How each listener secures its connections and who they are (Kafka's
``ChannelBuilders``: PlaintextChannelBuilder, SslChannelBuilder,
SaslChannelBuilder, and the DefaultKafkaPrincipalBuilder).

``build_channel_builders(config, ...)`` makes one ``ChannelBuilder`` per
listener of ``listeners`` from the listener's view of the config
(``listener.name.<listener>.*`` overrides applied):

- PLAINTEXT: no TLS, no authentication; every connection is ``User:ANONYMOUS``.
- SSL: a TLS server context (``kavka.security.tls``); a connection's
  principal is its client certificate's subject DN mapped by the
  listener's ``ssl.principal.mapping.rules``, ``User:ANONYMOUS`` without a
  certificate; a DN no rule maps is refused (the connection is closed).
- SASL_PLAINTEXT / SASL_SSL: (TLS, then) the authentication phase
  (``kavka.server.authenticator``) with a ``SaslServerFactory`` built from
  ``sasl.enabled.mechanisms`` and each mechanism's JAAS config
  (``listener.name.<listener>.<mechanism>.sasl.jaas.config``, else the
  login module of that mechanism in ``sasl.jaas.config``, which stands in
  for a JAAS file's KafkaServer section); the principal is ``User:`` and the
  authenticated user name.

``inter_broker_principal(config)`` is the principal this broker presents on
the inter-broker listener, which every broker of the cluster shares: a
connection that authenticates as it gets ``Session.inter_broker``.
``inter_broker_client_security(config)`` is how this broker's own clients
(replica fetchers, the controller's channel, transaction markers,
controlled shutdown) connect to that listener (Kafka's
``ChannelBuilders.clientChannelBuilder`` with the inter-broker listener's
config): its truststore, its keystore as the client certificate, and SASL
with ``sasl.mechanism.inter.broker.protocol`` and the broker's own JAAS
credentials. Any
misconfiguration is a ``ConfigError`` naming the key, raised before a port
is bound.

Built once by the composition root; ``session`` and ``authenticator`` run on
the event loop per connection.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
import time
from collections.abc import Mapping
from dataclasses import dataclass

from kavka.common.broker_config import KafkaConfig
from kavka.common.clock import Clock, SystemClock
from kavka.common.config import ConfigError, Password
from kavka.common.listeners import SASL_PROTOCOLS, TLS_PROTOCOLS, ListenerConfig
from kavka.security import tls
from kavka.security.client_security import ClientSecurity
from kavka.security.principal import ANONYMOUS, USER_TYPE, KafkaPrincipal, Session
from kavka.security.sasl.factory import SaslServerFactory, sasl_client_from_entry
from kavka.security.sasl.jaas import (
    LOGIN_MODULE_FOR_MECHANISM,
    SASL_JAAS_CONFIG,
    JaasConfigEntry,
    JaasConfigError,
    load_jaas_entry,
    parse_jaas_config,
)
from kavka.security.sasl.mechanism import OAUTHBEARER, PLAIN, SaslClient
from kavka.security.sasl.scram import ScramCredentialLookup
from kavka.security.ssl_principal_mapper import NoMatchingRule, SslPrincipalMapper
from kavka.security.x500 import subject_dn
from kavka.server.authenticator import SaslListenerSettings, SaslServerAuthenticator

log = logging.getLogger("kavka.network")

# The principal claim of Kafka's unsecured OAUTHBEARER login (unsecuredLoginStringClaim_sub).
OAUTH_SUBJECT_OPTION = "unsecuredLoginStringClaim_sub"


class PrincipalError(Exception):
    """A connection cannot be given a principal (no mapping rule applies to
    its certificate): it is refused."""


@dataclass(frozen=True, slots=True)
class ChannelBuilder:
    """One listener's security (see the module docstring).
    ``handshake_timeout_s`` bounds a TLS handshake (Kafka bounds an idle
    channel, handshaking or not, by ``connections.max.idle.ms``)."""

    listener_name: str
    security_protocol: str = "PLAINTEXT"
    ssl_context: ssl.SSLContext | None = None
    principal_mapper: SslPrincipalMapper | None = None
    sasl: SaslListenerSettings | None = None
    inter_broker_principal: KafkaPrincipal | None = None
    handshake_timeout_s: float = 60.0
    clock: Clock = SystemClock()

    def session(self, transport: asyncio.BaseTransport, host: str) -> Session:
        """The session a new connection starts with: its certificate's
        principal on SSL listeners, ANONYMOUS otherwise (SASL listeners:
        until the authenticator establishes one). Raises ``PrincipalError``."""
        principal = ANONYMOUS
        if self.security_protocol == "SSL":
            ssl_object = transport.get_extra_info("ssl_object")
            der = ssl_object.getpeercert(binary_form=True) if ssl_object is not None else None
            if der is not None:
                assert self.principal_mapper is not None
                dn = subject_dn(der)
                try:
                    principal = KafkaPrincipal(USER_TYPE, self.principal_mapper.name(dn))
                except NoMatchingRule as e:
                    raise PrincipalError(str(e)) from None
        return self._session(principal, host, None)

    def _session(self, principal: KafkaPrincipal, host: str, mechanism: str | None) -> Session:
        inter_broker = principal != ANONYMOUS and principal == self.inter_broker_principal
        return Session(principal, host, self.listener_name, self.security_protocol, mechanism, inter_broker)

    def authenticator(self, host: str, api_versions_max: int) -> SaslServerAuthenticator | None:
        """A new connection's authentication phase; None on listeners without SASL."""
        if self.sasl is None:
            return None
        return SaslServerAuthenticator(self.sasl, lambda p, m: self._session(p, host, m), self.clock,
                                       time.monotonic_ns, api_versions_max)


def _jaas_entry(lc: ListenerConfig, mechanism: str) -> tuple[JaasConfigEntry | None, str]:
    """The mechanism's login module entry on this listener and the key it
    came from: its own ``listener.name.<l>.<mechanism>.sasl.jaas.config``,
    else the entry for its login module in ``sasl.jaas.config``."""
    scoped = f"{mechanism.lower()}.{SASL_JAAS_CONFIG}"
    key = lc.prefix + scoped
    try:
        if lc.overridden(scoped):
            value: Password = lc[scoped]
            return load_jaas_entry(value.value, mechanism, key), key
        fallback: Password | None = lc[SASL_JAAS_CONFIG]
        if fallback is None:
            return None, key
        module = LOGIN_MODULE_FOR_MECHANISM.get(mechanism)
        entries = [e for e in parse_jaas_config(fallback.value, SASL_JAAS_CONFIG) if e.login_module == module]
    except JaasConfigError as e:
        raise ConfigError(key if lc.overridden(scoped) else SASL_JAAS_CONFIG, str(e)) from None
    if len(entries) > 1:
        raise ConfigError(SASL_JAAS_CONFIG, f"holds {len(entries)} entries for {module}; one per login module")
    return (entries[0], SASL_JAAS_CONFIG) if entries else (None, key)


def _sasl_settings(lc: ListenerConfig, config: KafkaConfig,
                   scram_credentials: ScramCredentialLookup | None, clock: Clock) -> SaslListenerSettings:
    mechanisms = list(lc["sasl.enabled.mechanisms"])
    if not mechanisms:
        raise ConfigError(lc.source("sasl.enabled.mechanisms"),
                          f"is empty; SASL listener {lc.listener_name} needs at least one mechanism")
    entries = {m: _jaas_entry(lc, m) for m in mechanisms}
    plain, plain_key = entries.get(PLAIN, (None, ""))
    oauth, _ = entries.get(OAUTHBEARER, (None, ""))
    try:
        factory = SaslServerFactory(mechanisms, plain_users=plain.plain_users() if plain is not None else None,
                                    scram_credentials=scram_credentials,
                                    oauth_options=oauth.options if oauth is not None else None, clock=clock)
    except ValueError as e:
        key = lc.source("sasl.enabled.mechanisms")
        if PLAIN in mechanisms and plain is None:
            key = plain_key
        raise ConfigError(key, f"listener {lc.listener_name}: {e}") from None
    return SaslListenerSettings(
        factory=factory,
        reauth_ms={m: lc.mechanism_value(m, "connections.max.reauth.ms") for m in mechanisms},
        max_receive_size=lc["sasl.server.max.receive.size"],
        failed_delay_s=config["connection.failed.authentication.delay.ms"] / 1000.0)


def _mapper(lc: ListenerConfig) -> SslPrincipalMapper:
    key = lc.source("ssl.principal.mapping.rules")
    try:
        return SslPrincipalMapper.from_rules(lc["ssl.principal.mapping.rules"], key)
    except ValueError as e:
        raise ConfigError(key, str(e).split(": ", 1)[-1]) from None


def inter_broker_principal(config: KafkaConfig) -> KafkaPrincipal | None:
    """The principal this broker authenticates as on the inter-broker
    listener (see ``Session.inter_broker``); None on PLAINTEXT, and on SSL
    without client authentication (the brokers present no certificate)."""
    lc = config.listener_config(config.inter_broker_listener_name)
    protocol = lc.security_protocol
    if protocol in SASL_PROTOCOLS:
        mechanism = config["sasl.mechanism.inter.broker.protocol"]
        entry, key = _jaas_entry(lc, mechanism)
        option = OAUTH_SUBJECT_OPTION if mechanism == OAUTHBEARER else "username"
        name = entry.options.get(option) if entry is not None else None
        if not name:
            raise ConfigError(key, f"the inter-broker listener {lc.listener_name} authenticates with "
                                   f"{mechanism} (sasl.mechanism.inter.broker.protocol): its JAAS config must "
                                   f"give this broker's own credentials ({option} option)")
        return KafkaPrincipal(USER_TYPE, name)
    if protocol == "SSL" and lc["ssl.client.auth"].lower() != "none":
        store = tls.load_keystore(lc)
        if store is None:
            return None
        try:
            return KafkaPrincipal(USER_TYPE, _mapper(lc).name(subject_dn(store.certificate_der)))
        except NoMatchingRule as e:
            raise ConfigError(lc.source("ssl.principal.mapping.rules"),
                              f"maps no name for this broker's own certificate: {e}") from None
    return None


def inter_broker_client_security(config: KafkaConfig) -> ClientSecurity:
    """How this broker connects to the inter-broker listener of the others
    (see the module docstring). Raises ConfigError naming the key."""
    lc = config.listener_config(config.inter_broker_listener_name)
    protocol = lc.security_protocol
    ctx = tls.client_context(lc) if protocol in TLS_PROTOCOLS else None
    source = f"the inter-broker listener {lc.listener_name}"
    if protocol not in SASL_PROTOCOLS:
        return ClientSecurity(protocol, ctx, source=source)
    mechanism = config["sasl.mechanism.inter.broker.protocol"]
    entry, key = _jaas_entry(lc, mechanism)
    if entry is None:
        raise ConfigError(key, f"the inter-broker listener {lc.listener_name} authenticates with {mechanism} "
                               "(sasl.mechanism.inter.broker.protocol): give this broker's own credentials in "
                               "its JAAS config")
    try:
        sasl_client_from_entry(mechanism, entry, config_key=key)  # checked now, not at the first connection
    except ValueError as e:
        raise ConfigError(key, str(e)) from None

    def new_client() -> SaslClient:
        return sasl_client_from_entry(mechanism, entry, config_key=key)
    return ClientSecurity(protocol, ctx, mechanism, new_client, source)


def build_channel_builders(config: KafkaConfig, scram_credentials: ScramCredentialLookup | None,
                           clock: Clock | None = None) -> Mapping[str, ChannelBuilder]:
    """One ChannelBuilder per listener, by listener name. Raises ConfigError."""
    clock = clock if clock is not None else SystemClock()
    ibp = inter_broker_principal(config)
    handshake_timeout_s = config["connections.max.idle.ms"] / 1000.0
    out: dict[str, ChannelBuilder] = {}
    for ep in config.listeners:
        lc = config.listener_config(ep.listener_name)
        protocol = ep.security_protocol
        ctx = tls.server_context(lc) if protocol in TLS_PROTOCOLS else None
        mapper = _mapper(lc) if protocol == "SSL" else None
        sasl = _sasl_settings(lc, config, scram_credentials, clock) if protocol in SASL_PROTOCOLS else None
        out[ep.listener_name] = ChannelBuilder(ep.listener_name, protocol, ctx, mapper, sasl, ibp,
                                               handshake_timeout_s, clock)
    _warn_unused(config)
    return out


def _warn_unused(config: KafkaConfig) -> None:
    """Broker-wide TLS or SASL keys no listener reads (Kafka reads them
    silently); said once at startup."""
    protocols = {ep.security_protocol for ep in config.listeners}
    for key in sorted(config.originals):
        if key.startswith("ssl.") and not protocols & TLS_PROTOCOLS:
            log.warning("%s is set but no listener uses SSL or SASL_SSL: it has no effect", key)
        elif key in ("sasl.enabled.mechanisms", "sasl.jaas.config") and not protocols & SASL_PROTOCOLS:
            log.warning("%s is set but no listener uses SASL_PLAINTEXT or SASL_SSL: it has no effect", key)
