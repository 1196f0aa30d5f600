"""Typed errors of Kavka's own client.

Network failures carry Kafka's NETWORK_EXCEPTION code (retriable: the
cluster layer reconnects and retries them), a request that got no answer in
time carries REQUEST_TIMED_OUT, and a request no common version can carry
carries UNSUPPORTED_VERSION. Errors a broker returns in a response are the
``kavka.common.errors`` exceptions built by ``error_for`` (with the broker's
error message when the API has one).

Authentication failures (a SASL exchange the broker refused, a broker
certificate that does not verify) are ``AuthenticationFailed``: not
retriable, and not a connection error, so the cluster layer gives up at once
rather than trying every broker until its deadline (Kafka's client treats
``AuthenticationException`` as fatal the same way). Their messages name the
broker and the mechanism, never a credential.

Raised by ``kavka.client`` on the event loop; callers catch ``KafkaError``
and look at ``code`` / ``retriable``.
"""

from __future__ import annotations

from kavka.common.errors import ErrorCode, KafkaError, RequestTimedOutError


class ClientConnectionError(KafkaError):
    """The connection to a broker failed or is gone (NETWORK_EXCEPTION)."""

    code = ErrorCode.NETWORK_EXCEPTION


class ConnectFailed(ClientConnectionError):
    """Could not open a connection (refused, unreachable, or not within the
    connect timeout), or the ApiVersions handshake on it failed."""


class ConnectionClosed(ClientConnectionError):
    """The connection closed (by either side, or after a protocol error)
    before the response arrived; every request still pending on it fails
    with this."""


class RequestTimedOut(RequestTimedOutError):
    """No response within the request timeout. Like Kafka's own client, the
    connection is then closed: a broker that stopped answering one request
    cannot be trusted to answer the ones queued behind it."""


class UnsupportedVersion(KafkaError):
    """No version of the API is supported by both this client and the
    broker (or the broker does not offer the API at all)."""

    code = ErrorCode.UNSUPPORTED_VERSION


class NoBrokersAvailable(ClientConnectionError):
    """None of the bootstrap or known brokers could be reached."""


class AuthenticationFailed(KafkaError):
    """A broker refused this client's credentials, or this client refused
    the broker's (Kafka's ``AuthenticationException``). Not retriable."""

    code = ErrorCode.SASL_AUTHENTICATION_FAILED


class SaslAuthenticationFailed(AuthenticationFailed):
    """The SASL exchange failed: the broker answered SASL_AUTHENTICATION_FAILED,
    UNSUPPORTED_SASL_MECHANISM or ILLEGAL_SASL_STATE (the code is the
    broker's), or the broker's own proof (SCRAM) did not verify."""


class SslAuthenticationFailed(AuthenticationFailed):
    """The TLS handshake failed on a certificate check (the broker's chain is
    not signed by a trusted CA, or its name does not match the host): no
    error code exists on the wire for this, so it carries NETWORK_EXCEPTION
    and is not retriable."""

    code = ErrorCode.NETWORK_EXCEPTION

    @property
    def retriable(self) -> bool:
        return False
