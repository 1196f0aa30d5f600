"""What a listener's SASL setup builds: the broker's ``SaslServerFactory``
(one per listener, from ``sasl.enabled.mechanisms`` and the listener's JAAS
configs); and a client's SaslClient from a JAAS config (``sasl_client_for``)
or from client properties in the Java or librdkafka dialect
(``sasl_client_from_properties``).

Built once by the composition root; ``create`` is called per exchange from
the network layer's event loop (cheap: no I/O, no key derivation).
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterable, Mapping

from kavka.common.clock import Clock, SystemClock
from kavka.security.sasl.credentials import ScramMechanism, secure_random_string
from kavka.security.sasl.errors import UnsupportedSaslMechanismError
from kavka.security.sasl.jaas import JaasConfigEntry, load_jaas_entry, login_credentials
from kavka.security.sasl.mechanism import OAUTHBEARER, PLAIN, SUPPORTED_MECHANISMS, SaslClient, SaslServer
from kavka.security.sasl.oauthbearer import (
    OAuthBearerSaslClient,
    OAuthBearerSaslServer,
    OAuthBearerUnsecuredValidator,
    librdkafka_unsecured_token,
    unsecured_login_token,
)
from kavka.security.sasl.plain import PlainSaslClient, PlainSaslServer
from kavka.security.sasl.scram import ScramCredentialLookup, ScramSaslClient, ScramSaslServer


class SaslServerFactory:
    """Makes the SaslServer for each exchange on one listener.

    ``enabled_mechanisms``: the listener's ``sasl.enabled.mechanisms``.
    ``plain_users``: user -> password (the PlainLoginModule's ``user_*``
    options), required when PLAIN is enabled. ``scram_credentials``:
    (mechanism, user) -> stored credential or None, required when a SCRAM
    mechanism is enabled (reads the broker's cache of ``/config/users``).
    ``oauth_options``: the OAuthBearerLoginModule's options (the
    ``unsecuredValidator*`` settings), required when OAUTHBEARER is enabled.
    Raises ValueError naming ``sasl.enabled.mechanisms`` for a mechanism
    Kavka does not implement or one enabled without what it needs.
    """

    def __init__(self, enabled_mechanisms: Iterable[str], *,
                 plain_users: Mapping[str, str] | None = None,
                 scram_credentials: ScramCredentialLookup | None = None,
                 oauth_options: Mapping[str, str] | None = None,
                 clock: Clock | None = None,
                 nonce_source: Callable[[], str] = secure_random_string) -> None:
        mechanisms = tuple(dict.fromkeys(m.strip() for m in enabled_mechanisms if m.strip()))
        for m in mechanisms:
            if m not in SUPPORTED_MECHANISMS:
                raise ValueError(f"sasl.enabled.mechanisms: {m} is not supported "
                                 f"(Kavka supports {', '.join(SUPPORTED_MECHANISMS)})")
        if PLAIN in mechanisms and plain_users is None:
            raise ValueError("sasl.enabled.mechanisms has PLAIN but no PlainLoginModule JAAS config gives its users")
        if any(ScramMechanism.of(m) for m in mechanisms) and scram_credentials is None:
            raise ValueError("sasl.enabled.mechanisms has SCRAM but no SCRAM credential store was given")
        if OAUTHBEARER in mechanisms and oauth_options is None:
            raise ValueError("sasl.enabled.mechanisms has OAUTHBEARER but no OAuthBearerLoginModule JAAS config")
        self._mechanisms = mechanisms
        self._plain_users = dict(plain_users or {})
        self._scram_credentials = scram_credentials
        self._clock: Clock = clock if clock is not None else SystemClock()
        self._oauth_validator = (OAuthBearerUnsecuredValidator(oauth_options, self._clock)
                                 if oauth_options is not None and OAUTHBEARER in mechanisms else None)
        self._nonce_source = nonce_source
        # keys the salts made up for unknown SCRAM users (RFC 5802 §9)
        self._mock_secret = secrets.token_bytes(32)

    @property
    def enabled_mechanisms(self) -> tuple[str, ...]:
        """In configured order: what SaslHandshake answers with."""
        return self._mechanisms

    def create(self, mechanism: str, *, reauthentication: bool = False) -> SaslServer:
        """A fresh server for one exchange; UnsupportedSaslMechanismError when
        ``mechanism`` is not enabled. ``reauthentication`` (KIP-368) only
        changes the wording of Kafka's generic failure message."""
        if mechanism not in self._mechanisms:
            raise UnsupportedSaslMechanismError(f"Unsupported SASL mechanism {mechanism[:100]}")
        if mechanism == PLAIN:
            return PlainSaslServer(self._plain_users)
        scram = ScramMechanism.of(mechanism)
        if scram is not None:
            assert self._scram_credentials is not None
            return ScramSaslServer(scram, self._scram_credentials, mock_secret=self._mock_secret,
                                   nonce_source=self._nonce_source, reauthentication=reauthentication)
        assert mechanism == OAUTHBEARER and self._oauth_validator is not None
        return OAuthBearerSaslServer(self._oauth_validator, self._clock, reauthentication=reauthentication)


