"""How a client secures its connections to brokers: the security protocol,
the TLS context and the SASL mechanism (Kafka's client side of
``ChannelBuilders``: what ``security.protocol``, ``ssl.*`` and ``sasl.*``
give a ``KafkaProducer``'s network client).

``ClientSecurity`` is a value that every ``kavka.client.BrokerConnection``
of one client shares: PLAINTEXT (neither), SSL (a TLS context), SASL_PLAINTEXT
(a SASL mechanism and a way to make a fresh ``SaslClient`` per exchange:
an exchange object is single-use, and KIP-368 re-authentication runs a new
exchange on the same connection) or SASL_SSL (both). Built from client
properties by ``kavka.security.client_properties`` (tools, Spark, users of
``kavka.client``) or from the inter-broker listener's config by the broker
(replica fetchers, the controller's channel, transaction markers).

Its ``repr`` never shows a credential: the SASL client factory holds the
password in a closure, and a ``SSLContext`` does not expose key material.

Immutable; shared by connections on one event loop (an ``SSLContext`` may
be shared across connections and threads).
"""

from __future__ import annotations

import ssl
from collections.abc import Callable
from dataclasses import dataclass, field

from kavka.security.sasl.mechanism import SUPPORTED_MECHANISMS, SaslClient

PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL = "PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"
SECURITY_PROTOCOLS: tuple[str, ...] = (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL)
_TLS = frozenset({SSL, SASL_SSL})
_SASL = frozenset({SASL_PLAINTEXT, SASL_SSL})


@dataclass(frozen=True, slots=True)
class ClientSecurity:
    """See the module docstring. Invariants (checked): a TLS protocol has
    ``ssl_context`` and the others none; a SASL protocol has a supported
    ``sasl_mechanism`` and ``sasl_client_factory`` and the others neither.
    ``source`` names where the settings came from (a file, "the
    inter-broker listener INTERNAL"), for messages."""

    protocol: str = PLAINTEXT
    ssl_context: ssl.SSLContext | None = field(default=None, repr=False)
    sasl_mechanism: str | None = None
    sasl_client_factory: Callable[[], SaslClient] | None = field(default=None, repr=False)
    source: str = ""

    def __post_init__(self) -> None:
        if self.protocol not in SECURITY_PROTOCOLS:
            raise ValueError(f"security.protocol {self.protocol!r} is not one of {', '.join(SECURITY_PROTOCOLS)}")
        if (self.ssl_context is not None) != (self.protocol in _TLS):
            raise ValueError(f"security.protocol {self.protocol} "
                             + ("needs a TLS context" if self.protocol in _TLS else "takes no TLS context"))
        sasl_given = self.sasl_mechanism is not None or self.sasl_client_factory is not None
        if self.protocol in _SASL:
            if self.sasl_mechanism is None or self.sasl_client_factory is None:
                raise ValueError(f"security.protocol {self.protocol} needs a SASL mechanism and its credentials")
            if self.sasl_mechanism not in SUPPORTED_MECHANISMS:
                raise ValueError(f"sasl.mechanism {self.sasl_mechanism} is not supported "
                                 f"(Kavka supports {', '.join(SUPPORTED_MECHANISMS)})")
        elif sasl_given:
            raise ValueError(f"security.protocol {self.protocol} does not use SASL; "
                             "use SASL_PLAINTEXT or SASL_SSL with a SASL mechanism")

    @property
    def uses_tls(self) -> bool:
        return self.protocol in _TLS

    @property
    def uses_sasl(self) -> bool:
        return self.protocol in _SASL

    def new_sasl_client(self) -> SaslClient:
        """A fresh client for one SASL exchange (authentication or a KIP-368
        re-authentication)."""
        if self.sasl_client_factory is None:
            raise ValueError(f"security.protocol {self.protocol} does not use SASL")
        return self.sasl_client_factory()

    def describe(self) -> str:
        """``SASL_SSL (SCRAM-SHA-512)``: for messages."""
        return self.protocol + (f" ({self.sasl_mechanism})" if self.sasl_mechanism else "")


PLAINTEXT_SECURITY = ClientSecurity()
