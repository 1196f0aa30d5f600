"""Principals and sessions (KIP-189's KafkaPrincipal, Kafka's Session).

A principal is ``type:name`` (Kafka's ``User:alice``); an unauthenticated
connection is ``User:ANONYMOUS``. The session is what a request's handler
knows about who sent it: fixed for the life of a connection except that a
SASL re-authentication (KIP-368) may renew it for the same principal.

Pure values; any thread.
"""

from __future__ import annotations

from dataclasses import dataclass

USER_TYPE = "User"


@dataclass(frozen=True, slots=True)
class KafkaPrincipal:
    """``principal_type:name``; ACLs and ``super.users`` name principals this way."""

    principal_type: str
    name: str

    def __str__(self) -> str:
        return f"{self.principal_type}:{self.name}"

    @classmethod
    def parse(cls, text: str) -> KafkaPrincipal:
        """``User:alice`` -> KafkaPrincipal("User", "alice"); the name may contain ':'.
        Raises ValueError naming the text when it has no type."""
        ptype, sep, name = text.partition(":")
        if not sep or not ptype.strip() or not name:
            raise ValueError(f"principal {text!r} is not in the form Type:name (e.g. User:alice)")
        return cls(ptype.strip(), name)


ANONYMOUS = KafkaPrincipal(USER_TYPE, "ANONYMOUS")


@dataclass(frozen=True, slots=True)
class Session:
    """Who a connection is: its principal, the peer's address, the listener it
    came in on and that listener's security protocol (PLAINTEXT, SSL,
    SASL_PLAINTEXT, SASL_SSL), and the SASL mechanism it authenticated with.

    ``inter_broker`` is True only when the connection authenticated as the
    cluster's brokers do: its principal is the one this broker itself
    presents on the inter-broker listener (``inter.broker.listener.name``)
    — the ``username`` of the JAAS config of
    ``sasl.mechanism.inter.broker.protocol`` on a SASL listener, or the
    principal its own keystore's certificate maps to on an SSL listener. The
    brokers of a cluster therefore share that principal (as ``super.users``
    usually names it once); the principal proves "a broker", not which one.
    On a PLAINTEXT inter-broker listener nobody is authenticated and it is
    always False."""

    principal: KafkaPrincipal = ANONYMOUS
    client_host: str = ""
    listener: str = "PLAINTEXT"
    security_protocol: str = "PLAINTEXT"
    sasl_mechanism: str | None = None
    inter_broker: bool = False

    @property
    def authenticated(self) -> bool:
        return self.principal != ANONYMOUS