def sasl_client_for(mechanism: str, jaas_config: str, *, config_key: str = "sasl.jaas.config",
                    clock: Clock | None = None) -> SaslClient:
    """The SaslClient a Kafka client configured with ``sasl.mechanism`` and
    ``sasl.jaas.config`` uses: PLAIN and SCRAM from the ``username`` and
    ``password`` options, OAUTHBEARER from an unsecured token minted from
    the ``unsecuredLogin*`` options. Raises ValueError (JaasConfigError,
    OAuthBearerConfigError) naming ``config_key``."""
    if mechanism not in SUPPORTED_MECHANISMS:
        raise ValueError(f"sasl.mechanism: {mechanism} is not supported (Kavka supports {', '.join(SUPPORTED_MECHANISMS)})")
    entry = load_jaas_entry(jaas_config, mechanism, config_key)
    return sasl_client_from_entry(mechanism, entry, config_key=config_key, clock=clock)


def sasl_client_from_entry(mechanism: str, entry: JaasConfigEntry, *, config_key: str = "sasl.jaas.config",
                           clock: Clock | None = None) -> SaslClient:
    """As ``sasl_client_for``, from an entry already parsed."""
    if mechanism == OAUTHBEARER:
        token = unsecured_login_token(entry.options, clock if clock is not None else SystemClock())
        return OAuthBearerSaslClient(token.value, extensions=token.extensions)
    username, password = login_credentials(entry, config_key)
    if mechanism == PLAIN:
        return PlainSaslClient(username, password)
    scram = ScramMechanism.of(mechanism)
    if scram is None:
        raise ValueError(f"sasl.mechanism: {mechanism} is not supported (Kavka supports {', '.join(SUPPORTED_MECHANISMS)})")
    if entry.options.get("tokenauth", "").lower() == "true":
        raise ValueError(f"{config_key}: tokenauth=true (delegation tokens) is not supported")
    return ScramSaslClient(scram, username, password)


def sasl_client_from_properties(properties: Mapping[str, str], *, source: str = "client properties",
                                clock: Clock | None = None) -> SaslClient:
    """The SaslClient a client.properties file describes, in either
    dialect: the Java client's ``sasl.mechanism`` + ``sasl.jaas.config``, or
    librdkafka's ``sasl.username``/``sasl.password`` (PLAIN, SCRAM) and
    ``sasl.oauthbearer.config`` with ``enable.sasl.oauthbearer.unsecure.jwt=true``
    (OAUTHBEARER). Raises ValueError naming ``source`` and the key."""
    mechanism = properties.get("sasl.mechanism", properties.get("sasl.mechanisms", "")).strip()
    if not mechanism:
        raise ValueError(f"{source}: sasl.mechanism is not set (Kafka's default, GSSAPI, is not supported; "
                         f"use one of {', '.join(SUPPORTED_MECHANISMS)})")
    if mechanism not in SUPPORTED_MECHANISMS:
        raise ValueError(f"{source}: sasl.mechanism {mechanism} is not supported "
                         f"(Kavka supports {', '.join(SUPPORTED_MECHANISMS)})")
    clock = clock if clock is not None else SystemClock()
    jaas = properties.get("sasl.jaas.config")
    librdkafka_keys = [k for k in ("sasl.username", "sasl.password", "sasl.oauthbearer.config") if k in properties]
    if jaas is not None:
        if librdkafka_keys:
            raise ValueError(f"{source}: give sasl.jaas.config or {'/'.join(librdkafka_keys)}, not both")
        return sasl_client_for(mechanism, jaas, config_key=f"{source}: sasl.jaas.config", clock=clock)
    if mechanism == OAUTHBEARER:
        if properties.get("enable.sasl.oauthbearer.unsecure.jwt", "false").strip().lower() != "true":
            raise ValueError(f"{source}: OAUTHBEARER needs enable.sasl.oauthbearer.unsecure.jwt=true with "
                             "sasl.oauthbearer.config (or a sasl.jaas.config with OAuthBearerLoginModule)")
        token = librdkafka_unsecured_token(properties.get("sasl.oauthbearer.config", ""), clock)
        return OAuthBearerSaslClient(token.value, extensions=token.extensions)
    username = properties.get("sasl.username", "")
    password = properties.get("sasl.password", "")
    if not username or not password:
        missing = "sasl.username" if not username else "sasl.password"
        raise ValueError(f"{source}: {mechanism} needs {missing} (or sasl.jaas.config)")
    if mechanism == PLAIN:
        return PlainSaslClient(username, password)
    scram = ScramMechanism.of(mechanism)
    assert scram is not None
    return ScramSaslClient(scram, username, password)
