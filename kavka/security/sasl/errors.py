"""The SASL failures, as the Kafka error codes a broker answers with.

- ``SaslAuthenticationError`` (SASL_AUTHENTICATION_FAILED, 58): the exchange
  failed. ``message`` is what the client is told, in Kafka's wording (for
  SCRAM and OAUTHBEARER parse failures Kafka's generic "Authentication failed
  during authentication due to invalid credentials with SASL mechanism ..."
  so that a reply never tells whether a user exists); ``reason`` is the
  detail for the broker's own log. Neither ever holds a password, a key or a
  token.
- ``UnsupportedSaslMechanismError`` (UNSUPPORTED_SASL_MECHANISM, 33): the
  mechanism a client asked for is not enabled on the listener.
- ``IllegalSaslStateError`` (ILLEGAL_SASL_STATE, 34): a token arrived when the
  exchange expects none (already complete or failed).

Pure exceptions; any thread.
"""

from __future__ import annotations

from kavka.common.errors import ErrorCode, KafkaError


class SaslAuthenticationError(KafkaError):
    """SASL_AUTHENTICATION_FAILED: ``message`` goes to the client, ``reason``
    (defaults to the message) to the broker's log."""

    code = ErrorCode.SASL_AUTHENTICATION_FAILED

    def __init__(self, message: str, *, reason: str | None = None) -> None:
        super().__init__(message)
        self.reason = reason if reason is not None else message


class UnsupportedSaslMechanismError(KafkaError):
    """UNSUPPORTED_SASL_MECHANISM: the client asked for a mechanism the
    listener does not enable (``sasl.enabled.mechanisms``)."""

    code = ErrorCode.UNSUPPORTED_SASL_MECHANISM


class IllegalSaslStateError(KafkaError):
    """ILLEGAL_SASL_STATE: a SASL token the exchange does not expect now."""

    code = ErrorCode.ILLEGAL_SASL_STATE


def invalid_credentials_message(mechanism: str, reauthentication: bool = False) -> str:
    """Kafka's generic reply when a mechanism fails for a reason the client
    must not learn (SaslServerAuthenticator: the SaslException's own text may
    reveal whether the user exists, so it is logged, never sent)."""
    during = "re-authentication" if reauthentication else "authentication"
    return f"Authentication failed during {during} due to invalid credentials with SASL mechanism {mechanism}"
