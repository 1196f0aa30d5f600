"""Typed errors of Kavka's own client.

Network failures carry Kafka's NETWORK_EXCEPTION code (retriable: the
cluster layer reconnects and retries them), a request that got no answer in
time carries REQUEST_TIMED_OUT, and a request no common version can carry
carries UNSUPPORTED_VERSION. Errors a broker returns in a response are the
``kavka.common.errors`` exceptions built by ``error_for`` (with the broker's
error message when the API has one).

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
